"""Route policies, evaluated in list order before the transforms.

``evaluate(policy, request, limiter=..., now=...)`` returns None (the request goes on), an
:class:`Answer` the data plane sends instead of forwarding, or :class:`AskExtAuth` (the data
plane makes the GET subrequest and calls :func:`ext_auth_admits` on its status).

* ``MaxRequestBodySize``: 413 when Content-Length exceeds ``bytes`` (0 = unlimited); a
  request without Content-Length is not checked.
* ``IpAllowDeny``: 403 unless the socket peer address is in one of the ``allow`` prefixes.
* ``RateLimit``: a fixed window per client address and partition admits
  ``requestsPerSecond`` x ``window`` requests; the excess gets 429 with ``Retry-After``
  (whole seconds until the window ends).
* ``Cors``: an OPTIONS preflight (``Origin`` and ``Access-Control-Request-Method``) is
  answered here with 204 and ``Access-Control-Allow-*`` (the allowed origin, the requested
  method and headers); no header at all for an origin not allowed. Other requests, and the
  actual responses, are untouched.
* ``ExtAuth``: a 2xx answer admits; any other answer is relayed; a timeout or an error 503.

Each policy kind registers what it decides (:data:`POLICIES`, with :func:`policy_kind`); a kind
of the model registered nowhere fails ``tests/dataplane/test_rule_coverage.py``.
"""

from __future__ import annotations

import ipaddress
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from titanium_gateway.contract.request import Request
from titanium_gateway.contract.values import networks, seconds
from titanium_gateway.twp import model as m

Headers = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Headers = ()
    body: str = ""
    policy: str = ""  # the kind that answered


@dataclass(frozen=True)
class AskExtAuth:
    policy: m.ExtAuth


#: The answer when the auth subrequest times out or fails: fail closed.
EXT_AUTH_UNAVAILABLE = Answer(503, (("Content-Type", "text/plain; charset=utf-8"),),
                              "external authorization is unavailable\n", "ExtAuth")


def ext_auth_admits(status: int) -> bool:
    return 200 <= status < 300


class FixedWindowLimiter:
    """Fixed windows of ``window`` seconds (aligned to multiples of it on the given clock),
    counted per key. Thread-safe; old windows are dropped as the map grows."""

    def __init__(self, max_keys: int = 100_000) -> None:
        self._counts: dict[tuple, tuple[int, int, float]] = {}  # key -> (window index, count, window)
        self._lock = threading.Lock()
        self._max_keys = max_keys

    def hit(self, key: tuple, permits: int, window: float, now: float) -> tuple[bool, int]:
        """(admitted, Retry-After seconds when not)."""
        index = math.floor(now / window)
        with self._lock:
            start, count, _ = self._counts.get(key, (index, 0, window))
            if start != index:
                count = 0
            count += 1
            self._counts[key] = (index, count, window)
            if len(self._counts) > self._max_keys:
                self._prune(now)
        if count <= permits:
            return True, 0
        return False, max(1, math.ceil((index + 1) * window - now))

    def _prune(self, now: float) -> None:
        for key in [k for k, (idx, _, window) in self._counts.items() if (idx + 1) * window <= now]:
            del self._counts[key]

    def __len__(self) -> int:
        return len(self._counts)


def content_length(request: Request) -> int | None:
    text = request.header("content-length")
    if text is None:
        return None
    first = text.split(",")[0].strip()
    return int(first) if first.isdigit() else None


def peer_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        addr = ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def ip_allowed(policy: m.IpAllowDeny, client_address: str) -> bool:
    addr = peer_address(client_address)
    if addr is None:
        return False
    return any(addr.version == net.version and addr in net for net in networks(policy.allow))


def is_preflight(request: Request) -> bool:
    return (request.method == "OPTIONS" and request.header("origin") is not None
            and request.header("access-control-request-method") is not None)


def cors_preflight(policy: m.Cors, request: Request) -> Answer:
    """The 204 answer to a preflight (see the module docstring)."""
    origin = (request.header("origin") or "").strip()
    headers: list[tuple[str, str]] = []
    allowed = {o.lower() for o in policy.allow_origins}
    if "*" in policy.allow_origins:
        headers.append(("Access-Control-Allow-Origin", "*"))
    elif origin.lower() in allowed:
        headers += [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
    if headers:
        headers.append(("Access-Control-Allow-Methods", (request.header("access-control-request-method") or "").strip()))
        asked = request.header("access-control-request-headers")
        if asked is not None and asked.strip():
            headers.append(("Access-Control-Allow-Headers", asked.strip()))
    return Answer(204, tuple(headers), "", "Cors")


def permits(policy: m.RateLimit) -> int:
    """Requests a ``RateLimit`` admits per window: ``requestsPerSecond`` x the window (at least 1)."""
    return max(1, round(policy.requests_per_second * seconds(policy.window)))


def _text(status: int, body: str, kind: str, extra: Headers = ()) -> Answer:
    return Answer(status, (("Content-Type", "text/plain; charset=utf-8"), *extra), body, kind)


Verdict = Answer | AskExtAuth | None
#: kind class -> what it decides of a request: ``(policy, request, limiter, now) -> verdict``
POLICIES: dict[type[Any], Callable[[Any, Request, FixedWindowLimiter | None, float], Verdict]] = {}


def policy_kind(kind: type[Any]) -> Callable[[Callable[..., Verdict]], Callable[..., Verdict]]:
    """Registers what the policy ``kind`` decides."""
    def register(fn: Callable[..., Verdict]) -> Callable[..., Verdict]:
        POLICIES[kind] = fn
        return fn
    return register


@policy_kind(m.MaxRequestBodySize)
def _max_request_body_size(policy: m.MaxRequestBodySize, request: Request, limiter: FixedWindowLimiter | None,
                           now: float) -> Verdict:
    length = content_length(request)
    if policy.bytes and length is not None and length > policy.bytes:
        return _text(413, "request body too large\n", policy.KIND)
    return None


@policy_kind(m.IpAllowDeny)
def _ip_allow_deny(policy: m.IpAllowDeny, request: Request, limiter: FixedWindowLimiter | None,
                   now: float) -> Verdict:
    return None if ip_allowed(policy, request.client_address) else _text(403, "forbidden\n", policy.KIND)


@policy_kind(m.RateLimit)
def _rate_limit(policy: m.RateLimit, request: Request, limiter: FixedWindowLimiter | None, now: float) -> Verdict:
    if limiter is None:
        return None
    addr = peer_address(request.client_address)
    window = seconds(policy.window)
    key = (policy.partition, str(addr) if addr is not None else request.client_address, window)
    admitted, retry_after = limiter.hit(key, permits(policy), window, now)
    if admitted:
        return None
    return _text(429, "too many requests\n", policy.KIND, (("Retry-After", str(retry_after)),))


@policy_kind(m.Cors)
def _cors(policy: m.Cors, request: Request, limiter: FixedWindowLimiter | None, now: float) -> Verdict:
    return cors_preflight(policy, request) if is_preflight(request) else None


@policy_kind(m.ExtAuth)
def _ext_auth(policy: m.ExtAuth, request: Request, limiter: FixedWindowLimiter | None, now: float) -> Verdict:
    return AskExtAuth(policy)


def evaluate(policy: m.Policy, request: Request, *, limiter: FixedWindowLimiter | None = None,
             now: float = 0.0) -> Verdict:
    fn = POLICIES.get(type(policy))
    if fn is None:
        raise TypeError(f"not a policy: {policy!r}")
    return fn(policy, request, limiter, now)
