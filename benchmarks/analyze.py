#!/usr/bin/env python3
"""Where a warm render of N routes (+ N ingresses) spends its time: phases, GC, top functions.

    python3 benchmarks/analyze.py 10000            # phases + GC share + cProfile top 25 (tottime)
    python3 benchmarks/analyze.py 10000 --html out.html   # pyinstrument call tree as HTML

The numbers behind benchmarks/FINDINGS.md. cProfile inflates Python-heavy code uniformly, so
read the ranking and the shares, not the absolute seconds.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bench_render, workload  # noqa: E402
from benchmarks.common import render_function  # noqa: E402


def gc_share(render, snap, options) -> tuple[float, float, int]:  # noqa: ANN001
    """(render seconds, seconds spent in GC collections, collections) of one warm render."""
    spent = [0.0, 0]
    started = [0.0]

    def cb(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - started[0]
            spent[1] += 1

    gc.callbacks.append(cb)
    try:
        t0 = time.perf_counter()
        render(snap, options)
        total = time.perf_counter() - t0
    finally:
        gc.callbacks.remove(cb)
    return total, spent[0], int(spent[1])


def memory_sites(n: int, routes_only: bool, top: int) -> int:
    """tracemalloc: what the caches hold, and the allocation sites alive at the end of emit."""
    import tracemalloc

    from titanium_gateway.twp import emit as emit_mod

    render = render_function()
    options = bench_render.render_options()
    import json

    tracemalloc.start(1)
    objs = [json.loads(json.dumps(o)) for o in workload.build(n, ingresses=not routes_only).objects]
    snap = workload.snapshot(objs)
    del objs
    caches = tracemalloc.get_traced_memory()[0]
    base = tracemalloc.take_snapshot()
    taken: list = []
    orig = emit_mod.emit

    def spy(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        out = orig(*a, **kw)
        taken.append(tracemalloc.take_snapshot())
        return out

    emit_mod.emit = spy
    import titanium_gateway.render as pkg

    patched = [m for m in vars(pkg).values() if getattr(m, "emit", None) is orig]
    for m in patched:
        m.emit = spy
    try:
        tracemalloc.reset_peak()
        render(snap, options)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        emit_mod.emit = orig
        for m in patched:
            m.emit = orig
    print(f"caches {caches / 2**20:.0f} MiB; render peak +{(peak - caches) / 2**20:.0f} MiB")
    if taken:
        print("alive at the end of emit (vs before the render), by line:")
        for stat in taken[0].compare_to(base, "lineno")[:top]:
            print(f"  {stat.size_diff / 2**20:8.1f} MiB  {stat.count_diff:9d} blocks  {stat.traceback}")
    else:
        print("emit() was not intercepted (the render imports it under another name)")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", type=int)
    p.add_argument("--routes-only", action="store_true")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--html", default="")
    p.add_argument("--memory", action="store_true", help="tracemalloc top allocation sites near the render's peak")
    a = p.parse_args()
    if a.memory:
        return memory_sites(a.n, a.routes_only, a.top)
    render = render_function()
    options = bench_render.render_options()
    snap = workload.snapshot(workload.build(a.n, ingresses=not a.routes_only).objects)
    render(snap, options)
    total, in_gc, count = gc_share(render, snap, options)
    print(f"warm render {total:.2f} s; GC {in_gc:.2f} s in {count} collections ({in_gc / total:.0%})")
    gc.collect()
    gc.freeze()
    total2, in_gc2, count2 = gc_share(render, snap, options)
    print(f"after gc.freeze() of the caches: {total2:.2f} s; GC {in_gc2:.2f} s in {count2} collections")
    gc.unfreeze()
    if a.html:
        from pyinstrument import Profiler

        prof = Profiler(interval=0.001)
        prof.start()
        render(snap, options)
        prof.stop()
        Path(a.html).write_text(prof.output_html(), encoding="utf-8")
        print(f"wrote {a.html}")
    pr = cProfile.Profile()
    pr.enable()
    render(snap, options)
    pr.disable()
    out = io.StringIO()
    st = pstats.Stats(pr, stream=out)
    st.sort_stats("tottime").print_stats(a.top)
    text = out.getvalue()
    print(text[text.find("   ncalls"):])
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("cumulative").print_stats(r"titanium_gateway", a.top)
    text = out.getvalue()
    print(text[text.find("   ncalls"):])
    return 0


if __name__ == "__main__":
    sys.exit(main())
