"""The request handler mixin reads requests exactly as the stdlib's BaseHTTPRequestHandler."""

from __future__ import annotations

import io
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.support.httpserver import FastRequestMixin, TrackingHTTPServer, parse_header_lines

BLOCKS = [
    b"\r\n",
    b"Host: h\r\n\r\n",
    b"Host: 127.0.0.1:1\r\nAccept: application/json\r\nContent-Type: application/merge-patch+json\r\n"
    b"User-Agent: titanium-gateway/1\r\nContent-Length: 12\r\n\r\n",
    b"X-Dup: 1\r\nx-dup: 2\r\nX-Trail: v  \t\r\nX-Lead:\t  v\r\nX-Empty:\r\nX-Colon: a:b: c\r\n\r\n",
    b"X-Bare-LF: v\nX-Other: w\n\n",
    b"X-Latin: caf\xe9\r\nX-Ctl: a\x01b\x7fc\r\n\r\n",
    b"X-Folded: a\r\n  continued\r\n\tmore\r\nNext: b\r\n\r\n",
    b" Leading: continuation first\r\nA: b\r\n\r\n",
    b"No colon here\r\nA: b\r\n\r\n",
    b": empty name\r\nA: b\r\n\r\n",
    b"Bad Name: x\r\nA: b\r\n\r\n",
    b"From someone\r\nA: b\r\n\r\n",
    b"A: b\r\nFrom: me\r\n\r\n",
    b"X-CR: a\rb\r\n\r\n",
    b"X-CRCR: a\r\r\n\r\n",
    b"A: b\r\n",  # the connection ended before the empty line
    b"A: b\r\nB: c",
]


def _read_headers(block: bytes) -> list[bytes]:
    import http.client

    return http.client._read_headers(io.BytesIO(block))  # type: ignore[attr-defined]


@pytest.mark.parametrize("block", BLOCKS)
def test_header_lines_parse_as_the_stdlib_parses_them(block: bytes) -> None:
    import http.client

    want = http.client.parse_headers(io.BytesIO(block))
    got = parse_header_lines(_read_headers(block))
    assert type(got) is type(want)
    assert {k: v for k, v in vars(got).items() if k != "defects"} == \
        {k: v for k, v in vars(want).items() if k != "defects"}
    assert [type(d) for d in got.defects] == [type(d) for d in want.defects]
    assert got.items() == want.items() and got.get_payload() == want.get_payload()


class _Echo(BaseHTTPRequestHandler):
    """Answers with what it parsed (the attributes parse_request sets and the headers)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return

    def do_GET(self) -> None:  # noqa: N802
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        seen = repr((self.command, self.path, self.request_version, self.requestline, self.close_connection,
                     self.headers.items(), body)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(seen)))
        self.end_headers()
        self.wfile.write(seen)

    do_POST = do_PATCH = do_PUT = do_GET  # noqa: N815


class _FastEcho(FastRequestMixin, _Echo):
    pass


@pytest.fixture
def servers() -> Iterator[list[int]]:
    out = []
    for handler in (_Echo, _FastEcho):
        srv = TrackingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        out.append(srv)
    yield [int(s.server_address[1]) for s in out]
    for s in out:
        s.stop()


def _exchange(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        c.sendall(raw)
        c.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            data = c.recv(65536)
            if not data:
                break
            chunks.append(data)
    out = b"".join(chunks)
    # the Date header differs by chance
    return b"\r\n".join(x for x in out.split(b"\r\n") if not x.startswith(b"Date: "))


REQUESTS = [
    b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
    b"PATCH /a/b?c=d HTTP/1.1\r\nHost: x\r\nContent-Type: application/merge-patch+json\r\nContent-Length: 2\r\n\r\n{}",
    b"GET /a HTTP/1.1\r\nConnection: close\r\n\r\n",
    b"GET /a HTTP/1.1\r\nConnection: Keep-Alive\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
    b"GET /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
    b"GET /a HTTP/1.1\r\nX-Folded: a\r\n b\r\n\r\n",
    b"GET //a//b HTTP/1.1\r\n\r\n",
    b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"GET /a HTTP/1.1 extra\r\n\r\n",
    b"GET /a\r\n\r\n",
    b"GET /a HTTP/2.0\r\n\r\n",
    b"GET /a HTTP/1.1\r\n" + b"".join(b"H%d: v\r\n" % i for i in range(101)) + b"\r\n",
    b"GET /a HTTP/1.1\r\nLong: " + b"x" * 70000 + b"\r\n\r\n",
    b"get /a HTTP/1.1\r\n\r\n",
]


@pytest.mark.parametrize("raw", REQUESTS)
def test_requests_are_answered_as_the_stdlib_answers_them(servers: list[int], raw: bytes) -> None:
    plain, fast = (_exchange(port, raw) for port in servers)
    assert fast == plain and plain


def test_the_usual_request_skips_the_email_parser(servers: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    import email.parser

    calls: list[str] = []
    parsestr = email.parser.Parser.parsestr

    def counted(self: email.parser.Parser, text: str, *args: Any) -> Any:
        calls.append(text)
        return parsestr(self, text, *args)

    monkeypatch.setattr(email.parser.Parser, "parsestr", counted)
    _exchange(servers[1], REQUESTS[1])
    assert calls == []
    _exchange(servers[1], REQUESTS[5])  # a folded header: the email parser's
    assert len(calls) == 1
