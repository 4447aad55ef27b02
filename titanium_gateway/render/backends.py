"""Service + EndpointSlice -> data-plane cluster.

Public API (shared with the Ingress translation):

* :class:`BackendIndex` — built once per render from the snapshot: Services by
  ``(namespace, name)``, EndpointSlices by ``(namespace, kubernetes.io/service-name)``.
* :class:`ClusterSettings` — per-backend settings that change the cluster (backend request
  timeout, algorithm, session affinity, upstream HTTPS + TLS files). Default settings give the
  plain id; any non-default setting gives an id with a short hash suffix.
* :func:`cluster_id` ``(namespace, service, port, settings=None) -> str`` — deterministic id,
  ``svc-<namespace>.<service>.<port>`` (+ ``-<hash10>`` for non-default settings). Namespace,
  Service and port names cannot contain dots, so the id is unambiguous.
* :func:`resolve_backend` ``(index, namespace, service, port, settings) -> BackendResolution``
  — the cluster dict (``id``, optional ``algorithm``, ``destinations``, optional
  ``sessionAffinity``/``httpClient``) or a reason and message: ``BackendNotFound`` (no such
  Service or port), ``UnsupportedValue`` (an ExternalName Service: it has no endpoints).

Destinations are the READY endpoints (``conditions.ready`` not False; nil counts as ready, as
the EndpointSlice API says) of every slice of the Service, on the slice port whose name is the
Service port's name (``targetPort`` as a number is the fallback). A Service without ready
endpoints gives ``destinations: []`` (the data plane answers 503).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway.render.memo import resource_version
from titanium_gateway.render.snapshot import Snapshot

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_ID_PART = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?")


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _meta(obj: Any) -> Mapping[str, Any]:
    meta = obj.get("metadata") if (type(obj) is dict or isinstance(obj, Mapping)) else None
    return meta if (type(meta) is dict or isinstance(meta, Mapping)) else {}


def _port_number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        return None
    return value


@dataclass(frozen=True)
class ClusterSettings:
    """Settings of one cluster; the default instance means "plain Service cluster"."""

    request_timeout: str | None = None  # TimeSpan "hh:mm:ss[.fff]" -> httpClient.requestTimeout
    algorithm: str | None = None  # RoundRobin | Random | LeastRequests | LeastTime | PowerOfTwoChoices
    affinity_cookie: str | None = None  # -> sessionAffinity {policy: Cookie, name: <this>}
    use_https: bool = False
    tls: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (caFile|certFile|keyFile, file)

    def is_default(self) -> bool:
        return self is DEFAULT_SETTINGS or self == DEFAULT_SETTINGS

    def canonical(self) -> str:
        return json.dumps(
            {
                "requestTimeout": self.request_timeout,
                "algorithm": self.algorithm,
                "affinity": self.affinity_cookie,
                "useHttps": self.use_https,
                "tls": sorted(self.tls),
            },
            sort_keys=True,
            separators=(",", ":"),
        )


#: The plain Service cluster; pass this (not a new instance) for speed.
DEFAULT_SETTINGS = ClusterSettings()


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


@dataclass(frozen=True)
class BackendResolution:
    cluster: dict[str, Any] | None
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
        for svc in snapshot.services.values():
            if not (type(svc) is dict or isinstance(svc, Mapping)):
                continue
            meta = _meta(svc)
            name = _s(meta.get("name"))
            if name:
                self.services[(_s(meta.get("namespace")) or "default", name)] = svc
        for key in sorted(snapshot.endpoint_slices):
            eps = snapshot.endpoint_slices[key]
            if not (type(eps) is dict or isinstance(eps, Mapping)):
                continue
            meta = _meta(eps)
            labels = meta.get("labels")
            svc_name = _s(labels.get(SERVICE_NAME_LABEL)) if (type(labels) is dict or isinstance(labels, Mapping)) else ""
            if svc_name:
                ns = _s(meta.get("namespace")) or "default"
                self.slices.setdefault((ns, svc_name), []).append(eps)
        self._cache: dict[tuple[Any, ...], BackendResolution] = {}
        #: (namespace, Service, id of its port entry, useHttps) -> (the entry kept alive, the
        #: destinations): one list for the clusters of a Service port with different settings
        self._destinations: dict[tuple[Any, ...], tuple[Any, list[dict[str, Any]]]] = {}
        #: cluster id -> (namespace, service, port, settings) it was resolved from (render/memo.py)
        self.recipes: dict[str, tuple[str, str, Any, ClusterSettings]] = {}

    def version(self, namespace: str, name: str) -> tuple[Any, ...] | None:
        """``(uid, resourceVersion)`` of the Service and of each of its EndpointSlices: what a
        cluster of it is made from (render/memo.py); None when one has no resourceVersion."""
        svc = self.services.get((namespace, name))
        ver = resource_version(svc)
        if ver is None:
            return None
        out: list[Any] = [ver]
        for eps in self.slices.get((namespace, name), ()):
            ver = resource_version(eps)
            if ver is None:
                return None
            out.append(ver)
        return tuple(out)

    def service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.services.get((namespace, name))

    def service_port(self, namespace: str, name: str, port: int | str) -> Mapping[str, Any] | None:
        """The Service's ``spec.ports`` entry with this number (int) or name (str)."""
        svc = self.service(namespace, name)
        spec = svc.get("spec") if svc is not None else None
        ports = spec.get("ports") if (type(spec) is dict or isinstance(spec, Mapping)) else None
        if not isinstance(ports, list):
            return None
        for entry in ports:
            if not (type(entry) is dict or isinstance(entry, Mapping)):
                continue
            if isinstance(port, int) and not isinstance(port, bool) and entry.get("port") == port:
                return entry
            if isinstance(port, str) and port and entry.get("name") == port:
                return entry
        return None


def _destinations(index: BackendIndex, namespace: str, name: str, svc_port: Mapping[str, Any], use_https: bool) -> list[dict[str, Any]]:
    port_name = _s(svc_port.get("name"))
    target = svc_port.get("targetPort")
    fallback = _port_number(target)
    if fallback is None and target is None:
        fallback = _port_number(svc_port.get("port"))
    found: dict[str, dict[str, Any]] = {}
    for eps in index.slices.get((namespace, name), []):
        slice_port: int | None = None
        ports = eps.get("ports")
        if isinstance(ports, list):
            for entry in ports:
                if (type(entry) is dict or isinstance(entry, Mapping)) and _s(entry.get("name")) == port_name:
                    slice_port = _port_number(entry.get("port"))
                    break
        if slice_port is None:
            slice_port = fallback
        if slice_port is None:
            continue
        endpoints = eps.get("endpoints")
        if not isinstance(endpoints, list):
            continue
        for ep in endpoints:
            if not (type(ep) is dict or isinstance(ep, Mapping)):
                continue
            conds = ep.get("conditions")
            ready = conds.get("ready") if (type(conds) is dict or isinstance(conds, Mapping)) else None
            if ready is False:
                continue
            addresses = ep.get("addresses")
            if not isinstance(addresses, list):
                continue
            for addr in addresses:
                if not isinstance(addr, str) or not addr:
                    continue
                dest_id = f"[{addr}]:{slice_port}" if ":" in addr else f"{addr}:{slice_port}"
                if dest_id not in found:
                    found[dest_id] = {"id": dest_id, "address": addr, "port": slice_port, "weight": 1,
                                      "useHttps": use_https}
    return [found[k] for k in sorted(found)]


def build_cluster(cid: str, destinations: list[dict[str, Any]], settings: ClusterSettings) -> dict[str, Any]:
    """A cluster dict in the emitted key order."""
    cluster: dict[str, Any] = {"id": cid}
    if settings.algorithm:
        cluster["algorithm"] = settings.algorithm
    cluster["destinations"] = destinations
    if settings.affinity_cookie:
        cluster["sessionAffinity"] = {"policy": "Cookie", "name": settings.affinity_cookie}
    client: dict[str, Any] = {}
    if settings.request_timeout:
        client["requestTimeout"] = settings.request_timeout
    if settings.tls:
        client["tls"] = dict(sorted(settings.tls))
    if client:
        cluster["httpClient"] = client
    return cluster


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
        key: tuple[Any, ...] = (namespace, service, port, None)
    else:
        key = (namespace, service, port, settings)
    cached = index._cache.get(key)
    if cached is not None:
        return cached
    svc = index.service(namespace, service)
    spec = svc.get("spec") if svc is not None else None
    if svc is None:
        result = BackendResolution(None, "BackendNotFound", f"Service {namespace}/{service} not found")
    elif (type(spec) is dict or isinstance(spec, Mapping)) and spec.get("type") == "ExternalName":
        # never any EndpointSlices: the data plane could only answer 503, so say so instead
        result = BackendResolution(
            None, "UnsupportedValue",
            f"Service {namespace}/{service} is of type ExternalName, which is not supported as a backend",
        )
    else:
        svc_port = index.service_port(namespace, service, port)
        if svc_port is None:
            result = BackendResolution(
                None, "BackendNotFound", f"Service {namespace}/{service} has no port {port}"
            )
        else:
            # shared, read-only: the clusters of this Service port with other settings have it too
            dkey = (namespace, service, id(svc_port), settings.use_https)
            made = index._destinations.get(dkey)
            if made is None or made[0] is not svc_port:
                made = index._destinations[dkey] = (
                    svc_port, _destinations(index, namespace, service, svc_port, settings.use_https))
            dests = made[1]
            cid = cluster_id(namespace, service, port, settings)
            result = BackendResolution(build_cluster(cid, dests, settings))
            index.recipes.setdefault(cid, (namespace, service, port, settings))
    index._cache[key] = result
    return result


def empty_cluster_id(reason: str) -> str:
    """Id of the shared cluster with no destinations used for an invalid backend share (503)."""
    return f"invalid-backend-{reason.lower()}"
