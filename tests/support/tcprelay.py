"""A TCP relay a test puts between a client and a server to cut the client off at will.

Bytes pass through untouched (TLS included: the relay listens on the server's own address,
another port, so the server's certificate still matches). ``cut()`` closes every relayed
connection and refuses new ones (accepted and closed at once) until ``restore()``: the client
sees its connections break and its reconnects fail, as in a network partition, while the
server stays up for everyone else::

    relay = TcpRelay(("198.18.0.1", 6443), listen_host="198.18.0.1").start()
    ...  # point the client at relay.port
    relay.cut(); ...; relay.restore()
"""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["TcpRelay"]


class TcpRelay:
    def __init__(self, upstream: tuple[str, int], *, listen_host: str = "127.0.0.1", port: int = 0) -> None:
        self.upstream = upstream
        self._listener = socket.create_server((listen_host, port))
        self.host = listen_host
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self._cut = False
        self.accepted = 0
        self.refused = 0
        self._thread: threading.Thread | None = None

    def start(self) -> TcpRelay:
        self._thread = threading.Thread(target=self._accept, name=f"relay-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()
        self._close_all()

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    def cut(self) -> None:
        """Break every relayed connection and refuse new ones until restore()."""
        with self._lock:
            self._cut = True
        self._close_all()

    def restore(self) -> None:
        with self._lock:
            self._cut = False

    def _close_all(self) -> None:
        with self._lock:
            socks, self._socks = list(self._socks), set()
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                cut = self._cut
            if cut:
                self.refused += 1
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self.accepted += 1
            with self._lock:
                self._socks.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._socks.discard(src)

