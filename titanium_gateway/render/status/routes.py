"""The status of a route: one parent entry per parentRef to a parent of ours.

Every route kind has this shape (HTTPRoute and GRPCRoute, render/httproute/status.py; TLSRoute,
TCPRoute and UDPRoute, render/otherroutes.py). Its translator decides each entry's conditions and
records them as a typed :class:`RouteStatusOutcome`; :class:`RouteParents` builds the status
from it: ``parentRef`` (the echo the translator made), ``controllerName``, the conditions in the
order given, each keeping its transition time from the entry's existing conditions
(:mod:`.conditions`).

The conditions of an entry are made once per render for each (generation, outcomes, kept
transition times): thousands of routes of one Gateway have the same ones, so they are shared
read-only between the routes' statuses (a change copies them: ``with_accepted_note``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.result import ObjectStatus
from titanium_gateway.render.status.conditions import ConditionList, bound_message

#: a condition as a translator decides it: (type, status, reason, message)
ConditionOutcome = tuple[str, bool, str, str]


@dataclass(frozen=True, slots=True)
class RouteParentOutcome:
    """One parent entry of a route's status: its parentRef as echoed (shared read-only), its
    conditions' outcomes in order, and the entry's existing conditions (for transition times)."""

    ref: Mapping[str, Any]
    conditions: tuple[ConditionOutcome, ...]
    previous: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True, slots=True)
class RouteStatusOutcome:
    """What a route's translation decided for its status: an entry per parent of ours."""

    kind: str
    namespace: str
    name: str
    generation: int
    parents: tuple[RouteParentOutcome, ...]
    api_version: str = kinds.GATEWAY_API_VERSION


def _kept_time(previous: Sequence[Mapping[str, Any]], outcome: ConditionOutcome) -> str | None:
    """The lastTransitionTime a condition keeps from ``previous`` (None: it takes ``now``), as
    :class:`~titanium_gateway.render.status.conditions.ConditionList` decides it."""
    ctype = outcome[0]
    for prev in previous:
        if prev.get("type") == ctype:
            old = prev.get("lastTransitionTime")
            if (prev.get("status") == ("True" if outcome[1] else "False") and prev.get("reason") == outcome[2]
                    and isinstance(old, str) and old):
                return old
            return None
    return None


class RouteParents:
    """The builder of one render's route statuses (``now``: the render's time)."""

    __slots__ = ("controller_name", "now", "_conditions")

    def __init__(self, controller_name: str, now: str) -> None:
        self.controller_name = controller_name
        self.now = now
        self._conditions: dict[tuple[Any, ...], tuple[ConditionList, list[Any]]] = {}

    def status(self, outcome: RouteStatusOutcome, made: list[Any] | None = None) -> ObjectStatus:
        """The status of ``outcome``; ``made``: where each entry's :class:`ConditionList` is
        noted (a memo recording's, render/memo.py: whether one stamped ``now``)."""
        return ObjectStatus.of(outcome.api_version, outcome.kind, outcome.namespace, outcome.name,
                               {"parents": self.entries(outcome.generation, outcome.parents, "parentRef", made)})

    def entries(self, gen: int, parents: Sequence[RouteParentOutcome], ref_key: str,
                made: list[Any] | None = None) -> list[dict[str, Any]]:
        """The entries of ``parents``, their reference under ``ref_key`` (a route's
        ``parentRef``, a policy's ``ancestorRef``: render/status/policies.py)."""
        memo = self._conditions
        controller = self.controller_name
        entries: list[dict[str, Any]] = []
        for p in parents:
            previous, conditions = p.previous, p.conditions
            key = (gen, conditions, tuple([_kept_time(previous, c) for c in conditions]))
            hit = memo.get(key)
            if hit is None:
                conds = ConditionList(None, previous=previous, now=self.now, observed_generation=gen)
                for c in conditions:
                    conds.set(*c)
                hit = memo[key] = (conds, conds.as_list())
            if made is not None:
                made.append(hit[0])  # the same stamping as when it was made
            entries.append({ref_key: p.ref, "controllerName": controller, "conditions": hit[1]})
        return entries


def with_accepted_note(status: ObjectStatus, note: str) -> ObjectStatus:
    """``status`` (a route's) with ``; <note>`` added to the message of every parent's
    ``Accepted: True`` condition (a copy: the conditions of statuses are shared read-only)."""
    parents = []
    for entry in f.items(status.status.get("parents")):
        conditions = []
        for cond in f.items(entry.get("conditions")):
            if cond.get("type") == "Accepted" and cond.get("status") == "True":
                cond = {**cond, "message": bound_message(f"{cond.get('message')}; {note}")}
            conditions.append(cond)
        parents.append({**entry, "conditions": conditions})
    return ObjectStatus.of(status.api_version, status.kind, status.namespace, status.name,
                           {**status.status, "parents": parents})


__all__ = ["ConditionOutcome", "RouteParentOutcome", "RouteParents", "RouteStatusOutcome", "with_accepted_note"]
