"""TLS end to end: SNI selection on decrypting listeners, PFX loading, HTTPS to destinations."""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import ssl
import threading

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

import requests  # noqa: E402

from tests.dataplane.docs import cluster, document, listener, route  # noqa: E402
from tests.dataplane.rules import Row, covers, rows  # noqa: E402
from tests.dataplane.support import (  # noqa: E402
    Issuer,
    cert_pem,
    common_name,
    free_port,
    header_lines,
    key_pem,
    served_certificate,
    server_context,
    wait_for,
)


@pytest.fixture(scope="module")
def ca() -> Issuer:
    return Issuer()


def serve_tls(harness, ca: Issuer, items: list[dict], names: dict[str, list[str]], routes=None, clusters=None) -> int:
    """A decrypting listener with the given certificate items (PFX per file, CN = file)."""
    port = free_port()
    files = {file: ca.pfx(file, dns) for file, dns in names.items()}
    harness.write(document(routes or [route("r", 1, directResponse={"status": 200, "body": "tls ok"})],
                           clusters or [cluster("be", [])], listeners=[listener(port, tls=True)],
                           certificates=items), files)
    harness.start()
    wait_for(lambda: harness.dp.ready)
    return port


ITEMS = [
    {"file": "apps.wild.pfx", "hosts": ["*.example.com"]},
    {"file": "apps.shop.pfx", "hosts": ["shop.example.com"]},
]
NAMES = {"apps.wild.pfx": ["*.example.com"], "apps.shop.pfx": ["shop.example.com"],
         "apps.default.pfx": ["fallback.test"]}

SNI_ROWS = [
    Row("certs.exact", "exact beats wildcard", ITEMS, "shop.example.com", "apps.shop.pfx"),
    Row("certs.wildcard", "wildcard covers one label", ITEMS, "api.example.com", "apps.wild.pfx"),
    Row("certs.wildcard", "not two labels: no certificate", ITEMS, "a.b.example.com", None),
    Row("certs.default", "no match: the default item", [*ITEMS, {"file": "apps.default.pfx", "hosts": [],
                                                                 "default": True}], "nothing.test", "apps.default.pfx"),
    Row("certs.default", "no SNI: the default item", [*ITEMS, {"file": "apps.default.pfx", "hosts": [],
                                                               "default": True}], None, "apps.default.pfx"),
    Row("certs.fail", "no match and no default: the handshake fails", ITEMS, "nothing.test", None),
    Row("certs.fail", "no SNI and no default: the handshake fails", ITEMS, None, None),
    Row("d.certificates", "the default item still serves its hosts by SNI",
        [*ITEMS, {"file": "apps.default.pfx", "hosts": ["fallback.test"], "default": True}], "fallback.test",
        "apps.default.pfx"),
]


@rows(*SNI_ROWS)
def test_sni_selection(row: Row, harness, ca) -> None:
    items, server_name, expected = row.args
    port = serve_tls(harness, ca, items, NAMES)
    if expected is None:
        with pytest.raises(ssl.SSLError):
            served_certificate(port, server_name)
        assert harness.dp.metrics.tls_rejected._value.get() >= 1
    else:
        assert common_name(served_certificate(port, server_name)) == expected


@covers("listeners.decryptSsl", "files.pfx", "routes.global")
def test_https_request_through_a_decrypting_listener(harness, ca, backends, tmp_path) -> None:
    be = backends("be")
    port = serve_tls(harness, ca, ITEMS, NAMES, [route("r", 1, {"host": "shop.example.com"})],
                     [cluster("be", [be.destination()])])
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(ca.pem)
    s = requests.Session()
    from requests.adapters import HTTPAdapter

    class SNIAdapter(HTTPAdapter):  # connect to 127.0.0.1, verify and send SNI for shop.example.com
        def init_poolmanager(self, *a, **kw):
            kw["server_hostname"] = "shop.example.com"
            kw["assert_hostname"] = "shop.example.com"
            super().init_poolmanager(*a, **kw)

    s.mount("https://", SNIAdapter())
    r = s.get(f"https://127.0.0.1:{port}/x", headers={"Host": "shop.example.com"}, verify=str(ca_file), timeout=5)
    assert r.status_code == 200 and r.json()["backend"] == "be"
    assert header_lines(r.json(), "host") == ["shop.example.com"]


@covers("listeners.decryptSsl", "action.redirect")
def test_redirect_scheme_defaults_to_the_listeners(harness, ca) -> None:
    port = serve_tls(harness, ca, [{"file": "apps.default.pfx", "hosts": [], "default": True}], NAMES,
                     [route("r", 1, redirect={"statusCode": 301, "host": "new.test"})])
    ctx = ssl.create_default_context(cafile=None)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
        tls.sendall(b"GET /p?q=1 HTTP/1.1\r\nHost: old.test\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := tls.recv(4096):
            data += chunk
    assert b"301" in data.split(b"\r\n")[0] and b"Location: https://new.test/p?q=1" in data


@covers("files.pfx")
def test_pfx_converted_by_the_controller_loads(harness, ca) -> None:
    from titanium_gateway.render.certificates import convert_tls_secret

    cert, key = ca.issue("converted", ["conv.example.com"])
    secret = {"type": "kubernetes.io/tls", "metadata": {"namespace": "apps", "name": "conv"},
              "data": {"tls.crt": base64.b64encode(cert_pem(cert) + ca.pem).decode(),
                       "tls.key": base64.b64encode(key_pem(key)).decode()}}
    conversion = convert_tls_secret(secret)
    assert conversion.ok, conversion.error
    port = free_port()
    harness.write(document([route("r", 1, directResponse={"status": 200, "body": "ok"})], [cluster("be", [])],
                           listeners=[listener(port, True)],
                           certificates=[{"file": "apps.conv.pfx", "hosts": ["conv.example.com"]}]),
                  {"apps.conv.pfx": conversion.pfx})
    harness.start()
    wait_for(lambda: harness.dp.ready)
    assert common_name(served_certificate(port, "conv.example.com")) == "converted"


@covers("files.reload", "files.pfx")
def test_certificate_rotation_without_a_config_change(harness, ca) -> None:
    port = serve_tls(harness, ca, [{"file": "apps.shop.pfx", "hosts": ["shop.example.com"]}], NAMES)
    assert common_name(served_certificate(port, "shop.example.com")) == "apps.shop.pfx"
    harness.write((harness.dir / "twp.yaml").read_bytes(), {"apps.shop.pfx": ca.pfx("rotated", ["shop.example.com"])})
    wait_for(lambda: common_name(served_certificate(port, "shop.example.com")) == "rotated")


def test_private_keys_are_loaded_from_memory_only(harness, ca) -> None:
    serve_tls(harness, ca, ITEMS, NAMES)
    fds = os.listdir("/proc/self/fd")
    targets = []
    for fd in fds:
        with contextlib.suppress(OSError):
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
    assert not [t for t in targets if "titanium-tls" in t]  # every in-memory file closed after loading
    assert {p.name for p in harness.dir.iterdir()} == {"twp.yaml", *NAMES}  # nothing written beside the config


# -- HTTPS to destinations -------------------------------------------------------------------
@covers("c.useHttps", "c.tls", "i.backend-protocol", "i.upstream-tls-secret")
def test_https_destination_with_ca_and_client_certificate(harness, backends, ca) -> None:
    upstream_ca = Issuer("Upstream CA")
    cert, key = upstream_ca.issue("backend", ips=["127.0.0.1"])
    client_cert, client_key = ca.issue("titanium-client", client=True)
    be = backends("tls-be", tls=server_context(cert, key, client_ca=ca.pem))
    port = free_port()
    tls = {"caFile": "apps.up.ca.crt", "certFile": "apps.up.tls.crt", "keyFile": "apps.up.tls.key"}
    harness.write(document([route("r", 1)], [cluster("be", [be.destination(https=True)], httpClient={"tls": tls})],
                           listeners=[listener(port)]),
                  {"apps.up.ca.crt": upstream_ca.pem, "apps.up.tls.crt": cert_pem(client_cert),
                   "apps.up.tls.key": key_pem(client_key)})
    harness.start()
    wait_for(lambda: harness.dp.ready)
    r = requests.get(f"http://127.0.0.1:{port}/secure", timeout=5)
    assert r.status_code == 200 and r.json()["backend"] == "tls-be"
    assert be.requests[0]["client_cert"] == "titanium-client"


@covers("c.useHttps", "i.backend-protocol")
def test_https_destination_certificate_is_validated(harness, backends, ca) -> None:
    other = Issuer("Other CA")
    cert, key = other.issue("backend", ips=["127.0.0.1"])
    be = backends("tls-be", tls=server_context(cert, key))
    port = free_port()
    harness.write(document([route("r", 1)], [cluster("be", [be.destination(https=True)],
                                                     httpClient={"tls": {"caFile": "ca.crt"}})],
                           listeners=[listener(port)]), {"ca.crt": ca.pem})
    harness.start()
    wait_for(lambda: harness.dp.ready)
    assert requests.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 502  # not signed by caFile
    assert be.requests == []


def test_generated_answers_and_relayed_heads_add_no_server_or_type(harness) -> None:
    """A response the destination sent without Server or Content-Type is relayed without them
    (Date is added: RFC 9110 asks a proxy to)."""
    srv = socket.create_server(("127.0.0.1", 0))
    upstream_port = srv.getsockname()[1]

    def answer() -> None:
        conn, _ = srv.accept()
        with conn:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Up: 1\r\n\r\nok")

    t = threading.Thread(target=answer, daemon=True)
    t.start()
    port = free_port()
    harness.write(document([route("r", 1)], [cluster("be", [{"id": "u", "address": "127.0.0.1", "port": upstream_port,
                                                              "weight": 1, "useHttps": False}])],
                           listeners=[listener(port)]))
    harness.start()
    wait_for(lambda: harness.dp.ready)
    r = requests.get(f"http://127.0.0.1:{port}/", timeout=5)
    assert r.text == "ok" and r.headers["X-Up"] == "1" and "Date" in r.headers
    assert "Server" not in r.headers and "Content-Type" not in r.headers
    t.join(5)
    srv.close()


# -- the validation fields of a Gateway API BackendTLSPolicy ---------------------------------
def _proxy_to(harness, be, tls: dict, files: dict[str, bytes]) -> int:
    port = free_port()
    harness.write(document([route("r", 1)], [cluster("be", [be.destination(https=True)], httpClient={"tls": tls})],
                           listeners=[listener(port)]), files)
    harness.start()
    wait_for(lambda: harness.dp.ready)
    return port


BACKEND_NAMES = dict(dns=["abc.example.com", "*.wild.example.com"], uris=["spiffe://abc.example.com/test-identity"])

VALIDATION_ROWS = [
    Row("c.tls.serverName", "the name is sent and matches", {"serverName": "abc.example.com"}, 200),
    Row("c.tls.serverName", "a wildcard certificate name covers it", {"serverName": "x.wild.example.com"}, 200),
    Row("c.tls.serverName", "a name the certificate lacks", {"serverName": "mismatch.example.com"}, 502),
    Row("c.tls.subjectAltNames", "a Hostname entry matches (serverName only sent)",
        {"serverName": "other.example.com", "subjectAltNames": [{"type": "Hostname", "value": "abc.example.com"}]},
        200),
    Row("c.tls.subjectAltNames", "a URI entry matches",
        {"serverName": "abc.example.com",
         "subjectAltNames": [{"type": "URI", "value": "spiffe://abc.example.com/test-identity"}]}, 200),
    Row("c.tls.subjectAltNames", "one of several matches",
        {"serverName": "abc.example.com", "subjectAltNames": [{"type": "Hostname", "value": "nope.example.com"},
                                                               {"type": "URI", "value": "spiffe://abc.example.com/test-identity"}]},
        200),
    Row("c.tls.subjectAltNames", "the serverName is not checked when names are given",
        {"serverName": "abc.example.com", "subjectAltNames": [{"type": "Hostname", "value": "nope.example.com"}]}, 502),
    Row("c.tls.subjectAltNames", "a URI that differs",
        {"serverName": "abc.example.com",
         "subjectAltNames": [{"type": "URI", "value": "spiffe://abc.example.com/other"}]}, 502),
]


@rows(*VALIDATION_ROWS)
def test_backend_tls_validation(row, harness, backends) -> None:
    tls_fields, status = row.args
    upstream_ca = Issuer("Upstream CA")
    cert, key = upstream_ca.issue("backend", **BACKEND_NAMES)
    be = backends("tls-be", tls=server_context(cert, key))
    port = _proxy_to(harness, be, {"caFile": "ca.crt", **tls_fields}, {"ca.crt": upstream_ca.pem})
    r = requests.get(f"http://127.0.0.1:{port}/secure", timeout=5)
    assert r.status_code == status
    if status == 200:
        assert be.requests[-1]["sni"] == tls_fields["serverName"]  # the SNI is the serverName
    else:
        assert be.requests == []  # nothing was sent to the backend


@covers("c.tls.no-plaintext", "c.tls")
def test_validation_failures_never_fall_back_to_plaintext(harness, backends) -> None:
    """caFile alone is trusted (not the system store beside it); a backend signed by another CA,
    or one that answers in plaintext on the destination's port, gets no request: 502."""
    trusted = Issuer("Trusted CA")
    other = backends("other-ca", tls=server_context(*Issuer("Another CA").issue("backend", **BACKEND_NAMES)))
    plain = backends("plaintext")  # an HTTP server where TLS is expected
    port = free_port()
    tls = {"caFile": "ca.crt", "serverName": "abc.example.com"}
    harness.write(document([route("plain", 1, match={"path": "/plain", "pathKind": "Exact"}, clusterId="plain"),
                            route("other", 2, clusterId="other")],
                           [cluster("other", [other.destination(https=True)], httpClient={"tls": tls}),
                            cluster("plain", [plain.destination(https=True)], httpClient={"tls": tls})],
                           listeners=[listener(port)]), {"ca.crt": trusted.pem})
    harness.start()
    wait_for(lambda: harness.dp.ready)
    assert requests.get(f"http://127.0.0.1:{port}/other", timeout=5).status_code == 502
    assert requests.get(f"http://127.0.0.1:{port}/plain", timeout=5).status_code == 502
    assert other.requests == [] and plain.requests == []


@covers("c.tls.systemRoots")
def test_system_roots_trust_the_system_store_only(harness, backends, monkeypatch, tmp_path) -> None:
    """systemRoots: the data plane's system CA store (here pointed at a test CA by SSL_CERT_FILE,
    as OpenSSL reads it) validates the backend; a CA outside it does not."""
    system_ca, other_ca = Issuer("System CA"), Issuer("Private CA")
    bundle = tmp_path / "system-ca.pem"
    bundle.write_bytes(system_ca.pem)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    good = backends("good", tls=server_context(*system_ca.issue("good", **BACKEND_NAMES)))
    bad = backends("bad", tls=server_context(*other_ca.issue("bad", **BACKEND_NAMES)))
    port = free_port()
    tls = {"serverName": "abc.example.com", "systemRoots": True}
    harness.write(document([route("good", 1, match={"path": "/good", "pathKind": "Exact"}, clusterId="good"),
                            route("bad", 2, clusterId="bad")],
                           [cluster("good", [good.destination(https=True)], httpClient={"tls": tls}),
                            cluster("bad", [bad.destination(https=True)], httpClient={"tls": tls})],
                           listeners=[listener(port)]))
    harness.start()
    wait_for(lambda: harness.dp.ready)
    assert requests.get(f"http://127.0.0.1:{port}/good", timeout=5).status_code == 200
    assert requests.get(f"http://127.0.0.1:{port}/other", timeout=5).status_code == 502
    assert bad.requests == []
