"""What the cluster serves of the Gateway API, as the render's input (``Snapshot.gateway_api``
and ``Snapshot.unreadable``), and what the render says about it on the GatewayClass.

The controller discovers it from the CustomResourceDefinitions (controller/gatewayapi.py); the
offline render has none (``None``: nothing is said and ``status.supportedFeatures`` is not
written, as on a cluster whose GatewayClass CRD lacks the field).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render.features import SUPPORTED_FEATURES

#: ``status.supportedFeatures`` of the served GatewayClass version: a list of ``{name: ...}``
#: (v1.3+), a list of names (the experimental channel before v1.3), or absent (v1.2.1 standard)
FEATURES_AS_OBJECTS = "objects"
FEATURES_AS_STRINGS = "strings"

#: The kinds the render reads whose absence changes what it does, and what then happens.
_WITHOUT = {kinds.REFERENCE_GRANT.kind: "cross-namespace references are refused"}


@dataclass(frozen=True)
class GatewayApiInfo:
    #: the bundle the CRDs come from, e.g. ``v1.6.3 (standard)``; "" when unknown or mixed
    bundle: str = ""
    #: kind -> the apiVersion the controller reads it as (the kinds installed and watched)
    watched: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: ``FEATURES_AS_OBJECTS``, ``FEATURES_AS_STRINGS`` or "" (the field is not served)
    supported_features: str = ""


def supported_features(info: GatewayApiInfo | None) -> list[Any] | None:
    """The GatewayClass ``status.supportedFeatures`` to write, None when the served CRD has no
    such field (writing it would be pruned, and written again at every reconcile)."""
    form = info.supported_features if info is not None else ""
    if form == FEATURES_AS_OBJECTS:
        return [{"name": name} for name in SUPPORTED_FEATURES]
    if form == FEATURES_AS_STRINGS:
        return list(SUPPORTED_FEATURES)
    return None


def listener_sets_served(info: GatewayApiInfo | None, listener_sets: Mapping[str, Any]) -> bool:
    """Whether the Gateway status has ``attachedListenerSets`` to write: ListenerSets are served
    (the same bundles add the kind and the field), or offline (unknown) the input has some."""
    return bool(listener_sets) if info is None else kinds.LISTENER_SET.kind in info.watched


def class_notes(info: GatewayApiInfo | None, unreadable: Mapping[str, str]) -> list[str]:
    """Sentences for the GatewayClass ``Accepted`` message: the bundle found, and each kind the
    render needs that is not installed or cannot be read, with what it costs."""
    notes: list[str] = []
    if info is not None:
        notes.append(f"Gateway API CRDs {info.bundle}" if info.bundle else "Gateway API CRDs of mixed or unknown bundles")
    for kind, effect in _WITHOUT.items():
        why = unreadable.get(kind)
        if why:
            notes.append(f"{kind} cannot be read ({why}): {effect}")
        elif info is not None and kind not in info.watched:
            notes.append(f"{kind} is not installed: {effect}")
    return notes


__all__ = ["FEATURES_AS_OBJECTS", "FEATURES_AS_STRINGS", "GatewayApiInfo", "class_notes", "listener_sets_served",
           "supported_features"]
