"""HTTP/2 helpers for the end-to-end tests, written on the ``h2`` library alone (not on the data
plane's own HTTP/2 code): an echo backend (h2c with prior knowledge, or h2 over TLS) and a
client (h2c with prior knowledge, or h2 by ALPN).

The backend answers every stream with a JSON echo of the request (``protocol`` "HTTP/2",
``method``, ``path``, ``authority``, ``scheme``, ``headers``, ``body_length``, ``body_sha256``).
Controls (request headers): ``x-echo-size: N`` a body of N bytes instead (``b"x" * N``),
``x-echo-trailer: name: value`` (repeatable) trailers after the body, ``x-echo-status``,
``x-echo-hold`` no answer at all (the stream stays open until the client resets it),
``x-echo-delay: S`` seconds before the answer, ``x-echo-reset: CODE`` the head and a first piece of body, then RST_STREAM with CODE. It
records each stream's request and whether the stream was reset (``resets``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions


def _text(raw: Any) -> list[tuple[str, str]]:
    return [(k.decode() if isinstance(k, bytes) else k, v.decode() if isinstance(v, bytes) else v) for k, v in raw]


class _Conn:
    """Flow-controlled sending shared by the backend and the client (both on ``h2``)."""

    def __init__(self, conn: h2.connection.H2Connection, writer: asyncio.StreamWriter) -> None:
        self.conn, self.writer = conn, writer
        self.window = asyncio.Event()

    async def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def send(self, stream_id: int, data: bytes, end: bool) -> None:
        while data:
            size = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size, len(data))
            if size <= 0:
                self.window.clear()
                await self.window.wait()
                continue
            last = size == len(data)
            self.conn.send_data(stream_id, data[:size], end_stream=end and last)
            data = data[size:]
            await self.flush()
            if last:
                return
        if end:
            self.conn.end_stream(stream_id)
            await self.flush()



class H2EchoBackend:
    """An HTTP/2 echo server on 127.0.0.1 in a thread of its own (h2c, or h2 with ``tls``)."""

    def __init__(self, name: str = "h2be", tls: ssl.SSLContext | None = None) -> None:
        self.name = name
        self.tls = tls
        if tls is not None:
            tls.set_alpn_protocols(["h2"])
        self.requests: list[dict[str, Any]] = []
        self.resets: list[str] = []  # paths of the streams the client reset
        self.connections = 0
        self._serving: set[asyncio.Task] = set()
        self._cond = threading.Condition()
        self.loop = asyncio.new_event_loop()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self._server = await asyncio.start_server(self._serve, sock=self._sock, ssl=self.tls)
            self._ready.set()

        self.loop.run_until_complete(main())
        self.loop.run_forever()

    def destination(self, https: bool = False) -> dict[str, Any]:
        return {"id": f"127.0.0.1:{self.port}", "address": "127.0.0.1", "port": self.port, "weight": 1,
                "useHttps": https}

    def wait(self, predicate, timeout: float = 5.0) -> None:
        with self._cond:
            if not self._cond.wait_for(predicate, timeout):
                raise AssertionError(f"{self.name}: condition not met: {len(self.requests)} request(s), "
                                     f"resets {self.resets}")

    def _note(self, fn) -> None:
        with self._cond:
            fn()
            self._cond.notify_all()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._note(lambda: setattr(self, "connections", self.connections + 1))
        self._serving.add(asyncio.current_task())
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        c = _Conn(conn, writer)
        conn.initiate_connection()
        await c.flush()
        streams: dict[int, dict[str, Any]] = {}
        tasks: set[asyncio.Task] = set()
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                for ev in conn.receive_data(data):
                    if isinstance(ev, h2.events.RequestReceived):
                        streams[ev.stream_id] = {"headers": _text(ev.headers), "body": bytearray()}
                    elif isinstance(ev, h2.events.DataReceived):
                        streams[ev.stream_id]["body"] += ev.data
                        conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    elif isinstance(ev, h2.events.StreamEnded):
                        tasks.add(asyncio.ensure_future(self._answer(c, ev.stream_id, streams[ev.stream_id])))
                    elif isinstance(ev, h2.events.StreamReset):
                        st = streams.get(ev.stream_id)
                        path = dict(st["headers"]).get(":path", "") if st else ""
                        self._note(lambda p=path: self.resets.append(p))
                    elif isinstance(ev, h2.events.WindowUpdated):
                        c.window.set()
                await c.flush()
        except (ConnectionError, h2.exceptions.ProtocolError):
            pass
        finally:
            for t in tasks:
                t.cancel()
            writer.close()
            self._serving.discard(asyncio.current_task())

    async def _answer(self, c: _Conn, stream_id: int, st: dict[str, Any]) -> None:
        headers = st["headers"]
        h = dict(headers)
        body = bytes(st["body"])
        record = {"backend": self.name, "protocol": "HTTP/2", "method": h.get(":method"), "path": h.get(":path"),
                  "authority": h.get(":authority"), "scheme": h.get(":scheme"),
                  "headers": [[k, v] for k, v in headers if not k.startswith(":")],
                  "body_length": len(body), "body_sha256": hashlib.sha256(body).hexdigest()}
        self._note(lambda: self.requests.append(record))
        if "x-echo-hold" in h:
            return
        if "x-echo-delay" in h:
            await asyncio.sleep(float(h["x-echo-delay"]))
        size = h.get("x-echo-size")
        payload = b"x" * int(size) if size else json.dumps(record).encode()
        trailers = [tuple(p.strip() for p in v.split(":", 1)) for k, v in headers if k == "x-echo-trailer"]
        out = [(":status", h.get("x-echo-status", "200")), ("content-type", "application/json"),
               ("x-backend", self.name)]
        try:
            c.conn.send_headers(stream_id, out)
            await c.flush()
            if "x-echo-reset" in h:
                await c.send(stream_id, b"partial", end=False)
                c.conn.reset_stream(stream_id, int(h["x-echo-reset"]))
                await c.flush()
                return
            await c.send(stream_id, payload, end=not trailers)
            if trailers:
                c.conn.send_headers(stream_id, trailers, end_stream=True)
                await c.flush()
        except (h2.exceptions.ProtocolError, ConnectionError):
            pass

    def stop(self) -> None:
        async def close() -> None:
            self._server.close()
            for task in list(self._serving):
                task.cancel()
            await asyncio.gather(*self._serving, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


@dataclass
class Response:
    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    reset: int | None = None

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)

    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


class H2Client:
    """An HTTP/2 client connection (asyncio): h2c with prior knowledge, or h2 by ALPN with ``tls``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.c = _Conn(self.conn, writer)
        self.reader, self.writer = reader, writer
        self.responses: dict[int, Response] = {}
        self.done: dict[int, asyncio.Future] = {}
        self.alpn = None
        self._task: asyncio.Task | None = None

    @classmethod
    async def connect(cls, port: int, tls: ssl.SSLContext | None = None, server_name: str | None = None) -> H2Client:
        if tls is not None:
            tls.set_alpn_protocols(["h2", "http/1.1"])
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls,
                                                       server_hostname=server_name if tls else None)
        client = cls(reader, writer)
        if tls is not None:
            client.alpn = writer.get_extra_info("ssl_object").selected_alpn_protocol()
        client.conn.initiate_connection()
        await client.c.flush()
        client._task = asyncio.ensure_future(client._read())
        return client

    async def _read(self) -> None:
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                for ev in self.conn.receive_data(data):
                    r = self.responses.get(getattr(ev, "stream_id", 0))
                    if isinstance(ev, h2.events.ResponseReceived) and r is not None:
                        hs = _text(ev.headers)
                        r.status = int(dict(hs)[":status"])
                        r.headers = [(k, v) for k, v in hs if not k.startswith(":")]
                    elif isinstance(ev, h2.events.DataReceived) and r is not None:
                        r.body += ev.data
                        self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                    elif isinstance(ev, h2.events.TrailersReceived) and r is not None:
                        r.trailers = _text(ev.headers)
                    elif isinstance(ev, h2.events.StreamEnded):
                        self._finish(ev.stream_id)
                    elif isinstance(ev, h2.events.StreamReset) and r is not None:
                        r.reset = ev.error_code
                        self._finish(ev.stream_id)
                    elif isinstance(ev, h2.events.WindowUpdated):
                        self.c.window.set()
                await self.c.flush()
        finally:
            for sid in list(self.done):
                self._finish(sid, lost=True)

    def _finish(self, stream_id: int, lost: bool = False) -> None:
        fut = self.done.get(stream_id)
        if fut is not None and not fut.done():
            if lost:
                fut.set_exception(ConnectionError("connection lost"))
            else:
                fut.set_result(self.responses[stream_id])

    async def start(self, method: str, path: str, authority: str, headers: list[tuple[str, str]] = (),
                    body: bytes | None = None, end: bool = True, scheme: str = "http") -> int:
        sid = self.conn.get_next_available_stream_id()
        self.responses[sid] = Response()
        self.done[sid] = asyncio.get_running_loop().create_future()
        head = [(":method", method), (":scheme", scheme), (":authority", authority), (":path", path), *headers]
        self.conn.send_headers(sid, head, end_stream=body is None and end)
        await self.c.flush()
        if body is not None:
            await self.c.send(sid, body, end=end)
        return sid

    async def request(self, method: str, path: str, authority: str, headers: list[tuple[str, str]] = (),
                      body: bytes | None = None, scheme: str = "http", timeout: float = 10.0) -> Response:
        sid = await self.start(method, path, authority, headers, body, scheme=scheme)
        return await asyncio.wait_for(self.done[sid], timeout)

    async def reset(self, stream_id: int) -> None:
        self.conn.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
        await self.c.flush()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.writer.close()


def run(coro) -> Any:
    return asyncio.run(coro)
