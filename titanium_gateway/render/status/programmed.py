"""Programmed: the one decision of the Programmed condition of Gateways and their listeners.

Programmed is True only when every ready data-plane pod reports the config hash the render
wrote (DEVELOPERS.md, "Honest status"). It is decided here, from:

* :func:`delivery` - what the data plane runs of this config: loaded (the confirmed hash is the
  config hash, or the offline render assumes it), not deliverable (NoResources), or Pending
  with the prober's message;
* :func:`condition` - a Gateway's or listener's Programmed: ``Invalid`` when it is not valid
  (a Gateway not accepted, a listener not valid), ``AddressNotUsable`` for a Gateway with a
  requested address its data plane cannot use, ``AddressNotAssigned`` for one whose requested
  address its data plane's Service does not have (yet), else the delivery. (A ListenerSet's
  is the same, render/listenerset.py, except that a ListenerSet not accepted and a conflicted
  entry give the Gateway API's reason of why.)

Each data plane (render/planes.py) has its own delivery: its config hash, confirmed by its own
pods; a Gateway's Programmed, and its ListenerSets', follows the data plane that serves it
(:func:`no_plane` for a Gateway the controller may not create one for).

:func:`status` builds a Gateway's or ListenerSet's whole status from its typed outcome
(:class:`~titanium_gateway.render.result.GatewayOutcome`, recorded by its translator) and its data plane's delivery; the render calls
it through the status collector once the config hash is known. When only the prober's answer
changed (a new confirmed hash, a new probe message), the controller calls :func:`reprogram`:
the last result's Gateway and ListenerSet statuses built again from its outcomes with the new
deliveries, not a second render and no patching of the status dicts; the same functions
decide, so the result is what a new render of unchanged objects gives (only the transition
times may differ: a new render stamps against the objects' written status, this against the
last result's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from titanium_gateway.render.result import GatewayOutcome, ListenerOutcome, ObjectStatus, RenderResult
from titanium_gateway.render.status.conditions import ConditionList

PROGRAMMED = "Programmed"
#: the reason of the Programmed condition of what is not valid (nothing the data plane runs)
INVALID = "Invalid"
_MESSAGES = {
    "gateway": ("the Gateway is not accepted", "the data plane has loaded the configuration"),
    "listener": ("the listener is not valid", "the data plane serves this listener"),
}


@dataclasses.dataclass(frozen=True)
class Delivery:
    """What the data plane runs of a config: ``programmed``, else why not (reason, message)."""

    programmed: bool
    reason: str
    message: str


def delivery(config_hash: str, delivery_error: str, *, assume_programmed: bool, confirmed_hash: str | None,
             probe_message: str) -> Delivery:
    if delivery_error:
        return Delivery(False, "NoResources", delivery_error)
    if assume_programmed or confirmed_hash == config_hash:
        return Delivery(True, PROGRAMMED, "")
    return Delivery(False, "Pending", probe_message or f"waiting for the data plane to load config {config_hash[:12]}")


def no_plane(why: str) -> Delivery:
    """The delivery of a Gateway without a data plane (``why``: why it has none)."""
    return Delivery(False, "NoResources", why)


def condition(what: str, valid: bool, state: Delivery, *, address_problem: str = "",
              address_reason: str = "AddressNotAssigned") -> tuple[bool, str, str]:
    """Programmed of a ``"gateway"`` or ``"listener"``: (status, reason, message);
    ``address_problem``: why the Gateway's requested address is not its address, with
    ``address_reason`` (AddressNotAssigned or AddressNotUsable)."""
    invalid, served = _MESSAGES[what]
    if not valid:
        return False, INVALID, invalid
    if address_problem and state.reason != "NoResources":
        return False, address_reason, address_problem
    if state.programmed:
        return True, PROGRAMMED, served
    return False, state.reason, state.message


def listener_status(li: ListenerOutcome, state: Delivery, now: str, generation: int,
                    previous: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """A listener's status entry (``state``: its data plane's delivery; ``previous``: the
    conditions to keep transition times from, else the outcome's)."""
    lc = ConditionList(None, previous=li.previous if previous is None else previous, now=now,
                       observed_generation=generation)
    if li.conflicted[0] and li.set_entry:
        lc.set("Accepted", False, li.conflicted[1], li.conflicted[2])
        lc.set("Programmed", False, li.conflicted[1], li.conflicted[2])
    else:
        lc.set("Accepted", *li.accepted)
        lc.set("Programmed", *condition("listener", li.valid, state))
    lc.set("ResolvedRefs", *li.resolved)
    lc.set("Conflicted", *li.conflicted)
    return {"name": li.name, "supportedKinds": list(li.supported_kinds), "attachedRoutes": li.attached,
            "conditions": lc.as_list()}


def status(outcome: GatewayOutcome, state: Delivery, now: str,
           previous: Mapping[str, Any] | None = None) -> ObjectStatus:
    """The whole status of a Gateway or ListenerSet from its outcome and its data plane's
    delivery (:func:`no_plane` for one without a data plane). ``previous``: the status to keep
    transition times from (the last result's, for :func:`reprogram`), else the object's."""
    o = outcome
    old_listeners: dict[str, Any] = {}
    previous_conditions: Iterable[Mapping[str, Any]] = o.previous
    if previous is not None:
        previous_conditions = previous.get("conditions") or ()
        old_listeners = {li.get("name"): li.get("conditions") or () for li in previous.get("listeners") or ()}
    conds = ConditionList(None, previous=previous_conditions, now=now, observed_generation=o.generation)
    conds.set("Accepted", *o.acceptance)
    if o.valid or o.unprogrammed is None:
        conds.set("Programmed", *condition("gateway", o.valid, state, address_problem=o.address_problem,
                                            address_reason=o.address_reason))
    else:
        conds.set("Programmed", *o.unprogrammed)
    body: dict[str, Any] = {}
    if o.addresses is not None:
        body["addresses"] = [dict(a) for a in o.addresses]
    body["conditions"] = conds.as_list()
    if o.listeners is not None:
        body["listeners"] = [listener_status(li, state, now, o.generation,
                                             old_listeners.get(li.name, ()) if previous is not None else None)
                             for li in o.listeners]
    if o.attached_listener_sets is not None:
        body["attachedListenerSets"] = o.attached_listener_sets
    return ObjectStatus(o.api_version, o.kind, o.namespace, o.name, body)


def plane_delivery(outcome: GatewayOutcome, deliveries: Mapping[str, Delivery]) -> Delivery:
    """The delivery of the data plane that serves a Gateway (and its ListenerSets)."""
    return deliveries[outcome.plane] if outcome.plane is not None else no_plane(outcome.no_plane)


def reprogram(result: RenderResult, *, assume_programmed: bool, confirmed_hash: str | None, probe_message: str,
              now: str, plane_probes: Mapping[str, tuple[str | None, str]] | None = None) -> RenderResult:
    """``result`` with the statuses of its Gateways and ListenerSets built again from their
    outcomes (``result.gateway_outcomes``) for the confirmed hash and probe message of each data
    plane (``confirmed_hash`` and ``probe_message``: the shared one's; ``plane_probes``: a
    Gateway's own plane key -> both), every other status the same object. A condition keeps its
    lastTransitionTime when its status and reason do not change, else takes ``now``. A Gateway
    (or ListenerSet) no data plane serves keeps its own."""
    probes = plane_probes or {}
    deliveries: dict[str, Delivery] = {}
    for plane in result.data_planes():
        confirmed, message = (confirmed_hash, probe_message) if not plane.key else probes.get(plane.key, (None, ""))
        deliveries[plane.key] = delivery(plane.config_hash, plane.delivery_error, assume_programmed=assume_programmed,
                                         confirmed_hash=confirmed, probe_message=message)
    again: dict[tuple[str, str, str], GatewayOutcome] = {
        o.key: o for o in result.gateway_outcomes if o.plane is not None and o.plane in deliveries}
    if not again:
        return result
    statuses = tuple(status(again[st.key], deliveries[again[st.key].plane], now, st.status)  # type: ignore[index]
                     if st.key in again else st for st in result.statuses)
    return dataclasses.replace(result, statuses=statuses)
