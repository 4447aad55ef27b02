"""HTTP/1.1 to destinations (aiohttp's client): hop-by-hop headers, the response, and the
WebSocket pass-through.

An ``Upgrade: websocket`` request is forwarded with its ``Connection: Upgrade`` and
``Upgrade`` lines; when the destination answers 101, :func:`tunnel` relays the bytes of both
connections as they are until either side closes (aiohttp's server and client connections
hand the bytes after an upgrade to a parser object, here one that writes them to the other
side). Any other answer is relayed as usual and the client's connection goes on as HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

from titanium_gateway.contract.request import Request

Headers = tuple[tuple[str, str], ...]

#: Hop-by-hop headers (RFC 9110 7.6.1), never forwarded; names listed in Connection go too.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                        "upgrade"})
CHUNK = 1 << 16
#: A tunnel stops reading a side while this much is waiting to be written to the other.
TUNNEL_HIGH_WATER = 1 << 20
TUNNEL_POLL = 0.05


def end_to_end(headers: Headers, keep_te_trailers: bool = False) -> Headers:
    """The headers less the hop-by-hop ones (``TE: trailers`` stays when ``keep_te_trailers``:
    an HTTP/2 request forwarded over HTTP/2, as gRPC asks)."""
    listed = set()
    for k, v in headers:
        if k.lower() == "connection":
            listed.update(t.strip().lower() for t in v.split(","))
    drop = HOP_BY_HOP | listed
    return tuple((k, v) for k, v in headers if k.lower() not in drop
                 or (keep_te_trailers and k.lower() == "te" and v.strip().lower() == "trailers"))


def decode_raw(raw: tuple[tuple[bytes, bytes], ...]) -> Headers:
    return tuple((k.decode("utf-8", "replace"), v.decode("utf-8", "replace")) for k, v in raw)


def websocket_upgrade(req: Request) -> str | None:
    """The ``Upgrade`` value of an HTTP/1.1 WebSocket upgrade request (None: not one)."""
    upgrade = req.header("upgrade")
    if upgrade is None or "websocket" not in upgrade.lower():
        return None
    connection = {t.strip().lower() for t in (req.header("connection") or "").split(",")}
    return upgrade if "upgrade" in connection else None


class H1Response:
    """An HTTP/1.1 response from a destination (see ``proxy.Upstream``)."""

    head_only = False
    trailers: Headers = ()

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp
        self.status = resp.status
        self.reason: str | None = resp.reason
        raw = decode_raw(resp.raw_headers)
        self.headers = end_to_end(raw)
        self.upgrade = next((v for k, v in raw if k.lower() == "upgrade"), None)

    async def chunks(self) -> AsyncIterator[bytes]:
        async for chunk in self.resp.content.iter_chunked(CHUNK):
            yield chunk

    def close(self) -> None:
        self.resp.close()


class _Relay:
    """Bytes arriving on one connection (after its upgrade) written to the other."""

    def __init__(self, to: asyncio.Transport, source: asyncio.Transport, done: asyncio.Future) -> None:
        self.to, self.source, self.done = to, source, done
        self.paused = False

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        if data and not self.to.is_closing():
            self.to.write(data)
            if self.to.get_write_buffer_size() > TUNNEL_HIGH_WATER and not self.paused:
                self.paused = True
                self.source.pause_reading()
        return False, b""

    def feed_eof(self) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def maybe_resume(self) -> None:
        if self.paused and self.to.get_write_buffer_size() <= TUNNEL_HIGH_WATER // 2:
            self.paused = False
            with contextlib.suppress(Exception):
                self.source.resume_reading()


async def tunnel(request: web.BaseRequest, resp: aiohttp.ClientResponse) -> None:
    """Relay the bytes of the client's and the destination's connections both ways until either
    side closes; then close both."""
    conn = resp.connection
    client_transport = request.transport
    if conn is None or conn.transport is None or conn.protocol is None or client_transport is None:
        return
    up_transport = conn.transport
    done = asyncio.get_running_loop().create_future()
    to_up = _Relay(up_transport, client_transport, done)  # type: ignore[arg-type]
    to_client = _Relay(client_transport, up_transport, done)  # type: ignore[arg-type]
    try:
        request.protocol.set_parser(to_up)  # type: ignore[arg-type]
        conn.protocol.set_parser(to_client, None)
        while not done.done():
            if up_transport.is_closing() or client_transport.is_closing():
                break
            await asyncio.wait({done}, timeout=TUNNEL_POLL)
            to_up.maybe_resume()
            to_client.maybe_resume()
    finally:
        up_transport.close()
        client_transport.close()
