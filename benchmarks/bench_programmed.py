"""What Programmed costs when the data plane confirms a config: a second render, or the last
result's Programmed conditions decided again (``render.status.programmed.reprogram``, what the
controller does since only the prober's answer changed).

    python3 benchmarks/bench_programmed.py [--n 10000] [--repeats 5]

Prints CPU seconds (best of ``--repeats``) of both, on the workload of N HTTPRoutes + N
Ingresses as the informers hold them once converged (statuses written back), with the
controller's RenderCache warm (the second render replays every translation, as the
controller's would).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import workload  # noqa: E402
from benchmarks.bench_render import converged_objects, render_options  # noqa: E402


def _timeless(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _timeless(v) for k, v in value.items() if k != "lastTransitionTime"}
    if isinstance(value, (list, tuple)):
        return [_timeless(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    from titanium_gateway.render import RenderCache, render
    from titanium_gateway.render.status.programmed import reprogram

    options = render_options()
    # a converged cluster (every status written back), as the controller's caches hold it
    objects = converged_objects(workload.build(args.n).objects, options, render)
    objects = workload.informer_objects(objects, options.data_plane_service)[0]
    cache = RenderCache()
    pending = render(workload.snapshot(objects, now="2026-01-01T00:00:00Z"), options, cache)
    confirmed = workload.snapshot(objects, now="2026-01-01T00:00:10Z", confirmed_config_hash=pending.config_hash)

    def cpu(fn):  # type: ignore[no-untyped-def]
        t0 = time.process_time()
        fn()
        return time.process_time() - t0

    rendered = min(cpu(lambda: render(confirmed, options, cache)) for _ in range(args.repeats))
    again = min(cpu(lambda: reprogram(pending, assume_programmed=False, confirmed_hash=pending.config_hash,
                                      probe_message="", now="2026-01-01T00:00:10Z"))
                for _ in range(args.repeats))
    same = reprogram(pending, assume_programmed=False, confirmed_hash=pending.config_hash, probe_message="",
                     now="2026-01-01T00:00:10Z")
    full = render(confirmed, options)
    # the same statuses as the render's (a transition's time aside)
    assert [(st.key, _timeless(st.status)) for st in same.statuses] == \
        [(st.key, _timeless(st.status)) for st in full.statuses]
    print(f"{args.n} HTTPRoutes + {args.n} Ingresses, Programmed flips to True (CPU seconds, best of {args.repeats}):")
    print(f"  render again (warm RenderCache): {rendered:.3f}")
    print(f"  reprogram the last result:       {again:.6f}  ({rendered / max(again, 1e-9):.0f}x less)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
