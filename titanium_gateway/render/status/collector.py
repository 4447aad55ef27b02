"""The one place a render's statuses are collected.

Translators record what they decided: an object's status (:meth:`StatusCollector.record`, the
last one of a key wins), our entries to remove from an object no longer ours
(:class:`~titanium_gateway.render.result.Released`, recorded the same way), and, for the objects
whose status follows a data plane (Gateways, ListenerSets), their typed outcome
(:meth:`StatusCollector.outcome`). Once every data plane's delivery is known the render calls
:meth:`StatusCollector.finish`, which builds those statuses with :mod:`.programmed`; the result
then takes :meth:`statuses`, :meth:`released` and :meth:`outcomes` (for ``reprogram``).
``RenderContext.add_status`` records through here (and into a memo recording, render/memo.py).
The other kinds' translators record a typed outcome too, built into its status at once by this
package (``routes.py``: every route kind's parent entries; ``gatewayclass.py``, ``policies.py``,
``ingress.py``) and recorded here.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any

from titanium_gateway.render.result import GatewayOutcome, ObjectStatus, Released
from titanium_gateway.render.status import programmed


def _key(st: ObjectStatus) -> tuple[str, str, str]:
    return st.key


class StatusCollector:
    __slots__ = ("_statuses", "_outcomes")

    def __init__(self) -> None:
        self._statuses: dict[tuple[str, str, str], ObjectStatus] = {}
        self._outcomes: dict[tuple[str, str, str], GatewayOutcome] = {}

    def record(self, status: ObjectStatus) -> None:
        self._statuses[status.key] = status

    def record_items(self, items: Iterable[tuple[tuple[str, str, str], ObjectStatus]]) -> None:
        """:meth:`record` of each ``(status.key, status)``, in order."""
        self._statuses.update(items)

    def get(self, key: tuple[str, str, str]) -> ObjectStatus | None:
        """The status recorded for (kind, namespace, name), if any."""
        return self._statuses.get(key)

    def outcome(self, outcome: GatewayOutcome) -> None:
        """A Gateway's or ListenerSet's outcome: its status is built by :meth:`finish`."""
        self._outcomes[outcome.key] = outcome

    def finish(self, deliveries: Mapping[str, programmed.Delivery], now: str) -> None:
        """The statuses of the outcomes, each with its data plane's delivery."""
        for key in sorted(self._outcomes):
            o = self._outcomes[key]
            self.record(programmed.status(o, programmed.plane_delivery(o, deliveries), now))

    def statuses(self, kinds: Container[str] | None = None,
                 order: Callable[[Mapping[tuple[str, str, str], ObjectStatus]], Sequence[Any]] = sorted
                 ) -> tuple[ObjectStatus, ...]:
        """The statuses of the objects we own (a :class:`Released` is not one), by key; only
        those of ``kinds`` if given. ``order``: how the keys are sorted (``sorted``, or the same
        from the last render's keys: render/memo.py)."""
        statuses = self._statuses
        if kinds is not None:
            return tuple(statuses[key] for key in sorted(key for key in statuses if key[0] in kinds)
                         if type(statuses[key]) is not Released)
        return tuple(st for st in map(statuses.__getitem__, order(statuses)) if type(st) is not Released)

    def released(self) -> tuple[Released, ...]:
        return tuple(sorted((st for st in self._statuses.values() if type(st) is Released), key=_key))  # type: ignore[misc]

    def outcomes(self) -> tuple[GatewayOutcome, ...]:
        return tuple(self._outcomes[k] for k in sorted(self._outcomes))


__all__ = ["StatusCollector"]
