from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.render.core_fixtures import base_objects, route, run
from titanium_gateway.render import emit as emit_module
from titanium_gateway.render.emit import (
    _fragment,
    canonical_cluster,
    canonical_route,
    cluster_fragment,
    emit,
    route_fragment,
)

from .conftest import case_names, case_objects, case_options

SCHEMA = json.loads((Path(__file__).parents[2] / "titanium_gateway/render/twp.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _routes(n: int) -> list[dict[str, Any]]:
    return [{"id": f"httproute/ns/r{i}/r0m0", "order": i + 1, "match": {"path": f"/p{i}", "pathKind": "Prefix"},
             "clusterId": f"svc-ns.s{i}.80"} for i in range(n)]


def _clusters(n: int) -> list[dict[str, Any]]:
    return [{"id": f"svc-ns.s{i}.80", "destinations": [
        {"id": f"10.0.{i // 250}.{i % 250}:80", "address": f"10.0.{i // 250}.{i % 250}", "port": 80,
         "weight": 1, "useHttps": False}]} for i in range(n)]


LISTENERS = [{"host": "0.0.0.0", "port": 8080, "type": "transparent", "decryptSsl": False}]


def test_fragment_assembly_parses_back_and_matches_pyyaml_layout() -> None:
    out = emit(LISTENERS, [], _routes(5), _clusters(5), part_limit=1 << 30, max_parts=8)
    data = {"schemaVersion": "7.1", "listeners": LISTENERS, "certificates": {"items": []},
            "routes": _routes(5), "clusters": _clusters(5)}
    assert yaml.safe_load(out.config) == data
    assert yaml.load(out.config, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) == data  # noqa: S506
    # the route/cluster fast paths write what the generic writer writes for the canonical item
    body = out.config.decode().split("routes:\n", 1)[1]
    assert body == "".join(map(_fragment, data["routes"])) + "clusters:\n" + "".join(map(_fragment, data["clusters"]))
    # compact but readable: one line per fixed-shape mapping
    assert "  match: {path: /p0, pathKind: Prefix}\n" in out.config.decode()
    assert "  - {id: 10.0.0.0:80, address: 10.0.0.0, port: 80, weight: 1, useHttps: false}\n" in out.config.decode()
    assert out.config_hash == hashlib.sha256(out.config).hexdigest()
    assert out.parts == () and out.delivery_error == ""
    VALIDATOR.validate(yaml.safe_load(out.config))


def test_empty_lists_and_key_order() -> None:
    out = emit([], [], [], [], part_limit=1 << 20, max_parts=8)
    assert out.config == b'schemaVersion: "7.1"\nlisteners: []\ncertificates:\n  items: []\nroutes: []\nclusters: []\n'
    assert yaml.safe_load(out.config) == {"schemaVersion": "7.1", "listeners": [], "certificates": {"items": []},
                                          "routes": [], "clusters": []}
    r = canonical_route({"limits": {}, "match": {"path": "/", "host": "a", "pathKind": "Prefix"}, "clusterId": "c",
                         "order": 1, "id": "x"})
    assert list(r) == ["id", "order", "match", "clusterId", "limits"]
    assert list(r["match"]) == ["host", "path", "pathKind"]


def test_split_into_parts_under_limit_in_order() -> None:
    routes, clusters = _routes(400), _clusters(400)
    limit = 20_000
    out = emit(LISTENERS, [], routes, clusters, part_limit=limit, max_parts=100)
    assert out.delivery_error == ""
    assert len(out.parts) > 2
    root = yaml.safe_load(out.config)
    VALIDATOR.validate(root)
    assert set(root) == {"schemaVersion", "listeners", "certificates", "include"}
    assert [i["file"] for i in root["include"]] == [f"twp.part-{n}.yaml" for n in range(1, len(out.parts) + 1)]
    all_routes: list[Any] = []
    all_clusters: list[Any] = []
    for (name, body), inc in zip(out.parts, root["include"], strict=True):
        assert len(body) <= limit
        assert inc == {"file": name, "sha256": hashlib.sha256(body).hexdigest()}
        doc = yaml.safe_load(body)
        VALIDATOR.validate(doc)
        assert set(doc) == {"routes", "clusters"}
        all_routes += doc["routes"]
        all_clusters += doc["clusters"]
    assert all_routes == routes and all_clusters == clusters


@settings(max_examples=40, deadline=None)
@given(n_routes=st.integers(0, 60), n_clusters=st.integers(0, 30), limit=st.sampled_from([600, 2_000, 5_000, 1 << 20]),
       big=st.integers(-1, 59))
def test_pieces_are_emitted_as_the_fragments_they_hold(n_routes: int, n_clusters: int, limit: int, big: int) -> None:
    """The render hands its routes over as Pieces (one flat list of strings); the bytes, parts
    and errors are those of the same routes given one fragment at a time."""
    routes = _routes(n_routes)
    if 0 <= big < n_routes:
        routes[big]["directResponse"] = {"status": 500, "body": "x" * 700}  # past the smallest limit
        del routes[big]["clusterId"]
    fragments = [route_fragment(r) for r in routes]
    cut = [(f[:7], f[7:20], f[20:]) if i % 3 else f for i, f in enumerate(fragments)]  # tuples and strings
    pieces = emit_module.Pieces.of(cut, route_fragment)
    assert list(pieces) == [c if type(c) is tuple else (c,) for c in cut]
    clusters = _clusters(n_clusters)
    by_pieces = emit(LISTENERS, [], pieces, clusters, part_limit=limit, max_parts=100)
    by_fragments = emit(LISTENERS, [], cut, clusters, part_limit=limit, max_parts=100)
    by_dicts = emit(LISTENERS, [], routes, clusters, part_limit=limit, max_parts=100)
    assert by_pieces == by_fragments == by_dicts


def test_too_many_parts_is_a_delivery_error() -> None:
    out = emit(LISTENERS, [], _routes(400), _clusters(400), part_limit=20_000, max_parts=2)
    assert "mount only 2" in out.delivery_error


def test_item_larger_than_limit_is_a_delivery_error() -> None:
    big = [{"id": "x", "order": 1, "match": {}, "directResponse": {"status": 500, "body": "x" * 5000}}]
    out = emit(LISTENERS, [], big, [], part_limit=2000, max_parts=8)
    assert "more than the part limit" in out.delivery_error


def test_render_reports_delivery_error_on_gateway() -> None:
    objs = base_objects() + [route(name=f"r{i}", hostnames=[f"h{i}.example.com"]) for i in range(50)]
    res = run(objs, part_limit_bytes=3000, max_parts=1, assume_programmed=True)
    assert res.delivery_error
    gw = next(s for s in res.statuses if s.kind == "Gateway")
    programmed = next(c for c in gw.status["conditions"] if c["type"] == "Programmed")
    assert programmed["status"] == "False" and "bytes" in programmed["message"]


def test_rendered_configs_validate_against_schema() -> None:
    res = run(base_objects() + [route()])
    VALIDATOR.validate(yaml.safe_load(res.config))


def test_schema_rejects_unknown_fields() -> None:
    res = run(base_objects() + [route()])
    doc = yaml.safe_load(res.config)
    doc["routes"][0]["bogus"] = 1
    assert not VALIDATOR.is_valid(doc)
    doc = yaml.safe_load(res.config)
    doc["clusters"][0]["destinations"][0]["extra"] = True
    assert not VALIDATOR.is_valid(doc)


_text = st.text(alphabet="ab09/_.:*@=+-#'\" !?&%,[]{}|>~`\\<yYnN", max_size=8) | st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False) | _text
_values = st.recursive(_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
                       max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_text, _values, min_size=1, max_size=4))
def test_fast_writer_round_trips_any_item(item: dict[str, Any]) -> None:
    text = "routes:\n" + _fragment(item)
    assert yaml.safe_load(text) == {"routes": [item]}


@pytest.mark.parametrize("value", ["yes", "on", "null", "~", "1.5", "0x1f", "1:20", "*.example.com", "a: b", "#x",
                                   "- x", "2024-01-01", "=", "<<", ".inf", "x:", "", " lead", "tab\t", "é", "\x7f"])
def test_fast_writer_quotes_what_yaml_would_misread(value: str) -> None:
    assert yaml.safe_load("routes:\n" + _fragment({"v": value, value: 1})) == {"routes": [{"v": value, value: 1}]}


def test_output_is_ascii_even_for_lone_surrogates_and_line_separators() -> None:
    weird = ["a\ud800", "x\u2028y\x85", "\ufeff\x00", "\U0001f600"]
    routes = [{"id": f"r{i}", "order": i + 1, "match": {"headers": {"h": w}}, "directResponse": {"status": 500, "body": w}}
              for i, w in enumerate(weird)]
    out = emit(LISTENERS, [], routes, [], part_limit=1 << 20, max_parts=8)
    assert out.config.isascii()
    assert yaml.safe_load(out.config)["routes"] == routes


_route_values = st.recursive(_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
                             max_leaves=6)
_route_keys = st.sampled_from(["id", "order", "match", "clusterId", "clusters", "redirect", "directResponse",
                               "mirror", "transforms", "policies", "limits"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_route_keys, _route_values, min_size=1, max_size=6))
def test_route_fast_path_equals_generic_writer_of_canonical_route(route: dict[str, Any]) -> None:
    text = route_fragment(route)
    assert text == _fragment(canonical_route(route))
    assert yaml.safe_load("routes:\n" + text) == {"routes": [canonical_route(route)]}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["id", "algorithm", "destinations", "sessionAffinity", "httpClient"]),
                       _route_values, min_size=1, max_size=5))
def test_cluster_fast_path_equals_generic_writer_of_canonical_cluster(cluster: dict[str, Any]) -> None:
    text = cluster_fragment(cluster)
    assert text == _fragment(canonical_cluster(cluster))
    assert yaml.safe_load("clusters:\n" + text) == {"clusters": [canonical_cluster(cluster)]}


def test_keys_in_contract_order_whatever_the_dict_order() -> None:
    route = {"transforms": [{"parameters": {"name": "x", "value": "1"}, "kind": "RequestHeaderSet"}],
             "clusters": [{"weight": 1, "clusterId": "c"}], "match": {"pathKind": "Prefix", "path": "/", "host": "a"},
             "order": 3, "id": "r"}
    assert route_fragment(route) == (
        "- id: r\n  order: 3\n  match: {host: a, path: /, pathKind: Prefix}\n  clusters:\n  - {clusterId: c, weight: 1}\n"
        "  transforms:\n  - {kind: RequestHeaderSet, parameters: {name: x, value: '1'}}\n".replace("'1'", '"1"'))


def test_long_keys_fall_back_to_block_style() -> None:
    name = "x" * 1100
    route = {"id": "r", "order": 1, "match": {"headers": {name: "v"}}, "clusterId": "c"}
    text = route_fragment(route)
    assert "match:\n" in text  # block style, as before the flow format (see tests/reliability)


def _emit_inputs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Wraps emit.emit to record what the render hands it (iterators materialized)."""
    seen: list[dict[str, Any]] = []
    real = emit_module.emit

    def recording(listeners: Any, certificates: Any, routes: Any, clusters: Any, **kw: Any) -> Any:
        # the render hands routes over already written (one fragment each): read them back
        routes, clusters = list(routes), [dict(c) for c in clusters]
        dicts = [yaml.safe_load("".join(r))[0] if isinstance(r, (str, tuple)) else dict(r) for r in routes]
        seen.append({"listeners": list(listeners), "certificates": list(certificates),
                     "routes": [canonical_route(r) for r in dicts], "clusters": [canonical_cluster(c) for c in clusters]})
        return real(listeners, certificates, routes, clusters, **kw)

    monkeypatch.setattr(emit_module, "emit", recording)
    return seen


@pytest.mark.parametrize("case", case_names())
def test_every_golden_config_parses_back_to_the_emitter_input(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from titanium_gateway.offline import build_snapshot
    from titanium_gateway.render import render

    seen = _emit_inputs(monkeypatch)
    options, snap_kwargs = case_options(case)
    snap_kwargs.pop("confirmed_config_hash", None)
    result = render(build_snapshot(case_objects(case), **snap_kwargs), options)
    (given,) = seen
    assert result.config.isascii() and all(body.isascii() for _, body in result.parts)
    doc = yaml.safe_load(result.config)
    include = doc.pop("include", None)
    if include is not None:
        doc["routes"], doc["clusters"] = [], []
        for _, body in result.parts:
            part = yaml.safe_load(body)
            doc["routes"] += part["routes"]
            doc["clusters"] += part["clusters"]
    assert doc == {"schemaVersion": "7.1", "listeners": given["listeners"],
                   "certificates": {"items": given["certificates"]},
                   "routes": given["routes"], "clusters": given["clusters"]}


@given(st.text(alphabet="abcyYnNoOtTfFeE01239/_.-:+~= xX", max_size=12))
def test_the_sure_plain_shortcut_agrees_with_the_resolver(value: str) -> None:
    """A string the shortcut writes plain reads back as the same string."""
    from titanium_gateway.render import emit as em

    if em._SURE_PLAIN.fullmatch(value) and not value.isalpha():
        assert em._scalar(value) == value
        assert yaml.safe_load(f"k: {value}") == {"k": value}
        assert yaml.safe_load(f"k: [{value}, x]") == {"k": [value, "x"]}


_shape_scalars = st.none() | st.booleans() | st.integers(-5, 2**40) | _text


def _shaped_dict(keys: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts with (mostly) exactly ``keys``, in any order, of any value type: the templates'
    shapes and their near misses."""
    extra = st.sampled_from(keys + ("other",))
    return st.one_of(
        st.permutations(keys).flatmap(lambda ks: st.tuples(*[
            _shape_scalars | st.dictionaries(_text, _shape_scalars, max_size=3) for _ in ks
        ]).map(lambda vs, ks=ks: dict(zip(ks, vs, strict=True)))),
        st.dictionaries(extra, _shape_scalars | st.dictionaries(_text, _shape_scalars, max_size=2), max_size=len(keys) + 1),
    )


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_shape_templates_write_exactly_what_the_generic_keyed_writer_writes(data: st.DataObject) -> None:
    """Every template of emit (weighted cluster entry, transform, destination, match) returns
    what ``_flow_keyed`` returns for its keys, whatever the dict holds."""
    em = emit_module
    for write, keys in ((em._cluster_entry, em._CLUSTER_ENTRY_KEYS), (em._kind_entry, em._KIND_KEYS),
                        (em._dest_entry, em.DEST_KEYS), (em._match, ("host", "path", "pathKind")),
                        (em._match, ("path", "pathKind")), (em._match, ("host", "path", "pathKind", "method")),
                        (em._match, ("host", "path", "pathKind", "headers", "query")), (em._match, em.MATCH_KEYS)):
        value = data.draw(_shaped_dict(keys))
        try:
            expected = em._flow_keyed(value, keys if write is not em._match else em.MATCH_KEYS)
        except (em._LongKey, em._Fallback) as exc:
            with pytest.raises(type(exc)):
                write(value)
            continue
        assert write(value) == expected


def test_shape_templates_on_the_render_shapes() -> None:
    em = emit_module
    assert em._cluster_entry({"clusterId": "svc-a.b.80", "weight": 9}) == "{clusterId: svc-a.b.80, weight: 9}"
    assert em._kind_entry({"kind": "RequestHeaderSet", "parameters": {"name": "x", "value": "yes"}}) == (
        '{kind: RequestHeaderSet, parameters: {name: x, value: "yes"}}')
    assert em._dest_entry({"id": "10.0.0.1:80", "address": "10.0.0.1", "port": 80, "weight": 1, "useHttps": False}) == (
        "{id: 10.0.0.1:80, address: 10.0.0.1, port: 80, weight: 1, useHttps: false}")
    assert em._match({"host": "a.example.com", "path": "/", "pathKind": "Prefix"}) == (
        "{host: a.example.com, path: /, pathKind: Prefix}")
    assert em._match({"path": "1.5", "pathKind": "Exact"}) == '{path: "1.5", pathKind: Exact}'
    assert em._match({"host": "a", "path": "/", "pathKind": "Prefix", "headers": {"x-a": "1", "b": "yes"}}) == (
        '{host: a, path: /, pathKind: Prefix, headers: {x-a: "1", b: "yes"}}')
    assert em._match({"method": "GET", "path": "/"}) == "{path: /, method: GET}"  # contract order, whatever the dict's


@given(st.text(alphabet="0123456789.:", max_size=22))
def test_the_sure_plain_shortcut_for_addresses_agrees_with_the_resolver(value: str) -> None:
    from titanium_gateway.render import emit as em

    if em._SURE_PLAIN.fullmatch(value):
        assert yaml.safe_load(f"k: {value}") == {"k": value}
        assert yaml.safe_load(f"k: [{value}, x]") == {"k": [value, "x"]}
        assert yaml.load(f"k: {value}", Loader=yaml.SafeLoader) == {"k": value}


@pytest.mark.parametrize("value", ["10.0.0.1", "255.255.255.255:65535", "1.2.3.4:0", "192.168.0.10:8080"])
def test_addresses_are_plain(value: str) -> None:
    assert emit_module._scalar(value) == value
    assert yaml.safe_load(f"k: {value}") == {"k": value}


@settings(max_examples=200, deadline=None)
@given(st.permutations(["name", "value"]).flatmap(lambda ks: st.tuples(_shape_scalars, _shape_scalars).map(
    lambda vs, ks=ks: dict(zip(ks, vs, strict=True)))) | st.dictionaries(st.sampled_from(["name", "value", "x"]),
                                                                         _shape_scalars, max_size=3))
def test_header_parameters_template_writes_what_flow_writes(params: dict[str, Any]) -> None:
    em = emit_module
    try:
        expected = em._flow(params)
    except (em._LongKey, em._Fallback) as exc:
        with pytest.raises(type(exc)):
            em._flow_params(params)
        return
    assert em._flow_params(params) == expected


_host_less_match = st.fixed_dictionaries({}, optional={
    "path": _text, "pathKind": st.sampled_from(["Exact", "Prefix", "Regex"]) | _text, "method": _text,
    "headers": st.dictionaries(_text, _text | st.integers(0, 2) | st.booleans(), max_size=2),
    "query": st.dictionaries(_text, _text, max_size=2), "queryRegex": st.dictionaries(_text, _text, max_size=2),
})


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab/-0", min_size=1, max_size=8), st.none() | st.just("") | _text, _host_less_match,
       st.permutations(range(6)))
def test_route_head_of_host_writes_what_route_head_writes(rid: str, host: str | None, match: dict[str, Any],
                                                           order: list[int]) -> None:
    """The host-less match text is cached by content and spliced after the host: the same lines
    as writing ``{"host": host, **match}``, in any key order of ``match``, twice in a row."""
    em = emit_module
    items = list(match.items())
    match = dict(items[i] for i in order if i < len(items))
    whole = {"host": host, **match} if host else dict(match)
    expected = em.route_head(rid, whole)
    assert em.route_head_of_host(rid, host, match) == expected
    assert em.route_head_of_host(rid, host, match) == expected


_weird = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10) | st.sampled_from(
    ["a\ud800", "x\u2028y\x85", "\ufeff\x00", "\U0001f600", "é"])


@settings(max_examples=300, deadline=None)
@given(_weird, _weird, _weird, st.dictionaries(st.sampled_from(["directResponse", "clusterId", "transforms"]),
                                               _weird | st.dictionaries(_weird, _weird, max_size=2), min_size=1))
def test_the_pieces_emit_measures_with_len_are_ascii(rid: str, host: str, path: str, rest: dict[str, Any]) -> None:
    """emit sizes a route's pieces (a tuple) with ``len``: every writer of pieces writes ASCII."""
    em = emit_module
    match = {"path": path, "pathKind": "Exact", "headers": {host: path}}
    pieces = [em.route_head(rid, {"host": host, **match}), em.route_head_of_host(rid, host, match),
              em.route_fragment_split({"id": rid, "match": match, **rest}), (em.route_tail(rest),)]
    for texts in pieces:
        for text in texts or ():
            assert text is None or text.isascii()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"kind": st.sampled_from(["RequestHeaderSet", "ResponseHeaderRemove", "x y"]),
                                       "parameters": st.dictionaries(st.sampled_from(["name", "value", "k" * 1100]),
                                                                     st.text(max_size=5), max_size=2)}),
                max_size=3))
def test_transforms_block_is_the_route_tail_of_the_transforms(transforms: list[dict[str, Any]]) -> None:
    assert emit_module.transforms_block(transforms) == emit_module.route_tail({"transforms": transforms})


_policies = st.lists(st.fixed_dictionaries({
    "kind": st.sampled_from(["IpAllowDeny", "RateLimit", "x y"]),
    "parameters": st.dictionaries(st.sampled_from(["allow", "partition", "name", "value", "k" * 1100]),
                                  st.text(max_size=5) | st.lists(st.text(max_size=4), max_size=2), max_size=3)}),
    max_size=3)


@settings(max_examples=200, deadline=None)
@given(_policies, _policies)
def test_kind_lines_in_runs_are_the_route_tail_of_the_list(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    """A policy list's lines written in runs and joined are its route_tail (the Ingress
    translator writes an annotation set's policies once and a RateLimit per Ingress)."""
    whole = emit_module.route_tail({"policies": a + b}) if a + b else ""
    first, second = emit_module.kind_lines(a), emit_module.kind_lines(b)
    if first is None or second is None:
        assert whole is None
    else:
        assert ("  policies:\n" + first + second if a + b else "") == whole


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["id", "algorithm", "destinations", "sessionAffinity", "httpClient"]),
                                _route_values, min_size=1, max_size=5), min_size=1, max_size=4),
       st.lists(st.integers(0, 3), max_size=4))
def test_cluster_fragment_list_memo_writes_what_it_writes_alone(clusters: list[dict[str, Any]],
                                                               sharing: list[int]) -> None:
    """Clusters that share one destinations list object (the settings variants of a Service
    port) are written as each is alone, with the memo of one emit."""
    for i, j in enumerate(sharing):
        if i < len(clusters) and j < len(clusters) and "destinations" in clusters[j]:
            clusters[i]["destinations"] = clusters[j]["destinations"]
    lists: dict[int, tuple[Any, str]] = {}
    assert [cluster_fragment(c, lists) for c in clusters] == [cluster_fragment(c) for c in clusters]
