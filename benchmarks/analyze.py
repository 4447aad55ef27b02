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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", type=int)
    p.add_argument("--routes-only", action="store_true")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--html", default="")
    a = p.parse_args()
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
