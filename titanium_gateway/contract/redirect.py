"""The ``Location`` of a redirect route.

Built from the request, replacing the fields the redirect gives: ``scheme`` (omitted: the
request's), ``host`` (required), ``port`` (omitted: no port, the scheme's default), ``path``
(a full replacement; omitted: the request path). The query string is kept.
"""

from __future__ import annotations

from titanium_gateway.contract.request import Request
from titanium_gateway.twp import model as m


def location(redirect: m.Redirect, request: Request) -> str:
    scheme = redirect.scheme or request.scheme
    host = redirect.host
    if ":" in host and not host.startswith("["):  # an IPv6 literal
        host = f"[{host}]"
    port = f":{redirect.port}" if redirect.port is not None else ""
    path = redirect.path if redirect.path is not None else request.path
    query = f"?{request.query}" if request.query else ""
    return f"{scheme}://{host}{port}{path}{query}"
