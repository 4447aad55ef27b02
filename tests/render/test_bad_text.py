"""Text the data plane's YAML parser would refuse never reaches the output.

A Python ``str`` can hold a lone UTF-16 surrogate (JSON ``"\\ud800"``; the pure-Python YAML
loader reads the escape too), but no UTF-8 text can, and libyaml refuses the escape. Where such
a value would be copied into twp.yaml, the render reports it (the rule answers 500 and says why,
or the Ingress gets an event) and every document still parses with libyaml.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.render.core_fixtures import base_objects, endpoints, route, run, service
from tests.render.test_ingress import CLASS, ing, path
from tests.render.test_ingress import run as run_ingress
from tests.render.test_ingress import service as ingress_service
from titanium_gateway.twp import emit
from titanium_gateway.twp.model import Document

BAD = "a\ud800b"
BACKEND = [{"name": "api", "port": 8080}]


def _documents(result: Any) -> list[Any]:
    out = [yaml.load(result.config, Loader=yaml.CSafeLoader)]  # noqa: S506 - a safe loader
    out += [yaml.load(body, Loader=yaml.CSafeLoader) for _, body in result.parts]  # noqa: S506
    return out


def _messages(result: Any) -> str:
    return " ".join(c["message"] for s in result.statuses if s.kind == "HTTPRoute"
                    for p in s.status["parents"] for c in p["conditions"])


RULES: dict[str, dict[str, Any]] = {
    "path": {"matches": [{"path": {"type": "PathPrefix", "value": "/" + BAD}}]},
    "exact path": {"matches": [{"path": {"type": "Exact", "value": "/" + BAD}}]},
    "regex path": {"matches": [{"path": {"type": "RegularExpression", "value": "^/" + BAD}}]},
    "method": {"matches": [{"method": BAD}]},
    "header value": {"matches": [{"headers": [{"name": "x-a", "value": BAD}]}]},
    "query value": {"matches": [{"queryParams": [{"name": "q", "value": BAD}]}]},
    "query regex": {"matches": [{"queryParams": [{"type": "RegularExpression", "name": "q", "value": BAD}]}]},
    "set header": {"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {
        "set": [{"name": "x-a", "value": BAD}]}}]},
    "add header name": {"filters": [{"type": "ResponseHeaderModifier", "responseHeaderModifier": {
        "add": [{"name": BAD, "value": "v"}]}}]},
    "remove header": {"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"remove": [BAD]}}]},
    "rewrite host": {"filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": BAD}}]},
    "rewrite path": {"filters": [{"type": "URLRewrite", "urlRewrite": {
        "path": {"type": "ReplaceFullPath", "replaceFullPath": "/" + BAD}}}]},
    "redirect path": {"filters": [{"type": "RequestRedirect", "requestRedirect": {
        "hostname": "x.example.com", "path": {"type": "ReplaceFullPath", "replaceFullPath": "/" + BAD}}}]},
}


@pytest.mark.parametrize("where", sorted(RULES))
def test_an_httproute_value_with_a_lone_surrogate_is_a_reported_problem(where: str) -> None:
    rule = {"backendRefs": BACKEND, **RULES[where]}
    result = run(base_objects() + [route(rules=[rule, {"backendRefs": BACKEND}])])
    docs = _documents(result)
    assert "\ufffd" not in result.config.decode()  # (the writer's last resort never needed)
    routes = {r["id"]: r for r in docs[0]["routes"]}
    assert routes["httproute/apps/shop/r0m0"]["directResponse"]["status"] == 500  # that rule only
    assert "clusterId" in routes["httproute/apps/shop/r1m0"]
    assert routes["httproute/apps/shop/r0m0"]["directResponse"]["body"] == "UnsupportedValue"  # the why in status
    assert "surrogate" in _messages(result)


def test_a_backend_or_object_name_with_a_lone_surrogate_is_never_written() -> None:
    objs = base_objects() + [route(rules=[{"backendRefs": [{"name": BAD, "port": 8080}]}]),
                             route(name="shop" + BAD), service(BAD), endpoints("api", addresses=(BAD, "10.0.0.9"))]
    result = run(objs)
    docs = _documents(result)
    (r,) = docs[0]["routes"]  # the route named with a surrogate is not translated (no object can be named so)
    assert r["directResponse"]["body"] == "BackendNotFound"
    assert [d["address"] for c in docs[0]["clusters"] for d in c["destinations"]] in ([], ["10.0.0.9"])


@pytest.mark.parametrize(("what", "item", "annotations", "reason"), [
    ("path", {"p": "/" + BAD}, {}, "InvalidPath"),
    ("rewrite-target", {}, {"titanium.io/rewrite-target": "/" + BAD}, "InvalidAnnotation"),
    ("auth-url", {}, {"titanium.io/auth-url": "https://auth.example.com/" + BAD}, "InvalidAnnotation"),
    ("cors origin", {}, {"titanium.io/cors-allow-origin": "https://" + BAD + ".example.com"}, "InvalidAnnotation"),
    ("backend name", {"be": {"service": {"name": BAD, "port": {"number": 8080}}}}, {}, "InvalidBackend"),
])
def test_an_ingress_value_with_a_lone_surrogate_is_a_reported_problem(what: str, item: dict[str, Any],
                                                                     annotations: dict[str, str], reason: str) -> None:
    ctx = run_ingress(CLASS, ingress_service("shop"), ing("a", annotations=annotations, paths=[path(**item)]))
    assert reason in [e.reason for e in ctx.events()]
    routes = tuple(ctx.take_ordered_routes())
    out = emit.emit(Document(routes=routes, clusters=tuple(ctx.sorted_clusters())), part_limit=1 << 20, max_parts=1)
    doc = yaml.load(out.config, Loader=yaml.CSafeLoader)  # noqa: S506 - a safe loader
    assert "\ufffd" not in out.config.decode()
    if what != "path":
        assert doc["routes"] and all("directResponse" in r for r in doc["routes"])


def test_the_writer_never_writes_a_surrogate_escape() -> None:
    """The last line of defence, should a translator let one through: U+FFFD, which libyaml reads."""
    assert emit._scalar("a\ud800") == '"a\\ufffd"'
    assert yaml.load(f"k: {emit._scalar(BAD)}", Loader=yaml.CSafeLoader) == {"k": "a\ufffdb"}  # noqa: S506
