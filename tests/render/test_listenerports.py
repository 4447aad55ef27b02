"""The ports of a Gateway's own data plane (render/listenerports.py): every listener port is
served, a privileged one on an unprivileged container port; the shared data plane keeps the
chart's ports (PortUnavailable for the others)."""

from __future__ import annotations

from typing import Any

import pytest

from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render import render
from titanium_gateway.render.listenerports import ContainerPorts, ServedPort
from titanium_gateway.render.options import DEFAULT_PORT_MAP, RenderOptions
from titanium_gateway.render.planes import PER_GATEWAY
from titanium_gateway.writers import plane_objects as po

from .conftest import case_objects


@pytest.mark.parametrize(("ports", "expected"), [
    # the chart's port map for 80 and 443; an unprivileged port keeps its number
    ([80, 443, 8090], {80: 8080, 443: 8443, 8090: 8090}),
    # 8080 is a listener's own port: 80 takes the next free one
    ([80, 8080], {80: 8081, 8080: 8080}),
    ([8080, 80, 8081], {80: 8082, 8080: 8080, 8081: 8081}),
    # a privileged port without a port-map entry: + 8000
    ([22, 8022], {22: 8023, 8022: 8022}),
    ([25], {25: 8025}),
    # the admin port is never a listener's
    ([9901, 80], {9901: 9902, 80: 8080}),
    ([65535, 1], {65535: 65535, 1: 8001}),
])
def test_container_ports(ports: list[int], expected: dict[int, int]) -> None:
    cp = ContainerPorts(ports, DEFAULT_PORT_MAP, (9901,))
    got = {p: cp.container_port(p) for p in ports}
    assert got == expected
    assert len(set(got.values())) == len(got)  # no two listener ports share a container port
    assert all(v >= 1024 for v in got.values())


def test_a_port_given_later_never_takes_a_claimed_one_and_the_same_port_keeps_its_own() -> None:
    cp = ContainerPorts([80], DEFAULT_PORT_MAP, (9901,))
    assert cp.container_port(80) == 8080
    assert cp.container_port(8080) == 8081  # (a ListenerSet's listener, translated after the Gateway's)
    assert cp.container_port(80) == 8080
    cp.serve(8080, False)
    cp.serve(80, True)
    cp.serve(80, True)
    assert cp.served() == (ServedPort(80, 8080, True), ServedPort(8080, 8081, False))
    assert [p.name for p in cp.served()] == ["https-80", "http-8080"]


def _listener_conditions(result: Any, name: str) -> dict[str, tuple[str, str]]:
    st = next(s for s in result.statuses if s.kind == "Gateway" and s.name == name)
    return {li["name"]: next((c["status"], c["reason"]) for c in li["conditions"] if c["type"] == "Accepted")
            for li in st.status["listeners"]}


def test_per_gateway_serves_every_listener_port_shared_refuses_those_it_does_not_expose() -> None:
    objs = case_objects("conf-httproute-listener-port-matching")
    per = render(build_snapshot(objs), RenderOptions(data_plane_mode=PER_GATEWAY, assume_programmed=True))
    accepted = _listener_conditions(per, "httproute-listener-port-matching")
    assert set(accepted.values()) == {("True", "Accepted")}, accepted
    plane = per.plane("gateway-conformance-infra/httproute-listener-port-matching")
    assert plane is not None and plane.gateway is not None
    assert plane.gateway.ports == (ServedPort(80, 8081, False), ServedPort(8080, 8080, False),
                                   ServedPort(8090, 8090, False))
    assert sorted(li.port for li in plane.listeners) == [8080, 8081, 8090]
    # each route is scoped to the data-plane ports of its listeners
    assert plane.document is not None
    assert sorted({r.ports for r in plane.document.routes}) == [(8080,), (8081,), (8090,)]

    shared = render(build_snapshot(objs), RenderOptions(assume_programmed=True))
    refused = _listener_conditions(shared, "httproute-listener-port-matching")
    assert refused["listener-4"] == refused["listener-5"] == ("False", "PortUnavailable")


def test_the_gateways_service_and_pods_expose_its_listener_ports() -> None:
    objs = case_objects("conf-httproute-listener-port-matching")
    result = render(build_snapshot(objs), RenderOptions(data_plane_mode=PER_GATEWAY, assume_programmed=True))
    plane = result.plane("gateway-conformance-infra/httproute-listener-port-matching")
    assert plane is not None
    template = po.parse_template({
        "ports": [{"name": "http", "port": 80, "containerPort": 8080}, {"name": "https", "port": 443, "containerPort": 8443}],
        "pod": {"spec": {"containers": [{"name": "titanium", "ports": [
            {"name": "http", "containerPort": 8080}, {"name": "https", "containerPort": 8443},
            {"name": "admin", "containerPort": 9901}]}]}}})
    svc = po.service(plane, template, "c")
    # (named target ports: each pod's own, so pods rolling to new container ports keep serving)
    assert svc["spec"]["ports"] == [
        {"name": "http-80", "port": 80, "targetPort": "http-80", "protocol": "TCP"},
        {"name": "http-8080", "port": 8080, "targetPort": "http-8080", "protocol": "TCP"},
        {"name": "http-8090", "port": 8090, "targetPort": "http-8090", "protocol": "TCP"}]
    dep = po.deployment(plane, template, "c", "token")
    assert dep["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "http-80", "containerPort": 8081, "protocol": "TCP"},
        {"name": "http-8080", "containerPort": 8080, "protocol": "TCP"},
        {"name": "http-8090", "containerPort": 8090, "protocol": "TCP"},
        {"name": "admin", "containerPort": 9901}]
    assert dep["spec"]["template"]["metadata"]["annotations"]["gateway.titaniumproxy.com/listeners"] == \
        "8080/http,8081/http,8090/http"
