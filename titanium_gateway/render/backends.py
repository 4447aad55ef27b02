"""Service + EndpointSlice -> data-plane cluster.

Public API (shared with the Ingress translation):

* :class:`BackendIndex` — built once per render from the snapshot: Services by
  ``(namespace, name)``, EndpointSlices by ``(namespace, kubernetes.io/service-name)``.
* :class:`~titanium_gateway.twp.model.ClusterSettings` — per-backend settings that change the cluster (backend request
  timeout, algorithm, session affinity, upstream HTTPS + TLS files). Default settings give the
  plain id; any non-default setting gives an id with a short hash suffix.
* :func:`cluster_id` ``(namespace, service, port, settings=None) -> str`` — deterministic id,
  ``svc-<namespace>.<service>.<port>`` (+ ``-<hash10>`` for non-default settings). Namespace,
  Service and port names cannot contain dots, so the id is unambiguous.
* :func:`resolve_backend` ``(index, namespace, service, port, settings) -> BackendResolution``
  — the :class:`~titanium_gateway.twp.model.Cluster` (no destinations when ``settings.refused``:
  a BackendTLSPolicy that cannot be honoured) (with its
  :class:`~titanium_gateway.twp.model.Backend`) or a reason and message:
  ``BackendNotFound`` (no such Service or port), ``UnsupportedValue`` (an ExternalName
  Service: it has no endpoints).

Destinations are the READY endpoints (``conditions.ready`` not False; nil counts as ready, as
the EndpointSlice API says) of every slice of the Service, on the slice port whose name is the
Service port's name (``targetPort`` as a number is the fallback). A Service without ready
endpoints gives ``destinations: []`` (the data plane answers 503).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from titanium_gateway.render import fields as f
from titanium_gateway.render import planes
from titanium_gateway.render.memo import resource_version
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.twp.model import (
    DEFAULT_SETTINGS,
    Backend,
    Cluster,
    ClusterSettings,
    Destination,
    HttpClient,
    SessionAffinity,
    UpstreamTls,
)

__all__ = ["DEFAULT_SETTINGS", "BackendIndex", "BackendResolution", "ClusterSettings", "cluster_id", "resolve_backend"]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_ID_PART = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")


def cluster_id(namespace: str, service: str, port: int | str, settings: ClusterSettings | None = None) -> str:
    """``svc-<ns>.<service>.<port>``, plus ``-<hash>`` for non-default settings.

    Components that are not DNS labels (malformed input) also get a hash suffix of the raw
    values so that two different backends never share an id.
    """
    port_text = str(port)
    base = f"svc-{namespace}.{service}.{port_text}"
    salt: list[str] = []
    if not all(_ID_PART.fullmatch(p) for p in (namespace, service, port_text)):
        salt.append(json.dumps([namespace, service, port_text]))
    if settings is not None and not settings.is_default():
        salt.append(settings.canonical())
    if salt:
        digest = hashlib.sha256("\n".join(salt).encode()).hexdigest()[:10]
        return f"{base}-{digest}"
    return base


@dataclass(frozen=True, slots=True)
class BackendResolution:
    cluster: Cluster | None
    reason: str = ""  # "" when resolved, else e.g. "BackendNotFound"
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.cluster is not None


class BackendIndex:
    """Services and EndpointSlices indexed once per render."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.services: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.slices: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        #: the Gateways' own data-plane Services (render/memo.py: looked up by name)
        self.managed: set[tuple[str, str]] = set()
        #: the Services looked up in this render that were missing or a data plane's own
        self.looked_up: set[tuple[str, str]] = set()
        versions: list[tuple[str, str, str]] | None = []
        for key in sorted(snapshot.services):
            svc = snapshot.services[key]
            meta = f.metadata(svc)
            name, ns = f.name_of(meta), f.namespace_of(meta)
            managed = planes.is_managed(meta.get("labels"))
            if name and ns:
                self.services[(ns, name)] = svc
                if managed:
                    self.managed.add((ns, name))
            ver = resource_version(svc)
            if ver is None:
                versions = None
            elif versions is not None and not managed:
                versions.append((key, *ver))
        #: ``(key, uid, resourceVersion)`` of every Service but the data planes' own, in key
        #: order; None when one has no resourceVersion (render/memo.py)
        self.service_versions: tuple[Any, ...] | None = None if versions is None else tuple(versions)
        for key in sorted(snapshot.endpoint_slices):
            eps = snapshot.endpoint_slices[key]
            meta = f.metadata(eps)
            svc_name = f.text(f.mapping(meta.get("labels")).get(SERVICE_NAME_LABEL))
            ns = f.namespace_of(meta)
            if svc_name and ns:
                self.slices.setdefault((ns, svc_name), []).append(eps)
        self._cache: dict[tuple[Any, ...], BackendResolution] = {}
        self._versions: dict[tuple[str, str], tuple[Any, ...] | None] = {}
        #: (namespace, Service, index of its port entry, useHttps) -> the destinations: one
        #: tuple for the clusters of a Service port with different settings
        self._destinations: dict[tuple[str, str, int, bool], tuple[Destination, ...]] = {}

    def version(self, namespace: str, name: str) -> tuple[Any, ...] | None:
        """``(uid, resourceVersion)`` of the Service and of each of its EndpointSlices: what a
        cluster of it is made from (render/memo.py); None when one has no resourceVersion."""
        key = (namespace, name)
        try:
            return self._versions[key]
        except KeyError:
            pass
        got = self._versions[key] = self._version(key)
        return got

    def _version(self, key: tuple[str, str]) -> tuple[Any, ...] | None:
        ver = resource_version(self.services.get(key))
        if ver is None:
            return None
        out: list[Any] = [ver]
        for eps in self.slices.get(key, ()):
            ver = resource_version(eps)
            if ver is None:
                return None
            out.append(ver)
        return tuple(out)

    def service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = (namespace, name)
        svc = self.services.get(key)
        if svc is None or key in self.managed:
            self.looked_up.add(key)
        return svc

    def lookup_versions(self, keys: Iterable[tuple[str, str]]) -> tuple[Any, ...]:
        """``(namespace, name, (uid, resourceVersion) or None)`` of each Service named, in order:
        what the memo checks of the Services a translation looked up by name (render/memo.py)."""
        return tuple((ns, name, resource_version(self.services.get((ns, name)))) for ns, name in sorted(keys))

    def service_port(self, namespace: str, name: str, port: int | str) -> Mapping[str, Any] | None:
        """The Service's ``spec.ports`` entry with this number (int) or name (str)."""
        found = self._port_entry(namespace, name, port)
        return found[1] if found is not None else None

    def _port_entry(self, namespace: str, name: str, port: int | str) -> tuple[int, Mapping[str, Any]] | None:
        svc = self.service(namespace, name)
        if svc is None:
            return None
        for index, entry in enumerate(f.items(f.mapping(svc.get("spec")).get("ports"))):
            if not f.is_mapping(entry):
                continue
            if isinstance(port, int) and not isinstance(port, bool) and entry.get("port") == port:
                return index, entry
            if isinstance(port, str) and port and entry.get("name") == port:
                return index, entry
        return None


def _destinations(index: BackendIndex, namespace: str, name: str, svc_port: Mapping[str, Any],
                  use_https: bool) -> tuple[Destination, ...]:
    port_name = f.string(svc_port.get("name"))
    target = svc_port.get("targetPort")
    fallback = f.port(target)
    if fallback is None and target is None:
        fallback = f.port(svc_port.get("port"))
    found: dict[str, Destination] = {}
    for eps in index.slices.get((namespace, name), []):
        slice_port: int | None = None
        for entry in f.items(eps.get("ports")):
            if f.is_mapping(entry) and f.string(entry.get("name")) == port_name:
                slice_port = f.port(entry.get("port"))
                break
        if slice_port is None:
            slice_port = fallback
        if slice_port is None:
            continue
        for ep in f.items(eps.get("endpoints")):
            if not f.is_mapping(ep):
                continue
            if f.mapping(ep.get("conditions")).get("ready") is False:
                continue
            for addr in f.items(ep.get("addresses")):
                addr = f.text(addr)
                if not addr:
                    continue
                dest_id = f"[{addr}]:{slice_port}" if ":" in addr else f"{addr}:{slice_port}"
                if dest_id not in found:
                    found[dest_id] = Destination(dest_id, addr, slice_port, 1, use_https)
    return tuple(found[k] for k in sorted(found))


def build_cluster(cid: str, destinations: tuple[Destination, ...], settings: ClusterSettings,
                  backend: Backend | None = None) -> Cluster:
    """The cluster of ``destinations`` with ``settings``."""
    tls = None
    if settings.tls or settings.server_name is not None or settings.subject_alt_names or settings.system_roots:
        tls = UpstreamTls(**{_TLS_FIELDS[k]: v for k, v in settings.tls}, server_name=settings.server_name,
                          subject_alt_names=settings.subject_alt_names or None,
                          system_roots=True if settings.system_roots else None)
    return Cluster(
        id=cid,
        algorithm=settings.algorithm or None,
        destinations=destinations,
        session_affinity=SessionAffinity("Cookie", settings.affinity_cookie) if settings.affinity_cookie else None,
        http_client=HttpClient(settings.request_timeout or None, tls) if settings.request_timeout or tls else None,
        backend=backend,
    )


_TLS_FIELDS = {"caFile": "ca_file", "certFile": "cert_file", "keyFile": "key_file"}


def resolve_backend(
    index: BackendIndex,
    namespace: str,
    service: str,
    port: int | str,
    settings: ClusterSettings | None = None,
) -> BackendResolution:
    """Resolve a Service backend to a cluster (memoized per index)."""
    if settings is None or settings is DEFAULT_SETTINGS:
        settings = DEFAULT_SETTINGS
        key: tuple[Any, ...] = (namespace, service, port, type(port), None)
    else:
        key = (namespace, service, port, type(port), settings)
    cached = index._cache.get(key)
    if cached is not None:
        index.service(namespace, service)  # (a lookup the memo tracks: see BackendIndex.service)
        return cached
    svc = index.service(namespace, service)
    if svc is None:
        result = BackendResolution(None, "BackendNotFound", f"Service {namespace}/{service} not found")
    elif f.mapping(svc.get("spec")).get("type") == "ExternalName":
        # never any EndpointSlices: the data plane could only answer 503, so say so instead
        result = BackendResolution(
            None, "UnsupportedValue",
            f"Service {namespace}/{service} is of type ExternalName, which is not supported as a backend",
        )
    else:
        found = index._port_entry(namespace, service, port)
        if found is None:
            result = BackendResolution(
                None, "BackendNotFound", f"Service {namespace}/{service} has no port {port}"
            )
        elif settings.refused:  # (a BackendTLSPolicy that cannot be honoured: 503, never plaintext)
            cid = cluster_id(namespace, service, port, settings)
            result = BackendResolution(build_cluster(cid, (), settings, Backend(namespace, service, port, settings)))
        else:
            # shared: the clusters of this Service port with other settings have it too
            dkey = (namespace, service, found[0], settings.use_https)
            dests = index._destinations.get(dkey)
            if dests is None:
                dests = index._destinations[dkey] = _destinations(index, namespace, service, found[1],
                                                                   settings.use_https)
            cid = cluster_id(namespace, service, port, settings)
            result = BackendResolution(build_cluster(cid, dests, settings, Backend(namespace, service, port, settings)))
    index._cache[key] = result
    return result
