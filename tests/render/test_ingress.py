"""Unit tests of the Ingress translation (titanium_gateway.render.ingress) through the shared
render context: class selection, translation table, annotations, canary, events, TLS, status,
ordering against an HTTPRoute, determinism, robustness and speed."""

from __future__ import annotations

import base64
import datetime
import random
import re
from collections.abc import Mapping
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from titanium_gateway.render import ingress
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.ingress.routes import rewrite_transform
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.precedence import key_from_match, match_of
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.twp.emit import cluster_data, kind_data
from titanium_gateway.twp.model import Behavior, Forward, Route, Source

CLASS = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "IngressClass",
    "metadata": {"name": "titanium"},
    "spec": {"controller": "titanium.io/ingress-controller"},
}
FOREIGN_CLASS = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "IngressClass",
    "metadata": {"name": "nginx"},
    "spec": {"controller": "k8s.io/ingress-nginx"},
}


def service(name: str, ns: str = "apps", port: int = 8080, port_name: str = "http", ips: tuple[str, ...] = ("10.0.0.1",)) -> list[dict[str, Any]]:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"ports": [{"name": port_name, "port": port, "targetPort": 9000}]},
    }
    eps = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"namespace": ns, "name": f"{name}-x", "labels": {"kubernetes.io/service-name": name}},
        "ports": [{"name": port_name, "port": 9000}],
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips],
    }
    return [svc, eps]


def backend(name: str = "shop", port: int | str = 8080) -> dict[str, Any]:
    key = "number" if isinstance(port, int) else "name"
    return {"service": {"name": name, "port": {key: port}}}


def path(p: str = "/", path_type: str = "Prefix", be: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"path": p, "pathType": path_type, "backend": be or backend()}


def ing(
    name: str,
    *,
    ns: str = "apps",
    created: str = "2024-01-01T00:00:00Z",
    cls: str | None = "titanium",
    annotations: Mapping[str, Any] | None = None,
    rules: list[dict[str, Any]] | None = None,
    host: str | None = "shop.example.com",
    paths: list[dict[str, Any]] | None = None,
    default_backend: dict[str, Any] | None = None,
    tls: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if cls is not None:
        spec["ingressClassName"] = cls
    if rules is None:
        rule: dict[str, Any] = {"http": {"paths": paths if paths is not None else [path()]}}
        if host is not None:
            rule["host"] = host
        rules = [rule]
    spec["rules"] = rules
    if default_backend is not None:
        spec["defaultBackend"] = default_backend
    if tls is not None:
        spec["tls"] = tls
    meta: dict[str, Any] = {"namespace": ns, "name": name, "creationTimestamp": created, "uid": f"uid-{name}"}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def run(*objects: Any, options: RenderOptions | None = None, gateway_ports: Mapping[int, str] | None = None) -> RenderContext:
    flat: list[Any] = []
    for obj in objects:
        flat.extend(obj if isinstance(obj, list) else [obj])
    ctx = RenderContext(Snapshot.from_objects(flat), options or RenderOptions())
    if gateway_ports:
        ctx.gateway_ports.update(gateway_ports)
    ingress.translate(ctx)
    return ctx


def base(*objects: Any, **kwargs: Any) -> RenderContext:
    return run(CLASS, service("shop"), *objects, **kwargs)


def routes(ctx: RenderContext) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in ctx.ordered_routes()}


def route_ids(ctx: RenderContext) -> list[str]:
    return [r["id"] for r in ctx.ordered_routes()]


def events(ctx: RenderContext, reason: str | None = None) -> list[tuple[str, str, str]]:
    return [
        (f"{e.namespace}/{e.name}", e.reason, e.message)
        for e in ctx.events()
        if reason is None or e.reason == reason
    ]


def reasons(ctx: RenderContext) -> list[str]:
    return sorted(e.reason for e in ctx.events())


def only_route(ctx: RenderContext) -> dict[str, Any]:
    rs = ctx.ordered_routes()
    assert len(rs) == 1, rs
    return rs[0]


def cluster_of(ctx: RenderContext, route: Mapping[str, Any]) -> dict[str, Any]:
    return cluster_data(ctx.clusters[route["clusterId"]])


# -- certificates ---------------------------------------------------------------------------
def _pem_pair(cn: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


_CERT, _KEY = _pem_pair("shop.example.com")


def tls_secret(name: str, ns: str = "apps", *, ca: bytes | None = None, stype: str = "kubernetes.io/tls", crt: bytes = _CERT, key: bytes = _KEY) -> dict[str, Any]:
    data = {"tls.crt": base64.b64encode(crt).decode(), "tls.key": base64.b64encode(key).decode()}
    if ca is not None:
        data["ca.crt"] = base64.b64encode(ca).decode()
    return {"apiVersion": "v1", "kind": "Secret", "type": stype, "metadata": {"namespace": ns, "name": name}, "data": data}


# == class selection ========================================================================
@pytest.mark.parametrize(
    ("spec_class", "legacy", "default_class", "watch_legacy", "owned"),
    [
        ("titanium", None, False, False, True),
        ("nginx", None, False, False, False),
        ("missing", None, True, False, False),
        (None, None, False, False, False),
        (None, None, True, False, True),
        # legacy annotation, flag on
        (None, "titanium", False, True, True),
        (None, "mine", False, True, True),  # names an owned class
        (None, "nginx", False, True, False),
        # legacy annotation, flag off: ignored, except a foreign class is never ours
        (None, "titanium", False, False, False),
        (None, "titanium", True, False, True),
        (None, "nginx", True, False, False),
        (None, "nginx", True, True, False),
        # ingressClassName always wins over the annotation
        ("titanium", "nginx", False, True, True),
        ("nginx", "titanium", True, True, False),
    ],
)
def test_class_selection(spec_class: str | None, legacy: str | None, default_class: bool, watch_legacy: bool, owned: bool) -> None:
    mine = {
        "kind": "IngressClass",
        "metadata": {"name": "mine", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"} if default_class else {}},
        "spec": {"controller": "titanium.io/ingress-controller"},
    }
    cls = dict(CLASS)
    annotations = {"kubernetes.io/ingress.class": legacy} if legacy else None
    obj = ing("x", cls=spec_class, annotations=annotations)
    ctx = run(cls, mine, FOREIGN_CLASS, service("shop"), obj, options=RenderOptions(watch_legacy_annotation=watch_legacy))
    assert bool(ctx.ordered_routes()) is owned
    assert bool(ctx.statuses) is owned


def test_foreign_ingress_is_never_touched_or_reported() -> None:
    ctx = base(ing("other", cls="nginx", annotations={"titanium.io/bogus": "1", "titanium.io/limit-rps": "0"}))
    assert ctx.ordered_routes() == [] and ctx.events() == () and not ctx.statuses and not ctx.listeners


def test_custom_ingress_controller_name() -> None:
    cls = {"kind": "IngressClass", "metadata": {"name": "titanium"}, "spec": {"controller": "example.com/x"}}
    assert not run(cls, service("shop"), ing("a")).ordered_routes()
    opts = RenderOptions(ingress_controller_name="example.com/x")
    assert run(cls, service("shop"), ing("a"), options=opts).ordered_routes()


def test_default_class_annotation_must_be_true() -> None:
    cls = {
        "kind": "IngressClass",
        "metadata": {"name": "titanium", "annotations": {"ingressclass.kubernetes.io/is-default-class": "false"}},
        "spec": {"controller": "titanium.io/ingress-controller"},
    }
    assert not run(cls, service("shop"), ing("a", cls=None)).ordered_routes()


# == translation table ======================================================================
def test_quick_start_translation() -> None:
    ctx = base(ing("shop", annotations={"titanium.io/proxy-read-timeout": "30", "titanium.io/limit-rps": "50"}))
    r = only_route(ctx)
    assert r["id"] == "ingress/apps/shop/r0p0"
    assert r["match"] == {"host": "shop.example.com", "path": "/", "pathKind": "Prefix"}
    cluster = cluster_of(ctx, r)
    assert cluster["httpClient"] == {"requestTimeout": "00:00:30"}
    assert [d["id"] for d in cluster["destinations"]] == ["10.0.0.1:9000"]
    assert r["policies"] == [
        {"kind": "RateLimit", "parameters": {"requestsPerSecond": "50", "window": "00:00:01", "partition": "ingress/apps/shop"}}
    ]
    assert ctx.listeners == {8080: False}
    assert ctx.events() == ()


def test_path_types_and_hosts() -> None:
    obj = ing(
        "a",
        rules=[
            {"host": "Shop.Example.com", "http": {"paths": [path("/exact", "Exact"), path("/pre/", "Prefix"), path("/impl", "ImplementationSpecific")]}},
            {"host": "*.example.com", "http": {"paths": [path("/")]}},
            {"http": {"paths": [path("/")]}},
        ],
    )
    rs = routes(base(obj))
    assert rs["ingress/apps/a/r0p0"]["match"] == {"host": "shop.example.com", "path": "/exact", "pathKind": "Exact"}
    assert rs["ingress/apps/a/r0p1"]["match"] == {"host": "shop.example.com", "path": "/pre", "pathKind": "Prefix"}
    assert rs["ingress/apps/a/r0p2"]["match"] == {"host": "shop.example.com", "path": "/impl", "pathKind": "Prefix"}
    assert rs["ingress/apps/a/r1p0"]["match"] == {"host": "*.example.com", "path": "/", "pathKind": "Prefix"}
    assert rs["ingress/apps/a/r2p0"]["match"] == {"path": "/", "pathKind": "Prefix"}
    # exact host, then wildcard, then any; within a host exact path, then the longest prefix
    assert [r["id"] for r in rs.values()] == [
        "ingress/apps/a/r0p0",
        "ingress/apps/a/r0p2",
        "ingress/apps/a/r0p1",
        "ingress/apps/a/r1p0",
        "ingress/apps/a/r2p0",
    ]


def test_ordering_older_wins_for_same_host_and_path_across_ingresses() -> None:
    ctx = base(
        ing("young", created="2024-02-01T00:00:00Z", paths=[path("/x", "ImplementationSpecific")]),
        ing("old", created="2024-01-01T00:00:00Z", paths=[path("/x", "Prefix")]),
    )
    # ImplementationSpecific is a Prefix: the same route, older first, none dropped, and the
    # newer one (never reached) reports RouteConflict (spec audit F8)
    assert route_ids(ctx) == ["ingress/apps/old/r0p0", "ingress/apps/young/r0p0"]
    assert reasons(ctx) == ["RouteConflict"]


def test_implementation_specific_equal_to_older_prefix_is_a_route_conflict() -> None:
    """Spec audit F8 repro: `a` (older) Prefix /x, `b` (newer) ImplementationSpecific /x/ on the
    same host are the same data-plane match: RouteConflict on `b`; the canary `c` of /x
    (ImplementationSpecific) binds to the route that is reached, `a`'s."""
    ctx = base(
        service("shop-v2"),
        ing("a", created="2024-01-01T00:00:00Z", host="a.com", paths=[path("/x", "Prefix")]),
        ing("b", created="2024-02-01T00:00:00Z", host="a.com", paths=[path("/x/", "ImplementationSpecific")]),
        ing(
            "c",
            created="2024-03-01T00:00:00Z",
            host="a.com",
            annotations={"titanium.io/canary": "true", "titanium.io/canary-weight": "20"},
            paths=[path("/x", "ImplementationSpecific", be=backend("shop-v2"))],
        ),
    )
    assert route_ids(ctx) == ["ingress/apps/a/r0p0", "ingress/apps/b/r0p0"]
    assert events(ctx) == [
        (
            "apps/b",
            "RouteConflict",
            "host a.com path /x (ImplementationSpecific) is owned by the older Ingress apps/a "
            "(host a.com path /x (Prefix): the same match, ImplementationSpecific is a Prefix)",
        )
    ]
    rs = routes(ctx)
    assert rs["ingress/apps/a/r0p0"]["clusters"] == [
        {"clusterId": "svc-apps.shop.8080", "weight": 80},
        {"clusterId": "svc-apps.shop-v2.8080", "weight": 20},
    ]
    assert rs["ingress/apps/b/r0p0"]["clusterId"] == "svc-apps.shop.8080"  # no canary on the dead route


def test_implementation_specific_older_than_prefix_owns_it() -> None:
    ctx = base(
        ing("a", created="2024-01-01T00:00:00Z", paths=[path("/x", "ImplementationSpecific")]),
        ing("b", created="2024-02-01T00:00:00Z", paths=[path("/x", "Prefix"), path("/x", "Exact")]),
    )
    assert [(n, r) for n, r, _ in events(ctx)] == [("apps/b", "RouteConflict")]  # Exact is another match
    assert "(ImplementationSpecific)" in events(ctx)[0][2]


def test_default_backend_is_last_and_owned_by_the_oldest() -> None:
    ctx = base(
        ing("b", created="2024-01-02T00:00:00Z", default_backend=backend(), host=None, paths=[path("/")]),
        ing("a", created="2024-01-01T00:00:00Z", default_backend=backend(), paths=[path("/z")]),
    )
    ids = route_ids(ctx)
    assert ids[-2:] == ["ingress/apps/a/default", "ingress/apps/b/default"]
    assert routes(ctx)["ingress/apps/a/default"]["match"] == {}
    assert events(ctx) == [("apps/b", "RouteConflict", "the default backend is owned by the older Ingress apps/a")]


def test_route_conflict_same_host_path_type() -> None:
    ctx = base(
        ing("new", created="2024-03-01T00:00:00Z", paths=[path("/api/")]),
        ing("old", created="2024-01-01T00:00:00Z", paths=[path("/api")]),
    )
    assert route_ids(ctx) == ["ingress/apps/old/r0p0", "ingress/apps/new/r0p0"]
    assert events(ctx) == [
        ("apps/new", "RouteConflict", "host shop.example.com path /api (Prefix) is owned by the older Ingress apps/old")
    ]


def test_same_creation_time_tie_breaks_by_namespace_then_name() -> None:
    ctx = run(CLASS, service("shop", ns="a"), service("shop", ns="b"), ing("z", ns="b"), ing("y", ns="a"))
    assert route_ids(ctx) == ["ingress/a/y/r0p0", "ingress/b/z/r0p0"]
    assert [e[0] for e in events(ctx, "RouteConflict")] == ["b/z"]


def test_backend_port_by_number_and_name_share_one_cluster() -> None:
    ctx = base(ing("a", paths=[path("/n", be=backend("shop", 8080)), path("/s", be=backend("shop", "http"))]))
    rs = routes(ctx)
    assert rs["ingress/apps/a/r0p0"]["clusterId"] == rs["ingress/apps/a/r0p1"]["clusterId"] == "svc-apps.shop.8080"


def test_service_without_ready_endpoint_gives_empty_cluster() -> None:
    ctx = run(CLASS, service("shop", ips=()), ing("a"))
    assert cluster_of(ctx, only_route(ctx))["destinations"] == []


def test_backend_resource_is_rejected() -> None:
    be = {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "b"}}
    ctx = base(ing("a", paths=[path("/r", be=be), path("/ok")]))
    rs = routes(ctx)
    assert rs["ingress/apps/a/r0p0"]["directResponse"]["status"] == 500
    assert rs["ingress/apps/a/r0p0"]["directResponse"]["body"].startswith("UnsupportedBackend")
    assert "clusterId" in rs["ingress/apps/a/r0p1"]  # the other path still serves
    assert reasons(ctx) == ["UnsupportedBackend"]


@pytest.mark.parametrize(
    ("be", "reason"),
    [
        ({"service": {"name": "shop"}}, "InvalidBackend"),
        ({"service": {"name": "shop", "port": {}}}, "InvalidBackend"),
        ({"service": {"name": "shop", "port": {"number": 0}}}, "InvalidBackend"),
        ({"service": {"port": {"number": 8080}}}, "InvalidBackend"),
        ({}, "InvalidBackend"),
        (None, "InvalidBackend"),
        (backend("nope"), "BackendNotFound"),
        (backend("shop", 9999), "BackendNotFound"),
        (backend("shop", "grpc"), "BackendNotFound"),
    ],
)
def test_backend_errors_answer_500(be: Any, reason: str) -> None:
    obj = ing("a", paths=[{"path": "/", "pathType": "Prefix", "backend": be}])
    ctx = base(obj)
    r = only_route(ctx)
    assert r["directResponse"]["status"] == 500 and r["directResponse"]["body"].startswith(reason)
    assert reasons(ctx) == [reason]


def test_external_name_service_reports_only_ingress_reasons() -> None:
    external = {
        "kind": "Service",
        "metadata": {"namespace": "apps", "name": "ext"},
        "spec": {"type": "ExternalName", "externalName": "example.org", "ports": [{"name": "http", "port": 8080}]},
    }
    ctx = base(external, ing("a", paths=[path("/", be=backend("ext"))]))
    r = only_route(ctx)
    if "directResponse" in r:  # the core rejects ExternalName backends
        assert reasons(ctx) == ["InvalidBackend"]
        assert r["directResponse"]["body"].startswith("InvalidBackend")
    else:
        assert cluster_of(ctx, r)["destinations"] == []


def test_invalid_path_relative_answers_500_for_its_own_match_and_others_serve() -> None:
    """Spec audit F10: never dropped; a 500 route on the path as written, in the degraded tier
    (after every normal route), so it never shadows another path."""
    ctx = base(ing("a", paths=[path("api"), path("/ok"), path("api/", "ImplementationSpecific"), path("rel", "Exact")]))
    rs = routes(ctx)
    assert route_ids(ctx) == ["ingress/apps/a/r0p1", "ingress/apps/a/r0p3", "ingress/apps/a/r0p0", "ingress/apps/a/r0p2"]
    assert rs["ingress/apps/a/r0p0"] == {
        "id": "ingress/apps/a/r0p0",
        "order": 3,
        "match": {"host": "shop.example.com", "path": "api", "pathKind": "Prefix"},
        "directResponse": {"status": 500, "body": "InvalidPath"},
    }
    assert "rule 0 path 0: path 'api' is not an absolute path" in [e.message for e in ctx.events()]
    assert rs["ingress/apps/a/r0p2"]["match"] == {"host": "shop.example.com", "path": "api", "pathKind": "Prefix"}
    assert rs["ingress/apps/a/r0p3"]["match"] == {"host": "shop.example.com", "path": "rel", "pathKind": "Exact"}
    assert rs["ingress/apps/a/r0p3"]["directResponse"]["status"] == 500
    assert "clusterId" in rs["ingress/apps/a/r0p1"]
    assert events(ctx, "InvalidPath")[0] == ("apps/a", "InvalidPath", "rule 0 path 0: path 'api' is not an absolute path")
    assert reasons(ctx) == ["InvalidPath"] * 3


def test_invalid_path_route_never_shadows_other_paths_or_objects() -> None:
    ctx = base(
        ing("a", created="2024-01-01T00:00:00Z", paths=[path("x"), path("/a b")]),
        ing("b", created="2024-02-01T00:00:00Z", host=None, paths=[path("/")]),
    )
    ids = route_ids(ctx)
    assert ids[0] == "ingress/apps/b/r0p0"  # a valid host-less / beats both 500 routes
    assert set(ids[1:]) == {"ingress/apps/a/r0p0", "ingress/apps/a/r0p1"}
    assert routes(ctx)["ingress/apps/a/r0p1"]["match"] == {"host": "shop.example.com", "path": "/a b", "pathKind": "Prefix"}


def test_invalid_path_type_answers_500_on_that_exact_path_only() -> None:
    ctx = base(ing("a", paths=[path("/x", "Regex"), path("/")]))
    rs = routes(ctx)
    assert rs["ingress/apps/a/r0p0"]["match"] == {"host": "shop.example.com", "path": "/x", "pathKind": "Exact"}
    assert rs["ingress/apps/a/r0p0"]["directResponse"]["status"] == 500
    assert "clusterId" in rs["ingress/apps/a/r0p1"]
    assert reasons(ctx) == ["InvalidPath"]


def test_invalid_path_type_route_never_shadows_a_valid_rule() -> None:
    ctx = base(
        ing("a", created="2024-01-01T00:00:00Z", paths=[path("/x", "Regex")]),
        ing("b", created="2024-02-01T00:00:00Z", paths=[path("/")]),
    )
    assert route_ids(ctx) == ["ingress/apps/b/r0p0", "ingress/apps/a/r0p0"]


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ("/a b", {"path": "/a b", "pathKind": "Prefix"}),
        ("/a?x", {"path": "/a?x", "pathKind": "Prefix"}),
        ("", {}),  # an unspecified path matches every path (of the host)
        (None, {}),
        (5, {}),
    ],
)
def test_invalid_path_values(bad: Any, match: dict[str, Any]) -> None:
    ctx = base(ing("a", default_backend=backend(), paths=[{"path": bad, "pathType": "Prefix", "backend": backend()}]))
    assert reasons(ctx) == ["InvalidPath"]
    r = routes(ctx)["ingress/apps/a/r0p0"]
    assert r["match"] == {"host": "shop.example.com", **match}
    assert r["directResponse"] == {"status": 500, "body": "InvalidPath"}
    assert route_ids(ctx)[-1] == "ingress/apps/a/default"  # the 500 route sorts before the defaultBackend only


def test_missing_path_type_is_invalid() -> None:
    ctx = base(ing("a", paths=[{"path": "/", "backend": backend()}]))
    assert reasons(ctx) == ["InvalidPath"]
    assert only_route(ctx)["directResponse"]["status"] == 500


# == annotations ============================================================================
def served(annotations: Mapping[str, str], *objects: Any, paths: list[dict[str, Any]] | None = None) -> tuple[RenderContext, dict[str, Any]]:
    ctx = base(*objects, ing("a", annotations=annotations, paths=paths))
    rs = ctx.ordered_routes()
    assert all("directResponse" not in r for r in rs), rs
    return ctx, rs[0]


def assert_invalid(annotations: Mapping[str, str], *objects: Any) -> RenderContext:
    obj = ing("a", annotations=annotations, paths=[path("/x"), path("/y", "Exact")], default_backend=backend())
    ctx = base(*objects, obj)
    rs = ctx.ordered_routes()
    assert len(rs) == 3
    for r in rs:  # EVERY rule of the Ingress answers 500
        assert r["directResponse"]["status"] == 500 and r["directResponse"]["body"].startswith("InvalidAnnotation")
        assert "policies" not in r and "transforms" not in r
    assert "InvalidAnnotation" in reasons(ctx)
    return ctx


def test_ssl_redirect_false_accepted_true_rejected() -> None:
    _, r = served({"titanium.io/ssl-redirect": "false"})
    assert "clusterId" in r and "policies" not in r
    ctx = assert_invalid({"titanium.io/ssl-redirect": "true"})
    assert "loop" in events(ctx, "InvalidAnnotation")[0][2]


def _apply_regex(path_value: str, transform: Any) -> str:
    params = transform["parameters"] if isinstance(transform, Mapping) else kind_data(transform)["parameters"]
    out = re.sub(params["pattern"], lambda _m: params["replacement"], path_value, count=1)
    return out or "/"


@pytest.mark.parametrize(
    ("ing_path", "ptype", "target", "req", "expected"),
    [
        ("/foo", "Prefix", "/bar", "/foo", "/bar"),
        ("/foo", "Prefix", "/bar", "/foo/x/y", "/bar/x/y"),
        ("/foo/", "Prefix", "/bar/", "/foo/x", "/bar/x"),
        ("/foo", "Prefix", "/", "/foo/x", "/x"),
        ("/foo", "Prefix", "/", "/foo", "/"),
        ("/foo", "ImplementationSpecific", "/bar", "/foo/x", "/bar/x"),
        ("/", "Prefix", "/bar", "/x", "/bar/x"),
        ("/", "Prefix", "/bar", "/", "/bar"),
        ("/a.b", "Exact", "/new", "/a.b", "/new"),
        ("/v1(x)", "Prefix", "/v2", "/v1(x)/y", "/v2/y"),
    ],
)
def test_rewrite_target(ing_path: str, ptype: str, target: str, req: str, expected: str) -> None:
    _, r = served({"titanium.io/rewrite-target": target}, paths=[path(ing_path, ptype)])
    (transform,) = r["transforms"]
    assert transform["kind"] == "PathRegexReplace"
    assert _apply_regex(req, transform) == expected


def test_rewrite_target_exact_does_not_touch_other_paths() -> None:
    t = rewrite_transform("/a.b", "Exact", "/new")
    assert t is not None
    assert _apply_regex("/aXb", t) == "/aXb"


def test_rewrite_target_identity_emits_no_transform() -> None:
    _, r = served({"titanium.io/rewrite-target": "/"}, paths=[path("/")])
    assert "transforms" not in r


def test_rewrite_target_invalid() -> None:
    assert_invalid({"titanium.io/rewrite-target": "/x/$1"})
    assert_invalid({"titanium.io/rewrite-target": "x"})


@pytest.mark.parametrize(("value", "timespan"), [("1", "00:00:01"), ("90", "00:01:30"), ("3600", "01:00:00")])
def test_proxy_read_timeout(value: str, timespan: str) -> None:
    ctx, r = served({"titanium.io/proxy-read-timeout": value})
    cluster = cluster_of(ctx, r)
    assert cluster["httpClient"]["requestTimeout"] == timespan
    assert cluster["id"].startswith("svc-apps.shop.8080-")  # its own cluster


@pytest.mark.parametrize("value", ["0", "3601", "abc"])
def test_proxy_read_timeout_invalid(value: str) -> None:
    assert_invalid({"titanium.io/proxy-read-timeout": value})


@pytest.mark.parametrize(("value", "size"), [("8m", "8388608"), ("512k", "524288"), ("1g", "1073741824"), ("1000", "1000"), ("0", "0")])
def test_proxy_body_size(value: str, size: str) -> None:
    _, r = served({"titanium.io/proxy-body-size": value})
    assert r["policies"] == [{"kind": "MaxRequestBodySize", "parameters": {"bytes": size}}]


def test_proxy_body_size_invalid() -> None:
    assert_invalid({"titanium.io/proxy-body-size": "8 MB"})


def test_backend_protocol_https_h2c_grpc_own_clusters() -> None:
    plain_ctx, plain = served({})
    ctx, https = served({"titanium.io/backend-protocol": "HTTPS"})
    cluster = cluster_of(ctx, https)
    assert all(d["useHttps"] for d in cluster["destinations"])
    assert https["clusterId"] != plain["clusterId"]
    ids = {plain["clusterId"], https["clusterId"]}
    for proto in ("H2C", "GRPC"):
        c, r = served({"titanium.io/backend-protocol": proto})
        assert not any(d["useHttps"] for d in cluster_of(c, r)["destinations"])
        assert r["clusterId"] not in ids
        ids.add(r["clusterId"])
    _, http = served({"titanium.io/backend-protocol": "HTTP"})
    assert http["clusterId"] == plain["clusterId"]  # the default changes nothing


def test_backend_protocol_invalid() -> None:
    assert_invalid({"titanium.io/backend-protocol": "FCGI"})


def test_affinity_cookie() -> None:
    ctx, r = served({"titanium.io/affinity": "cookie"})
    cluster = cluster_of(ctx, r)
    assert cluster["sessionAffinity"] == {"policy": "Cookie", "name": "titanium-affinity"}
    assert cluster["id"] != "svc-apps.shop.8080"
    assert_invalid({"titanium.io/affinity": "ip"})


@pytest.mark.parametrize(
    ("value", "algorithm"),
    [("round_robin", "RoundRobin"), ("random", "Random"), ("least_conn", "LeastRequests"), ("ewma", "LeastTime"), ("p2c", "PowerOfTwoChoices")],
)
def test_load_balance(value: str, algorithm: str) -> None:
    ctx, r = served({"titanium.io/load-balance": value})
    assert cluster_of(ctx, r)["algorithm"] == algorithm


def test_load_balance_invalid() -> None:
    assert_invalid({"titanium.io/load-balance": "ip_hash"})


def test_whitelist_source_range() -> None:
    _, r = served({"titanium.io/whitelist-source-range": "10.0.0.0/8, 192.168.0.1, 2001:db8::/32"})
    assert r["policies"] == [{"kind": "IpAllowDeny", "parameters": {"allow": ["10.0.0.0/8", "192.168.0.1/32", "2001:db8::/32"]}}]
    assert_invalid({"titanium.io/whitelist-source-range": "10.0.0.0/8,bogus"})


@pytest.mark.parametrize("value", ["1", "1000000"])
def test_limit_rps_bounds(value: str) -> None:
    _, r = served({"titanium.io/limit-rps": value})
    assert r["policies"][0]["parameters"]["requestsPerSecond"] == value


@pytest.mark.parametrize("value", ["0", "1000001"])
def test_limit_rps_invalid(value: str) -> None:
    assert_invalid({"titanium.io/limit-rps": value})


def test_cors_allow_origin() -> None:
    _, r = served({"titanium.io/cors-allow-origin": "*"})
    assert r["policies"] == [{"kind": "Cors", "parameters": {"allowOrigins": ["*"]}}]
    _, r = served({"titanium.io/cors-allow-origin": "https://app.example.com,https://b.example.com:8443"})
    assert r["policies"][0]["parameters"]["allowOrigins"] == ["https://app.example.com", "https://b.example.com:8443"]
    assert_invalid({"titanium.io/cors-allow-origin": "app.example.com"})


def test_auth_url() -> None:
    _, r = served({"titanium.io/auth-url": "http://auth.apps.svc:8080/check"})
    assert r["policies"] == [{"kind": "ExtAuth", "parameters": {"url": "http://auth.apps.svc:8080/check", "timeout": "00:00:05"}}]
    assert_invalid({"titanium.io/auth-url": "https://u:p@auth.example.com/"})


def test_policy_order_is_fixed() -> None:
    _, r = served(
        {
            "titanium.io/auth-url": "https://auth.example.com/",
            "titanium.io/proxy-body-size": "1m",
            "titanium.io/cors-allow-origin": "*",
            "titanium.io/limit-rps": "5",
            "titanium.io/whitelist-source-range": "10.0.0.0/8",
        }
    )
    assert [p["kind"] for p in r["policies"]] == ["IpAllowDeny", "RateLimit", "Cors", "MaxRequestBodySize", "ExtAuth"]


def test_upstream_tls_secret_files_and_cluster() -> None:
    ca, _ = _pem_pair("ca.internal")
    secret = tls_secret("backend-mtls", ca=ca)
    ctx, r = served({"titanium.io/backend-protocol": "HTTPS", "titanium.io/upstream-tls-secret": "backend-mtls"}, secret)
    cluster = cluster_of(ctx, r)
    assert cluster["httpClient"]["tls"] == {
        "caFile": "upstream.apps.backend-mtls.ca.crt",
        "certFile": "upstream.apps.backend-mtls.tls.crt",
        "keyFile": "upstream.apps.backend-mtls.tls.key",
    }
    assert all(d["useHttps"] for d in cluster["destinations"])
    assert ctx.tls_files["upstream.apps.backend-mtls.ca.crt"] == ca
    assert ctx.tls_files["upstream.apps.backend-mtls.tls.crt"] == _CERT
    assert ctx.tls_files["upstream.apps.backend-mtls.tls.key"] == _KEY


def test_upstream_tls_secret_without_ca_has_no_ca_file() -> None:
    ctx, r = served({"titanium.io/backend-protocol": "HTTPS", "titanium.io/upstream-tls-secret": "apps/m"}, tls_secret("m"))
    assert set(cluster_of(ctx, r)["httpClient"]["tls"]) == {"certFile", "keyFile"}


@pytest.mark.parametrize(
    ("objects", "value", "fragment"),
    [
        ((), "nope", "not found"),
        ((tls_secret("m", stype="Opaque"),), "m", "Opaque"),
        ((tls_secret("m", ca=b"garbage"),), "m", "ca.crt"),
        ((tls_secret("m", key=b"garbage"),), "m", "tls.key"),
        ((tls_secret("m", ns="other"),), "other/m", "namespace"),
    ],
)
def test_upstream_tls_secret_invalid(objects: tuple[Any, ...], value: str, fragment: str) -> None:
    ctx = assert_invalid({"titanium.io/backend-protocol": "HTTPS", "titanium.io/upstream-tls-secret": value}, *objects)
    assert fragment in events(ctx, "InvalidAnnotation")[0][2]
    assert not any(k.startswith("upstream.") for k in ctx.tls_files)


def test_upstream_tls_secret_needs_https() -> None:
    assert_invalid({"titanium.io/upstream-tls-secret": "m"}, tls_secret("m"))


def test_unknown_annotation_warns_and_keeps_serving() -> None:
    ctx, r = served({"titanium.io/proxy-connect-timeout": "5", "nginx.ingress.kubernetes.io/ssl-redirect": "true"})
    assert "clusterId" in r
    assert events(ctx) == [("apps/a", "UnknownAnnotation", "titanium.io/proxy-connect-timeout is not a known annotation; it is ignored")]


def test_routes_answering_500_add_no_cluster() -> None:
    ctx = base(ing("a", annotations={"titanium.io/limit-rps": "0", "titanium.io/proxy-read-timeout": "9"}))
    assert ctx.clusters == {}
    ctx = base(service("shop-v2"), ing("shop", paths=[path("/", be=backend("gone"))]), canary(canary_weight="10"))
    assert ctx.clusters == {}  # the primary answers 500, so its canary's cluster is not emitted


def test_invalid_annotation_event_names_each_annotation() -> None:
    ctx = assert_invalid({"titanium.io/limit-rps": "0", "titanium.io/affinity": "ip"})
    msgs = [e[2] for e in events(ctx, "InvalidAnnotation")]
    assert len(msgs) == 2
    assert msgs[0].startswith("titanium.io/affinity") and msgs[1].startswith("titanium.io/limit-rps")


# == canary =================================================================================
def canary(name: str = "shop-canary", created: str = "2024-02-01T00:00:00Z", svc: str = "shop-v2", **ann: str) -> dict[str, Any]:
    annotations = {"titanium.io/canary": "true"}
    annotations.update({f"titanium.io/{k.replace('_', '-')}": v for k, v in ann.items()})
    return ing(name, created=created, annotations=annotations, paths=[path("/", be=backend(svc))])


def test_canary_weight() -> None:
    ctx = base(service("shop-v2", ips=("10.0.0.2",)), ing("shop"), canary(canary_weight="10"))
    r = only_route(ctx)
    assert r["id"] == "ingress/apps/shop/r0p0"
    assert r["clusters"] == [
        {"clusterId": "svc-apps.shop.8080", "weight": 90},
        {"clusterId": "svc-apps.shop-v2.8080", "weight": 10},
    ]
    assert ctx.events() == ()


@pytest.mark.parametrize(("w", "primary"), [("0", 100), ("100", 0)])
def test_canary_weight_bounds(w: str, primary: int) -> None:
    ctx = base(service("shop-v2"), ing("shop"), canary(canary_weight=w))
    assert [c["weight"] for c in only_route(ctx)["clusters"]] == [primary, 100 - primary]


def test_canary_by_header_route_precedes_primary() -> None:
    ctx = base(
        service("shop-v2"),
        ing("shop", annotations={"titanium.io/limit-rps": "7", "titanium.io/proxy-read-timeout": "5"}),
        canary(canary_by_header="X-Canary", canary_weight="25", limit_rps="99"),
    )
    rs = ctx.ordered_routes()
    assert [r["id"] for r in rs] == ["ingress/apps/shop-canary/r0p0", "ingress/apps/shop/r0p0"]
    header, primary = rs
    assert header["match"] == {"host": "shop.example.com", "path": "/", "pathKind": "Prefix", "headers": {"x-canary": "always"}}
    assert header["clusterId"] == primary["clusters"][1]["clusterId"]
    assert [c["weight"] for c in primary["clusters"]] == [75, 25]
    # every other annotation comes from the primary (limit-rps 7, its timeout on both clusters)
    for r in rs:
        assert r["policies"][0]["parameters"]["requestsPerSecond"] == "7"
    assert cluster_of(ctx, header)["httpClient"] == {"requestTimeout": "00:00:05"}


def test_canary_by_header_alone_keeps_weight_zero() -> None:
    ctx = base(service("shop-v2"), ing("shop"), canary(canary_by_header="X-Canary"))
    primary = routes(ctx)["ingress/apps/shop/r0p0"]
    assert [c["weight"] for c in primary["clusters"]] == [100, 0]


def test_canary_contributes_only_its_backend() -> None:
    obj = canary(canary_weight="50")
    obj["spec"]["tls"] = [{"secretName": "shop-tls"}]
    ctx = base(service("shop-v2"), tls_secret("shop-tls"), ing("shop"), obj)
    assert route_ids(ctx) == ["ingress/apps/shop/r0p0"]
    assert ctx.certificate_entries() == ()
    assert {s.name for s in ctx.sorted_statuses()} == {"shop", "shop-canary"}


def test_canary_without_primary() -> None:
    ctx = base(service("shop-v2"), canary(canary_weight="50"))
    assert ctx.ordered_routes() == []
    assert reasons(ctx) == ["CanaryWithoutPrimary"]


def test_canary_matches_host_path_and_type_exactly() -> None:
    c = canary(canary_weight="50")
    c["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = "Exact"
    ctx = base(service("shop-v2"), ing("shop"), c)
    assert reasons(ctx) == ["CanaryWithoutPrimary"]
    assert "clusterId" in only_route(ctx)
    c["spec"]["rules"][0]["host"] = "other.example.com"
    c["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = "Prefix"
    ctx = base(service("shop-v2"), ing("shop"), c)
    assert reasons(ctx) == ["CanaryWithoutPrimary"]


def test_implementation_specific_canary_of_a_prefix_primary() -> None:
    c = canary(canary_weight="50")
    c["spec"]["rules"][0]["http"]["paths"][0]["pathType"] = "ImplementationSpecific"
    ctx = base(service("shop-v2"), ing("shop"), c)  # ImplementationSpecific is a Prefix (F8)
    assert ctx.events() == ()
    assert [x["weight"] for x in only_route(ctx)["clusters"]] == [50, 50]


def test_second_canary_conflicts() -> None:
    ctx = base(
        service("shop-v2"),
        service("shop-v3"),
        ing("shop"),
        canary("c1", created="2024-02-01T00:00:00Z", canary_weight="10"),
        canary("c2", created="2024-03-01T00:00:00Z", svc="shop-v3", canary_weight="30"),
    )
    r = only_route(ctx)
    assert r["clusters"][1] == {"clusterId": "svc-apps.shop-v2.8080", "weight": 10}
    assert events(ctx) == [
        ("apps/c2", "CanaryConflict", "host shop.example.com path / (Prefix) of Ingress apps/shop already has the canary apps/c1")
    ]


def test_canary_with_missing_backend_does_nothing() -> None:
    ctx = base(ing("shop"), canary(canary_weight="10", svc="gone"))
    assert "clusterId" in only_route(ctx)
    assert reasons(ctx) == ["BackendNotFound"]


def test_canary_annotations_need_canary_true() -> None:
    ctx = assert_invalid({"titanium.io/canary-weight": "10"})
    assert "needs titanium.io/canary" in events(ctx, "InvalidAnnotation")[0][2]
    assert_invalid({"titanium.io/canary-by-header": "X-Canary"})
    assert_invalid({"titanium.io/canary": "maybe"})


def test_invalid_canary_does_nothing_and_primary_serves() -> None:
    ctx = base(service("shop-v2"), ing("shop"), canary(canary_weight="101"))
    assert "clusterId" in only_route(ctx)
    assert reasons(ctx) == ["InvalidAnnotation"]


def test_canary_of_default_backend() -> None:
    primary = ing("shop", default_backend=backend(), paths=[])
    c = ing("c", created="2024-05-01T00:00:00Z", annotations={"titanium.io/canary": "true", "titanium.io/canary-weight": "5"}, paths=[], default_backend=backend("shop-v2"))
    ctx = base(service("shop-v2"), primary, c)
    r = routes(ctx)["ingress/apps/shop/default"]
    assert [c["weight"] for c in r["clusters"]] == [95, 5]


# == TLS, listeners, ports ==================================================================
def test_tls_binding_and_https_listener() -> None:
    ctx = base(tls_secret("shop-tls"), ing("a", tls=[{"hosts": ["Shop.Example.com"], "secretName": "shop-tls"}]))
    (entry,) = ctx.certificate_entries()
    assert entry.file == "apps.shop-tls.pfx" and entry.hosts == ("shop.example.com",) and not entry.default
    assert "apps.shop-tls.pfx" in ctx.tls_files
    assert ctx.listeners == {8080: False, 8443: True}
    assert ctx.events() == ()


def test_tls_without_hosts_is_the_default_certificate() -> None:
    ctx = base(tls_secret("shop-tls"), ing("a", tls=[{"secretName": "shop-tls"}]))
    (entry,) = ctx.certificate_entries()
    assert entry.default and entry.hosts == ()


@pytest.mark.parametrize(
    ("objects", "fragment"),
    [
        ((), "not found"),
        ((tls_secret("shop-tls", stype="Opaque"),), "kubernetes.io/tls"),
        ((tls_secret("shop-tls", crt=b"nope"),), "tls.crt"),
    ],
)
def test_invalid_tls_keeps_http(objects: tuple[Any, ...], fragment: str) -> None:
    ctx = base(*objects, ing("a", tls=[{"hosts": ["shop.example.com"], "secretName": "shop-tls"}]))
    assert "clusterId" in only_route(ctx)
    ((_, reason, message),) = events(ctx)
    assert reason == "InvalidTLS" and fragment in message
    assert ctx.listeners == {8080: False}
    assert ctx.certificate_entries() == ()


def test_tls_on_unmapped_https_port() -> None:
    opts = RenderOptions(port_map={80: 8080})  # 443 -> 443, not a data-plane port
    ctx = base(tls_secret("shop-tls"), ing("a", tls=[{"secretName": "shop-tls"}]), options=opts)
    assert reasons(ctx) == ["PortUnavailable"]  # one cause, one event (spec audit F5)
    assert ctx.listeners == {8080: False}
    assert "clusterId" in only_route(ctx)


def test_http_port_not_in_data_plane_ports() -> None:
    ctx = base(ing("a"), options=RenderOptions(data_plane_ports=(8443,)))
    assert reasons(ctx) == ["PortUnavailable"]
    assert 8080 not in ctx.listeners


def test_gateway_listener_with_other_protocol_makes_port_unavailable() -> None:
    ctx = base(ing("a"), gateway_ports={8080: "HTTPS"})
    assert reasons(ctx) == ["PortUnavailable"]
    ctx = base(tls_secret("t"), ing("a", tls=[{"secretName": "t"}]), gateway_ports={8443: "HTTP"})
    assert reasons(ctx) == ["PortUnavailable"]


def test_https_port_clash_is_one_event_and_does_not_mask_a_missing_secret() -> None:
    """Spec audit F5: the port clash is reported once (PortUnavailable), not as an InvalidTLS per
    tls entry; a Secret that is genuinely missing or invalid is still InvalidTLS."""
    ctx = base(
        tls_secret("c"),
        tls_secret("opaque", stype="Opaque"),
        ing("a", tls=[{"secretName": "c"}, {"secretName": "missing"}, {"secretName": "opaque"}, {}]),
        gateway_ports={8443: "HTTP"},
    )
    evs = events(ctx)
    assert [r for _, r, _ in evs].count("PortUnavailable") == 1
    invalid = sorted(m for _, r, m in evs if r == "InvalidTLS")
    assert len(invalid) == 3, evs
    assert any("tls 1" in m and "apps/missing not found" in m for m in invalid)
    assert any("tls 2" in m and "kubernetes.io/tls" in m for m in invalid)
    assert any("tls 3" in m and "no secretName" in m for m in invalid)
    assert not any("Secret c" in m or "apps/c" in m for m in invalid)
    assert ("apps/a", "PortUnavailable", "HTTPS port 8443 is used by a Gateway listener with protocol HTTP") in evs
    assert ctx.certificate_entries() == () and ctx.tls_files == {}
    assert ctx.listeners == {8080: False}
    assert "clusterId" in only_route(ctx)


def test_gateway_listener_same_protocol_is_shared() -> None:
    ctx = base(ing("a"), gateway_ports={8080: "HTTP"})
    assert ctx.events() == ()


# == status =================================================================================
def dp_service(status: Any = None, cluster_ip: str | None = "10.96.0.10") -> dict[str, Any]:
    svc: dict[str, Any] = {"kind": "Service", "metadata": {"namespace": "gateway-system", "name": "titanium"}, "spec": {}}
    if cluster_ip:
        svc["spec"]["clusterIP"] = cluster_ip
    if status is not None:
        svc["status"] = {"loadBalancer": {"ingress": status}}
    return svc


@pytest.mark.parametrize(
    ("svc", "expected"),
    [
        (dp_service([{"ip": "203.0.113.7"}]), [{"ip": "203.0.113.7"}]),
        (dp_service([{"hostname": "lb.example.com", "ports": [{"port": 80}]}]), [{"hostname": "lb.example.com"}]),
        (dp_service(None), [{"ip": "10.96.0.10"}]),
        (dp_service([], cluster_ip="None"), []),
        (None, []),
    ],
)
def test_load_balancer_status(svc: Any, expected: list[dict[str, str]]) -> None:
    objs = [svc] if svc else []
    ctx = base(*objs, ing("a"), ing("b", paths=[path("/b")]), ing("foreign", cls="nginx"))
    statuses = ctx.sorted_statuses()
    assert [(s.kind, s.namespace, s.name) for s in statuses] == [("Ingress", "apps", "a"), ("Ingress", "apps", "b")]
    for s in statuses:
        assert s.api_version == "networking.k8s.io/v1"
        assert s.status == {"loadBalancer": {"ingress": expected}}


def test_events_carry_object_identity() -> None:
    ctx = base(ing("a", annotations={"titanium.io/what": "x"}))
    (e,) = ctx.events()
    assert (e.kind, e.namespace, e.name, e.uid, e.api_version, e.type) == (
        "Ingress", "apps", "a", "uid-a", "networking.k8s.io/v1", "Warning"
    )


# == shared ordering with HTTPRoute ========================================================
def _httproute_route(ctx: RenderContext, created: str, name: str) -> None:
    match = {"host": "shop.example.com", "path": "/api", "pathKind": "Prefix"}
    rid = f"httproute/apps/{name}/r0m0"
    key = key_from_match(match, created=created, namespace="apps", name=name, rule=0, match_index=0, route_id=rid)
    ctx.add_route(Route(rid, match["host"], match_of(match), Behavior(Forward("svc-apps.shop.8080")), key,
                        Source("HTTPRoute", "apps", name), 0, 0))


@pytest.mark.parametrize(("ing_created", "first"), [("2024-01-01T00:00:00Z", "ingress"), ("2024-06-01T00:00:00Z", "httproute")])
def test_ingress_and_httproute_share_one_ordering(ing_created: str, first: str) -> None:
    objs = [CLASS, *service("shop"), ing("web", created=ing_created, paths=[path("/api")])]
    ctx = RenderContext(Snapshot.from_objects(objs), RenderOptions())
    _httproute_route(ctx, "2024-03-01T00:00:00Z", "web")
    ingress.translate(ctx)
    ids = route_ids(ctx)
    assert len(ids) == 2  # neither is dropped
    assert ids[0].startswith(first)
    assert not ctx.events()


# == determinism, robustness, speed =======================================================
def _mixed_objects() -> list[Any]:
    objs: list[Any] = [CLASS, FOREIGN_CLASS, *service("shop"), *service("shop-v2"), tls_secret("shop-tls")]
    objs += [
        ing("a", annotations={"titanium.io/limit-rps": "5", "titanium.io/x": "1"}, default_backend=backend(), tls=[{"secretName": "shop-tls"}]),
        ing("b", created="2024-01-02T00:00:00Z", paths=[path("/"), path("/api", "Exact")], default_backend=backend()),
        canary("c", canary_weight="20", canary_by_header="X-C"),
        ing("d", created="2024-01-03T00:00:00Z", annotations={"titanium.io/limit-rps": "0"}, host="*.example.com"),
        ing("e", created="2024-01-04T00:00:00Z", host=None, paths=[path("rel"), path("/r", be={"resource": {"kind": "X", "name": "y"}})]),
    ]
    return objs


def _fingerprint(ctx: RenderContext) -> Any:
    return (ctx.ordered_routes(), ctx.sorted_clusters(), ctx.events(), ctx.sorted_statuses(), ctx.certificate_entries(), sorted(ctx.listeners.items()))


def test_deterministic_in_any_input_order() -> None:
    objs = _mixed_objects()
    expected = _fingerprint(run(*objs))
    rng = random.Random(7)
    for _ in range(5):
        shuffled = objs[:]
        rng.shuffle(shuffled)
        assert _fingerprint(run(*shuffled)) == expected


_GARBAGE: list[Any] = [None, 1, "x", [], {}, [1], {"a": None}, True, -5, 70000, {"number": "80"}]


def test_malformed_input_never_raises() -> None:
    rng = random.Random(11)
    template = ing(
        "g",
        annotations={"titanium.io/limit-rps": "5"},
        default_backend=backend(),
        tls=[{"hosts": ["a.example.com"], "secretName": "t"}],
        paths=[path("/x")],
    )

    def mutate(value: Any, depth: int) -> Any:
        if depth > 5 or rng.random() < 0.15:
            return rng.choice(_GARBAGE)
        if isinstance(value, dict):
            return {k: mutate(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [mutate(v, depth + 1) for v in value]
        return value

    for i in range(300):
        obj = mutate(template, 0)
        if not isinstance(obj, dict):
            continue
        obj["kind"] = "Ingress"
        obj["metadata"] = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        obj["metadata"]["name"] = f"g{i}"
        base(obj)  # must not raise


def test_ten_thousand_ingresses_translate() -> None:
    """Scale, not speed (timings live in benchmarks/)."""
    objs: list[Any] = [CLASS]
    for s in range(50):
        objs += service(f"svc{s}", ips=(f"10.0.{s}.1", f"10.0.{s}.2"))
    for i in range(10_000):
        ann = {"titanium.io/limit-rps": "10"} if i % 3 == 0 else ({"titanium.io/proxy-read-timeout": "5"} if i % 3 == 1 else None)
        objs.append(
            ing(
                f"i{i}",
                created=f"2024-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}Z",
                host=f"h{i % 2000}.example.com",
                annotations=ann,
                paths=[path(f"/p{i}", be=backend(f"svc{i % 50}")), path("/", be=backend(f"svc{(i + 1) % 50}"))],
            )
        )
    snapshot = Snapshot.from_objects(objs)
    ctx = RenderContext(snapshot, RenderOptions())
    ingress.translate(ctx)
    ordered = ctx.ordered_routes()
    assert len(ordered) == 20_000
    assert [r["order"] for r in ordered] == list(range(1, 20_001))


# == through the full render (Gateway listeners, HTTPRoutes and Ingress together) =========
GATEWAY_CLASS = {
    "apiVersion": "gateway.networking.k8s.io/v1",
    "kind": "GatewayClass",
    "metadata": {"name": "titanium"},
    "spec": {"controllerName": "titaniumproxy.com/gateway-controller"},
}


def gateway(listeners: list[dict[str, Any]], created: str = "2024-01-01T00:00:00Z") -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"namespace": "apps", "name": "web", "creationTimestamp": created},
        "spec": {"gatewayClassName": "titanium", "listeners": listeners},
    }


def full_render(*objects: Any) -> Any:
    from titanium_gateway.render import render

    flat: list[Any] = []
    for obj in objects:
        flat.extend(obj if isinstance(obj, list) else [obj])
    return render(Snapshot.from_objects(flat), RenderOptions())


def test_render_gateway_https_on_http_port_makes_ingress_port_unavailable() -> None:
    https_on_80 = {
        "name": "odd",
        "port": 80,
        "protocol": "HTTPS",
        "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]},
    }
    result = full_render(GATEWAY_CLASS, gateway([https_on_80]), tls_secret("shop-tls"), CLASS, service("shop"), ing("a"))
    assert [(e.name, e.reason) for e in result.events if e.kind == "Ingress"] == [("a", "PortUnavailable")]
    assert "ingress/apps/a/r0p0" in result.config.decode()


def test_render_default_certificate_oldest_of_gateway_and_ingress() -> None:
    other_cert, other_key = _pem_pair("other.example.com")
    listener = {"name": "https", "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "gw-tls"}]}}
    objs = [
        GATEWAY_CLASS,
        gateway([listener], created="2024-06-01T00:00:00Z"),
        tls_secret("gw-tls", crt=other_cert, key=other_key),
        tls_secret("shop-tls"),
        CLASS,
        service("shop"),
        ing("a", created="2024-01-01T00:00:00Z", tls=[{"secretName": "shop-tls"}]),
    ]
    result = full_render(*objs)
    defaults = [c.file for c in result.certificates if c.default]
    assert defaults == ["apps.shop-tls.pfx"]  # the Ingress is older than the Gateway
    assert {(k.port, k.decrypt_ssl) for k in result.listeners} == {(8080, False), (8443, True)}
    assert "apps.shop-tls.pfx" in result.tls_files and "apps.gw-tls.pfx" in result.tls_files


def test_render_every_ingress_feature_validates_against_schema() -> None:
    from .conftest import validate_twp

    ca, _ = _pem_pair("ca.internal")
    objs = [
        *_mixed_objects(),
        tls_secret("mtls", ca=ca),
        ing(
            "all",
            created="2024-01-09T00:00:00Z",
            host="all.example.com",
            paths=[path("/p"), path("/e", "Exact")],
            annotations={
                "titanium.io/rewrite-target": "/new",
                "titanium.io/proxy-read-timeout": "10",
                "titanium.io/proxy-body-size": "1m",
                "titanium.io/backend-protocol": "HTTPS",
                "titanium.io/upstream-tls-secret": "mtls",
                "titanium.io/affinity": "cookie",
                "titanium.io/load-balance": "p2c",
                "titanium.io/whitelist-source-range": "10.0.0.0/8",
                "titanium.io/limit-rps": "3",
                "titanium.io/cors-allow-origin": "*",
                "titanium.io/auth-url": "https://auth.example.com/check",
            },
        ),
    ]
    result = full_render(*objs)
    validate_twp(result.config, "ingress features")
    text = result.config.decode()
    for needle in ("PathRegexReplace", "ExtAuth", "Cors", "IpAllowDeny", "MaxRequestBodySize", "RateLimit",
                   "sessionAffinity", "PowerOfTwoChoices", "caFile", "x-c: always", "weight: 80", "directResponse"):
        assert needle in text, needle


def test_implementation_specific_without_a_path_is_the_prefix_slash() -> None:
    """The Ingress API lets ImplementationSpecific omit the path ("an unspecified path matches
    all paths"): it serves as the Prefix ``/``, with no InvalidPath event."""
    for raw in (None, ""):
        ctx = base(ing("a", paths=[path(raw, "ImplementationSpecific")]))
        r = only_route(ctx)
        assert r["match"] == {"host": "shop.example.com", "path": "/", "pathKind": "Prefix"}
        assert "clusterId" in r
        assert reasons(ctx) == []


def test_tls_secret_in_a_namespace_the_controller_does_not_read() -> None:
    ctx = base(ing("a", tls=[{"secretName": "t"}]), options=RenderOptions(secret_namespaces=("gateway-system",)))
    (invalid,) = [m for _, r, m in events(ctx) if r == "InvalidTLS"]
    assert invalid == ("tls 0: Secret apps/t cannot be read: the controller reads Secrets in gateway-system only "
                       "(--secret-namespaces; chart values controller.secretNamespaces, controller.secretsClusterWide)")
