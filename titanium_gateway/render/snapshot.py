"""The immutable input of the pure render: every watched object, as raw JSON dicts.

Objects are stored exactly as the API server (or a manifest file) gives them, minus
``metadata.managedFields``. Each collection maps a key to the object:
``"<namespace>/<name>"`` for namespaced kinds and ``"<name>"`` for cluster-scoped ones
(``kinds.CLUSTER_SCOPED``). The render must never mutate an object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render.gatewayapi import GatewayApiInfo
from titanium_gateway.render.planes import SHARED

Obj = Mapping[str, Any]

#: kind -> Snapshot attribute, and the cluster-scoped kinds: asked of the table of kinds
KIND_FIELDS = kinds.KIND_FIELDS
CLUSTER_SCOPED = kinds.CLUSTER_SCOPED

_EMPTY: Mapping[str, Obj] = MappingProxyType({})


def object_key(obj: Obj) -> str:
    """The cache key of an object: ``namespace/name``, or ``name`` when cluster-scoped."""
    meta = obj.get("metadata") or {}
    if obj.get("kind") in CLUSTER_SCOPED:
        return str(meta.get("name", ""))
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


@dataclass(frozen=True)
class Snapshot:
    gateway_classes: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    gateways: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    httproutes: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    reference_grants: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    namespaces: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    services: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    endpoint_slices: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    secrets: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    ingress_classes: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    ingresses: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    # Gateway API kinds the controller watches where they are installed (empty where they are
    # not), and the ConfigMaps a BackendTLSPolicy may name
    backend_tls_policies: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    listener_sets: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    grpcroutes: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    tlsroutes: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    tcproutes: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    udproutes: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    config_maps: Mapping[str, Obj] = field(default_factory=lambda: _EMPTY)
    #: kind -> why its objects are unknown (the controller cannot read them: its watch fails, e.g.
    #: 403 or 404). Their collection may be stale or empty; the render refuses what depends on
    #: them (ReferenceGrant: every reference that needs a grant).
    unreadable: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    #: what the cluster serves of the Gateway API (None offline: unknown)
    gateway_api: GatewayApiInfo | None = None
    #: SHA-256 of the config every ready data-plane pod has confirmed (from the prober),
    #: or None. Programmed=True only when it equals the rendered config_hash.
    confirmed_config_hash: str | None = None
    #: A prober message explaining why the config is not confirmed yet (for Pending).
    probe_message: str = ""
    #: The same two for each Gateway's own data plane (``per-gateway``): plane key
    #: (``namespace/name``) -> (confirmed hash or None, probe message).
    plane_probes: Mapping[str, tuple[str | None, str]] = field(default_factory=lambda: _EMPTY)
    #: RFC 3339 time to stamp on conditions whose status/reason changed. The render has
    #: no clock: the controller passes "now", the offline render a fixed stand-in.
    now: str = "1970-01-01T00:00:00Z"
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def probe(self, key: str) -> tuple[str | None, str]:
        """What the pods of the data plane ``key`` confirmed (hash or None) and why not."""
        if key == SHARED:
            return self.confirmed_config_hash, self.probe_message
        return self.plane_probes.get(key, (None, ""))

    @classmethod
    def from_objects(cls, objects: Iterable[Obj], **kwargs: Any) -> Snapshot:
        """Builds a snapshot from a flat list of objects (unknown kinds are ignored)."""
        buckets: dict[str, dict[str, Obj]] = {f: {} for f in KIND_FIELDS.values()}
        for obj in objects:
            fld = KIND_FIELDS.get(str(obj.get("kind", "")))
            if fld is not None:
                buckets[fld][object_key(obj)] = obj
        return cls(**{k: MappingProxyType(v) for k, v in buckets.items()}, **kwargs)
