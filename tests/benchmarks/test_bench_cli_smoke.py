"""Smoke test of benchmarks/bench_cli.py: a tiny run prints its table (no timing assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_tiny_cli_benchmark_prints_its_rows() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_cli.py"), "--n", "40", "--runs", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = [ln.split("|")[2].strip() for ln in proc.stdout.splitlines() if ln.startswith("| cli")]
    assert len(rows) == 4, proc.stdout
    assert rows[0].startswith("render -f routes.json --out DIR, 40 HTTPRoutes") and rows[1].startswith("the same as YAML")
    assert "render" in proc.stdout and "floor" in rows[3]
