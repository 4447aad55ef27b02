"""HTTP/2 connections of the reference data plane, on the ``h2`` library (frames, HPACK, stream
states and flow-control windows are the library's; this module moves bytes and wakes tasks).

An :class:`H2Endpoint` is the asyncio protocol of one connection, client or server side; each
stream is a :class:`Stream` whose inbound DATA is acknowledged (the window reopened) only as
the task that reads it consumes it, so a slow reader slows its sender, and whose outbound DATA
waits for window space. A RST_STREAM from the peer ends the stream's reads and writes with
:class:`StreamReset`; a lost connection with :class:`ConnectionError`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

log = logging.getLogger("titanium.reference_dataplane.h2")

#: The connection preface an HTTP/2 client sends first (RFC 9113 3.4): h2c with prior knowledge.
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#: Streams a peer may open at once on one of our connections.
MAX_CONCURRENT_STREAMS = 256
#: The window of each stream and of the connection we advertise (the default 64 KiB - 1 is slow).
WINDOW = 1 << 20

Headers = tuple[tuple[str, str], ...]
RawHeaders = Iterable[tuple[bytes | str, bytes | str]]


def decode_headers(raw: RawHeaders) -> Headers:
    return tuple((k.decode("utf-8", "replace") if isinstance(k, bytes) else k,
                  v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in raw)


def pseudo(headers: Headers, name: str) -> str | None:
    return next((v for k, v in headers if k == name), None)


def regular(headers: Headers) -> Headers:
    return tuple((k, v) for k, v in headers if not k.startswith(":"))


class StreamReset(Exception):
    """The peer reset the stream (RST_STREAM) with ``code``."""

    def __init__(self, code: int) -> None:
        super().__init__(f"stream reset by the peer ({_code_name(code)})")
        self.code = code


def _code_name(code: int) -> str:
    try:
        return h2.errors.ErrorCodes(code).name
    except ValueError:
        return str(code)


class Stream:
    """One stream: its head (request or response headers), its DATA, its trailers."""

    def __init__(self, endpoint: H2Endpoint, stream_id: int) -> None:
        self.endpoint = endpoint
        self.id = stream_id
        loop = asyncio.get_running_loop()
        self.head: Headers = ()
        self.head_ended = False  # END_STREAM came with the head: no body
        self._head = loop.create_future()
        self._chunks: collections.deque[tuple[bytes, int]] = collections.deque()
        self._readable = asyncio.Event()
        self._window = asyncio.Event()
        self.trailers: Headers = ()
        self.remote_ended = False
        self.local_ended = False
        self.reset_code: int | None = None
        self.error: BaseException | None = None

    # -- events from the endpoint ------------------------------------------------------------
    def _got_head(self, headers: Headers, ended: bool) -> None:
        self.head, self.head_ended = headers, ended
        if not self._head.done():
            self._head.set_result(headers)

    def _got_data(self, data: bytes, flow: int) -> None:
        if not data:  # (an empty frame, or padding alone: nothing to read)
            self.endpoint.acknowledge(self.id, flow)
            return
        self._chunks.append((data, flow))
        self._readable.set()

    def _got_end(self) -> None:
        self.remote_ended = True
        self._readable.set()

    def _got_reset(self, code: int) -> None:
        self.reset_code = code
        self._fail(StreamReset(code))

    def _fail(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc
        while self._chunks:  # nobody will read them: the connection's window reopens
            self.endpoint.acknowledge(self.id, self._chunks.popleft()[1])
        if not self._head.done():
            self._head.set_exception(exc)
            self._head.exception()  # (retrieved: no "never retrieved" warning when nobody waits)
        self._readable.set()
        self._window.set()

    def _wake_writer(self) -> None:
        self._window.set()

    @property
    def closed(self) -> bool:
        return self.reset_code is not None or (self.remote_ended and self.local_ended)

    # -- reading -----------------------------------------------------------------------------
    async def response_head(self) -> Headers:
        """The head, once it arrived (raises StreamReset or ConnectionError)."""
        return await asyncio.shield(self._head)

    async def read(self) -> bytes:
        """The next chunk of DATA; b"" at the end of the stream."""
        while not self._chunks:
            if self.error is not None:
                raise self.error
            if self.remote_ended:
                return b""
            self._readable.clear()
            await self._readable.wait()
        data, flow = self._chunks.popleft()
        self.endpoint.acknowledge(self.id, flow)
        return data

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            data = await self.read()
            if not data:
                return
            yield data

    # -- writing -----------------------------------------------------------------------------
    def _check(self) -> None:
        if self.error is not None:
            raise self.error

    async def send_head(self, headers: RawHeaders, end: bool = False) -> None:
        self._check()
        self.endpoint.conn.send_headers(self.id, list(headers), end_stream=end)
        self.local_ended = self.local_ended or end
        self.endpoint.flush()
        self.endpoint.forget_if_closed(self)
        await self.endpoint.drain()

    async def send_data(self, data: bytes, end: bool = False) -> None:
        conn = self.endpoint.conn
        view = memoryview(data)
        while True:
            self._check()
            try:
                size = min(conn.local_flow_control_window(self.id), conn.max_outbound_frame_size, len(view))
            except h2.exceptions.StreamClosedError:
                raise StreamReset(h2.errors.ErrorCodes.STREAM_CLOSED) from None
            if size <= 0 and len(view) > 0:
                self._window.clear()
                await self._window.wait()
                continue
            last = size == len(view)
            conn.send_data(self.id, view[:size].tobytes(), end_stream=end and last)
            self.endpoint.flush()
            await self.endpoint.drain()
            view = view[size:]
            if last:
                break
        if end:
            self.local_ended = True
            self.endpoint.forget_if_closed(self)

    async def end(self, trailers: Headers = ()) -> None:
        """END_STREAM: on a trailers HEADERS frame when there are trailers, else an empty DATA frame."""
        if trailers:
            await self.send_head(trailers, end=True)
        else:
            await self.send_data(b"", end=True)

    def reset(self, code: int = h2.errors.ErrorCodes.CANCEL) -> None:
        """RST_STREAM, unless the stream is already closed both ways."""
        if self.closed:
            return
        self.reset_code = code
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.endpoint.conn.reset_stream(self.id, code)
            self.endpoint.flush()
        self._fail(StreamReset(code))
        self.endpoint.forget_if_closed(self)


class H2Endpoint(asyncio.Protocol):
    """One HTTP/2 connection (asyncio protocol); subclasses react to new and reset streams."""

    client_side = False

    def __init__(self) -> None:
        config = h2.config.H2Configuration(client_side=self.client_side, header_encoding=None)
        self.conn = h2.connection.H2Connection(config=config)
        settings = {
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS,
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: WINDOW,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536,
        }
        if self.client_side:  # (no server push to the data plane: nothing would take it)
            settings[h2.settings.SettingCodes.ENABLE_PUSH] = 0
        self.conn.local_settings = h2.settings.Settings(client=self.client_side, initial_values=settings)
        self.streams: dict[int, Stream] = {}
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.going_away = False  # no new streams (a GOAWAY, or a pool connection retired): closes when idle
        self.settings_received = False
        self._writable = asyncio.Event()
        self._writable.set()

    # -- asyncio protocol --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.conn.initiate_connection()
        self.conn.increment_flow_control_window(WINDOW)
        self.flush()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            if str(exc).endswith("in state ConnectionState.CLOSED"):
                # A frame after the peer's GOAWAY (a PING, as gRPC sends when it closes), which
                # the h2 library refuses: the peer is leaving, it gets no GOAWAY of ours.
                self.conn.data_to_send()
            else:
                self.protocol_error(exc)
                self.flush()
            self.close()
            return
        for event in events:
            self.event(event)
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._writable.set()
        error = ConnectionError(f"HTTP/2 connection lost{f': {exc}' if exc else ''}")
        for stream in list(self.streams.values()):
            stream._fail(error)
            self.stream_lost(stream)
        self.streams.clear()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # -- helpers -----------------------------------------------------------------------------
    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    async def drain(self) -> None:
        if self.closed:
            raise ConnectionError("HTTP/2 connection closed")
        await self._writable.wait()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def acknowledge(self, stream_id: int, flow: int) -> None:
        """Reopen the windows (a closed stream's: the connection's alone, as h2 does)."""
        if flow and not self.closed:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.conn.acknowledge_received_data(flow, stream_id)
                self.flush()

    def forget_if_closed(self, stream: Stream) -> None:
        if stream.closed and self.streams.get(stream.id) is stream:
            del self.streams[stream.id]
            if self.going_away and not self.streams:
                self.close()

    # -- events ------------------------------------------------------------------------------
    def event(self, event: h2.events.Event) -> None:
        if isinstance(event, (h2.events.RequestReceived, h2.events.ResponseReceived)):
            stream = self.streams.get(event.stream_id)
            if stream is None and isinstance(event, h2.events.RequestReceived):
                stream = Stream(self, event.stream_id)
                self.streams[event.stream_id] = stream
                stream._got_head(decode_headers(event.headers), event.stream_ended is not None)
                self.stream_opened(stream)
                return
            if stream is not None:
                stream._got_head(decode_headers(event.headers), event.stream_ended is not None)
            return
        stream = self.streams.get(getattr(event, "stream_id", 0) or 0)
        if isinstance(event, h2.events.DataReceived):
            if stream is not None:
                stream._got_data(event.data, event.flow_controlled_length)
            else:  # a stream we gave up on: reopen the connection's window all the same
                self.acknowledge(event.stream_id, event.flow_controlled_length)
        elif isinstance(event, h2.events.TrailersReceived):
            if stream is not None:
                stream.trailers = decode_headers(event.headers)
        elif isinstance(event, h2.events.StreamEnded):
            if stream is not None:
                stream._got_end()
                self.forget_if_closed(stream)
        elif isinstance(event, h2.events.StreamReset):
            if stream is not None:
                stream._got_reset(event.error_code)
                self.streams.pop(stream.id, None)
                self.stream_lost(stream)
        elif isinstance(event, h2.events.WindowUpdated):
            targets = self.streams.values() if event.stream_id == 0 else ([stream] if stream else [])
            for s in targets:
                s._wake_writer()
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            self.settings_received = True
            for s in self.streams.values():
                s._wake_writer()
            self.settings_changed()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.terminated(event)

    # -- for subclasses ----------------------------------------------------------------------
    def stream_opened(self, stream: Stream) -> None:
        """A peer opened a stream (server side)."""

    def stream_lost(self, stream: Stream) -> None:
        """The peer reset the stream, or the connection was lost."""

    def settings_changed(self) -> None:
        """The peer's SETTINGS arrived."""

    def protocol_error(self, exc: Exception) -> None:
        log.debug("HTTP/2 protocol error: %s", exc)

    def terminated(self, event: h2.events.ConnectionTerminated) -> None:
        """GOAWAY: the h2 library takes no frame of the connection after it, so every stream
        still open ends (ConnectionError) and the connection closes."""
        self.going_away = True
        error = ConnectionError(f"HTTP/2 connection closed by the peer (GOAWAY {_code_name(event.error_code)})")
        for stream in list(self.streams.values()):
            stream._fail(error)
            self.stream_lost(stream)
        self.streams.clear()
        self.close()
