"""twp.yaml (root and parts) -> :class:`~titanium_gateway.contract.model.Config`, validated.

``load_config(root_bytes, read_part)`` parses the root, then every ``include``d part in list
order (``read_part(file) -> bytes | None``), checks each part's sha256, treats the routes and
clusters of all parts as one list, and validates every field against the contract
(docs/contract.md): a field it does not know, a value of the wrong type, a reference to a
cluster that does not exist, two routes with one ``order``... is a :class:`ConfigError`
naming the file and the position. A part that is missing or whose sha256 differs raises
:class:`PartNotReady` (the data plane keeps its previous config and retries). No I/O here.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, NoReturn

import yaml

from titanium_gateway.contract import model as m
from titanium_gateway.contract.regex import compile_regex

ROOT_FILE = "twp.yaml"
_PART_FILE = re.compile(r"^twp\.part-[1-9][0-9]*\.yaml$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_TIMESPAN = re.compile(r"^(?:([0-9]+)\.)?([0-9]{2}):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]{3}))?$")
_HOST = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$")
_METHOD = _HEADER_NAME  # an RFC 9110 token
PATH_KINDS = ("Exact", "Prefix", "Regex")
ALGORITHMS = ("RoundRobin", "Random", "LeastRequests", "LeastTime", "PowerOfTwoChoices")
HEADER_TRANSFORMS = tuple(f"{side}Header{verb}" for side in ("Request", "Response")
                          for verb in ("Set", "Append", "Remove"))

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ConfigError(Exception):
    """The config cannot be loaded: ``source`` (file), ``where`` (position), ``reason``."""

    def __init__(self, source: str, where: str, reason: str) -> None:
        self.source, self.where, self.reason = source, where, reason
        super().__init__(f"{source}: {where}: {reason}" if where else f"{source}: {reason}")


class PartNotReady(ConfigError):
    """An included part is missing or its sha256 differs: not loaded yet (retry later)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
    """The file being read, for messages."""

    def __init__(self, source: str) -> None:
        self.source = source

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
        if nonempty and not value:
            self.fail(where, "must not be empty")
        return value

    def integer(self, value: Any, where: str, lo: int, hi: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, f"expected an integer, got {_type(value)}")
        if not lo <= value <= hi:
            self.fail(where, f"{value} is out of range {lo}..{hi}")
        return value

    def boolean(self, value: Any, where: str) -> bool:
        if not isinstance(value, bool):
            self.fail(where, f"expected true or false, got {_type(value)}")
        return value

    def timespan(self, value: Any, where: str) -> float:
        text = self.string(value, where)
        t = _TIMESPAN.match(text)
        if t is None:
            self.fail(where, f"{text!r} is not a TimeSpan [d.]hh:mm:ss[.fff]")
        days, hours, minutes, seconds, millis = t.groups()
        total = (int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + int(seconds)
                 + int(millis or 0) / 1000)
        if total <= 0:
            self.fail(where, "a zero duration is never emitted (the field is omitted instead)")
        return total

    def str_map(self, value: Any, where: str) -> dict[str, str]:
        mp = self.mapping(value, where, tuple(value) if isinstance(value, dict) else ())
        for k, v in mp.items():
            self.string(k, f"{where} key", nonempty=True)
            self.string(v, f"{where}.{k}", nonempty=False)
        return mp

    def regex(self, value: Any, where: str) -> re.Pattern[str]:
        text = self.string(value, where)
        try:
            return compile_regex(text)
        except re.error as exc:
            self.fail(where, f"the regular expression does not compile: {exc}")

    def params(self, value: Any, where: str, names: tuple[str, ...], lists: tuple[str, ...] = ()) -> dict:
        """A flat parameters map: every scalar a string, ``lists`` lists of strings."""
        params = self.mapping(value, where, names + lists, names + lists)
        for k in names:
            self.string(params[k], f"{where}.{k}", nonempty=False)
        for k in lists:
            items = self.seq(params[k], f"{where}.{k}")
            if not items:
                self.fail(f"{where}.{k}", "must not be empty")
            for i, item in enumerate(items):
                self.string(item, f"{where}.{k}[{i}]")
        return params


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# -- document parts ---------------------------------------------------------------------------
def _listener(ctx: _Ctx, raw: Any, where: str) -> m.Listener:
    d = ctx.mapping(raw, where, ("host", "port", "type", "decryptSsl"), ("host", "port", "type", "decryptSsl"))
    host = ctx.string(d["host"], f"{where}.host")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        ctx.fail(f"{where}.host", f"{host!r} is not an IP address")
    if d["type"] != "transparent":
        ctx.fail(f"{where}.type", f"{d['type']!r} is not 'transparent'")
    return m.Listener(host, ctx.integer(d["port"], f"{where}.port", 1, 65535), "transparent",
                      ctx.boolean(d["decryptSsl"], f"{where}.decryptSsl"))


def _certificate(ctx: _Ctx, raw: Any, where: str) -> m.CertificateItem:
    d = ctx.mapping(raw, where, ("file", "hosts", "default"), ("file", "hosts"))
    file = _file_name(ctx, d["file"], f"{where}.file")
    hosts = tuple(ctx.string(h, f"{where}.hosts[{i}]").lower()
                  for i, h in enumerate(ctx.seq(d["hosts"], f"{where}.hosts")))
    default = ctx.boolean(d.get("default", False), f"{where}.default")
    return m.CertificateItem(file, hosts, default)


def _file_name(ctx: _Ctx, value: Any, where: str) -> str:
    name = ctx.string(value, where)
    if "/" in name or "\\" in name or name in (".", "..") or name.startswith(".."):
        ctx.fail(where, f"{name!r} is not a file name in the config directory")
    return name


def _match(ctx: _Ctx, raw: Any, where: str) -> m.Match:
    d = ctx.mapping(raw, where, ("host", "path", "pathKind", "method", "headers", "query", "queryRegex"))
    host = None
    if "host" in d:
        host = ctx.string(d["host"], f"{where}.host").lower()
        if not _HOST.match(host):
            ctx.fail(f"{where}.host", f"{host!r} is not a host name or *.wildcard")
    if ("path" in d) != ("pathKind" in d):
        ctx.fail(where, "path and pathKind come together")
    path = kind = path_regex = None
    if "path" in d:
        path = ctx.string(d["path"], f"{where}.path")
        kind = d["pathKind"]
        if kind not in PATH_KINDS:
            ctx.fail(f"{where}.pathKind", f"{kind!r} is not one of {', '.join(PATH_KINDS)}")
        if kind == "Regex":
            path_regex = ctx.regex(path, f"{where}.path")
    method = None
    if "method" in d:
        method = ctx.string(d["method"], f"{where}.method")
        if not _METHOD.match(method):
            ctx.fail(f"{where}.method", f"{method!r} is not an HTTP method")
    headers: dict[str, str] = {}
    for name, value in ctx.str_map(d.get("headers", {}), f"{where}.headers").items():
        if not _HEADER_NAME.match(name):
            ctx.fail(f"{where}.headers.{name}", "not a header name")
        headers.setdefault(name.lower(), value)  # the first of equivalent names counts
    query = ctx.str_map(d.get("query", {}), f"{where}.query")
    query_regex = {k: ctx.regex(v, f"{where}.queryRegex.{k}")
                   for k, v in ctx.str_map(d.get("queryRegex", {}), f"{where}.queryRegex").items()}
    return m.Match(host=host, path=path, path_kind=kind, method=method, headers=tuple(headers.items()),
                   query=tuple(query.items()), query_regex=tuple(query_regex.items()), path_regex=path_regex)


def _transform(ctx: _Ctx, raw: Any, where: str) -> m.Transform:
    d = ctx.mapping(raw, where, ("kind", "parameters"), ("kind", "parameters"))
    kind, pw = d["kind"], f"{where}.parameters"
    if kind in HEADER_TRANSFORMS:
        if kind.endswith("Remove"):
            p = ctx.params(d["parameters"], pw, ("name",))
            value = ""
        else:
            p = ctx.params(d["parameters"], pw, ("name", "value"))
            value = p["value"]
        if not _HEADER_NAME.match(p["name"]):
            ctx.fail(f"{pw}.name", f"{p['name']!r} is not a header name")
        if any(c in value for c in "\r\n\0"):
            ctx.fail(f"{pw}.value", "a header value cannot hold CR, LF or NUL")
        return m.HeaderTransform(kind, p["name"], value)
    if kind == "HostSet":
        p = ctx.params(d["parameters"], pw, ("host",))
        return m.HostSet(ctx.string(p["host"], f"{pw}.host"))
    if kind == "PathSet":
        p = ctx.params(d["parameters"], pw, ("path",))
        return m.PathSet(_abs_path(ctx, p["path"], f"{pw}.path"))
    if kind == "PathRegexReplace":
        p = ctx.params(d["parameters"], pw, ("pattern", "replacement"))
        return m.PathRegexReplace(p["pattern"], p["replacement"], ctx.regex(p["pattern"], f"{pw}.pattern"))
    if kind in ("PathRemovePrefix", "PathPrefix"):
        p = ctx.params(d["parameters"], pw, ("prefix",))
        prefix = _abs_path(ctx, p["prefix"], f"{pw}.prefix")
        return m.PathRemovePrefix(prefix) if kind == "PathRemovePrefix" else m.PathPrefix(prefix)
    ctx.fail(f"{where}.kind", f"unknown transform kind {kind!r}")


def _abs_path(ctx: _Ctx, value: Any, where: str) -> str:
    text = ctx.string(value, where)
    if not text.startswith("/"):
        ctx.fail(where, f"{text!r} does not start with /")
    return text


def _policy(ctx: _Ctx, raw: Any, where: str) -> m.Policy:
    d = ctx.mapping(raw, where, ("kind", "parameters"), ("kind", "parameters"))
    kind, pw = d["kind"], f"{where}.parameters"
    if kind == "MaxRequestBodySize":
        p = ctx.params(d["parameters"], pw, ("bytes",))
        return m.MaxRequestBodySize(_decimal(ctx, p["bytes"], f"{pw}.bytes", 0))
    if kind == "IpAllowDeny":
        p = ctx.params(d["parameters"], pw, (), ("allow",))
        nets = []
        for i, text in enumerate(p["allow"]):
            try:
                nets.append(ipaddress.ip_network(text.strip(), strict=False))
            except ValueError:
                ctx.fail(f"{pw}.allow[{i}]", f"{text!r} is not an address or CIDR prefix")
        return m.IpAllowDeny(tuple(nets))
    if kind == "RateLimit":
        p = ctx.params(d["parameters"], pw, ("requestsPerSecond", "window", "partition"))
        return m.RateLimit(_decimal(ctx, p["requestsPerSecond"], f"{pw}.requestsPerSecond", 1),
                           ctx.timespan(p["window"], f"{pw}.window"), p["partition"])
    if kind == "Cors":
        p = ctx.params(d["parameters"], pw, (), ("allowOrigins",))
        return m.Cors(tuple(p["allowOrigins"]))
    if kind == "ExtAuth":
        p = ctx.params(d["parameters"], pw, ("url", "timeout"))
        url = ctx.string(p["url"], f"{pw}.url")
        if not re.match(r"^https?://[^/@\s]+(/\S*)?$", url):
            ctx.fail(f"{pw}.url", f"{url!r} is not an absolute http or https URL without credentials")
        return m.ExtAuth(url, ctx.timespan(p["timeout"], f"{pw}.timeout"))
    ctx.fail(f"{where}.kind", f"unknown policy kind {kind!r}")


def _decimal(ctx: _Ctx, text: str, where: str, lo: int) -> int:
    if not re.fullmatch(r"[0-9]+", text):
        ctx.fail(where, f"{text!r} is not a decimal number")
    value = int(text)
    if value < lo:
        ctx.fail(where, f"{value} is less than {lo}")
    return value


_ROUTE_FIELDS = ("id", "order", "match", "clusterId", "clusters", "redirect", "directResponse", "mirror",
                 "transforms", "policies", "limits")
_ACTIONS = ("clusterId", "clusters", "redirect", "directResponse")


def _route(ctx: _Ctx, raw: Any, where: str) -> m.Route:
    d = ctx.mapping(raw, where, _ROUTE_FIELDS, ("id", "order", "match"))
    rid = ctx.string(d["id"], f"{where}.id")
    where = f"{where} ({rid})"
    order = ctx.integer(d["order"], f"{where}.order", -(2**63), 2**63 - 1)
    actions = [a for a in _ACTIONS if a in d]
    if len(actions) != 1:
        ctx.fail(where, f"needs exactly one action of {', '.join(_ACTIONS)}, has {len(actions)}")
    action: m.Action
    if "clusterId" in d:
        action = m.Forward((m.WeightedCluster(ctx.string(d["clusterId"], f"{where}.clusterId"), 1),))
    elif "clusters" in d:
        items = ctx.seq(d["clusters"], f"{where}.clusters")
        if not items:
            ctx.fail(f"{where}.clusters", "must not be empty")
        wcs = []
        for i, item in enumerate(items):
            iw = f"{where}.clusters[{i}]"
            c = ctx.mapping(item, iw, ("clusterId", "weight"), ("clusterId", "weight"))
            wcs.append(m.WeightedCluster(ctx.string(c["clusterId"], f"{iw}.clusterId"),
                                         ctx.integer(c["weight"], f"{iw}.weight", 0, 2**31 - 1)))
        action = m.Forward(tuple(wcs))
    elif "redirect" in d:
        rw = f"{where}.redirect"
        r = ctx.mapping(d["redirect"], rw, ("statusCode", "scheme", "host", "port", "path"), ("statusCode", "host"))
        if r["statusCode"] not in (301, 302) or isinstance(r["statusCode"], bool):
            ctx.fail(f"{rw}.statusCode", f"{r['statusCode']!r} is not 301 or 302")
        scheme = r.get("scheme")
        if scheme is not None and scheme not in ("http", "https"):
            ctx.fail(f"{rw}.scheme", f"{scheme!r} is not http or https")
        port = ctx.integer(r["port"], f"{rw}.port", 1, 65535) if "port" in r else None
        path = _abs_path(ctx, r["path"], f"{rw}.path") if "path" in r else None
        action = m.Redirect(r["statusCode"], ctx.string(r["host"], f"{rw}.host"), scheme, port, path)
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
        if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 <= percent <= 100:
            ctx.fail(f"{mw}.percent", f"{percent!r} is not a number from 0 to 100")
        mirror = m.Mirror(ctx.string(r["clusterId"], f"{mw}.clusterId"), float(percent))
    transforms = tuple(_transform(ctx, t, f"{where}.transforms[{i}]")
                       for i, t in enumerate(ctx.seq(d.get("transforms", []), f"{where}.transforms")))
    policies = tuple(_policy(ctx, p, f"{where}.policies[{i}]")
                     for i, p in enumerate(ctx.seq(d.get("policies", []), f"{where}.policies")))
    timeout = None
    if "limits" in d:
        lim = ctx.mapping(d["limits"], f"{where}.limits", ("requestTimeout",), ("requestTimeout",))
        timeout = ctx.timespan(lim["requestTimeout"], f"{where}.limits.requestTimeout")
    return m.Route(rid, order, _match(ctx, d["match"], f"{where}.match"), action, mirror, transforms, policies,
                   timeout)


def _cluster(ctx: _Ctx, raw: Any, where: str) -> m.Cluster:
    d = ctx.mapping(raw, where, ("id", "algorithm", "destinations", "sessionAffinity", "httpClient"),
                    ("id", "destinations"))
    cid = ctx.string(d["id"], f"{where}.id")
    where = f"{where} ({cid})"
    algorithm = d.get("algorithm", "RoundRobin")
    if algorithm not in ALGORITHMS:
        ctx.fail(f"{where}.algorithm", f"{algorithm!r} is not one of {', '.join(ALGORITHMS)}")
    dests = []
    seen: set[str] = set()
    for i, raw_dest in enumerate(ctx.seq(d["destinations"], f"{where}.destinations")):
        dw = f"{where}.destinations[{i}]"
        x = ctx.mapping(raw_dest, dw, ("id", "address", "port", "weight", "useHttps"),
                        ("id", "address", "port"))
        did = ctx.string(x["id"], f"{dw}.id")
        if did in seen:
            ctx.fail(f"{dw}.id", f"duplicate destination id {did!r}")
        seen.add(did)
        address = ctx.string(x["address"], f"{dw}.address")
        dests.append(m.Destination(did, address, ctx.integer(x["port"], f"{dw}.port", 1, 65535),
                                   ctx.integer(x.get("weight", 1), f"{dw}.weight", 1, 2**31 - 1),
                                   ctx.boolean(x.get("useHttps", False), f"{dw}.useHttps")))
    affinity = None
    if "sessionAffinity" in d:
        aw = f"{where}.sessionAffinity"
        a = ctx.mapping(d["sessionAffinity"], aw, ("policy", "name"), ("policy", "name"))
        if a["policy"] != "Cookie":
            ctx.fail(f"{aw}.policy", f"{a['policy']!r} is not 'Cookie'")
        name = ctx.string(a["name"], f"{aw}.name")
        if not _HEADER_NAME.match(name):
            ctx.fail(f"{aw}.name", f"{name!r} is not a cookie name")
        affinity = m.SessionAffinity("Cookie", name)
    client = m.HttpClient()
    if "httpClient" in d:
        hw = f"{where}.httpClient"
        h = ctx.mapping(d["httpClient"], hw, ("requestTimeout", "tls"))
        timeout = ctx.timespan(h["requestTimeout"], f"{hw}.requestTimeout") if "requestTimeout" in h else None
        tls = None
        if "tls" in h:
            t = ctx.mapping(h["tls"], f"{hw}.tls", ("caFile", "certFile", "keyFile"))
            files = {k: _file_name(ctx, t[k], f"{hw}.tls.{k}") if k in t else None
                     for k in ("caFile", "certFile", "keyFile")}
            if (files["certFile"] is None) != (files["keyFile"] is None):
                ctx.fail(f"{hw}.tls", "certFile and keyFile come together")
            tls = m.ClientTls(files["caFile"], files["certFile"], files["keyFile"])
        client = m.HttpClient(timeout, tls)
    return m.Cluster(cid, tuple(dests), algorithm, affinity, client)


# -- the whole config -------------------------------------------------------------------------
def _schema_version(ctx: _Ctx, value: Any) -> str:
    text = ctx.string(value, "schemaVersion")
    if not re.fullmatch(r"7\.[0-9]+", text):
        ctx.fail("schemaVersion", f"{text!r} is not a 7.x schema version")
    return text


def load_config(root: bytes, read_part: Callable[[str], bytes | None] | Mapping[str, bytes] | None = None,
                source: str = ROOT_FILE) -> m.Config:
    """The Config of a root ``twp.yaml`` (bytes) and its parts (see the module docstring)."""
    if isinstance(read_part, Mapping):
        parts_map = read_part
        read_part = parts_map.get
    ctx = _Ctx(source)
    doc = parse_yaml(root, source)
    if doc is None:
        ctx.fail("", "the document is empty")
    split = isinstance(doc, dict) and "include" in doc
    allowed = ("schemaVersion", "listeners", "certificates", "include") if split else \
        ("schemaVersion", "listeners", "certificates", "routes", "clusters")
    ctx.mapping(doc, "", allowed, ("schemaVersion",))
    version = _schema_version(ctx, doc["schemaVersion"])
    listeners = tuple(_listener(ctx, x, f"listeners[{i}]")
                      for i, x in enumerate(ctx.seq(doc.get("listeners", []), "listeners")))
    ports = [x.port for x in listeners]
    if len(set(ports)) != len(ports):
        ctx.fail("listeners", "two listeners on one port")
    certs_doc = ctx.mapping(doc.get("certificates", {"items": []}), "certificates", ("items",), ("items",))
    certificates = tuple(_certificate(ctx, x, f"certificates.items[{i}]")
                         for i, x in enumerate(ctx.seq(certs_doc["items"], "certificates.items")))
    if sum(1 for c in certificates if c.default) > 1:
        ctx.fail("certificates.items", "more than one item has default: true")

    raw_routes: list[tuple[_Ctx, Any, str]] = []
    raw_clusters: list[tuple[_Ctx, Any, str]] = []
    includes: list[m.Include] = []
    if split:
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
            includes.append(m.Include(file, digest))
        for inc in includes:
            data = read_part(inc.file) if read_part is not None else None
            if data is None:
                raise PartNotReady(inc.file, "", "the part is missing (not loaded yet)")
            if sha256_hex(data) != inc.sha256:
                raise PartNotReady(inc.file, "", f"sha256 {sha256_hex(data)[:12]}... differs from the root's "
                                                 f"{inc.sha256[:12]}... (not loaded yet)")
            pctx = _Ctx(inc.file)
            part = parse_yaml(data, inc.file)
            pctx.mapping(part, "", ("routes", "clusters"))
            raw_routes += [(pctx, x, f"routes[{i}]") for i, x in enumerate(pctx.seq(part.get("routes", []), "routes"))]
            raw_clusters += [(pctx, x, f"clusters[{i}]")
                             for i, x in enumerate(pctx.seq(part.get("clusters", []), "clusters"))]
    else:
        raw_routes = [(ctx, x, f"routes[{i}]") for i, x in enumerate(ctx.seq(doc.get("routes", []), "routes"))]
        raw_clusters = [(ctx, x, f"clusters[{i}]")
                        for i, x in enumerate(ctx.seq(doc.get("clusters", []), "clusters"))]

    clusters: dict[str, m.Cluster] = {}
    for c_ctx, raw, where in raw_clusters:
        cluster = _cluster(c_ctx, raw, where)
        if cluster.id in clusters:
            c_ctx.fail(where, f"duplicate cluster id {cluster.id!r}")
        clusters[cluster.id] = cluster
    routes: list[m.Route] = []
    ids: set[str] = set()
    orders: set[int] = set()
    for r_ctx, raw, where in raw_routes:
        route = _route(r_ctx, raw, where)
        if route.id in ids:
            r_ctx.fail(where, f"duplicate route id {route.id!r}")
        if route.order in orders:
            r_ctx.fail(where, f"duplicate order {route.order} (route {route.id})")
        ids.add(route.id)
        orders.add(route.order)
        named = [wc.cluster_id for wc in route.action.clusters] if isinstance(route.action, m.Forward) else []
        if route.mirror is not None:
            named.append(route.mirror.cluster_id)
        for cid in named:
            if cid not in clusters:
                r_ctx.fail(where, f"names cluster {cid!r}, which the config does not define")
        routes.append(route)
    routes.sort(key=lambda r: r.order)
    return m.Config(version, listeners, certificates, tuple(routes), MappingProxyType(clusters), tuple(includes),
                    sha256_hex(root))
