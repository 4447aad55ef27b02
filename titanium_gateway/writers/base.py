"""What every writer shares: the leader guard, errors and metrics."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from titanium_gateway.kube.api import ApiError
from titanium_gateway.metrics import REGISTRY, Counter, Registry

log = logging.getLogger(__name__)


class NotLeader(Exception):
    """This replica does not hold the Lease: the write was not made."""


class WriteError(Exception):
    """A write that cannot succeed without an operator (e.g. a pre-created object is missing)."""


class Refused(WriteError):
    """A write of a Gateway's own data plane that cannot succeed until someone acts (an object of
    that name this controller did not make): said on that Gateway's status, never retried in a
    loop."""


#: Assumed Retry-After (seconds) for a 429 that names none (client-go waits 1 s then too).
DEFAULT_RETRY_AFTER = 1.0


def retry_after_of(exc: BaseException | None) -> float | None:
    """The longest server-requested wait (``retry_after``, seconds) carried by ``exc`` or the
    exceptions it was raised from; a 429 without Retry-After counts as ``DEFAULT_RETRY_AFTER``.
    None when the server asked for no wait."""
    best: float | None = None
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        ra = getattr(exc, "retry_after", None)
        if not isinstance(ra, (int, float)) and getattr(exc, "status", None) == 429:
            ra = DEFAULT_RETRY_AFTER
        if isinstance(ra, (int, float)) and ra > 0 and (best is None or ra > best):
            best = float(ra)
        exc = exc.__cause__ or exc.__context__
    return best


class LeaderGuard:
    """Checked immediately before each write: ``check()`` raises NotLeader when not leading."""

    def __init__(self, is_leader: Callable[[], bool] | None = None) -> None:
        self._is_leader: Callable[[], bool] = is_leader or (lambda: True)

    def is_leader(self) -> bool:
        return bool(self._is_leader())

    def check(self, what: str) -> None:
        if not self._is_leader():
            raise NotLeader(f"not the leader: skipped {what}")


def is_admission_refusal(e: ApiError, policy: str = "") -> bool:
    """Whether ``e`` is a ValidatingAdmissionPolicy's refusal of a write (of ``policy`` when
    named): lasting until someone changes the object or the policy, so told (on the Gateway's
    status and in the log), never retried in a loop."""
    marker = f"ValidatingAdmissionPolicy '{policy}'" if policy else "ValidatingAdmissionPolicy '"
    return e.status in (403, 422) and marker in (e.message or str(e))


def unreadable(e: ApiError, what: str) -> None:
    """A writer reads its object once by name before its first write of a term (after a start
    or a failover), so that content already there is not written again. When that read fails
    for another reason than a missing object (which the writer reports as its own error), the
    write goes ahead as it would without the read."""
    log.debug("cannot read before writing: writing", extra={"object_name": what, "error": str(e)})


def config_writes(registry: Registry | None = None) -> Counter:
    return (registry or REGISTRY).counter(
        "titanium_config_writes_total", "Writes of the data-plane ConfigMaps and TLS Secret.", ["object"])


def microtime(when: datetime) -> str:
    """RFC 3339 with exactly 6 fractional digits and ``Z`` (Kubernetes MicroTime)."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")
