"""Client configuration without the generated ``kubernetes`` client (kube/kubeconfig.py) and the
urllib3 transport built from it (kube/rest.py ``Transport``): the same configuration as the
official loaders, and TLS, client certificates, SNI, exec-plugin tokens and their refresh over
real HTTPS."""

from __future__ import annotations

import base64
import datetime
import http.server
import json
import os
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from titanium_gateway.kube.api import CONFIG_MAPS
from titanium_gateway.kube.rest import (
    RestApi,
    bypasses_proxy,
    encode_query,
    pool_manager,
    tcp_keepalive_socket_options,
)
from titanium_gateway.metrics import Registry

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


# --- certificates -------------------------------------------------------------------------------

def _pem_pair(subject: str, *, issuer: tuple[Any, Any] | None = None, ca: bool = False,
              dns: tuple[str, ...] = (), client: bool = False) -> tuple[Any, Any, bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer_cert, issuer_key = issuer if issuer else (None, key)
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(name)
         .issuer_name(issuer_cert.subject if issuer_cert is not None else name)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if dns:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(d) for d in dns]), critical=False)
    if ca:
        b = b.add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                          data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                          crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
    else:
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    cert = b.sign(issuer_key, hashes.SHA256())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert, key, cert_pem, key_pem


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("pki")
    ca_cert, ca_key, ca_pem, _ = _pem_pair("test-ca", ca=True)
    _, _, server_pem, server_key = _pem_pair("kube.test", issuer=(ca_cert, ca_key), dns=("kube.test",))
    _, _, client_pem, client_key = _pem_pair("titanium", issuer=(ca_cert, ca_key), client=True)
    files = {"ca.pem": ca_pem, "server.pem": server_pem, "server.key": server_key,
             "client.pem": client_pem, "client.key": client_key}
    for name, data in files.items():
        (d / name).write_bytes(data)
    return {"dir": d, **files}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class _Handler(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, Any]]

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
        self.server.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},  # type: ignore[attr-defined]
                                 "client_cert": peer})
        body = json.dumps({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def https_server(pki: dict[str, Any]) -> Iterator[Any]:
    """An HTTPS server with a certificate for ``kube.test`` (only) that requires a client
    certificate signed by the test CA."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki["dir"] / "server.pem", pki["dir"] / "server.key")
    ctx.load_verify_locations(cafile=str(pki["dir"] / "ca.pem"))
    ctx.verify_mode = ssl.CERT_REQUIRED
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    httpd.seen = []  # type: ignore[attr-defined]
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def _kubeconfig(path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": cluster}], "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": "default"}}]}))
    return str(path)


def _exec_plugin(tmp_path: Path) -> dict[str, Any]:
    """An exec credential plugin whose tokens are t1, t2, ... and already expired, so the
    official loader's refresh hook runs it again before every request."""
    script = tmp_path / "plugin.py"
    counter = tmp_path / "count"
    script.write_text(textwrap.dedent(f"""
        import json, pathlib
        p = pathlib.Path({str(counter)!r})
        n = int(p.read_text()) + 1 if p.exists() else 1
        p.write_text(str(n))
        print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                          "status": {{"token": f"t{{n}}", "expirationTimestamp": "2000-01-01T00:00:00Z"}}}}))
    """))
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(script)], "interactiveMode": "Never"}}


# --- the lean import ----------------------------------------------------------------------------

def test_loading_a_kubeconfig_does_not_import_the_generated_client(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "kubeconfig", {"server": "https://10.0.0.1:6443"}, {"token": "abc"})
    out = _run(f"""
        import sys
        from titanium_gateway.kube.rest import RestApi
        api = RestApi.from_kubeconfig({path!r})
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("kubernetes", "pydantic")))
        print(api.configuration.host, api.transport.auth_headers())
        import kubernetes  # afterwards, the whole package imports as usual
        print(kubernetes.client.CoreV1Api.__name__, kubernetes.config.load_kube_config.__name__)
    """)
    lines = out.splitlines()
    assert lines[0] == "[]"
    assert lines[1] == "https://10.0.0.1:6443 {'authorization': 'Bearer abc'}"
    assert lines[2] == "CoreV1Api load_kube_config"


_DUMP = """
    import json, sys
    {pre}
    from titanium_gateway.kube import kubeconfig
    from titanium_gateway.kube.rest import load_configuration
    _, config = kubeconfig.kubernetes_config()
    ic = sys.modules.get("kubernetes.config.incluster_config") or config.incluster_config
    ic.SERVICE_TOKEN_FILENAME, ic.SERVICE_CERT_FILENAME = {token_file!r}, {cert_file!r}
    cfg = load_configuration({kubeconfig!r}, {context!r})

    def content(p):
        return open(p).read() if p else None

    print(json.dumps({{
        "lean": "kubernetes.client.api_client" not in sys.modules,
        "host": cfg.host, "api_key": cfg.api_key, "api_key_prefix": cfg.api_key_prefix,
        "auth": cfg.auth_settings(), "verify_ssl": cfg.verify_ssl, "ca": content(cfg.ssl_ca_cert),
        "cert": content(cfg.cert_file), "key": content(cfg.key_file), "tls_server_name": cfg.tls_server_name,
        "proxy": cfg.proxy, "refresh": cfg.refresh_api_key_hook is not None,
    }}, sort_keys=True, default=str))
"""


def _load_both(kubeconfig: str | None, tmp_path: Path, context: str | None = None,
               env: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    args = {"kubeconfig": kubeconfig, "context": context, "token_file": str(tmp_path / "sa-token"),
            "cert_file": str(tmp_path / "sa-ca.crt")}
    (tmp_path / "count").unlink(missing_ok=True)  # the exec plugin's token counter
    lean = json.loads(_run(_DUMP.format(pre="", **args), env))
    (tmp_path / "count").unlink(missing_ok=True)
    full = json.loads(_run(_DUMP.format(pre="import kubernetes", **args), env))
    assert lean.pop("lean") is True and full.pop("lean") is False
    return lean, full


def test_the_lean_loaders_configure_exactly_as_the_official_package(tmp_path: Path, pki: dict[str, Any]) -> None:
    users = {
        "token": {"token": "abc"},
        "client-cert-data": {"client-certificate-data": _b64(pki["client.pem"]),
                             "client-key-data": _b64(pki["client.key"])},
        "client-cert-files": {"client-certificate": str(pki["dir"] / "client.pem"),
                              "client-key": str(pki["dir"] / "client.key")},
        "basic": {"username": "admin", "password": "secret"},
        "exec": _exec_plugin(tmp_path),
    }
    clusters = {
        "ca-data": {"server": "https://127.0.0.1:6443", "certificate-authority-data": _b64(pki["ca.pem"]),
                    "tls-server-name": "kube.test", "proxy-url": "http://proxy.local:3128"},
        "ca-file": {"server": "https://kube.test:6443", "certificate-authority": str(pki["dir"] / "ca.pem")},
        "insecure": {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True},
    }
    for cname, cluster in clusters.items():
        for uname, user in users.items():
            lean, full = _load_both(_kubeconfig(tmp_path / f"{cname}-{uname}", cluster, user), tmp_path)
            assert lean == full, (cname, uname)
            assert lean["host"] == cluster["server"]
    lean, _ = _load_both(_kubeconfig(tmp_path / "k", clusters["ca-data"], users["client-cert-data"]), tmp_path)
    assert (lean["verify_ssl"], lean["ca"], lean["cert"], lean["tls_server_name"], lean["proxy"]) == (
        True, pki["ca.pem"].decode(), pki["client.pem"].decode(), "kube.test", "http://proxy.local:3128")


def test_the_lean_in_cluster_loader_configures_exactly_as_the_official_package(
        tmp_path: Path, pki: dict[str, Any]) -> None:
    (tmp_path / "sa-token").write_text("sa-token-1")
    (tmp_path / "sa-ca.crt").write_bytes(pki["ca.pem"])
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    lean, full = _load_both(None, tmp_path, env=env)
    assert lean == full
    assert lean["host"] == "https://10.96.0.1:443" and lean["ca"] == pki["ca.pem"].decode()
    assert lean["auth"]["BearerToken"]["value"].lower() == "bearer sa-token-1" and lean["refresh"]


# --- the transport ------------------------------------------------------------------------------

def test_https_with_ca_sni_client_certificate_and_refreshed_exec_tokens(
        tmp_path: Path, pki: dict[str, Any], https_server: Any) -> None:
    port = https_server.server_address[1]
    user = {"client-certificate-data": _b64(pki["client.pem"]), "client-key-data": _b64(pki["client.key"]),
            **_exec_plugin(tmp_path)}
    cluster = {"server": f"https://127.0.0.1:{port}", "certificate-authority-data": _b64(pki["ca.pem"]),
               "tls-server-name": "kube.test"}  # the certificate names kube.test only, not 127.0.0.1
    api = RestApi.from_kubeconfig(_kubeconfig(tmp_path / "kubeconfig", cluster, user), registry=Registry())
    try:
        assert api.list(CONFIG_MAPS, "default", label_selector="a=b,c in (d)", limit=5)["items"] == []
        assert api.list(CONFIG_MAPS, "default")["items"] == []
    finally:
        api.close()
    seen = https_server.seen
    assert [s["headers"]["authorization"] for s in seen] == ["Bearer t2", "Bearer t3"]  # t1: loading
    assert seen[0]["path"] == "/api/v1/namespaces/default/configmaps?labelSelector=a%3Db%2Cc%20in%20%28d%29&limit=5"
    assert all(s["headers"]["user-agent"] == "titanium-gateway" for s in seen)
    assert all(s["headers"]["accept"] == "application/json" for s in seen)
    assert seen[0]["client_cert"]["subject"] == ((("commonName", "titanium"),),)


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_https_verification(tmp_path: Path, pki: dict[str, Any], https_server: Any) -> None:
    port = https_server.server_address[1]
    user = {"client-certificate-data": _b64(pki["client.pem"]), "client-key-data": _b64(pki["client.key"])}
    unverified = {"server": f"https://127.0.0.1:{port}", "certificate-authority-data": _b64(pki["ca.pem"])}
    api = RestApi.from_kubeconfig(_kubeconfig(tmp_path / "k1", unverified, user), registry=Registry())
    try:
        with pytest.raises(Exception, match="(?i)certificate|hostname|SSL"):
            api.list(CONFIG_MAPS, "default")  # the name 127.0.0.1 is not in the certificate
    finally:
        api.close()
    insecure = {"server": f"https://127.0.0.1:{port}", "insecure-skip-tls-verify": True}
    api = RestApi.from_kubeconfig(_kubeconfig(tmp_path / "k2", insecure, user), registry=Registry())
    try:
        assert api.list(CONFIG_MAPS, "default")["items"] == []
    finally:
        api.close()


def test_pool_manager_options() -> None:
    from titanium_gateway.kube.kubeconfig import new_configuration

    c = new_configuration()
    c.host, c.verify_ssl, c.connection_pool_maxsize, c.retries = "https://k:6443", False, 7, False
    c.keep_alive = True
    pm = pool_manager(c)
    assert type(pm).__name__ == "PoolManager"
    assert pm.connection_pool_kw["cert_reqs"] == ssl.CERT_NONE and pm.connection_pool_kw["maxsize"] == 7
    assert pm.connection_pool_kw["retries"].total is False
    assert (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1) in pm.connection_pool_kw["socket_options"]
    assert pm.connection_pool_kw["socket_options"] == tcp_keepalive_socket_options()
    c.proxy = "http://proxy:3128"
    assert type(pool_manager(c)).__name__ == "ProxyManager"
    c.no_proxy = "other, .k"
    assert type(pool_manager(c)).__name__ == "PoolManager"
    c.tls_server_name = "kube.test"
    assert pool_manager(c).connection_pool_kw["server_hostname"] == "kube.test"


def test_no_proxy_rules_and_query_encoding() -> None:
    assert bypasses_proxy("https://10.1.2.3:6443", "10.0.0.0/8")
    assert bypasses_proxy("https://api.example.com", ".example.com")
    assert bypasses_proxy("https://api.example.com:6443", "api.example.com:6443")
    assert bypasses_proxy("https://anything", "*")
    assert not bypasses_proxy("https://api.example.com", "example.org, 10.0.0.0/8")
    assert encode_query([("watch", True), ("limit", 500), ("labelSelector", "a=b,c")]) == \
        "watch=true&limit=500&labelSelector=a%3Db%2Cc"


def test_the_proxy_from_the_environment_is_resolved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refresh hook assigns ``host`` before every request; with a proxy taken from the
    environment the client would re-read the environment on each assignment (slow). The RestApi
    pins the proxy it was given: the same one, read once."""
    from titanium_gateway.kube.kubeconfig import new_configuration

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy-one:3128")
    monkeypatch.setenv("https_proxy", "http://proxy-one:3128")
    c = new_configuration()
    c.host = "https://k.example:6443"
    if c.proxy is None:
        pytest.skip("this kubernetes client does not read the proxy from the environment")
    assert c.proxy == "http://proxy-one:3128"
    api = RestApi(c, registry=Registry())
    try:
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy-two:3128")
        monkeypatch.setenv("https_proxy", "http://proxy-two:3128")
        api.configuration.host = "https://k.example:6443"  # what the refresh hook does
        assert api.configuration.proxy == "http://proxy-one:3128"
        assert type(api.transport.pool).__name__ == "ProxyManager"
        assert c.proxy == "http://proxy-one:3128"  # the caller's configuration is not touched
    finally:
        api.close()
