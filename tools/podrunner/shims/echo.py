"""The echo-basic image of the Gateway API project for the local cluster (``make dev``'s backends).

``gcr.io/k8s-staging-gateway-api/echo-basic`` answers every request on port 3000 with JSON
describing it: the path, host, method, protocol and headers it received, and the pod that
answered (``POD_NAME``, ``NAMESPACE`` from the pod's env). This is that answer, from a local
process: HTTP/1.1 on ``$HTTP_PORT`` (3000), on every address of the pod's own network stack, or
on ``$PODRUNNER_BIND_ADDRESS`` when the pod shares the node's. Its h2c and TLS ports are not
served. With ``GRPC_ECHO_SERVER`` set it is echo-basic's gRPC server instead, as the image is
(tools/podrunner/shims/grpcecho.py).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "echo-basic (local)"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        headers: dict[str, list[str]] = {}
        for name, value in self.headers.items():
            headers.setdefault(name.title(), []).append(value)
        body = json.dumps({
            "path": self.path,
            "host": self.headers.get("Host", ""),
            "method": self.command,
            "proto": self.request_version,
            "headers": headers,
            "namespace": os.environ.get("NAMESPACE", ""),
            "ingress": os.environ.get("INGRESS_NAME", ""),
            "service": os.environ.get("SERVICE_NAME", ""),
            "pod": os.environ.get("POD_NAME", ""),
        }, indent=1).encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _answer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        sys.stdout.write(f"{self.address_string()} {format % args}\n")
        sys.stdout.flush()


def main() -> int:
    if os.environ.get("GRPC_ECHO_SERVER"):
        from tools.podrunner.shims import grpcecho

        return grpcecho.serve_forever()
    port = int(os.environ.get("HTTP_PORT") or 3000)
    server = ThreadingHTTPServer((os.environ.get("PODRUNNER_BIND_ADDRESS", ""), port), EchoHandler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"Echo server listening on port {port}.", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
