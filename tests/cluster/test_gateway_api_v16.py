"""The Gateway API v1.6 kinds on a real API server with the chart's v1.6.3 CRDs: a
BackendTLSPolicy honoured by the reference data plane (TLS to a TLS backend, its CA and hostname
checked) or failing closed with the reason in its status; a ListenerSet's listener serving its
routes; a TLSRoute told it is not accepted and a GRPCRoute accepted, each status written once.

The data plane that carries the traffic is the reference data plane, run in this process on the
files the controller wrote (the ConfigMap's twp.yaml and the generated TLS Secret), as the chart's
pods mount them; the backend is an echo server with TLS on an address of the cluster's pod range.
"""

from __future__ import annotations

import base64
import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.cluster.conftest import GW, ClusterEnv, condition, wait_for
from tests.dataplane.support import EchoBackend, Harness, server_context

pytest.importorskip("aiohttp")

#: ConfigMaps and Secrets in the test's own namespaces (the chart reads them in the release
#: namespace only by default)
EVERY_NAMESPACE = {"controller": {"secretsClusterWide": True}}
_START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _ca(name: str) -> tuple[x509.Certificate, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(_START)
            .not_valid_after(_START + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    return cert, key


def _leaf(ca: tuple[x509.Certificate, Any], dns: str) -> tuple[x509.Certificate, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns)]))
            .issuer_name(ca[0].subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(_START).not_valid_after(_START + dt.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns)]), critical=False)
            .sign(ca[1], hashes.SHA256()))
    return cert, key


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


class RenderedDataPlane:
    """The reference data plane on what the controller wrote: twp.yaml (and its parts) from the
    release's ConfigMaps and the files of its TLS Secret, refreshed like a mounted volume."""

    def __init__(self, env: ClusterEnv, directory: Path) -> None:
        self.env = env
        self.harness = Harness(directory)
        self.config = ""

    def sync(self) -> str:
        rel = self.env.release.rel
        secret = self.env.get("Secret", self.env.ns, rel.tls_secret) or {}
        files = {name: base64.b64decode(data) for name, data in (secret.get("data") or {}).items()}
        root = self.env.root_config()
        self.harness.write(root.encode(), files)
        self.config = root
        return root

    def start(self) -> None:
        self.sync()
        self.harness.start()  # (on 127.0.0.1 of the cluster's network namespace)
        wait_for(lambda: self.harness.dp is not None and self.harness.dp.ready, 30, what="the data plane's first load")

    def get(self, host: str, path: str) -> requests.Response:
        state = self.harness.dp.state  # type: ignore[union-attr]
        port = state.config.listeners[0].port
        return requests.get(f"http://127.0.0.1:{port}{path}", headers={"Host": host}, timeout=10)

    def stop(self) -> None:
        self.harness.stop()


@pytest.fixture
def data_plane(env: ClusterEnv, tmp_path: Path) -> Iterator[RenderedDataPlane]:
    dp = RenderedDataPlane(env, tmp_path / "dataplane")
    yield dp
    dp.stop()


def _policy_ancestor(env: ClusterEnv, name: str) -> dict[str, Any] | None:
    obj = env.get("BackendTLSPolicy", env.apps, name) or {}
    for a in (obj.get("status") or {}).get("ancestors") or []:
        if a.get("controllerName") == env.release.rel.controller_name and a["ancestorRef"]["name"] == "web":
            return a
    return None


def _policy_condition(env: ClusterEnv, name: str, ctype: str) -> dict[str, Any] | None:
    return condition({"status": _policy_ancestor(env, name)}, ctype)


@pytest.mark.parametrize("env", [EVERY_NAMESPACE], indirect=True, ids=["secrets-cluster-wide"])
def test_backend_tls_policy_honoured_then_failing_closed(env: ClusterEnv, data_plane: RenderedDataPlane) -> None:
    ca = _ca("Backend CA")
    ip = env.cluster.ips.allocate()
    backend = EchoBackend("secure", tls=server_context(*_leaf(ca, "secure.internal")), host=ip, port=8443)
    try:
        env.start_controller()
        env.set_load_balancer()
        env.gateway()
        env.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "secure", "namespace": env.apps},
                   "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}})
        env.apply({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "secure-1", "namespace": env.apps,
                                "labels": {"kubernetes.io/service-name": "secure"}},
                   "addressType": "IPv4", "ports": [{"name": "https", "port": 8443, "protocol": "TCP"}],
                   "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}]})
        env.apply({"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": "shop", "namespace": env.apps},
                   "spec": {"parentRefs": [{"name": "web"}], "hostnames": ["shop.example.com"],
                            "rules": [{"backendRefs": [{"name": "secure", "port": 443}]}]}})
        env.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "secure-ca", "namespace": env.apps},
                   "data": {"ca.crt": _pem(ca[0])}})
        policy = {"apiVersion": GW, "kind": "BackendTLSPolicy", "metadata": {"name": "secure-tls", "namespace": env.apps},
                  "spec": {"targetRefs": [{"group": "", "kind": "Service", "name": "secure", "sectionName": "https"}],
                           "validation": {"caCertificateRefs": [{"group": "", "kind": "ConfigMap", "name": "secure-ca"}],
                                          "hostname": "secure.internal"}}}
        env.apply(policy)

        accepted = wait_for(lambda: (c := _policy_condition(env, "secure-tls", "Accepted")) and c["status"] == "True"
                            and c, 60, what="the policy's Accepted for Gateway web")
        assert accepted["reason"] == "Accepted"
        assert _policy_condition(env, "secure-tls", "ResolvedRefs")["status"] == "True"
        route = wait_for(lambda: (env.get("HTTPRoute", env.apps, "shop") or {}).get("status"), 60)
        assert condition({"status": route["parents"][0]}, "ResolvedRefs")["status"] == "True"
        wait_for(lambda: "backendtls." in env.root_config(), 60, what="the policy in twp.yaml")

        # honoured: TLS to the backend, its name sent and checked against the CA's certificate
        data_plane.start()
        r = wait_for(lambda: (x := data_plane.get("shop.example.com", "/pay")).status_code == 200 and x, 30,
                     what="a 200 through the data plane")
        assert r.json()["backend"] == "secure" and backend.requests[-1]["sni"] == "secure.internal"

        # a hostname the certificate does not carry: the policy is valid (Accepted), the
        # connection fails its check: 502, nothing reaches the backend
        env.api.patch("BackendTLSPolicy", env.apps, "secure-tls",
                      {"spec": {"validation": {"hostname": "other.internal"}}})
        wait_for(lambda: "other.internal" in env.root_config(), 60, what="the new hostname in twp.yaml")
        data_plane.sync()
        wait_for(lambda: data_plane.get("shop.example.com", "/pay").status_code == 502, 30, what="502 on a name mismatch")
        seen = len(backend.requests)  # (the requests before the data plane loaded the new config)
        assert [data_plane.get("shop.example.com", "/pay").status_code for _ in range(3)] == [502] * 3
        assert len(backend.requests) == seen

        # the CA ConfigMap gone: the policy cannot be honoured, its status says why, the backend
        # answers 503 (no destinations), never plaintext
        env.api.delete("ConfigMap", env.apps, "secure-ca")
        refused = wait_for(lambda: (c := _policy_condition(env, "secure-tls", "ResolvedRefs")) and c["status"] == "False"
                           and c, 60, what="ResolvedRefs False")
        assert refused["reason"] == "InvalidCACertificateRef" and "ConfigMap" in refused["message"]
        assert _policy_condition(env, "secure-tls", "Accepted")["reason"] == "NoValidCACertificate"
        wait_for(lambda: "destinations: []" in env.root_config(), 60, what="the refused cluster in twp.yaml")
        data_plane.sync()
        wait_for(lambda: data_plane.get("shop.example.com", "/pay").status_code == 503, 30, what="503 when refused")
        assert [data_plane.get("shop.example.com", "/pay").status_code for _ in range(3)] == [503] * 3
        assert len(backend.requests) == seen
        generation = (env.get("BackendTLSPolicy", env.apps, "secure-tls") or {})["metadata"]["generation"]
        assert {c["observedGeneration"] for c in _policy_ancestor(env, "secure-tls")["conditions"]} == {generation}
        assert not env.forbidden()
    finally:
        backend.stop()
        env.cluster.ips.release(ip)


@pytest.mark.parametrize("env", [EVERY_NAMESPACE], indirect=True, ids=["secrets-cluster-wide"])
def test_a_listener_set_listener_serves_its_routes(env: ClusterEnv, data_plane: RenderedDataPlane) -> None:
    ip = env.cluster.ips.allocate()
    backend = EchoBackend("team-api", host=ip, port=8080)
    try:
        env.start_controller()
        env.set_load_balancer()
        env.service("api", ips=(ip,))
        env.apply({"apiVersion": GW, "kind": "Gateway", "metadata": {"name": "web", "namespace": env.apps},
                   "spec": {"gatewayClassName": env.release.rel.gateway_class,
                            "allowedListeners": {"namespaces": {"from": "Same"}},
                            "listeners": [{"name": "http", "port": 80, "protocol": "HTTP",
                                           "hostname": "www.example.com"}]}})
        env.apply({"apiVersion": GW, "kind": "ListenerSet", "metadata": {"name": "team", "namespace": env.apps},
                   "spec": {"parentRef": {"name": "web"},
                            "listeners": [{"name": "team", "port": 80, "protocol": "HTTP",
                                           "hostname": "team.example.com"}]}})
        env.apply({"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": "team", "namespace": env.apps},
                   "spec": {"parentRefs": [{"kind": "ListenerSet", "name": "team"}],
                            "rules": [{"backendRefs": [{"name": "api", "port": 8080}]}]}})

        ls = wait_for(lambda: (o := env.get("ListenerSet", env.apps, "team")) and condition(o, "Programmed")
                      and condition(o, "Programmed")["status"] == "True" and o, 120,
                      what="the ListenerSet Programmed (the data-plane pods confirmed the config)")
        assert condition(ls, "Accepted")["status"] == "True"
        (entry,) = ls["status"]["listeners"]
        assert entry["name"] == "team" and entry["attachedRoutes"] == 1
        gw = env.get("Gateway", env.apps, "web")
        assert gw["status"]["attachedListenerSets"] == 1
        assert [x["name"] for x in gw["status"]["listeners"]] == ["http"]
        route = env.get("HTTPRoute", env.apps, "team")
        (parent,) = route["status"]["parents"]
        assert parent["parentRef"]["kind"] == "ListenerSet"
        assert condition({"status": parent}, "Accepted")["status"] == "True"

        data_plane.start()
        r = wait_for(lambda: (x := data_plane.get("team.example.com", "/")).status_code == 200 and x, 30)
        assert r.json()["backend"] == "team-api"
        assert data_plane.get("www.example.com", "/").status_code == 404  # the route is the ListenerSet's only
        assert not env.forbidden()
    finally:
        backend.stop()
        env.cluster.ips.release(ip)


def test_other_route_kinds_get_their_status_once(env: ClusterEnv) -> None:
    env.start_controller()
    env.service("api")
    env.gateway()
    mark = env.audit_mark
    for kind in ("TLSRoute", "GRPCRoute"):
        env.apply({"apiVersion": GW, "kind": kind, "metadata": {"name": "other", "namespace": env.apps},
                   "spec": {"parentRefs": [{"name": "web"}], "hostnames": ["other.example.com"],
                            "rules": [{"backendRefs": [{"name": "api", "port": 8080}]}]}})
    for kind, expected in (("TLSRoute", ("False", "NotAllowedByListeners")), ("GRPCRoute", ("True", "Accepted"))):
        parent = wait_for(lambda k=kind: ((env.get(k, env.apps, "other") or {}).get("status") or {}).get("parents"), 60,
                          what=f"the {kind}'s status")[0]
        assert parent["controllerName"] == env.release.rel.controller_name
        accepted = condition({"status": parent}, "Accepted")
        assert (accepted["status"], accepted["reason"]) == expected
    # more reconciles (a new route, its status): the other routes' statuses are not written again
    env.route(name="more", host="more.example.com")
    wait_for(lambda: (env.get("HTTPRoute", env.apps, "more") or {}).get("status"), 60)
    time.sleep(3)
    for resource in ("tlsroutes/status", "grpcroutes/status"):
        writes = env.controller_writes(mark, resource)
        assert len(writes) == 1, [w.get("verb") for w in writes]
    listener = (env.get("Gateway", env.apps, "web") or {})["status"]["listeners"][0]
    assert listener["attachedRoutes"] == 2  # (the HTTPRoute and the GRPCRoute)
    assert {k["kind"] for k in listener["supportedKinds"]} == {"HTTPRoute", "GRPCRoute"}
    assert not env.forbidden()
