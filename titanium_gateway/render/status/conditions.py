"""Status conditions: one builder so every kind stamps them the same way.

A condition carries ``observedGeneration`` = the object's current ``metadata.generation``
(1 when missing or malformed). ``lastTransitionTime`` is copied from the object's existing
condition of the same type when its status AND reason are unchanged, otherwise it is
``snapshot.now``. The caller passes the existing condition list (the one at the same place in
the existing status: a Gateway's ``status.conditions``, a listener's, a route parent's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Condition = dict[str, Any]


def generation(obj: Mapping[str, Any]) -> int:
    """``metadata.generation`` as a positive int; 1 when missing or malformed."""
    meta = obj.get("metadata")
    value = meta.get("generation") if (type(meta) is dict or isinstance(meta, Mapping)) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return 1
    return value


def existing_conditions(container: Any) -> list[Mapping[str, Any]]:
    """The ``conditions`` list of a status-like mapping, tolerating garbage."""
    if not (type(container) is dict or isinstance(container, Mapping)):
        return []
    conds = container.get("conditions")
    if not isinstance(conds, list):
        return []
    return [c for c in conds if (type(c) is dict or isinstance(c, Mapping))]


def make_condition(
    ctype: str,
    status: bool,
    reason: str,
    message: str,
    *,
    observed_generation: int,
    now: str,
    previous: Iterable[Mapping[str, Any]] = (),
) -> Condition:
    """A metav1.Condition dict with a stable lastTransitionTime (see module doc)."""
    return _condition(ctype, status, reason, message, observed_generation, now, previous)[0]


def _condition(ctype: str, status: bool, reason: str, message: str, observed_generation: int, now: str,
               previous: Iterable[Mapping[str, Any]]) -> tuple[Condition, bool]:
    """The condition, and whether it stamped ``now`` (a transition)."""
    status_text = "True" if status else "False"
    ltt = now
    stamped = True
    for prev in previous:
        if prev.get("type") == ctype:
            old = prev.get("lastTransitionTime")
            if prev.get("status") == status_text and prev.get("reason") == reason and isinstance(old, str) and old:
                ltt = old
                stamped = False
            break
    return {
        "type": ctype,
        "status": status_text,
        "reason": reason,
        "message": message,
        "observedGeneration": observed_generation,
        "lastTransitionTime": ltt,
    }, stamped


class ConditionList:
    """Accumulates conditions for one status block; later ``set`` of a type replaces it.

    >>> cl = ConditionList(obj, previous=existing_conditions(obj.get("status")), now=now)
    >>> cl.set("Accepted", True, "Accepted", "")
    >>> cl.as_list()
    """

    def __init__(self, obj: Mapping[str, Any] | None, *, previous: Iterable[Mapping[str, Any]], now: str,
                 observed_generation: int | None = None) -> None:
        """``obj``: the object (its generation), or None with ``observed_generation``."""
        self._gen = observed_generation if obj is None and observed_generation is not None else generation(obj or {})
        self._previous = list(previous)
        self._now = now
        self._items: dict[str, Condition] = {}
        #: a condition set here took ``now`` as its lastTransitionTime (a transition)
        self.stamped = False

    @property
    def previous(self) -> tuple[Mapping[str, Any], ...]:
        """The existing conditions the transition times are kept from."""
        return tuple(self._previous)

    @property
    def observed_generation(self) -> int:
        return self._gen

    def set(self, ctype: str, status: bool, reason: str, message: str = "") -> None:
        cond, stamped = _condition(ctype, status, reason, message, self._gen, self._now, self._previous)
        self._items[ctype] = cond
        self.stamped = self.stamped or stamped

    def get(self, ctype: str) -> Condition | None:
        return self._items.get(ctype)

    def as_list(self) -> list[Condition]:
        """Conditions in insertion order (callers insert in a fixed order)."""
        return list(self._items.values())


MAX_MESSAGE = 1024


def bound_message(message: str) -> str:
    """Condition messages stay far below metav1.Condition's 32768 characters."""
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + "..."
