"""What the real API server's CRD validation (OpenAPI schema and CEL rules of the Gateway API
CRDs the chart installs) rejects at create, as a user sees it through kubectl; and objects the
server accepts that make no sense to us: conditions with reasons, never a crash."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.cluster.conftest import GW, ClusterEnv, KubeSession, condition, wait_for
from tests.support.chartrelease import ChartRelease
from tests.support.kubeapi import KubeApiError

BACKEND = [{"name": "api", "port": 8080}]


def route_obj(name: str, ns: str, rules: list[dict[str, Any]], parent: dict[str, Any] | None = None,
              hostnames: list[str] | None = None) -> dict[str, Any]:
    return {"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": name, "namespace": ns},
            "spec": {"parentRefs": [parent or {"name": "web"}], "hostnames": hostnames or ["shop.example.com"],
                     "rules": rules}}


def gateway_obj(name: str, ns: str, cls: str, listeners: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": GW, "kind": "Gateway", "metadata": {"name": name, "namespace": ns},
            "spec": {"gatewayClassName": cls, "listeners": listeners, **spec}}


HTTP = {"name": "http", "port": 80, "protocol": "HTTP"}

# (what, object factory (namespace, class) -> object, what kubectl prints)
REJECTED: list[tuple[str, Any, str]] = [
    ("duplicate listener names",
     lambda ns, cls: gateway_obj("dup", ns, cls, [HTTP, dict(HTTP, port=8080)]),
     "Listener name must be unique within the Gateway"),
    ("tls on an HTTP listener",
     lambda ns, cls: gateway_obj("tls-on-http", ns, cls, [dict(HTTP, tls={"certificateRefs": [{"name": "x"}]})]),
     "tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']"),
    ("HTTPS listener without certificates",
     lambda ns, cls: gateway_obj("no-certs", ns, cls, [{"name": "https", "port": 443, "protocol": "HTTPS",
                                                         "tls": {"mode": "Terminate"}}]),
     "certificateRefs or options must be specified when mode is Terminate"),
    ("a relative path prefix",
     lambda ns, cls: route_obj("relative", ns, [{"matches": [{"path": {"type": "PathPrefix", "value": "api"}}],
                                                  "backendRefs": BACKEND}]),
     "value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"),
    ("a path with //",
     lambda ns, cls: route_obj("double-slash", ns, [{"matches": [{"path": {"type": "Exact", "value": "/a//b"}}],
                                                      "backendRefs": BACKEND}]),
     "must not contain '//' when type one of ['Exact', 'PathPrefix']"),
    ("redirect and rewrite together",
     lambda ns, cls: route_obj("redirect-rewrite", ns, [{"filters": [
         {"type": "RequestRedirect", "requestRedirect": {"statusCode": 301}},
         {"type": "URLRewrite", "urlRewrite": {"hostname": "x.example.com"}}]}]),
     "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both"),
    ("a backend timeout longer than the request timeout",
     lambda ns, cls: route_obj("timeouts", ns, [{"timeouts": {"request": "1s", "backendRequest": "2s"},
                                                  "backendRefs": BACKEND}]),
     "backendRequest timeout cannot be longer than request timeout"),
    ("a Service backend without a port",
     lambda ns, cls: route_obj("no-port", ns, [{"backendRefs": [{"name": "api"}]}]),
     "Must have port for Service reference"),
    ("a requestHeaderModifier filter without its field",
     lambda ns, cls: route_obj("empty-filter", ns, [{"filters": [{"type": "RequestHeaderModifier"}],
                                                      "backendRefs": BACKEND}]),
     "filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type"),
    ("a hostname with an underscore (schema pattern, no CEL)",
     lambda ns, cls: route_obj("bad-host", ns, [{"backendRefs": BACKEND}], hostnames=["shop_1.example.com"]),
     "spec.hostnames[0]: Invalid value: \"shop_1.example.com\""),
]


@pytest.fixture(scope="module")
def installed(kube: KubeSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChartRelease, str]]:
    """One release (the chart's CRDs) and a namespace for the whole module: rejections need no controller."""
    with kube.cluster.inside():
        rel = ChartRelease.install(kube.cluster, kube.helm, kube.next_name("val"),
                                   workdir=tmp_path_factory.mktemp("validation-release"))
        ns = f"{rel.rel.name}-apps"
        kube.cluster.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        yield rel, ns
    finally:
        with kube.cluster.inside():
            rel.uninstall()
            kube.cluster.api.delete("Namespace", None, ns)


@pytest.mark.parametrize(("what", "make", "message"), REJECTED, ids=[r[0] for r in REJECTED])
def test_invalid_objects_are_rejected_at_create(kube: KubeSession, installed: tuple[ChartRelease, str], what: str,
                                                make: Any, message: str) -> None:
    rel, ns = installed
    obj = make(ns, rel.rel.gateway_class)
    p = kube.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(obj), check=False)
    print(f"$ kubectl apply -f {obj['metadata']['name']}.yaml   # {what}\n{p.stderr}")
    assert p.returncode != 0
    assert f'The {obj["kind"]} "{obj["metadata"]["name"]}" is invalid' in p.stderr
    assert message in p.stderr, p.stderr
    assert kube.cluster.api.get_object(obj["kind"], ns, obj["metadata"]["name"]) is None


def our_parent(env: ClusterEnv, name: str) -> dict[str, Any] | None:
    route = env.get("HTTPRoute", env.apps, name) or {}
    for p in (route.get("status") or {}).get("parents") or []:
        if p["controllerName"] == env.release.rel.controller_name:
            return p
    return None


def test_accepted_but_unusable_objects_get_reasons_and_the_controller_carries_on(env: ClusterEnv) -> None:
    cls = env.release.rel.gateway_class
    env.service("api")
    env.set_load_balancer()
    ctrl = env.start_controller()
    env.gateway(listeners=[dict(HTTP, hostname="*.example.com", allowedRoutes={"namespaces": {"from": "Same"}})])
    env.route(name="good", host="good.example.com")
    # accepted by the server, each wrong in its own way
    odd = {
        "no-backend": (route_obj("no-backend", env.apps, [{"backendRefs": [{"name": "missing", "port": 8080}]}]),
                       "ResolvedRefs", "BackendNotFound"),
        "no-listener": (route_obj("no-listener", env.apps, [{"backendRefs": BACKEND}],
                                  parent={"name": "web", "sectionName": "nope"}), "Accepted", "NoMatchingParent"),
        "wrong-kind": (route_obj("wrong-kind", env.apps, [{"backendRefs": [
            {"group": "", "kind": "ConfigMap", "name": "api", "port": 8080}]}]), "ResolvedRefs", "InvalidKind"),
        "other-host": (route_obj("other-host", env.apps, [{"backendRefs": BACKEND}], hostnames=["shop.example.org"]),
                       "Accepted", "NoMatchingListenerHostname"),
    }
    for obj, _, _ in odd.values():
        env.apply(obj)
    env.apply(route_obj("bad-regex", env.apps, [{"matches": [{"path": {"type": "RegularExpression", "value": "(["}}],
                                                  "backendRefs": BACKEND}], hostnames=["regex.example.com"]))
    env.apply(route_obj("extension", env.apps, [{"filters": [{"type": "ExtensionRef", "extensionRef": {
        "group": "example.com", "kind": "Thing", "name": "x"}}], "backendRefs": BACKEND}],
        hostnames=["ext.example.com"]))
    env.apply(gateway_obj("addressed", env.apps, cls, [HTTP], addresses=[{"type": "IPAddress", "value": "198.18.250.9"}]))
    env.apply(gateway_obj("tcp", env.apps, cls, [{"name": "tcp", "port": 9000, "protocol": "TCP"}]))

    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
    assert "good.example.com" in env.route_hosts()
    for name, (_, ctype, reason) in odd.items():
        c = wait_for(lambda n=name, t=ctype: condition({"status": our_parent(env, n)}, t), 60,
                     what=f"{name}: {ctype} in our parent status")
        assert c["status"] == "False" and c["reason"] == reason, (name, c)
    for name in ("bad-regex", "extension"):
        p = wait_for(lambda n=name: our_parent(env, n), 60, what=f"{name}: our parent status")
        assert all(c.get("reason") for c in p["conditions"]), p
    assert env.wait_condition("Gateway", "addressed", "Accepted", "False", ns=env.apps)["reason"] == "UnsupportedAddress"
    tcp = wait_for(lambda: ((env.get("Gateway", env.apps, "tcp") or {}).get("status") or {}).get("listeners"), 60)
    assert condition({"status": tcp[0]}, "Accepted")["reason"] == "UnsupportedProtocol"
    assert ctrl.alive() and ctrl.metric("controller_runtime_reconcile_total", result="error") == 0


def _random_rule(rng: random.Random) -> dict[str, Any]:
    """A rule built from the HTTPRoute schema's pieces, valid or not for the server's rules."""
    paths = ["/", "/api", "/a b", "/x//y", "api", "/%2f", "/ünï", "/" + "p" * 300, "/a/../b", "(["]
    match: dict[str, Any] = {}
    if rng.random() < 0.8:
        match["path"] = {"type": rng.choice(["PathPrefix", "Exact", "RegularExpression"]), "value": rng.choice(paths)}
    if rng.random() < 0.4:
        match["headers"] = [{"name": rng.choice(["x-a", "X-B", "bad header", ":authority"]),
                             "value": rng.choice(["1", "", "v" * 5000]),
                             "type": rng.choice(["Exact", "RegularExpression"])}]
    if rng.random() < 0.3:
        match["method"] = rng.choice(["GET", "POST", "TRACE"])
    if rng.random() < 0.3:
        match["queryParams"] = [{"name": rng.choice(["q", "Q q"]), "value": "1"}]
    rule: dict[str, Any] = {"matches": [match]} if match else {}
    filters = []
    for _ in range(rng.choice([0, 0, 1, 2])):
        kind = rng.choice(["RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite",
                           "RequestMirror", "ExtensionRef"])
        f: dict[str, Any] = {"type": kind}
        if kind.endswith("HeaderModifier"):
            f[kind[0].lower() + kind[1:]] = {rng.choice(["set", "add"]): [{"name": "x-h", "value": "1"}],
                                             "remove": rng.choice([[], ["x-r"], ["x-r", "x-r"]])}
        elif kind == "RequestRedirect":
            f["requestRedirect"] = {"statusCode": rng.choice([301, 302]), "scheme": rng.choice(["http", "https"]),
                                    "port": rng.choice([80, 443, 8443])}
        elif kind == "URLRewrite":
            f["urlRewrite"] = {"path": rng.choice([{"type": "ReplacePrefixMatch", "replacePrefixMatch": "/v2"},
                                                   {"type": "ReplaceFullPath", "replaceFullPath": "/x"}])}
        elif kind == "RequestMirror":
            f["requestMirror"] = {"backendRef": {"name": "api", "port": 8080}}
        else:
            f["extensionRef"] = {"group": "example.com", "kind": "Thing", "name": "x"}
        filters.append(f)
    if filters:
        rule["filters"] = filters
    backends = []
    for _ in range(rng.choice([0, 1, 2])):
        b: dict[str, Any] = {"name": rng.choice(["api", "missing", "API"]), "port": rng.choice([8080, 9999, 0])}
        if rng.random() < 0.2:
            b["kind"] = rng.choice(["Service", "ConfigMap"])
            b["group"] = rng.choice(["", "example.com"])
        if rng.random() < 0.3:
            b["weight"] = rng.choice([0, 1, 1000000, -1])
        backends.append(b)
    if backends:
        rule["backendRefs"] = backends
    if rng.random() < 0.2:
        rule["timeouts"] = {"request": rng.choice(["1s", "10ms", "0s", "1h"])}
    return rule


def test_whatever_the_server_accepts_never_stops_the_controller(env: ClusterEnv) -> None:
    """Random routes built from the schema's pieces (fixed seed, $TITANIUM_CLUSTER_FUZZ_SEED):
    the server rejects some (422); every one it accepts gets our parent status, with a reason
    on each condition, and the controller keeps serving the good route."""
    seed = int(os.environ.get("TITANIUM_CLUSTER_FUZZ_SEED", "20261201"))
    rng = random.Random(seed)
    env.service("api")
    env.set_load_balancer()
    ctrl = env.start_controller()
    env.gateway()
    env.route(name="good", host="good.example.com")
    accepted, rejected = [], 0
    for i in range(40):
        hostnames = rng.choice([["shop.example.com"], ["*.example.com"], ["a.example.com", "a.example.com"], []])
        obj = route_obj(f"fuzz-{i}", env.apps, [_random_rule(rng) for _ in range(rng.choice([1, 1, 2, 3]))],
                        hostnames=hostnames or None)
        if not hostnames:
            del obj["spec"]["hostnames"]
        try:
            env.api.create(obj)
            accepted.append(obj["metadata"]["name"])
        except KubeApiError as e:
            assert e.status == 422, (e.status, e.message)
            rejected += 1
    print(f"seed {seed}: {len(accepted)} accepted, {rejected} rejected by the API server")
    assert accepted, "the server accepted none: the generator is too strict to test anything"
    for name in accepted:
        p = wait_for(lambda n=name: our_parent(env, n), 90, what=f"{name}: our parent status")
        assert p["conditions"] and all(c.get("reason") for c in p["conditions"]), (name, p)
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
    assert "good.example.com" in env.route_hosts()
    assert ctrl.alive() and ctrl.metric("controller_runtime_reconcile_total", result="error") == 0
