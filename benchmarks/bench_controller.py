"""Controller figures (start-up, churn, status) against the in-process API server of the tests."""

from __future__ import annotations

import importlib

from benchmarks.common import Row, not_measured


def _missing() -> str:
    """Why the controller figures cannot run yet ("" when they can)."""
    for mod in ("tests.support.apiserver", "titanium_gateway.controller.main"):
        try:
            importlib.import_module(mod)
        except Exception as exc:  # noqa: BLE001
            return f"{mod} not available ({type(exc).__name__}: {exc})"
    return ""


def figure_startup(n: int) -> list[Row]:
    why = _missing()
    return [not_measured("startup", f"N={n}", why, "< 10 s")]


def figure_churn(n: int, rate: float, duration: float, quiet_seconds: float) -> list[Row]:
    why = _missing()
    return [not_measured("churn", f"N={n}, {rate:.0f}/s for {duration:.0f} s", why, "<= 2 writes/s, p99 < 1.5 s")]


def figure_status(n: int) -> list[Row]:
    why = _missing()
    return [not_measured("status", f"{n} HTTPRoutes", why, "< 2 s, 1 write per object")]
