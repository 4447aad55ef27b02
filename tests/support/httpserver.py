"""A ThreadingHTTPServer that can drop its open keep-alive connections when it stops, so a
stopped fake really is gone (a pooled client connection is not served by a lingering thread);
a request handler mixin that reads the usual request without the stdlib's email parser."""

from __future__ import annotations

import contextlib
import email.message
import email.parser
import http.client
import re
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: a header line the email parser takes as ``(name, value)`` and nothing else: a name of
#: printable ASCII but ":", the value (leading blanks dropped) without CR or LF, one line end
_PLAIN_HEADER = re.compile(rb"([\x21-\x39\x3b-\x7e]+):[ \t]*([^\r\n]*)\r?\n\Z")


def parse_header_lines(lines: list[bytes], cls: type[email.message.Message] = http.client.HTTPMessage) -> Any:
    """``http.client.parse_headers`` of the lines ``http.client._read_headers`` read: the same
    message, built directly when every line is a plain ``Name: value`` line ended by an empty
    line, by the email parser otherwise."""
    if lines and lines[-1] in (b"\r\n", b"\n"):
        pairs = []
        for line in lines[:-1]:
            m = _PLAIN_HEADER.match(line)
            if m is None:
                break
            pairs.append((m[1].decode("iso-8859-1"), m[2].decode("iso-8859-1")))
        else:
            msg = cls()
            for name, value in pairs:
                msg.set_raw(name, value)
            msg.set_payload("")
            return msg
    return email.parser.Parser(_class=cls).parsestr(b"".join(lines).decode("iso-8859-1"))


class FastRequestMixin(BaseHTTPRequestHandler):
    """``parse_request`` for a ``protocol_version = "HTTP/1.1"`` handler: an
    ``METHOD /path HTTP/1.1`` request is taken apart here, exactly as the stdlib does (same
    attributes, same 431 answers) but with its headers read by :func:`parse_header_lines`;
    any other request line goes to the stdlib's."""

    raw_requestline: bytes  # read by handle_one_request

    def parse_request(self) -> bool:
        requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = requestline.split()
        if len(words) != 3 or words[2] != "HTTP/1.1" or words[1].startswith("//") \
                or self.protocol_version != "HTTP/1.1":
            return super().parse_request()
        self.requestline = requestline
        self.command, self.path = words[0], words[1]
        self.request_version = "HTTP/1.1"
        self.close_connection = False
        try:
            lines = http.client._read_headers(self.rfile)  # type: ignore[attr-defined]  # what parse_headers reads
        except http.client.LineTooLong as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long", str(err))
            return False
        except http.client.HTTPException as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers", str(err))
            return False
        self.headers = parse_header_lines(lines, self.MessageClass)
        conntype = self.headers.get("Connection", "")
        if conntype.lower() == "close":
            self.close_connection = True
        elif conntype.lower() == "keep-alive":
            self.close_connection = False
        expect = self.headers.get("Expect", "")
        return expect.lower() != "100-continue" or self.handle_expect_100()


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
