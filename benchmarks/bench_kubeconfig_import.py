#!/usr/bin/env python3
"""What the lean import of the ``kubernetes`` package's config loaders (kube/kubeconfig.py) saves,
against ``from kubernetes import client, config``: time, resident memory and modules, each in
fresh processes (bytecode caches warm, as an installed command has them), and the controller's
start-up import (``titanium_gateway.controller.main`` plus a loaded configuration) for scale.

    python3 benchmarks/bench_kubeconfig_import.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = r"""
import json, os, sys, time
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
base_rss, base_mods = rss(), len(sys.modules)
t0 = time.perf_counter()
MODE = sys.argv[1]
if MODE == "lean":
    from titanium_gateway.kube.kubeconfig import kubernetes_config
    kubernetes_config()
elif MODE == "full":
    from kubernetes import client, config
elif MODE == "controller":
    import titanium_gateway.controller.main, titanium_gateway.kube.rest
    from titanium_gateway.kube.kubeconfig import kubernetes_config
    kubernetes_config()
elif MODE == "controller-full":
    from kubernetes import client, config
    import titanium_gateway.controller.main, titanium_gateway.kube.rest
    from titanium_gateway.kube.kubeconfig import kubernetes_config
    kubernetes_config()
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "rss": rss() - base_rss, "modules": len(sys.modules) - base_mods}))
"""


def measure(mode: str, runs: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    got = []
    for _ in range(runs + 1):  # the first run warms the bytecode caches
        out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, env=env,
                             check=True, cwd=str(ROOT))
        got.append(json.loads(out.stdout))
    got = got[1:]
    return {k: statistics.median(g[k] for g in got) for k in ("seconds", "rss", "modules")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args(argv)
    rows = {m: measure(m, args.runs) for m in ("lean", "full", "controller", "controller-full")}
    print(f"median of {args.runs} fresh processes")
    print("| import | time | RSS | modules |")
    print("|---|---:|---:|---:|")
    for mode, r in rows.items():
        print(f"| {mode} | {r['seconds'] * 1000:.0f} ms | {r['rss'] / 2**20:.1f} MiB | {r['modules']:.0f} |")
    lean, full = rows["controller"], rows["controller-full"]
    print(f"saving at controller start-up: {(full['seconds'] - lean['seconds']) * 1000:.0f} ms, "
          f"{(full['rss'] - lean['rss']) / 2**20:.1f} MiB, {full['modules'] - lean['modules']:.0f} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
