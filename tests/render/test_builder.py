from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.render.core_fixtures import grant, tls_secret
from titanium_gateway.render import emit as em
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.precedence import TIER_DEFAULT_BACKEND, route_key
from titanium_gateway.render.referencegrant import ReferenceGrantIndex
from titanium_gateway.render.result import EventRecord, ObjectStatus
from titanium_gateway.render.snapshot import Snapshot


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
    assert c.add_cluster({"id": "b", "destinations": []}) == "b"
    c.add_cluster({"id": "a", "destinations": []})
    c.add_cluster({"id": "b", "destinations": [{"x": 1}]})
    assert c.sorted_clusters() == [{"id": "a", "destinations": []}, {"id": "b", "destinations": []}]


def test_routes_ordered_by_key_with_order_numbers() -> None:
    c = ctx()
    assert c.add_route({"id": "default", "match": {}, "clusterId": "x"}, key("default", tier=TIER_DEFAULT_BACKEND))
    assert c.add_route({"id": "short", "match": {}, "clusterId": "x"}, key("short", path="/a"))
    assert c.add_route({"id": "long", "match": {}, "clusterId": "x"}, key("long", path="/a/b"))
    assert not c.add_route({"id": "long", "match": {}, "clusterId": "y"}, key("long"))
    out = c.ordered_routes()
    assert [(r["id"], r["order"]) for r in out] == [("long", 1), ("short", 2), ("default", 3)]
    assert list(out[0]) == ["id", "order", "match", "clusterId"]
    assert c.route_count() == 3


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
    assert [s.kind for s in c.sorted_statuses()] == ["A", "X"]
    assert c.sorted_statuses()[1].status == {"v": 2}
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


_plain_rid = st.from_regex(r"(httproute|ingress)/[a-z][a-z0-9-]{0,8}/[a-z][a-z0-9.-]{0,8}/r[0-9]m[0-9]", fullmatch=True)
_hosts = st.none() | st.just("") | st.sampled_from(["a.example.com", "*.example.com", "on", "1.2", "x:y"]) | st.text(
    alphabet="ab.*:-é 1", min_size=1, max_size=8)
_bodies = st.fixed_dictionaries({}, optional={
    "path": st.sampled_from(["/", "/api", "/a b", "/é"]), "pathKind": st.sampled_from(["Exact", "Prefix"]),
    "method": st.sampled_from(["GET", "on"]), "headers": st.dictionaries(st.sampled_from(["x", "y: z"]), st.text(max_size=3),
                                                                         max_size=2)})


@settings(max_examples=300, deadline=None)
@given(_plain_rid, _hosts, _bodies, st.booleans(), st.booleans())
def test_add_route_text_writes_what_route_head_of_host_writes(rid: str, host: str | None, match: dict[str, Any],
                                                              plain: bool, with_body: bool) -> None:
    """The common case of add_route_text (plain id, a host, a match body) is route_head_of_host
    inline: the same id and match lines, with the tail kept as given."""
    plain = plain and em.plain_name(rid) is not None and not rid.isalpha()
    body = em.match_body(match) if with_body else None
    c = ctx()
    assert c.add_route_text(rid, host, match, "k", "  clusterId: c\n", body, plain) is True
    assert c.add_route_text(rid, host, match, "k", "  clusterId: c\n", body, plain) is False  # the id is taken
    lines = em.route_head_of_host(rid, host, match, body, plain)
    assert lines is not None and lines == em.route_head(rid, {"host": host, **match} if host else match)
    assert c._routes[rid] == ("k", rid, lines[0], (lines[1], "  clusterId: c\n"))


def test_a_secret_object_is_converted_once_per_render(monkeypatch: Any) -> None:
    from titanium_gateway.render import builder

    calls: list[Any] = []
    real = builder.convert_tls_secret
    monkeypatch.setattr(builder, "convert_tls_secret", lambda s: calls.append(s) or real(s))
    secret = tls_secret()
    c = ctx(secret)
    first = c.convert(secret)
    assert first.ok and c.convert(secret) is first and calls == [secret]
    copy_ = {**secret}
    assert c.convert(copy_).pfx == first.pfx and len(calls) == 2  # another object: converted (by content, cached)
    assert not c.convert({"type": "Opaque"}).ok
    assert ctx(secret).convert(secret).pfx == first.pfx and len(calls) == 4  # a new render converts again
