"""The client side of one request, whatever the protocol: what the proxy reads of the request and
how it answers. :class:`H1Downstream` is an aiohttp request (HTTP/1.1), :class:`H2Downstream`
an HTTP/2 stream. The proxy sees headers as HTTP/1.1 lines: an HTTP/2 request's ``:authority``
is its ``Host`` line (first), its ``:path`` the request-target, its ``cookie`` fields one
line; an answer's headers go out as
HTTP/2 fields (lower-case names, no connection-specific ones) on an HTTP/2 stream.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Protocol

import h2.errors
from aiohttp import web
from multidict import CIMultiDict

from titanium_gateway.reference_dataplane.h2conn import Headers, Stream, pseudo, regular

CHUNK = 1 << 16
#: Connection-specific fields HTTP/2 forbids (RFC 9113 8.2.2); TE is allowed as "trailers" only.
H2_FORBIDDEN = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"})


class ProxyResponse(web.StreamResponse):
    """A StreamResponse that sends the headers it is given: aiohttp's default ``Server`` and
    ``Content-Type`` are not added (``Date`` is, when missing, as RFC 9110 asks of a proxy)."""

    async def _prepare_headers(self) -> None:
        had_server = "Server" in self.headers
        had_type = "Content-Type" in self.headers
        await super()._prepare_headers()
        if not had_server:
            self.headers.popall("Server", None)
        if not had_type:
            self.headers.popall("Content-Type", None)


class Downstream(Protocol):
    http2: bool
    method: str
    target: str
    headers: Headers
    peer: str
    has_body: bool
    started: bool

    async def respond(self, status: int, headers: Headers, reason: str | None = None, end: bool = False) -> None:
        """Send the response head (``end``: and nothing after it)."""

    async def write(self, data: bytes) -> None: ...

    async def finish(self, trailers: Headers = ()) -> None:
        """End the response (with trailers where the protocol carries them)."""

    def abort(self, code: int | None = None) -> None:
        """Give up on a started response: the client sees it end abnormally (an HTTP/2 stream
        is reset with ``code``, else INTERNAL_ERROR; an HTTP/1.1 connection is closed)."""

    def body(self) -> AsyncIterator[bytes]: ...

    async def continue_100(self) -> None: ...


def _peer(transport) -> str:
    peer = transport.get_extra_info("peername") if transport is not None else None
    return str(peer[0]) if peer else ""


class H1Downstream:
    http2 = False

    def __init__(self, request: web.BaseRequest, target: str, headers: Headers) -> None:
        self.request = request
        self.method = request.method
        self.target = target
        self.headers = headers
        self.peer = _peer(request.transport)
        self.has_body = request.body_exists
        self.response: web.StreamResponse | None = None

    @property
    def started(self) -> bool:
        return self.response is not None

    async def respond(self, status: int, headers: Headers, reason: str | None = None, end: bool = False) -> None:
        self.response = ProxyResponse(status=status, reason=reason, headers=CIMultiDict(headers))
        await self.response.prepare(self.request)
        if end:
            await self.response.write_eof()

    async def write(self, data: bytes) -> None:
        assert self.response is not None
        await self.response.write(data)

    async def finish(self, trailers: Headers = ()) -> None:
        assert self.response is not None
        await self.response.write_eof()

    def abort(self, code: int | None = None) -> None:
        if self.request.transport is not None:
            self.request.transport.close()

    async def body(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self.request.content.read(CHUNK)
            if not chunk:
                return
            yield chunk

    async def continue_100(self) -> None:
        await self.request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")


def h2_fields(headers: Headers) -> list[tuple[str, str]]:
    """HTTP/1.1 header lines as HTTP/2 fields: names lower-cased, connection-specific ones (and
    those ``Connection`` lists) dropped, ``TE`` kept only as ``trailers``."""
    listed = set()
    for k, v in headers:
        if k.lower() == "connection":
            listed.update(t.strip().lower() for t in v.split(","))
    out = []
    for k, v in headers:
        name = k.lower()
        if name in H2_FORBIDDEN or name in listed or name.startswith(":"):
            continue
        if name == "te" and v.strip().lower() != "trailers":
            continue
        out.append((name, v))
    return out


class H2Downstream:
    http2 = True

    def __init__(self, stream: Stream, peer: str) -> None:
        self.stream = stream
        head = stream.head
        self.method = pseudo(head, ":method") or "GET"
        self.target = pseudo(head, ":path") or "/"
        fields = regular(head)
        authority = pseudo(head, ":authority")
        if authority is None:
            authority = next((v for k, v in fields if k == "host"), "")
        cookies = [v for k, v in fields if k == "cookie"]
        lines = [(k, v) for k, v in fields if k not in ("host", "cookie")]
        if cookies:  # (HTTP/2 may split the cookie line into fields, RFC 9113 8.2.3: one line again)
            lines.append(("cookie", "; ".join(cookies)))
        self.headers: Headers = (("host", authority), *lines)
        self.peer = peer
        self.has_body = not stream.head_ended
        self.started = False

    async def respond(self, status: int, headers: Headers, reason: str | None = None, end: bool = False) -> None:
        fields = h2_fields(headers)
        if not any(k == "date" for k, _ in fields):
            fields.append(("date", formatdate(usegmt=True)))
        self.started = True
        await self.stream.send_head([(":status", str(status)), *fields], end=end)

    async def write(self, data: bytes) -> None:
        if data and self.method != "HEAD":  # (a HEAD response has no body; its Content-Length stays)
            await self.stream.send_data(data)

    async def finish(self, trailers: Headers = ()) -> None:
        if not self.stream.local_ended:
            await self.stream.end(tuple(h2_fields(trailers)))

    def abort(self, code: int | None = None) -> None:
        with contextlib.suppress(Exception):
            self.stream.reset(h2.errors.ErrorCodes.INTERNAL_ERROR if code is None else code)

    def body(self) -> AsyncIterator[bytes]:
        return self.stream.chunks()

    async def continue_100(self) -> None:
        await self.stream.send_head([(":status", "100")])
