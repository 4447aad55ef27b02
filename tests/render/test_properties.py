"""Property tests of the pure render (hypothesis).

* Any input order gives the same bytes, statuses, events and certificates.
* Generated and mutated objects (fields deleted, wrong types, huge values) never make the render
  raise, and the output always validates against twp.schema.json.
* The render is pure: calling it twice on the same snapshot gives the same result.

``HYPOTHESIS_EXAMPLES`` sets the example count (default small for CI speed).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from titanium_gateway.offline.load import apply_defaults
from titanium_gateway.offline.outputs import output_files
from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import RenderResult
from titanium_gateway.render.snapshot import object_key

from .conftest import case_names, case_objects, case_options, require_render, validate_twp

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "25"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: Per golden case (every case runs): a share of the example budget, at least 3.
PER_CASE = settings(SETTINGS, max_examples=max(3, EXAMPLES // 5))
CASES = case_names() or ["<none>"]


def _render(objects: Sequence[Mapping[str, Any]], options: RenderOptions | None = None, **snap: Any) -> RenderResult:
    render = require_render()
    return render(build_snapshot(objects, **snap), options or RenderOptions())


def _fingerprint(result: RenderResult) -> dict[str, bytes]:
    files = output_files(result)
    files["listeners"] = repr(sorted(result.listeners)).encode()
    files["delivery_error"] = result.delivery_error.encode()
    return files


def _check_valid(result: RenderResult) -> None:
    validate_twp(result.config, "twp.yaml")
    for name, data in result.parts:
        validate_twp(data, name)
    list(yaml.safe_load_all(output_files(result)["status.yaml"].decode()))


# --- input order ----------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@PER_CASE
@given(data=st.data())
def test_input_order_does_not_matter(case: str, data: st.DataObject) -> None:
    if case == "<none>":
        pytest.skip("no golden cases")
    # Defaults (creationTimestamp/uid stand-ins) are fixed first: they follow file order by design.
    objects = apply_defaults(case_objects(case))
    options, snap = case_options(case)
    shuffled = data.draw(st.permutations(objects))
    assert _fingerprint(_render(list(shuffled), options, **snap)) == _fingerprint(_render(objects, options, **snap))


@pytest.mark.parametrize("case", CASES)
def test_render_is_pure(case: str) -> None:
    if case == "<none>":
        pytest.skip("no golden cases")
    render = require_render()
    options, snap = case_options(case)
    objects = apply_defaults(case_objects(case))
    before = copy.deepcopy(objects)
    snapshot = build_snapshot(objects, **snap)
    first, second = render(snapshot, options), render(snapshot, options)
    assert _fingerprint(first) == _fingerprint(second)
    assert first.config_hash == second.config_hash
    assert objects == before, "the render mutated its input"


# --- mutations of every golden input -----------------------------------------------------

_HUGE = st.sampled_from(["x" * 70000, 2**63, -(2**63), 10**30, 1e308, float("nan"), "*" * 300, "../" * 50])
_JUNK: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    _HUGE,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((*prefix, k))
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((*prefix, i))
            out.extend(_paths(v, (*prefix, i)))
    return out


def _mutate(obj: dict[str, Any], path: tuple[Any, ...], op: str, junk: Any) -> None:
    parent: Any = obj
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if op == "delete":
        del parent[last]
    elif op == "junk":
        parent[last] = junk
    elif op == "wrap":  # a scalar where a list is expected and vice versa
        parent[last] = [parent[last]] if not isinstance(parent[last], list) else {"items": parent[last]}
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[last]))


@pytest.mark.parametrize("case", CASES)
@PER_CASE
@given(data=st.data())
def test_mutated_golden_inputs_never_break_the_render(case: str, data: st.DataObject) -> None:
    if case == "<none>":
        pytest.skip("no golden cases")
    objects = [copy.deepcopy(dict(o)) for o in case_objects(case)]
    for _ in range(data.draw(st.integers(min_value=1, max_value=6))):
        index = data.draw(st.integers(min_value=0, max_value=len(objects) - 1))
        # never touch kind/metadata.name: the loader rejects such objects before the render
        paths = [p for p in _paths(objects[index]) if p not in (("kind",), ("metadata",), ("metadata", "name"))]
        if not paths:
            continue
        path = data.draw(st.sampled_from(paths))
        op = data.draw(st.sampled_from(["delete", "junk", "wrap", "duplicate"]))
        _mutate(objects[index], path, op, data.draw(_JUNK))
    options, snap = case_options(case)
    _check_valid(_render(objects, options, **snap))


# --- generated objects -------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "web", "api", "x" * 63, "UPPER", "", "dots.in.name"])
_NS = st.sampled_from(["default", "apps", "other"])
_HOST = st.sampled_from(["shop.example.com", "*.example.com", "example.com", "*", "", "bad host", "a" * 300])
_PORT = st.one_of(st.sampled_from([80, 443, 8080, 8443, 9000, 0, 65536, -1]), _JUNK)


@st.composite
def _gateway(draw: st.DrawFn) -> dict[str, Any]:
    listeners = []
    for i in range(draw(st.integers(min_value=0, max_value=4))):
        listener: dict[str, Any] = {
            "name": draw(st.sampled_from([f"l{i}", "http", "https"])),
            "port": draw(_PORT),
            "protocol": draw(st.sampled_from(["HTTP", "HTTPS", "TLS", "TCP", "UDP", "http", 7])),
        }
        if draw(st.booleans()):
            listener["hostname"] = draw(_HOST)
        if draw(st.booleans()):
            listener["tls"] = {
                "mode": draw(st.sampled_from(["Terminate", "Passthrough", None])),
                "certificateRefs": [{"name": draw(_NAMES), "namespace": draw(_NS), "kind": draw(st.sampled_from(["Secret", "ConfigMap"]))}],
            }
        if draw(st.booleans()):
            listener["allowedRoutes"] = {
                "namespaces": {"from": draw(st.sampled_from(["Same", "All", "Selector", "Nope"])),
                               "selector": draw(st.one_of(st.none(), st.just({"matchLabels": {"team": "a"}}),
                                                          st.just({"matchExpressions": [{"key": "k", "operator": "Bogus"}]})))},
                "kinds": draw(st.lists(st.fixed_dictionaries({"kind": st.sampled_from(["HTTPRoute", "TCPRoute", "X"])}), max_size=2)),
            }
        listeners.append(listener)
    spec: dict[str, Any] = {"gatewayClassName": draw(st.sampled_from(["titanium", "other"])), "listeners": listeners}
    if draw(st.integers(0, 5)) == 0:
        spec["addresses"] = [{"type": "IPAddress", "value": "198.51.100.1"}]
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": draw(_NAMES) or "g", "namespace": draw(_NS)}, "spec": spec}


_PATH = st.fixed_dictionaries({
    "type": st.sampled_from(["Exact", "PathPrefix", "RegularExpression", "Bogus"]),
    "value": st.sampled_from(["/", "/api", "/api/", "", "no-slash", "/(unclosed", "/" + "a" * 5000]),
})
_FILTER = st.sampled_from([
    {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "X-A", "value": "1"}], "add": [{"name": "X-B", "value": "2"}], "remove": ["X-C"]}},
    {"type": "ResponseHeaderModifier", "responseHeaderModifier": {"add": [{"name": "Set-Cookie", "value": "a=b"}]}},
    {"type": "URLRewrite", "urlRewrite": {"hostname": "internal", "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}},
    {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/x"}}},
    {"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}},
    {"type": "RequestRedirect", "requestRedirect": {"hostname": "x.example.com", "port": 8443, "statusCode": 307}},
    {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "api", "port": 8080}, "percent": 50}},
    {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "api", "port": 8080}, "fraction": {"numerator": 1, "denominator": 0}}},
    {"type": "ExtensionRef", "extensionRef": {"group": "x", "kind": "Y", "name": "z"}},
    {"type": "RequestRedirect"},
])


@st.composite
def _httproute(draw: st.DrawFn) -> dict[str, Any]:
    rules = []
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        match: dict[str, Any] = {}
        if draw(st.booleans()):
            match["path"] = draw(_PATH)
        if draw(st.booleans()):
            match["headers"] = [{"name": "X-Env", "value": "a", "type": draw(st.sampled_from(["Exact", "RegularExpression"]))}]
        if draw(st.booleans()):
            match["queryParams"] = [{"name": "q", "value": "(", "type": draw(st.sampled_from(["Exact", "RegularExpression"]))}]
        if draw(st.booleans()):
            match["method"] = draw(st.sampled_from(["GET", "POST", "BREW"]))
        rule: dict[str, Any] = {
            "matches": [match],
            "filters": draw(st.lists(_FILTER, max_size=3)),
            "backendRefs": [
                {"name": draw(st.sampled_from(["api", "missing"])), "namespace": draw(_NS), "port": draw(_PORT),
                 "weight": draw(st.one_of(st.integers(-5, 1000001), st.none()))}
                for _ in range(draw(st.integers(0, 3)))
            ],
        }
        if draw(st.booleans()):
            rule["timeouts"] = {"request": draw(st.sampled_from(["1s", "0s", "500ms", "1h30m", "bogus", "99999999h"])),
                                "backendRequest": draw(st.sampled_from(["2s", "0s", "x"]))}
        rules.append(rule)
    parent: dict[str, Any] = {"name": draw(st.sampled_from(["g", "web", "a", "missing"])), "namespace": draw(_NS)}
    if draw(st.booleans()):
        parent["sectionName"] = draw(st.sampled_from(["http", "https", "l0", "nope"]))
    if draw(st.booleans()):
        parent["port"] = draw(_PORT)
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": draw(_NAMES) or "r", "namespace": draw(_NS)},
            "spec": {"parentRefs": [parent], "hostnames": draw(st.lists(_HOST, max_size=3)), "rules": rules}}


@st.composite
def _service(draw: st.DrawFn) -> list[dict[str, Any]]:
    ns, name = draw(_NS), draw(st.sampled_from(["api", "missing-not"]))
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
           "spec": {"ports": [{"name": "http", "port": draw(_PORT), "targetPort": draw(st.sampled_from([8080, "http", "named"]))}]}}
    eps = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": f"{name}-1", "namespace": ns, "labels": {"kubernetes.io/service-name": name}},
           "addressType": draw(st.sampled_from(["IPv4", "IPv6", "FQDN"])),
           "ports": [{"name": "http", "port": draw(_PORT)}],
           "endpoints": [{"addresses": [draw(st.sampled_from(["10.0.0.1", "fd00::1", "not-an-ip"]))],
                          "conditions": {"ready": draw(st.sampled_from([True, False, None, "yes"]))}}]}
    return [svc, eps]


@st.composite
def _secret(draw: st.DrawFn) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": draw(st.sampled_from(["kubernetes.io/tls", "Opaque"])),
            "metadata": {"name": draw(_NAMES) or "s", "namespace": draw(_NS)},
            "data": {"tls.crt": draw(st.sampled_from(["", "bm90IGEgY2VydA==", "!!notbase64"])),
                     "tls.key": draw(st.sampled_from(["", "bm90IGEga2V5"]))}}


_CLASS = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "titanium"},
          "spec": {"controllerName": "titaniumproxy.com/gateway-controller"}}


@SETTINGS
@given(
    gateways=st.lists(_gateway(), max_size=3),
    routes=st.lists(_httproute(), max_size=4),
    services=st.lists(_service(), max_size=2),
    secrets=st.lists(_secret(), max_size=2),
    assume=st.booleans(),
)
def test_generated_objects_never_break_the_render(
    gateways: list[dict[str, Any]],
    routes: list[dict[str, Any]],
    services: list[list[dict[str, Any]]],
    secrets: list[dict[str, Any]],
    assume: bool,
) -> None:
    objects: list[dict[str, Any]] = [_CLASS, *gateways, *routes, *(o for pair in services for o in pair), *secrets]
    result = _render(objects, RenderOptions(assume_programmed=assume))
    _check_valid(result)
    # and the order of the generated objects does not matter either (one object per kind+key:
    # a duplicate key is a replacement, which does depend on order by design)
    unique: dict[tuple[str, str], dict[str, Any]] = {}
    for obj in apply_defaults(objects):
        unique.setdefault((obj["kind"], object_key(obj)), obj)
    objects = list(unique.values())
    assert _fingerprint(_render(list(reversed(objects)), RenderOptions(assume_programmed=assume))) == _fingerprint(
        _render(objects, RenderOptions(assume_programmed=assume))
    )
