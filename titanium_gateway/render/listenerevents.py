"""Warning Events for invalid listeners of Gateways and ListenerSets.

An operator who watches Events (``kubectl get events -A --field-selector type=Warning``) learns
of a listener that cannot serve without reading each Gateway's status. The Events are made from
the statuses the render already decided (built by the status collector, render/status/),
one per invalid listener, reason :data:`INVALID_LISTENER`; the message names the listener and
each condition that is not in its good state, with its reason and message. The event writer
posts each once and bumps it while it remains, as for every Event; a fixed listener's Event is
forgotten, so if it breaks again it is posted again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.result import EventRecord

__all__ = ["INVALID_LISTENER", "SOUND", "listener_events", "listener_problem"]

INVALID_LISTENER = "InvalidListener"
_LISTENER_KINDS = frozenset((kinds.GATEWAY.kind, kinds.LISTENER_SET.kind))
#: A listener condition and the status it has when the listener is sound (Programmed follows
#: these, and is False while the data plane has not loaded the config, which is no fault).
SOUND = {"Accepted": "True", "ResolvedRefs": "True", "Conflicted": "False"}


def listener_events(ctx: RenderContext) -> None:
    """One ``InvalidListener`` Warning Event per listener of a Gateway or ListenerSet whose
    status the render wrote with Accepted or ResolvedRefs False, or Conflicted True."""
    for status in ctx.status.statuses(_LISTENER_KINDS):
        if status.kind == kinds.GATEWAY.kind:
            objects = ctx.snapshot.gateways
        elif status.kind == kinds.LISTENER_SET.kind:
            objects = ctx.snapshot.listener_sets
        else:
            continue
        uid = f.string(f.metadata(objects.get(f"{status.namespace}/{status.name}")).get("uid"))
        for listener in f.items(status.status.get("listeners")):
            problem = listener_problem(listener) if isinstance(listener, Mapping) else ""
            if problem:
                ctx.add_event(EventRecord(kind=status.kind, namespace=status.namespace, name=status.name,
                                          type="Warning", reason=INVALID_LISTENER, message=problem, uid=uid,
                                          api_version=status.api_version))


def listener_problem(listener: Mapping[str, Any], sound: Mapping[str, str] = SOUND) -> str:
    """``listener "https" cannot serve: ResolvedRefs=False (InvalidCertificateRef): <message>; ...``
    for a listener status with a condition of ``sound`` in another state, else ""."""
    bad = [c for c in f.items(listener.get("conditions"))
           if isinstance(c, Mapping) and c.get("type") in sound and c.get("status") != sound[c["type"]]]
    if not bad:
        return ""
    said = "; ".join(f"{c.get('type')}={c.get('status')} ({c.get('reason')}): {c.get('message')}" for c in bad)
    return f'listener "{f.string(listener.get("name"))}" cannot serve: {said}'
