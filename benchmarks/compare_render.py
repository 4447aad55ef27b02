"""Two commits' render figures, paired: a fresh process per commit, alternating, CPU time.

    python3 benchmarks/compare_render.py BEFORE AFTER [--pairs 4] [--n 10000] [--routes-only | --one-gateway]

Each commit is checked out in a temporary git worktree and measured with its own code (its
render, its workload generator and its informer transforms) in a fresh ``python3``:

* **full**: the full render of N HTTPRoutes + N Ingresses as the informers hold them, best of 3;
* **EndpointSlice / HTTPRoute / Ingress**: the controller's re-render with its ``RenderCache``
  after one object of that kind changed, on a converged cluster (statuses written back), the
  median of 6 changes;
* ``--one-gateway``: ``make dev``'s propagation setup instead (N HTTPRoutes on one Gateway,
  per-gateway mode): the full render and the re-render after one HTTPRoute created, changed or
  deleted, or the backend's EndpointSlice changed.

The machine's speed drifts by up to 2x within minutes, so the commits run alternately and
every figure is reported as after / before within each pair, with the median over the pairs.
Prints a Markdown table. Needs git and a clean enough checkout to add worktrees.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


ONE_GATEWAY = ("full", "created", "changed", "deleted", "EndpointSlice")


def one_gateway_objects(n: int) -> list[dict[str, Any]]:
    """``make dev``'s propagation setup (benchmarks/bench_propagation.py): one Gateway with an
    HTTP listener and ``n`` HTTPRoutes attached to it, each its own hostname, ``/`` to one
    backend Service."""
    from benchmarks import workload

    serial = workload._Serial()
    ns = workload.namespace_name(0)
    objs = workload.base_objects(serial)
    objs.append({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                 "metadata": workload._meta("web", ns, serial()),
                 "spec": {"gatewayClassName": "titanium", "listeners": [
                     {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}}]}})
    objs.append(workload._service(0, 0, serial()))
    objs.append(copy.deepcopy(workload.endpoint_slice(0, 0, serial())))
    objs += [_one_route(i, serial()) for i in range(n)]
    return objs


def _one_route(i: int, serial: int) -> dict[str, Any]:
    from benchmarks import workload

    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": workload._meta(f"seed-{i}", workload.namespace_name(0), serial),
            "spec": {"parentRefs": [{"name": "web"}], "hostnames": [f"seed-{i}.bench.example.com"],
                     "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                                "backendRefs": [{"name": workload.service_name(0, 0), "port": workload.SERVICE_PORT}]}]}}


def child_one_gateway(n: int) -> dict[str, float]:
    """The figures of :func:`one_gateway_objects` in ``per-gateway`` mode (run in a fresh process):
    the full render (best of 3) and the re-render after one HTTPRoute created, changed (a
    response header filter added), deleted, or the backend's EndpointSlice changed (median of
    6 each, on a converged cluster)."""
    import dataclasses

    sys.path.insert(0, str(Path.cwd()))
    from benchmarks import workload
    from benchmarks.bench_render import _changed, converged_objects, render_options
    from titanium_gateway.render import RenderCache, render

    def cpu(fn):  # type: ignore[no-untyped-def]
        t0 = time.process_time()
        fn()
        return time.process_time() - t0

    options = dataclasses.replace(render_options(), data_plane_mode="per-gateway")
    objects = converged_objects(one_gateway_objects(n), options, render)
    snap = workload.snapshot(objects, now="2026-01-01T00:01:00Z")
    out = {"full": min(cpu(lambda: render(snap, options)) for _ in range(3))}
    cache = RenderCache()
    render(snap, options, cache)
    times: dict[str, list[float]] = {k: [] for k in ONE_GATEWAY[1:]}

    def header(o: dict[str, Any], i: int) -> None:
        o["spec"]["rules"][0]["filters"] = [{"type": "ResponseHeaderModifier", "responseHeaderModifier": {
            "set": [{"name": "x-bench", "value": str(i)}]}}]

    for i in range(6):
        steps = [("created", lambda objs, i=i: [*objs, _one_route(n + i, 900_000 + i)]),
                 ("changed", lambda objs, i=i: _changed(objs, "HTTPRoute", (i * 37) % n, lambda o: header(o, i))),
                 ("deleted", lambda objs, i=i: [o for o in objs if o["metadata"]["name"] != f"seed-{(i * 53 + 7) % n}"]),
                 ("EndpointSlice", lambda objs, i=i: _changed(objs, "EndpointSlice", 0, lambda o: o["endpoints"][0].__setitem__(
                     "addresses", [f"172.16.{i // 250}.{i % 250 + 1}"])))]
        for kind, step in steps:
            objects = step(objects)
            snap = workload.snapshot(objects, now="2026-01-01T00:01:00Z")
            times[kind].append(cpu(lambda snap=snap: render(snap, options, cache)))
    out.update({k: statistics.median(v) for k, v in times.items()})
    return out


def _worktree(rev: str, base: Path) -> Path:
    path = base / rev.replace("/", "_")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(path), rev], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def _measure(tree: Path, n: int, ingresses: bool, one_gateway: bool = False) -> dict[str, float]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--n", str(n)]
    if not ingresses:
        cmd.append("--routes-only")
    if one_gateway:
        cmd.append("--one-gateway")
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", nargs="?")
    p.add_argument("after", nargs="?")
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--routes-only", action="store_true", help="N HTTPRoutes without Ingresses")
    p.add_argument("--one-gateway", action="store_true",
                   help="N HTTPRoutes on one Gateway, per-gateway mode (make dev's propagation setup)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child_one_gateway(args.n) if args.one_gateway else child(args.n, not args.routes_only)))
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
                a = _measure(trees[args.before], args.n, not args.routes_only, args.one_gateway)
                b = _measure(trees[args.after], args.n, not args.routes_only, args.one_gateway)
                pairs.append((a, b))
                print(f"pair {i + 1}: {json.dumps(a)} -> {json.dumps(b)}", file=sys.stderr)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    what = f"{args.n} HTTPRoutes" + ("" if args.routes_only or args.one_gateway else f" + {args.n} Ingresses")
    if args.one_gateway:
        what += " on one Gateway (per-gateway)"
    print(f"{what}, {revs[args.before]} -> {revs[args.after]}, {args.pairs} pairs, CPU seconds "
          "(full: best of 3; re-render after one change: median of 6)\n")
    print("| figure | before | after | after / before per pair | median |")
    print("|---|---|---|---|---|")
    for k in ONE_GATEWAY if args.one_gateway else FIGURES:
        if k not in pairs[0][0] or k not in pairs[0][1]:
            continue
        ratios = [b[k] / a[k] for a, b in pairs]
        label = ("full render" if k == "full" else f"re-render, 1 {k} changed" if k[0].isupper()
                 else f"re-render, 1 HTTPRoute {k}")
        print(f"| {label} | {', '.join(f'{a[k]:.3f}' for a, _ in pairs)} | {', '.join(f'{b[k]:.3f}' for _, b in pairs)}"
              f" | {', '.join(f'{r:.2f}' for r in ratios)} | {statistics.median(ratios):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
