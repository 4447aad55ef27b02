#!/usr/bin/env python3
"""The offline ``titanium-gateway render`` as a whole process, against its floor.

The workload is the render benchmark's cluster of N HTTPRoutes (``workload.build(n,
ingresses=False)``: 20 Gateways, 200 TLS Secrets, N/5 Services with their EndpointSlices),
written once as a ``kind: List`` in JSON (what ``kubectl get -o json`` gives) and in YAML.
Each run times ``python3 -m titanium_gateway render -f FILE --out DIR`` from the outside
(process start to exit: interpreter start, imports, reading, rendering, writing every file,
the summary; with bytecode caches, as an installed command has them), and in the same run
the floor: ``json.load`` of the JSON input plus ``json.dumps`` of the rendered document
(twp.yaml and its parts, parsed beforehand), each timed in a fresh ``python3`` with
Python's defaults (its garbage collector on). Runs
alternate floor, JSON, YAML, so a drift of the machine's speed affects all three; the ratio
is taken run by run, and the median is reported.

    python3 benchmarks/bench_cli.py               # N = 10000, 5 runs
    python3 benchmarks/bench_cli.py --n 1000 --runs 3
    python3 benchmarks/run.py --only cli          # the same, as a row of the table
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import Row, machine_info, seconds  # noqa: E402

GOAL_RATIO = 4.0


def write_inputs(n: int, directory: Path) -> dict[str, Path]:
    """The N-route workload as one JSON and one YAML ``List`` file."""
    import yaml

    from benchmarks import workload

    objects = workload.build(n, ingresses=False).objects
    listing = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": objects}
    paths = {"json": directory / f"routes-{n}.json", "yaml": directory / f"routes-{n}.yaml"}
    paths["json"].write_text(json.dumps(listing))
    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        def ignore_aliases(self, data: Any) -> bool:  # as kubectl writes it: no anchors
            return True

    paths["yaml"].write_text(yaml.dump(listing, Dumper=Dumper, sort_keys=False, default_flow_style=False))
    del objects, listing
    gc.collect()
    return paths


def cli_command(path: Path, out: Path) -> list[str]:
    from benchmarks import workload

    return [sys.executable, "-m", "titanium_gateway", "render", "-f", str(path), "--out", str(out),
            "--data-plane-service", f"{workload.DATA_PLANE_NAMESPACE}/{workload.DATA_PLANE_SERVICE}"]


def cli_env(out: Path) -> dict[str, str]:
    """The environment of the command: the project on the path, and bytecode caches as an
    installed package has them (pip compiles them at install): written by the warm-up run
    under ``<out>.pycache`` and read by the timed ones, even where the environment sets
    PYTHONDONTWRITEBYTECODE (else every run would compile the project's modules again)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(out.parent / f"{out.name}.pycache")
    return env


def run_cli(path: Path, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole ``render`` process."""
    env = cli_env(out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cli_command(path, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"render exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def rendered_document(out: Path) -> list[Any]:
    """twp.yaml and its parts as data (parsed once, outside any timing)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files = [out / "twp.yaml", *sorted(out.glob("twp.part-*.yaml"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))]
    return [yaml.load(f.read_bytes(), Loader=loader) for f in files]  # noqa: S506 - the safe loader


_FLOOR = """
import json, sys, time
w0, c0 = time.perf_counter(), time.process_time()
with open(sys.argv[1], encoding="utf-8") as f:
    data = json.load(f)
w1, c1 = time.perf_counter(), time.process_time()
del data
with open(sys.argv[2], encoding="utf-8") as f:
    document = json.load(f)
w2, c2 = time.perf_counter(), time.process_time()
json.dumps(document)
w3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({"wall": (w1 - w0) + (w3 - w2), "cpu": (c1 - c0) + (c3 - c2)}))
"""


def floor_once(json_path: Path, document_path: Path) -> tuple[float, float]:
    """``json.load`` of the input + ``json.dumps`` of the rendered document, each timed in a
    fresh interpreter with Python's defaults (loading the document is not timed): (wall, CPU)."""
    proc = subprocess.run([sys.executable, "-c", _FLOOR, str(json_path), str(document_path)],
                          capture_output=True, text=True, check=True)
    figures = json.loads(proc.stdout)
    return figures["wall"], figures["cpu"]


_PHASES = """
import gc, json, sys, time
gc.disable()  # as the command does
t = time.process_time()
from titanium_gateway.offline import fieldcheck, load, outputs, snapshot, summary
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
phases = {"imports": time.process_time() - t}

def timed(name, fn):
    t = time.process_time()
    value = fn()
    phases[name] = phases.get(name, 0.0) + time.process_time() - t
    return value

path, out, service = sys.argv[1], sys.argv[2], sys.argv[3]
report = load.LoadReport()
loaded = timed("read, parse, defaults", lambda: load.load_manifests([path], report, check_fields=False))
timed("unknown fields", lambda: [fieldcheck.unknown_fields(m.obj) for m in loaded])
ns, _, name = service.rpartition("/")
options = RenderOptions(data_plane_service=(ns, name))
prepared = timed("snapshot", lambda: snapshot.prepare([m.obj for m in loaded], defaulted=True))
result = timed("render", lambda: render(prepared.snapshot, options))
from pathlib import Path
timed("write files", lambda: outputs.write_outputs(result, Path(out), prepared.snapshot, options.controller_name))
timed("summary", lambda: summary.summary(result, report, prepared, options))
print(json.dumps(phases))
"""


def phases(path: Path, out: Path) -> dict[str, float]:
    """CPU seconds of each step of the command, run in a fresh interpreter as the command runs
    them (the unknown-field check, part of the loading in the command, timed on its own)."""
    from benchmarks import workload

    env = cli_env(out)
    proc = subprocess.run([sys.executable, "-c", _PHASES, str(path), str(out),
                           f"{workload.DATA_PLANE_NAMESPACE}/{workload.DATA_PLANE_SERVICE}"],
                          env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def measure(n: int, runs: int, yaml_input: bool = True, keep: Path | None = None) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="bench-cli-")) if keep is None else keep
    try:
        inputs = write_inputs(n, directory)
        out = directory / "out"
        run_cli(inputs["json"], out)  # warm-up (page cache, .pyc files)
        document = rendered_document(out)
        items = sum(len(d.get(k) or []) for d in document for k in ("routes", "clusters"))
        document_path = directory / "rendered.json"
        document_path.write_text(json.dumps(document))
        parts = len(document) - 1
        del document
        gc.collect()
        floors, floor_cpus, walls, cpus, ratios, cpu_ratios = [], [], [], [], [], []
        ywalls, ycpus, yratios, ycpu_ratios = [], [], [], []
        for _ in range(runs):
            floor, floor_cpu = floor_once(inputs["json"], document_path)
            wall, cpu = run_cli(inputs["json"], out)
            floors.append(floor)
            floor_cpus.append(floor_cpu)
            walls.append(wall)
            cpus.append(cpu)
            ratios.append(wall / floor)
            cpu_ratios.append(cpu / floor_cpu)
            if yaml_input:
                ywall, ycpu = run_cli(inputs["yaml"], out)
                ywalls.append(ywall)
                ycpus.append(ycpu)
                yratios.append(ywall / floor)
                ycpu_ratios.append(ycpu / floor_cpu)
        steps = phases(inputs["json"], out)
        return {
            "n": n,
            "phases": steps,
            "runs": runs,
            "json_bytes": inputs["json"].stat().st_size,
            "yaml_bytes": inputs["yaml"].stat().st_size,
            "parts": parts,
            "items": items,
            "floor": floors,
            "floor_cpu": floor_cpus,
            "json": walls,
            "json_cpu": cpus,
            "json_ratio": ratios,
            "json_cpu_ratio": cpu_ratios,
            "yaml": ywalls,
            "yaml_cpu": ycpus,
            "yaml_ratio": yratios,
            "yaml_cpu_ratio": ycpu_ratios,
            "loadavg": _loadavg(),
        }
    finally:
        if keep is None:
            shutil.rmtree(directory, ignore_errors=True)


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _range(xs: list[float], fmt: Any = seconds) -> str:
    if not xs:
        return "-"
    return f"{fmt(statistics.median(xs))} (min {fmt(min(xs))}, max {fmt(max(xs))})"


def _x(v: float) -> str:
    return f"{v:.1f}x"


def rows(m: dict[str, Any]) -> list[Row]:
    n = m["n"]
    mb = m["json_bytes"] / 1e6
    out = [
        Row("cli", f"render -f routes.json --out DIR, {n} HTTPRoutes ({mb:.1f} MB JSON List), whole process",
            f"wall {_range(m['json'])}; floor {_range(m['floor'])} -> {_range(m['json_ratio'], _x)}; "
            f"CPU {seconds(statistics.median(m['json_cpu']))} vs {seconds(statistics.median(m['floor_cpu']))} "
            f"-> {_x(statistics.median(m['json_cpu_ratio']))}",
            f"< {GOAL_RATIO:g}x floor", statistics.median(m["json_ratio"]) < GOAL_RATIO),
    ]
    if m["yaml"]:
        ymb = m["yaml_bytes"] / 1e6
        out.append(Row("cli", f"the same as YAML ({ymb:.1f} MB)",
                       f"wall {_range(m['yaml'])} -> {_range(m['yaml_ratio'], _x)} the JSON floor; CPU "
                       f"{seconds(statistics.median(m['yaml_cpu']))} -> {_x(statistics.median(m['yaml_cpu_ratio']))}",
                       f"< {GOAL_RATIO:g}x floor", statistics.median(m["yaml_ratio"]) < GOAL_RATIO))
    steps = m.get("phases") or {}
    if steps:
        total = sum(steps.values())
        out.append(Row("cli", "where the CPU goes (JSON input, one run)",
                       "; ".join(f"{k} {seconds(v)}" for k, v in steps.items()) + f"; total {seconds(total)}", "", None))
    out.append(Row("cli", "floor",
                   f"json.load of the JSON input + json.dumps of the rendered twp.yaml + {m['parts']} part(s) "
                   f"({m['items']} routes and clusters), each in a fresh python3; {m['runs']} runs "
                   f"alternating floor, JSON, YAML; medians (load average at the end {m['loadavg']})", "", None))
    return out


def figure_cli(n: int = 10_000, runs: int = 5) -> list[Row]:
    return rows(measure(n, runs))


def main(argv: list[str] | None = None) -> int:
    from benchmarks.common import format_table

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000, help="HTTPRoutes (default 10000)")
    p.add_argument("--runs", type=int, default=5, help="timed runs of each (default 5)")
    p.add_argument("--no-yaml", action="store_true", help="time the JSON input only")
    p.add_argument("--keep", type=Path, help="write the inputs and outputs here and keep them")
    p.add_argument("--raw", action="store_true", help="also print every run's figures as JSON")
    args = p.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    m = measure(args.n, args.runs, yaml_input=not args.no_yaml, keep=args.keep)
    print(format_table(rows(m)))
    if args.raw:
        print(json.dumps(m, indent=1))
    print()
    print(machine_info())
    return 0


if __name__ == "__main__":
    sys.exit(main())
