"""Whole-render properties of the core: determinism, robustness, speed."""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.render.core_fixtures import (
    endpoints,
    gateway,
    gatewayclass,
    grant,
    listener,
    route,
    run,
    service,
    tls_secret,
)
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.snapshot import Snapshot


def _scenario() -> list[dict[str, Any]]:
    gw = gateway(listeners=[listener("http", 80, hostname="*.example.com"),
                            listener("https", 443, "HTTPS", tls={"certificateRefs": [{"name": "shop-tls"}]})])
    return [
        gatewayclass(), gw, tls_secret(), service(), endpoints(addresses=("10.0.0.3", "10.0.0.1")),
        service("b"), endpoints("b", addresses=("10.0.1.1",)), grant("apps", "HTTPRoute", "team", "Service"),
        route("r1", hostnames=["a.example.com"]),
        route("r2", rules=[{"matches": [{"path": {"value": "/x"}}],
                            "backendRefs": [{"name": "b", "port": 8080, "weight": 2}, {"name": "api", "port": 8080}]}]),
        route("r3", ns="team", parents=[{"name": "web", "namespace": "apps"}],
              rules=[{"backendRefs": [{"name": "api", "namespace": "apps", "port": 8080}]}]),
    ]


def test_same_input_any_order_same_bytes() -> None:
    objs = _scenario()
    base = run(copy.deepcopy(objs))
    rng = random.Random(7)
    for _ in range(5):
        shuffled = copy.deepcopy(objs)
        rng.shuffle(shuffled)
        again = run(shuffled)
        assert again.config == base.config
        assert again.statuses == base.statuses
        assert again.certificates == base.certificates
        assert again.tls_files == base.tls_files


def test_render_does_not_mutate_input() -> None:
    objs = _scenario()
    before = copy.deepcopy(objs)
    run(objs)
    assert objs == before


def test_ingress_sees_gateway_ports() -> None:
    from titanium_gateway.render import builder

    seen: dict[int, str] = {}
    original = builder.RenderContext.take_ordered_routes

    def spy(self: builder.RenderContext) -> Any:
        seen.update(self.gateway_ports)
        return original(self)

    builder.RenderContext.take_ordered_routes = spy  # type: ignore[method-assign]
    try:
        run(_scenario())
    finally:
        builder.RenderContext.take_ordered_routes = original  # type: ignore[method-assign]
    assert seen == {8080: "HTTP", 8443: "HTTPS"}


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)
_keys = ["name", "namespace", "port", "protocol", "hostname", "listeners", "rules", "parentRefs", "matches",
         "filters", "backendRefs", "type", "value", "path", "headers", "tls", "certificateRefs", "allowedRoutes",
         "hostnames", "timeouts", "weight", "kinds", "requestRedirect", "urlRewrite", "requestMirror"]


def _mutate(obj: Any, draw: Any) -> Any:
    """Replace random nested values of a valid object with junk."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ("kind", "apiVersion"):
                out[k] = v
            elif draw(st.integers(0, 9)) == 0:
                out[k] = draw(_json)
            else:
                out[k] = _mutate(v, draw)
        if draw(st.integers(0, 4)) == 0:
            out[draw(st.sampled_from(_keys))] = draw(_json)
        return out
    if isinstance(obj, list):
        return [_mutate(v, draw) for v in obj] + ([draw(_json)] if draw(st.integers(0, 5)) == 0 else [])
    return obj


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_malformed_input_never_raises(data: st.DataObject) -> None:
    objs = [_mutate(o, data.draw) for o in _scenario()]
    objs += [
        route("r9", rules=[{"matches": [{"path": {"type": "RegularExpression", "value": "[a-z]+"},
                                         "headers": [{"name": "h", "value": "v"}],
                                         "queryParams": [{"name": "q", "value": "v"}], "method": "GET"}],
                            "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": "h", "path": {
                                "type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}},
                                {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "api", "port": 8080},
                                                                            "percent": 5}}],
                            "timeouts": {"request": "1s"}, "backendRefs": [{"name": "api", "port": 8080}]}]),
    ]
    objs[-1] = _mutate(objs[-1], data.draw)
    snap = Snapshot.from_objects([o for o in objs if isinstance(o.get("metadata"), dict)])
    result = render(snap, RenderOptions())
    assert result.config_hash


def test_ten_thousand_routes_render_in_parts() -> None:
    """Scale, not speed (timings live in benchmarks/): every route gets its status and the
    config is split into parts."""
    objs: list[dict[str, Any]] = [gatewayclass(), gateway()]
    for i in range(200):
        objs += [service(f"s{i}"), endpoints(f"s{i}", addresses=(f"10.1.{i // 200}.{i % 200}",))]
    for i in range(10_000):
        objs.append(route(f"r{i}", hostnames=[f"h{i % 500}.example.com"], rules=[
            {"matches": [{"path": {"value": f"/p{i}"}}], "backendRefs": [{"name": f"s{i % 200}", "port": 8080}]}]))
    snap = Snapshot.from_objects(objs)
    result = render(snap, RenderOptions())
    assert len(result.statuses) == 10_002
    assert result.parts  # 10k routes exceed one ConfigMap


def test_garbage_snapshot_values_never_raise() -> None:
    from titanium_gateway.render.snapshot import KIND_FIELDS

    junk: dict[str, Any] = {"a/b": None, "c/d": [], "e": "x", "f/g": {"metadata": None, "spec": None, "status": 5},
                            "h/i": {"metadata": {"name": ["x"], "namespace": 3, "generation": "1"}, "spec": {}}}
    result = render(Snapshot(**{f: junk for f in KIND_FIELDS.values()}), RenderOptions())
    assert result.statuses == () and result.delivery_error == ""
