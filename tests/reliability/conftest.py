"""Reliability campaign: the ``slow`` tests run only when FUZZ_EXAMPLES is set (``make fuzz``).

``FUZZ_EXAMPLES`` (default: unset) is the number of hypothesis examples per campaign test;
without it every test uses its small CI default and ``@pytest.mark.slow`` tests are skipped,
so ``pytest tests/reliability`` stays well under two minutes.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.integration.conftest import env  # noqa: F401 - the integration harness fixture
from tests.reliability import fuzzlib


def pytest_configure(config: pytest.Config) -> None:
    """In the full campaign, SIGTERM (e.g. from ``timeout``) ends the run like Ctrl-C: the
    figures gathered so far are still printed and written to FUZZ_STATS_FILE."""
    if os.environ.get("FUZZ_EXAMPLES"):
        def interrupt(signum: int, frame: object) -> None:
            raise KeyboardInterrupt(f"signal {signum}")

        signal.signal(signal.SIGTERM, interrupt)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("FUZZ_EXAMPLES"):
        return
    skip = pytest.mark.skip(reason="slow campaign test: set FUZZ_EXAMPLES (make fuzz) to run it")
    here = os.path.dirname(__file__)
    for item in items:
        if "slow" in item.keywords and str(item.fspath).startswith(here):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    stats = fuzzlib.STATS
    if not stats.renders:
        return
    terminalreporter.write_sep("-", "reliability campaign figures")
    for line in stats.lines():
        terminalreporter.write_line(line)
    out = os.environ.get("FUZZ_STATS_FILE")
    if out:
        stats.dump(out)
