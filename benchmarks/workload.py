"""Deterministic synthetic clusters for the benchmarks (raw JSON-like dicts, as informers hold them).

A workload of size ``n`` holds:

* one GatewayClass ``titanium`` (our controller name) and one IngressClass ``titanium``;
* the data-plane Service ``gateway-system/titanium`` (LoadBalancer with an address);
* ``NAMESPACES`` application namespaces ``app-00..``;
* 20 Gateways ``app-XX/gw-XX`` (one per namespace, cycling), each with an HTTP listener on 80
  and an HTTPS listener on 443 terminating 10 certificates, routes allowed from All namespaces;
* 200 valid kubernetes.io/tls Secrets (10 per Gateway, in its namespace), each a real
  certificate for its own host names; only ``KEY_POOL`` private keys are generated and reused,
  so building the workload stays cheap;
* ``n`` HTTPRoutes, each: a parent Gateway (both listeners), 1 host name, 2 rules of 2 matches
  (path + header/method), a RequestHeaderModifier filter and 2 weighted backendRefs;
* ``n // 5`` Services (port 8080) with one EndpointSlice of 10 ready endpoints each;
* with ``ingresses=True``, ``n`` Ingresses of class ``titanium`` (2 paths, a few
  ``titanium.io/`` annotations, TLS on every 10th one).

Everything is a pure function of ``n`` (no randomness, no clock), so every run and every machine
renders the same cluster. Objects carry the fields the API server fills in (uid,
resourceVersion, generation, creationTimestamp) so no loader defaults are needed.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

GATEWAY_GROUP = "gateway.networking.k8s.io"
CONTROLLER_NAME = "titaniumproxy.com/gateway-controller"
INGRESS_CONTROLLER_NAME = "titanium.io/ingress-controller"
DATA_PLANE_NAMESPACE = "gateway-system"
DATA_PLANE_SERVICE = "titanium"
NAMESPACES = 20
GATEWAYS = 20
CERTS_PER_GATEWAY = 10
ENDPOINTS_PER_SLICE = 10
KEY_POOL = 4
SERVICE_PORT = 8080
_EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def namespace_name(i: int) -> str:
    return f"app-{i % NAMESPACES:02d}"


def _meta(name: str, namespace: str | None, serial: int, **extra: Any) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(
        {
            "uid": f"00000000-0000-4000-9000-{serial:012d}",
            "resourceVersion": str(1000 + serial),
            "generation": 1,
            "creationTimestamp": (_EPOCH + dt.timedelta(seconds=serial)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )
    meta.update(extra)
    return meta


class _Serial:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self) -> int:
        self.n += 1
        return self.n


# --- certificates -----------------------------------------------------------------------


@functools.cache
def _keys() -> tuple[Any, ...]:
    from cryptography.hazmat.primitives.asymmetric import ec

    # ECDSA P-256: fast to generate and to sign; a handful reused across all certificates.
    return tuple(ec.generate_private_key(ec.SECP256R1()) for _ in range(KEY_POOL))


@functools.cache
def _key_pem(index: int) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return _keys()[index].private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def certificate_pem(hosts: tuple[str, ...], key_index: int, serial: int) -> bytes:
    """A self-signed certificate for ``hosts`` with pooled key ``key_index``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    key = _keys()[key_index]
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(_EPOCH)
        .not_valid_after(_EPOCH + dt.timedelta(days=36500))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


def tls_secret(namespace: str, name: str, hosts: tuple[str, ...], serial: int, key_index: int | None = None) -> Obj:
    """A valid kubernetes.io/tls Secret for ``hosts``."""
    k = serial % KEY_POOL if key_index is None else key_index
    crt = certificate_pem(hosts, k, 1_000_000 + serial)
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(name, namespace, serial),
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": b64(crt), "tls.key": b64(_key_pem(k))},
    }


def cert_hosts(gateway: int, index: int) -> tuple[str, ...]:
    return (f"*.c{index}.gw{gateway}.example.com", f"c{index}.gw{gateway}.example.com")


# --- the cluster ------------------------------------------------------------------------


@dataclass
class Workload:
    n: int
    ingresses: bool
    objects: list[Obj] = field(default_factory=list)

    def by_kind(self, kind: str) -> list[Obj]:
        return [o for o in self.objects if o["kind"] == kind]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.objects:
            out[o["kind"]] = out.get(o["kind"], 0) + 1
        return out


def services_per_namespace(n: int) -> int:
    return max(2, n // 5 // NAMESPACES)


def service_name(ns_index: int, local: int) -> str:
    return f"svc-{ns_index:02d}-{local:04d}"


def endpoint_ip(ns_index: int, local: int, endpoint: int) -> str:
    """Unique per (namespace, service, endpoint) for n up to 20k+ (10.N.x.y)."""
    flat = local * ENDPOINTS_PER_SLICE + endpoint
    return f"10.{100 + ns_index}.{flat // 250}.{flat % 250 + 1}"


def endpoint_slice(ns_index: int, local: int, serial: int, addresses: list[str] | None = None) -> Obj:
    svc = service_name(ns_index, local)
    addrs = addresses or [endpoint_ip(ns_index, local, e) for e in range(ENDPOINTS_PER_SLICE)]
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": _meta(
            f"{svc}-abc12",
            namespace_name(ns_index),
            serial,
            labels={"kubernetes.io/service-name": svc, "endpointslice.kubernetes.io/managed-by": "bench"},
            ownerReferences=[{"apiVersion": "v1", "kind": "Service", "name": svc, "uid": f"svc-{serial}"}],
        ),
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": SERVICE_PORT, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": [ip],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "nodeName": f"node-{i % 3}",
                "targetRef": {"kind": "Pod", "namespace": namespace_name(ns_index), "name": f"{svc}-pod-{i}"},
            }
            for i, ip in enumerate(addrs)
        ],
    }


def _service(ns_index: int, local: int, serial: int) -> Obj:
    svc = service_name(ns_index, local)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(svc, namespace_name(ns_index), serial, labels={"app": svc}),
        "spec": {
            "type": "ClusterIP",
            "clusterIP": f"10.96.{serial // 250 % 250}.{serial % 250 + 1}",
            "selector": {"app": svc},
            "ports": [{"name": "http", "port": SERVICE_PORT, "targetPort": SERVICE_PORT, "protocol": "TCP"}],
        },
    }


def _gateway(g: int, serial: int) -> Obj:
    ns = namespace_name(g)
    return {
        "apiVersion": f"{GATEWAY_GROUP}/v1",
        "kind": "Gateway",
        "metadata": _meta(f"gw-{g:02d}", ns, serial),
        "spec": {
            "gatewayClassName": "titanium",
            "listeners": [
                {"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "All"}}},
                {
                    "name": "https",
                    "port": 443,
                    "protocol": "HTTPS",
                    "tls": {
                        "mode": "Terminate",
                        "certificateRefs": [
                            {"kind": "Secret", "group": "", "name": f"tls-{g:02d}-{c}"} for c in range(CERTS_PER_GATEWAY)
                        ],
                    },
                    "allowedRoutes": {"namespaces": {"from": "All"}},
                },
            ],
        },
    }


def route_hosts(j: int) -> list[str]:
    """One host name per route, covered by one of its Gateway's certificates (``*.cC.gwG``)."""
    g = (j // NAMESPACES) % GATEWAYS
    c = j % CERTS_PER_GATEWAY
    return [f"r{j}.c{c}.gw{g}.example.com"]


def httproute(j: int, n: int, serial: int, generation: int = 1) -> Obj:
    m = j % NAMESPACES
    local = j // NAMESPACES
    spn = services_per_namespace(n)
    g = (j // NAMESPACES) % GATEWAYS
    a, b = service_name(m, local % spn), service_name(m, (local + 1) % spn)
    backends = [
        {"name": a, "port": SERVICE_PORT, "weight": 90},
        {"name": b, "port": SERVICE_PORT, "weight": 10},
    ]
    header_filter = {
        "type": "RequestHeaderModifier",
        "requestHeaderModifier": {"set": [{"name": "x-route", "value": f"r{j}"}], "remove": ["x-debug"]},
    }
    obj: Obj = {
        "apiVersion": f"{GATEWAY_GROUP}/v1",
        "kind": "HTTPRoute",
        "metadata": _meta(f"route-{j:05d}", namespace_name(m), serial),
        "spec": {
            "parentRefs": [{"group": GATEWAY_GROUP, "kind": "Gateway", "name": f"gw-{g:02d}", "namespace": namespace_name(g)}],
            "hostnames": route_hosts(j),
            "rules": [
                {
                    "matches": [
                        {"path": {"type": "PathPrefix", "value": f"/api/v{j % 3 + 1}"}, "method": "GET"},
                        {
                            "path": {"type": "PathPrefix", "value": f"/api/v{j % 3 + 1}"},
                            "headers": [{"type": "Exact", "name": "x-tenant", "value": f"t{j % 7}"}],
                        },
                    ],
                    "filters": [header_filter],
                    "backendRefs": backends,
                },
                {
                    "matches": [
                        {"path": {"type": "Exact", "value": "/healthz"}},
                        {"path": {"type": "PathPrefix", "value": "/"}, "queryParams": [{"type": "Exact", "name": "v", "value": "2"}]},
                    ],
                    "filters": [header_filter],
                    "backendRefs": backends,
                },
            ],
        },
    }
    obj["metadata"]["generation"] = generation
    return obj


_ANNOTATION_SETS: tuple[dict[str, str], ...] = (
    {"titanium.io/proxy-read-timeout": "30", "titanium.io/load-balance": "least_conn"},
    {"titanium.io/rewrite-target": "/", "titanium.io/proxy-body-size": "8m"},
    {"titanium.io/whitelist-source-range": "10.0.0.0/8,192.168.0.0/16", "titanium.io/limit-rps": "100"},
    {"titanium.io/affinity": "cookie", "titanium.io/cors-allow-origin": "https://example.com"},
    {"kubernetes.io/change-cause": "bench"},
)


def ingress(j: int, n: int, serial: int) -> Obj:
    m = j % NAMESPACES
    local = j // NAMESPACES
    spn = services_per_namespace(n)
    host = f"i{j}.c{j % CERTS_PER_GATEWAY}.gw{m}.example.com"
    obj: Obj = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": _meta(f"ing-{j:05d}", namespace_name(m), serial, annotations=dict(_ANNOTATION_SETS[j % len(_ANNOTATION_SETS)])),
        "spec": {
            "ingressClassName": "titanium",
            "rules": [
                {
                    "host": host,
                    "http": {
                        "paths": [
                            {
                                "path": f"/shop/{j % 11}",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": service_name(m, local % spn), "port": {"number": SERVICE_PORT}}},
                            },
                            {
                                "path": "/static/app.js",
                                "pathType": "Exact",
                                "backend": {"service": {"name": service_name(m, (local + 2) % spn), "port": {"name": "http"}}},
                            },
                        ]
                    },
                }
            ],
        },
    }
    if j % 10 == 0 and m < GATEWAYS:
        # Gateway m lives in namespace m: its Secrets are in the same namespace as this Ingress.
        obj["spec"]["tls"] = [{"hosts": [host], "secretName": f"tls-{m:02d}-{j % CERTS_PER_GATEWAY}"}]
    return obj


def base_objects(serial: _Serial) -> list[Obj]:
    objs: list[Obj] = [
        {
            "apiVersion": f"{GATEWAY_GROUP}/v1",
            "kind": "GatewayClass",
            "metadata": _meta("titanium", None, serial()),
            "spec": {"controllerName": CONTROLLER_NAME},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "metadata": _meta("titanium", None, serial()),
            "spec": {"controller": INGRESS_CONTROLLER_NAME},
        },
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": _meta(DATA_PLANE_NAMESPACE, None, serial(), labels={"kubernetes.io/metadata.name": DATA_PLANE_NAMESPACE}),
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(DATA_PLANE_SERVICE, DATA_PLANE_NAMESPACE, serial()),
            "spec": {
                "type": "LoadBalancer",
                "clusterIP": "10.96.0.50",
                "selector": {"app.kubernetes.io/name": "titanium", "app.kubernetes.io/component": "data-plane"},
                "ports": [
                    {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                    {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"},
                ],
            },
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}},
        },
    ]
    for i in range(NAMESPACES):
        name = namespace_name(i)
        objs.append(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(name, None, serial(), labels={"kubernetes.io/metadata.name": name})}
        )
    return objs


@functools.cache
def _secrets() -> tuple[Obj, ...]:
    """The 200 TLS Secrets (generated once per process: ~200 certificate signatures)."""
    out = []
    s = 100_000
    for g in range(GATEWAYS):
        for c in range(CERTS_PER_GATEWAY):
            s += 1
            out.append(tls_secret(namespace_name(g), f"tls-{g:02d}-{c}", cert_hosts(g, c), s))
    return tuple(out)


def gateway_objects(serial: _Serial) -> list[Obj]:
    objs = [_gateway(g, serial()) for g in range(GATEWAYS)]
    import copy

    objs.extend(copy.deepcopy(s) for s in _secrets())
    return objs


def iter_backends(n: int, serial: _Serial) -> Iterator[Obj]:
    spn = services_per_namespace(n)
    for m in range(NAMESPACES):
        for local in range(spn):
            yield _service(m, local, serial())
            yield endpoint_slice(m, local, serial())


def build(n: int, ingresses: bool = True, routes: bool = True) -> Workload:
    """The cluster of size ``n`` (see the module doc)."""
    serial = _Serial()
    objs = base_objects(serial)
    objs.extend(gateway_objects(serial))
    objs.extend(iter_backends(n, serial))
    if routes:
        objs.extend(httproute(j, n, serial()) for j in range(n))
    if ingresses:
        objs.extend(ingress(j, n, serial()) for j in range(n))
    return Workload(n=n, ingresses=ingresses, objects=objs)


def snapshot(objects: list[Obj], **kwargs: Any) -> Any:
    """A render Snapshot of ``objects`` without copying (they already carry server defaults)."""
    from titanium_gateway.render.snapshot import Snapshot

    return Snapshot.from_objects(objects, **kwargs)


def informer_objects(objects: list[Obj], data_plane_service: tuple[str, str]) -> tuple[list[Obj], str]:
    """``objects`` as the controller's informer caches hold them: each decoded from its own JSON
    text (as a watch event is: nothing shared between objects, or within one) and passed through
    the informer's transform of its kind (``controller/transform.py``: unread fields dropped,
    keys and short strings interned, equal values stored once). Returns ``(objects, how)``;
    without that module (an older tree), the decoded objects as they are."""
    import json

    decoded = (json.loads(json.dumps(o)) for o in objects)
    try:
        from titanium_gateway.controller.transform import transform_for
    except ImportError:
        return list(decoded), "decoded JSON objects"
    transforms: dict[str, Any] = {}
    out = []
    for o in decoded:
        fn = transforms.get(o["kind"])
        if fn is None:
            fn = transforms[o["kind"]] = transform_for(o["kind"], data_plane_service)
        out.append(fn(o))
    return out, "objects as the informer caches hold them (controller/transform.py)"


def routes_for_one_gateway(n: int, prepare: Any) -> list[Obj]:
    """The status figure's ``n`` HTTPRoutes, all attached to the first Gateway (``gw-00``), each
    passed through ``prepare`` (what the API server must not be sent stripped)."""
    gw_ns, gw_name = namespace_name(0), "gw-00"
    routes = []
    for j in range(n):
        r = prepare(httproute(j, n, 0))
        r["spec"]["parentRefs"] = [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gw_name,
                                    "namespace": gw_ns}]
        routes.append(r)
    return routes
