"""Two commits' render figures, paired: a fresh process per commit, alternating, CPU time.

    python3 benchmarks/compare_render.py BEFORE AFTER [--pairs 4] [--n 10000] [--routes-only]

Each commit is checked out in a temporary git worktree and measured with its own code (its
render, its workload generator and its informer transforms) in a fresh ``python3``:

* **full**: the full render of N HTTPRoutes + N Ingresses as the informers hold them, best of 3;
* **EndpointSlice / HTTPRoute / Ingress**: the controller's re-render with its ``RenderCache``
  after one object of that kind changed, on a converged cluster (statuses written back), the
  median of 6 changes.

The machine's speed drifts by up to 2x within minutes, so the commits run alternately and
every figure is reported as after / before within each pair, with the median over the pairs.
Prints a Markdown table. Needs git and a clean enough checkout to add worktrees.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ("full", "EndpointSlice", "HTTPRoute", "Ingress")


def child(n: int, ingresses: bool) -> dict[str, float]:
    """The figures of the commit checked out in the current directory (run in a fresh process)."""
    import gc

    sys.path.insert(0, str(Path.cwd()))
    from benchmarks import workload  # the commit's own
    from benchmarks.bench_render import _changed, converged_objects, render_options
    from titanium_gateway.render import RenderCache, render

    def cpu(fn):  # type: ignore[no-untyped-def]
        t0 = time.process_time()
        fn()
        return time.process_time() - t0

    options = render_options()
    wl = workload.build(n, ingresses=ingresses)
    snap = workload.snapshot(workload.informer_objects(wl.objects, options.data_plane_service)[0])
    gc.collect()
    out = {"full": min(cpu(lambda: render(snap, options)) for _ in range(3))}
    del snap, wl
    objects = converged_objects(workload.build(n, ingresses=ingresses).objects, options, render)
    objects = workload.informer_objects(objects, options.data_plane_service)[0]
    cache = RenderCache()
    render(workload.snapshot(objects, now="2026-01-01T00:01:00Z"), options, cache)
    times: dict[str, list[float]] = {k: [] for k in FIGURES[1:]}

    def edits(i: int):  # type: ignore[no-untyped-def]
        yield "EndpointSlice", lambda o: o["endpoints"][0].__setitem__(
            "addresses", [f"172.16.{i // 250}.{i % 250 + 1}"])
        yield "HTTPRoute", lambda o: o["spec"]["rules"][0]["matches"][0]["path"].__setitem__("value", f"/changed-{i}")
        if ingresses:
            yield "Ingress", lambda o: o["spec"]["rules"][0]["http"]["paths"][0].__setitem__("path", f"/changed-{i}")

    for i in range(6):
        for kind, edit in edits(i):
            objects = _changed(objects, kind, (i * 37) % 50, edit)
            snap = workload.snapshot(objects, now="2026-01-01T00:01:00Z")
            times[kind].append(cpu(lambda snap=snap: render(snap, options, cache)))
    out.update({k: statistics.median(v) for k, v in times.items() if v})
    return out


def _worktree(rev: str, base: Path) -> Path:
    path = base / rev.replace("/", "_")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(path), rev], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def _measure(tree: Path, n: int, ingresses: bool) -> dict[str, float]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--n", str(n)]
    if not ingresses:
        cmd.append("--routes-only")
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", nargs="?")
    p.add_argument("after", nargs="?")
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--routes-only", action="store_true", help="N HTTPRoutes without Ingresses")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.n, not args.routes_only)))
        return 0
    if not (args.before and args.after):
        p.error("BEFORE and AFTER commits are required")
    revs = {}
    for name in (args.before, args.after):
        revs[name] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", name], check=True,
                                    capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="compare-render-") as tmp:
        trees = {name: _worktree(revs[name], Path(tmp)) for name in revs}
        try:
            pairs = []
            for i in range(args.pairs):
                a = _measure(trees[args.before], args.n, not args.routes_only)
                b = _measure(trees[args.after], args.n, not args.routes_only)
                pairs.append((a, b))
                print(f"pair {i + 1}: {json.dumps(a)} -> {json.dumps(b)}", file=sys.stderr)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    what = f"{args.n} HTTPRoutes" + ("" if args.routes_only else f" + {args.n} Ingresses")
    print(f"{what}, {revs[args.before]} -> {revs[args.after]}, {args.pairs} pairs, CPU seconds "
          "(full: best of 3; re-render after one change: median of 6)\n")
    print("| figure | before | after | after / before per pair | median |")
    print("|---|---|---|---|---|")
    for k in FIGURES:
        if k not in pairs[0][0] or k not in pairs[0][1]:
            continue
        ratios = [b[k] / a[k] for a, b in pairs]
        label = "full render" if k == "full" else f"re-render, 1 {k} changed"
        print(f"| {label} | {', '.join(f'{a[k]:.2f}' for a, _ in pairs)} | {', '.join(f'{b[k]:.2f}' for _, b in pairs)}"
              f" | {', '.join(f'{r:.2f}' for r in ratios)} | {statistics.median(ratios):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
