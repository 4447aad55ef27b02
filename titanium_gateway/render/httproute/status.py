"""HTTPRoute status: one entry per parentRef to our Gateways, in spec order.

Accepted (the parent's attachment, or UnsupportedValue listing the rule problems) and
ResolvedRefs (the first backend problem's reason); every problem a 500 body names is listed.
The parentRef is echoed with ``group``/``kind`` filled (as the conformance suite compares them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.conditions import ConditionList, existing_conditions, generation
from titanium_gateway.render.fields import listed, summarize
from titanium_gateway.render.httproute.attach import Identity, Parent, parent_ref_echo, ref_identity
from titanium_gateway.render.result import ObjectStatus

API_VERSION = "gateway.networking.k8s.io/v1"
_ALL_RESOLVED = (True, "ResolvedRefs", "all references are resolved")
Outcome = tuple[bool, str, str]


def _kept_time(previous: list[Mapping[str, Any]], ctype: str, outcome: Outcome) -> str | None:
    """The lastTransitionTime a condition keeps from ``previous`` (None: it takes ``now``), as
    :class:`~titanium_gateway.render.conditions.ConditionList` decides it."""
    status = "True" if outcome[0] else "False"
    for prev in previous:
        if prev.get("type") == ctype:
            old = prev.get("lastTransitionTime")
            if prev.get("status") == status and prev.get("reason") == outcome[1] and isinstance(old, str) and old:
                return old
            return None
    return None


class Statuses:
    """The statuses of one render. The conditions of a parent are made once for each
    (generation, Accepted, ResolvedRefs, kept transition times): thousands of routes of one
    Gateway have the same ones; like the parentRef echoes, they are shared read-only between
    the routes' statuses."""

    __slots__ = ("ctx", "_conditions", "_echoes")

    def __init__(self, ctx: RenderContext) -> None:
        self.ctx = ctx
        self._conditions: dict[tuple[Any, ...], tuple[ConditionList, list[Any]]] = {}
        self._echoes: dict[tuple[Any, ...], dict[str, Any]] = {}

    def echo(self, ref: Mapping[str, Any], identity: Identity) -> dict[str, Any]:
        port = ref.get("port")
        key = (identity, bool(f.text(ref.get("namespace"))), type(port))
        try:
            hit = self._echoes.get(key)
        except TypeError:
            return parent_ref_echo(ref)
        if hit is None:
            hit = self._echoes[key] = parent_ref_echo(ref)
        return hit

    def route(self, route: Mapping[str, Any], ns: str, name: str, parents: list[Parent],
              old_parents: list[Mapping[str, Any]], unsupported: list[str], refs: list[str], ref_reason: str,
              n_firsts: int, n_ref_firsts: int) -> None:
        """``unsupported``/``refs``: problems, the ones 500 bodies start with first (always listed)."""
        ctx = self.ctx
        entries: list[dict[str, Any]] = []
        gen = generation(route)
        for p in parents:
            previous: list[Mapping[str, Any]] = []
            for old in old_parents:
                old_ref = old.get("parentRef")
                # (an equal parentRef has an equal identity: the usual case, our own echo of it)
                if old_ref == p.ref or (f.is_mapping(old_ref) and ref_identity(old_ref, ns) == p.identity):
                    previous = existing_conditions(old)
                    break
            if not p.accepted:
                accepted = (False, p.reason, p.message)
            elif unsupported:
                accepted = (False, "UnsupportedValue", summarize(unsupported, listed(n_firsts)))
            else:
                accepted = (True, "Accepted", p.message)
            resolved = (False, ref_reason, summarize(refs, listed(n_ref_firsts))) if refs else _ALL_RESOLVED
            key = (gen, accepted, resolved, _kept_time(previous, "Accepted", accepted),
                   _kept_time(previous, "ResolvedRefs", resolved))
            hit = self._conditions.get(key)
            if hit is None:
                conds = ctx.conditions(route, previous)
                conds.set("Accepted", *accepted)
                conds.set("ResolvedRefs", *resolved)
                hit = self._conditions[key] = (conds, conds.as_list())
            elif ctx.recording is not None:
                ctx.recording.conditions.append(hit[0])  # the same stamping as when it was made
            entries.append({
                "parentRef": self.echo(p.ref, p.identity),
                "controllerName": ctx.options.controller_name,
                "conditions": hit[1],
            })
        ctx.add_status(ObjectStatus.of(API_VERSION, "HTTPRoute", ns, name, {"parents": entries}))
