"""Shared pieces of the benchmark scripts: result rows, the table, timers, RSS, machine info."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@dataclass
class Row:
    figure: str
    case: str
    value: str
    goal: str = ""
    #: True met, False missed, None no goal / not measured
    met: bool | None = None

    @property
    def verdict(self) -> str:
        return {True: "yes", False: "NO", None: ""}[self.met]


def not_measured(figure: str, case: str, why: str, goal: str = "") -> Row:
    return Row(figure, case, f"not measured: {why}", goal, None)


def error_row(figure: str, exc: BaseException, case: str = "-") -> Row:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    if len(text) > 160:
        text = text[:157] + "..."
    return Row(figure, case, f"ERROR {text}", "", None)


def format_table(rows: Sequence[Row]) -> str:
    """A GitHub-flavoured Markdown table (readable as plain text too)."""
    header = ("figure", "case", "measured", "goal", "met")
    cells = [header] + [(r.figure, r.case, r.value, r.goal, r.verdict) for r in rows]
    widths = [max(len(str(c[i])) for c in cells) for i in range(len(header))]
    lines = []
    for n, c in enumerate(cells):
        lines.append("| " + " | ".join(str(v).ljust(w) for v, w in zip(c, widths, strict=True)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def repeat(fn: Callable[[], Any], times: int) -> list[float]:
    return [timed(fn)[0] for _ in range(times)]


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def percentile(xs: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty sequence."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


def proc_status(pid: int | str = "self") -> dict[str, int]:
    """VmRSS / VmHWM / VmPeak (bytes) of a process from /proc/<pid>/status."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "VmPeak", "VmSize"):
                    out[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


def mib(n: float) -> str:
    return f"{n / 1024 / 1024:.0f} MiB"


def seconds(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def machine_info() -> str:
    """``nproc``, ``lscpu | head`` and the Python (and PyYAML/libyaml) version."""
    lines = [f"$ nproc\n{os.cpu_count()}", "$ lscpu | head"]
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5).stdout.splitlines()
        lines += lscpu[:10]
    except (OSError, subprocess.SubprocessError):
        lines.append("lscpu: unavailable")
    import yaml

    lines.append(f"$ python3 --version\nPython {platform.python_version()} ({platform.python_implementation()}); "
                 f"PyYAML {yaml.__version__}, libyaml {'yes' if getattr(yaml, '__with_libyaml__', False) else 'no'}")
    return "\n".join(lines)


def render_function() -> Callable[..., Any]:
    """``titanium_gateway.render.render``, or ImportError with the reason."""
    from titanium_gateway import render as pkg

    fn = getattr(pkg, "render", None)
    if not callable(fn):
        raise ImportError("titanium_gateway.render.render does not exist yet")
    return fn
