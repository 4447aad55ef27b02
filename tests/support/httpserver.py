"""A ThreadingHTTPServer that can drop its open keep-alive connections when it stops, so a
stopped fake really is gone (a pooled client connection is not served by a lingering thread)."""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import ThreadingHTTPServer
from typing import Any


class TrackingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024  # the stdlib's 5 drops SYNs under parallel clients (1 s retransmits)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> int:
        """Cut every open client connection (as a process exit would)."""
        with self._conns_lock:
            conns = list(self._conns)
            self._conns.clear()
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        return len(conns)

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.drop_connections()
