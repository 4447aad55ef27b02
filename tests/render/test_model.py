"""The model and its one emitter: nothing of a model value is lost on the way to the bytes.

* Generated documents (every model class, every field, from the type hints: a field added to the
  model is generated too) are emitted, parsed back with libyaml's loader and the pure-Python
  one, read back into model values and compared with what was emitted; split into parts too.
* Every golden case: the rendered bytes, parsed back, are the render's own ``result.document``.
* The model writers write exactly what the generic writer writes for the same item as plain data.
* Every model field takes a value other than its default in some golden case (or is listed
  below with the reason why not): a field no translator fills, or one that is never emitted,
  fails here or above.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Union

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from titanium_gateway.twp import emit
from titanium_gateway.twp import model as m
from titanium_gateway.twp.load import load_config, read_document
from titanium_gateway.twp.model import Document

from .conftest import case_names, render_case

LOADERS = [yaml.CSafeLoader, yaml.SafeLoader]


def parse(data: bytes, loader: Any = yaml.CSafeLoader) -> Any:
    return yaml.load(data, Loader=loader)  # noqa: S506 - safe loaders only


def read_back(out: emit.Emitted, loader: Any = yaml.CSafeLoader) -> Document:
    return read_document(parse(out.config, loader), [parse(body, loader) for _, body in out.parts])


# == generated documents =====================================================================
_text = st.text(max_size=12) | st.sampled_from(["", "yes", "null", "1.5", "a: b", "#x", "- x", "*.a.b", "é", "\u2028",
                                                "\x00", "\ufeff", "\U0001f600", "k" * 1001, "'", '"', "\\"])


def _strategy(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for a model field's type."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return st.one_of([_strategy(a) for a in typing.get_args(tp)])
    if tp is type(None):
        return st.none()
    if tp is str:
        return _text
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**40), 2**40)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if origin is tuple:
        args = typing.get_args(tp)
        if args == (tuple[str, str], ...):  # a mapping, as (key, value) pairs: unique keys
            return st.dictionaries(_text, _text, max_size=3).map(lambda d: tuple(d.items()))
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(_strategy(args[0]), max_size=3).map(tuple)
        return st.tuples(*[_strategy(a) for a in args])
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return st.builds(tp, **{f.name: st.deferred(lambda t=hints[f.name]: _strategy(t))
                                for f in dataclasses.fields(tp) if f.init})
    raise TypeError(f"no strategy for {tp!r}")


documents = _strategy(Document)
routes = _strategy(m.Route)
clusters = _strategy(m.Cluster)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                             HealthCheck.data_too_large])


@SETTINGS
@given(documents)
def test_a_document_reads_back_as_it_was_emitted(doc: Document) -> None:
    out = emit.emit(doc, part_limit=1 << 30, max_parts=8)
    assert out.config.isascii()
    for loader in LOADERS:
        assert read_back(out, loader) == doc


@SETTINGS
@given(documents, st.sampled_from([700, 2_000, 10_000]))
def test_a_document_split_into_parts_reads_back_as_it_was_emitted(doc: Document, limit: int) -> None:
    out = emit.emit(doc, part_limit=limit, max_parts=1000)
    if out.delivery_error:  # an item past the limit: a delivery error, never a truncated config
        assert "bytes" in out.delivery_error
        return
    assert read_back(out) == doc


@SETTINGS
@given(routes, st.integers(1, 10**6))
def test_the_route_writer_writes_what_the_generic_writer_writes(route: m.Route, order: int) -> None:
    assert emit.route_text(route, order) == emit._fragment(emit.route_data(route, order))


@SETTINGS
@given(clusters)
def test_the_cluster_writer_writes_what_the_generic_writer_writes(cluster: m.Cluster) -> None:
    assert emit.cluster_text(cluster) == emit._fragment(emit.cluster_data(cluster))


def test_a_field_the_emitter_does_not_write_is_caught() -> None:
    """What the round trip above guards against: a behavior field the route writer leaves out."""
    route = m.Route("r", None, m.Match(), m.Behavior(m.Forward("c"), limits=m.Limits("00:00:01")), "", m.UNKNOWN_SOURCE,
                    0, 0)
    doc = Document(routes=(route,))
    assert read_back(emit.emit(doc, part_limit=1 << 20, max_parts=1)) == doc
    lost = dataclasses.replace(route, behavior=dataclasses.replace(route.behavior, limits=None))
    assert lost != route


# == the golden corpus =======================================================================
@pytest.mark.parametrize("case", case_names())
def test_every_golden_config_reads_back_as_its_document(case: str) -> None:
    result = render_case(case)
    assert result.document is not None and result.planes[0].document is result.document
    for plane in result.planes:  # (each data plane's, the shared one first)
        assert plane.document is not None
        for loader in LOADERS:
            assert read_back(emit.Emitted(plane.config, plane.config_hash, plane.parts), loader) == plane.document
        # and with the contract's checks of the values (the reader of the data plane)
        assert load_config(plane.config, dict(plane.parts)).document == plane.document


def _field_values(value: Any, seen: dict[tuple[str, str], bool]) -> None:
    """Record, per (class, field), whether some value of it is not the field's default."""
    if isinstance(value, tuple):
        for v in value:
            _field_values(v, seen)
        return
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return
    for f in dataclasses.fields(value):
        v = getattr(value, f.name)
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)  # type: ignore[misc]
        key = (type(value).__name__, f.name)
        seen[key] = seen.get(key, False) or v != default
        _field_values(v, seen)


#: Model fields no golden case sets, and why.
NOT_PRODUCED = {
    ("PathRemovePrefix", "prefix"): "a contract transform the translators do not use",
    ("PathPrefix", "prefix"): "a contract transform the translators do not use",
    ("Listener", "host"): "the render binds every address (0.0.0.0, the default); other data planes' configs may not",
}
#: Every model value class a document can hold.
ALL_CLASSES = {cls for cls in vars(m).values() if isinstance(cls, type) and dataclasses.is_dataclass(cls)
               and cls.__module__ == m.__name__ and cls not in (m.ClusterSettings, m.Include)}  # (Include: emit's, when it splits)


def test_every_model_field_is_produced_by_some_golden_case() -> None:
    seen: dict[tuple[str, str], bool] = {}
    for case in case_names():
        for plane in render_case(case).planes:
            assert plane.document is not None
            _field_values(plane.document, seen)
    expected = {(cls.__name__, f.name) for cls in ALL_CLASSES for f in dataclasses.fields(cls)}
    never = sorted(k for k in expected if not seen.get(k) and k not in NOT_PRODUCED)
    assert not never, f"model fields no golden case produces (a translator branch missing?): {never}"
    stale = sorted(k for k in NOT_PRODUCED if seen.get(k))
    assert not stale, f"listed as not produced, but produced: {stale}"


# == provenance ==============================================================================
def test_routes_know_their_source_rule_match_and_host_and_clusters_their_backend() -> None:
    from tests.render.core_fixtures import base_objects, route, run, service
    from tests.render.test_ingress import CLASS, canary, ing, path
    from tests.render.test_ingress import service as ingress_service

    objs = [*base_objects(), service("web"),
            route("shop", hostnames=["a.example.com", "b.example.com"], rules=[
                {"matches": [{"path": {"type": "PathPrefix", "value": "/x"}}, {"method": "GET"}],
                 "backendRefs": [{"name": "api", "port": 8080}]},
                {"backendRefs": [{"name": "web", "port": 8080, "weight": 3}, {"name": "api", "port": 8080}]}]),
            CLASS, *ingress_service("shop"), *ingress_service("shop-v2"),
            ing("store", paths=[path("/")], default_backend={"service": {"name": "shop", "port": {"number": 8080}}}),
            canary("store-canary", canary_weight="20", canary_by_header="X-C")]
    doc = run(objs).document
    assert doc is not None
    shop = m.Source("HTTPRoute", "apps", "shop")
    got = {(r.id, r.rule_index, r.match_index, r.host) for r in doc.routes_of(shop)}
    assert got == {(f"httproute/apps/shop/r{ri}m{mi}/{h}", ri, mi, h) for ri, mi in ((0, 0), (0, 1), (1, 0))
                   for h in ("a.example.com", "b.example.com")}
    by_id = {r.id: r for r in doc.routes}
    assert by_id["httproute/apps/shop/r0m0/a.example.com"].behavior is by_id["httproute/apps/shop/r0m1/b.example.com"].behavior
    assert by_id["httproute/apps/shop/r0m0/a.example.com"].match is by_id["httproute/apps/shop/r0m0/b.example.com"].match
    store = [r for r in doc.routes if r.source == m.Source("Ingress", "apps", "store")]
    assert {(r.rule_index, r.match_index) for r in store} == {(0, 0), (-1, 0)}
    header = [r for r in doc.routes if r.source.name == "store-canary"]
    assert len(header) == 1 and header[0].match.headers == (("x-c", "always"),)
    for r in doc.routes:
        for cid in m.cluster_ids(r.behavior.action):
            cluster = doc.cluster(cid)
            assert cluster is not None and cluster.backend is not None
            assert (cluster.backend.namespace, cluster.backend.port) == ("apps", 8080)
    assert {doc.cluster(cid).backend.service for cid in m.cluster_ids(  # type: ignore[union-attr]
        by_id["httproute/apps/shop/r1m0/a.example.com"].behavior.action)} == {"web", "api"}
    assert doc.cluster("nope") is None
    assert list(doc.routes) == sorted(doc.routes, key=lambda r: (r.key, r.id))
