"""An HTTPS admission webhook for tests on a real API server: the test decides each request.

The API server calls it for the operations a ValidatingWebhookConfiguration selects; a denial
carries the HTTP code the test chooses (the API server answers the client with it, e.g. 409
Conflict), which is how a test makes a real API server answer a write with a given error::

    hook = AdmissionWebhook("198.18.0.1", decide=lambda req: (409, "Conflict", "try again")).start()
    api.create(hook.configuration("deny-once", rules=[...], match_conditions=[...]))

``decide(request)`` gets the AdmissionReview's ``request`` and returns None (allowed) or
``(code, reason, message)``. Its own CA and certificate are made at start (``ca_bundle``).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["AdmissionWebhook"]

Decision = tuple[int, str, str] | None


def _cert(host: str) -> tuple[bytes, bytes, bytes]:
    """(CA PEM, server certificate PEM, server key PEM) for an IP address."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-webhook-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), cert.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


class AdmissionWebhook:
    def __init__(self, host: str, decide: Callable[[dict[str, Any]], Decision]) -> None:
        self.host = host
        self.decide = decide
        self.reviews: list[tuple[dict[str, Any], Decision]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.ca_pem = b""

    def start(self) -> AdmissionWebhook:
        ca, cert, key = _cert(self.host)
        self.ca_pem = ca
        webhook = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                return

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                req = body.get("request") or {}
                try:
                    decision = webhook.decide(req)
                except Exception as e:  # a broken test decision denies loudly
                    decision = (500, "InternalError", f"test webhook: {e!r}")
                with webhook._lock:
                    webhook.reviews.append((req, decision))
                resp: dict[str, Any] = {"uid": req.get("uid", ""), "allowed": decision is None}
                if decision is not None:
                    code, reason, message = decision
                    resp["status"] = {"code": code, "reason": reason, "message": message}
                out = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                  "response": resp}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as d:  # the key is loaded into memory, then deleted
            cert_file, key_file = Path(d, "tls.crt"), Path(d, "tls.key")
            cert_file.write_bytes(cert)
            key_file.write_bytes(key)
            ctx.load_cert_chain(cert_file, key_file)
        httpd = ThreadingHTTPServer((self.host, 0), Handler)
        httpd.daemon_threads = True
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name="admission-webhook", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}/validate"

    def denied(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r, d in self.reviews if d is not None]

    def configuration(self, name: str, rules: list[dict[str, Any]], *, match_conditions: list[dict[str, str]] | None = None,
                      namespace: str | None = None) -> dict[str, Any]:
        """A ValidatingWebhookConfiguration calling this server (failurePolicy Ignore: a test
        webhook that is gone blocks nobody)."""
        hook: dict[str, Any] = {
            "name": f"{name}.tests.titaniumproxy.com",
            "clientConfig": {"url": self.url, "caBundle": base64.b64encode(self.ca_pem).decode()},
            "rules": rules, "failurePolicy": "Ignore", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "timeoutSeconds": 5,
        }
        if namespace:
            hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
        if match_conditions:
            hook["matchConditions"] = match_conditions
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": name}, "webhooks": [hook]}
