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

The render calls both once the config hash is known (``gateway.status``). When only the
prober's answer changed (a new confirmed hash, a new probe message), the controller calls
:func:`reprogram`: the last result with its Programmed conditions decided again, not a second
render; the same functions decide, so the result is what a new render of unchanged objects
gives (only the transition times may differ: a new render stamps against the objects' written
status, this against the last result's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from titanium_gateway.render.conditions import make_condition
from titanium_gateway.render.result import ObjectStatus, RenderResult

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


def reprogram(result: RenderResult, *, assume_programmed: bool, confirmed_hash: str | None, probe_message: str,
              now: str, plane_probes: Mapping[str, tuple[str | None, str]] | None = None) -> RenderResult:
    """``result`` with the Programmed conditions of its Gateways, ListenerSets and their listeners
    that depend on the data plane decided again for the confirmed hash and probe message of each
    data plane (``confirmed_hash`` and ``probe_message``: the shared one's; ``plane_probes``: a
    Gateway's own plane key -> both), everything else the same objects. A condition keeps its
    lastTransitionTime when its status and reason do not change, else takes ``now``. A Gateway
    (or ListenerSet) no data plane serves keeps its own."""
    probes = plane_probes or {}
    served: dict[tuple[str, str, str], tuple[Delivery, str, str]] = {}
    for plane in result.data_planes():
        confirmed, message = (confirmed_hash, probe_message) if not plane.key else probes.get(plane.key, (None, ""))
        state = delivery(plane.config_hash, plane.delivery_error, assume_programmed=assume_programmed,
                         confirmed_hash=confirmed, probe_message=message)
        for ns, name in plane.gateways:
            served[("Gateway", ns, name)] = (state, plane.address_problem, plane.address_reason)
        for ns, name in plane.listener_sets:
            served[("ListenerSet", ns, name)] = (state, "", "")
    statuses = tuple(_gateway(st, *served[(st.kind, st.namespace, st.name)], now)
                     if st.kind in _WITH_LISTENERS and (st.kind, st.namespace, st.name) in served else st
                     for st in result.statuses)
    return dataclasses.replace(result, statuses=statuses)


#: the kinds whose status has Programmed conditions for itself and its listeners
_WITH_LISTENERS = frozenset({"Gateway", "ListenerSet"})
#: the reasons :func:`delivery` and :func:`condition` give from the data plane: a Programmed
#: condition with another reason (Invalid, or a ListenerSet's reason for not being accepted) does
#: not depend on it
_DELIVERY_REASONS = frozenset({PROGRAMMED, "Pending", "NoResources", "AddressNotAssigned", "AddressNotUsable"})


def _gateway(st: ObjectStatus, state: Delivery, address_problem: str, address_reason: str, now: str) -> ObjectStatus:
    body = {**st.status, "conditions": _again(st.status.get("conditions"), "gateway", state, now, address_problem,
                                              address_reason)}
    if "listeners" in body:
        body["listeners"] = [{**li, "conditions": _again(li.get("conditions"), "listener", state, now)}
                             for li in body.get("listeners") or ()]
    return ObjectStatus(st.api_version, st.kind, st.namespace, st.name, body)


def _again(conditions: Any, what: str, state: Delivery, now: str, address_problem: str = "",
           address_reason: str = "") -> list[Mapping[str, Any]]:
    """The conditions with Programmed decided again where the data plane decided it."""
    out = []
    for cond in conditions or ():
        if cond.get("type") == PROGRAMMED and cond.get("reason") in _DELIVERY_REASONS:
            status, reason, message = condition(what, True, state, address_problem=address_problem,
                                                address_reason=address_reason or "AddressNotAssigned")
            cond = make_condition(PROGRAMMED, status, reason, message,
                                  observed_generation=cond.get("observedGeneration", 1), now=now, previous=[cond])
        out.append(cond)
    return out
