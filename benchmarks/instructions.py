#!/usr/bin/env python3
"""Prints the instructions the render executes (valgrind's callgrind), for comparing two trees.

Timings on a shared machine move by up to 2x from minute to minute; instruction counts do not.
Each figure is the difference between two processes that build the same workload, one of which
then renders: the full render (warm: the PFX cache filled by a first render), and the
controller's re-render after one change (the ``RenderCache``), per kind of change.

    python3 benchmarks/instructions.py                     # this tree, 1k routes + 1k Ingresses
    python3 benchmarks/instructions.py --tree ../other     # another checkout's code and workload
    python3 benchmarks/instructions.py --n 2000 --routes-only

Needs ``valgrind`` (Debian package). A run takes minutes: everything runs about 50x slower.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import sys
sys.path.insert(0, {tree!r})
import copy
from benchmarks import workload
from benchmarks.bench_render import converged_objects, render_options
from titanium_gateway.render import RenderCache, render

mode, n, ingresses = {mode!r}, {n}, {ingresses}
options = render_options()
objects = converged_objects(workload.build(n, ingresses=ingresses).objects, options, render)
snap = workload.snapshot(objects, now="2026-01-01T00:01:00Z")
cache = RenderCache()
render(snap, options, cache)  # PFX conversions cached, the RenderCache filled


def changed(kind, edit):
    target = [o for o in objects if o["kind"] == kind][7]
    new = copy.deepcopy(target)
    edit(new)
    new["metadata"]["resourceVersion"] += "1"
    return workload.snapshot([new if o is target else o for o in objects], now="2026-01-01T00:01:00Z")


def path(o):
    o["spec"]["rules"][0]["matches"][0]["path"]["value"] = "/changed"


def ing_path(o):
    o["spec"]["rules"][0]["http"]["paths"][0]["path"] = "/changed"


def addresses(o):
    o["endpoints"][0]["addresses"] = ["172.16.9.9"]


edits = {{"HTTPRoute": path, "Ingress": ing_path, "EndpointSlice": addresses}}
if mode == "full":
    render(snap, options)
elif mode in edits:
    render(changed(mode, edits[mode]), options, cache)
elif mode.startswith("base-"):
    changed(mode[5:], edits[mode[5:]])
"""


def _instructions(tree: str, mode: str, n: int, ingresses: bool) -> int:
    code = _CHILD.format(tree=tree, mode=mode, n=n, ingresses=ingresses)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", code],
            cwd=tree, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": tree},
        )
        if proc.returncode != 0:
            raise SystemExit(f"{mode}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if not found:
            raise SystemExit(f"{mode}: no instruction count in valgrind's output\n{proc.stderr[-2000:]}")
        return int(found.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]), help="the checkout to measure")
    p.add_argument("--n", type=int, default=1000, help="HTTPRoutes (and as many Ingresses)")
    p.add_argument("--routes-only", action="store_true", help="no Ingresses in the workload")
    args = p.parse_args()
    tree = str(Path(args.tree).resolve())
    ingresses = not args.routes_only
    base = _instructions(tree, "none", args.n, ingresses)
    label = f"N={args.n} routes" + (f" + {args.n} Ingresses" if ingresses else " only")
    print(f"{label}, tree {tree}")
    full = _instructions(tree, "full", args.n, ingresses) - base
    print(f"  full render (warm)              {full / 1e6:10.1f} M instructions")
    kinds = ["EndpointSlice", "HTTPRoute"] + (["Ingress"] if ingresses else [])
    for kind in kinds:
        without = _instructions(tree, f"base-{kind}", args.n, ingresses)
        with_render = _instructions(tree, kind, args.n, ingresses)
        print(f"  re-render, 1 {kind:13s} changed {(with_render - without) / 1e6:10.1f} M instructions")


if __name__ == "__main__":
    main()
