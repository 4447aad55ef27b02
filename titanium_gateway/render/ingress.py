"""Ingress (networking.k8s.io/v1) translation into the shared render.

:func:`translate` is called by :func:`titanium_gateway.render.render` after the Gateway
listeners and HTTPRoutes are in the :class:`~titanium_gateway.render.builder.RenderContext`.
It:

1. selects the Ingresses this controller owns (:func:`select_ingresses`: ingressClassName,
   the default IngressClass, the legacy ``kubernetes.io/ingress.class`` annotation);
2. parses their ``titanium.io/`` annotations (:mod:`.ingress_annotations`);
3. turns every rule path into one route ``ingress/<ns>/<name>/r<rule>p<path>`` and the
   ``defaultBackend`` into ``ingress/<ns>/<name>/default`` (any host, any path, ordered after
   every other route), with the annotation features as policies, transforms and cluster
   settings; a rule that cannot be honoured answers 500 (``directResponse``);
4. merges canary Ingresses into their primary's route (weights, header route);
5. binds ``tls`` Secrets as certificates, opens the HTTP and HTTPS data-plane listeners;
6. reports Warning events and ``status.loadBalancer`` for every owned Ingress.

Everything is indexed once (dicts keyed by host/path/type), so the work is linear in the
number of Ingress paths. Never raises on malformed input; deterministic.
"""

from __future__ import annotations

import base64
import binascii
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cryptography import x509

from titanium_gateway.render import ingress_annotations as ia
from titanium_gateway.render import memo, precedence
from titanium_gateway.render.backends import DEFAULT_SETTINGS, ClusterSettings, resolve_backend
from titanium_gateway.render.emit import kind_lines, match_body, plain_name, route_tail
from titanium_gateway.render.ingress_annotations import IngressAnnotations, parse_annotations
from titanium_gateway.render.precedence import (
    TIER_DEFAULT_BACKEND,
    TIER_NORMAL,
    creation_timestamp,
    key_from_parts,
    match_part,
    owner_part,
)
from titanium_gateway.render.result import EventRecord, ObjectStatus

INGRESS_API_VERSION = "networking.k8s.io/v1"
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
#: The legacy annotation value that always means this controller (with --watch-legacy-annotation).
LEGACY_CLASS_NAME = "titanium"
#: Timeout of the ExtAuth subrequest (the seed gives none; see docs/ingress.md).
EXT_AUTH_TIMEOUT = "00:00:05"
#: Tier of the 500 route of a path whose pathType is unknown: its match (that exact path) is
#: only an approximation, so it is ordered after every normal route and never shadows one.
TIER_DEGRADED: int = getattr(precedence, "TIER_DEGRADED", TIER_NORMAL)
#: Value of the canary-by-header header that forces the canary.
CANARY_HEADER_VALUE = "always"

PATH_TYPES = ("Exact", "Prefix", "ImplementationSpecific")
_PATH_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f?#]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")
_REGEX_SPECIAL = frozenset("\\.^$|?*+()[]{}")  # .NET/ECMAScript metacharacters only


# -- small safe accessors -------------------------------------------------------------------
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _map(value: Any) -> Mapping[str, Any]:
    if type(value) is dict:  # the common case, without the slower ABC check
        return value
    return value if isinstance(value, Mapping) else _EMPTY


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _meta(obj: Any) -> Mapping[str, Any]:
    return _map(_map(obj).get("metadata"))


# -- class selection ------------------------------------------------------------------------
def owned_classes(ingress_classes: Mapping[str, Any], controller_name: str) -> tuple[set[str], bool]:
    """Names of the IngressClasses whose ``spec.controller`` is ours, and whether one of them
    is the default class (annotation ``ingressclass.kubernetes.io/is-default-class: "true"``)."""
    names: set[str] = set()
    has_default = False
    for key, cls in ingress_classes.items():
        if _str(_map(_map(cls).get("spec")).get("controller")) != controller_name:
            continue
        name = _str(_meta(cls).get("name")) or str(key)
        names.add(name)
        if _str(_map(_meta(cls).get("annotations")).get(DEFAULT_CLASS_ANNOTATION)) == "true":
            has_default = True
    return names, has_default


def is_owned(
    ingress: Any, owned: set[str], has_default: bool, watch_legacy_annotation: bool
) -> bool:
    """Whether this controller serves ``ingress`` (see the Ingress page, "Choosing")."""
    class_name = _map(_map(ingress).get("spec")).get("ingressClassName")
    if isinstance(class_name, str) and class_name:
        return class_name in owned  # ingressClassName always wins
    legacy = _map(_meta(ingress).get("annotations")).get(LEGACY_CLASS_ANNOTATION)
    if legacy is not None:
        ours = isinstance(legacy, str) and (legacy in owned or legacy == LEGACY_CLASS_NAME)
        if not ours:
            return False  # a legacy class we do not own: never ours
        if watch_legacy_annotation:
            return True
    return has_default


def select_ingresses(snapshot: Any, options: Any) -> list[Mapping[str, Any]]:
    """The Ingresses we own, oldest first (creationTimestamp, namespace, name)."""
    return [ing for _, ing in _select(snapshot, options)]


def _select(snapshot: Any, options: Any) -> list[tuple[tuple[str, str, str], Mapping[str, Any]]]:
    """:func:`select_ingresses`, each with its :func:`_age_key` (computed once)."""
    owned, has_default = owned_classes(snapshot.ingress_classes, options.ingress_controller_name)
    watch_legacy = options.watch_legacy_annotation
    selected: list[tuple[tuple[str, str, str], Mapping[str, Any]]] = []
    for ing in snapshot.ingresses.values():
        if type(ing) is not dict and not isinstance(ing, Mapping):
            continue
        meta = ing.get("metadata")
        if type(meta) is not dict:
            meta = _map(meta)
        name = _str(meta.get("name"))
        if not name:
            continue
        spec = ing.get("spec")
        class_name = spec.get("ingressClassName") if type(spec) is dict else None
        if type(class_name) is str and class_name:  # is_owned's first case, inline
            if class_name not in owned:
                continue
        elif not is_owned(ing, owned, has_default, watch_legacy):
            continue
        created = meta.get("creationTimestamp")
        if type(created) is not str or not created:
            created = creation_timestamp(ing)
        selected.append(((created, _str(meta.get("namespace")) or "default", name), ing))
    selected.sort(key=_first)  # stable: equal keys keep the snapshot's order, as before
    return selected


_first = operator.itemgetter(0)


def _namespace(ing: Any) -> str:
    return _str(_meta(ing).get("namespace")) or "default"


def _age_key(ing: Any) -> tuple[str, str, str]:
    return (creation_timestamp(ing), _namespace(ing), _str(_meta(ing).get("name")))


# -- host / path helpers --------------------------------------------------------------------
def normalize_host(raw: Any) -> tuple[str | None, str]:
    """``rules[].host`` -> (match host or None for any host, error message or "")."""
    if raw is None or raw == "":
        return None, ""
    if not isinstance(raw, str):
        return None, "host is not a string"
    host = raw.lower()
    if host.endswith("."):
        host = host[:-1]
    name = host[2:] if host.startswith("*.") else host
    if len(host) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return None, f"host {raw!r} is not a DNS name or a *. wildcard"
    return host, ""


def normalize_path(raw_path: Any, path_type: Any) -> tuple[str | None, str | None, str]:
    """(path, data-plane pathKind, error) for one Ingress path.

    ``Exact`` keeps the path; ``Prefix`` and ``ImplementationSpecific`` are a segment prefix with
    a trailing ``/`` stripped (except ``/`` itself). A path that is not absolute, or that holds
    whitespace, a control character, ``?`` or ``#``, is an error, as is another pathType.
    An absent or empty path with pathType ``ImplementationSpecific`` (which the Ingress API
    allows: "an unspecified path matches all paths") is the Prefix ``/``.
    """
    if path_type == "ImplementationSpecific" and raw_path in (None, ""):
        return "/", "Prefix", ""
    if not isinstance(raw_path, str) or not raw_path.startswith("/") or _PATH_FORBIDDEN.search(raw_path):
        return None, None, f"path {raw_path!r} is not an absolute path"
    if path_type not in PATH_TYPES:
        return raw_path, None, f"pathType {path_type!r} is not Exact, Prefix or ImplementationSpecific"
    if path_type == "Exact":
        return raw_path, "Exact", ""
    path = raw_path.rstrip("/") or "/"
    return path, "Prefix", ""


def invalid_path_match(raw_path: Any, path_type: Any) -> tuple[str | None, str | None]:
    """(path, pathKind) of the 500 route of a path that :func:`normalize_path` rejects: the
    path's own match, as written, so it answers 500 where it would have matched and nowhere else.

    A string path keeps its text (a trailing ``/`` stripped for a Prefix, as for valid paths)
    with the kind of its pathType (an unknown pathType: ``Exact``). A non-absolute path such as
    ``z`` can match no request (request paths start with ``/``), so its route shadows nothing.
    An absent or empty path is "every path" (the Ingress API: an unspecified path matches all
    paths): (None, None). The route goes in the degraded tier (:meth:`_Translator.tier`), after
    every normal route, so it never shadows another path.
    """
    if not isinstance(raw_path, str) or not raw_path:
        return None, None
    if path_type in ("Prefix", "ImplementationSpecific"):
        return raw_path.rstrip("/") or raw_path, "Prefix"
    return raw_path, "Exact"


def regex_escape(text: str) -> str:
    """Escapes a literal for a .NET regular expression."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)


def rewrite_transform(path: str | None, kind: str | None, target: str) -> dict[str, Any] | None:
    """The PathRegexReplace transform of ``titanium.io/rewrite-target`` for one route.

    Exact: the whole path becomes ``target``. Prefix (and the defaultBackend, a prefix ``/``):
    the matched prefix is replaced on a segment boundary, ``/foo`` -> ``/bar`` turns
    ``/foo/x`` into ``/bar/x`` and ``/foo`` into ``/bar``; a target of ``/`` turns ``/foo/x``
    into ``/x`` (never ``//x``). Returns None when the rewrite changes nothing.
    """
    if kind == "Exact" and path is not None:
        if path == target:
            return None
        pattern, replacement = f"^{regex_escape(path)}$", target
    else:
        prefix = path or "/"
        tgt = target.rstrip("/") or "/"
        if prefix == "/":
            if tgt == "/":
                return None
            pattern, replacement = "^(?:/$|(?=/))", tgt
        else:
            pattern = f"^{regex_escape(prefix)}(?=/|$)"
            replacement = "" if tgt == "/" else tgt
    return {"kind": "PathRegexReplace", "parameters": {"pattern": pattern, "replacement": replacement}}


def timespan(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}"


# -- per-Ingress state ----------------------------------------------------------------------
@dataclass(slots=True)
class _Ingress:
    obj: Mapping[str, Any]
    namespace: str
    name: str
    uid: str
    created: str
    ann: IngressAnnotations
    is_canary: bool
    #: precedence.owner_part of the Ingress (its part of its routes' precedence keys)
    owner_key: str
    settings: ClusterSettings | None = None  # None: upstream TLS Secret unusable
    settings_error: str = ""
    id_suffix: str = ""
    #: its route ids ("ingress/<ns>/<name>/...") are written as they are (see
    #: emit.route_head_of_host): the namespace and name hold plain characters only
    plain_ids: bool = False

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class _Path:
    ing: _Ingress
    route_id: str
    rule: int  # -1 for the defaultBackend
    index: int
    host: str | None
    path: str | None
    kind: str | None  # Exact | Prefix | None (any path)
    path_type: str  # as written (Exact, Prefix, ImplementationSpecific; "" for defaultBackend)
    backend: Any
    error_reason: str = ""
    error_message: str = ""
    #: (canary, its cluster (added only when the primary forwards), canary route id): at most
    #: one (a second canary is a CanaryConflict); () until there is one
    canaries: Sequence[tuple[_Ingress, dict[str, Any], str]] = ()

    @property
    def is_default(self) -> bool:
        return self.rule < 0

    @property
    def conflict_key(self) -> tuple[str, str, str]:
        """The route's identity for RouteConflict and canary binding: host, normalized path and
        the data-plane path kind, so ``ImplementationSpecific`` (a Prefix) and ``Prefix`` on
        the same path are the same route. A path with an InvalidPath error keeps its pathType
        as written: its 500 route never owns (nor conflicts with) a valid route's match."""
        if self.is_default:
            return ("", "", "defaultBackend")
        if self.error_reason == "InvalidPath":
            return (self.host or "", self.path or "", "invalid:" + self.path_type)
        return (self.host or "", self.path or "", self.kind or "")

    def describe(self) -> str:
        if self.is_default:
            return "the default backend"
        host = self.host or "any host"
        return f"host {host} path {self.path} ({self.path_type})"


class _Translator:
    def __init__(self, ctx: Any, cache: Any = None) -> None:
        self.ctx = ctx
        #: render/memo.py: recordings of ``emit`` per path, valid while ``path_deps`` hold
        self.cache = cache
        self.path_memo: dict[str, Any] | None = None
        self.path_kept: dict[str, Any] = {}
        self.options = ctx.options
        self.http_port = self.options.data_plane_port(80)
        self.https_port = self.options.data_plane_port(443)
        self.lb_ingress = load_balancer_ingress(ctx.snapshot, self.options.data_plane_service)
        #: the one status of every Ingress, shared (statuses are never modified downstream)
        self.lb_status = {"loadBalancer": {"ingress": [dict(x) for x in self.lb_ingress]}}
        self.http_ok, self.http_why = self._port_usable(self.http_port, "HTTP")
        self.https_ok, self.https_why = self._port_usable(self.https_port, "HTTPS")
        self.https_needed = False
        self._upstream: dict[tuple[str, str], tuple[tuple[tuple[str, str], ...], str]] = {}
        # Per-render memos of the route writing (see emit): every value is a pure function
        # of its key and of this render's snapshot and options.
        #: (path, pathType) of exact types (str or None) -> normalize_path of them
        self._paths: dict[tuple[Any, Any], tuple[str | None, str | None, str]] = {}
        #: (id of an Ingress's annotations, its namespace) -> (them, what they parse to)
        self._annotations: dict[tuple[int, str], tuple[Any, IngressAnnotations]] = {}
        #: id of an annotation set -> (it, cluster settings or None, why not, cluster id suffix)
        self._settings: dict[int, tuple[IngressAnnotations, ClusterSettings | None, str, str]] = {}
        #: backend (by exact-typed content) -> (settings kept alive, (cluster, reason, message))
        #: and (id of a backend object, namespace, id of settings, suffix) -> (them, the same)
        self._backend_objects: dict[tuple[Any, ...], tuple[Any, Any, Any]] = {}
        self._resolved: dict[tuple[Any, ...], tuple[Any, tuple[dict[str, Any] | None, str, str]]] = {}
        #: (path, kind) -> (match without host, its precedence part); never modified
        self._bodies: dict[tuple[Any, Any], tuple[dict[str, Any], Any, str | None]] = {}
        #: the text of one key of a route's tail ("" for none; None: the fast writer cannot)
        self._action_text: dict[tuple[Any, ...], str | None] = {}
        self._transform_text: dict[tuple[Any, ...], tuple[IngressAnnotations, str | None]] = {}
        self._policies_text: dict[tuple[Any, ...], tuple[IngressAnnotations, str | None]] = {}
        #: id of an annotation set -> (it, the lines of its policies before and after a RateLimit)
        self._policy_lines: dict[int, tuple[IngressAnnotations, str | None, str | None]] = {}
        #: (action, transforms, policies) texts -> their concatenation (one shared string)
        self._tails: dict[tuple[str, str, str], str] = {}

    # -- helpers --------------------------------------------------------------------------
    def event(self, ing: _Ingress, reason: str, message: str) -> None:
        self.ctx.add_event(
            EventRecord(
                kind="Ingress",
                namespace=ing.namespace,
                name=ing.name,
                type="Warning",
                reason=reason,
                message=message,
                uid=ing.uid,
                api_version=INGRESS_API_VERSION,
            )
        )

    def _port_usable(self, port: int, protocol: str) -> tuple[bool, str]:
        if port not in self.options.data_plane_ports:
            return False, f"{protocol} port {port} is not in the data-plane ports"
        used = self.ctx.gateway_ports.get(port)
        if used is not None and used != protocol:
            return False, f"{protocol} port {port} is used by a Gateway listener with protocol {used}"
        return True, ""

    # -- main -----------------------------------------------------------------------------
    def run(self) -> None:
        ingresses = [self.prepare(obj, *age) for age, obj in _select(self.ctx.snapshot, self.options)]
        if not ingresses:
            return
        owners: dict[tuple[str, str, str], _Path] = {}
        primaries: list[_Path] = []
        canaries: list[_Ingress] = []
        for ing in ingresses:
            self.status(ing)
            if not self.http_ok:
                self.event(ing, "PortUnavailable", self.http_why)
            if ing.is_canary:
                canaries.append(ing)
                continue
            for p in self.paths(ing):
                primaries.append(p)
                conflict_key = p.conflict_key
                owner = owners.get(conflict_key)
                if owner is None:
                    owners[conflict_key] = p
                elif owner.ing is not ing:
                    message = f"{p.describe()} is owned by the older Ingress {owner.ing.ref}"
                    if owner.path_type != p.path_type:
                        message += f" ({owner.describe()}: the same match, ImplementationSpecific is a Prefix)"
                    self.event(ing, "RouteConflict", message)
            self.tls(ing)
        for ing in canaries:
            self.canary(ing, owners)
        self._open_path_memo()
        for p in primaries:
            self.emit_memoized(p)
        if self.path_memo is not None:
            self.path_memo.clear()
            self.path_memo.update(self.path_kept)
        if self.http_ok and not self.ctx.add_listener(self.http_port, False):
            for ing in ingresses:
                self.event(ing, "PortUnavailable", f"HTTP port {self.http_port} is bound with TLS")
        if self.https_needed:
            self.ctx.add_listener(self.https_port, True)

    def prepare(self, obj: Mapping[str, Any], created: str, namespace: str, name: str) -> _Ingress:
        """``created``, ``namespace``, ``name``: the Ingress's :func:`_age_key`."""
        meta = obj.get("metadata")  # (obj: a mapping, see _select)
        if type(meta) is not dict:
            meta = _map(meta)
        raw = _map(meta.get("annotations"))
        # the compacted informer caches store equal annotation sets once: parsed once per render
        # for each set object (kept alive in the value) and namespace
        hit = self._annotations.get((id(raw), namespace))
        if hit is not None and hit[0] is raw:
            ann = hit[1]
        else:
            ann = parse_annotations(raw, namespace)
            self._annotations[(id(raw), namespace)] = (raw, ann)
        ing = _Ingress(
            obj=obj,
            namespace=namespace,
            name=name,
            uid=_str(meta.get("uid")),
            created=created,
            ann=ann,
            is_canary=ann.canary,
            plain_ids=plain_name(namespace) is not None and plain_name(name) is not None,
            owner_key=owner_part(created, namespace, name),
        )
        for name in ann.unknown:
            self.event(ing, "UnknownAnnotation", f"{name} is not a known annotation; it is ignored")
        for err in ann.errors:
            self.event(ing, "InvalidAnnotation", err.message)
        if ann.valid and not ing.is_canary:
            self.cluster_settings(ing)
        return ing

    def status(self, ing: _Ingress) -> None:
        self.ctx.add_status(ObjectStatus.of(INGRESS_API_VERSION, "Ingress", ing.namespace, ing.name, self.lb_status))

    # -- cluster settings -----------------------------------------------------------------
    def cluster_settings(self, ing: _Ingress) -> None:
        """The Ingress's cluster settings, made once per annotation set (parse_annotations
        shares equal sets), so the Ingresses of one set share one settings object."""
        ann = ing.ann
        hit = self._settings.get(id(ann))
        if hit is None or hit[0] is not ann:  # (the annotations kept alive in the value)
            hit = self._settings[id(ann)] = (ann, *self._cluster_settings(ann))
        _, ing.settings, ing.settings_error, ing.id_suffix = hit
        if ing.settings_error:
            self.event(ing, "InvalidAnnotation", ing.settings_error)

    def _cluster_settings(self, ann: IngressAnnotations) -> tuple[ClusterSettings | None, str, str]:
        """(settings or None, why not, cluster id suffix)."""
        tls: tuple[tuple[str, str], ...] = ()
        if ann.upstream_tls_secret is not None:
            files, error = self.upstream_tls(ann.upstream_tls_secret)
            if error:
                return None, error, ""
            tls = files
        settings = ClusterSettings(
            request_timeout=timespan(ann.proxy_read_timeout) if ann.proxy_read_timeout else None,
            algorithm=ann.load_balance,
            affinity_cookie=ia.AFFINITY_COOKIE_NAME if ann.affinity == "cookie" else None,
            use_https=ann.backend_protocol == "HTTPS",
            tls=tls,
        )
        if settings == DEFAULT_SETTINGS:
            settings = DEFAULT_SETTINGS  # the same clusters, and resolve_backend's fast key
        # H2C and GRPC change nothing in the cluster (the data plane follows the client's
        # HTTP version), yet the table says the backend gets its own cluster: mark the id.
        suffix = "-" + ann.backend_protocol.lower() if ann.backend_protocol in ("H2C", "GRPC") else ""
        return settings, "", suffix

    def upstream_tls(self, ref: ia.UpstreamTLSRef) -> tuple[tuple[tuple[str, str], ...], str]:
        """Validates the upstream TLS Secret and adds its PEM files to the TLS Secret (once per
        Secret per render)."""
        key = (ref.namespace, ref.name)
        cached = self._upstream.get(key)
        if cached is None:
            cached = self._upstream[key] = self._load_upstream_tls(ref)
        return cached

    def _load_upstream_tls(self, ref: ia.UpstreamTLSRef) -> tuple[tuple[tuple[str, str], ...], str]:
        label = f"{ia.UPSTREAM_TLS_SECRET}: Secret {ref.namespace}/{ref.name}"
        secret = self.ctx.snapshot.secrets.get(f"{ref.namespace}/{ref.name}")
        if not isinstance(secret, Mapping):
            return (), f"{label} not found"
        conversion = self.ctx.convert(secret)
        if not conversion.ok:
            return (), f"{label}: {conversion.error}"
        crt = _secret_bytes(secret, "tls.crt")
        key = _secret_bytes(secret, "tls.key")
        ca = _secret_bytes(secret, "ca.crt")
        if crt is None or key is None:  # convert_tls_secret accepted it, so unreachable
            return (), f"{label} lacks tls.crt or tls.key"
        if ca is not None:
            try:
                anchors = x509.load_pem_x509_certificates(ca)
            except Exception:  # noqa: BLE001 - any parse failure means "not a PEM certificate"
                anchors = []
            if not anchors:
                return (), f"{label}: ca.crt is not a PEM certificate"
        base = f"upstream.{ref.namespace}.{ref.name}"
        files = [("certFile", f"{base}.tls.crt"), ("keyFile", f"{base}.tls.key")]
        self.ctx.add_tls_file(f"{base}.tls.crt", crt)
        self.ctx.add_tls_file(f"{base}.tls.key", key)
        if ca is not None:
            files.append(("caFile", f"{base}.ca.crt"))
            self.ctx.add_tls_file(f"{base}.ca.crt", ca)
        return tuple(sorted(files)), ""

    # -- paths ----------------------------------------------------------------------------
    def paths(self, ing: _Ingress) -> list[_Path]:
        """Every route candidate of one Ingress, InvalidPath reported here."""
        spec = _map(ing.obj.get("spec"))
        out: list[_Path] = []
        prefix = f"ingress/{ing.namespace}/{ing.name}/"
        for r, rule in enumerate(_list(spec.get("rules"))):
            rule = _map(rule)
            host, host_error = normalize_host(rule.get("host"))
            for p, item in enumerate(_list(_map(rule.get("http")).get("paths"))):
                if host_error:
                    self.event(ing, "InvalidPath", f"rule {r}: {host_error}")
                    continue
                item = _map(item)
                raw_path, raw_type = item.get("path"), item.get("pathType")
                if (raw_path is None or type(raw_path) is str) and (raw_type is None or type(raw_type) is str):
                    # a few paths recur across thousands of Ingresses: normalized once per render
                    normalized = self._paths.get((raw_path, raw_type))
                    if normalized is None:
                        normalized = self._paths[(raw_path, raw_type)] = normalize_path(raw_path, raw_type)
                    path, kind, error = normalized
                else:
                    path, kind, error = normalize_path(raw_path, raw_type)
                if error:
                    # Never dropped: the path answers 500 for its own match (spec audit F10).
                    self.event(ing, "InvalidPath", f"rule {r} path {p}: {error}")
                    path, kind = invalid_path_match(raw_path, raw_type)
                    out.append(_Path(ing, f"{prefix}r{r}p{p}", r, p, host, path, kind, _str(raw_type),
                                     item.get("backend"), "InvalidPath", error))
                    continue
                out.append(_Path(ing, f"{prefix}r{r}p{p}", r, p, host, path, kind, _str(raw_type),
                                 item.get("backend")))
        if "defaultBackend" in spec and spec.get("defaultBackend") is not None:
            out.append(
                _Path(
                    ing, f"ingress/{ing.namespace}/{ing.name}/default", -1, 0, None, None, None, "",
                    spec.get("defaultBackend"),
                )
            )
        return out

    # -- TLS ------------------------------------------------------------------------------
    def tls(self, ing: _Ingress) -> None:
        entries = _list(_map(ing.obj.get("spec")).get("tls"))
        if entries and not self.https_ok:
            # One cause, one event: the port is PortUnavailable (once per Ingress, not an
            # InvalidTLS per entry); each entry is still validated below, so a bad Secret is
            # reported too, yet nothing is bound and no decrypting listener opened.
            self.event(ing, "PortUnavailable", self.https_why)
        for t, entry in enumerate(entries):
            entry = _map(entry)
            secret = entry.get("secretName")
            if not isinstance(secret, str) or not secret:
                self.event(ing, "InvalidTLS", f"tls {t}: no secretName")
                continue
            hosts: list[str] = []
            bad = False
            for raw in _list(entry.get("hosts")):
                host, error = normalize_host(raw)
                if error or host is None:
                    self.event(ing, "InvalidTLS", f"tls {t} (Secret {secret}): {error or 'empty host'}")
                    bad = True
                    break
                hosts.append(host)
            if bad:
                continue
            if not self.https_ok:
                error = self.check_tls_secret(ing.namespace, secret)
                if error:
                    self.event(ing, "InvalidTLS", f"tls {t}: {error}")
                continue  # no certificate bound, no decrypting listener
            rank = None if hosts else (ing.created, ing.namespace, ing.name, t)
            conversion = self.ctx.bind_certificate(ing.namespace, secret, sorted(set(hosts)), rank)
            if not conversion.ok:
                self.event(ing, "InvalidTLS", f"tls {t}: {conversion.error}")
                continue
            self.https_needed = True

    def check_tls_secret(self, namespace: str, name: str) -> str:
        """Why the Secret ``namespace/name`` cannot be a certificate ("" when it can), with the
        same messages as ``ctx.bind_certificate``, but binding nothing."""
        secret = self.ctx.snapshot.secrets.get(f"{namespace}/{name}")
        if secret is None:
            return f"Secret {namespace}/{name} not found"
        conversion = self.ctx.convert(secret)
        return "" if conversion.ok else f"Secret {namespace}/{name}: {conversion.error}"

    # -- backends -------------------------------------------------------------------------
    def backend_cluster(
        self, ing: _Ingress, backend: Any, settings: ClusterSettings, id_suffix: str
    ) -> tuple[dict[str, Any] | None, str, str]:
        """(cluster, reason, message): resolves an Ingress backend (the caller adds the cluster
        to the context only when a route uses it). Once per render for each distinct backend:
        a Service is usually the backend of many paths. The key is the backend's content with
        exact types (``True``, ``1.0`` and ``"1"`` are not the port ``1``); any other shape is
        resolved every time."""
        # the compacted informer caches store equal backends once: first by object
        by_object = (id(backend), ing.namespace, id(settings), id_suffix)
        seen = self._backend_objects.get(by_object)
        if seen is not None and seen[0] is backend and seen[1] is settings:
            return seen[2]
        key: tuple[Any, ...] | None = None
        if type(backend) is dict and "resource" not in backend:
            service = backend.get("service")
            if type(service) is dict:
                name, port = service.get("name"), service.get("port")
                if type(name) is str and type(port) is dict:
                    number, port_name = port.get("number"), port.get("name")
                    if (number is None or type(number) is int) and (port_name is None or type(port_name) is str):
                        # settings by identity (kept alive in the value): equal settings of
                        # two Ingresses only cost a second resolution, never a wrong one
                        key = (ing.namespace, name, number, port_name, id(settings), id_suffix)
        if key is None:
            return self._backend_cluster(ing, backend, settings, id_suffix)
        hit = self._resolved.get(key)
        if hit is None or hit[0] is not settings:
            hit = self._resolved[key] = (settings, self._backend_cluster(ing, backend, settings, id_suffix))
        self._backend_objects[by_object] = (backend, settings, hit[1])  # (both kept alive)
        return hit[1]

    def _backend_cluster(
        self, ing: _Ingress, backend: Any, settings: ClusterSettings, id_suffix: str
    ) -> tuple[dict[str, Any] | None, str, str]:
        backend = _map(backend)
        if backend.get("resource") is not None:
            return None, "UnsupportedBackend", "backend.resource is not supported"
        service = backend.get("service")
        if not isinstance(service, Mapping):
            return None, "InvalidBackend", "the backend names no Service"
        name = _str(service.get("name"))
        if not name:
            return None, "InvalidBackend", "the backend Service has no name"
        port = _map(service.get("port"))
        number, port_name = port.get("number"), port.get("name")
        ref: int | str
        if number is not None and port_name is not None:
            return None, "InvalidBackend", f"the backend Service {name} gives both a port number and name"
        if number is not None:
            if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 65535:
                return None, "InvalidBackend", f"the backend Service {name} port {number!r} is not 1-65535"
            ref = number
        elif isinstance(port_name, str) and port_name:
            # A named port resolves to its number, so the cluster is shared with every other
            # reference to the same Service port (HTTPRoute backendRefs use numbers).
            entry = self.ctx.backends.service_port(ing.namespace, name, port_name)
            number = entry.get("port") if entry is not None else None
            if isinstance(number, int) and not isinstance(number, bool):
                ref = number
            else:
                ref = port_name  # resolve_backend reports the missing Service or port
        else:
            return None, "InvalidBackend", f"the backend Service {name} has no port"
        resolution = resolve_backend(self.ctx.backends, ing.namespace, name, ref, settings)
        if not resolution.ok or resolution.cluster is None:
            # Only the Ingress page's reasons are reported on an Ingress: a backend the core
            # rejects for another reason (e.g. an ExternalName Service) is an InvalidBackend.
            reason = resolution.reason if resolution.reason == "BackendNotFound" else "InvalidBackend"
            return None, reason, resolution.message
        cluster = resolution.cluster
        if id_suffix:
            cluster = dict(cluster)
            cluster["id"] = f"{cluster['id']}{id_suffix}"
        return cluster, "", ""

    # -- canary ---------------------------------------------------------------------------
    def canary(self, ing: _Ingress, owners: Mapping[tuple[str, str, str], _Path]) -> None:
        if not ing.ann.valid:
            return  # InvalidAnnotation already reported; the canary does nothing
        for p in self.paths(ing):
            if p.error_reason:
                continue
            primary = owners.get(p.conflict_key)
            if primary is None:
                self.event(ing, "CanaryWithoutPrimary", f"no Ingress serves {p.describe()}")
                continue
            if primary.canaries:
                self.event(
                    ing,
                    "CanaryConflict",
                    f"{p.describe()} of Ingress {primary.ing.ref} already has the canary "
                    f"{primary.canaries[0][0].ref}",
                )
                continue
            if primary.ing.settings is None:
                continue  # the primary answers 500 (its own events say why)
            cluster, reason, message = self.backend_cluster(
                ing, p.backend, primary.ing.settings, primary.ing.id_suffix
            )
            if reason or cluster is None:
                self.event(ing, reason, f"{p.describe()}: {message}")
                continue
            primary.canaries = [(ing, cluster, p.route_id)]

    # -- memo (render/memo.py) ---------------------------------------------------------------
    def _open_path_memo(self) -> None:
        """What ``emit(p)`` reads besides the path, its Ingress and its canary: the options and
        the Services and Secrets (backends, upstream TLS settings)."""
        cache = self.cache
        if cache is None:
            return
        snap = self.ctx.snapshot
        parts = (memo.versions(snap.services), memo.versions(snap.secrets))
        deps = None if any(x is None for x in parts) else (self.options, *parts)
        if deps is None or deps != cache.ingress_path_deps:
            cache.ingress_paths.clear()
            cache.ingress_path_deps = deps
        self.path_memo = cache.ingress_paths if deps is not None else None

    def emit_memoized(self, p: _Path) -> None:
        """``emit(p)``, or the replay of its recording when the path's Ingress and its canary
        are the same objects (resourceVersion) as when it was recorded."""
        store = self.path_memo
        if store is None:
            self.emit(p)
            return
        sig: Any = memo.resource_version(p.ing.obj)
        if sig is not None and p.canaries:
            canary, _, canary_id = p.canaries[0]
            ver = memo.resource_version(canary.obj)
            sig = None if ver is None else (sig, canary.ref, ver, canary_id)
        if sig is None:
            self.emit(p)
            return
        hit = store.get(p.route_id)
        if hit is not None and hit[0] == sig and self.ctx.replay(hit[1]):
            self.path_kept[p.route_id] = hit
            return
        rec, _ = self.ctx.record(self.emit, p)
        if rec.replayable():
            self.path_kept[p.route_id] = (sig, rec)

    # -- routes ---------------------------------------------------------------------------
    def emit(self, p: _Path) -> None:
        ing = p.ing
        reason, message = p.error_reason, p.error_message
        cluster: dict[str, Any] | None = None
        if not reason:
            settings = ing.settings or DEFAULT_SETTINGS
            cluster, reason, message = self.backend_cluster(ing, p.backend, settings, ing.id_suffix)
            if reason:
                self.event(ing, reason, f"{p.describe()}: {message}")
        if not reason and not ing.ann.valid:
            reason, message = "InvalidAnnotation", "; ".join(e.message for e in ing.ann.errors)
        if not reason and ing.settings is None:
            reason, message = "InvalidAnnotation", ing.settings_error
        body, ranks, body_text = self.match_body(p)
        if reason or cluster is None:
            text = f"{reason or 'BackendNotFound'}: {message}"
            self.add_route(p, p.route_id, body, ranks, {"directResponse": {"status": 500, "body": text}},
                           ("d", text), False, body_text)
            return
        cid = self.ctx.add_cluster(cluster)
        canary = p.canaries[0] if p.canaries else None
        if canary is None:
            self.add_route(p, p.route_id, body, ranks, {"clusterId": cid}, ("c", cid), True, body_text)
            return
        canary_cid = self.ctx.add_cluster(canary[1])
        weight = canary[0].ann.canary_weight
        self.add_route(
            p, p.route_id, body, ranks,
            {"clusters": [{"clusterId": cid, "weight": 100 - weight}, {"clusterId": canary_cid, "weight": weight}]},
            ("w", cid, 100 - weight, canary_cid, weight), True, body_text,
        )
        header = canary[0].ann.canary_by_header
        if header:
            header_body = {**body, "headers": {header: CANARY_HEADER_VALUE}}
            self.add_route(p, canary[2], header_body, match_part(header_body), {"clusterId": canary_cid},
                           ("c", canary_cid), True)

    def match_body(self, p: _Path) -> tuple[dict[str, Any], Any, str | None]:
        """The route's match without its host (shared by every path with the same path and
        kind: never modified), its precedence part and its text (:func:`emit.match_body`)."""
        key = (p.path, p.kind) if p.path is not None and p.kind is not None else (None, None)
        hit = self._bodies.get(key)
        if hit is None:
            body = {"path": p.path, "pathKind": p.kind} if key[0] is not None else {}
            hit = self._bodies[key] = (body, match_part(body), match_body(body))
        return hit

    def decorate(self, route: dict[str, Any], p: _Path) -> None:
        """Transforms and policies of the primary's annotations."""
        transform = self.transform(p)
        if transform is not None:
            route["transforms"] = [transform]
        policies = self.policies(p.ing)
        if policies:
            route["policies"] = policies

    @staticmethod
    def transform(p: _Path) -> dict[str, Any] | None:
        target = p.ing.ann.rewrite_target
        return None if target is None else rewrite_transform(p.path, p.kind, target)

    @staticmethod
    def policies(ing: _Ingress) -> list[dict[str, Any]]:
        before, after = _Translator.shared_policies(ing.ann)
        rate = [_Translator.rate_limit(ing)] if ing.ann.limit_rps is not None else []
        return [*before, *rate, *after]

    @staticmethod
    def shared_policies(ann: IngressAnnotations) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The policies of an annotation set before and after its RateLimit (the one policy
        that names its Ingress), in the contract's order."""
        before: list[dict[str, Any]] = []
        if ann.whitelist_source_range is not None:
            before.append({"kind": "IpAllowDeny", "parameters": {"allow": list(ann.whitelist_source_range)}})
        after: list[dict[str, Any]] = []
        if ann.cors_allow_origin is not None:
            after.append({"kind": "Cors", "parameters": {"allowOrigins": list(ann.cors_allow_origin)}})
        if ann.proxy_body_size is not None:
            after.append({"kind": "MaxRequestBodySize", "parameters": {"bytes": str(ann.proxy_body_size)}})
        if ann.auth_url is not None:
            after.append({"kind": "ExtAuth", "parameters": {"url": ann.auth_url, "timeout": EXT_AUTH_TIMEOUT}})
        return before, after

    @staticmethod
    def rate_limit(ing: _Ingress) -> dict[str, Any]:
        """The RateLimit policy of an Ingress with a limit-rps annotation: one partition per Ingress."""
        return {
            "kind": "RateLimit",
            "parameters": {
                "requestsPerSecond": str(ing.ann.limit_rps),
                "window": "00:00:01",
                "partition": f"ingress/{ing.namespace}/{ing.name}",
            },
        }

    # The text after a route's match line is the text of each of its keys in the contract's
    # order (emit.route_tail writes one key's lines from its value alone; a test checks the
    # concatenation): the action, the transforms (per annotation set and path) and the
    # policies (per annotation set, and Ingress for a RateLimit partition) are each written
    # once per render and shared.
    def action_text(self, key: tuple[Any, ...], action: dict[str, Any]) -> str | None:
        """``key``: the action's content, strings and validated ints only (equal keys, equal
        text)."""
        text = self._action_text.get(key, "")
        if text == "":
            text = self._action_text[key] = route_tail(action)
        return text

    def transform_text(self, p: _Path) -> str | None:
        ann = p.ing.ann
        if ann.rewrite_target is None:
            return ""
        key = (id(ann), p.path, p.kind)  # the annotations by identity, kept alive in the value
        hit = self._transform_text.get(key)
        if hit is None or hit[0] is not ann:
            transform = self.transform(p)
            hit = self._transform_text[key] = (ann, "" if transform is None else route_tail({"transforms": [transform]}))
        return hit[1]

    def policies_text(self, ing: _Ingress) -> str | None:
        """``route_tail({"policies": self.policies(ing)})`` ("" for none): the lines of an
        annotation set's shared policies once per render, a RateLimit's line once per Ingress."""
        ann = ing.ann
        key = (id(ann), ing.ref if ann.limit_rps is not None else None)
        hit = self._policies_text.get(key)
        if hit is None or hit[0] is not ann:
            shared = self._policy_lines.get(id(ann))
            if shared is None or shared[0] is not ann:
                before, after = self.shared_policies(ann)
                shared = self._policy_lines[id(ann)] = (ann, kind_lines(before), kind_lines(after))
            _, before_text, after_text = shared
            rate = kind_lines([self.rate_limit(ing)]) if ann.limit_rps is not None else ""
            if before_text is None or rate is None or after_text is None:
                text = None
            else:
                lines = before_text + rate + after_text
                text = "  policies:\n" + lines if lines else ""
            hit = self._policies_text[key] = (ann, text)
        return hit[1]

    @staticmethod
    def tier(p: _Path) -> int:
        if p.is_default:
            return TIER_DEFAULT_BACKEND
        return TIER_DEGRADED if p.error_reason == "InvalidPath" else TIER_NORMAL

    def add_route(self, p: _Path, route_id: str, body: dict[str, Any], ranks: Any, action: dict[str, Any],
                  action_key: tuple[Any, ...], decorated: bool, body_text: str | None = None) -> None:
        """Adds the route ``{"id", "match": {"host": p.host, **body}, **action}`` (with the
        primary's transforms and policies when ``decorated``) as text; the route dict only
        when the fast writer cannot write it. ``body_text``: ``emit.match_body(body)``, if known."""
        ing = p.ing
        host = p.host
        key = key_from_parts(self.tier(p), self.ctx.host_part(host), ranks, ing.owner_key, max(p.rule, 0), p.index)
        tail = self.action_text(action_key, action)
        if decorated and tail is not None:
            transforms, policies = self.transform_text(p), self.policies_text(ing)
            if transforms is None or policies is None:
                tail = None
            elif transforms or policies:
                parts = (tail, transforms, policies)
                joined = self._tails.get(parts)
                if joined is None:
                    joined = self._tails[parts] = "".join(parts)
                tail = joined
        plain_id = ing.plain_ids and route_id is p.route_id  # (a canary's route has its Ingress's id)
        if tail is not None and self.ctx.add_route_text(route_id, host, body, key, tail, body_text, plain_id) is not None:
            return
        route: dict[str, Any] = {"id": route_id, "match": {"host": host, **body} if host is not None else dict(body)}
        route.update(action)
        if decorated:
            self.decorate(route, p)
        self.ctx.add_route(route, key)


def _secret_bytes(secret: Mapping[str, Any], key: str) -> bytes | None:
    data = _map(secret.get("data"))
    if isinstance(data.get(key), str):
        try:
            return base64.b64decode(data[key], validate=True)
        except (binascii.Error, ValueError):
            return None
    string_data = _map(secret.get("stringData"))
    if isinstance(string_data.get(key), str):
        return str(string_data[key]).encode()
    return None


def load_balancer_ingress(snapshot: Any, service_ref: tuple[str, str]) -> list[dict[str, str]]:
    """``status.loadBalancer.ingress`` entries of the data-plane Service (ip / hostname), else
    its ``spec.clusterIP``; [] when the Service is absent or has no address."""
    namespace, name = service_ref
    svc = snapshot.services.get(f"{namespace}/{name}")
    if not isinstance(svc, Mapping):
        return []
    out: list[dict[str, str]] = []
    for entry in _list(_map(_map(svc.get("status")).get("loadBalancer")).get("ingress")):
        entry = _map(entry)
        item = {k: entry[k] for k in ("ip", "hostname") if isinstance(entry.get(k), str) and entry[k]}
        if item and item not in out:
            out.append(item)
    if out:
        return out
    cluster_ip = _map(svc.get("spec")).get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip and cluster_ip != "None":
        return [{"ip": cluster_ip}]
    return []


def translate(ctx: Any, cache: Any = None) -> None:
    """Translate every owned Ingress of ``ctx.snapshot`` into ``ctx`` (routes, clusters,
    listeners, certificates, TLS files, events, statuses). See the module docstring. With a
    :class:`~titanium_gateway.render.memo.RenderCache`, the routes of a path whose Ingress (and
    canary) did not change are replayed (render/memo.py)."""
    _Translator(ctx, cache).run()


__all__: tuple[str, ...] = (
    "translate",
    "select_ingresses",
    "is_owned",
    "owned_classes",
    "normalize_host",
    "normalize_path",
    "invalid_path_match",
    "rewrite_transform",
    "load_balancer_ingress",
)
