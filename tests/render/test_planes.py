"""The data planes of the render (render/planes.py): a Gateway's own data plane carries only its
listeners and the routes attached to them, and its Programmed follows its own pods."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.planes import PER_GATEWAY, plane_names
from titanium_gateway.render.status.programmed import reprogram

from .conftest import case_objects

PER = RenderOptions(data_plane_mode=PER_GATEWAY, data_plane_ports=(8080, 8088, 8443))


@pytest.mark.parametrize(("gateway", "class_name", "expected"), [
    ("web", "titanium", "web-titanium"),
    ("internal", "titanium", "internal-titanium"),
])
def test_plane_names_follow_gep_1762(gateway: str, class_name: str, expected: str) -> None:
    names = plane_names(gateway, class_name)
    assert (names.deployment, names.service, names.config_map) == (expected,) * 3
    assert (names.part(2), names.tls_secret, names.admin_secret) == (
        f"{expected}-part-2", f"{expected}-tls", f"{expected}-admin")


@pytest.mark.parametrize("gateway", ["1web", "web.example.com", "Web", "w" * 60, "web-"])
def test_plane_names_are_dns_labels_and_distinct(gateway: str) -> None:
    import re

    base = plane_names(gateway, "titanium").base
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", base) and len(base) <= 52, base
    assert base != plane_names(gateway + "x", "titanium").base


def _gateway(name: str, listeners: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": name, "namespace": "apps"},
            "spec": {"gatewayClassName": "titanium", "listeners": listeners}}


BASE = [
    {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "titanium"},
     "spec": {"controllerName": "titaniumproxy.com/gateway-controller"}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "apps"},
     "spec": {"ports": [{"name": "http", "port": 8080}]}},
    _gateway("a", [{"name": "http", "port": 80, "protocol": "HTTP", "hostname": "a.example.com"}]),
    _gateway("b", [{"name": "http", "port": 80, "protocol": "HTTP", "hostname": "b.example.com"},
                   {"name": "alt", "port": 8088, "protocol": "HTTP"}]),
    {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "apps"},
     "spec": {"parentRefs": [{"name": "a"}, {"name": "b", "sectionName": "http"}],
              "hostnames": ["a.example.com", "b.example.com"],
              "rules": [{"backendRefs": [{"name": "api", "port": 8080}]}]}},
]


def test_each_data_plane_gets_the_hosts_and_ports_of_its_own_listeners() -> None:
    result = render(build_snapshot(BASE), PER)
    assert [p.key for p in result.planes] == ["", "apps/a", "apps/b"]
    a, b = result.plane("apps/a"), result.plane("apps/b")
    assert a is not None and b is not None and a.document is not None and b.document is not None
    assert [(r.host, r.ports) for r in a.document.routes] == [("a.example.com", ())]
    # b has two listeners; the route is attached to one of them only
    assert [(r.host, r.ports) for r in b.document.routes] == [("b.example.com", (8080,))]
    assert {li.port for li in b.listeners} == {8080, 8088}
    assert result.plane("").document.routes == ()  # type: ignore[union-attr]
    assert (a.gateway.namespace, a.gateway.name, a.gateway.class_name) == ("apps", "a", "titanium")  # type: ignore[union-attr]
    # shared mode: one data plane, the union of the hosts, no ports (routes are global there)
    shared = render(build_snapshot(BASE), RenderOptions())
    assert [p.key for p in shared.planes] == [""]
    assert sorted((r.host, r.ports) for r in shared.document.routes) == [  # type: ignore[union-attr]
        ("a.example.com", ()), ("b.example.com", ())]


def _programmed(result: Any, name: str) -> tuple[str, str]:
    st = next(s for s in result.statuses if s.kind == "Gateway" and s.name == name)
    cond = next(c for c in st.status["conditions"] if c["type"] == "Programmed")
    return cond["status"], cond["reason"]


def test_programmed_follows_each_data_plane_and_reprogram_decides_it_again_per_plane() -> None:
    snap = build_snapshot(BASE)
    result = render(snap, PER)
    assert _programmed(result, "a") == _programmed(result, "b") == ("False", "Pending")
    a = result.plane("apps/a")
    assert a is not None
    probes = {"apps/a": (a.config_hash, ""), "apps/b": (None, "pod b-0 is not ready")}
    again = reprogram(result, assume_programmed=False, confirmed_hash=None, probe_message="", now=snap.now,
                      plane_probes=probes)
    assert _programmed(again, "a") == ("True", "Programmed")
    assert _programmed(again, "b") == ("False", "Pending")
    # the same as a render that knows what each data plane's pods confirmed
    fresh = render(dataclasses.replace(snap, plane_probes=probes), PER)
    assert again.statuses == fresh.statuses


def test_a_route_on_two_gateways_is_not_shadowed_by_the_other_gateways_route() -> None:
    result = render(build_snapshot(case_objects("pergateway-isolation")), PER)
    assert result.unreachable == ()
    shared = render(build_snapshot(case_objects("pergateway-isolation")), RenderOptions())
    assert [u.source.name for u in shared.unreachable] == ["www"]  # one data plane: the older "/" takes it


def _condition(result: Any, kind: str, namespace: str, name: str) -> tuple[str, str]:
    st = next(s for s in result.statuses if (s.kind, s.namespace, s.name) == (kind, namespace, name))
    cond = next(c for c in st.status["conditions"] if c["type"] == "Programmed")
    return cond["status"], cond["reason"]


def _listener_programmed(result: Any, kind: str, namespace: str, name: str) -> list[tuple[str, str, str]]:
    st = next(s for s in result.statuses if (s.kind, s.namespace, s.name) == (kind, namespace, name))
    return [(li["name"], *next((c["status"], c["reason"]) for c in li["conditions"] if c["type"] == "Programmed"))
            for li in st.status.get("listeners", ())]


def test_a_listener_sets_programmed_follows_its_gateways_data_plane() -> None:
    """A ListenerSet's listeners are served by its Gateway's own data plane: the ListenerSet's
    Programmed (and its listeners') follows that plane's pods, in the render and in reprogram;
    a ListenerSet of a Gateway without a data plane is NoResources, and stays so."""
    objs = case_objects("pergateway-listenerset")
    snap = build_snapshot(objs)
    options = RenderOptions(data_plane_mode=PER_GATEWAY, gateway_namespaces=("infra",))
    result = render(snap, options)
    edge, other = result.plane("infra/edge"), result.plane("infra/other")
    assert edge is not None and other is not None
    assert edge.listener_sets == (("infra", "edge-extra"),) and other.listener_sets == (("infra", "other-extra"),)
    assert not any(("elsewhere", "far-extra") in p.listener_sets for p in result.planes)
    assert _condition(result, "ListenerSet", "infra", "edge-extra") == ("False", "Pending")
    assert _condition(result, "ListenerSet", "elsewhere", "far-extra") == ("False", "NoResources")
    # edge's pods confirm its config; other's do not: only edge's ListenerSet is Programmed
    probes = {"infra/edge": (edge.config_hash, ""), "infra/other": (None, "pod other-0 is not ready")}
    again = reprogram(result, assume_programmed=False, confirmed_hash=None, probe_message="", now=snap.now,
                      plane_probes=probes)
    assert _condition(again, "ListenerSet", "infra", "edge-extra") == ("True", "Programmed")
    assert _listener_programmed(again, "ListenerSet", "infra", "edge-extra") == [
        ("extra-http", "True", "Programmed"), ("extra-https", "True", "Programmed")]
    assert _condition(again, "ListenerSet", "infra", "other-extra") == ("False", "NotAllowed")  # (not the plane's)
    assert _condition(again, "ListenerSet", "elsewhere", "far-extra") == ("False", "NoResources")
    assert _condition(again, "Gateway", "infra", "other") == ("False", "Pending")
    # the same as a render that knows what each data plane's pods confirmed
    fresh = render(dataclasses.replace(snap, plane_probes=probes), options)
    assert again.statuses == fresh.statuses
    # a ListenerSet's certificate is in its Gateway's data plane's TLS Secret only
    assert "infra.secure-cert.pfx" in edge.tls_files
    assert all("infra.secure-cert.pfx" not in p.tls_files for p in result.planes if p is not edge)
