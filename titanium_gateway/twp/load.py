"""The only reader of the twp format: ``twp.yaml`` and its parts -> :mod:`.model` values.

:func:`load_config` parses the root bytes, then every ``include``d part in list order
(``read_part(file) -> bytes | None``), checks each part's sha256, treats the routes and
clusters of all parts as one list, and validates every field against the contract
(docs/contract.md): a field it does not know, a value of the wrong type, a reference to a
cluster that does not exist, two routes with one ``order``... is a :class:`ConfigError`
naming the file and the position. A part that is missing or whose sha256 differs raises
:class:`PartNotReady` (the data plane keeps its previous config and retries). No I/O here.

What it gives is the :class:`~titanium_gateway.twp.model.Document` the render writes (routes
in ascending ``order``, clusters by id; the provenance of a route or cluster is unknown),
inside a :class:`Config` that adds what only a loaded file has (its schema version, parts,
hash and each route's written ``order``). :func:`read_document`, :func:`read_route` and
:func:`read_cluster` read already-parsed data with the same checks (tests, tools).

The values keep the document's text (a TimeSpan, a CIDR, a regular expression are strings);
:func:`timespan_seconds` and :func:`titanium_gateway.twp.regex.compiled` read them once
validated (cached).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn

import yaml

from titanium_gateway.twp import model as m
from titanium_gateway.twp import params
from titanium_gateway.twp.params import timespan_seconds
from titanium_gateway.twp.regex import compiled

ROOT_FILE = "twp.yaml"
# What the reader allows, requires and accepts of each object is the model's declaration (the
# classes' ``DOC``, which ``twp/schema.json`` is generated from); the checks the schema cannot
# state (an IP address, a header name, a regular expression that compiles...) are here.
_DOC, _SPLIT, _PART = m.Document.DOC, m.Document.SPLIT, m.Document.PART
_CERTIFICATES = _DOC["certificates"].schema
_LISTENER, _CERTIFICATE, _INCLUDE = m.Listener.DOC, m.Certificate.DOC, m.Include.DOC
_MATCH, _ROUTE, _MIRROR, _LIMITS = m.Match.DOC, m.Route.DOC, m.Mirror.DOC, m.Limits.DOC
_WEIGHTED, _REDIRECT, _DIRECT = m.WeightedCluster.DOC, m.Redirect.DOC, m.DirectResponse.DOC
_CLUSTER, _DESTINATION, _AFFINITY = m.Cluster.DOC, m.Destination.DOC, m.SessionAffinity.DOC
_HTTP_CLIENT, _TLS, _SAN = m.HttpClient.DOC, m.UpstreamTls.DOC, m.SubjectAltName.DOC
_PART_FILE = re.compile(m.PART_FILE_PATTERN)
_SHA256 = re.compile(m.SHA256_PATTERN)
_HOST = re.compile(m.HOST_PATTERN)
_HEADER_NAME = params.HEADER_NAME_PATTERN
_METHOD = _HEADER_NAME  # an RFC 9110 token
PATH_KINDS: tuple[str, ...] = _MATCH["pathKind"].values
ALGORITHMS: tuple[str, ...] = _CLUSTER["algorithm"].values
_LISTENER_TYPE = _LISTENER["type"].values[0]
_LISTENER_PORT, _MATCH_PORT = _LISTENER["port"].range(), _MATCH["ports"].item().range()
_ORDER, _WEIGHT = _ROUTE["order"].range(), _WEIGHTED["weight"].range()
_ANY_INT = (-(2**63), 2**63 - 1)
_STATUS_CODES, _SCHEMES = _REDIRECT["statusCode"].values, _REDIRECT["scheme"].values
_STATUS_CODES_TEXT = " or ".join(map(str, _STATUS_CODES))
_SCHEMES_TEXT = " or ".join(_SCHEMES)
_REDIRECT_PORT, _DIRECT_STATUS = _REDIRECT["port"].range(), _DIRECT["status"].range()
_PERCENT = _MIRROR["percent"].schema
_PERCENT_TEXT = f"a number from {_PERCENT['minimum']} to {_PERCENT['maximum']}"
_DESTINATION_PORT, _DESTINATION_WEIGHT = _DESTINATION["port"].range(), _DESTINATION["weight"].range()
_AFFINITY_POLICY = _AFFINITY["policy"].values[0]
_SAN_TYPES = _SAN["type"].values
_SAN_TYPES_TEXT = " or ".join(_SAN_TYPES)
#: transform and policy kinds -> their classes
TRANSFORMS: Mapping[str, type[Any]] = MappingProxyType({cls.KIND: cls for cls in m.TRANSFORM_KINDS})
POLICIES: Mapping[str, type[Any]] = MappingProxyType({cls.KIND: cls for cls in m.POLICY_KINDS})

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ConfigError(ValueError):
    """The config cannot be loaded: ``source`` (file), ``where`` (position), ``reason``."""

    def __init__(self, source: str, where: str, reason: str) -> None:
        self.source, self.where, self.reason = source, where, reason
        super().__init__(f"{source}: {where}: {reason}" if where else f"{source}: {reason}")


class PartNotReady(ConfigError):
    """An included part is missing or its sha256 differs: not loaded yet (retry later)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


Include = m.Include


@dataclass(frozen=True)
class Config:
    """One loaded config: the :class:`~titanium_gateway.twp.model.Document` of the root
    ``twp.yaml`` with the routes and clusters of its parts, and what only a file has."""

    document: m.Document
    schema_version: str = m.SCHEMA_VERSION
    include: tuple[Include, ...] = ()
    config_hash: str = ""  # lowercase hex SHA-256 of the root bytes
    #: each route's ``order`` as written (ascending, like ``document.routes``)
    orders: tuple[int, ...] = ()
    #: the clusters by id
    clusters: Mapping[str, m.Cluster] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def listeners(self) -> tuple[m.Listener, ...]:
        return self.document.listeners

    @property
    def certificates(self) -> tuple[m.Certificate, ...]:
        return self.document.certificates

    @property
    def routes(self) -> tuple[m.Route, ...]:
        return self.document.routes

    def cluster(self, cluster_id: str) -> m.Cluster:
        return self.clusters[cluster_id]

    def route(self, route_id: str) -> m.Route | None:
        for r in self.routes:
            if r.id == route_id:
                return r
        return None

    def order(self, route: m.Route) -> int:
        """The ``order`` the document gives ``route`` (one of its routes)."""
        for i, r in enumerate(self.routes):
            if r is route:
                return self.orders[i]
        raise ValueError(f"route {route.id} is not one of this config's")

    @property
    def listener_keys(self) -> frozenset[tuple[str, int, bool]]:
        """What binding the listeners means (a change of the set rolls the pods)."""
        return frozenset((x.host, x.port, x.decrypt_ssl) for x in self.listeners)

    @property
    def files(self) -> tuple[str, ...]:
        """Every file the config names besides the parts (PFX and upstream TLS files)."""
        names: list[str] = [c.file for c in self.certificates]
        for cluster in self.clusters.values():
            tls = cluster.http_client.tls if cluster.http_client is not None else None
            if tls is not None:
                names.extend(n for n in (tls.ca_file, tls.cert_file, tls.key_file) if n)
        return tuple(dict.fromkeys(names))


def parse_yaml(data: bytes, source: str) -> Any:
    """One YAML document; a syntax error becomes a ConfigError with line and column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(source, f"byte {exc.start}", "not UTF-8") from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(source, where, f"invalid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, "", f"invalid YAML: {exc}") from None


class _Ctx:
    """The file being read, for messages. ``strict``: the contract's checks of the values too
    (ranges, names, durations, regular expressions, references); without, only the document's
    shape and the values' types (what the model can hold, e.g. a generated document)."""

    def __init__(self, source: str, strict: bool = True) -> None:
        self.source = source
        self.strict = strict

    def check(self, ok: bool, where: str, reason: str) -> None:
        """A check of the contract (``strict`` only)."""
        if self.strict and not ok:
            self.fail(where, reason)

    def fail(self, where: str, reason: str) -> NoReturn:
        raise ConfigError(self.source, where, reason)

    # -- typed reads --------------------------------------------------------------------
    def mapping(self, value: Any, where: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            self.fail(where, f"expected a mapping, got {_type(value)}")
        for key in value:
            if key not in allowed:
                self.fail(f"{where}.{key}" if where else str(key), "unknown field")
        for key in required:
            if key not in value:
                self.fail(where, f"missing required field {key!r}")
        return value

    def seq(self, value: Any, where: str) -> list:
        if not isinstance(value, list):
            self.fail(where, f"expected a list, got {_type(value)}")
        return value

    def string(self, value: Any, where: str, *, nonempty: bool = True) -> str:
        if not isinstance(value, str):
            self.fail(where, f"expected a string, got {_type(value)}")
        self.check(not nonempty or bool(value), where, "must not be empty")
        return value

    def integer(self, value: Any, where: str, lo: int, hi: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, f"expected an integer, got {_type(value)}")
        self.check(lo <= value <= hi, where, f"{value} is out of range {lo}..{hi}")
        return value

    def boolean(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            self.fail(where, f"expected true or false, got {_type(value)}")
        return value

    def timespan(self, value: Any, where: str) -> str:
        text = self.string(value, where)
        if not self.strict:
            return text
        try:
            total = timespan_seconds(text)
        except ValueError as exc:
            self.fail(where, str(exc))
        if total <= 0:
            self.fail(where, "a zero duration is never emitted (the field is omitted instead)")
        return text

    def str_map(self, value: Any, where: str) -> dict[str, str]:
        mp = self.mapping(value, where, tuple(value) if isinstance(value, dict) else ())
        for k, v in mp.items():
            self.string(k, f"{where} key", nonempty=True)
            self.string(v, f"{where}.{k}", nonempty=False)
        return mp

    def regex(self, value: Any, where: str) -> str:
        text = self.string(value, where)
        if not self.strict:
            return text
        try:
            compiled(text)
        except re.error as exc:
            self.fail(where, f"the regular expression does not compile: {exc}")
        return text

    def params(self, value: Any, where: str, names: tuple[str, ...], lists: tuple[str, ...] = ()) -> dict:
        """A flat parameters map: every scalar a string, ``lists`` lists of strings."""
        params = self.mapping(value, where, names + lists, names + lists)
        for k in names:
            self.string(params[k], f"{where}.{k}", nonempty=False)
        for k in lists:
            items = self.seq(params[k], f"{where}.{k}")
            self.check(bool(items), f"{where}.{k}", "must not be empty")
            for i, item in enumerate(items):
                self.string(item, f"{where}.{k}[{i}]")
        return params


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _lower(ctx: _Ctx, name: str) -> str:
    """A host or header name as the data plane compares it (``strict``; else as written)."""
    return name.lower() if ctx.strict else name


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _cluster_id(cluster: m.Cluster) -> str:
    return cluster.id


# -- document parts ---------------------------------------------------------------------------
def _listener(ctx: _Ctx, raw: Any, where: str) -> m.Listener:
    d = ctx.mapping(raw, where, _LISTENER.keys, _LISTENER.read_required)
    host = ctx.string(d["host"], f"{where}.host")
    ctx.check(_is_address(host), f"{where}.host", f"{host!r} is not an IP address")
    if d["type"] != _LISTENER_TYPE:
        ctx.fail(f"{where}.type", f"{d['type']!r} is not {_LISTENER_TYPE!r}")
    return m.Listener(ctx.integer(d["port"], f"{where}.port", *_LISTENER_PORT),
                      ctx.boolean(d["decryptSsl"], f"{where}.decryptSsl"), host)


def _certificate(ctx: _Ctx, raw: Any, where: str) -> m.Certificate:
    d = ctx.mapping(raw, where, _CERTIFICATE.keys, _CERTIFICATE.read_required)
    file = _file_name(ctx, d["file"], f"{where}.file")
    hosts = tuple(_lower(ctx, ctx.string(h, f"{where}.hosts[{i}]"))
                  for i, h in enumerate(ctx.seq(d["hosts"], f"{where}.hosts")))
    default = ctx.boolean(d.get("default", False), f"{where}.default")
    return m.Certificate(file, hosts, default)


def _file_name(ctx: _Ctx, value: Any, where: str) -> str:
    name = ctx.string(value, where)
    ctx.check(not ("/" in name or "\\" in name or name in (".", "..") or name.startswith("..")), where,
              f"{name!r} is not a file name in the config directory")
    return name


def _match(ctx: _Ctx, raw: Any, where: str) -> tuple[str | None, tuple[int, ...], m.Match]:
    """(the match host, its ports, the rest of the match)."""
    d = ctx.mapping(raw, where, _MATCH.keys, _MATCH.read_required)
    host = None
    if "host" in d:
        host = _lower(ctx, ctx.string(d["host"], f"{where}.host"))
        ctx.check(bool(_HOST.match(host)), f"{where}.host", f"{host!r} is not a host name or *.wildcard")
    ports: tuple[int, ...] = ()
    if "ports" in d:
        listed = [ctx.integer(p, f"{where}.ports[{i}]", *_MATCH_PORT)
                  for i, p in enumerate(ctx.seq(d["ports"], f"{where}.ports"))]
        ctx.check(bool(listed), f"{where}.ports", "must not be empty (absent: every listener)")
        ctx.check(len(set(listed)) == len(listed), f"{where}.ports", "lists a port twice")
        ports = tuple(listed)
    ctx.check(("path" in d) == ("pathKind" in d), where, "path and pathKind come together")
    path = ctx.string(d["path"], f"{where}.path") if "path" in d else None
    kind = ctx.string(d["pathKind"], f"{where}.pathKind") if "pathKind" in d else None
    if kind is not None:
        ctx.check(kind in PATH_KINDS, f"{where}.pathKind", f"{kind!r} is not one of {', '.join(PATH_KINDS)}")
        if kind == "Regex" and path is not None:
            ctx.regex(path, f"{where}.path")
    method = None
    if "method" in d:
        method = ctx.string(d["method"], f"{where}.method")
        ctx.check(bool(_METHOD.match(method)), f"{where}.method", f"{method!r} is not an HTTP method")
    headers: dict[str, str] = {}
    for name, value in ctx.str_map(d.get("headers", {}), f"{where}.headers").items():
        ctx.check(bool(_HEADER_NAME.match(name)), f"{where}.headers.{name}", "not a header name")
        headers.setdefault(_lower(ctx, name), value)  # the first of equivalent names counts
    query = ctx.str_map(d.get("query", {}), f"{where}.query")
    query_regex = {k: ctx.regex(v, f"{where}.queryRegex.{k}")
                   for k, v in ctx.str_map(d.get("queryRegex", {}), f"{where}.queryRegex").items()}
    return host, ports, m.Match(path, kind, method, tuple(headers.items()), tuple(query.items()),
                                tuple(query_regex.items()))


def _kind_item(ctx: _Ctx, raw: Any, where: str, kinds: Mapping[str, type[Any]], what: str) -> Any:
    """A transform or policy: ``{kind, parameters}``, each parameter a string (an int field in
    decimal, a tuple field a non-empty list of strings), checked by the rules its class declares
    for its fields (:mod:`.params`)."""
    d = ctx.mapping(raw, where, params.KIND_KEYS, params.KIND_KEYS)
    kind, pw = d["kind"], f"{where}.parameters"
    cls = kinds.get(kind) if isinstance(kind, str) else None
    if cls is None:
        ctx.fail(f"{where}.kind", f"unknown {what} kind {kind!r}")
    layout = params.layout(cls)
    p = ctx.params(d["parameters"], pw, tuple(x.key for x in layout if x.type is not tuple),
                   tuple(x.key for x in layout if x.type is tuple))
    values = []
    for x in layout:
        v, pk = p[x.key], f"{pw}.{x.key}"
        if x.type is int:
            values.append(_decimal(ctx, v, pk, x.rule.minimum))
            continue
        check = x.rule.check
        if x.type is tuple:
            if check is not None and ctx.strict:
                for i, item in enumerate(v):
                    reason = check(item)
                    if reason is not None:
                        ctx.fail(f"{pk}[{i}]", reason)
            values.append(tuple(v))
            continue
        if check is not None and ctx.strict:
            reason = check(v)
            if reason is not None:
                ctx.fail(pk, reason)
        values.append(v)
    return cls(*values)


def _abs_path(ctx: _Ctx, value: Any, where: str) -> str:
    text = ctx.string(value, where)
    ctx.check(text.startswith("/"), where, f"{text!r} does not start with /")
    return text


def _decimal(ctx: _Ctx, text: str, where: str, lo: int) -> int:
    if not re.fullmatch(r"[0-9]+" if ctx.strict else r"-?[0-9]+", text):
        ctx.fail(where, f"{text!r} is not a decimal number")
    value = int(text)
    ctx.check(value >= lo, where, f"{value} is less than {lo}")
    return value


_ROUTE_FIELDS = _ROUTE.keys
_ROUTE_REQUIRED = _ROUTE.read_required
_ROUTE_REQUIRED_UNORDERED = tuple(k for k in _ROUTE_REQUIRED if k != "order")
_ACTIONS = tuple(a.KEY for a in m.ACTION_KINDS)


def _route(ctx: _Ctx, raw: Any, where: str, *, ordered: bool = True) -> tuple[int, m.Route]:
    """(its ``order``, the route); ``ordered=False``: an item whose ``order`` may be absent (0)."""
    d = ctx.mapping(raw, where, _ROUTE_FIELDS, _ROUTE_REQUIRED if ordered else _ROUTE_REQUIRED_UNORDERED)
    rid = ctx.string(d["id"], f"{where}.id")
    where = f"{where} ({rid})"
    order = ctx.integer(d["order"], f"{where}.order", *_ORDER) if "order" in d else 0
    actions = [a for a in _ACTIONS if a in d]
    if len(actions) != 1:
        ctx.fail(where, f"needs exactly one action of {', '.join(_ACTIONS)}, has {len(actions)}")
    action: m.Action
    if "clusterId" in d:
        action = m.Forward(ctx.string(d["clusterId"], f"{where}.clusterId"))
    elif "clusters" in d:
        items = ctx.seq(d["clusters"], f"{where}.clusters")
        ctx.check(bool(items), f"{where}.clusters", "must not be empty")
        wcs = []
        for i, item in enumerate(items):
            iw = f"{where}.clusters[{i}]"
            c = ctx.mapping(item, iw, _WEIGHTED.keys, _WEIGHTED.read_required)
            wcs.append(m.WeightedCluster(ctx.string(c["clusterId"], f"{iw}.clusterId"),
                                         ctx.integer(c["weight"], f"{iw}.weight", *_WEIGHT)))
        action = m.Split(tuple(wcs))
    elif "redirect" in d:
        rw = f"{where}.redirect"
        r = ctx.mapping(d["redirect"], rw, _REDIRECT.keys, _REDIRECT.read_required)
        status = ctx.integer(r["statusCode"], f"{rw}.statusCode", *_ANY_INT)
        ctx.check(status in _STATUS_CODES, f"{rw}.statusCode", f"{status!r} is not {_STATUS_CODES_TEXT}")
        scheme = ctx.string(r["scheme"], f"{rw}.scheme") if "scheme" in r else None
        ctx.check(scheme is None or scheme in _SCHEMES, f"{rw}.scheme", f"{scheme!r} is not {_SCHEMES_TEXT}")
        port = ctx.integer(r["port"], f"{rw}.port", *_REDIRECT_PORT) if "port" in r else None
        path = _abs_path(ctx, r["path"], f"{rw}.path") if "path" in r else None
        action = m.Redirect(status_code=status, scheme=scheme, host=ctx.string(r["host"], f"{rw}.host"),
                            port=port, path=path)
    else:
        dw = f"{where}.directResponse"
        r = ctx.mapping(d["directResponse"], dw, _DIRECT.keys, _DIRECT.read_required)
        action = m.DirectResponse(ctx.integer(r["status"], f"{dw}.status", *_DIRECT_STATUS),
                                  ctx.string(r["body"], f"{dw}.body", nonempty=False))
    mirror = None
    if "mirror" in d:
        mw = f"{where}.mirror"
        r = ctx.mapping(d["mirror"], mw, _MIRROR.keys, _MIRROR.read_required)
        percent = r.get("percent", 100.0)
        if isinstance(percent, bool) or not isinstance(percent, (int, float)):
            ctx.fail(f"{mw}.percent", f"{percent!r} is not {_PERCENT_TEXT}")
        ctx.check(_PERCENT["minimum"] <= percent <= _PERCENT["maximum"], f"{mw}.percent",
                  f"{percent!r} is not {_PERCENT_TEXT}")
        mirror = m.Mirror(ctx.string(r["clusterId"], f"{mw}.clusterId"), float(percent))
    transforms = tuple(_kind_item(ctx, t, f"{where}.transforms[{i}]", TRANSFORMS, "transform")
                       for i, t in enumerate(ctx.seq(d.get("transforms", []), f"{where}.transforms")))
    policies = tuple(_kind_item(ctx, p, f"{where}.policies[{i}]", POLICIES, "policy")
                     for i, p in enumerate(ctx.seq(d.get("policies", []), f"{where}.policies")))
    limits = None
    if "limits" in d:
        lim = ctx.mapping(d["limits"], f"{where}.limits", _LIMITS.keys, _LIMITS.read_required)
        limits = m.Limits(ctx.timespan(lim["requestTimeout"], f"{where}.limits.requestTimeout"))
    host, ports, match = _match(ctx, d["match"], f"{where}.match")
    behavior = m.Behavior(action, mirror, transforms, policies, limits)
    return order, m.Route(rid, host, match, behavior, "", m.UNKNOWN_SOURCE, -1, -1, ports)


def _cluster(ctx: _Ctx, raw: Any, where: str) -> m.Cluster:
    d = ctx.mapping(raw, where, _CLUSTER.keys, _CLUSTER.read_required)
    cid = ctx.string(d["id"], f"{where}.id")
    where = f"{where} ({cid})"
    algorithm = ctx.string(d["algorithm"], f"{where}.algorithm") if "algorithm" in d else None
    ctx.check(algorithm is None or algorithm in ALGORITHMS, f"{where}.algorithm",
              f"{algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    dests = []
    seen: set[str] = set()
    for i, raw_dest in enumerate(ctx.seq(d["destinations"], f"{where}.destinations")):
        dw = f"{where}.destinations[{i}]"
        x = ctx.mapping(raw_dest, dw, _DESTINATION.keys, _DESTINATION.read_required)
        did = ctx.string(x["id"], f"{dw}.id")
        ctx.check(did not in seen, f"{dw}.id", f"duplicate destination id {did!r}")
        seen.add(did)
        address = ctx.string(x["address"], f"{dw}.address")
        dests.append(m.Destination(did, address, ctx.integer(x["port"], f"{dw}.port", *_DESTINATION_PORT),
                                   ctx.integer(x.get("weight", 1), f"{dw}.weight", *_DESTINATION_WEIGHT),
                                   ctx.boolean(x.get("useHttps", False), f"{dw}.useHttps")))
    affinity = None
    if "sessionAffinity" in d:
        aw = f"{where}.sessionAffinity"
        a = ctx.mapping(d["sessionAffinity"], aw, _AFFINITY.keys, _AFFINITY.read_required)
        policy = ctx.string(a["policy"], f"{aw}.policy")
        ctx.check(policy == _AFFINITY_POLICY, f"{aw}.policy", f"{policy!r} is not {_AFFINITY_POLICY!r}")
        name = ctx.string(a["name"], f"{aw}.name")
        ctx.check(bool(_HEADER_NAME.match(name)), f"{aw}.name", f"{name!r} is not a cookie name")
        affinity = m.SessionAffinity(policy, name)
    client = None
    if "httpClient" in d:
        hw = f"{where}.httpClient"
        h = ctx.mapping(d["httpClient"], hw, _HTTP_CLIENT.keys, _HTTP_CLIENT.read_required)
        timeout = ctx.timespan(h["requestTimeout"], f"{hw}.requestTimeout") if "requestTimeout" in h else None
        tls = None
        if "tls" in h:
            tls = _upstream_tls(ctx, h["tls"], f"{hw}.tls")
        client = m.HttpClient(timeout, tls)
    return m.Cluster(id=cid, algorithm=algorithm, destinations=tuple(dests), session_affinity=affinity,
                     http_client=client)


def _upstream_tls(ctx: _Ctx, raw: Any, where: str) -> m.UpstreamTls:
    t = ctx.mapping(raw, where, _TLS.keys, _TLS.read_required)
    files = {k: _file_name(ctx, t[k], f"{where}.{k}") if k in t else None for k in ("caFile", "certFile", "keyFile")}
    ctx.check((files["certFile"] is None) == (files["keyFile"] is None), where, "certFile and keyFile come together")
    server_name = ctx.string(t["serverName"], f"{where}.serverName") if "serverName" in t else None
    sans = None
    if "subjectAltNames" in t:
        names = []
        for i, raw_name in enumerate(ctx.seq(t["subjectAltNames"], f"{where}.subjectAltNames")):
            nw = f"{where}.subjectAltNames[{i}]"
            n = ctx.mapping(raw_name, nw, _SAN.keys, _SAN.read_required)
            kind = ctx.string(n["type"], f"{nw}.type")
            ctx.check(kind in _SAN_TYPES, f"{nw}.type", f"{kind!r} is not {_SAN_TYPES_TEXT}")
            names.append(m.SubjectAltName(kind, ctx.string(n["value"], f"{nw}.value")))
        ctx.check(bool(names), f"{where}.subjectAltNames", "an empty list")
        sans = tuple(names)
    system_roots = ctx.boolean(t["systemRoots"], f"{where}.systemRoots") if "systemRoots" in t else None
    ctx.check(not (system_roots and files["caFile"]), where, "caFile and systemRoots: true exclude each other")
    return m.UpstreamTls(files["caFile"], files["certFile"], files["keyFile"], server_name, sans, system_roots)


# -- the whole config -------------------------------------------------------------------------
def _schema_version(ctx: _Ctx, value: Any) -> str:
    text = ctx.string(value, "schemaVersion")
    if not re.fullmatch(r"7\.[0-9]+", text):
        ctx.fail("schemaVersion", f"{text!r} is not a 7.x schema version")
    return text


Items = list[tuple[_Ctx, Any, str]]


@dataclass(frozen=True)
class _Read:
    """A route item read before (a :class:`RouteCache` hit): its order and route."""

    order: int
    route: m.Route


class RouteCache:
    """The routes of the last documents read, by their item's text without its ``order`` line.

    A reader of one document after the other (the data plane, after each change) passes the same
    cache to :func:`load_config`: an item whose text it has read before (only the ``order`` of
    the routes after an inserted one moves) is not parsed and checked again; only new texts
    are. It holds the items of the last load only. A document not in the render's layout (route
    items as ``- `` lines at column 0 under ``routes:``, each with one ``  order: N`` line) is
    read whole, as without a cache; so is one whose items do not parse alone, which gives the
    usual message for its error."""

    def __init__(self) -> None:
        self._routes: dict[str, m.Route] = {}
        self._next: dict[str, m.Route] = {}

    def _done(self) -> None:
        self._routes, self._next = self._next, {}


_BLOCK_END = re.compile(r"^(?!- |  )", re.M)  # the first line that is not part of a list item
_TOP_KEY = re.compile(r"[A-Za-z]")


def _split_routes(text: str) -> tuple[str, list[tuple[int, str, str]]] | None:
    """``(the text with its route items left out, [(order, key, item text)])`` of a document in
    the render's layout (each item's second line its ``order``); None otherwise."""
    if text.startswith("routes:\n"):
        start = 0
    else:
        start = text.find("\nroutes:\n") + 1
        if start == 0:
            return None
    body = start + len("routes:\n")
    found = _BLOCK_END.search(text, body)
    end = found.start() if found else len(text)
    if end < len(text) and not _TOP_KEY.match(text, end):
        return None  # a comment, a blank line, another indentation: not the render's layout
    block = text[body:end]
    items: list[tuple[int, str, str]] = []
    if block:
        if not block.startswith("- ") or not block.endswith("\n"):
            return None
        pieces = block[2:-1].split("\n- ")
        for piece in pieces:
            first, _, rest = piece.partition("\n")
            second, _, rest = rest.partition("\n")
            if not second.startswith("  order: "):
                return None
            try:
                order = int(second[9:])
            except ValueError:
                return None
            tail = f"\n{rest}\n" if rest else "\n"
            items.append((order, f"- {first}{tail}", f"- {first}\n{second}{tail}"))
    return text[:start] + "routes: []\n" + text[end:], items


def _cached_routes(ctx: _Ctx, data: bytes, source: str, cache: RouteCache) -> tuple[Any, Items] | None:
    """The document without its routes, parsed, and its route items (read or from the cache);
    None where the cache cannot help (read the document whole)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    split = _split_routes(text)
    if split is None:
        return None
    rest, items = split
    try:
        doc = yaml.load(rest, Loader=_Loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        return None
    out: Items = []
    for i, (order, key, item) in enumerate(items):
        where = f"routes[{i}]"
        route = cache._routes.get(key) or cache._next.get(key)
        if route is None:
            try:
                parsed = yaml.load(item, Loader=_Loader)  # noqa: S506 (a safe loader)
            except yaml.YAMLError:
                return None
            if not (isinstance(parsed, list) and len(parsed) == 1):
                return None
            try:
                read_order, route = _route(ctx, parsed[0], where)
            except ConfigError:
                return None  # read whole: the message as without a cache
            if read_order != order:
                return None
        cache._next[key] = route
        out.append((ctx, _Read(order, route), where))
    return doc, out


def _head(ctx: _Ctx, doc: Any, split: bool) -> tuple[str, tuple[m.Listener, ...], tuple[m.Certificate, ...]]:
    shape = _SPLIT if split else _DOC
    ctx.mapping(doc, "", shape.keys, _DOC.read_required)
    version = _schema_version(ctx, doc["schemaVersion"])
    listeners = tuple(_listener(ctx, x, f"listeners[{i}]")
                      for i, x in enumerate(ctx.seq(doc.get("listeners", []), "listeners")))
    ports = [x.port for x in listeners]
    ctx.check(len(set(ports)) == len(ports), "listeners", "two listeners on one port")
    certs_doc = ctx.mapping(doc.get("certificates", {"items": []}), "certificates", _CERTIFICATES.keys,
                            _CERTIFICATES.read_required)
    certificates = tuple(_certificate(ctx, x, f"certificates.items[{i}]")
                         for i, x in enumerate(ctx.seq(certs_doc["items"], "certificates.items")))
    ctx.check(sum(1 for c in certificates if c.default) <= 1, "certificates.items",
              "more than one item has default: true")
    return version, listeners, certificates


def _items(ctx: _Ctx, doc: Mapping[str, Any]) -> tuple[Items, Items]:
    return ([(ctx, x, f"routes[{i}]") for i, x in enumerate(ctx.seq(doc.get("routes", []), "routes"))],
            [(ctx, x, f"clusters[{i}]") for i, x in enumerate(ctx.seq(doc.get("clusters", []), "clusters"))])


def _part(name: str, part: Any, strict: bool = True) -> tuple[Items, Items]:
    pctx = _Ctx(name, strict)
    pctx.mapping(part, "", _PART.keys, _PART.read_required)
    return _items(pctx, part)


def _assemble(version: str, listeners: tuple[m.Listener, ...], certificates: tuple[m.Certificate, ...],
              raw_routes: Items, raw_clusters: Items, includes: tuple[Include, ...], config_hash: str,
              strict: bool = True) -> Config:
    """The routes and clusters of every file as one list, checked together."""
    clusters: dict[str, m.Cluster] = {}
    cluster_list: list[m.Cluster] = []
    for c_ctx, raw, where in raw_clusters:
        cluster = _cluster(c_ctx, raw, where)
        c_ctx.check(cluster.id not in clusters, where, f"duplicate cluster id {cluster.id!r}")
        clusters.setdefault(cluster.id, cluster)
        cluster_list.append(cluster)
    routes: list[tuple[int, m.Route]] = []
    listener_ports = {x.port for x in listeners}
    ids: set[str] = set()
    orders: set[int] = set()
    for r_ctx, raw, where in raw_routes:
        order, route = (raw.order, raw.route) if isinstance(raw, _Read) else _route(r_ctx, raw, where)
        r_ctx.check(route.id not in ids, where, f"duplicate route id {route.id!r}")
        r_ctx.check(order not in orders, where, f"duplicate order {order} (route {route.id})")
        ids.add(route.id)
        orders.add(order)
        behavior = route.behavior
        named = list(m.cluster_ids(behavior.action))
        if behavior.mirror is not None:
            named.append(behavior.mirror.cluster_id)
        for cid in named:
            r_ctx.check(cid in clusters, where, f"names cluster {cid!r}, which the config does not define")
        for port in route.ports:
            r_ctx.check(port in listener_ports, where, f"match.ports names port {port}, which no listener has")
        routes.append((order, route))
    routes.sort(key=lambda item: item[0])  # (stable: a document read without checks keeps its equal orders)
    # by id (a document read without checks keeps its clusters as they are: the render writes them by id)
    if strict:
        cluster_list.sort(key=_cluster_id)
    document = m.Document(listeners, certificates, tuple(r for _, r in routes), tuple(cluster_list))
    return Config(document, version, includes, config_hash, tuple(o for o, _ in routes), MappingProxyType(clusters))


def _parse_with(ctx: _Ctx, data: bytes, source: str, cache: RouteCache | None) -> tuple[Any, Items | None]:
    """The parsed document and, with a cache that helps, its route items (then left out of it)."""
    fast = _cached_routes(ctx, data, source, cache) if cache is not None else None
    if fast is not None and isinstance(fast[0], dict):
        return fast
    return parse_yaml(data, source), None


def load_config(root: bytes, read_part: Callable[[str], bytes | None] | Mapping[str, bytes] | None = None,
                source: str = ROOT_FILE, cache: RouteCache | None = None) -> Config:
    """The Config of a root ``twp.yaml`` (bytes) and its parts (see the module docstring);
    ``cache``: see :class:`RouteCache` (the same Config, faster when little changed)."""
    if isinstance(read_part, Mapping):
        read_part = read_part.get
    ctx = _Ctx(source)
    if cache is not None:
        cache._next = {}
    doc, cached = _parse_with(ctx, root, source, cache)
    if doc is None:
        ctx.fail("", "the document is empty")
    split = isinstance(doc, dict) and "include" in doc
    version, listeners, certificates = _head(ctx, doc, split)
    includes: list[Include] = []
    if not split:
        raw_routes, raw_clusters = _items(ctx, doc)
        config = _assemble(version, listeners, certificates, (cached or []) + raw_routes, raw_clusters, (),
                           sha256_hex(root))
        if cache is not None:
            cache._done()
        return config
    entries = ctx.seq(doc["include"], "include")
    if not entries:
        ctx.fail("include", "must not be empty")
    for i, raw in enumerate(entries):
        w = f"include[{i}]"
        e = ctx.mapping(raw, w, _INCLUDE.keys, _INCLUDE.read_required)
        file = ctx.string(e["file"], f"{w}.file")
        if not _PART_FILE.match(file):
            ctx.fail(f"{w}.file", f"{file!r} is not twp.part-<n>.yaml")
        digest = ctx.string(e["sha256"], f"{w}.sha256")
        if not _SHA256.match(digest):
            ctx.fail(f"{w}.sha256", "not a lowercase hex SHA-256")
        includes.append(Include(file, digest))
    raw_routes, raw_clusters = [], []
    for inc in includes:
        data = read_part(inc.file) if read_part is not None else None
        if data is None:
            raise PartNotReady(inc.file, "", "the part is missing (not loaded yet)")
        if sha256_hex(data) != inc.sha256:
            raise PartNotReady(inc.file, "", f"sha256 {sha256_hex(data)[:12]}... differs from the root's "
                                             f"{inc.sha256[:12]}... (not loaded yet)")
        pctx = _Ctx(inc.file)
        part, cached = _parse_with(pctx, data, inc.file, cache)
        routes, clusters = _part(inc.file, part)
        raw_routes += (cached or []) + routes
        raw_clusters += clusters
    config = _assemble(version, listeners, certificates, raw_routes, raw_clusters, tuple(includes), sha256_hex(root))
    if cache is not None:
        cache._done()
    return config


def read_document(root: Mapping[str, Any], parts: Sequence[Mapping[str, Any]] = ()) -> m.Document:
    """A parsed ``twp.yaml`` (and its parts, in include order; the root's ``include`` is not
    checked against them) as a :class:`~titanium_gateway.twp.model.Document`: the document's
    shape and its values' types only, without the contract's checks of the values (what any
    model value is written as reads back as that value; :func:`load_config` checks them too)."""
    ctx = _Ctx(ROOT_FILE, strict=False)
    if not isinstance(root, dict):
        ctx.fail("", f"expected a mapping, got {_type(root)}")
    version, listeners, certificates = _head(ctx, root, "include" in root)
    raw_routes, raw_clusters = _items(ctx, root)
    for n, part in enumerate(parts, start=1):
        routes, clusters = _part(f"twp.part-{n}.yaml", part, strict=False)
        raw_routes += routes
        raw_clusters += clusters
    return _assemble(version, listeners, certificates, raw_routes, raw_clusters, (), "", strict=False).document


def read_route(item: Mapping[str, Any]) -> m.Route:
    """One parsed route (its ``order`` may be absent) as a :class:`~titanium_gateway.twp.model.Route`
    (the shape and types only, as :func:`read_document` reads)."""
    return _route(_Ctx("route", strict=False), item, "route", ordered=False)[1]


def read_cluster(item: Mapping[str, Any]) -> m.Cluster:
    return _cluster(_Ctx("cluster", strict=False), item, "cluster")
