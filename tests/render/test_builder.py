from __future__ import annotations

from typing import Any

from tests.render.core_fixtures import grant, tls_secret
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.precedence import TIER_DEFAULT_BACKEND, route_key
from titanium_gateway.render.referencegrant import ReferenceGrantIndex
from titanium_gateway.render.result import EventRecord, ObjectStatus
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.twp.model import Behavior, Cluster, Destination, Forward, Match, Route, Source


def ctx(*objs, **snap):  # type: ignore[no-untyped-def]
    return RenderContext(Snapshot.from_objects(list(objs), **snap), RenderOptions())


def key(rid: str, **kw):  # type: ignore[no-untyped-def]
    base = dict(hostname=None, path_type="PathPrefix", path="/", method=False, headers=0, query=0, created="t",
                namespace="n", name="r", rule=0, match=0, route_id=rid)
    base.update(kw)
    return route_key(**base)


def test_listeners_clash_on_decrypt() -> None:
    c = ctx()
    assert c.add_listener(8080, False)
    assert c.add_listener(8080, False)
    assert not c.add_listener(8080, True)
    assert c.listeners == {8080: False}


def test_clusters_dedup_first_wins_and_sorted() -> None:
    c = ctx()
    assert c.add_cluster(Cluster(id="b")) == "b"
    c.add_cluster(Cluster(id="a"))
    c.add_cluster(Cluster(id="b", destinations=(Destination("10.0.0.1:1", "10.0.0.1", 1, 1, False),)))
    assert c.sorted_clusters() == [Cluster(id="a"), Cluster(id="b")]


def _route(rid: str, cluster: str, route_key: str) -> Route:
    return Route(rid, None, Match(), Behavior(Forward(cluster)), route_key, Source("HTTPRoute", "n", "r"), 0, 0)


def test_routes_ordered_by_key_with_order_numbers() -> None:
    c = ctx()
    assert c.add_route(_route("default", "x", key("default", tier=TIER_DEFAULT_BACKEND)))
    assert c.add_route(_route("short", "x", key("short", path="/a")))
    assert c.add_route(_route("long", "x", key("long", path="/a/b")))
    assert not c.add_route(_route("long", "y", key("long")))
    out = c.ordered_routes()
    assert [(r["id"], r["order"]) for r in out] == [("long", 1), ("short", 2), ("default", 3)]
    assert list(out[0]) == ["id", "order", "match", "clusterId"]
    assert [r.id for r in c.take_ordered_routes()] == ["long", "short", "default"]


def test_certificate_binding_hosts_default_and_errors() -> None:
    c = ctx(tls_secret("a"), tls_secret("b"))
    assert c.bind_certificate("apps", "a", ["x.example.com"], default_rank=("2024", "apps", "gw", 1)).ok
    assert c.bind_certificate("apps", "a", ["y.example.com"]).ok
    assert c.bind_certificate("apps", "b", [], default_rank=("2023", "apps", "gw", 0)).ok
    missing = c.bind_certificate("apps", "zzz", ["q"])
    assert not missing.ok and "not found" in missing.error
    entries = c.certificate_entries()
    assert [(e.file, e.hosts, e.default) for e in entries] == [
        ("apps.a.pfx", ("x.example.com", "y.example.com"), False), ("apps.b.pfx", (), True)]
    assert sorted(c.tls_files) == ["apps.a.pfx", "apps.b.pfx"]


def test_statuses_and_events() -> None:
    c = ctx()
    c.add_status(ObjectStatus("v1", "X", "n", "a", {"v": 1}))
    c.add_status(ObjectStatus("v1", "X", "n", "a", {"v": 2}))
    c.add_status(ObjectStatus("v1", "A", "n", "a", {}))
    assert [s.kind for s in c.status.statuses()] == ["A", "X"]
    assert c.status.statuses()[1].status == {"v": 2}
    ev = EventRecord("Ingress", "n", "a", "Warning", "R", "m")
    c.add_event(ev)
    c.add_event(EventRecord("Ingress", "n", "a", "Warning", "R", "m"))
    assert c.events() == (ev,)


def test_namespace_labels_default_for_absent_namespace() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"env": "prod"}}}
    c = ctx(ns)
    assert c.namespace_labels("team") == {"env": "prod", "kubernetes.io/metadata.name": "team"}
    assert c.namespace_labels("ghost") == {"kubernetes.io/metadata.name": "ghost"}


def test_reference_grants() -> None:
    idx = ReferenceGrantIndex(Snapshot.from_objects([grant("backend", "HTTPRoute", "apps", "Service", "api")]))
    args = dict(from_group="gateway.networking.k8s.io", from_kind="HTTPRoute", from_namespace="apps",
                to_group="", to_kind="Service", to_namespace="backend")
    assert idx.allows(**args, to_name="api")
    assert not idx.allows(**args, to_name="other")
    assert not idx.allows(**{**args, "from_namespace": "x"}, to_name="api")
    assert not idx.allows(**{**args, "to_kind": "Secret"}, to_name="api")
    assert idx.allows(**{**args, "to_namespace": "apps"}, to_name="anything")  # same namespace
    wide = ReferenceGrantIndex(Snapshot.from_objects([grant("backend", "HTTPRoute", "apps", "Service")]))
    assert wide.allows(**args, to_name="whatever")


def test_a_secret_is_converted_once_per_render(monkeypatch: Any) -> None:
    from titanium_gateway.render import builder

    calls: list[Any] = []
    real = builder.convert_tls_secret
    monkeypatch.setattr(builder, "convert_tls_secret", lambda s: calls.append(s) or real(s))
    secret = tls_secret()
    ns, name = secret["metadata"]["namespace"], secret["metadata"]["name"]
    c = ctx(secret, {**tls_secret(), "type": "Opaque", "metadata": {"namespace": ns, "name": "opaque"}})
    first = c.convert(ns, name)
    assert first is not None and first.ok and c.convert(ns, name) is first and calls == [secret]
    opaque = c.convert(ns, "opaque")
    assert opaque is not None and not opaque.ok
    assert c.convert(ns, "missing") is None
    again = ctx(secret).convert(ns, name)
    assert again is not None and again.pfx == first.pfx and len(calls) == 3  # a new render converts again


def test_a_secret_outside_the_read_namespaces_is_unreadable_not_missing() -> None:
    """--secret-namespaces (the chart's least-privilege default): a certificate Secret elsewhere is
    never in the snapshot, and the message says why, naming the chart values that change it."""
    c = RenderContext(Snapshot.from_objects([]), RenderOptions(secret_namespaces=("edge", "gw")))
    other = c.bind_certificate("apps", "a", ["q"])
    assert not other.ok and other.error == (
        "Secret apps/a cannot be read: the controller reads Secrets in edge, gw only (--secret-namespaces; "
        "chart values controller.secretNamespaces, controller.secretsClusterWide)")
    assert c.bind_certificate("gw", "zzz", ["q"]).error == "Secret gw/zzz not found"  # read there: missing
    assert c.missing_secret("apps", "a") == other.error
    assert ctx().missing_secret("apps", "a") == "Secret apps/a not found"  # every namespace read
