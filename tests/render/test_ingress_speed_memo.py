"""The Ingress translation's memos change how much work a render does, never its result.

* ``ingress.titanium.parse_annotations`` keeps its results by content (a bounded memo);
* the translator resolves each distinct backend once per render, makes the cluster settings
  and the shared policies once per annotation set, each path's match and transforms once per
  (path, kind), and the routes of equal behavior share one (render/ingress/).

Every check compares against the same work done without the memo: ``parse_uncached``, and a
reference translator with every memo off that builds each route's values anew, with its key
from ``precedence.route_key`` (the key of the translator before the memos).
Performance is never asserted here (timings live in benchmarks/).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from titanium_gateway.render import RenderCache, fields, ingress, render
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.ingress import ownership
from titanium_gateway.render.ingress import titanium as ia
from titanium_gateway.render.ingress.backends import Backends
from titanium_gateway.render.ingress.routes import Routes, rewrite_transform, shared_policies
from titanium_gateway.render.ingress.status import event
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.precedence import route_key
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.twp import emit
from titanium_gateway.twp.model import Behavior, Document, Match, RateLimit, Route

from .test_ingress import CLASS, backend, ing, path, service, tls_secret

# == the reference: every memo off ==========================================================


class _ReferenceBackends(Backends):
    """Backends without memos: each backend resolved, each Ingress's cluster settings made anew."""

    def backend_cluster(self, ing: Any, backend: Any, settings: Any, id_suffix: str) -> Any:
        return self._backend_cluster(ing, backend, settings, id_suffix)

    def cluster_settings(self, ing: Any) -> None:
        ing.settings, ing.settings_error, ing.id_suffix = self._cluster_settings(ing.ann)
        if ing.settings_error:
            event(self.ctx, ing, "InvalidAnnotation", ing.settings_error)


class _ReferenceRoutes(Routes):
    """Routes without memos: each route's policies, match and transforms made anew, each
    behavior its own object, each key from ``route_key``."""

    def match(self, path: Any, kind: Any) -> tuple[Match, str]:
        match = Match(path, kind) if path is not None and kind is not None else Match()
        return match, ""  # (the key is made from the match below)

    def transforms(self, p: Any) -> Any:
        target = p.ing.ann.rewrite_target
        transform = None if target is None else rewrite_transform(p.path, p.kind, target)
        return () if transform is None else (transform,)

    def policies(self, ing: Any) -> Any:
        before, after = shared_policies(ing.ann)
        rate = [RateLimit(ing.ann.limit_rps, "00:00:01", f"ingress/{ing.namespace}/{ing.name}")] \
            if ing.ann.limit_rps is not None else []
        return (*before, *rate, *after)

    def add_route(self, p: Any, source: Any, route_id: str, match: Match, ranks: str, behavior: Behavior) -> None:
        behavior = copy.deepcopy(behavior)
        key = route_key(
            hostname=p.host,
            path_type=None if match.path_kind is None else ("Exact" if match.path_kind == "Exact" else "PathPrefix"),
            path=match.path if match.path_kind is not None else None,
            method=False,
            headers=len(match.headers),
            query=0,
            created=p.ing.created,
            namespace=p.ing.namespace,
            name=p.ing.name,
            rule=max(p.rule, 0),
            match=p.index,
            route_id=route_id,
            tier=self.tier(p),
        ).removesuffix(route_id)  # the render's keys leave the id out: the sort's second key is the id
        self.ctx.add_route(Route(route_id, p.host, match, behavior, key, source.ing.source, source.rule, source.index))


class _Reference(ingress.Translator):
    """The translator without its memos."""

    Backends = _ReferenceBackends
    Routes = _ReferenceRoutes


def _translate(objects: list[Any], reference: bool, monkeypatch: pytest.MonkeyPatch) -> RenderContext:
    ctx = RenderContext(Snapshot.from_objects(objects), RenderOptions())
    if reference:
        with monkeypatch.context() as m:
            m.setattr(ingress, "parse_annotations", ia.parse_uncached)  # (the name the translator calls)
            _Reference(ctx).run()
    else:
        ingress.translate(ctx)
    return ctx


def _outputs(ctx: RenderContext) -> dict[str, Any]:
    keys = {rid: r.key for rid, r in ctx.routes.items()}  # the precedence keys
    provenance = {rid: (r.source, r.rule_index, r.match_index, r.host) for rid, r in ctx.routes.items()}
    routes = tuple(ctx.take_ordered_routes())
    text = emit.emit(Document(routes=routes), part_limit=1 << 30, max_parts=1).config.decode()
    return {
        "provenance": provenance,
        "keys": keys,
        "routes": text,
        "clusters": ctx.sorted_clusters(),
        "events": ctx.events(),
        "statuses": ctx.sorted_statuses(),
        "certificates": ctx.certificate_entries(),
        "tls_files": dict(ctx.tls_files),
        "listeners": sorted(ctx.listeners.items()),
    }


def _same_as_reference(objects: list[Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    ia._memo.clear()
    fast = _outputs(_translate(objects, False, monkeypatch))
    again = _outputs(_translate(objects, False, monkeypatch))  # with a warm annotation memo
    slow = _outputs(_translate(objects, True, monkeypatch))
    assert fast == slow
    assert again == slow
    return fast


# == a corpus of every feature and of malformed values ======================================
_PORTS: list[Any] = [
    {"number": 8080}, {"name": "http"}, {"number": 1}, {"number": True}, {"number": "1"}, {"number": 1.0},
    {"number": "8080"}, {"number": 0}, {"number": 99999}, {"name": "nope"}, {"name": ""}, {"name": 1},
    {"name": True}, {"number": 8080, "name": "http"}, {}, None, "x", {"number": [8080]}, {"name": ["http"]},
    {"number": {"a": 1}}, {"number": -0.0}, {"number": 0.0},
]
_ANNOTATIONS: dict[str, list[Any]] = {
    ia.PROXY_READ_TIMEOUT: ["30", "0", "x", 30, True],
    ia.LOAD_BALANCE: ["least_conn", "ewma", "bogus", 1],
    ia.REWRITE_TARGET: ["/", "/x", "/a/", "$1", "/\u00e9\"q", ["/x"]],
    ia.PROXY_BODY_SIZE: ["8m", "0", "x"],
    ia.WHITELIST_SOURCE_RANGE: ["10.0.0.0/8,192.168.0.0/16", "10.0.0.1/8", "::1,10.0.0.0/8", {"a": 1}],
    ia.LIMIT_RPS: ["100", "1", 1, True, "0"],
    ia.AFFINITY: ["cookie", "ip"],
    ia.CORS_ALLOW_ORIGIN: ["https://example.com", "*", "https://a.com/x"],
    ia.AUTH_URL: ["https://auth.example.com/check", "ftp://a"],
    ia.BACKEND_PROTOCOL: ["HTTP", "HTTPS", "H2C", "GRPC", "https"],
    ia.SSL_REDIRECT: ["false", "true"],
    ia.UPSTREAM_TLS_SECRET: ["up", "apps/up", "other/up", "missing"],
    ia.CANARY: ["true", "false", True, "1"],
    ia.CANARY_WEIGHT: ["0", "30", "100", "x", 30],
    ia.CANARY_BY_HEADER: ["X-Canary", "bad header", "k" * 1001],
    "titanium.io/made-up": ["1", ["x"]],
    "kubernetes.io/change-cause": ["x", ["unhashable"]],
}
_PATHS: list[tuple[Any, Any]] = [
    ("/shop", "Prefix"), ("/shop/", "Prefix"), ("/shop", "Exact"), ("/", "Prefix"), ("/shop", "ImplementationSpecific"),
    (None, "ImplementationSpecific"), ("rel", "Prefix"), ("/x", "Bogus"), ("/x", None), (5, "Prefix"),
    ("/" + "p" * 1200, "Exact"), ("/\u00fc", "Prefix"),
]
_HOSTS: list[Any] = ["shop.example.com", "*.example.com", "api.example.com", None, "Bad Host", 5]


def _corpus(seed: int, n: int = 120) -> list[Any]:
    rnd = random.Random(seed)
    objs: list[Any] = [CLASS, tls_secret("up"), tls_secret("tls")]
    for name in ("shop", "api", "web"):
        objs += service(name, port=8080, port_name="http")
    objs += service("one", port=1, port_name="p1")
    objs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "apps", "name": "ext"},
                 "spec": {"type": "ExternalName", "externalName": "x.example.com", "ports": [{"name": "http", "port": 8080}]}})
    services = ["shop", "api", "web", "one", "ext", "missing", ""]
    for i in range(n):
        annotations = {k: copy.deepcopy(rnd.choice(v)) for k, v in _ANNOTATIONS.items() if rnd.random() < 0.15}
        if rnd.random() < 0.2:
            annotations.update({ia.CANARY: "true", ia.CANARY_WEIGHT: rnd.choice(["10", "50"])})
            if rnd.random() < 0.5:
                annotations[ia.CANARY_BY_HEADER] = rnd.choice(["X-Canary", "k" * 1001])
        if rnd.random() < 0.1:
            annotations.update({ia.BACKEND_PROTOCOL: "HTTPS", ia.UPSTREAM_TLS_SECRET: rnd.choice(["up", "missing"])})
        paths = []
        for _ in range(rnd.choice([1, 2, 3])):
            value, ptype = rnd.choice(_PATHS)
            item: dict[str, Any] = {"backend": {"service": {"name": rnd.choice(services), "port": copy.deepcopy(rnd.choice(_PORTS))}}}
            if value is not None:
                item["path"] = value
            if ptype is not None:
                item["pathType"] = ptype
            paths.append(item)
        obj = ing(
            rnd.choice(["", "", "", "", "a b", "é", "x: ", "#"]) + f"i{i}",  # (ids quoted as needed)
            created=f"2024-01-01T00:00:{rnd.randrange(20):02d}Z",
            host=rnd.choice(_HOSTS),
            annotations=annotations,
            paths=paths,
            default_backend=backend(rnd.choice(services), rnd.choice([8080, "http", 1])) if rnd.random() < 0.15 else None,
            tls=[{"hosts": ["shop.example.com"], "secretName": rnd.choice(["tls", "nope"])}] if rnd.random() < 0.1 else None,
        )
        if rnd.random() < 0.2:
            obj["metadata"]["namespace"] = "other"
        objs.append(obj)
    return objs


@pytest.mark.parametrize("seed", range(6))
def test_memos_give_the_reference_translation(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _same_as_reference(_corpus(seed), monkeypatch)
    assert out["keys"]  # the corpus serves routes


def test_memos_give_the_reference_translation_reversed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memos are filled in the other order (an invalid value first)."""
    _same_as_reference(list(reversed(_corpus(1))), monkeypatch)


def test_long_canary_header_route_falls_back_to_the_block_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A header name too long for a flow key: the route is written in block style."""
    header = "k" * 1001
    objs = [CLASS, *service("shop"), *service("v2"),
            ing("p", annotations={ia.REWRITE_TARGET: "/r", ia.LIMIT_RPS: "5"}, paths=[path("/a")]),
            ing("c", created="2024-02-01T00:00:00Z", paths=[path("/a", be=backend("v2"))],
                annotations={ia.CANARY: "true", ia.CANARY_BY_HEADER: header, ia.CANARY_WEIGHT: "20"})]
    out = _same_as_reference(objs, monkeypatch)
    assert header in out["routes"] and len(out["keys"]) == 2


# == backend values that compare equal but are not the same ================================


def _bodies(ctx: RenderContext) -> dict[str, Any]:
    """Per Ingress its route's cluster, or its 500 answer's reason and the Event that says why
    (the body names the reason only)."""
    why = {(e.name, e.reason): e.message.split(": ", 1)[1] for e in ctx.events()}
    out: dict[str, Any] = {}
    for r in ctx.ordered_routes():
        name, body = r["id"].split("/")[2], r.get("directResponse", {}).get("body")
        out[name] = r.get("clusterId") or f"{body}: {why[name, body]}"
    return out


@pytest.mark.parametrize("valid_first", [True, False])
def test_port_one_true_and_string_one_are_not_confused(valid_first: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    ports: list[tuple[str, Any]] = [("int", {"number": 1}), ("bool", {"number": True}), ("str", {"number": "1"}),
                                    ("float", {"number": 1.0}), ("list", {"number": [1]}), ("dict", {"number": {"n": 1}}),
                                    ("named", {"name": "p1"}), ("named-bool", {"name": True})]
    if not valid_first:
        ports.reverse()
    objs: list[Any] = [CLASS, *service("one", port=1, port_name="p1")]
    objs += [ing(name, host=f"{name}.example.com", paths=[{"path": "/", "pathType": "Prefix",
                                                           "backend": {"service": {"name": "one", "port": port}}}])
             for name, port in ports]
    _same_as_reference(objs, monkeypatch)
    bodies = _bodies(_translate(objs, False, monkeypatch))
    assert bodies["int"] == bodies["named"] == "svc-apps.one.1"
    assert bodies["bool"] == "InvalidBackend: the backend Service one port True is not 1-65535"
    assert bodies["str"] == "InvalidBackend: the backend Service one port '1' is not 1-65535"
    assert bodies["float"] == "InvalidBackend: the backend Service one port 1.0 is not 1-65535"
    assert bodies["list"] == "InvalidBackend: the backend Service one port [1] is not 1-65535"
    assert bodies["named-bool"] == "InvalidBackend: the backend Service one has no port"


def test_negative_zero_port_keeps_its_own_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """``0.0 == -0.0`` (same hash), yet the messages differ: never one memo entry."""
    objs: list[Any] = [CLASS, *service("shop")]
    objs += [ing(name, host=f"{name}.example.com", paths=[{"path": "/", "pathType": "Prefix",
                                                           "backend": {"service": {"name": "shop", "port": {"number": n}}}}])
             for name, n in (("pos", 0.0), ("neg", -0.0))]
    _same_as_reference(objs, monkeypatch)
    bodies = _bodies(_translate(objs, False, monkeypatch))
    assert bodies["pos"].endswith("port 0.0 is not 1-65535")
    assert bodies["neg"].endswith("port -0.0 is not 1-65535")


def test_same_backend_with_other_settings_gets_its_own_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    objs = [CLASS, *service("shop"),
            ing("a", host="a.example.com", paths=[path("/")]),
            ing("b", host="b.example.com", paths=[path("/")], annotations={ia.LOAD_BALANCE: "random"}),
            ing("c", host="c.example.com", paths=[path("/")], annotations={ia.BACKEND_PROTOCOL: "H2C"}),
            ing("d", host="d.example.com", paths=[path("/")], annotations={ia.LOAD_BALANCE: "random"})]
    _same_as_reference(objs, monkeypatch)
    bodies = _bodies(_translate(objs, False, monkeypatch))
    assert bodies["a"] == "svc-apps.shop.8080"
    assert bodies["b"] == bodies["d"] != bodies["a"]
    assert bodies["c"] == "svc-apps.shop.8080-h2c"


def test_a_warm_render_cache_gives_the_fresh_render() -> None:
    objs = _corpus(3)
    for n, obj in enumerate(objs):
        obj.setdefault("metadata", {}).update({"uid": f"u{n}", "resourceVersion": str(n + 1)})
    cache = RenderCache()
    render(Snapshot.from_objects(objs), RenderOptions(), cache)
    changed = copy.deepcopy(objs)
    for obj in changed[-5:]:
        obj["metadata"]["annotations"] = {ia.LIMIT_RPS: "7"}
        obj["metadata"]["resourceVersion"] += "x"
    for snapshot_objs in (changed, changed, objs):
        warm = render(Snapshot.from_objects(snapshot_objs), RenderOptions(), cache)
        fresh = render(Snapshot.from_objects(snapshot_objs), RenderOptions())
        assert (warm.config, warm.statuses, warm.events, dict(warm.tls_files)) == (
            fresh.config, fresh.statuses, fresh.events, dict(fresh.tls_files))


# == parse_annotations' memo ================================================================
_VALUES = st.one_of(st.text(max_size=12), st.sampled_from(["true", "false", "1", "30", "8m", "/x", "HTTPS", "apps/up"]),
                    st.integers(), st.booleans(), st.none(), st.lists(st.integers(), max_size=2),
                    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
_NAMES = st.one_of(st.sampled_from(sorted(ia.KNOWN)), st.just("titanium.io/made-up"), st.just("other.io/x"))


def _fields(parsed: ia.IngressAnnotations) -> tuple[Any, ...]:
    """Every field with its type (``True == 1``: equality alone would not tell them apart)."""
    out = []
    for name in ia.IngressAnnotations.__dataclass_fields__:
        value = getattr(parsed, name)
        if name == "values":
            value = tuple((k, type(v), v) for k, v in value.items())
        out.append((name, type(value), value))
    return tuple(out)


@settings(max_examples=300, deadline=None)
@given(annotations=st.dictionaries(_NAMES, _VALUES, max_size=6), namespace=st.sampled_from(["apps", "other"]))
def test_memo_gives_the_uncached_parse(annotations: dict[str, Any], namespace: str) -> None:
    expected = _fields(ia.parse_uncached(annotations, namespace))
    assert _fields(ia.parse_annotations(annotations, namespace)) == expected
    assert _fields(ia.parse_annotations(dict(reversed(list(annotations.items()))), namespace)) == expected


@pytest.mark.parametrize(("name", "text", "other"), [
    (ia.CANARY, "true", True),
    (ia.LIMIT_RPS, "1", 1),
    (ia.LIMIT_RPS, "1", True),
    (ia.PROXY_READ_TIMEOUT, "30", 30),
    (ia.CANARY_WEIGHT, "1", 1.0),
    (ia.REWRITE_TARGET, "/x", ["/x"]),
    (ia.WHITELIST_SOURCE_RANGE, "10.0.0.0/8", {"10.0.0.0/8": 1}),
])
@pytest.mark.parametrize("string_first", [True, False])
def test_a_string_and_an_equal_non_string_are_not_confused(name: str, text: str, other: Any, string_first: bool) -> None:
    ia._memo.clear()
    pairs = [({name: text}, True), ({name: other}, False)]
    if not string_first:
        pairs.reverse()
    for given_annotations, valid in pairs:
        if name == ia.CANARY_WEIGHT:
            given_annotations = {**given_annotations, ia.CANARY: "true"}
        parsed = ia.parse_annotations(given_annotations, "apps")
        messages = [e.message for e in parsed.errors]
        assert (f"{name}: value must be a string" not in messages) is valid, messages


def test_unhashable_values_are_parsed_and_do_not_spoil_the_memo() -> None:
    ia._memo.clear()
    annotations = {ia.LIMIT_RPS: ["1"], ia.CORS_ALLOW_ORIGIN: {"a": 1}, "other.io/x": [1], "titanium.io/made-up": {}}
    for _ in range(2):
        parsed = ia.parse_annotations(annotations, "apps")
        assert [e.annotation for e in parsed.errors] == [ia.CORS_ALLOW_ORIGIN, ia.LIMIT_RPS]
        assert parsed.unknown == ("titanium.io/made-up",)
    assert ia.parse_annotations({ia.LIMIT_RPS: "1"}, "apps").limit_rps == 1


def test_a_str_subclass_is_parsed_as_itself_and_never_memoized() -> None:
    class Text(str):
        pass

    ia._memo.clear()
    assert type(ia.parse_annotations({ia.REWRITE_TARGET: Text("/x")}, "apps").rewrite_target) is Text
    assert type(ia.parse_annotations({ia.REWRITE_TARGET: "/x"}, "apps").rewrite_target) is str
    assert type(ia.parse_annotations({Text(ia.REWRITE_TARGET): "/x"}, "apps").rewrite_target) is str
    assert type(ia.parse_annotations({ia.REWRITE_TARGET: Text("/x")}, "apps").rewrite_target) is Text
    assert ia._memo and all(type(item[1]) is not Text for key in ia._memo for item in key[1:])


@pytest.mark.parametrize("own_first", [True, False])
def test_the_namespace_counts_for_the_upstream_tls_secret(own_first: bool) -> None:
    ia._memo.clear()
    annotations = {ia.UPSTREAM_TLS_SECRET: "apps/ca", ia.BACKEND_PROTOCOL: "HTTPS"}
    namespaces = ["apps", "other"] if own_first else ["other", "apps"]
    parsed = {ns: ia.parse_annotations(annotations, ns) for ns in namespaces}
    assert parsed["apps"].valid and parsed["apps"].upstream_tls_secret == ia.UpstreamTLSRef("apps", "ca")
    assert not parsed["other"].valid and "namespace" in parsed["other"].errors[0].message
    # without that annotation the namespace is not read: one shared result
    assert ia.parse_annotations({ia.LIMIT_RPS: "5"}, "apps") is ia.parse_annotations({ia.LIMIT_RPS: "5"}, "other")


def test_results_are_shared_read_only_and_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    ia._memo.clear()
    first = ia.parse_annotations({ia.LIMIT_RPS: "5", ia.AFFINITY: "cookie", "other.io/x": "y"}, "apps")
    assert ia.parse_annotations({ia.AFFINITY: "cookie", ia.LIMIT_RPS: "5"}, "other") is first
    assert isinstance(first.values, Mapping)
    with pytest.raises(TypeError):
        first.values[ia.LIMIT_RPS] = 6  # type: ignore[index]
    monkeypatch.setattr(ia, "_MEMO_MAX", 8)
    for n in range(50):
        assert ia.parse_annotations({ia.LIMIT_RPS: str(n + 1)}, "apps").limit_rps == n + 1
        assert len(ia._memo) <= 8


def test_large_annotation_sets_are_parsed_but_never_kept() -> None:
    ia._memo.clear()
    large = {ia.REWRITE_TARGET: "/" + "x" * ia._MEMO_KEY_MAX_CHARS, "titanium.io/made-up": "1"}
    for _ in range(2):
        parsed = ia.parse_annotations(large, "apps")
        assert parsed.rewrite_target == large[ia.REWRITE_TARGET] and parsed.unknown == ("titanium.io/made-up",)
    many = {f"titanium.io/unknown-{n}": "v" * 40 for n in range(200)}
    assert len(ia.parse_annotations(many, "apps").unknown) == 200
    assert not ia._memo


def test_malformed_annotations_never_raise() -> None:
    for malformed in (None, [], "x", {1: "x"}, {None: [1]}, {ia.LIMIT_RPS: float("nan")}, {(1,): {}}):
        ia.parse_annotations(malformed, "apps")  # type: ignore[arg-type]
        ia.parse_annotations(malformed, None)  # type: ignore[arg-type]


# == selection: each Ingress's age key is computed once ====================================
_JUNK: list[Any] = [None, 1, "", "x", [], {}, True, {"a": 1}, "2024-01-01T00:00:00Z", "titanium", "nginx"]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_select_keys_are_the_age_keys_in_order(data: st.DataObject) -> None:
    objs: list[Any] = [CLASS, {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                               "metadata": {"name": "dflt", "annotations": {ownership.DEFAULT_CLASS_ANNOTATION: "true"}},
                               "spec": {"controller": "titanium.io/ingress-controller"}}]
    for i in range(data.draw(st.integers(0, 8))):
        obj = ing(f"i{i % 4}", ns=data.draw(st.sampled_from(["apps", "other"])),
                  created=data.draw(st.sampled_from(["2024-01-01T00:00:00Z", "2023-01-01T00:00:00Z"])),
                  cls=data.draw(st.sampled_from(["titanium", "nginx", "", None])))
        for where, key in data.draw(st.lists(st.tuples(st.sampled_from(["metadata", "spec"]),
                                                       st.sampled_from(["namespace", "creationTimestamp", "name",
                                                                        "ingressClassName", "annotations"])), max_size=3)):
            obj[where][key] = data.draw(st.sampled_from(_JUNK))
        if data.draw(st.booleans()):
            obj["metadata"]["annotations"] = {ownership.LEGACY_CLASS_ANNOTATION: data.draw(st.sampled_from(_JUNK))}
        if data.draw(st.integers(0, 9)) == 0:
            obj["spec"] = data.draw(st.sampled_from(_JUNK))
        objs.append(obj)
    snapshot = Snapshot.from_objects(objs)
    for watch in (False, True):
        options = RenderOptions(watch_legacy_annotation=watch)
        selected, not_ours = ownership.select(snapshot, options)
        owned, has_default = ownership.owned_classes(snapshot.ingress_classes, options.ingress_controller_name)
        expected = sorted((x for x in snapshot.ingresses.values() if isinstance(x, Mapping)
                           and fields.name_of(fields.metadata(x)) and ownership.is_owned(x, owned, has_default, watch)),
                          key=ownership.age_key)
        assert [x for _, x in selected] == expected
        assert [k for k, _ in selected] == [ownership.age_key(x) for x in expected]
        # every other Ingress that has a name says why it is not ours, with the very decision
        named = [x for x in snapshot.ingresses.values() if fields.name_of(fields.metadata(x))
                 and fields.namespace_of(fields.metadata(x)) is not None]
        assert len(selected) + len(not_ours) == len(named)
        # (two snapshot objects can share a namespace and name: a junk namespace reads as "default")
        by_name: dict[tuple[Any, Any], list[Any]] = {}
        for x in named:
            by_name.setdefault((fields.namespace_of(fields.metadata(x)), fields.name_of(fields.metadata(x))), []).append(x)
        for record in not_ours:
            objs = [o for o in by_name[(record.namespace, record.name)] if not ownership.is_owned(o, owned, has_default, watch)]
            assert record.reason and any(
                record.reason == ownership.why_not_ours(o, snapshot.ingress_classes, owned, has_default, options)
                for o in objs), (record, objs)
