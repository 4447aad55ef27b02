"""ListenerSet (Gateway API v1): more listeners for a Gateway of ours, and their status.

A ListenerSet whose ``spec.parentRef`` names a Gateway of ours is ours (one naming anything else
is not: ``NotOurs``). In precedence order - the Gateway's own listeners first, then its
ListenerSets by creation time, then ``namespace/name`` - each is:

* ``Accepted: False``, reason ``NotAllowed``, when the Gateway's ``spec.allowedListeners``
  (``namespaces.from``: ``None`` by default, ``Same``, ``Selector``, ``All``) does not admit its
  namespace; ``ParentNotAccepted`` when the Gateway is not accepted. It then has no listeners;
* otherwise its listeners are translated like the Gateway's (``gateway.set_listener``: protocol,
  port map, hostname, allowed routes, certificates referenced from the ListenerSet's namespace,
  with ReferenceGrants from ListenerSets) and merged into the Gateway's listeners, on the
  Gateway's data plane (its own in ``per-gateway`` mode: its ports opened there, its certificates
  in that data plane's TLS Secret, its routes in that data plane's document); a listener that
  conflicts with one before it (the Gateway's, or an older ListenerSet's: the same
  port and hostname, another protocol on the port) is ``Conflicted`` and ``Accepted: False``.
  The ListenerSet is ``Accepted`` when at least one of its listeners is valid (programmed), with
  reason ``ListenersNotValid`` when some are not; ``Accepted: False, ListenersNotValid`` when
  none is.

Routes attach to its listeners with a ``parentRef`` of kind ListenerSet (``sectionName`` = one of
its listeners), never through the Gateway (a Gateway parentRef selects the Gateway's own
listeners). An accepted ListenerSet counts in the Gateway's ``status.attachedListenerSets``,
written where ListenerSets are served. Its outcome (:func:`outcome`) is recorded once its
routes are counted and the status collector makes the status once Programmed is known
(render/status/), like the Gateway's; a conflicted or not accepted ListenerSet's ``Programmed`` has the
reason of why it is not (the Gateway API's reasons), the others the delivery of the Gateway's
data plane (``no_plane`` of render/status/programmed.py when the Gateway has none).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.gateway import (
    GatewayInfo,
    ListenerInfo,
    listener_outcome,
    listener_set_ports,
    selector_matches,
    set_listener,
)
from titanium_gateway.render.precedence import creation_timestamp
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.result import GatewayOutcome, NotOurs
from titanium_gateway.render.status.conditions import ConditionList, existing_conditions

API_VERSION = kinds.GATEWAY_API_VERSION
KIND = kinds.LISTENER_SET.kind
_GATEWAY = kinds.GATEWAY.kind
Outcome = tuple[bool, str, str]


@dataclass
class ListenerSetInfo:
    """One ListenerSet of ours: what a route attaching to it reads (``namespace``, ``name``,
    ``accepted``, ``listeners``, ``kind``: like a :class:`GatewayInfo`) and its status."""

    namespace: str
    name: str
    obj: Mapping[str, Any]
    gateway: GatewayInfo
    conditions: ConditionList
    acceptance: Outcome = (True, "Accepted", "the ListenerSet is accepted")
    listeners: list[ListenerInfo] = field(default_factory=list)
    kind: ClassVar[str] = KIND

    @property
    def accepted(self) -> bool:
        return self.acceptance[0]


def _sort_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = f.metadata(obj)
    return creation_timestamp(obj), f.text(meta.get("namespace")) or "default", f.text(meta.get("name"))


def _parent(obj: Mapping[str, Any], ns: str) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name) of ``spec.parentRef``, defaults filled."""
    ref = f.mapping(f.mapping(obj.get("spec")).get("parentRef"))
    group = ref.get("group")
    return (group if isinstance(group, str) else GATEWAY_GROUP, f.string(ref.get("kind")) or _GATEWAY,
            f.text(ref.get("namespace")) or ns, f.text(ref.get("name")))


def translate(ctx: RenderContext, gateways: dict[tuple[str, str], GatewayInfo],
              served: bool) -> dict[tuple[str, str], ListenerSetInfo]:
    """Every ListenerSet, in precedence order; returns ours by (namespace, name) (also in
    ``ctx.listener_sets``). ``served``: ListenerSets are served by the cluster (the Gateways'
    ``status.attachedListenerSets`` is written)."""
    foreign = ctx.foreign_gateways()
    objs = sorted((o for o in ctx.snapshot.listener_sets.values() if f.is_mapping(o)), key=_sort_key)
    by_gateway: dict[tuple[str, str], list[tuple[Mapping[str, Any], str, str, str]]] = {}
    for obj in objs:
        created, ns, name = _sort_key(obj)
        if not name:
            continue
        group, kind, gw_ns, gw_name = _parent(obj, ns)
        if group != GATEWAY_GROUP or kind != _GATEWAY:
            ctx.not_ours(NotOurs(KIND, ns, name, f"its parent {kind} {gw_name} is not a Gateway"))
            continue
        if (gw_ns, gw_name) not in gateways:
            why = foreign.get((gw_ns, gw_name))
            ctx.not_ours(NotOurs(KIND, ns, name, f"its parent Gateway {gw_ns}/{gw_name} is "
                                                 + (f"not ours ({why})" if why else "not in the input")))
            continue
        by_gateway.setdefault((gw_ns, gw_name), []).append((obj, created, ns, name))
    out: dict[tuple[str, str], ListenerSetInfo] = {}
    for key in sorted(gateways, key=lambda k: _sort_key(gateways[k].obj)):
        gw = gateways[key]
        if served:
            gw.attached_listener_sets = 0
        sets = by_gateway.get(key)
        if not sets:
            continue
        ports = listener_set_ports(ctx, gw)
        for obj, created, ns, name in sets:
            info = _listener_set(ctx, obj, (created, ns, name), gw, ports)
            out[(ns, name)] = info
            if info.accepted and gw.attached_listener_sets is not None:
                gw.attached_listener_sets += 1
    ctx.listener_sets = out
    return out


def _allowed(ctx: RenderContext, gw: GatewayInfo, namespace: str) -> str:
    """Why the Gateway does not admit ListenerSets of ``namespace`` ("" when it does)."""
    from_, selector = gw.allowed_listeners
    if from_ == "All":
        return ""
    if from_ == "Same":
        return "" if namespace == gw.namespace else (
            f"Gateway {gw.namespace}/{gw.name} allows ListenerSets of its own namespace only (spec.allowedListeners)")
    if from_ == "Selector":
        return "" if selector_matches(selector, ctx.namespace_labels(namespace)) else (
            f"Gateway {gw.namespace}/{gw.name} allows ListenerSets of the namespaces its selector matches only, "
            f"not {namespace} (spec.allowedListeners)")
    return f"Gateway {gw.namespace}/{gw.name} allows no ListenerSets (spec.allowedListeners)"


def _listener_set(ctx: RenderContext, obj: Mapping[str, Any], owner: tuple[str, str, str], gw: GatewayInfo,
                  ports: Any) -> ListenerSetInfo:
    _, ns, name = owner
    status = f.mapping(obj.get("status"))
    info = ListenerSetInfo(ns, name, obj, gw, ctx.conditions(obj, existing_conditions(status)))
    why = _allowed(ctx, gw, ns)
    if why:
        info.acceptance = (False, "NotAllowed", why)
        return info
    if not gw.acceptance[0]:
        info.acceptance = (False, "ParentNotAccepted", f"Gateway {gw.namespace}/{gw.name} is not accepted")
        return info
    old = {f.text(ls.get("name")): ls for ls in f.items(status.get("listeners")) if f.is_mapping(ls)}
    seen: set[str] = set()
    for index, raw in enumerate(f.items(f.mapping(obj.get("spec")).get("listeners"))):
        if not f.is_mapping(raw):
            continue
        lname = f.text(raw.get("name")) or f"listener-{index}"
        if lname in seen:
            continue
        seen.add(lname)
        li = set_listener(ctx, raw, index, lname, owner, gw, ports)
        li.index = len(gw.listeners)  # (unique among the Gateway's listeners)
        li.conditions = ctx.conditions(obj, existing_conditions(old.get(lname)))
        gw.listeners.append(li)
        info.listeners.append(li)
    valid = sum(1 for li in info.listeners if li.valid)  # (as the Gateway's: whether or not it has a data plane)
    if info.listeners and valid == len(info.listeners):
        info.acceptance = (True, "Accepted", "the ListenerSet is accepted")
    elif valid:
        info.acceptance = (True, "ListenersNotValid", f"{len(info.listeners) - valid} of {len(info.listeners)} "
                                                      "listeners are not valid")
    else:
        info.acceptance = (False, "ListenersNotValid", "no listener is valid")
    return info


def outcome(info: ListenerSetInfo) -> GatewayOutcome:
    """What one ListenerSet's status says but Programmed, which follows its Gateway's data plane
    (the status collector builds the status)."""
    conds = info.conditions
    listeners = (None if info.acceptance[1] in ("NotAllowed", "ParentNotAccepted")
                 else tuple(listener_outcome(li) for li in info.listeners))
    gw = info.gateway
    return GatewayOutcome(API_VERSION, KIND, info.namespace, info.name, conds.observed_generation, conds.previous,
                          info.acceptance, info.accepted, gw.plane, gw.no_plane, listeners=listeners,
                          unprogrammed=(False, info.acceptance[1], info.acceptance[2]))


def parents(listener_sets: Mapping[tuple[str, str], ListenerSetInfo]) -> dict[tuple[str, str], tuple[str, str]]:
    """(namespace, name) of each ListenerSet of ours -> its Gateway's."""
    return {key: (ls.gateway.namespace, ls.gateway.name) for key, ls in listener_sets.items()}
