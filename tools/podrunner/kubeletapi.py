"""The part of the kubelet's HTTPS API the API server proxies to: container logs.

``kubectl logs`` and the conformance suite's log reader (``pods/log``) make the API server call
``https://<node InternalIP>:<kubelet port>/containerLogs/<ns>/<pod>/<container>`` with the query
of PodLogOptions (``tailLines``, ``limitBytes``, ``timestamps``, ``sinceSeconds``, ``previous``,
``follow``). Without ``--kubelet-certificate-authority`` the API server does not verify the
kubelet's certificate, so a self-signed one is generated at start (kept in memory and a
private temporary file only while the listener loads it).
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tools.podrunner.process import read_log

log = logging.getLogger(__name__)

# (namespace, pod, container, previous) -> log file path, or None when there is no such container
LogLookup = Callable[[str, str, str, bool], "str | None"]
# (namespace, pod, container) -> True while the container may still write (for follow)
AliveLookup = Callable[[str, str, str], bool]


def self_signed(node_name: str, node_ip: str) -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{node_name}@podrunner")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName(node_name), x509.IPAddress(ipaddress.ip_address(node_ip))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


class _Handler(BaseHTTPRequestHandler):
    server: KubeletApiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: object) -> None:
        log.debug("kubelet api: " + fmt, *args)

    def _plain(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        if parts == ["healthz"]:
            self._plain(200, b"ok")
            return
        if len(parts) != 4 or parts[0] != "containerLogs":
            self._plain(404, b"404 page not found\n")
            return
        ns, pod, container = parts[1:]
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}

        def number(key: str) -> int | None:
            return int(q[key]) if q.get(key, "").lstrip("-").isdigit() else None

        previous = q.get("previous", "") in ("true", "1")
        path = self.server.lookup(ns, pod, container, previous)
        if path is None:
            self._plain(404, f'container "{container}" in pod "{pod}" is not available\n'.encode())
            return
        since = number("sinceSeconds")
        opts = {"tail_lines": number("tailLines"), "limit_bytes": number("limitBytes"),
                "timestamps": q.get("timestamps", "") in ("true", "1"),
                "since": time.time() - since if since is not None else None}
        if q.get("follow", "") not in ("true", "1"):
            self._plain(200, read_log(path, **opts))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self._chunk(read_log(path, **opts))
            # Then whatever the container writes from now on (counted on the whole log).
            seen = len(read_log(path).splitlines())
            while self.server.alive(ns, pod, container) and not self.server.stopping.is_set():
                time.sleep(0.5)
                lines = read_log(path, timestamps=bool(opts["timestamps"])).splitlines(keepends=True)
                if len(lines) > seen:
                    self._chunk(b"".join(lines[seen:]))
                    seen = len(lines)
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            return

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class KubeletApiServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], node_name: str, lookup: LogLookup, alive: AliveLookup) -> None:
        super().__init__(address, _Handler)
        self.lookup = lookup
        self.alive = alive
        self.stopping = threading.Event()
        cert, key = self_signed(node_name, address[0])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        fd, tmp = tempfile.mkstemp(prefix="podrunner-kubelet-")
        try:
            os.write(fd, cert + key)
            os.close(fd)
            ctx.load_cert_chain(tmp)
        finally:
            os.unlink(tmp)
        self.tls = ctx

    def get_request(self) -> tuple[socket.socket, object]:
        # The handshake happens in the connection's own thread (on its first read), so a slow
        # client never holds up accept().
        sock, addr = self.socket.accept()
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def start(self) -> KubeletApiServer:
        threading.Thread(target=self.serve_forever, name="kubelet-api", daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()
