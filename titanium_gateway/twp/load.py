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

import functools
import hashlib
import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn

import yaml

from titanium_gateway.twp import model as m
from titanium_gateway.twp.regex import compiled

ROOT_FILE = "twp.yaml"
_PART_FILE = re.compile(r"^twp\.part-[1-9][0-9]*\.yaml$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TIMESPAN = re.compile(r"^(?:([0-9]+)\.)?([0-9]{2}):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]{3}))?$")
_HOST = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$")
_METHOD = _HEADER_NAME  # an RFC 9110 token
PATH_KINDS = ("Exact", "Prefix", "Regex")
ALGORITHMS = ("RoundRobin", "Random", "LeastRequests", "LeastTime", "PowerOfTwoChoices")
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


@functools.lru_cache(maxsize=4096)
def timespan_seconds(text: str) -> float:
    """A TimeSpan ``[d.]hh:mm:ss[.fff]`` in seconds; raises ValueError when it is not one."""
    t = _TIMESPAN.match(text)
    if t is None:
        raise ValueError(f"{text!r} is not a TimeSpan [d.]hh:mm:ss[.fff]")
    days, hours, minutes, seconds, millis = t.groups()
    return (int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + int(seconds)
            + int(millis or 0) / 1000)


@dataclass(frozen=True)
class Include:
    file: str
    sha256: str


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
    d = ctx.mapping(raw, where, ("host", "port", "type", "decryptSsl"), ("host", "port", "type", "decryptSsl"))
    host = ctx.string(d["host"], f"{where}.host")
    ctx.check(_is_address(host), f"{where}.host", f"{host!r} is not an IP address")
    if d["type"] != "transparent":
        ctx.fail(f"{where}.type", f"{d['type']!r} is not 'transparent'")
    return m.Listener(ctx.integer(d["port"], f"{where}.port", 1, 65535),
                      ctx.boolean(d["decryptSsl"], f"{where}.decryptSsl"), host)


def _certificate(ctx: _Ctx, raw: Any, where: str) -> m.Certificate:
    d = ctx.mapping(raw, where, ("file", "hosts", "default"), ("file", "hosts"))
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
    d = ctx.mapping(raw, where, ("host", "ports", "path", "pathKind", "method", "headers", "query", "queryRegex"))
    host = None
    if "host" in d:
        host = _lower(ctx, ctx.string(d["host"], f"{where}.host"))
        ctx.check(bool(_HOST.match(host)), f"{where}.host", f"{host!r} is not a host name or *.wildcard")
    ports: tuple[int, ...] = ()
    if "ports" in d:
        listed = [ctx.integer(p, f"{where}.ports[{i}]", 1, 65535)
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
    decimal, a tuple field a non-empty list of strings), validated by the kind's own rules."""
    d = ctx.mapping(raw, where, ("kind", "parameters"), ("kind", "parameters"))
    kind, pw = d["kind"], f"{where}.parameters"
    cls = kinds.get(kind) if isinstance(kind, str) else None
    if cls is None:
        ctx.fail(f"{where}.kind", f"unknown {what} kind {kind!r}")
    layout = _layout(cls)
    p = ctx.params(d["parameters"], pw, tuple(k for k, t in layout if t is not tuple),
                   tuple(k for k, t in layout if t is tuple))
    values = []
    for key, t in layout:
        v = p[key]
        values.append(tuple(v) if t is tuple else _decimal(ctx, v, f"{pw}.{key}", _MINIMUM.get((kind, key), 0))
                      if t is int else v)
    check = _CHECKS.get(kind)
    if check is not None and ctx.strict:
        check(ctx, pw, *values)
    return cls(*values)


@functools.cache
def _layout(cls: type[Any]) -> tuple[tuple[str, type], ...]:
    """(document key, str | int | tuple) of each field of a transform or policy class."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        out.append((m.twp_key(f.name), tuple if typing.get_origin(hint) is tuple else hint))
    return tuple(out)


#: the smallest value of an int parameter (otherwise 0)
_MINIMUM = {("RateLimit", "requestsPerSecond"): 1}


def _header(ctx: _Ctx, pw: str, name: str, value: str = "") -> None:
    if not _HEADER_NAME.match(name):
        ctx.fail(f"{pw}.name", f"{name!r} is not a header name")
    if any(c in value for c in "\r\n\0"):
        ctx.fail(f"{pw}.value", "a header value cannot hold CR, LF or NUL")


def _host_set(ctx: _Ctx, pw: str, host: str) -> None:
    ctx.string(host, f"{pw}.host")


def _abs_path(ctx: _Ctx, value: Any, where: str) -> str:
    text = ctx.string(value, where)
    ctx.check(text.startswith("/"), where, f"{text!r} does not start with /")
    return text


def _ip_allow(ctx: _Ctx, pw: str, allow: tuple[str, ...]) -> None:
    for i, text in enumerate(allow):
        try:
            ipaddress.ip_network(text.strip(), strict=False)
        except ValueError:
            ctx.fail(f"{pw}.allow[{i}]", f"{text!r} is not an address or CIDR prefix")


def _ext_auth(ctx: _Ctx, pw: str, url: str, timeout: str) -> None:
    url = ctx.string(url, f"{pw}.url")
    if not re.match(r"^https?://[^/@\s]+(/\S*)?$", url):
        ctx.fail(f"{pw}.url", f"{url!r} is not an absolute http or https URL without credentials")
    ctx.timespan(timeout, f"{pw}.timeout")


#: the checks of a kind's parameters beyond their types
_CHECKS: Mapping[str, Callable[..., None]] = {
    **{k: _header for k in ("RequestHeaderSet", "RequestHeaderAppend", "RequestHeaderRemove", "ResponseHeaderSet",
                            "ResponseHeaderAppend", "ResponseHeaderRemove")},
    "HostSet": _host_set,
    "PathSet": lambda ctx, pw, path: _abs_path(ctx, path, f"{pw}.path"),
    "PathRegexReplace": lambda ctx, pw, pattern, replacement: ctx.regex(pattern, f"{pw}.pattern"),
    "PathRemovePrefix": lambda ctx, pw, prefix: _abs_path(ctx, prefix, f"{pw}.prefix"),
    "PathPrefix": lambda ctx, pw, prefix: _abs_path(ctx, prefix, f"{pw}.prefix"),
    "IpAllowDeny": _ip_allow,
    "RateLimit": lambda ctx, pw, rps, window, partition: ctx.timespan(window, f"{pw}.window"),
    "ExtAuth": _ext_auth,
}


def _decimal(ctx: _Ctx, text: str, where: str, lo: int) -> int:
    if not re.fullmatch(r"[0-9]+" if ctx.strict else r"-?[0-9]+", text):
        ctx.fail(where, f"{text!r} is not a decimal number")
    value = int(text)
    ctx.check(value >= lo, where, f"{value} is less than {lo}")
    return value


_ROUTE_FIELDS = ("id", "order", "match", "clusterId", "clusters", "redirect", "directResponse", "mirror",
                 "transforms", "policies", "limits")
_ACTIONS = ("clusterId", "clusters", "redirect", "directResponse")


def _route(ctx: _Ctx, raw: Any, where: str, *, ordered: bool = True) -> tuple[int, m.Route]:
    """(its ``order``, the route); ``ordered=False``: an item whose ``order`` may be absent (0)."""
    d = ctx.mapping(raw, where, _ROUTE_FIELDS, ("id", "order", "match") if ordered else ("id", "match"))
    rid = ctx.string(d["id"], f"{where}.id")
    where = f"{where} ({rid})"
    order = ctx.integer(d["order"], f"{where}.order", -(2**63), 2**63 - 1) if "order" in d else 0
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
            c = ctx.mapping(item, iw, ("clusterId", "weight"), ("clusterId", "weight"))
            wcs.append(m.WeightedCluster(ctx.string(c["clusterId"], f"{iw}.clusterId"),
                                         ctx.integer(c["weight"], f"{iw}.weight", 0, 2**31 - 1)))
        action = m.Split(tuple(wcs))
    elif "redirect" in d:
        rw = f"{where}.redirect"
        r = ctx.mapping(d["redirect"], rw, ("statusCode", "scheme", "host", "port", "path"), ("statusCode", "host"))
        status = ctx.integer(r["statusCode"], f"{rw}.statusCode", -(2**63), 2**63 - 1)
        ctx.check(status in (301, 302), f"{rw}.statusCode", f"{status!r} is not 301 or 302")
        scheme = ctx.string(r["scheme"], f"{rw}.scheme") if "scheme" in r else None
        ctx.check(scheme in (None, "http", "https"), f"{rw}.scheme", f"{scheme!r} is not http or https")
        port = ctx.integer(r["port"], f"{rw}.port", 1, 65535) if "port" in r else None
        path = _abs_path(ctx, r["path"], f"{rw}.path") if "path" in r else None
        action = m.Redirect(status_code=status, scheme=scheme, host=ctx.string(r["host"], f"{rw}.host"),
                            port=port, path=path)
    else:
        dw = f"{where}.directResponse"
        r = ctx.mapping(d["directResponse"], dw, ("status", "body"), ("status", "body"))
        action = m.DirectResponse(ctx.integer(r["status"], f"{dw}.status", 100, 599),
                                  ctx.string(r["body"], f"{dw}.body", nonempty=False))
    mirror = None
    if "mirror" in d:
        mw = f"{where}.mirror"
        r = ctx.mapping(d["mirror"], mw, ("clusterId", "percent"), ("clusterId",))
        percent = r.get("percent", 100.0)
        if isinstance(percent, bool) or not isinstance(percent, (int, float)):
            ctx.fail(f"{mw}.percent", f"{percent!r} is not a number from 0 to 100")
        ctx.check(0 <= percent <= 100, f"{mw}.percent", f"{percent!r} is not a number from 0 to 100")
        mirror = m.Mirror(ctx.string(r["clusterId"], f"{mw}.clusterId"), float(percent))
    transforms = tuple(_kind_item(ctx, t, f"{where}.transforms[{i}]", TRANSFORMS, "transform")
                       for i, t in enumerate(ctx.seq(d.get("transforms", []), f"{where}.transforms")))
    policies = tuple(_kind_item(ctx, p, f"{where}.policies[{i}]", POLICIES, "policy")
                     for i, p in enumerate(ctx.seq(d.get("policies", []), f"{where}.policies")))
    limits = None
    if "limits" in d:
        lim = ctx.mapping(d["limits"], f"{where}.limits", ("requestTimeout",), ("requestTimeout",))
        limits = m.Limits(ctx.timespan(lim["requestTimeout"], f"{where}.limits.requestTimeout"))
    host, ports, match = _match(ctx, d["match"], f"{where}.match")
    behavior = m.Behavior(action, mirror, transforms, policies, limits)
    return order, m.Route(rid, host, match, behavior, "", m.UNKNOWN_SOURCE, -1, -1, ports)


def _cluster(ctx: _Ctx, raw: Any, where: str) -> m.Cluster:
    d = ctx.mapping(raw, where, ("id", "algorithm", "destinations", "sessionAffinity", "httpClient"),
                    ("id", "destinations"))
    cid = ctx.string(d["id"], f"{where}.id")
    where = f"{where} ({cid})"
    algorithm = ctx.string(d["algorithm"], f"{where}.algorithm") if "algorithm" in d else None
    ctx.check(algorithm is None or algorithm in ALGORITHMS, f"{where}.algorithm",
              f"{algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    dests = []
    seen: set[str] = set()
    for i, raw_dest in enumerate(ctx.seq(d["destinations"], f"{where}.destinations")):
        dw = f"{where}.destinations[{i}]"
        x = ctx.mapping(raw_dest, dw, ("id", "address", "port", "weight", "useHttps"),
                        ("id", "address", "port"))
        did = ctx.string(x["id"], f"{dw}.id")
        ctx.check(did not in seen, f"{dw}.id", f"duplicate destination id {did!r}")
        seen.add(did)
        address = ctx.string(x["address"], f"{dw}.address")
        dests.append(m.Destination(did, address, ctx.integer(x["port"], f"{dw}.port", 1, 65535),
                                   ctx.integer(x.get("weight", 1), f"{dw}.weight", 1, 2**31 - 1),
                                   ctx.boolean(x.get("useHttps", False), f"{dw}.useHttps")))
    affinity = None
    if "sessionAffinity" in d:
        aw = f"{where}.sessionAffinity"
        a = ctx.mapping(d["sessionAffinity"], aw, ("policy", "name"), ("policy", "name"))
        policy = ctx.string(a["policy"], f"{aw}.policy")
        ctx.check(policy == "Cookie", f"{aw}.policy", f"{policy!r} is not 'Cookie'")
        name = ctx.string(a["name"], f"{aw}.name")
        ctx.check(bool(_HEADER_NAME.match(name)), f"{aw}.name", f"{name!r} is not a cookie name")
        affinity = m.SessionAffinity(policy, name)
    client = None
    if "httpClient" in d:
        hw = f"{where}.httpClient"
        h = ctx.mapping(d["httpClient"], hw, ("requestTimeout", "tls"))
        timeout = ctx.timespan(h["requestTimeout"], f"{hw}.requestTimeout") if "requestTimeout" in h else None
        tls = None
        if "tls" in h:
            tls = _upstream_tls(ctx, h["tls"], f"{hw}.tls")
        client = m.HttpClient(timeout, tls)
    return m.Cluster(id=cid, algorithm=algorithm, destinations=tuple(dests), session_affinity=affinity,
                     http_client=client)


def _upstream_tls(ctx: _Ctx, raw: Any, where: str) -> m.UpstreamTls:
    t = ctx.mapping(raw, where, ("caFile", "certFile", "keyFile", "serverName", "subjectAltNames", "systemRoots"))
    files = {k: _file_name(ctx, t[k], f"{where}.{k}") if k in t else None for k in ("caFile", "certFile", "keyFile")}
    ctx.check((files["certFile"] is None) == (files["keyFile"] is None), where, "certFile and keyFile come together")
    server_name = ctx.string(t["serverName"], f"{where}.serverName") if "serverName" in t else None
    sans = None
    if "subjectAltNames" in t:
        names = []
        for i, raw_name in enumerate(ctx.seq(t["subjectAltNames"], f"{where}.subjectAltNames")):
            nw = f"{where}.subjectAltNames[{i}]"
            n = ctx.mapping(raw_name, nw, ("type", "value"), ("type", "value"))
            kind = ctx.string(n["type"], f"{nw}.type")
            ctx.check(kind in ("Hostname", "URI"), f"{nw}.type", f"{kind!r} is not Hostname or URI")
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
    allowed = ("schemaVersion", "listeners", "certificates", "include") if split else \
        ("schemaVersion", "listeners", "certificates", "routes", "clusters")
    ctx.mapping(doc, "", allowed, ("schemaVersion",))
    version = _schema_version(ctx, doc["schemaVersion"])
    listeners = tuple(_listener(ctx, x, f"listeners[{i}]")
                      for i, x in enumerate(ctx.seq(doc.get("listeners", []), "listeners")))
    ports = [x.port for x in listeners]
    ctx.check(len(set(ports)) == len(ports), "listeners", "two listeners on one port")
    certs_doc = ctx.mapping(doc.get("certificates", {"items": []}), "certificates", ("items",), ("items",))
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
    pctx.mapping(part, "", ("routes", "clusters"))
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
        e = ctx.mapping(raw, w, ("file", "sha256"), ("file", "sha256"))
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
