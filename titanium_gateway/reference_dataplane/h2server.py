"""A listener's connections: HTTP/1.1 (aiohttp) or HTTP/2 (h2), chosen per connection.

On a decrypting listener the TLS handshake's ALPN decides (``h2``, else HTTP/1.1); on a plain
one, a connection that starts with the HTTP/2 connection preface is h2c with prior knowledge,
any other is HTTP/1.1. Each HTTP/2 stream runs the proxy's handler in a task of its own; a
RST_STREAM from the client (or the connection's loss) cancels that task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import h2.errors
import h2.events

from titanium_gateway.reference_dataplane.h2conn import PREFACE, H2Endpoint, Stream

log = logging.getLogger("titanium.reference_dataplane.h2")

StreamHandler = Callable[[Stream, str], Awaitable[None]]
#: Seconds a plain connection has to send enough bytes to tell HTTP/1.1 from h2c.
FIRST_BYTES_TIMEOUT = 60.0


class H2ServerConnection(H2Endpoint):
    client_side = False

    def __init__(self, handler: StreamHandler) -> None:
        super().__init__()
        self._handler = handler
        self._tasks: dict[int, asyncio.Task] = {}
        self.peer = ""
        self.on_lost: Callable[[H2ServerConnection], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if peer else ""
        super().connection_made(transport)

    def stream_opened(self, stream: Stream) -> None:
        task = asyncio.get_running_loop().create_task(self._run(stream))
        self._tasks[stream.id] = task

    async def _run(self, stream: Stream) -> None:
        try:
            await self._handler(stream, self.peer)
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("HTTP/2 stream %d failed", stream.id)
            stream.reset()
        finally:
            self._tasks.pop(stream.id, None)
            if not stream.closed:  # the answer is complete (NO_ERROR) or given up (CANCEL): stop the body
                stream.reset(h2.errors.ErrorCodes.NO_ERROR if stream.local_ended else h2.errors.ErrorCodes.CANCEL)
            self.forget_if_closed(stream)
            if self.going_away and not self._tasks:
                self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for task in list(self._tasks.values()):
            task.cancel()
        if self.on_lost is not None:
            self.on_lost(self)

    def stream_lost(self, stream: Stream) -> None:
        task = self._tasks.get(stream.id)
        if task is not None and not task.done():
            task.cancel()

    async def shutdown(self, timeout: float) -> None:
        """The streams in flight are answered (up to ``timeout`` s), then GOAWAY and close. (The
        h2 library sends no frame after a GOAWAY, so it cannot announce the drain first.)"""
        if self._tasks:
            await asyncio.wait(list(self._tasks.values()), timeout=timeout)
        for task in list(self._tasks.values()):
            task.cancel()
        with contextlib.suppress(Exception):
            self.conn.close_connection()
            self.flush()
        self.close()


class ListenerProtocol(asyncio.Protocol):
    """The protocol of each accepted connection until it knows which one to hand it to."""

    def __init__(self, http1: Callable[[], asyncio.Protocol], http2: Callable[[], H2ServerConnection],
                 tls: bool, on_h2: Callable[[H2ServerConnection], None]) -> None:
        self._http1, self._http2, self._tls, self._on_h2 = http1, http2, tls, on_h2
        self._transport: asyncio.Transport | None = None
        self._buffer = b""
        self._chosen: asyncio.Protocol | None = None
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._timer = asyncio.get_running_loop().call_later(FIRST_BYTES_TIMEOUT, self._silent)
        if self._tls:  # asyncio reports the connection once the handshake is done
            sslobj = transport.get_extra_info("ssl_object")
            alpn = sslobj.selected_alpn_protocol() if sslobj is not None else None
            self._hand_over(alpn == "h2")

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        n = min(len(self._buffer), len(PREFACE))
        if self._buffer[:n] != PREFACE[:n]:
            self._hand_over(False)
        elif len(self._buffer) >= len(PREFACE):
            self._hand_over(True)

    def eof_received(self) -> bool | None:
        if self._chosen is None:  # (the client wrote less than a preface, then half-closed)
            self._hand_over(False)
        return self._chosen.eof_received() if self._chosen is not None else None  # type: ignore[union-attr]

    def connection_lost(self, exc: Exception | None) -> None:  # (before a hand-over; after it, the chosen one's)
        if self._timer is not None:
            self._timer.cancel()

    def _silent(self) -> None:
        if self._chosen is None and self._transport is not None:
            self._transport.close()

    def _hand_over(self, http2: bool) -> None:
        assert self._transport is not None
        if self._timer is not None:
            self._timer.cancel()
        proto: asyncio.Protocol
        if http2:
            conn = self._http2()
            self._on_h2(conn)
            proto = conn
        else:
            proto = self._http1()
        self._chosen = proto
        self._transport.set_protocol(proto)
        proto.connection_made(self._transport)
        data, self._buffer = self._buffer, b""
        if data:
            proto.data_received(data)
