"""The head of a request as the data plane sees it (what routing, redirects and policies read)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import parse_qsl


@dataclass(frozen=True)
class Request:
    """The head of a request as the data plane sees it.

    ``host`` is the Host header as sent (it may carry a port), ``path`` the path without the
    query string, ``query`` the raw query string without ``?``, ``headers`` the header lines
    in order, ``client_address`` the socket peer, ``scheme`` the listener's (``https`` when it
    terminates TLS), ``port`` the data-plane port of the listener that received it (None:
    unknown, and a route's ``ports`` are then not checked).
    """

    method: str = "GET"
    host: str = ""
    path: str = "/"
    query: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    client_address: str = ""
    scheme: str = "http"
    port: int | None = None

    @classmethod
    def from_target(cls, method: str, target: str, headers: tuple[tuple[str, str], ...] | list = (),
                    client_address: str = "", scheme: str = "http", host: str | None = None,
                    port: int | None = None) -> Request:
        """A request from its request-target (``/path?query``); ``host`` defaults to the Host header."""
        path, _, query = target.partition("?")
        hdrs = tuple((str(k), str(v)) for k, v in headers)
        if host is None:
            host = next((v for k, v in hdrs if k.lower() == "host"), "")
        return cls(method, host, path or "/", query, hdrs, client_address, scheme, port)

    @cached_property
    def hostname(self) -> str:
        """The Host without its port, lower-cased (``[::1]:80`` -> ``::1``)."""
        return hostname_of(self.host)

    def header(self, name: str) -> str | None:
        """Every line of ``name`` joined with ``, `` (None when absent)."""
        lname = name.lower()
        values = [v for k, v in self.headers if k.lower() == lname]
        return ", ".join(values) if values else None

    def query_params(self) -> dict[str, str]:
        """Decoded query parameters, the first value of each name."""
        return self._query_params

    @cached_property
    def _query_params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        for k, v in parse_qsl(self.query, keep_blank_values=True):
            params.setdefault(k, v)
        return params


def hostname_of(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else host
    if host.count(":") == 1:
        name, _, port = host.partition(":")
        if port.isdigit() or port == "":
            return name
    elif host.count(":") > 1:  # a bare IPv6 literal
        try:
            return str(ipaddress.ip_address(host))
        except ValueError:
            return host
    return host
