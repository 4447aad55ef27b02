"""Every data-plane rule of the contract, and which test rows cover it.

``RULES``: one entry per rule the data plane must honour: every row of every table of the
contract (docs/contract.md, the project's copy of the data-plane contract), every Decisions
bullet that concerns the data plane, the product pages' "Behavior that differs" entries and
the data-plane features of the Ingress annotations table. ``row`` is how the spec starts that
row or bullet, so ``test_rule_coverage.py`` can check the catalog against the spec itself.

Tests name the rules they check: a table is ``@rows(Row("rule.id", ...), ...)`` (one
parametrized case per row), a single test ``@covers("rule.id", ...)``. ``test_rule_coverage``
fails when a rule has no row, or a row names a rule that does not exist.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass(frozen=True)
class Rule:
    id: str
    source: str  # the spec section
    row: str  # the first cell of the table row / the start of the bullet, as the spec writes it
    says: str  # what the data plane must do


C = "contract"
D = "contract: Decisions"
P = "contract: Protocols"
B = "Gateway API page: Behavior that differs"
ING = "Ingress page: Annotations"

_RULES = [
    # -- Files ------------------------------------------------------------------------------
    Rule("files.root", f"{C}: Files", "ConfigMap <data-plane-service> (or --config-map)",
         "twp.yaml in the config directory is the config (UTF-8 YAML)"),
    Rule("files.pfx", f"{C}: Files", "Secret <data-plane-service>-tls (or --tls-secret), type Opaque",
         "<namespace>.<name>.pfx: a password-less PKCS#12 served by TLS listeners"),
    Rule("files.relative", f"{C}: Files", "Both are mounted in one directory",
         "file names in the config are relative to the config directory"),
    Rule("files.config-hash", f"{C}: Files", "config_hash",
         "config_hash = lowercase hex SHA-256 of the exact twp.yaml bytes"),
    Rule("files.reload", f"{C}: Files", "The data plane reloads in place",
         "a change of the directory (also the kubelet's atomic ..data swap) is loaded without a restart"),
    # -- Parts -------------------------------------------------------------------------------
    Rule("parts.order", f"{C}: Parts", "The data plane loads the root and then every included part",
         "parts load in include order; the routes and clusters of all parts are one list"),
    Rule("parts.sha256", f"{C}: Parts", "checks each part's sha256",
         "a part whose sha256 differs is not loaded yet: the previous config stays, retried"),
    Rule("parts.missing", f"{C}: Parts", "optional: true",
         "a part that is missing is not loaded yet: the previous config stays, retried"),
    Rule("parts.hash-covers", f"{C}: Parts", "config_hash (the root's SHA-256) still covers the whole config",
         "/version reports the root's hash; a part change comes with a new root"),
    # -- Admin -------------------------------------------------------------------------------
    Rule("admin.readyz", f"{C}: Admin endpoints", "GET /readyz", "no auth; 200 once a config is loaded, 503 before"),
    Rule("admin.version", f"{C}: Admin endpoints", "GET /version",
         "bearer TITANIUM_ADMIN_TOKEN; 200 JSON version + config_hash of the loaded twp.yaml; 401 without"),
    Rule("admin.metrics", f"{C}: Admin endpoints", "GET /metrics", "bearer token; Prometheus text; 401 without"),
    # -- Document ----------------------------------------------------------------------------
    Rule("doc.shape", f"{C}: Document", "schemaVersion",
         "schemaVersion 7.x with listeners, certificates, routes, clusters; anything else is an invalid "
         "document and keeps the previous config"),
    # -- listeners ---------------------------------------------------------------------------
    Rule("listeners.host", f"{C}: listeners", "host", '"0.0.0.0" (replaced by --bind-address)'),
    Rule("listeners.port", f"{C}: listeners", "port", "the data-plane port the listener binds"),
    Rule("listeners.type", f"{C}: listeners", "type", "transparent: a reverse proxy over the route table"),
    Rule("listeners.decryptSsl", f"{C}: listeners", "decryptSsl",
         "true: TLS terminated, certificate by SNI from certificates.items; false: plain HTTP"),
    Rule("listeners.bound-at-start", f"{C}: listeners", "One per data-plane port in use, bound at start",
         "listeners bind from the first config; a later change of the set is not applied"),
    # -- certificates ------------------------------------------------------------------------
    Rule("certs.exact", f"{C}: certificates.items", "picks the item whose hosts match the SNI",
         "an exact host beats a wildcard"),
    Rule("certs.wildcard", f"{C}: certificates.items", "wildcard covers one",
         "a wildcard certificate name covers exactly one label"),
    Rule("certs.default", f"{C}: certificates.items", "otherwise the default: true item",
         "no SNI match (or no SNI): the default item"),
    Rule("certs.fail", f"{C}: certificates.items", "otherwise the handshake fails",
         "no match and no default: the TLS handshake fails"),
    # -- routes ------------------------------------------------------------------------------
    Rule("routes.global", f"{C}: routes", "Routes are global",
         "matched for every listener, whatever the port, unless the route lists ports"),
    Rule("match.ports", f"{C}: routes", "ports",
         "only requests received by a listener on one of the data-plane ports; absent = every listener"),
    Rule("routes.first-match", f"{C}: routes", "evaluates routes in ascending order",
         "ascending order, the FIRST whose match accepts the request wins (lower order wins)"),
    Rule("routes.no-match", f"{C}: routes", "No match: 404", "no route matches: 404"),
    Rule("routes.id", f"{C}: routes", "id", "unique and stable; a duplicate id is an invalid document"),
    Rule("routes.order", f"{C}: routes", "order", "unique integer; lower wins; a duplicate is invalid"),
    Rule("match.host", f"{C}: routes", "host", "exact host, case-insensitive, the port in Host ignored"),
    Rule("match.host-wildcard", f"{C}: routes", "*.example.com",
         "wildcard host: one or more labels, not the apex"),
    Rule("match.host-absent", f"{C}: routes", "absent = any host", "no host: any host"),
    Rule("match.path-absent", f"{C}: routes", "absent = any path", "no path: any path"),
    Rule("match.path-exact", f"{C}: Path kinds", "Exact", "the path equals"),
    Rule("match.path-prefix", f"{C}: Path kinds", "Prefix",
         "on a segment boundary: /foo matches /foo, /foo/, /foo/bar, not /foobar; / matches all"),
    Rule("match.path-regex", f"{C}: Path kinds", "Regex", "full match of the path (.NET regex)"),
    Rule("match.path-no-query", f"{C}: Path kinds", "The query string is never part of the path",
         "path matches see the path without ?query"),
    Rule("match.method", f"{C}: routes", "method", "absent = any method; else equal"),
    Rule("match.headers", f"{C}: routes", "headers",
         "all present and equal; names AND values case-insensitive"),
    Rule("match.query", f"{C}: routes", "query", "all present and equal (case-sensitive)"),
    Rule("match.queryRegex", f"{C}: routes", "queryRegex", "all present and fully matching"),
    Rule("action.one", f"{C}: routes", "exactly ONE action", "clusterId | clusters | redirect | directResponse"),
    Rule("action.clusterId", f"{C}: routes", "clusterId", "forward to that cluster"),
    Rule("action.clusters", f"{C}: routes", "clusters", "weighted split; weight 0 takes no traffic"),
    Rule("action.redirect", f"{C}: Redirect", "Redirect",
         "statusCode 301/302, Location from the request with scheme/host/port/path replaced"),
    Rule("redirect.port", f"{C}: Redirect", "port (omitted = no port", "no port: none in the Location"),
    Rule("redirect.path", f"{C}: Redirect", "path (full replacement",
         "path replaces the whole path; omitted: the request path"),
    Rule("redirect.query", f"{C}: Redirect", "The query string is kept", "the query string is kept"),
    Rule("action.directResponse", f"{C}: directResponse", "directResponse",
         "answers status at once with body as text/plain"),
    Rule("route.mirror", f"{C}: routes", "mirror", "a fire-and-forget copy to the cluster, percent of requests"),
    Rule("route.transforms", f"{C}: routes", "transforms", "applied in list order before forwarding"),
    Rule("route.policies", f"{C}: routes", "policies", "evaluated in list order before transforms"),
    Rule("route.limits", f"{C}: routes", "limits", "requestTimeout for the whole request (TimeSpan); 504"),
    # -- transforms --------------------------------------------------------------------------
    Rule("t.RequestHeaderSet", f"{C}: transforms", "RequestHeaderSet", "replace (or add) the header"),
    Rule("t.RequestHeaderAppend", f"{C}: transforms", "RequestHeaderAppend",
         "an existing value becomes `old, new` (one header line)"),
    Rule("t.RequestHeaderRemove", f"{C}: transforms", "RequestHeaderRemove", "remove"),
    Rule("t.Response", f"{C}: transforms", "ResponseHeaderSet / ResponseHeaderAppend / ResponseHeaderRemove",
         "the same on the response; an appended Set-Cookie keeps its own line"),
    Rule("t.HostSet", f"{C}: transforms", "HostSet", "the upstream Host header"),
    Rule("t.PathSet", f"{C}: transforms", "PathSet", "replace the whole path"),
    Rule("t.PathRegexReplace", f"{C}: transforms", "PathRegexReplace",
         "replace the first match of pattern in the path"),
    Rule("t.PathPrefix", f"{C}: transforms", "PathRemovePrefix / PathPrefix", "strip / prepend a prefix"),
    Rule("t.strings", f"{C}: transforms", "All parameter values are strings", "non-string parameters are invalid"),
    # -- policies ----------------------------------------------------------------------------
    Rule("p.MaxRequestBodySize", f"{C}: policies", "MaxRequestBodySize",
         "413 when Content-Length exceeds bytes (0 = unlimited); no Content-Length: not checked"),
    Rule("p.IpAllowDeny", f"{C}: policies", "IpAllowDeny", "403 unless the socket peer is in an allow CIDR"),
    Rule("p.RateLimit", f"{C}: policies", "RateLimit",
         "fixed window per client address and partition; excess 429 with Retry-After"),
    Rule("p.Cors", f"{C}: policies", "Cors",
         "answers an OPTIONS preflight with 204 and Access-Control-Allow-*; actual responses untouched"),
    Rule("p.ExtAuth", f"{C}: policies", "ExtAuth",
         "GET subrequest first; 2xx admits; other answers relayed; timeout or error 503"),
    # -- clusters ----------------------------------------------------------------------------
    Rule("c.id", f"{C}: clusters", "id", "clusters are referenced by id; an unknown id is an invalid document"),
    Rule("c.algorithm", f"{C}: clusters", "algorithm",
         "RoundRobin | Random | LeastRequests | LeastTime | PowerOfTwoChoices"),
    Rule("c.destinations", f"{C}: clusters", "destinations", "the endpoints requests go to"),
    Rule("c.empty", f"{C}: clusters", "An empty destinations list is legal", "[] = every request answers 503"),
    Rule("c.useHttps", f"{C}: clusters", "useHttps", "TLS to the destination"),
    Rule("c.sessionAffinity", f"{C}: clusters", "sessionAffinity", "Cookie: an opaque cookie named as configured"),
    Rule("c.requestTimeout", f"{C}: clusters", "requestTimeout", "wait for response headers; 504"),
    Rule("c.tls", f"{C}: clusters", "tls", "caFile validates the destination; certFile/keyFile client cert"),
    Rule("c.tls.serverName", f"{C}: clusters", "serverName",
         "the SNI sent and, unless subjectAltNames is given, the name the backend certificate must match"),
    Rule("c.tls.subjectAltNames", f"{C}: clusters", "subjectAltNames",
         "[{type: Hostname|URI, value}]: any one must match the certificate's names"),
    Rule("c.tls.systemRoots", f"{C}: clusters", "systemRoots",
         "true trusts the data plane's system CA store instead of caFile"),
    Rule("c.tls.no-plaintext", f"{C}: clusters", "A destination with useHttps: true never falls back to plaintext",
         "a TLS or validation failure answers 502 for that request"),
    # -- Protocols ---------------------------------------------------------------------------
    Rule("proto.h2c", P, "cleartext h2c with prior knowledge on a plain one",
         "a plain listener serves HTTP/2 to a client that starts with the connection preface"),
    Rule("proto.h2-alpn", P, "ALPN h2 on a decrypting listener", "a decrypting listener offers h2 by ALPN"),
    Rule("proto.h2-upstream", P, "is forwarded over HTTP/2 (h2c to a plain destination",
         "an HTTP/2 client's request reaches a plain destination over h2c"),
    Rule("proto.h2-upstream-tls", P, "h2 to a useHttps one",
         "an HTTP/2 client's request reaches a useHttps destination over h2 by ALPN, with httpClient.tls"),
    Rule("proto.h2-fallback", P, "Decision where the contract is silent: a destination that does not speak HTTP/2",
         "is reached over HTTP/1.1 (Host = :authority)"),
    Rule("proto.trailers", P, "trailers (grpc-status, grpc-message)", "relayed to the client"),
    Rule("proto.reset", P, "resets are relayed", "a client's RST_STREAM reaches the destination as a reset"),
    Rule("proto.streams", P, "streams", "concurrent streams on one connection, each its own request"),
    Rule("proto.flow", P, "flow control", "bodies larger than every window pass both ways"),
    Rule("proto.http1", P, "An HTTP/1.1 client is forwarded over HTTP/1.1", "HTTP/1.1 in, HTTP/1.1 out"),
    Rule("proto.match", P, "Routes match HTTP/2 requests exactly as HTTP/1.1 ones",
         ":authority is the host, :path the path"),
    Rule("proto.direct", P, "A directResponse to an HTTP/2 request is an HTTP/2 response",
         "and so are redirects, 404 and the other answers of the data plane"),
    Rule("proto.features", P, "Transforms, policies, mirror, timeouts and weighted clusters",
         "apply to HTTP/2 requests as to HTTP/1.1 ones"),
    Rule("proto.websocket", P, "an HTTP/1.1 Upgrade: websocket request is passed through",
         "after the destination's 101, bytes flow both ways until either side closes"),
    # -- Decisions ---------------------------------------------------------------------------
    Rule("d.precedence", D, "Route precedence is the full Gateway API order",
         "the render orders; the data plane follows order only"),
    Rule("d.timeouts", D, "Timeouts:", "a timeout that fires answers 504; no httpClient.requestTimeout: no "
         "per-cluster limit; sub-second values kept"),
    Rule("d.paths", D, "Paths after transforms:",
         ".NET regex (lookahead); replacement literal (no $); empty result becomes /; ReplacePrefixMatch shapes"),
    Rule("d.host", D, "Host:", "the Host header (with its port) is forwarded unchanged unless HostSet; "
         "redirect host required; redirect port as given"),
    Rule("d.append", D, "Header append joins with", "`, ` on one line (not the upstream suite's `old,new`)"),
    Rule("d.mirror-weight", D, "Mirror percent defaults to 100",
         "mirror percent defaults to 100; destination weight is relative within its cluster"),
    Rule("d.certificates", D, "Certificates:", "SNI match (exact beats wildcard, one label), default, fail"),
    Rule("d.parts", D, "Parts:", "a split root holds no routes or clusters; parts hold only routes and clusters"),
    Rule("d.zero", D, "Zero durations are never emitted", "a zero duration is an invalid document"),
    Rule("d.params", D, "Parameter shape:", "flat maps; scalars strings; allow/allowOrigins lists of strings"),
    Rule("d.wildcard", D, "Wildcard hosts in route matches cover one or more labels",
         "*.example.com matches a.b.example.com"),
    Rule("d.default-backend", D, "The Ingress defaultBackend becomes a route with no host and no path",
         "a route with an empty match takes any request"),
    Rule("d.own-matches", D, "A rule that cannot be honoured answers 500 only for its own matches",
         "a directResponse route answers only what it matches"),
    # -- Behavior that differs ---------------------------------------------------------------
    Rule("b.404", B, "Gateways of one class share one data plane",
         "no route matches: 404, never forwarded to the host the client named"),
    Rule("b.append", B, "add in a header modifier joins values with",
         "foo + bar -> `foo, bar`; repeated lines collapse into one; Set-Cookie keeps its own line"),
    Rule("b.global", B, "Routes are global across listeners", "routes are not matched by listener port"),
    Rule("b.invalid-share", B, "A mix of valid and invalid backends answers 503",
         "the share of an empty cluster answers 503"),
    Rule("b.header-case", B, "Header names match case-insensitively", "and so do Exact header values"),
    # -- Ingress annotations -----------------------------------------------------------------
    Rule("i.rewrite-target", ING, "titanium.io/rewrite-target",
         "PathRegexReplace of the matched prefix; the query string is kept"),
    Rule("i.proxy-read-timeout", ING, "titanium.io/proxy-read-timeout",
         "httpClient.requestTimeout: the wait for the response headers"),
    Rule("i.proxy-body-size", ING, "titanium.io/proxy-body-size",
         "Content-Length checked; chunked not checked; 413"),
    Rule("i.backend-protocol", ING, "titanium.io/backend-protocol",
         "HTTPS: TLS to the backend, certificate validated"),
    Rule("i.h2", ING, "titanium.io/backend-protocol",
         "H2C and GRPC: HTTP/2 to the backend when the client speaks HTTP/2"),
    Rule("i.affinity", ING, "titanium.io/affinity", "an opaque cookie named titanium-affinity pins a client"),
    Rule("i.load-balance", ING, "titanium.io/load-balance", "the cluster algorithm"),
    Rule("i.whitelist", ING, "titanium.io/whitelist-source-range", "socket peer outside: 403"),
    Rule("i.limit-rps", ING, "titanium.io/limit-rps",
         "per client address and per Ingress, 1 s fixed window, 429 with Retry-After"),
    Rule("i.cors", ING, "titanium.io/cors-allow-origin", "preflight only; the actual response untouched"),
    Rule("i.auth-url", ING, "titanium.io/auth-url", "GET subrequest; 2xx admits; relayed; fails closed 503"),
    Rule("i.canary", ING, "titanium.io/canary", "weighted route clusters"),
    Rule("i.canary-weight", ING, "titanium.io/canary-weight", "the canary's share of requests"),
    Rule("i.canary-by-header", ING, "titanium.io/canary-by-header",
         "a header match route to the canary (value always)"),
    Rule("i.upstream-tls-secret", ING, "titanium.io/upstream-tls-secret",
         "ca.crt trust anchors, tls.crt/tls.key client certificate"),
]

RULES: dict[str, Rule] = {r.id: r for r in _RULES}
assert len(RULES) == len(_RULES), "duplicate rule id"

#: Rules the reference data plane does not implement, with the reason (also in docs/reference-dataplane.md).
KNOWN_GAPS: dict[str, str] = {}

#: Spec items that concern the render, the chart or the controller, not the data plane.
NOT_DATA_PLANE: dict[str, str] = {
    "Port map:": "the render maps ports and reports listener conditions",
    "An Ingress whose legacy": "which Ingresses the controller owns",
    "The chart lives at": "the chart's path",
    "A listener with a mix of supported and unsupported allowedRoutes.kinds": "listener status",
    "Privileged ports are mapped": "the render's port map and the Service",
    "titanium.io/ssl-redirect": "rejected by the controller (no data-plane feature)",
}

#: rule id -> the test cases that cover it (filled at import of the test modules)
COVERED: dict[str, list[str]] = defaultdict(list)


@dataclass(frozen=True)
class Row:
    """One row of a table test: the rule it checks, a name, and the case's values."""

    rule: str
    name: str
    args: tuple[Any, ...] = field(default=())

    def __init__(self, rule: str, name: str, *args: Any) -> None:
        object.__setattr__(self, "rule", rule)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", args)


def _register(rule: str, where: str) -> None:
    COVERED[rule].append(where)


def rows(*table: Row) -> Callable:
    """Parametrize a test over ``table``: the test receives ``row`` (a :class:`Row`)."""

    def wrap(fn: Callable) -> Callable:
        for r in table:
            _register(r.rule, f"{fn.__module__}.{fn.__name__}[{r.rule}:{r.name}]")
        return pytest.mark.parametrize("row", table, ids=[f"{r.rule}:{r.name}" for r in table])(fn)

    return wrap


def covers(*rule_ids: str) -> Callable:
    """Mark a single test as covering these rules."""

    def wrap(fn: Callable) -> Callable:
        for rid in rule_ids:
            _register(rid, f"{fn.__module__}.{fn.__name__}")
        return fn

    return wrap
