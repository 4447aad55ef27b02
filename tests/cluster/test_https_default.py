"""HTTPS out of the box, on a real control plane with the chart's defaults (a data plane per
Gateway, no namespaces listed, the admission policy on): a Gateway's HTTPS listener whose
certificate Secret is in the Gateway's own namespace serves through the Gateway's own address,
with that certificate (the pod runner runs the data-plane pods: tests/cluster/test_per_gateway.py)."""

from __future__ import annotations

import socket
import ssl

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from tests.cluster.conftest import GW, KubeSession, wait_for
from tests.cluster.test_per_gateway import PlaneEnv, planes  # noqa: F401 - the fixture
from tests.integration.conftest import make_tls_secret

pytestmark = pytest.mark.timeout(900)


def https_get(address: str, host: str) -> tuple[int, str]:
    """(status, the certificate's common name) of ``GET /`` over TLS with SNI ``host``."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # (self-signed: the name is checked below)
    with socket.create_connection((address, 443), timeout=5) as raw, ctx.wrap_socket(raw, server_hostname=host) as s:
        der = s.getpeercert(binary_form=True)
        s.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    cn = x509.load_der_x509_certificate(der or b"").subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    return int(data.split(b" ", 2)[1]), str(cn)


def test_an_https_listener_with_its_secret_in_the_gateways_namespace_serves(planes: PlaneEnv,  # noqa: F811
                                                                             kube: KubeSession) -> None:
    env = planes
    env.backend("shop")
    env.apply(make_tls_secret("shop-tls", env.apps, cn="shop.example.com"))
    env.apply({"apiVersion": GW, "kind": "Gateway", "metadata": {"name": "web", "namespace": env.apps},
               "spec": {"gatewayClassName": env.class_name, "listeners": [
                   {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
                    "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}]}})
    env.route("shop", "web", "shop.example.com", "shop")
    ctrl = env.release.start_controller("ctrl-a", health_port=next(kube.ports))
    address = wait_for(lambda: env.programmed_address("web"), 240, 1,
                       f"Gateway web Programmed with an address ({ctrl.log()[-2000:]})")

    def served() -> tuple[int, str] | None:
        try:
            got = https_get(address, "shop.example.com")
        except OSError:
            return None
        return got if got[0] == 200 else None

    status, cn = wait_for(served, 120, 1, "https://shop.example.com through the Gateway's address")
    assert cn == "shop.example.com"
