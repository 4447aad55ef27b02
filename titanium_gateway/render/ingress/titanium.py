"""The ``titanium.io/`` Ingress annotations: one small validated parser per annotation.

Every parser takes the annotation's string value and returns either the parsed value or an
:class:`AnnotationError` whose message names the annotation. :func:`parse_annotations` reads
all annotations of one Ingress, checks the combinations (``canary-weight`` needs
``canary: "true"``, ``upstream-tls-secret`` needs ``backend-protocol: HTTPS``, ...), and
returns an :class:`IngressAnnotations` with the values, the errors (InvalidAnnotation) and the
unknown ``titanium.io/`` names (UnknownAnnotation).

Pure functions, no I/O; never raises on malformed input. The same few annotation sets recur
across thousands of Ingresses, so :func:`parse_annotations` keeps its results by content (a
bounded memo; the results are immutable and shared).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from titanium_gateway.render.fields import writable

PREFIX = "titanium.io/"

SSL_REDIRECT = PREFIX + "ssl-redirect"
REWRITE_TARGET = PREFIX + "rewrite-target"
PROXY_READ_TIMEOUT = PREFIX + "proxy-read-timeout"
PROXY_BODY_SIZE = PREFIX + "proxy-body-size"
BACKEND_PROTOCOL = PREFIX + "backend-protocol"
AFFINITY = PREFIX + "affinity"
LOAD_BALANCE = PREFIX + "load-balance"
WHITELIST_SOURCE_RANGE = PREFIX + "whitelist-source-range"
LIMIT_RPS = PREFIX + "limit-rps"
CORS_ALLOW_ORIGIN = PREFIX + "cors-allow-origin"
AUTH_URL = PREFIX + "auth-url"
CANARY = PREFIX + "canary"
CANARY_WEIGHT = PREFIX + "canary-weight"
CANARY_BY_HEADER = PREFIX + "canary-by-header"
UPSTREAM_TLS_SECRET = PREFIX + "upstream-tls-secret"

#: ``titanium.io/load-balance`` value -> cluster ``algorithm``.
LOAD_BALANCE_ALGORITHMS: Mapping[str, str] = {
    "round_robin": "RoundRobin",
    "random": "Random",
    "least_conn": "LeastRequests",
    "ewma": "LeastTime",
    "p2c": "PowerOfTwoChoices",
}
BACKEND_PROTOCOLS = ("HTTP", "HTTPS", "H2C", "GRPC")
AFFINITY_COOKIE_NAME = "titanium-affinity"
MAX_READ_TIMEOUT_SECONDS = 3600
MAX_LIMIT_RPS = 1_000_000
#: The largest proxy-body-size accepted: the data plane reads it as a signed 64-bit integer.
MAX_BODY_SIZE = 2**63 - 1
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}

_DIGITS = re.compile(r"[0-9]{1,20}")
_BODY_SIZE = re.compile(r"([0-9]{1,20})([kKmMgG]?)")
# RFC 9110 token characters (a header field name).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# A path: absolute, no whitespace/control characters, no query or fragment.
_PATH_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f?#]")
_CONTROL_OR_SPACE = re.compile(r"[\s\x00-\x1f\x7f]")
_CAPTURE_REF = re.compile(r"\$(?:[0-9]|\{)")
_DNS_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_K8S_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")


@dataclass(frozen=True)
class AnnotationError:
    """A known annotation whose value (or combination) cannot be honoured."""

    annotation: str
    message: str


@dataclass(frozen=True)
class UpstreamTLSRef:
    namespace: str
    name: str


@dataclass(frozen=True)
class IngressAnnotations:
    """The parsed ``titanium.io/`` annotations of one Ingress (defaults when absent)."""

    ssl_redirect: bool = False
    rewrite_target: str | None = None
    proxy_read_timeout: int | None = None  # seconds
    proxy_body_size: int | None = None  # bytes; 0 = no limit
    backend_protocol: str = "HTTP"
    backend_protocol_set: bool = False
    affinity: str | None = None  # "cookie"
    load_balance: str | None = None  # cluster algorithm name (RoundRobin, ...)
    whitelist_source_range: tuple[str, ...] | None = None  # CIDRs
    limit_rps: int | None = None
    cors_allow_origin: tuple[str, ...] | None = None
    auth_url: str | None = None
    canary: bool = False
    canary_weight: int = 0
    canary_by_header: str | None = None
    upstream_tls_secret: UpstreamTLSRef | None = None
    #: InvalidAnnotation: sorted by annotation name.
    errors: tuple[AnnotationError, ...] = ()
    #: UnknownAnnotation: sorted ``titanium.io/`` names not in the table.
    unknown: tuple[str, ...] = ()
    #: the parsed value of every valid annotation (read-only: a result may be shared)
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.errors


Result = Any  # a parsed value, or an AnnotationError


def _err(annotation: str, value: str, why: str) -> AnnotationError:
    return AnnotationError(annotation, f"{annotation}: {value!r} {why}")


def _bool(annotation: str, value: str) -> bool | AnnotationError:
    if value == "true":
        return True
    if value == "false":
        return False
    return _err(annotation, value, 'is not "true" or "false"')


def _int_range(annotation: str, value: str, low: int, high: int, unit: str) -> int | AnnotationError:
    if not _DIGITS.fullmatch(value):
        return _err(annotation, value, f"is not a whole number of {unit} ({low}-{high})")
    number = int(value)
    if not low <= number <= high:
        return _err(annotation, value, f"is outside {low}-{high} {unit}")
    return number


def parse_ssl_redirect(value: str) -> bool | AnnotationError:
    """Only ``false`` is accepted: the data plane cannot match on the scheme."""
    parsed = _bool(SSL_REDIRECT, value)
    if parsed is True:
        return _err(
            SSL_REDIRECT,
            value,
            "is not supported: routes match by host, path, header, query and method, not by "
            "scheme, so a redirect would also redirect HTTPS requests in a loop",
        )
    return parsed


def parse_rewrite_target(value: str) -> str | AnnotationError:
    """A path starting with ``/``; no capture groups (``$1``), no query or fragment."""
    if not value.startswith("/"):
        return _err(REWRITE_TARGET, value, "is not a path starting with /")
    if _CAPTURE_REF.search(value):
        return _err(REWRITE_TARGET, value, "uses a capture group ($1), which is not supported")
    if _PATH_FORBIDDEN.search(value):
        return _err(REWRITE_TARGET, value, "contains whitespace, a control character, ? or #")
    if not writable(value):
        return _err(REWRITE_TARGET, value, "holds a lone UTF-16 surrogate")
    return value


def parse_proxy_read_timeout(value: str) -> int | AnnotationError:
    return _int_range(PROXY_READ_TIMEOUT, value, 1, MAX_READ_TIMEOUT_SECONDS, "seconds")


def parse_proxy_body_size(value: str) -> int | AnnotationError:
    """``8m``, ``512k``, ``1g`` (binary units, either case) or plain bytes; ``0`` = no limit."""
    match = _BODY_SIZE.fullmatch(value)
    if match is None:
        return _err(PROXY_BODY_SIZE, value, "is not a size such as 8m, 512k, 1g or a number of bytes")
    size = int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
    if size > MAX_BODY_SIZE:
        return _err(PROXY_BODY_SIZE, value, f"is larger than {MAX_BODY_SIZE} bytes")
    return size


def parse_backend_protocol(value: str) -> str | AnnotationError:
    """One of HTTP, HTTPS, H2C, GRPC (upper case, as written in the table)."""
    if value in BACKEND_PROTOCOLS:
        return value
    return _err(BACKEND_PROTOCOL, value, "is not one of " + ", ".join(BACKEND_PROTOCOLS))


def parse_affinity(value: str) -> str | AnnotationError:
    if value == "cookie":
        return value
    return _err(AFFINITY, value, 'is not "cookie"')


def parse_load_balance(value: str) -> str | AnnotationError:
    algorithm = LOAD_BALANCE_ALGORITHMS.get(value)
    if algorithm is None:
        return _err(LOAD_BALANCE, value, "is not one of " + ", ".join(LOAD_BALANCE_ALGORITHMS))
    return algorithm


def parse_whitelist_source_range(value: str) -> tuple[str, ...] | AnnotationError:
    """Comma-separated IPv4/IPv6 addresses or CIDR prefixes -> CIDRs (an address is /32 or /128).

    Host bits set under the prefix length (``10.0.0.1/8``) are rejected, as is an empty entry.
    """
    items = [item.strip() for item in value.split(",")]
    if not value.strip() or any(not item for item in items):
        return _err(WHITELIST_SOURCE_RANGE, value, "has an empty entry")
    cidrs: list[str] = []
    for item in items:
        try:
            network = ipaddress.ip_network(item, strict=True)
        except ValueError:
            return _err(WHITELIST_SOURCE_RANGE, value, f"has {item!r}, not an address or CIDR prefix")
        text = str(network)
        if text not in cidrs:
            cidrs.append(text)
    return tuple(cidrs)


def parse_limit_rps(value: str) -> int | AnnotationError:
    return _int_range(LIMIT_RPS, value, 1, MAX_LIMIT_RPS, "requests per second")


def _origin_ok(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if parts.username is not None or parts.path or parts.query or parts.fragment:
        return False
    if port is not None and not 1 <= port <= 65535:
        return False
    return not _PATH_FORBIDDEN.search(origin) and origin == origin.strip() and writable(origin)


def parse_cors_allow_origin(value: str) -> tuple[str, ...] | AnnotationError:
    """``*`` alone, or comma-separated origins ``scheme://host[:port]`` (http or https, no path)."""
    if value.strip() == "*":
        return ("*",)
    items = [item.strip() for item in value.split(",")]
    if not value.strip() or any(not item for item in items):
        return _err(CORS_ALLOW_ORIGIN, value, "has an empty entry")
    origins: list[str] = []
    for item in items:
        if item == "*":
            return _err(CORS_ALLOW_ORIGIN, value, "mixes * with origins")
        if not _origin_ok(item):
            return _err(
                CORS_ALLOW_ORIGIN, value, f"has {item!r}, not an origin such as https://app.example.com"
            )
        if item not in origins:
            origins.append(item)
    return tuple(origins)


def parse_auth_url(value: str) -> str | AnnotationError:
    """An absolute http or https URL with a host, without credentials or fragment."""
    if _CONTROL_OR_SPACE.search(value):
        return _err(AUTH_URL, value, "contains whitespace or a control character")
    if not writable(value):
        return _err(AUTH_URL, value, "holds a lone UTF-16 surrogate")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return _err(AUTH_URL, value, "is not a valid URL")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return _err(AUTH_URL, value, "is not an absolute http or https URL")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return _err(AUTH_URL, value, "carries credentials, which are not allowed")
    if parts.fragment or value.endswith("#"):
        return _err(AUTH_URL, value, "has a fragment")
    if port is not None and not 1 <= port <= 65535:
        return _err(AUTH_URL, value, "has a port outside 1-65535")
    return value


def parse_canary(value: str) -> bool | AnnotationError:
    return _bool(CANARY, value)


def parse_canary_weight(value: str) -> int | AnnotationError:
    return _int_range(CANARY_WEIGHT, value, 0, 100, "percent")


def parse_canary_by_header(value: str) -> str | AnnotationError:
    if not _TOKEN.fullmatch(value):
        return _err(CANARY_BY_HEADER, value, "is not a header name")
    return value.lower()


def parse_upstream_tls_secret(value: str) -> tuple[str | None, str] | AnnotationError:
    """``name`` or ``namespace/name`` -> (namespace or None, name). The namespace check is in
    :func:`parse_annotations` (it must be the Ingress's own)."""
    namespace: str | None
    if "/" in value:
        namespace, _, name = value.partition("/")
        if not _DNS_LABEL.fullmatch(namespace) or len(namespace) > 63:
            return _err(UPSTREAM_TLS_SECRET, value, "does not name a valid namespace")
    else:
        namespace, name = None, value
    if not _K8S_NAME.fullmatch(name):
        return _err(UPSTREAM_TLS_SECRET, value, "does not name a valid Secret")
    return namespace, name


PARSERS: Mapping[str, Callable[[str], Any]] = {
    SSL_REDIRECT: parse_ssl_redirect,
    REWRITE_TARGET: parse_rewrite_target,
    PROXY_READ_TIMEOUT: parse_proxy_read_timeout,
    PROXY_BODY_SIZE: parse_proxy_body_size,
    BACKEND_PROTOCOL: parse_backend_protocol,
    AFFINITY: parse_affinity,
    LOAD_BALANCE: parse_load_balance,
    WHITELIST_SOURCE_RANGE: parse_whitelist_source_range,
    LIMIT_RPS: parse_limit_rps,
    CORS_ALLOW_ORIGIN: parse_cors_allow_origin,
    AUTH_URL: parse_auth_url,
    CANARY: parse_canary,
    CANARY_WEIGHT: parse_canary_weight,
    CANARY_BY_HEADER: parse_canary_by_header,
    UPSTREAM_TLS_SECRET: parse_upstream_tls_secret,
}
KNOWN = frozenset(PARSERS)

_FIELDS: Mapping[str, str] = {
    SSL_REDIRECT: "ssl_redirect",
    REWRITE_TARGET: "rewrite_target",
    PROXY_READ_TIMEOUT: "proxy_read_timeout",
    PROXY_BODY_SIZE: "proxy_body_size",
    BACKEND_PROTOCOL: "backend_protocol",
    AFFINITY: "affinity",
    LOAD_BALANCE: "load_balance",
    WHITELIST_SOURCE_RANGE: "whitelist_source_range",
    LIMIT_RPS: "limit_rps",
    CORS_ALLOW_ORIGIN: "cors_allow_origin",
    AUTH_URL: "auth_url",
    CANARY: "canary",
    CANARY_WEIGHT: "canary_weight",
    CANARY_BY_HEADER: "canary_by_header",
}


#: Results of :func:`parse_annotations` by content (see :func:`_memo_key`); emptied when full.
_memo: dict[tuple[Any, ...], IngressAnnotations] = {}
_MEMO_MAX = 1024
#: Annotation sets with more characters (names and values) than this are parsed every time,
#: so the memo never holds more than about ``_MEMO_MAX * _MEMO_KEY_MAX_CHARS`` characters of
#: keys (Kubernetes allows 256 KiB of annotations per object).
_MEMO_KEY_MAX_CHARS = 4096
#: Stands for any value that is not a ``str`` in a memo key: such a value is invalid whatever
#: it is (nothing else of it is read), so it needs neither hashing nor comparing.
_NOT_A_STRING = object()


def _memo_key(annotations: Any, namespace: Any) -> tuple[Any, ...] | None:
    """What :func:`parse_uncached` reads of its arguments, as a key: the ``titanium.io/``
    items (a value that is not a string as :data:`_NOT_A_STRING`), sorted (the parse is in
    name order anyway), and the namespace only when ``upstream-tls-secret`` is there (nothing
    else reads it). None (do not memoize) for anything but a plain dict with exact ``str``
    keys and values in play: a ``str`` subclass is parsed, and written, as itself."""
    if type(annotations) is not dict or type(namespace) is not str:
        return None
    items: list[tuple[str, Any]] = []
    size = 0
    for k, v in annotations.items():
        if type(k) is str:
            if k.startswith(PREFIX):
                if type(v) is str:
                    items.append((k, v))
                    size += len(k) + len(v)
                elif isinstance(v, str):
                    return None
                else:
                    items.append((k, _NOT_A_STRING))
                    size += len(k)
        elif isinstance(k, str):
            return None
    if size > _MEMO_KEY_MAX_CHARS:
        return None
    items.sort(key=_first)  # the names are unique: values are never compared
    return (namespace if UPSTREAM_TLS_SECRET in annotations else None, *items)


def _first(item: tuple[str, Any]) -> str:
    return item[0]


def parse_annotations(annotations: Mapping[str, Any] | None, namespace: str) -> IngressAnnotations:
    """:func:`parse_uncached`, once per distinct content (a bounded memo: the result is
    immutable and may be shared with other Ingresses; a set larger than
    ``_MEMO_KEY_MAX_CHARS`` characters is parsed every time)."""
    key = _memo_key(annotations, namespace)
    if key is None:
        return parse_uncached(annotations, namespace)
    hit = _memo.get(key)
    if hit is None:
        if len(_memo) >= _MEMO_MAX:
            _memo.clear()
        hit = _memo[key] = parse_uncached(annotations, namespace)
    return hit


def parse_uncached(annotations: Mapping[str, Any] | None, namespace: str) -> IngressAnnotations:
    """Parses every ``titanium.io/`` annotation of an Ingress in ``namespace``.

    Annotations outside ``titanium.io/`` are ignored. A non-string value is invalid.
    """
    values: dict[str, Any] = {}
    errors: list[AnnotationError] = []
    unknown: list[str] = []
    if not isinstance(annotations, Mapping):
        annotations = {}
    for key in sorted(k for k in annotations if isinstance(k, str) and k.startswith(PREFIX)):
        raw = annotations[key]
        parser = PARSERS.get(key)
        if parser is None:
            unknown.append(key)
            continue
        if not isinstance(raw, str):
            errors.append(AnnotationError(key, f"{key}: value must be a string"))
            continue
        parsed = parser(raw)
        if isinstance(parsed, AnnotationError):
            errors.append(parsed)
        else:
            values[key] = parsed

    failed = {e.annotation for e in errors}
    kwargs: dict[str, Any] = {_FIELDS[k]: v for k, v in values.items() if k in _FIELDS}
    if BACKEND_PROTOCOL in values:
        kwargs["backend_protocol_set"] = True
    if UPSTREAM_TLS_SECRET in values:
        secret_ns, secret_name = values[UPSTREAM_TLS_SECRET]
        if secret_ns is not None and secret_ns != namespace:
            errors.append(
                _err(
                    UPSTREAM_TLS_SECRET,
                    str(annotations[UPSTREAM_TLS_SECRET]),
                    f"is in namespace {secret_ns!r}; only the Ingress's own namespace "
                    f"{namespace!r} is allowed",
                )
            )
        else:
            kwargs["upstream_tls_secret"] = UpstreamTLSRef(namespace, secret_name)
        if values.get(BACKEND_PROTOCOL) != "HTTPS" and BACKEND_PROTOCOL not in failed:
            errors.append(
                AnnotationError(
                    UPSTREAM_TLS_SECRET,
                    f"{UPSTREAM_TLS_SECRET} needs {BACKEND_PROTOCOL}: \"HTTPS\"",
                )
            )
    is_canary = values.get(CANARY) is True
    if CANARY not in failed and not is_canary:
        for needs_canary in (CANARY_WEIGHT, CANARY_BY_HEADER):
            if needs_canary in annotations and needs_canary not in failed:
                errors.append(
                    AnnotationError(needs_canary, f'{needs_canary} needs {CANARY}: "true"')
                )
    errors.sort(key=lambda e: (e.annotation, e.message))
    return IngressAnnotations(
        **kwargs, errors=tuple(errors), unknown=tuple(unknown), values=MappingProxyType(values)
    )
