"""End-to-end helpers: echo backends, a reference data plane on loopback, test certificates."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from tests.dataplane.docs import dump
from tests.support.httpserver import TrackingHTTPServer
from tests.support.ports import free_port  # noqa: F401 (the dataplane tests import it from here)
from titanium_gateway.reference_dataplane import DataPlane, DataPlaneThread
from titanium_gateway.reference_dataplane.tls import load_chain_from_memory

TOKEN = "test-admin-token"


def wait_for(predicate: Callable[[], Any], timeout: float = 5.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)


# -- echo backend -----------------------------------------------------------------------------
class _EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    backend: EchoBackend

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        body = self._body()
        record = {"backend": self.backend.name, "method": self.command, "path": self.path,
                  "headers": [[k, v] for k, v in self.headers.items()], "body": body.decode("utf-8", "replace"),
                  "peer": self.client_address[0]}
        if isinstance(self.connection, ssl.SSLSocket):
            record["sni"] = self.backend.sni.get(id(self.connection))
            peer_cert = self.connection.getpeercert()
            record["client_cert"] = dict(x[0] for x in peer_cert["subject"])["commonName"] if peer_cert else None
        self.backend.record(record)
        delay = float(self.headers.get("x-echo-delay") or 0)
        if delay:
            time.sleep(delay)
        status = int(self.headers.get("x-echo-status") or 200)
        payload = json.dumps(record).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for line in self.headers.get_all("x-echo-header") or []:
            name, _, value = line.partition(":")
            self.send_header(name.strip(), value.strip())
        self.send_header("X-Backend", self.backend.name)
        if self.command == "HEAD" or status in (204, 304):
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            return
        body_delay = float(self.headers.get("x-echo-body-delay") or 0)
        if self.headers.get("x-echo-chunked"):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (payload[:10], payload[10:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                time.sleep(body_delay)
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body_delay:
            self.wfile.write(payload[:1])
            self.wfile.flush()
            time.sleep(body_delay)
            self.wfile.write(payload[1:])
        else:
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _handle


class EchoBackend:
    """An HTTP/1.1 server on 127.0.0.1 that answers every request with a JSON echo of it.

    Controls (request headers): ``x-echo-delay`` seconds before the response, ``x-echo-status``,
    ``x-echo-header: Name: value`` (repeatable) response lines, ``x-echo-body-delay`` seconds in
    the middle of the body, ``x-echo-chunked`` a chunked response."""

    def __init__(self, name: str = "be", tls: ssl.SSLContext | None = None, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.name = name
        self.requests: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        handler = type("_Bound", (_EchoHandler,), {"backend": self})
        self.httpd = TrackingHTTPServer((host, port), handler)
        #: id of an accepted TLS connection -> the server name its client sent (SNI)
        self.sni: dict[int, str | None] = {}
        if tls is not None:
            sni = self.sni

            def remember(sslsock: ssl.SSLSocket, name: str | None, _ctx: ssl.SSLContext) -> None:
                sni[id(sslsock)] = name

            tls.sni_callback = remember
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.host = host
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def record(self, rec: dict[str, Any]) -> None:
        with self._cond:
            self.requests.append(rec)
            self._cond.notify_all()

    def wait_requests(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout):
                raise AssertionError(f"{self.name}: {len(self.requests)} request(s), wanted {n}")
            return list(self.requests)

    def destination(self, did: str | None = None, weight: int = 1, https: bool = False) -> dict[str, Any]:
        return {"id": did or f"{self.host}:{self.port}", "address": self.host, "port": self.port, "weight": weight,
                "useHttps": https}

    def stop(self) -> None:
        self.httpd.stop()


def header_lines(echo: dict[str, Any], name: str) -> list[str]:
    return [v for k, v in echo["headers"] if k.lower() == name.lower()]


# -- the data plane --------------------------------------------------------------------------
class Harness:
    """A config directory and a reference data plane serving it on 127.0.0.1."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.thread: DataPlaneThread | None = None
        self.dp: DataPlane | None = None

    def write(self, doc: dict[str, Any] | bytes, files: dict[str, bytes] | None = None) -> str:
        """Write the files, then twp.yaml (atomically); its sha256."""
        for name, data in (files or {}).items():
            _atomic_write(self.dir / name, data)
        data = doc if isinstance(doc, bytes) else dump(doc)
        _atomic_write(self.dir / "twp.yaml", data)
        return hashlib.sha256(data).hexdigest()

    def start(self, **kw: Any) -> DataPlane:
        kw.setdefault("admin_port", 0)
        kw.setdefault("bind_address", "127.0.0.1")
        kw.setdefault("admin_token", TOKEN)
        kw.setdefault("poll_interval", 0.05)
        self.dp = DataPlane(self.dir, **kw)
        self.thread = self.dp.run_in_thread()
        return self.dp

    @property
    def admin(self) -> str:
        assert self.dp is not None
        return f"http://127.0.0.1:{self.dp.admin_port}"

    def version(self) -> dict[str, Any]:
        r = requests.get(f"{self.admin}/version", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        r.raise_for_status()
        return r.json()

    def wait_hash(self, config_hash: str, timeout: float = 5.0) -> None:
        wait_for(lambda: self.version()["config_hash"] == config_hash, timeout)

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.stop()
            self.thread = None


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# -- certificates ----------------------------------------------------------------------------
_START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


class Issuer:
    """A test CA that issues ECDSA leaf certificates."""

    def __init__(self, name: str = "Test CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(_START).not_valid_after(_START + dt.timedelta(days=36500))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, cn: str, dns: list[str] | tuple[str, ...] = (), ips: list[str] | tuple[str, ...] = (),
              client: bool = False, uris: list[str] | tuple[str, ...] = ()
              ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        import ipaddress

        key = ec.generate_private_key(ec.SECP256R1())
        sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        sans += [x509.UniformResourceIdentifier(u) for u in uris]
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
                   .issuer_name(self.cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(_START).not_valid_after(_START + dt.timedelta(days=36500))
                   .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH if client
                                                         else x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                                  critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(self.key, hashes.SHA256()), key

    def pfx(self, cn: str, dns: list[str] | tuple[str, ...] = ()) -> bytes:
        cert, key = self.issue(cn, dns)
        return pkcs12.serialize_key_and_certificates(None, key, cert, [self.cert],
                                                     serialization.NoEncryption())


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key: Any) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def server_context(cert: x509.Certificate, key: Any, client_ca: bytes | None = None) -> ssl.SSLContext:
    """A server SSLContext for an echo backend (the key loaded from memory, as the data plane does)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    load_chain_from_memory(ctx, key_pem(key) + cert_pem(cert))
    if client_ca is not None:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(cadata=client_ca.decode())
    return ctx


def served_certificate(port: int, server_name: str | None, ca_pem: bytes | None = None) -> x509.Certificate:
    """The leaf certificate the TLS listener on 127.0.0.1:port serves for ``server_name``."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname=server_name) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def common_name(cert: x509.Certificate) -> str:
    return cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value  # type: ignore[return-value]
