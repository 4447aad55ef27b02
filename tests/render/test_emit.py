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
from titanium_gateway.twp import emit as emit_module
from titanium_gateway.twp import model as m
from titanium_gateway.twp.emit import _fragment, cluster_data, emit, route_data
from titanium_gateway.twp.load import read_cluster, read_route
from titanium_gateway.twp.model import Document

from .conftest import case_names, case_objects, case_options

SCHEMA = json.loads((Path(__file__).parents[2] / "titanium_gateway/twp/schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _routes(n: int) -> list[dict[str, Any]]:
    return [{"id": f"httproute/ns/r{i}/r0m0", "order": i + 1, "match": {"path": f"/p{i}", "pathKind": "Prefix"},
             "clusterId": f"svc-ns.s{i}.80"} for i in range(n)]


def _clusters(n: int) -> list[dict[str, Any]]:
    return [{"id": f"svc-ns.s{i}.80", "destinations": [
        {"id": f"10.0.{i // 250}.{i % 250}:80", "address": f"10.0.{i // 250}.{i % 250}", "port": 80,
         "weight": 1, "useHttps": False}]} for i in range(n)]


LISTENERS = [{"host": "0.0.0.0", "port": 8080, "type": "transparent", "decryptSsl": False}]


def _doc(routes: list[dict[str, Any]], clusters: list[dict[str, Any]], listeners: Any = LISTENERS) -> Document:
    """The document of these routes (plain data, in order) and clusters."""
    return Document(tuple(m.Listener(x["port"], x["decryptSsl"]) for x in listeners), (),
                    tuple(read_route(r) for r in routes), tuple(read_cluster(c) for c in clusters))


def test_fragment_assembly_parses_back_and_matches_pyyaml_layout() -> None:
    out = emit(_doc(_routes(5), _clusters(5)), part_limit=1 << 30, max_parts=8)
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
    out = emit(Document(), part_limit=1 << 20, max_parts=8)
    assert out.config == b'schemaVersion: "7.1"\nlisteners: []\ncertificates:\n  items: []\nroutes: []\nclusters: []\n'
    assert yaml.safe_load(out.config) == {"schemaVersion": "7.1", "listeners": [], "certificates": {"items": []},
                                          "routes": [], "clusters": []}
    r = route_data(read_route({"limits": {"requestTimeout": "00:00:01"}, "match": {"path": "/", "host": "a",
                               "pathKind": "Prefix"}, "clusterId": "c", "id": "x"}), 1)
    assert list(r) == ["id", "order", "match", "clusterId", "limits"]
    assert list(r["match"]) == ["host", "path", "pathKind"]


def test_split_into_parts_under_limit_in_order() -> None:
    routes, clusters = _routes(400), _clusters(400)
    limit = 20_000
    out = emit(_doc(routes, clusters), part_limit=limit, max_parts=100)
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
def test_parts_hold_the_routes_and_clusters_of_the_whole_document(n_routes: int, n_clusters: int, limit: int,
                                                                  big: int) -> None:
    """Split or not, the items are the document's, in order: the same bytes of routes and
    clusters as the unsplit config; an item past the limit is a delivery error."""
    routes = _routes(n_routes)
    if 0 <= big < n_routes:
        routes[big]["directResponse"] = {"status": 500, "body": "x" * 700}  # past the smallest limit
        del routes[big]["clusterId"]
    doc = _doc(routes, _clusters(n_clusters))
    whole = emit(doc, part_limit=1 << 30, max_parts=1)
    split = emit(doc, part_limit=limit, max_parts=1000)
    if split.delivery_error:
        assert "bytes" in split.delivery_error and limit < 1000  # (an item, or the root, past the limit)
        return
    if not split.parts:
        assert split.config == whole.config
        return
    for name, body in split.parts:
        assert len(body) <= limit, name
    parsed = yaml.safe_load(whole.config)
    assert [r for _, p in split.parts for r in yaml.safe_load(p)["routes"]] == parsed["routes"]
    assert [c for _, p in split.parts for c in yaml.safe_load(p)["clusters"]] == parsed["clusters"]


def test_too_many_parts_is_a_delivery_error() -> None:
    out = emit(_doc(_routes(400), _clusters(400)), part_limit=20_000, max_parts=2)
    assert "mount only 2" in out.delivery_error


def test_item_larger_than_limit_is_a_delivery_error() -> None:
    big = [{"id": "x", "order": 1, "match": {}, "directResponse": {"status": 500, "body": "x" * 5000}}]
    out = emit(_doc(big, []), part_limit=2000, max_parts=8)
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


def test_output_is_ascii_for_line_separators_and_never_holds_a_lone_surrogate() -> None:
    weird = ["x\u2028y\x85", "\ufeff\x00", "\U0001f600", "a\ud800"]
    routes = [{"id": f"r{i}", "order": i + 1, "match": {"headers": {"h": w}}, "directResponse": {"status": 500, "body": w}}
              for i, w in enumerate(weird)]
    out = emit(_doc(routes, []), part_limit=1 << 20, max_parts=8)
    assert out.config.isascii()
    # no YAML parser reads a lone surrogate: the translators refuse such input, and the writer
    # (should one slip through) writes U+FFFD, never an escape libyaml rejects
    assert yaml.load(out.config, Loader=yaml.CSafeLoader)["routes"][:3] == routes[:3]  # noqa: S506
    last = yaml.load(out.config, Loader=yaml.CSafeLoader)["routes"][3]  # noqa: S506
    assert last["directResponse"]["body"] == "a\ufffd" and last["match"]["headers"] == {"h": "a\ufffd"}


def test_keys_in_contract_order() -> None:
    route = {"transforms": [{"parameters": {"name": "x", "value": "1"}, "kind": "RequestHeaderSet"}],
             "clusters": [{"weight": 1, "clusterId": "c"}], "match": {"pathKind": "Prefix", "path": "/", "host": "a"},
             "order": 3, "id": "r"}
    assert emit_module.route_text(read_route(route), 3) == (
        "- id: r\n  order: 3\n  match: {host: a, path: /, pathKind: Prefix}\n  clusters:\n  - {clusterId: c, weight: 1}\n"
        "  transforms:\n  - {kind: RequestHeaderSet, parameters: {name: x, value: '1'}}\n".replace("'1'", '"1"'))


def test_long_keys_fall_back_to_block_style() -> None:
    name = "x" * 1100
    route = {"id": "r", "order": 1, "match": {"headers": {name: "v"}}, "clusterId": "c"}
    text = emit_module.route_text(read_route(route), 1)
    assert "match:\n" in text  # block style, as before the flow format (see tests/reliability)


@pytest.mark.parametrize("case", case_names())
def test_every_golden_config_parses_back_to_the_emitter_input(case: str) -> None:
    from titanium_gateway.offline.snapshot import build_snapshot
    from titanium_gateway.render import render

    options, snap_kwargs = case_options(case)
    snap_kwargs.pop("confirmed_config_hash", None)
    result = render(build_snapshot(case_objects(case), **snap_kwargs), options)
    given = result.document
    assert given is not None
    assert result.config.isascii() and all(body.isascii() for _, body in result.parts)
    for loader in (yaml.CSafeLoader, yaml.SafeLoader):
        doc = yaml.load(result.config, Loader=loader)  # noqa: S506
        include = doc.pop("include", None)
        if include is not None:
            doc["routes"], doc["clusters"] = [], []
            for _, body in result.parts:
                part = yaml.load(body, Loader=loader)  # noqa: S506
                doc["routes"] += part["routes"]
                doc["clusters"] += part["clusters"]
        listeners = [{"host": "0.0.0.0", "port": x.port, "type": "transparent", "decryptSsl": x.decrypt_ssl}
                     for x in given.listeners]
        certificates = [{"file": c.file, "hosts": list(c.hosts), **({"default": True} if c.default else {})}
                        for c in given.certificates]
        assert doc == {"schemaVersion": "7.1", "listeners": listeners, "certificates": {"items": certificates},
                       "routes": [route_data(r, n + 1) for n, r in enumerate(given.routes)],
                       "clusters": [cluster_data(c) for c in given.clusters]}


@given(st.text(alphabet="abcyYnNoOtTfFeE01239/_.-:+~= xX", max_size=12))
def test_the_sure_plain_shortcut_agrees_with_the_resolver(value: str) -> None:
    """A string the shortcut writes plain reads back as the same string."""
    from titanium_gateway.twp import emit as em

    if em._SURE_PLAIN.fullmatch(value) and not value.isalpha():
        assert em._scalar(value) == value
        assert yaml.safe_load(f"k: {value}") == {"k": value}
        assert yaml.safe_load(f"k: [{value}, x]") == {"k": [value, "x"]}


@given(st.text(alphabet="0123456789.:", max_size=22))
def test_the_sure_plain_shortcut_for_addresses_agrees_with_the_resolver(value: str) -> None:
    from titanium_gateway.twp import emit as em

    if em._SURE_PLAIN.fullmatch(value):
        assert yaml.safe_load(f"k: {value}") == {"k": value}
        assert yaml.safe_load(f"k: [{value}, x]") == {"k": [value, "x"]}
        assert yaml.load(f"k: {value}", Loader=yaml.SafeLoader) == {"k": value}


@pytest.mark.parametrize("value", ["10.0.0.1", "255.255.255.255:65535", "1.2.3.4:0", "192.168.0.10:8080"])
def test_addresses_are_plain(value: str) -> None:
    assert emit_module._scalar(value) == value
    assert yaml.safe_load(f"k: {value}") == {"k": value}


def test_clusters_of_one_service_port_share_their_destination_lines() -> None:
    """Clusters that share one destinations tuple (the settings variants of a Service port) are
    written as each is alone."""
    dests = tuple(m.Destination(f"10.0.0.{i}:80", f"10.0.0.{i}", 80, 1, False) for i in range(3))
    clusters = (m.Cluster(id="a", destinations=dests), m.Cluster(id="b", algorithm="Random", destinations=dests))
    out = emit(Document(clusters=clusters), part_limit=1 << 20, max_parts=1)
    alone = "".join(emit_module.cluster_text(c) for c in clusters)
    assert out.config.decode().endswith("clusters:\n" + alone)


def test_an_emit_cache_gives_the_same_bytes_and_keeps_one_documents_worth() -> None:
    res = run(base_objects() + [route(name=f"r{i}", hostnames=[f"h{i}.example.com"]) for i in range(5)])
    doc = res.document
    assert doc is not None
    cache = emit_module.EmitCache()
    fresh = emit(doc, part_limit=1 << 20, max_parts=1)
    assert emit(doc, part_limit=1 << 20, max_parts=1, cache=cache) == fresh
    assert emit(doc, part_limit=1 << 20, max_parts=1, cache=cache) == fresh  # from the cache
    assert set(cache.routes) == {r.id for r in doc.routes} and set(cache.clusters) == set(map(id, doc.clusters))
    smaller = Document(doc.listeners, doc.certificates, doc.routes[:1], doc.clusters)
    emit(smaller, part_limit=1 << 20, max_parts=1, cache=cache)
    assert set(cache.routes) == {doc.routes[0].id}


_EDITED_DOC = run(base_objects() + [route(name=f"r{i}", hostnames=[f"h{i}.example.com"]) for i in range(300)]).document


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["drop", "add", "move", "rewrite"]), st.integers(0, 1000)),
                min_size=1, max_size=6),
       st.sampled_from([1 << 20, 2000, 700]))
def test_an_emit_cache_after_routes_are_added_removed_moved_or_rewritten_gives_the_same_bytes(
        edits: list[tuple[str, int]], part_limit: int) -> None:
    """The cache takes the text of the routes a document begins and ends with as the last emit
    wrote them (with new ``order`` lines after an added or removed route) and the bytes and hash
    of the parts whose text is unchanged: the bytes are always those of an emit without it."""
    import dataclasses

    doc = _EDITED_DOC
    assert doc is not None and len(doc.routes) == 300
    pool = list(doc.routes)
    routes = pool[: len(pool) // 2]
    cache = emit_module.EmitCache()
    emit(doc, part_limit=part_limit, max_parts=999, cache=cache)
    for doc_routes in (routes, list(pool)):
        for n, (op, i) in enumerate(edits):
            if op == "drop" and doc_routes:
                del doc_routes[i % len(doc_routes)]
            elif op == "add":
                doc_routes.insert(i % (len(doc_routes) + 1), dataclasses.replace(pool[i % len(pool)], id=f"new-{n}-{len(doc_routes)}"))
            elif op == "move" and doc_routes:
                doc_routes.insert(i % len(doc_routes), doc_routes.pop((i * 7) % len(doc_routes)))
            elif op == "rewrite" and doc_routes:
                j = i % len(doc_routes)
                doc_routes[j] = dataclasses.replace(doc_routes[j], host=f"rewritten{i}.example.com")
            edited = Document(doc.listeners, doc.certificates, tuple(doc_routes), doc.clusters)
            want = emit(edited, part_limit=part_limit, max_parts=999)
            assert emit(edited, part_limit=part_limit, max_parts=999, cache=cache) == want
            assert set(cache.routes) == {r.id for r in doc_routes}
