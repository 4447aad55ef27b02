"""The controller's health server: ``/healthz``, ``/readyz`` and ``/metrics``.

``/healthz`` answers 200 while the process is alive (``HealthState.alive`` returns True: every
core thread runs, no reconcile hangs, the caches the render needs listed within their time),
else 503 with what is wrong (``HealthState.problem``); ``/readyz`` 200 while every informer has
listed and none of their watches fails lastingly, else 503 with why (``HealthState.unready``);
``/metrics`` the Prometheus text of a registry.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from titanium_gateway.metrics import CONTENT_TYPE, REGISTRY, Registry

log = logging.getLogger(__name__)


class HealthState:
    def __init__(self, alive: Callable[[], bool] | None = None, ready: Callable[[], bool] | None = None,
                 problem: Callable[[], str] | None = None, unready: Callable[[], str] | None = None) -> None:
        self.alive: Callable[[], bool] = alive or (lambda: True)
        self.ready: Callable[[], bool] = ready or (lambda: False)
        #: why the process is not alive (the 503 body); "" when it does not know
        self.problem: Callable[[], str] = problem or (lambda: "")
        #: why the process is not ready (the 503 body); "" when it does not know
        self.unready: Callable[[], str] = unready or (lambda: "")


class _Handler(BaseHTTPRequestHandler):
    state: HealthState
    registry: Registry

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass

    def _answer(self, code: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        try:
            if path == "/healthz":
                ok = self.state.alive()
                why = "" if ok else self.state.problem() or "worker loop stalled"
                self._answer(200 if ok else 503, b"ok\n" if ok else f"{why}\n".encode())
            elif path == "/readyz":
                ok = self.state.ready()
                why = "" if ok else self.state.unready() or "informers not synced"
                self._answer(200 if ok else 503, b"ok\n" if ok else f"{why}\n".encode())
            elif path == "/metrics":
                self._answer(200, self.registry.render_text().encode(), CONTENT_TYPE)
            else:
                self._answer(404, b"not found\n")
        except Exception as e:  # never kill the server thread
            self._answer(500, f"error: {type(e).__name__}\n".encode())

    do_HEAD = do_GET  # noqa: N815


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that failed outside the handler (e.g. the prober hung up mid-answer): one log
        line through the JSON logging, not socketserver's traceback on stderr."""
        err = sys.exc_info()[1]
        if isinstance(err, (ConnectionError, TimeoutError)):
            log.debug("health server: client connection failed", extra={"error": f"{type(err).__name__}: {err}"})
        else:
            log.warning("health server: request failed", exc_info=True)


class HealthServer:
    def __init__(self, state: HealthState, port: int, host: str = "0.0.0.0",
                 registry: Registry | None = None) -> None:
        handler = type("_BoundHealth", (_Handler,), {"state": state, "registry": registry or REGISTRY})
        self._httpd = _Server((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> HealthServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="health-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
