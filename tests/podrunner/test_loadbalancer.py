"""The load-balancer stand-in against the fake API server, forwarding on loopback addresses."""

from __future__ import annotations

import socket
import socketserver
import threading

import pytest

from tests.podrunner.test_runner import FakeNetwork, wait_for
from tests.support.apiserver import FakeApiServer
from tools.podrunner.kube import RunnerApi
from tools.podrunner.loadbalancer import LoadBalancer, ready_backends
from tools.podrunner.network import AddressPool


class _Echo(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline()
        self.wfile.write(self.server.tag + b":" + line)


@pytest.fixture
def backends():
    servers = []
    for tag in (b"a", b"b"):
        srv = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
        srv.tag = tag
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    yield servers
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _slice(ports, ready=(True, True)):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": "dp-abc", "namespace": "gw", "labels": {"kubernetes.io/service-name": "dp"}},
            "ports": [{"name": "http", "port": ports[0], "protocol": "TCP"}],
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": ready[0]}}]}


def test_ready_backends_by_port_name():
    svc = {"spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"},
                              {"name": "https", "port": 443, "targetPort": "https"},
                              {"name": "dns", "port": 53, "protocol": "UDP"}]}}
    slices = [{"addressType": "IPv4", "ports": [{"name": "http", "port": 8080}, {"name": "https", "port": 8443}],
               "endpoints": [{"addresses": ["198.18.1.1"], "conditions": {"ready": True}},
                             {"addresses": ["198.18.1.2"], "conditions": {"ready": False}},
                             {"addresses": ["198.18.1.3"], "conditions": {}}]},
              {"addressType": "FQDN", "ports": [{"name": "http", "port": 1}], "endpoints": [{"addresses": ["x"]}]}]
    assert ready_backends(svc, slices) == {80: [("198.18.1.1", 8080), ("198.18.1.3", 8080)],
                                           443: [("198.18.1.1", 8443), ("198.18.1.3", 8443)]}


def test_terminating_serving_endpoints_only_when_none_is_ready():
    svc = {"spec": {"ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}
    going = {"addresses": ["198.18.1.2"], "conditions": {"ready": False, "serving": True, "terminating": True}}
    stopped = {"addresses": ["198.18.1.4"], "conditions": {"ready": False, "serving": False, "terminating": True}}
    unready = {"addresses": ["198.18.1.5"], "conditions": {"ready": False, "serving": False}}
    ready = {"addresses": ["198.18.1.1"], "conditions": {"ready": True, "serving": True}}

    def slices(*eps):
        return [{"addressType": "IPv4", "ports": [{"name": "http", "port": 8080}], "endpoints": list(eps)}]

    # a ready endpoint takes every connection; the terminating one none
    assert ready_backends(svc, slices(ready, going, stopped)) == {80: [("198.18.1.1", 8080)]}
    # no ready endpoint: the terminating pod that still serves (kube-proxy's fallback)
    assert ready_backends(svc, slices(going, stopped, unready)) == {80: [("198.18.1.2", 8080)]}
    # nothing serving: nothing
    assert ready_backends(svc, slices(stopped, unready)) == {80: []}


def _ask(addr, port):
    try:
        with socket.create_connection((addr, port), timeout=2) as s:
            s.sendall(b"hello\n")
            return s.makefile("rb").readline()
    except OSError:
        return None


def test_load_balancer_lifecycle(backends):
    port_a = backends[0].server_address[1]
    with FakeApiServer(bookmark_interval=0.5) as server:
        server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gw"}})
        server.put_object({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dp", "namespace": "gw"},
                           "spec": {"type": "LoadBalancer", "selector": {"app": "dp"},
                                    "ports": [{"name": "http", "port": 18080, "targetPort": "http"}]}})
        server.put_object({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "other", "namespace": "gw"},
                           "spec": {"type": "LoadBalancer", "loadBalancerClass": "example.com/other",
                                    "ports": [{"port": 18081}]}})
        net = FakeNetwork()
        lb = LoadBalancer(RunnerApi(server.client_configuration()), net,
                          AddressPool("127.0.0.200", "127.0.0.210")).start()
        try:
            def ingress(name="dp"):
                svc = server.get_object("Service", "gw", name)
                return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress")

            wait_for(lambda: ingress() == [{"ip": "127.0.0.200"}], what="ingress")
            assert net.local == ["127.0.0.200"]
            assert ingress("other") is None  # another load balancer's class
            # No endpoints yet: the connection is closed at once.
            assert not _ask("127.0.0.200", 18080)
            server.put_object(_slice([port_a]))
            wait_for(lambda: _ask("127.0.0.200", 18080) == b"a:hello\n", what="forwarded to a")
            # An endpoint that is not ready takes no connections.
            server.put_object(_slice([port_a], ready=(False,)))
            wait_for(lambda: not _ask("127.0.0.200", 18080), what="not forwarded")
            # No longer a LoadBalancer: address and status go.
            server.update_object("Service", "gw", "dp", lambda s: s["spec"].update({"type": "ClusterIP"}))
            wait_for(lambda: not ingress() and net.local == [], what="released")
            assert lb.pool.in_use() == []
        finally:
            lb.stop()


def test_the_address_pool_does_not_hand_a_released_address_out_again_at_once() -> None:
    """Neighbour caches may still map a released address to its old pod's MAC address."""
    pool = AddressPool("10.9.0.1", "10.9.0.3")
    a, b = pool.allocate(), pool.allocate()
    assert (a, b) == ("10.9.0.1", "10.9.0.2")
    pool.release(a)
    assert pool.allocate() == "10.9.0.3"  # not 10.9.0.1 again
    assert pool.allocate() == "10.9.0.1"  # wrapping around once the others are taken
    with pytest.raises(RuntimeError):
        pool.allocate()
    assert pool.reserve("10.9.0.4") is False


def test_a_service_gets_the_address_it_asks_for_when_it_is_free_in_a_range() -> None:
    """spec.loadBalancerIP: given from the load-balancer or the static range; an address outside
    both (or taken) gives the Service no address; asking for another moves it."""
    with FakeApiServer(bookmark_interval=0.5) as server:
        server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gw"}})

        def service(name, asked):
            server.put_object({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "gw"},
                               "spec": {"type": "LoadBalancer", "loadBalancerIP": asked,
                                        "ports": [{"name": "http", "port": 18080}]}})

        service("static", "127.0.1.5")
        service("outside", "127.0.2.1")
        net = FakeNetwork()
        lb = LoadBalancer(RunnerApi(server.client_configuration()), net, AddressPool("127.0.0.200", "127.0.0.210"),
                          static_pool=AddressPool("127.0.1.1", "127.0.1.9")).start()
        try:
            def ingress(name):
                svc = server.get_object("Service", "gw", name)
                return ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress")

            wait_for(lambda: ingress("static") == [{"ip": "127.0.1.5"}], what="the static address")
            assert ingress("outside") is None
            server.update_object("Service", "gw", "static", lambda s: s["spec"].update({"loadBalancerIP": "127.0.0.207"}))
            wait_for(lambda: ingress("static") == [{"ip": "127.0.0.207"}], what="the address asked for next")
            wait_for(lambda: net.local == ["127.0.0.207"], what="the first address released")
            assert lb.static_pool is not None and lb.static_pool.in_use() == []
        finally:
            lb.stop()
