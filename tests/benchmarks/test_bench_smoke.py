"""Smoke test of the benchmark harness: ``benchmarks/run.py --quick --only render`` prints a table.

No timing assertions, ever: the figures are for humans (``make bench``, docs/performance.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_render_prints_a_table() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--only", "render"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("|")]
    assert lines, proc.stdout
    assert lines[0].split("|")[1].strip() == "figure"
    assert set(lines[1]) <= {"|", "-"}
    rows = [ln for ln in lines[2:] if ln.split("|")[1].strip() == "render"]
    # One row per quick size (a measurement, "not measured: ..." or an ERROR), plus the notes.
    assert len(rows) >= 2, proc.stdout


def test_unknown_figure_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--only", "nonsense"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode != 0
    assert "unknown figure" in proc.stderr
