"""Peak memory of the informer caches plus one render, measured in a fresh process.

The parent writes the workload as JSON lines (one object per line, as a watch stream carries
them); a child process decodes them into the caches (a :class:`Snapshot` of raw dicts, which is
what the informers hold), renders once, and reports:

* RSS (``/proc/self/status``): after imports, after filling the caches, the high-water mark
  after one render (run WITHOUT tracemalloc, whose bookkeeping inflates RSS);
* tracemalloc (a second child): Python heap held by the caches, and the peak during the render.

Run by ``benchmarks/run.py --only memory``; ``python3 -m benchmarks.bench_memory --probe FILE``
is the child.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import workload  # noqa: E402
from benchmarks.common import ROOT, Row, error_row, mib, proc_status  # noqa: E402

GOAL_RSS = 300 * 1024 * 1024


def _probe(path: str, trace: bool) -> dict[str, Any]:
    import tracemalloc

    from benchmarks.bench_render import render_options
    from benchmarks.common import render_function
    from titanium_gateway.render.snapshot import Snapshot  # noqa: F401 - import cost counted in "imports"

    render = render_function()
    options = render_options()
    gc.collect()
    out: dict[str, Any] = {"rss_imports": proc_status()["VmRSS"]}
    if trace:
        tracemalloc.start()
    snap, out["caches"] = _fill_caches(path)
    gc.collect()
    st = proc_status()
    out["rss_caches"] = st["VmRSS"]
    if trace:
        out["heap_caches"] = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
    result = render(snap, options)
    st = proc_status()
    out["rss_after_render"] = st["VmRSS"]
    out["rss_peak"] = st["VmHWM"]
    out["config_bytes"] = len(result.config) + sum(len(d) for _, d in result.parts)
    if trace:
        cur, peak = tracemalloc.get_traced_memory()
        out["heap_after_render"] = cur
        out["heap_peak"] = peak
        tracemalloc.stop()
    return out


def _fill_caches(path: str) -> tuple[Any, str]:
    """The informer caches from JSON lines: ``kube.store.Store`` per kind when it exists."""
    from titanium_gateway.render.snapshot import KIND_FIELDS, Snapshot

    try:
        from titanium_gateway.kube.store import Store, namespace_index
    except ImportError:
        objects = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                objects.append(json.loads(line))
        return workload.snapshot(objects), "plain dicts"
    try:  # the informers' transforms (drop unread fields, intern keys and short strings)
        from benchmarks.bench_render import render_options
        from titanium_gateway.controller.transform import transform_for

        dp = render_options().data_plane_service
        transforms = {kind: transform_for(kind, dp) for kind in KIND_FIELDS}
        how = "kube.store.Store + informer transforms"
    except ImportError:
        transforms = {}
        how = "kube.store.Store"
    stores = {fld: Store({"namespace": namespace_index}) for fld in KIND_FIELDS.values()}
    with open(path, encoding="utf-8") as f:
        for line in f:
            obj = json.loads(line)  # one object per line: decoded on its own, as a watch event is
            fn = transforms.get(obj["kind"])
            stores[KIND_FIELDS[obj["kind"]]].upsert(fn(obj) if fn is not None else obj)
    return Snapshot(**{fld: st.snapshot() for fld, st in stores.items()}), how


def _run_child(path: str, trace: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.bench_memory", "--probe", path] + (["--trace"] if trace else [])
    proc = subprocess.run(cmd, cwd=str(ROOT), capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"memory probe failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def figure_memory(n: int) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "objects.jsonl")
        wl = workload.build(n)
        with open(path, "w", encoding="utf-8") as f:
            for o in wl.objects:
                f.write(json.dumps(o, separators=(",", ":")) + "\n")
        count = len(wl.objects)
        del wl
        try:
            r = _run_child(path, trace=False)
            rows.append(Row(
                "memory", f"N={n} ({count} objs, {r['caches']}) RSS",
                f"imports {mib(r['rss_imports'])}, after caches {mib(r['rss_caches'])}, "
                f"peak after 1 render {mib(r['rss_peak'])}",
                "< 300 MiB", r["rss_peak"] < GOAL_RSS,
            ))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("memory", exc, f"N={n} RSS"))
        try:
            t = _run_child(path, trace=True)
            rows.append(Row(
                "memory", f"N={n} tracemalloc",
                f"caches {mib(t['heap_caches'])}; render peak +{mib(t['heap_peak'] - t['heap_caches'])} "
                f"(retained after {mib(t['heap_after_render'] - t['heap_caches'])})",
                "", None,
            ))
        except Exception as exc:  # noqa: BLE001
            rows.append(error_row("memory", exc, f"N={n} tracemalloc"))
    return rows


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--probe", required=True)
    p.add_argument("--trace", action="store_true")
    a = p.parse_args()
    print(json.dumps(_probe(a.probe, a.trace)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
