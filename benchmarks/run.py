#!/usr/bin/env python3
"""Prints the performance table of titanium-gateway (``make bench``; see docs/performance.md).

Every figure runs in its own try block: a figure whose code path fails or does not exist yet
prints its error (or ``not measured: <why>``) in its row and the others still run.

    python3 benchmarks/run.py                 # every figure, N = 1k, 5k, 10k, 20k
    python3 benchmarks/run.py --quick         # small N, short churn: a smoke run
    python3 benchmarks/run.py --only render,size
    python3 benchmarks/run.py --render --pfx  # per-figure flags (same as --only render,pfx)
    python3 benchmarks/run.py --profile 10000 # pyinstrument profile of one warm render
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import Row, error_row, format_table, machine_info  # noqa: E402

FIGURES = ("render", "size", "pfx", "memory", "startup", "churn", "status", "startup-real", "status-real", "cli")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small N and short runs (a smoke run, seconds)")
    p.add_argument("--only", default="", help=f"comma-separated figures of: {', '.join(FIGURES)}")
    for fig in FIGURES:
        p.add_argument(f"--{fig}", dest=fig.replace("-", "_"), action="store_true",
                       help=f"run the {fig} figure (combinable)")
    p.add_argument("--sizes", default="", help="route counts for render/size (default 1000,5000,10000,20000)")
    p.add_argument("--repeats", type=int, default=0, help="warm renders per size (the best is reported)")
    p.add_argument("--memory-n", type=int, default=0, help="routes for the memory figure (default 10000)")
    p.add_argument("--startup-n", type=int, default=0, help="routes for the start-up figure (default 10000)")
    p.add_argument("--churn-n", type=int, default=0, help="routes for the churn figure (default 5000)")
    p.add_argument("--churn-rate", type=float, default=200.0, help="EndpointSlice updates per second")
    p.add_argument("--churn-seconds", type=float, default=0.0, help="churn duration (default 30)")
    p.add_argument("--status-n", type=int, default=0, help="HTTPRoutes created at once (default 1000)")
    p.add_argument("--cli-n", type=int, default=0, help="HTTPRoutes for the offline render command (default 10000)")
    p.add_argument("--controller-args", default="",
                   help="extra controller flags for startup/churn/status, e.g. '--kube-api-qps=500 --kube-api-burst=1000'")
    p.add_argument("--reuse-cluster", action="store_true",
                   help="startup-real: start from the seeded cluster a former run left running, and leave it running "
                   "(stop it with hack/kube/down.sh .cache/kube/bench)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="print a pyinstrument profile of one warm render of N routes and exit")
    p.add_argument("--machine", action="store_true", help="print the machine description too")
    p.add_argument("--data-plane-mode", choices=("shared", "per-gateway"), default="shared",
                   help="render and run the controller with one data plane (shared) or one per Gateway (the "
                   "workload's 20)")
    return p.parse_args(argv)


def selected(args: argparse.Namespace) -> list[str]:
    chosen = [f.strip() for f in args.only.split(",") if f.strip()]
    chosen += [f for f in FIGURES if getattr(args, f.replace("-", "_"))]
    unknown = [f for f in chosen if f not in FIGURES]
    if unknown:
        raise SystemExit(f"unknown figure(s): {', '.join(unknown)} (known: {', '.join(FIGURES)})")
    return [f for f in FIGURES if f in chosen] or list(FIGURES)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    import os

    from benchmarks.bench_render import MODE_ENV

    os.environ[MODE_ENV] = args.data_plane_mode  # (the figures' child processes inherit it)
    if args.profile:
        from benchmarks.bench_render import profile_render

        print(profile_render(args.profile))
        return 0
    q = args.quick
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()] or ([100, 200] if q else [1000, 5000, 10000, 20000])
    repeats = args.repeats or (2 if q else 3)
    state: dict = {}
    rows: list[Row] = []
    started = time.time()
    load_start = _loadavg()

    def run(fig: str, fn) -> None:  # noqa: ANN001
        t0 = time.perf_counter()
        try:
            rows.extend(fn())
        except Exception as exc:  # noqa: BLE001 - print the error in the figure's row, go on
            traceback.print_exc(file=sys.stderr)
            rows.append(error_row(fig, exc))
        print(f"[bench] {fig}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    if args.controller_args:
        from benchmarks import bench_controller

        bench_controller.EXTRA_ARGS[:] = args.controller_args.split()
    for fig in selected(args):
        if fig == "render":
            from benchmarks import bench_render

            run(fig, lambda: bench_render.figure_render(sizes, repeats, state))
        elif fig == "size":
            from benchmarks import bench_render

            run(fig, lambda: bench_render.figure_size(sizes, state))
        elif fig == "pfx":
            from benchmarks import bench_render

            run(fig, lambda: bench_render.figure_pfx(min(sizes) if q else 1000))
        elif fig == "memory":
            from benchmarks import bench_memory

            run(fig, lambda: bench_memory.figure_memory(args.memory_n or (400 if q else 10000)))
        elif fig == "startup":
            from benchmarks import bench_controller

            run(fig, lambda: bench_controller.figure_startup(args.startup_n or (400 if q else 10000)))
        elif fig == "churn":
            from benchmarks import bench_controller

            run(fig, lambda: bench_controller.figure_churn(
                args.churn_n or (400 if q else 5000), args.churn_rate,
                args.churn_seconds or (3.0 if q else 30.0), quiet_seconds=2.0 if q else 10.0))
        elif fig == "status":
            from benchmarks import bench_controller

            run(fig, lambda: bench_controller.figure_status(args.status_n or (100 if q else 1000)))
        elif fig == "startup-real":
            from benchmarks import bench_realserver

            run(fig, lambda: bench_realserver.figure_startup_real(
                args.startup_n or (400 if q else 10000), reuse=args.reuse_cluster))
        elif fig == "status-real":
            from benchmarks import bench_realserver

            run(fig, lambda: bench_realserver.figure_status_real(args.status_n or (100 if q else 1000)))
        elif fig == "cli":
            from benchmarks import bench_cli

            run(fig, lambda: bench_cli.figure_cli(args.cli_n or (300 if q else 10000), 2 if q else 5))
    print(format_table(rows))
    print(f"\nload average at start {load_start}, at end {_loadavg()} (other work on the machine skews timings)")
    if args.machine or not q:
        print()
        print(machine_info())
    print(f"\n(total {time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
