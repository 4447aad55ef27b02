"""HTTP/2 to destinations: a pool of client connections, h2c with prior knowledge to a plain
destination, h2 by ALPN to a ``useHttps`` one (the same TLS checks as HTTP/1.1).

A destination that does not speak HTTP/2 (its TLS handshake selects no ``h2``, or it answers
the connection preface with anything but HTTP/2 frames) raises :class:`NotHttp2` before any
request byte is sent; it is remembered for :data:`HTTP1_MEMORY` seconds and the proxy uses
HTTP/1.1 to it meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import AsyncIterator

import h2.errors

from titanium_gateway.reference_dataplane.downstream import h2_fields
from titanium_gateway.reference_dataplane.h2conn import H2Endpoint, Headers, Stream, pseudo, regular

#: Seconds a destination that refused HTTP/2 is reached over HTTP/1.1 without asking again.
HTTP1_MEMORY = 60.0
#: Seconds a plain destination has to answer the connection preface.
PREFACE_TIMEOUT = 10.0

Key = tuple[str, int, "ssl.SSLContext | None", "str | None"]


class NotHttp2(Exception):
    """The destination does not speak HTTP/2."""


class H2ClientConnection(H2Endpoint):
    client_side = True

    def __init__(self) -> None:
        super().__init__()
        self.ready = asyncio.get_running_loop().create_future()

    def settings_changed(self) -> None:
        if not self.ready.done():
            self.ready.set_result(None)

    def protocol_error(self, exc: Exception) -> None:
        if not self.ready.done():
            self.ready.set_exception(NotHttp2(f"not an HTTP/2 answer to the connection preface ({exc})"))
        super().protocol_error(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ready.done():
            self.ready.set_exception(NotHttp2(f"the connection closed before HTTP/2 settings ({exc})"))
        super().connection_lost(exc)

    def has_room(self) -> bool:
        return (not self.closed and not self.going_away and self.ready.done() and self.ready.exception() is None
                and self.conn.open_outbound_streams < self.conn.remote_settings.max_concurrent_streams)

    def open_stream(self, headers: list[tuple[str, str]], end: bool) -> Stream:
        stream_id = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream_id, headers, end_stream=end)
        stream = Stream(self, stream_id)
        self.streams[stream_id] = stream
        stream.local_ended = end
        self.flush()
        return stream


class H2Response:
    """An HTTP/2 response from a destination (see :class:`~.upstream.Upstream`)."""

    def __init__(self, stream: Stream, pump: asyncio.Task | None) -> None:
        self.stream = stream
        self._pump = pump
        self.status = 0
        self.reason: str | None = None
        self.headers: Headers = ()
        self.head_only = False

    async def start(self) -> H2Response:
        head = await self.stream.response_head()  # (informational heads are not reported by h2conn)
        self.status = int(pseudo(head, ":status") or 502)
        self.headers = regular(head)
        self.head_only = self.stream.head_ended
        return self

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in self.stream.chunks():
            yield chunk

    @property
    def trailers(self) -> Headers:
        return self.stream.trailers

    def close(self) -> None:
        """Done with the response: a stream not closed both ways is reset (CANCEL)."""
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
        if not self.stream.closed:
            self.stream.reset(h2.errors.ErrorCodes.CANCEL)


class H2Pool:
    def __init__(self) -> None:
        self._connections: dict[Key, list[H2ClientConnection]] = {}
        self._connecting: dict[Key, asyncio.Future] = {}
        self._http1: dict[Key, float] = {}

    @staticmethod
    def key(address: str, port: int, ssl_ctx: ssl.SSLContext | None, server_name: str | None) -> Key:
        return (address, port, ssl_ctx, server_name)

    def http1_only(self, key: Key) -> bool:
        until = self._http1.get(key)
        if until is None:
            return False
        if until < time.monotonic():
            del self._http1[key]
            return False
        return True

    async def connection(self, key: Key, ssl_ctx: ssl.SSLContext | None, server_name: str | None) -> H2ClientConnection:
        while True:
            conns = [c for c in self._connections.get(key, ()) if not c.closed]
            self._connections[key] = conns
            for c in conns:
                if c.has_room():
                    return c
            pending = self._connecting.get(key)
            if pending is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(pending)
                if self.http1_only(key):
                    raise NotHttp2("the destination speaks HTTP/1.1")
                if pending.done() and pending.exception() is not None:
                    raise pending.exception()  # type: ignore[misc]
                continue
            fut = asyncio.get_running_loop().create_future()
            self._connecting[key] = fut
            try:
                conn = await self._connect(key, ssl_ctx, server_name)
            except BaseException as exc:
                if isinstance(exc, NotHttp2):
                    self._http1[key] = time.monotonic() + HTTP1_MEMORY
                fut.set_exception(exc if isinstance(exc, Exception) else ConnectionError("cancelled"))
                fut.exception()
                raise
            else:
                fut.set_result(None)
                self._connections.setdefault(key, []).append(conn)
                return conn
            finally:
                self._connecting.pop(key, None)

    async def _connect(self, key: Key, ssl_ctx: ssl.SSLContext | None, server_name: str | None) -> H2ClientConnection:
        address, port = key[0], key[1]
        loop = asyncio.get_running_loop()
        kwargs = {}
        if ssl_ctx is not None:
            kwargs = {"ssl": ssl_ctx, "server_hostname": server_name if server_name is not None else address}
        transport, conn = await loop.create_connection(H2ClientConnection, address, port, **kwargs)
        if ssl_ctx is not None:
            sslobj = transport.get_extra_info("ssl_object")
            if sslobj is None or sslobj.selected_alpn_protocol() != "h2":
                transport.close()
                raise NotHttp2("the destination's TLS handshake did not select h2")
        try:
            await asyncio.wait_for(asyncio.shield(conn.ready), PREFACE_TIMEOUT)
        except asyncio.TimeoutError:
            conn.close()
            raise NotHttp2(f"no answer to the connection preface in {PREFACE_TIMEOUT:.0f} s") from None
        except BaseException:
            conn.close()
            raise
        return conn

    async def request(self, key: Key, ssl_ctx: ssl.SSLContext | None, server_name: str | None,
                      head: list[tuple[str, str]], body: AsyncIterator[bytes] | None) -> H2Response:
        """Send a request (its body streamed by a task of its own); the response once its head
        arrived. Cancelled, or failing, the stream is reset."""
        conn = await self.connection(key, ssl_ctx, server_name)
        stream = conn.open_stream(head, end=body is None)
        pump = asyncio.get_running_loop().create_task(_pump(stream, body)) if body is not None else None
        response = H2Response(stream, pump)
        try:
            return await response.start()
        except BaseException:
            response.close()
            raise

    def retain(self, contexts: set[ssl.SSLContext]) -> None:
        """A new config was loaded: connections made with a TLS context it no longer has take no
        new stream, and close once their streams are done."""
        for key in [k for k in self._connections if k[2] is not None and k[2] not in contexts]:
            for conn in self._connections.pop(key):
                conn.going_away = True
                if not conn.streams:
                    conn.close()
        for key in [k for k in self._http1 if k[2] is not None and k[2] not in contexts]:
            del self._http1[key]

    async def close(self) -> None:
        for conns in self._connections.values():
            for c in conns:
                with contextlib.suppress(Exception):
                    c.conn.close_connection()
                    c.flush()
                c.close()
        self._connections.clear()


async def _pump(stream: Stream, body: AsyncIterator[bytes]) -> None:
    try:
        async for chunk in body:
            await stream.send_data(chunk)
        await stream.send_data(b"", end=True)
    except asyncio.CancelledError:
        raise
    except Exception:  # the client's body failed (reset, connection lost): the destination sees a reset
        stream.reset(h2.errors.ErrorCodes.CANCEL)



def h2_request_head(method: str, scheme: str, path: str, query: str, headers: Headers) -> list[tuple[str, str]]:
    """The pseudo-headers and fields of a request forwarded over HTTP/2: ``:authority`` is the
    Host line (after the transforms), the other lines are fields (see ``downstream.h2_fields``)."""
    authority = next((v for k, v in reversed(headers) if k.lower() == "host"), "")
    head = [(":method", method), (":scheme", scheme), (":authority", authority),
            (":path", path + (f"?{query}" if query else ""))]
    return head + h2_fields(headers)
