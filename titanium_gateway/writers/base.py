"""What every writer shares: the leader guard, errors and metrics."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from titanium_gateway.metrics import REGISTRY, Counter, Registry


class NotLeader(Exception):
    """This replica does not hold the Lease: the write was not made."""


class WriteError(Exception):
    """A write that cannot succeed without an operator (e.g. a pre-created object is missing)."""


class LeaderGuard:
    """Checked immediately before each write: ``check()`` raises NotLeader when not leading."""

    def __init__(self, is_leader: Callable[[], bool] | None = None) -> None:
        self._is_leader: Callable[[], bool] = is_leader or (lambda: True)

    def is_leader(self) -> bool:
        return bool(self._is_leader())

    def check(self, what: str) -> None:
        if not self._is_leader():
            raise NotLeader(f"not the leader: skipped {what}")


def config_writes(registry: Registry | None = None) -> Counter:
    return (registry or REGISTRY).counter(
        "titanium_config_writes_total", "Writes of the data-plane ConfigMaps and TLS Secret.", ["object"])


def microtime(when: datetime) -> str:
    """RFC 3339 with exactly 6 fractional digits and ``Z`` (Kubernetes MicroTime)."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")
