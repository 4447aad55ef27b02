"""What each ``nginx.ingress.kubernetes.io/`` annotation means here.

titanium-gateway reads only ``titanium.io/`` annotations; an Ingress written for ingress-nginx
keeps its ``nginx.ingress.kubernetes.io/`` ones, and ignoring them silently is dangerous when
they restrict access or change routing. This module classifies every annotation of
ingress-nginx (the annotations of its documentation and of its parsers, aliases included) as:

* ``mapped``: a ``titanium.io/`` annotation does the same job (``titanium`` holds it, with its
  value), and ``note`` says how the meaning differs;
* ``unsupported``: nothing here does what it did in ingress-nginx (``note`` says what is lost);
* ``no effect``: it changes nothing a client can see here (buffering, logging, a value that is
  ingress-nginx's own default and already how this data plane behaves, ...).

Each finding also says whether the annotation is about security (access control,
authentication, TLS enforcement, limits, raw configuration snippets) or routing (where a
request goes and what path or host reaches the backend), and in a few words what it does in
ingress-nginx (``effect``), for messages such as "... is not enforced".

Two uses: :func:`analyze` (``titanium-gateway migrate-ingress``: every annotation, the
converted ``titanium.io/`` set, the blocking findings) and :func:`foreign_annotations` (the
render: for an Ingress it serves, the security- or routing-relevant nginx annotations that
are not in force, each with a message for a ``ForeignAnnotation`` Warning Event).

Pure functions of their arguments; no I/O. Values are strings, as Kubernetes requires.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

PREFIX = "nginx.ingress.kubernetes.io/"
TITANIUM = "titanium.io/"
MAPPED, UNSUPPORTED, NO_EFFECT = "mapped", "unsupported", "no effect"
VERDICTS = (MAPPED, UNSUPPORTED, NO_EFFECT)
#: The event reason the render uses for these findings.
FOREIGN_ANNOTATION_REASON = "ForeignAnnotation"


@dataclass(frozen=True)
class Finding:
    """The verdict on one annotation of one Ingress."""

    #: The full annotation name (``nginx.ingress.kubernetes.io/...``).
    annotation: str
    value: str
    verdict: str
    #: What the annotation does in ingress-nginx, in a few words.
    effect: str
    #: mapped: how the meaning differs here; unsupported / no effect: why.
    note: str
    security: bool = False
    routing: bool = False
    #: mapped: the ``titanium.io/`` annotations (full names) and values that take its place.
    titanium: Mapping[str, str] = field(default_factory=dict)

    @property
    def blocking(self) -> bool:
        """A security-relevant annotation without an equivalent: what it enforced is lost."""
        return self.security and self.verdict == UNSUPPORTED

    @property
    def relevant(self) -> bool:
        return self.security or self.routing

    def describe(self) -> str:
        """One line: the annotation, its verdict and why."""
        name = self.annotation
        value = _short(self.value)
        if self.verdict == MAPPED:
            targets = ", ".join(f"{k}: {v!r}" for k, v in self.titanium.items()) or "(nothing to set)"
            text = f"{name}: {value!r} -> {targets}"
        else:
            text = f"{name}: {value!r}: {self.verdict}"
        return f"{text}. {self.note}" if self.note else text


@dataclass(frozen=True)
class ForeignAnnotation:
    """A security- or routing-relevant nginx annotation that is not in force on an Ingress this
    controller serves: the render raises a Warning Event (reason ``ForeignAnnotation``)."""

    annotation: str
    message: str
    security: bool
    finding: Finding


@dataclass(frozen=True)
class Analysis:
    """Every nginx annotation of one Ingress, and what a conversion would set."""

    findings: tuple[Finding, ...]
    #: The ``titanium.io/`` annotations the mapped findings set (in annotation order).
    titanium: Mapping[str, str]
    #: Ingress-level findings that are not about one annotation (e.g. ingress-nginx's default
    #: HTTPS redirect for an Ingress with ``tls``), same shape, ``annotation`` may be "".
    notes: tuple[Finding, ...] = ()

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in (*self.findings, *self.notes) if f.blocking)


# --- value helpers -----------------------------------------------------------------------------

_BOOL_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_BOOL_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_DIGITS = re.compile(r"[0-9]{1,12}")
_SIZE = re.compile(r"([0-9]{1,19})([kKmMgG]?)")
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_CAPTURE = re.compile(r"\$(?:[0-9]|\{)")
_NGINX_VAR = re.compile(r"\$[A-Za-z_{]")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PATH_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f?#]")
_SPACE = re.compile(r"[\s\x00-\x1f\x7f]")
_DNS_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_DNS_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")


def _bool(value: str) -> bool | None:
    """Go's strconv.ParseBool, which ingress-nginx uses: None when it is not a boolean."""
    v = value.strip()
    if v in _BOOL_TRUE:
        return True
    if v in _BOOL_FALSE:
        return False
    return None


def _cidrs(value: str) -> list[str] | None:
    """ingress-nginx's comma-separated CIDRs/addresses, normalised (host bits cleared, as nginx
    does); None when an item is not an address or a CIDR."""
    out: list[str] = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            net = ipaddress.ip_network(item, strict=False)
        except ValueError:
            return None
        text = str(net) if "/" in item else item
        if text not in out:
            out.append(text)
    return out or None


# --- the table -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    effect: str
    security: bool = False
    routing: bool = False
    #: (value, all annotations, context) -> (verdict, note, titanium annotations)
    judge: Callable[[str, Mapping[str, str], _Context], tuple[str, str, dict[str, str]]] | None = None
    verdict: str = UNSUPPORTED
    note: str = ""


@dataclass(frozen=True)
class _Context:
    namespace: str
    paths: tuple[str, ...]
    has_tls: bool


def _get(annotations: Mapping[str, str], short: str) -> str | None:
    v = annotations.get(PREFIX + short)
    return v if isinstance(v, str) else None


def _t(short: str, value: str) -> dict[str, str]:
    return {TITANIUM + short: value}


# auth


def _auth_url(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    url = value.strip()
    if _NGINX_VAR.search(url):
        return UNSUPPORTED, "the URL uses nginx variables ($host, $escaped_request_uri, ...), which are not expanded here", {}
    if not _url_ok(url, path_allowed=True):
        return UNSUPPORTED, "titanium.io/auth-url needs an absolute http(s) URL with a host, without credentials or fragment", {}
    note = ("Each request is checked with a GET subrequest without the request body (ingress-nginx: the "
            "original method unless auth-method is set); a 2xx answer admits, any other answer is relayed to "
            "the client as it is (ingress-nginx relays 401 and 403 and answers 500 otherwise); a timeout or "
            "error answers 503 after 5 s. The auth service's response headers are not copied to the backend "
            "request (auth-response-headers has no equivalent); check which request headers your auth "
            "service reads (ingress-nginx sends X-Original-URL, X-Original-Method, X-Auth-Request-Redirect)")
    return MAPPED, note, _t("auth-url", url)


def _url_ok(url: str, path_allowed: bool) -> bool:
    """An absolute http(s) URL with a host and a valid port, no credentials, no fragment, no
    whitespace (and, for an origin, no path or query)."""
    if not url or _SPACE.search(url) or url.endswith("#"):
        return False
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc or parts.fragment:
        return False
    if port is not None and not 1 <= port <= 65535:
        return False
    return path_allowed or not (parts.path or parts.query)


def _auth_method(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if value.strip().upper() == "GET":
        return NO_EFFECT, "the auth subrequest is a GET here", {}
    return UNSUPPORTED, "the auth subrequest is always a GET here", {}


def _off_is_no_effect(off_values: tuple[str, ...], note_off: str, note_on: str) -> Callable[..., tuple[str, str, dict[str, str]]]:
    def judge(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
        if value.strip() in off_values or _bool(value) is False:
            return NO_EFFECT, note_off, {}
        return UNSUPPORTED, note_on, {}

    return judge


def _true_is_unsupported(note_true: str, note_false: str = "the ingress-nginx default, and how this data plane behaves") -> Callable[..., tuple[str, str, dict[str, str]]]:
    def judge(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
        b = _bool(value)
        if b is False:
            return NO_EFFECT, note_false, {}
        if b is None:
            return NO_EFFECT, "not a boolean: ingress-nginx ignores it too", {}
        return UNSUPPORTED, note_true, {}

    return judge


# access


def _allow_list(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    cidrs = _cidrs(value)
    if cidrs is None:
        return UNSUPPORTED, "not a comma-separated list of addresses or CIDRs", {}
    note = ("Any other client gets 403, as with ingress-nginx. The client address is the connection's peer: "
            "behind a load balancer or proxy that does not keep the client's address, list the proxy's "
            "addresses (ingress-nginx can take it from X-Forwarded-For or the PROXY protocol)")
    return MAPPED, note, _t("whitelist-source-range", ",".join(cidrs))


def _limit_rps(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    v = value.strip()
    if not _DIGITS.fullmatch(v) or not 1 <= int(v) <= 1_000_000:
        if v == "0":
            return NO_EFFECT, "0 turns the limit off in ingress-nginx", {}
        return UNSUPPORTED, "titanium.io/limit-rps takes 1-1000000 requests per second", {}
    return MAPPED, _RATE_NOTE, _t("limit-rps", str(int(v)))


_RATE_NOTE = ("Counted per client address and per Ingress in fixed one-second windows, with no burst: "
              "excess requests get 429 with Retry-After (ingress-nginx: a leaky bucket per client address "
              "and Ingress on each controller replica, a burst of 5 times the rate (limit-burst-multiplier), "
              "excess answered 503 by default)")


def _limit_rpm(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    v = value.strip()
    if v == "0":
        return NO_EFFECT, "0 turns the limit off in ingress-nginx", {}
    if not _DIGITS.fullmatch(v):
        return UNSUPPORTED, "not a number of requests per minute", {}
    rpm = int(v)
    if rpm < 60:
        return UNSUPPORTED, "limits are per second here: less than 60 per minute cannot be expressed (1 per second would allow 60)", {}
    if _get(anns, "limit-rps") is not None:
        return NO_EFFECT, "limit-rps is set too and is converted instead", {}
    rps = min(rpm // 60, 1_000_000)
    note = (f"{rpm} per minute becomes {rps} per second: the same or a lower average, and a client can no longer "
            f"spend the minute's allowance in a burst. " + _RATE_NOTE)
    return MAPPED, note, _t("limit-rps", str(rps))


def _body_size(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    v = value.strip()
    m = _SIZE.fullmatch(v)
    if m is None or int(m.group(1)) * _UNITS[m.group(2).lower()] > 2**63 - 1:
        return UNSUPPORTED, "titanium.io/proxy-body-size takes 8m, 512k, 1g or a number of bytes (0: no limit)", {}
    note = ("413 when Content-Length is larger, as with ingress-nginx; a request without Content-Length "
            "(chunked) is not checked here, while nginx counts the body as it reads it")
    if v == "0":
        note = "0 means no limit in both"
    return MAPPED, note, _t("proxy-body-size", v)


# TLS and redirects


def _ssl_redirect(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    b = _bool(value)
    if b is False:
        return NO_EFFECT, "HTTP requests are served, not redirected: this data plane never redirects to HTTPS", {}
    if not ctx.has_tls and b is True:
        return NO_EFFECT, "ingress-nginx redirects only an Ingress with tls, and this one has none", {}
    return UNSUPPORTED, ("HTTP requests are not redirected to HTTPS: they are served in clear text (routes match "
                         "host, path, headers, query and method, not the scheme). Redirect at the load balancer, or "
                         "use a Gateway with an HTTPRoute RequestRedirect on the HTTP listener"), {}


def _force_ssl_redirect(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if _bool(value) is not True:
        return NO_EFFECT, "the ingress-nginx default, and how this data plane behaves", {}
    return UNSUPPORTED, ("HTTP requests are not redirected to HTTPS: they are served in clear text. Redirect at "
                         "the load balancer, or use an HTTPRoute RequestRedirect"), {}


# rewrite and regex


def _rewrite_target(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    target = value.strip()
    if _CAPTURE.search(target):
        conv = rewrite_idiom(ctx.paths, target)
        if conv is not None and not _PATH_FORBIDDEN.search(conv[1]):
            _, new_target = conv
            return MAPPED, ("the regular-expression paths (prefix plus (/|$)(.*) or /(.*)) become Prefix paths and "
                            f"the target {new_target!r} replaces the prefix, which is what the capture groups did. "
                            "Matching is case-sensitive here (ingress-nginx's regular-expression locations are not)"), \
                _t("rewrite-target", new_target)
        return UNSUPPORTED, ("capture groups ($1, $2) are not supported: titanium.io/rewrite-target replaces the "
                             f"matched prefix with a fixed path; {idiom_blocker(ctx.paths, target)}"), {}
    if not target.startswith("/") or _PATH_FORBIDDEN.search(target):
        return UNSUPPORTED, "titanium.io/rewrite-target takes a path starting with /, without spaces, ? or #", {}
    note = ("Only the matched prefix is replaced here (/foo/x with target /new becomes /new/x), while ingress-nginx "
            "replaces the whole path with the target (/foo/x becomes /new) unless capture groups keep the rest; "
            "the same for an Exact path and for a request to the prefix itself. The query string is kept in both")
    return MAPPED, note, _t("rewrite-target", target)


_REGEX_META = re.compile(r"[\\^$.|?*+()\[\]{}]")
_IDIOM = (
    re.compile(r"(?P<base>/[^\\^$.|?*+()\[\]{}]*?)/?\(/\|\$\)\(\.\*\)"),  # /foo(/|$)(.*)  with  /$2
    re.compile(r"(?P<base>/[^\\^$.|?*+()\[\]{}]*?)/\(\.\*\)"),  # /foo/(.*)  with  /$1
)
_IDIOM_TARGET = (re.compile(r"(?P<prefix>(?:/[^$/]+)*)/\$2"), re.compile(r"(?P<prefix>(?:/[^$/]+)*)/\$1"))


def rewrite_idiom(paths: Sequence[str], target: str) -> tuple[list[str], str] | None:
    """When every path is one of ingress-nginx's prefix-stripping idioms and the target uses
    the matching capture group (``/foo(/|$)(.*)`` with ``/$2``, ``/foo/(.*)`` with ``/$1``, a
    fixed prefix before the group allowed), ``(the literal prefix of each path, the fixed
    target)``: a Prefix path plus ``titanium.io/rewrite-target`` does the same. Else None."""
    if not paths:
        return None
    for idiom, target_rx in zip(_IDIOM, _IDIOM_TARGET, strict=True):
        t = target_rx.fullmatch(target)
        if t is None:
            continue
        bases = []
        for p in paths:
            m = idiom.fullmatch(p)
            if m is None:
                break
            bases.append(m.group("base") or "/")
        else:
            return bases, t.group("prefix") or "/"
    return None


def idiom_blocker(paths: Sequence[str], target: str) -> str:
    """Why a capture-group ``target`` with ``paths`` is not one of :func:`rewrite_idiom`'s
    prefix-stripping idioms, naming the paths (or the target) that break it."""
    idioms = "/foo(/|$)(.*) with /$2, /foo/(.*) with /$1"
    misfits: list[str] | None = None
    for idiom, target_rx in zip(_IDIOM, _IDIOM_TARGET, strict=True):
        if target_rx.fullmatch(target) is None:
            continue
        these = [p for p in paths if idiom.fullmatch(p) is None]
        if misfits is None or len(these) < len(misfits):
            misfits = these
    if misfits is None:
        return f"the target {_short(target)!r} is not one of the prefix-stripping idioms ({idioms})"
    if not misfits:  # every path fits but the converted target cannot be a path
        return f"the target {_short(target)!r} does not give a valid path"
    named = ", ".join(repr(_short(p)) for p in misfits[:5]) + (f" and {len(misfits) - 5} more" if len(misfits) > 5 else "")
    return (f"{'the path' if len(misfits) == 1 else 'the paths'} {named} {'is' if len(misfits) == 1 else 'are'} "
            f"not one of the prefix-stripping idioms ({idioms})")


def _use_regex(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    b = _bool(value)
    if b is not True:
        return NO_EFFECT, "paths are not regular expressions: the ingress-nginx default", {}
    target = _get(anns, "rewrite-target")
    if target is not None and _CAPTURE.search(target) and rewrite_idiom(ctx.paths, target.strip()) is not None:
        return MAPPED, "converted with rewrite-target: the paths become Prefix paths", {}
    if ctx.paths and not any(_REGEX_META.search(p) for p in ctx.paths):
        return NO_EFFECT, ("no path holds a regular expression; note that matching is case-sensitive here and a "
                           "Prefix path ends at a segment boundary (/foo does not match /foobar)"), {}
    return UNSUPPORTED, ("paths are not regular expressions here: an Exact path matches itself and a Prefix "
                         "(or ImplementationSpecific) path its segments, case-sensitively"), {}


# canary


def _canary(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    b = _bool(value)
    if b is None:
        return NO_EFFECT, "not a boolean: ingress-nginx ignores it", {}
    if not b:
        return NO_EFFECT, "not a canary: the default", {}
    return MAPPED, ("The canary Ingress contributes only its backend: every other annotation comes from the "
                    "primary, including load-balance and affinity, which ingress-nginx takes from the canary"), \
        _t("canary", "true")


def _canary_weight(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if _bool(_get(anns, "canary") or "") is not True:
        return NO_EFFECT, "without canary: \"true\" it does nothing (in ingress-nginx too)", {}
    v = value.strip()
    total_text = (_get(anns, "canary-weight-total") or "100").strip()
    if not _DIGITS.fullmatch(v) or not _DIGITS.fullmatch(total_text) or int(total_text) == 0:
        return UNSUPPORTED, "not a whole number (of canary-weight-total)", {}
    weight, total = int(v), int(total_text)
    if weight > total:
        weight = total
    percent, rest = divmod(weight * 100, total)
    if rest:
        return UNSUPPORTED, f"{weight} of {total} is not a whole percent, and titanium.io/canary-weight is a percent", {}
    note = "the share of requests the canary gets, as in ingress-nginx"
    if total != 100:
        note = f"{weight} of canary-weight-total {total} is {percent} percent; " + note
    return MAPPED, note, _t("canary-weight", str(percent))


def _canary_weight_total(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    return NO_EFFECT, "taken into account in canary-weight, which becomes a percent", {}


def _canary_by_header(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if _bool(_get(anns, "canary") or "") is not True:
        return NO_EFFECT, "without canary: \"true\" it does nothing (in ingress-nginx too)", {}
    name = value.strip()
    if not _TOKEN.fullmatch(name):
        return UNSUPPORTED, "not a header name", {}
    header_value = _get(anns, "canary-by-header-value")
    if header_value is not None and header_value.strip() and header_value.strip().lower() != "always":
        return UNSUPPORTED, (f"ingress-nginx sends {name}: {header_value.strip()} to the canary; here only the value "
                             "always does"), {}
    if _get(anns, "canary-by-header-pattern"):
        return UNSUPPORTED, "ingress-nginx matches the header against canary-by-header-pattern; here only the value always sends to the canary", {}
    return MAPPED, ("The value always sends a request to the canary (compared case-insensitively); never is not "
                    "honoured: a request with never follows the weight like any other value, so it can still "
                    "reach the canary (ingress-nginx keeps it away)"), _t("canary-by-header", name)


def _canary_header_value(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if value.strip().lower() == "always" or not value.strip():
        return NO_EFFECT, "always is the value that sends to the canary here", {}
    return UNSUPPORTED, "only the value always sends a request to the canary here", {}


# backends


def _backend_protocol(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    v = value.strip().upper()
    if v == "HTTP":
        return NO_EFFECT, "the default", {}
    if v == "HTTPS":
        return MAPPED, ("the backend's certificate is validated (ingress-nginx does not verify it unless "
                        "proxy-ssl-verify is on): a backend with a self-signed certificate needs "
                        "titanium.io/upstream-tls-secret with its CA in ca.crt"), _t("backend-protocol", "HTTPS")
    if v == "GRPC":
        return MAPPED, ("cleartext; the data plane speaks HTTP/2 to the backend when the client does (gRPC "
                        "clients do)"), _t("backend-protocol", "GRPC")
    if v == "GRPCS":
        return UNSUPPORTED, "gRPC over TLS to the backend has no equivalent (HTTPS is HTTP/1.1 or HTTP/2 as the client speaks, GRPC is cleartext)", {}
    return UNSUPPORTED, f"{v} has no equivalent (HTTP, HTTPS, GRPC do)", {}


def _proxy_ssl_secret(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    ref = value.strip()
    ns, _, name = ref.rpartition("/")
    if ns and ns != ctx.namespace:
        return UNSUPPORTED, f"titanium.io/upstream-tls-secret reads a Secret of the Ingress's own namespace, not {ns}", {}
    if not _DNS_NAME.fullmatch(name) or (ns and not _DNS_LABEL.fullmatch(ns)):
        return UNSUPPORTED, "not a Secret name (namespace/name)", {}
    if (_get(anns, "backend-protocol") or "").strip().upper() != "HTTPS":
        return NO_EFFECT, "used only with backend-protocol HTTPS (in ingress-nginx too)", {}
    return MAPPED, ("the Secret must be of type kubernetes.io/tls (tls.crt, tls.key: the client certificate; "
                    "ca.crt, optional: the backend's CA); the backend's certificate is always verified"), \
        _t("upstream-tls-secret", name)


def _proxy_ssl_verify(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if value.strip().lower() == "on":
        return NO_EFFECT, "a backend reached over HTTPS is always verified here", {}
    return UNSUPPORTED, "verification cannot be turned off: a backend reached over HTTPS is always verified here", {}


def _read_timeout(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    v = value.strip()
    if not _DIGITS.fullmatch(v) or not 1 <= int(v) <= 3600:
        return UNSUPPORTED, "titanium.io/proxy-read-timeout takes 1-3600 seconds", {}
    return MAPPED, ("here the time the backend may take to send its response headers; in ingress-nginx the "
                    "longest pause between two reads of the response (it also bounds a slow stream)"), \
        _t("proxy-read-timeout", str(int(v)))


def _load_balance(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    v = value.strip().lower()
    if v == "round_robin":
        return MAPPED, "the same", _t("load-balance", "round_robin")
    if v == "ewma":
        return MAPPED, ("the data plane's least-time balancing (the fastest endpoint by recent response time), "
                        "close to ingress-nginx's peak EWMA"), _t("load-balance", "ewma")
    return UNSUPPORTED, f"{value.strip()} has no equivalent (round_robin, ewma do; see titanium.io/load-balance)", {}


def _affinity(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if value.strip() != "cookie":
        return UNSUPPORTED, "only cookie affinity exists (in ingress-nginx too)", {}
    note = "the cookie is named titanium-affinity and its attributes are fixed (session-cookie-* have no equivalent)"
    if (_get(anns, "affinity-mode") or "balanced").strip() == "persistent":
        note += "; affinity-mode persistent is not kept: sessions may move when endpoints change"
    return MAPPED, note, _t("affinity", "cookie")


def _session_cookie(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if (_get(anns, "affinity") or "").strip() != "cookie":
        return NO_EFFECT, "without affinity: cookie it does nothing (in ingress-nginx too)", {}
    return UNSUPPORTED, "the affinity cookie's name and attributes are fixed here (titanium-affinity)", {}


def _enable_cors(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if _bool(value) is not True:
        return NO_EFFECT, "CORS is off: the default", {}
    origins_text = (_get(anns, "cors-allow-origin") or "*").strip() or "*"
    origins = [o.strip() for o in origins_text.split(",") if o.strip()]
    if origins == ["*"]:
        converted = "*"
    else:
        bad = [o for o in origins if not _url_ok(o, path_allowed=False) or "*" in o]
        if bad:
            return UNSUPPORTED, (f"origin(s) {', '.join(bad)} cannot be expressed: titanium.io/cors-allow-origin takes * "
                                 "or http(s)://host[:port] origins (no wildcard subdomains, no other schemes)"), {}
        converted = ",".join(origins)
    return MAPPED, ("The data plane answers the OPTIONS preflight itself (204 with Access-Control-Allow-*); it "
                    "does not add CORS headers to the actual responses, so the backend must send "
                    "Access-Control-Allow-Origin on them (ingress-nginx adds it). cors-allow-methods, "
                    "-headers, -credentials, -expose-headers and -max-age have no equivalent"), \
        _t("cors-allow-origin", converted)


def _cors_detail(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if _bool(_get(anns, "enable-cors") or "") is not True:
        return NO_EFFECT, "without enable-cors: \"true\" it does nothing (in ingress-nginx too)", {}
    return UNSUPPORTED, "the preflight answer's CORS headers are the data plane's own", {}


def _cors_origin(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if _bool(_get(anns, "enable-cors") or "") is not True:
        return NO_EFFECT, "without enable-cors: \"true\" it does nothing (in ingress-nginx too)", {}
    return NO_EFFECT, "converted with enable-cors", {}


def _proxy_http_version(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if value.strip() == "1.1":
        return NO_EFFECT, "the default", {}
    return UNSUPPORTED, "the HTTP version to the backend follows the client here", {}


def _satisfy(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    if value.strip() != "any":
        return NO_EFFECT, "all requirements must be met: the default, and how this data plane behaves", {}
    return UNSUPPORTED, ("every converted requirement (address allow-list, external auth) must be met here: "
                         "stricter than any"), {}


def _redirect_code(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
    return NO_EFFECT, "goes with the redirect annotation, which has no equivalent", {}


def _alias_of(target: str) -> Callable[..., tuple[str, str, dict[str, str]]]:
    def judge(value: str, anns: Mapping[str, str], ctx: _Context) -> tuple[str, str, dict[str, str]]:
        if _get(anns, target) is not None:
            return NO_EFFECT, f"{target} is set too and is converted instead", {}
        return _RULES[target].judge(value, anns, ctx)  # type: ignore[misc]

    return judge


_SNIPPET = ("raw nginx configuration is not applied: whatever it did (headers, access rules, redirects, "
            "auth) is lost; review it and express what is needed another way")
_NO_EQUIVALENT = "no equivalent here"
_HTTPROUTE = "no Ingress annotation does it here; an HTTPRoute on a Gateway can ({})"

#: short name -> rule. Every annotation ingress-nginx documents or parses (aliases included).
_RULES: dict[str, _Rule] = {
    # authentication
    "auth-url": _Rule("external authentication", security=True, judge=_auth_url),
    "auth-method": _Rule("the external auth request's method", security=True, judge=_auth_method),
    "auth-signin": _Rule("a redirect to a login page when external auth fails", security=True,
                         note="a failed check is answered with the auth service's answer, not a redirect to the sign-in page"),
    "auth-signin-redirect-param": _Rule("the sign-in redirect's URL parameter", security=True, note="there is no sign-in redirect"),
    "auth-response-headers": _Rule("auth response headers copied to the backend request", security=True,
                                   note="the backend does not receive the identity headers of the auth answer"),
    "auth-request-redirect": _Rule("the X-Auth-Request-Redirect header of the auth request", security=True, note=_NO_EQUIVALENT),
    "auth-proxy-set-headers": _Rule("headers added to the auth request", security=True, note=_NO_EQUIVALENT),
    "auth-always-set-cookie": _Rule("cookies of the auth answer set on every response", security=True, note=_NO_EQUIVALENT),
    "auth-snippet": _Rule("raw nginx configuration of the auth request", security=True, note=_SNIPPET),
    "auth-cache-key": _Rule("caching of auth answers", security=True, verdict=NO_EFFECT,
                            note="every request is checked (nothing is cached): stricter, never weaker"),
    "auth-cache-duration": _Rule("caching of auth answers", security=True, verdict=NO_EFFECT,
                                 note="every request is checked (nothing is cached)"),
    "auth-keepalive": _Rule("keep-alive connections to the auth service", security=True, verdict=NO_EFFECT, note="connection tuning"),
    "auth-keepalive-requests": _Rule("keep-alive connections to the auth service", security=True, verdict=NO_EFFECT, note="connection tuning"),
    "auth-keepalive-timeout": _Rule("keep-alive connections to the auth service", security=True, verdict=NO_EFFECT, note="connection tuning"),
    "auth-keepalive-share-vars": _Rule("nginx variables shared with the auth request", security=True, verdict=NO_EFFECT, note="nginx internals"),
    "auth-type": _Rule("HTTP basic or digest authentication", security=True,
                       note="no basic or digest authentication exists here: anyone reaches the backend; put it behind "
                            "titanium.io/auth-url (an auth service) instead"),
    "auth-secret": _Rule("the users of basic or digest authentication", security=True, note="no basic or digest authentication exists here"),
    "auth-secret-type": _Rule("the format of the basic auth Secret", security=True, note="no basic or digest authentication exists here"),
    "auth-realm": _Rule("the basic auth realm", security=True, note="no basic or digest authentication exists here"),
    "auth-tls-secret": _Rule("client certificate authentication, mutual TLS", security=True,
                             note="clients are not asked for a certificate: anyone reaches the backend"),
    "auth-tls-verify-client": _Rule("client certificate verification", security=True,
                                    judge=_off_is_no_effect(("off",), "client certificates are not requested: the same",
                                                            "clients are not asked for a certificate: anyone reaches the backend")),
    "auth-tls-verify-depth": _Rule("client certificate chain depth", security=True, note="no client certificate authentication here"),
    "auth-tls-error-page": _Rule("the page of a failed client certificate check", security=True, note="no client certificate authentication here"),
    "auth-tls-pass-certificate-to-upstream": _Rule("the client certificate passed to the backend", security=True,
                                                   judge=_true_is_unsupported("the backend does not receive a client certificate header",
                                                                              "the ingress-nginx default")),
    "auth-tls-match-cn": _Rule("a client certificate CN check", security=True, note="no client certificate authentication here"),
    "enable-global-auth": _Rule("ingress-nginx's global external auth", security=True, verdict=NO_EFFECT,
                                note="there is no global external auth here"),
    # (ignoring "any" can only refuse more, never admit more: not a security gap)
    "satisfy": _Rule("whether any or all access requirements suffice", judge=_satisfy),
    # access and limits
    "whitelist-source-range": _Rule("a client address allow-list", security=True, judge=_allow_list),
    "allowlist-source-range": _Rule("a client address allow-list", security=True, judge=_alias_of("whitelist-source-range")),
    "denylist-source-range": _Rule("a client address deny-list", security=True,
                                   note="no deny-list annotation exists: the listed clients are let through"),
    "limit-rps": _Rule("a request rate limit per client", security=True, judge=_limit_rps),
    "limit-rpm": _Rule("a request rate limit per client", security=True, judge=_limit_rpm),
    "limit-connections": _Rule("a concurrent connection limit per client", security=True, note="no connection limit per client here"),
    "limit-burst-multiplier": _Rule("the burst of the rate limit", verdict=NO_EFFECT, note="the rate limit has no burst here"),
    "limit-whitelist": _Rule("clients exempt from the rate limit", note="no exemptions: the limit applies to every client"),
    "limit-allowlist": _Rule("clients exempt from the rate limit", note="no exemptions: the limit applies to every client"),
    "limit-rate": _Rule("a response bandwidth limit", note=_NO_EQUIVALENT),
    "limit-rate-after": _Rule("a response bandwidth limit", note=_NO_EQUIVALENT),
    "proxy-body-size": _Rule("a request body size limit", security=True, judge=_body_size),
    "enable-modsecurity": _Rule("the ModSecurity web application firewall", security=True,
                                judge=_true_is_unsupported("no web application firewall runs here: requests are not inspected")),
    "enable-owasp-core-rules": _Rule("the OWASP core rule set", security=True,
                                     judge=_true_is_unsupported("no web application firewall runs here: requests are not inspected")),
    "modsecurity-snippet": _Rule("ModSecurity rules", security=True, note="no web application firewall runs here: requests are not inspected"),
    "modsecurity-transaction-id": _Rule("the ModSecurity transaction id", security=True, verdict=NO_EFFECT, note="no web application firewall here"),
    "configuration-snippet": _Rule("raw nginx configuration of the location", security=True, routing=True, note=_SNIPPET),
    "server-snippet": _Rule("raw nginx configuration of the server", security=True, routing=True, note=_SNIPPET),
    "stream-snippet": _Rule("raw nginx stream configuration", security=True, routing=True, note=_SNIPPET),
    # TLS and redirects
    "ssl-redirect": _Rule("the redirect of HTTP to HTTPS", security=True, routing=True, judge=_ssl_redirect),
    "force-ssl-redirect": _Rule("the redirect of HTTP to HTTPS", security=True, routing=True, judge=_force_ssl_redirect),
    "preserve-trailing-slash": _Rule("the trailing slash of the HTTPS redirect", verdict=NO_EFFECT, note="there is no HTTPS redirect here"),
    "ssl-passthrough": _Rule("TLS passed through to the backend", security=True, routing=True,
                             judge=_true_is_unsupported("TLS is not passed through: the data plane terminates TLS with the "
                                                        "Ingress's tls Secret (without one, HTTPS clients are not served) and the "
                                                        "backend receives plain HTTP")),
    "ssl-ciphers": _Rule("the TLS ciphers offered to clients", security=True,
                         note="the data plane's own cipher list applies; a restriction of ciphers is not applied"),
    "ssl-prefer-server-ciphers": _Rule("the TLS cipher order", verdict=NO_EFFECT, note="the data plane's own TLS settings apply"),
    "from-to-www-redirect": _Rule("a redirect between www. and the bare host", routing=True,
                                  judge=_true_is_unsupported(_HTTPROUTE.format("RequestRedirect"))),
    "permanent-redirect": _Rule("a permanent redirect instead of the backend", routing=True,
                                note="requests reach the backend instead of being redirected; " + _HTTPROUTE.format("RequestRedirect")),
    "permanent-redirect-code": _Rule("the code of the permanent redirect", judge=_redirect_code),
    "temporal-redirect": _Rule("a temporary redirect instead of the backend", routing=True,
                               note="requests reach the backend instead of being redirected; " + _HTTPROUTE.format("RequestRedirect")),
    "temporal-redirect-code": _Rule("the code of the temporary redirect", judge=_redirect_code),
    "app-root": _Rule("a redirect of / to the application root", routing=True,
                      note="/ is not redirected; " + _HTTPROUTE.format("RequestRedirect on an Exact / match")),
    "use-port-in-redirects": _Rule("the port in nginx's own redirects", verdict=NO_EFFECT, note="no such redirects here"),
    "relative-redirects": _Rule("relative nginx redirects", verdict=NO_EFFECT, note="no such redirects here"),
    # paths
    "rewrite-target": _Rule("the path the backend receives", routing=True, judge=_rewrite_target),
    "use-regex": _Rule("regular-expression paths", routing=True, judge=_use_regex),
    "x-forwarded-prefix": _Rule("an X-Forwarded-Prefix header to the backend", note=_NO_EQUIVALENT),
    "upstream-vhost": _Rule("the Host header the backend receives", routing=True,
                            note="the backend receives the client's Host; " + _HTTPROUTE.format("URLRewrite hostname")),
    "server-alias": _Rule("more host names for the Ingress's rules", routing=True,
                          note="the aliases are not served: add them as rules[].host"),
    "default-backend": _Rule("a fallback Service when the backend has no endpoint", routing=True,
                             note="a backend without endpoints answers 503 (spec.defaultBackend is another thing, and is served)"),
    "custom-http-errors": _Rule("error pages from the default backend", note="the backend's own error responses are passed on"),
    "disable-proxy-intercept-errors": _Rule("error interception", verdict=NO_EFFECT, note="errors are never intercepted here"),
    "custom-headers": _Rule("response headers from a ConfigMap", note=_NO_EQUIVALENT),
    "connection-proxy-header": _Rule("the Connection header to the backend", note="the data plane manages backend connections itself"),
    "mirror-target": _Rule("request mirroring", note=_HTTPROUTE.format("RequestMirror")),
    "mirror-host": _Rule("the Host of mirrored requests", note="no mirroring from an Ingress here"),
    "mirror-request-body": _Rule("the body of mirrored requests", verdict=NO_EFFECT, note="no mirroring from an Ingress here"),
    # canary
    "canary": _Rule("this Ingress is a canary of another", routing=True, judge=_canary),
    "canary-weight": _Rule("the canary's share of requests", routing=True, judge=_canary_weight),
    "canary-weight-total": _Rule("the total of canary weights", routing=True, judge=_canary_weight_total),
    "canary-by-header": _Rule("a header that sends requests to the canary", routing=True, judge=_canary_by_header),
    "canary-by-header-value": _Rule("the header value that sends requests to the canary", routing=True, judge=_canary_header_value),
    "canary-by-header-pattern": _Rule("a header pattern that sends requests to the canary", routing=True,
                                      note="only the value always sends a request to the canary here"),
    "canary-by-cookie": _Rule("a cookie that sends requests to the canary", routing=True,
                              note="no cookie-based canary: such requests follow the weight"),
    "affinity-canary-behavior": _Rule("whether affinity keeps clients on the canary", verdict=NO_EFFECT,
                                      note="the canary takes its settings from the primary here"),
    # backends
    "backend-protocol": _Rule("the protocol to the backend", routing=True, judge=_backend_protocol),
    "proxy-ssl-secret": _Rule("the client certificate and CA for an HTTPS backend", judge=_proxy_ssl_secret),
    "proxy-ssl-verify": _Rule("verification of an HTTPS backend's certificate", judge=_proxy_ssl_verify),
    "proxy-ssl-verify-depth": _Rule("the chain depth for an HTTPS backend", note=_NO_EQUIVALENT),
    "proxy-ssl-name": _Rule("the name an HTTPS backend's certificate is checked against", note=_NO_EQUIVALENT),
    "proxy-ssl-server-name": _Rule("SNI to an HTTPS backend", note=_NO_EQUIVALENT),
    "proxy-ssl-ciphers": _Rule("the TLS ciphers to an HTTPS backend", note=_NO_EQUIVALENT),
    "proxy-ssl-protocols": _Rule("the TLS versions to an HTTPS backend", note=_NO_EQUIVALENT),
    "proxy-read-timeout": _Rule("a backend timeout", judge=_read_timeout),
    "proxy-connect-timeout": _Rule("the backend connect timeout", note=_NO_EQUIVALENT),
    "proxy-send-timeout": _Rule("the backend send timeout", note=_NO_EQUIVALENT),
    "proxy-next-upstream": _Rule("retries on another endpoint", note="no retries on another endpoint"),
    "proxy-next-upstream-timeout": _Rule("retries on another endpoint", note="no retries on another endpoint"),
    "proxy-next-upstream-tries": _Rule("retries on another endpoint", note="no retries on another endpoint"),
    "proxy-request-buffering": _Rule("request buffering", verdict=NO_EFFECT, note="buffering is the data plane's own"),
    "proxy-buffering": _Rule("response buffering", verdict=NO_EFFECT, note="buffering is the data plane's own"),
    "proxy-buffer-size": _Rule("response buffering", verdict=NO_EFFECT, note="buffering is the data plane's own"),
    "proxy-buffers-number": _Rule("response buffering", verdict=NO_EFFECT, note="buffering is the data plane's own"),
    "proxy-busy-buffers-size": _Rule("response buffering", verdict=NO_EFFECT, note="buffering is the data plane's own"),
    "proxy-max-temp-file-size": _Rule("response buffering", verdict=NO_EFFECT, note="buffering is the data plane's own"),
    "client-body-buffer-size": _Rule("request body buffering", verdict=NO_EFFECT, note="buffering is the data plane's own"),
    "proxy-http-version": _Rule("the HTTP version to the backend", judge=_proxy_http_version),
    "proxy-cookie-domain": _Rule("rewriting of Set-Cookie domains", note=_NO_EQUIVALENT),
    "proxy-cookie-path": _Rule("rewriting of Set-Cookie paths", note=_NO_EQUIVALENT),
    "proxy-redirect-from": _Rule("rewriting of Location headers", note=_NO_EQUIVALENT),
    "proxy-redirect-to": _Rule("rewriting of Location headers", note=_NO_EQUIVALENT),
    "service-upstream": _Rule("the Service's cluster IP instead of its endpoints",
                              judge=_true_is_unsupported("requests go to the Service's ready endpoints, balanced by the data plane")),
    "load-balance": _Rule("the balancing algorithm", judge=_load_balance),
    "upstream-hash-by": _Rule("consistent hashing of requests to endpoints", note="no consistent hashing: use titanium.io/affinity for stickiness"),
    "upstream-hash-by-subset": _Rule("consistent hashing to endpoint subsets", note=_NO_EQUIVALENT),
    "upstream-hash-by-subset-size": _Rule("consistent hashing to endpoint subsets", note=_NO_EQUIVALENT),
    "affinity": _Rule("session affinity", judge=_affinity),
    "affinity-mode": _Rule("how sticky the affinity is", verdict=NO_EFFECT, note="taken into account with affinity"),
    "session-cookie-name": _Rule("the affinity cookie's name", judge=_session_cookie),
    "session-cookie-path": _Rule("the affinity cookie's path", judge=_session_cookie),
    "session-cookie-domain": _Rule("the affinity cookie's domain", judge=_session_cookie),
    "session-cookie-expires": _Rule("the affinity cookie's lifetime", judge=_session_cookie),
    "session-cookie-max-age": _Rule("the affinity cookie's lifetime", judge=_session_cookie),
    "session-cookie-samesite": _Rule("the affinity cookie's SameSite", judge=_session_cookie),
    "session-cookie-conditional-samesite-none": _Rule("the affinity cookie's SameSite", judge=_session_cookie),
    "session-cookie-secure": _Rule("the affinity cookie's Secure flag", judge=_session_cookie),
    "session-cookie-change-on-failure": _Rule("a new affinity cookie after a failure", judge=_session_cookie),
    "enable-cors": _Rule("CORS", judge=_enable_cors),
    "cors-allow-origin": _Rule("the CORS allowed origins", judge=_cors_origin),
    "cors-allow-methods": _Rule("the CORS allowed methods", judge=_cors_detail),
    "cors-allow-headers": _Rule("the CORS allowed headers", judge=_cors_detail),
    "cors-expose-headers": _Rule("the CORS exposed headers", judge=_cors_detail),
    "cors-allow-credentials": _Rule("CORS with credentials", judge=_cors_detail),
    "cors-max-age": _Rule("the CORS preflight cache time", judge=_cors_detail),
    "fastcgi-index": _Rule("FastCGI", routing=True, note="FastCGI backends are not supported"),
    "fastcgi-params-configmap": _Rule("FastCGI", routing=True, note="FastCGI backends are not supported"),
    "http2-push-preload": _Rule("HTTP/2 server push", verdict=NO_EFFECT, note="browsers no longer use server push"),
    "enable-access-log": _Rule("access logging", verdict=NO_EFFECT, note="logging is the data plane's own"),
    "enable-rewrite-log": _Rule("rewrite logging", verdict=NO_EFFECT, note="logging is the data plane's own"),
    "enable-opentelemetry": _Rule("OpenTelemetry tracing", judge=_true_is_unsupported("no tracing per Ingress here", "tracing off")),
    "opentelemetry-trust-incoming-span": _Rule("OpenTelemetry tracing", verdict=NO_EFFECT, note="no tracing per Ingress here"),
    "opentelemetry-operation-name": _Rule("OpenTelemetry tracing", verdict=NO_EFFECT, note="no tracing per Ingress here"),
}

#: Every known ingress-nginx annotation (full names).
KNOWN = tuple(sorted(PREFIX + name for name in _RULES))


def _finding(name: str, value: Any, anns: Mapping[str, str], ctx: _Context) -> Finding:
    full = PREFIX + name
    text = value if isinstance(value, str) else str(value)
    rule = _RULES.get(name)
    if rule is None:
        return Finding(full, text, NO_EFFECT, "none", "not an ingress-nginx annotation (a typo?): ingress-nginx ignores it too")
    if rule.judge is not None:
        verdict, note, titanium = rule.judge(text, anns, ctx)
    else:
        verdict, note, titanium = rule.verdict, rule.note, {}
    return Finding(full, text, verdict, rule.effect, note, rule.security, rule.routing, titanium)


def analyze(
    annotations: Mapping[str, Any] | None,
    *,
    namespace: str = "default",
    paths: Sequence[str] = (),
    has_tls: bool = False,
) -> Analysis:
    """Every ``nginx.ingress.kubernetes.io/`` annotation of one Ingress, classified (sorted by
    name), with the ``titanium.io/`` annotations a conversion sets. ``paths`` (the Ingress's
    ``rules[].http.paths[].path``) and ``has_tls`` refine a few verdicts (rewrite-target
    idioms, use-regex, ingress-nginx's default HTTPS redirect)."""
    anns = {k: v for k, v in (annotations or {}).items() if isinstance(k, str)}
    ctx = _Context(namespace, tuple(p for p in paths if isinstance(p, str)), has_tls)
    findings = [
        _finding(k[len(PREFIX):], v, anns, ctx) for k, v in sorted(anns.items()) if k.startswith(PREFIX)
    ]
    titanium: dict[str, str] = {}
    for f in findings:
        if f.verdict == MAPPED:
            for k, v in f.titanium.items():
                titanium.setdefault(k, v)
    notes: list[Finding] = []
    if has_tls and _get(anns, "ssl-redirect") is None and _bool(_get(anns, "force-ssl-redirect") or "") is not True:
        notes.append(Finding(
            "", "", UNSUPPORTED, "ingress-nginx's default redirect of HTTP to HTTPS for an Ingress with tls",
            "HTTP requests are served in clear text instead of being redirected (this data plane never redirects "
            "to HTTPS). Redirect at the load balancer or with a Gateway and an HTTPRoute RequestRedirect; set "
            "nginx.ingress.kubernetes.io/ssl-redirect: \"false\" on the source Ingress to accept HTTP",
            security=True, routing=True))
    return Analysis(tuple(findings), titanium, tuple(notes))


def foreign_annotations(
    annotations: Mapping[str, Any] | None,
    *,
    namespace: str = "default",
    paths: Sequence[str] = (),
    has_tls: bool = False,
) -> list[ForeignAnnotation]:
    """For an Ingress this controller serves: the ``nginx.ingress.kubernetes.io/`` annotations
    that change security or routing and are not in force, each with the message of its
    ``ForeignAnnotation`` Warning Event (sorted by annotation). A mapped annotation is in force
    when the Ingress also carries its ``titanium.io/`` equivalent; annotations without effect
    and those that only tune never raise one."""
    anns = {k: v for k, v in (annotations or {}).items() if isinstance(k, str)}
    out: list[ForeignAnnotation] = []
    for f in analyze(anns, namespace=namespace, paths=paths, has_tls=has_tls).findings:
        if not f.relevant or f.verdict == NO_EFFECT:
            continue
        if f.verdict == MAPPED:
            if f.titanium and all(k in anns for k in f.titanium):
                continue
            equivalent = ", ".join(f"{k}: {_short(v)!r}" for k, v in f.titanium.items())
            how = f"only titanium.io/ annotations are read; the equivalent is {equivalent}" if equivalent else \
                "only titanium.io/ annotations are read"
        else:
            how = f.note
        out.append(ForeignAnnotation(
            f.annotation,
            f"{f.annotation} {_short(f.value)!r} is not enforced here ({f.effect}): {how}",
            f.security,
            f,
        ))
    return out


def ingress_foreign_annotations(ingress: Mapping[str, Any]) -> list[ForeignAnnotation]:
    """:func:`foreign_annotations` of an Ingress object (its annotations, namespace, paths and
    whether it has ``tls``)."""
    meta = ingress.get("metadata") if isinstance(ingress.get("metadata"), Mapping) else {}
    spec = ingress.get("spec") if isinstance(ingress.get("spec"), Mapping) else {}
    assert isinstance(meta, Mapping) and isinstance(spec, Mapping)
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), Mapping) else {}
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else "default"
    return foreign_annotations(annotations, namespace=namespace or "default", paths=ingress_paths(ingress),
                               has_tls=bool(spec.get("tls")))


#: The API server caps an events.k8s.io/v1 Event's ``note`` at 1 KiB (UTF-8 bytes); the writer
#: cuts a longer one, so the message is made to fit with whole sentences.
FOREIGN_MESSAGE_MAX_BYTES = 1024


def foreign_annotation_message(found: Sequence[ForeignAnnotation], limit: int = FOREIGN_MESSAGE_MAX_BYTES) -> str:
    """The note of an Ingress's one ``ForeignAnnotation`` Event: for one annotation its message;
    for several, their names and then each message numbered, as many as fit in ``limit``
    bytes (the rest counted). Stable: the same annotations give the same text."""
    if len(found) == 1 and len(found[0].message.encode()) <= limit:
        return found[0].message
    names = [a.annotation[len(PREFIX):] if a.annotation.startswith(PREFIX) else a.annotation for a in found]
    head = f"{len(found)} {PREFIX} annotations are not enforced here: {', '.join(names)}."
    if len(head.encode()) > limit:
        head = _fit(head, limit)
    text = head
    for i, a in enumerate(found, 1):
        more = f" ({i}) {a.message}"
        rest = f" ({len(found) - i + 1} more not shown)"
        if len((text + more).encode()) + (len(rest.encode()) if i < len(found) else 0) > limit:
            return text + rest if len((text + rest).encode()) <= limit else text
        text += more
    return text


def _fit(text: str, limit: int) -> str:
    data = text.encode()
    return text if len(data) <= limit else data[:limit - 3].decode("utf-8", "ignore") + "..."


def foreign_annotations_note(obj: Mapping[str, Any], annotations: Mapping[str, Any]) -> str:
    """The note of a served Ingress's ``ForeignAnnotation`` Warning Event: the
    ``nginx.ingress.kubernetes.io/`` annotations that change security or routing and are not in
    force here (:func:`foreign_annotations`); "" when there are none."""
    if not any(type(k) is str and k.startswith(PREFIX) for k in annotations):
        return ""
    found = ingress_foreign_annotations(obj)
    return foreign_annotation_message(found) if found else ""


def ingress_paths(ingress: Mapping[str, Any]) -> list[str]:
    """``rules[].http.paths[].path`` of an Ingress, in order (strings only)."""
    spec = ingress.get("spec")
    out: list[str] = []
    rules = spec.get("rules") if isinstance(spec, Mapping) else None
    for rule in rules if isinstance(rules, list) else ():
        http = rule.get("http") if isinstance(rule, Mapping) else None
        paths = http.get("paths") if isinstance(http, Mapping) else None
        for p in paths if isinstance(paths, list) else ():
            if isinstance(p, Mapping) and isinstance(p.get("path"), str):
                out.append(p["path"])
    return out


def uses_capture_groups(target: str) -> bool:
    """Whether a rewrite-target refers to capture groups ($1, ${1})."""
    return bool(_CAPTURE.search(target))


def annotation(annotations: Mapping[str, Any], short_name: str) -> str | None:
    """The string value of ``nginx.ingress.kubernetes.io/<short_name>``, if set."""
    return _get(annotations, short_name)  # type: ignore[arg-type]


def short(value: str, limit: int = 60) -> str:
    """``value`` on one line, cut to ``limit`` characters."""
    return _short(value, limit)


def _short(value: str, limit: int = 60) -> str:
    text = " ".join(value.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def table() -> list[tuple[str, str, bool, bool, str]]:
    """``(annotation, effect, security, routing, equivalent)`` of every known annotation (the
    ``titanium.io/`` annotation it can map to, or "")."""
    equivalents = {
        "auth-url": "auth-url", "whitelist-source-range": "whitelist-source-range",
        "allowlist-source-range": "whitelist-source-range", "limit-rps": "limit-rps", "limit-rpm": "limit-rps",
        "proxy-body-size": "proxy-body-size", "rewrite-target": "rewrite-target", "canary": "canary",
        "canary-weight": "canary-weight", "canary-by-header": "canary-by-header", "backend-protocol": "backend-protocol",
        "proxy-ssl-secret": "upstream-tls-secret", "proxy-read-timeout": "proxy-read-timeout",
        "load-balance": "load-balance", "affinity": "affinity", "enable-cors": "cors-allow-origin",
    }
    return [
        (PREFIX + name, rule.effect, rule.security, rule.routing, TITANIUM + equivalents[name] if name in equivalents else "")
        for name, rule in sorted(_RULES.items())
    ]


__all__ = [
    "Analysis",
    "FOREIGN_ANNOTATION_REASON",
    "FOREIGN_MESSAGE_MAX_BYTES",
    "Finding",
    "ForeignAnnotation",
    "KNOWN",
    "MAPPED",
    "NO_EFFECT",
    "PREFIX",
    "UNSUPPORTED",
    "analyze",
    "foreign_annotation_message",
    "foreign_annotations",
    "foreign_annotations_note",
    "idiom_blocker",
    "ingress_foreign_annotations",
    "ingress_paths",
    "annotation",
    "rewrite_idiom",
    "short",
    "table",
    "uses_capture_groups",
]
