"""Ingress (networking.k8s.io/v1) -> model routes + clusters + statuses and events.

:func:`translate` is called by :func:`titanium_gateway.render.render` after the Gateway
listeners and HTTPRoutes are in the :class:`~titanium_gateway.render.builder.RenderContext`.
:class:`Translator` (one render's state of the Ingress translation, in the HTTPRoute
translator's style: memos keyed by values):

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

import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509

from titanium_gateway.nginx_annotations import (
    FOREIGN_ANNOTATION_REASON,
    foreign_annotation_message,
    ingress_foreign_annotations,
)
from titanium_gateway.nginx_annotations import PREFIX as NGINX_PREFIX
from titanium_gateway.render import fields as f
from titanium_gateway.render import ingress_annotations as ia
from titanium_gateway.render import memo
from titanium_gateway.render.backends import resolve_backend
from titanium_gateway.render.builder import RenderContext, with_id_suffix
from titanium_gateway.render.certificates import secret_data
from titanium_gateway.render.ingress_annotations import IngressAnnotations, parse_annotations
from titanium_gateway.render.model import (
    DEFAULT_SETTINGS,
    Behavior,
    Cluster,
    ClusterSettings,
    Cors,
    DirectResponse,
    ExtAuth,
    Forward,
    IpAllowDeny,
    Match,
    MaxRequestBodySize,
    PathRegexReplace,
    Policy,
    RateLimit,
    Route,
    Source,
    Split,
    WeightedCluster,
)
from titanium_gateway.render.precedence import (
    TIER_DEFAULT_BACKEND,
    TIER_DEGRADED,
    TIER_NORMAL,
    creation_timestamp,
    key_from_parts,
    match_part,
    owner_part,
)
from titanium_gateway.render.regex import regex_escape
from titanium_gateway.render.result import EventRecord, ObjectStatus

INGRESS_API_VERSION = "networking.k8s.io/v1"
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
#: The legacy annotation value that always means this controller (with --watch-legacy-annotation).
LEGACY_CLASS_NAME = "titanium"
#: Timeout of the ExtAuth subrequest (the seed gives none; see docs/ingress.md).
EXT_AUTH_TIMEOUT = "00:00:05"
#: Value of the canary-by-header header that forces the canary.
CANARY_HEADER_VALUE = "always"

PATH_TYPES = ("Exact", "Prefix", "ImplementationSpecific")
#: whitespace, control characters, ``?``, ``#`` and lone surrogates (which no YAML can hold)
_PATH_FORBIDDEN = re.compile("[\\s\\x00-\\x1f\\x7f?#\ud800-\udfff]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")
_first = operator.itemgetter(0)


# -- class selection ------------------------------------------------------------------------
def owned_classes(ingress_classes: Mapping[str, Any], controller_name: str) -> tuple[set[str], bool]:
    """Names of the IngressClasses whose ``spec.controller`` is ours, and whether one of them
    is the default class (annotation ``ingressclass.kubernetes.io/is-default-class: "true"``)."""
    names: set[str] = set()
    has_default = False
    for key, cls in ingress_classes.items():
        if f.string(f.mapping(f.mapping(cls).get("spec")).get("controller")) != controller_name:
            continue
        meta = f.metadata(cls)
        names.add(f.string(meta.get("name")) or str(key))
        if f.string(f.mapping(meta.get("annotations")).get(DEFAULT_CLASS_ANNOTATION)) == "true":
            has_default = True
    return names, has_default


def is_owned(ingress: Any, owned: set[str], has_default: bool, watch_legacy_annotation: bool) -> bool:
    """Whether this controller serves ``ingress`` (see the Ingress page, "Choosing")."""
    class_name = f.mapping(f.mapping(ingress).get("spec")).get("ingressClassName")
    if isinstance(class_name, str) and class_name:
        return class_name in owned  # ingressClassName always wins
    legacy = f.mapping(f.metadata(ingress).get("annotations")).get(LEGACY_CLASS_ANNOTATION)
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
        meta = f.metadata(ing)
        name, ns = f.name_of(meta), f.namespace_of(meta)
        if not name or ns is None:
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
        selected.append(((created, ns, name), ing))
    selected.sort(key=_first)  # stable: equal keys keep the snapshot's order
    return selected


def _age_key(ing: Any) -> tuple[str, str, str]:
    meta = f.metadata(ing)
    return (creation_timestamp(ing), f.namespace_of(meta) or "default", f.name_of(meta))


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
    whitespace, a control character, ``?``, ``#`` or a lone surrogate, is an error, as is another
    pathType. An absent or empty path with pathType ``ImplementationSpecific`` (which the
    Ingress API allows: "an unspecified path matches all paths") is the Prefix ``/``.
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
    paths): (None, None). The route goes in the degraded tier (:meth:`Translator.tier`), after
    every normal route, so it never shadows another path.
    """
    if not isinstance(raw_path, str) or not raw_path:
        return None, None
    if path_type in ("Prefix", "ImplementationSpecific"):
        return raw_path.rstrip("/") or raw_path, "Prefix"
    return raw_path, "Exact"


def rewrite_transform(path: str | None, kind: str | None, target: str) -> PathRegexReplace | None:
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
    return PathRegexReplace(pattern, replacement)


def shared_policies(ann: IngressAnnotations) -> tuple[tuple[Policy, ...], tuple[Policy, ...]]:
    """The policies of an annotation set before and after its RateLimit (the one policy that
    names its Ingress), in the contract's order."""
    before: list[Policy] = []
    if ann.whitelist_source_range is not None:
        before.append(IpAllowDeny(tuple(ann.whitelist_source_range)))
    after: list[Policy] = []
    if ann.cors_allow_origin is not None:
        after.append(Cors(tuple(ann.cors_allow_origin)))
    if ann.proxy_body_size is not None:
        after.append(MaxRequestBodySize(ann.proxy_body_size))
    if ann.auth_url is not None:
        after.append(ExtAuth(ann.auth_url, EXT_AUTH_TIMEOUT))
    return tuple(before), tuple(after)


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
    source: Source
    settings: ClusterSettings | None = None  # None: upstream TLS Secret unusable
    settings_error: str = ""
    id_suffix: str = ""
    #: its routes' policies (the annotation set's, with its own RateLimit) and their key, once made
    policies: tuple[Policy, ...] | None = None
    policies_key: tuple[Any, ...] = ()

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
    #: (canary path, its cluster (added only when the primary forwards)): at most one (a second
    #: canary is a CanaryConflict); () until there is one
    canaries: tuple[tuple[_Path, Cluster], ...] = ()

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


Resolved = tuple[Cluster | None, str, str]


class Translator:
    """The Ingress translation of one render (see the module doc)."""

    def __init__(self, ctx: RenderContext, cache: memo.RenderCache | None = None) -> None:
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
        # Per-render memos, each value a pure function of its key and of this render's input.
        self._upstream: dict[tuple[str, str], tuple[tuple[tuple[str, str], ...], str]] = {}
        #: (path, pathType) of exact types (str or None) -> normalize_path of them
        self._paths: dict[tuple[Any, Any], tuple[str | None, str | None, str]] = {}
        #: what cluster settings read of an annotation set -> (settings or None, why not, id suffix)
        self._settings: dict[tuple[Any, ...], tuple[ClusterSettings | None, str, str]] = {}
        #: what the shared policies read of an annotation set -> (before, after) its RateLimit
        self._policies: dict[tuple[Any, ...], tuple[tuple[Policy, ...], tuple[Policy, ...]]] = {}
        #: a backend by exact-typed content -> (cluster, reason, message)
        self._resolved: dict[tuple[Any, ...], Resolved] = {}
        #: (path, kind) -> the match (host aside) and its precedence part
        self._matches: dict[tuple[Any, Any], tuple[Match, str]] = {}
        #: (rewrite target, path, kind) -> the transforms of a route
        self._transforms: dict[tuple[Any, ...], tuple[PathRegexReplace, ...]] = {}
        #: (action, transforms, policies keys) -> the behavior of the routes that have them
        self._behaviors: dict[tuple[Any, ...], Behavior] = {}

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
            paths = self.paths(ing)
            if not paths:
                self.not_served(ing, "none of its paths is valid (InvalidPath events say why)" if any(
                    f.items(f.mapping(f.mapping(rule).get("http")).get("paths"))
                    for rule in f.items(f.mapping(ing.obj.get("spec")).get("rules")))
                    else "it has no rule paths and no defaultBackend")
            for p in paths:
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

    def not_served(self, ing: _Ingress, why: str) -> None:
        """An owned Ingress none of whose routes a request can reach: a ``NotServed`` event."""
        self.event(ing, "NotServed", f"the Ingress is not served: {why}")

    def prepare(self, obj: Mapping[str, Any], created: str, namespace: str, name: str) -> _Ingress:
        """``created``, ``namespace``, ``name``: the Ingress's :func:`_age_key`."""
        meta = f.metadata(obj)
        ann = parse_annotations(f.mapping(meta.get("annotations")), namespace)  # (by content: shared)
        ing = _Ingress(
            obj=obj,
            namespace=namespace,
            name=name,
            uid=f.string(meta.get("uid")),
            created=created,
            ann=ann,
            is_canary=ann.canary,
            owner_key=owner_part(created, namespace, name),
            source=Source("Ingress", namespace, name),
        )
        for unknown in ann.unknown:
            self.event(ing, "UnknownAnnotation", f"{unknown} is not a known annotation; it is ignored")
        for err in ann.errors:
            self.event(ing, "InvalidAnnotation", err.message)
        foreign = foreign_annotations_note(obj, f.mapping(meta.get("annotations")))
        if foreign:
            self.event(ing, FOREIGN_ANNOTATION_REASON, foreign)
        if ann.valid and not ing.is_canary:
            self.cluster_settings(ing)
        return ing

    def status(self, ing: _Ingress) -> None:
        self.ctx.add_status(ObjectStatus.of(INGRESS_API_VERSION, "Ingress", ing.namespace, ing.name, self.lb_status))

    # -- cluster settings -----------------------------------------------------------------
    def cluster_settings(self, ing: _Ingress) -> None:
        """The Ingress's cluster settings, made once per render for what they read of its
        annotations, so the Ingresses of one annotation set share one settings object."""
        ann = ing.ann
        key = (ann.proxy_read_timeout, ann.load_balance, ann.affinity, ann.backend_protocol, ann.upstream_tls_secret)
        hit = self._settings.get(key)
        if hit is None:
            hit = self._settings[key] = self._cluster_settings(ann)
        ing.settings, ing.settings_error, ing.id_suffix = hit
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
            request_timeout=f.timespan(ann.proxy_read_timeout * 1000) if ann.proxy_read_timeout else None,
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
        conversion = self.ctx.convert(ref.namespace, ref.name)
        if conversion is None or not f.is_mapping(secret):
            return (), f"{label} not found"
        if not conversion.ok:
            return (), f"{label}: {conversion.error}"
        crt = secret_data(secret, "tls.crt")
        key = secret_data(secret, "tls.key")
        ca = secret_data(secret, "ca.crt")
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
        spec = f.mapping(ing.obj.get("spec"))
        out: list[_Path] = []
        prefix = f"ingress/{ing.namespace}/{ing.name}/"
        for r, rule in enumerate(f.items(spec.get("rules"))):
            rule = f.mapping(rule)
            host, host_error = normalize_host(rule.get("host"))
            for p, item in enumerate(f.items(f.mapping(rule.get("http")).get("paths"))):
                if host_error:
                    self.event(ing, "InvalidPath", f"rule {r}: {host_error}")
                    continue
                item = f.mapping(item)
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
                    # Never dropped: the path answers 500 for its own match (spec audit F10), but
                    # for a path no request can have (a lone surrogate: it cannot be written either).
                    self.event(ing, "InvalidPath", f"rule {r} path {p}: {error}")
                    path, kind = invalid_path_match(raw_path, raw_type)
                    if path is not None and not f.writable(path):
                        continue
                    out.append(_Path(ing, f"{prefix}r{r}p{p}", r, p, host, path, kind, f.string(raw_type),
                                     item.get("backend"), "InvalidPath", error))
                    continue
                out.append(_Path(ing, f"{prefix}r{r}p{p}", r, p, host, path, kind, f.string(raw_type),
                                 item.get("backend")))
        if "defaultBackend" in spec and spec.get("defaultBackend") is not None:
            out.append(_Path(ing, f"{prefix}default", -1, 0, None, None, None, "", spec.get("defaultBackend")))
        return out

    # -- TLS ------------------------------------------------------------------------------
    def tls(self, ing: _Ingress) -> None:
        entries = f.items(f.mapping(ing.obj.get("spec")).get("tls"))
        if entries and not self.https_ok:
            # One cause, one event: the port is PortUnavailable (once per Ingress, not an
            # InvalidTLS per entry); each entry is still validated below, so a bad Secret is
            # reported too, yet nothing is bound and no decrypting listener opened.
            self.event(ing, "PortUnavailable", self.https_why)
        for t, entry in enumerate(entries):
            entry = f.mapping(entry)
            secret = f.text(entry.get("secretName"))
            if not secret:
                self.event(ing, "InvalidTLS", f"tls {t}: no secretName")
                continue
            hosts: list[str] = []
            bad = False
            for raw in f.items(entry.get("hosts")):
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
        conversion = self.ctx.convert(namespace, name)
        if conversion is None:
            return self.ctx.missing_secret(namespace, name)
        return "" if conversion.ok else f"Secret {namespace}/{name}: {conversion.error}"

    # -- backends -------------------------------------------------------------------------
    def backend_cluster(self, ing: _Ingress, backend: Any, settings: ClusterSettings, id_suffix: str) -> Resolved:
        """(cluster, reason, message): resolves an Ingress backend (the caller adds the cluster
        to the context only when a route uses it). Once per render for each distinct backend:
        a Service is usually the backend of many paths. The key is the backend's content with
        exact types (``True``, ``1.0`` and ``"1"`` are not the port ``1``); any other shape is
        resolved every time."""
        key: tuple[Any, ...] | None = None
        if type(backend) is dict and "resource" not in backend:
            service = backend.get("service")
            if type(service) is dict:
                name, port = service.get("name"), service.get("port")
                if type(name) is str and type(port) is dict:
                    number, port_name = port.get("number"), port.get("name")
                    if (number is None or type(number) is int) and (port_name is None or type(port_name) is str):
                        key = (ing.namespace, name, number, port_name, settings, id_suffix)
        if key is None:
            return self._backend_cluster(ing, backend, settings, id_suffix)
        hit = self._resolved.get(key)
        if hit is None:
            hit = self._resolved[key] = self._backend_cluster(ing, backend, settings, id_suffix)
        return hit

    def _backend_cluster(self, ing: _Ingress, backend: Any, settings: ClusterSettings, id_suffix: str) -> Resolved:
        backend = f.mapping(backend)
        if backend.get("resource") is not None:
            return None, "UnsupportedBackend", "backend.resource is not supported"
        service = backend.get("service")
        if not isinstance(service, Mapping):
            return None, "InvalidBackend", "the backend names no Service"
        name = f.text(service.get("name"))
        if not name:
            return None, "InvalidBackend", "the backend Service has no name"
        port = f.mapping(service.get("port"))
        number, port_name = port.get("number"), port.get("name")
        ref: int | str
        if number is not None and port_name is not None:
            return None, "InvalidBackend", f"the backend Service {name} gives both a port number and name"
        if number is not None:
            if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 65535:
                return None, "InvalidBackend", f"the backend Service {name} port {number!r} is not 1-65535"
            ref = number
        elif f.text(port_name):
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
        return (with_id_suffix(cluster, id_suffix) if id_suffix else cluster), "", ""

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
                    f"{primary.canaries[0][0].ing.ref}",
                )
                continue
            if primary.ing.settings is None:
                continue  # the primary answers 500 (its own events say why)
            cluster, reason, message = self.backend_cluster(ing, p.backend, primary.ing.settings, primary.ing.id_suffix)
            if reason or cluster is None:
                self.event(ing, reason, f"{p.describe()}: {message}")
                continue
            primary.canaries = ((p, cluster),)

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
            canary = p.canaries[0][0]
            ver = memo.resource_version(canary.ing.obj)
            sig = None if ver is None else (sig, canary.ing.ref, ver, canary.route_id)
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
        cluster: Cluster | None = None
        if not reason:
            settings = ing.settings or DEFAULT_SETTINGS
            cluster, reason, message = self.backend_cluster(ing, p.backend, settings, ing.id_suffix)
            if reason:
                self.event(ing, reason, f"{p.describe()}: {message}")
        if not reason and not ing.ann.valid:
            reason, message = "InvalidAnnotation", "; ".join(e.message for e in ing.ann.errors)
        if not reason and ing.settings is None:
            reason, message = "InvalidAnnotation", ing.settings_error
        match, ranks = self.match(p.path, p.kind)
        if reason or cluster is None:
            body = f"{reason or 'BackendNotFound'}: {message}"
            self.add_route(p, p, p.route_id, match, ranks, self.behavior(("d", body), p, False))
            return
        cid = self.ctx.add_cluster(cluster)
        canary = p.canaries[0] if p.canaries else None
        if canary is None:
            self.add_route(p, p, p.route_id, match, ranks, self.behavior(("c", cid), p, True))
            return
        canary_path, canary_cluster = canary
        canary_cid = self.ctx.add_cluster(canary_cluster)
        weight = canary_path.ing.ann.canary_weight
        self.add_route(p, p, p.route_id, match, ranks, self.behavior(("w", cid, 100 - weight, canary_cid, weight), p, True))
        header = canary_path.ing.ann.canary_by_header
        if header:
            header_match = Match(match.path, match.path_kind, headers=((header, CANARY_HEADER_VALUE),))
            self.add_route(p, canary_path, canary_path.route_id, header_match, match_part(header_match),
                           self.behavior(("c", canary_cid), p, True))

    def behavior(self, action: tuple[Any, ...], p: _Path, decorated: bool) -> Behavior:
        """The behavior of a route of ``p`` with ``action`` (``("c", cluster id)``, ``("w", cluster
        id, weight, canary cluster id, weight)`` or ``("d", 500 body)``), with the primary's
        transforms and policies when ``decorated``: one object for the routes of equal content
        (a few backends and annotation sets serve thousands of paths)."""
        if decorated:
            target = p.ing.ann.rewrite_target
            policies = self.policies(p.ing)
            key = (action, None if target is None else (target, p.path, p.kind), p.ing.policies_key)
        else:
            key = action
        made = self._behaviors.get(key)
        if made is None:
            kind = action[0]
            if kind == "c":
                made_action: Any = Forward(action[1])
            elif kind == "w":
                made_action = Split((WeightedCluster(action[1], action[2]), WeightedCluster(action[3], action[4])))
            else:
                made_action = DirectResponse(500, action[1])
            made = self._behaviors[key] = (Behavior(made_action, None, self.transforms(p), policies) if decorated
                                           else Behavior(made_action))
        return made

    def match(self, path: str | None, kind: str | None) -> tuple[Match, str]:
        """The route's match without its host (shared by every path with the same path and
        kind) and its precedence part."""
        key = (path, kind) if path is not None and kind is not None else (None, None)
        hit = self._matches.get(key)
        if hit is None:
            match = Match(path, kind) if key[0] is not None else Match()
            hit = self._matches[key] = (match, match_part(match))
        return hit

    def transforms(self, p: _Path) -> tuple[PathRegexReplace, ...]:
        """The transforms of the primary's annotations for one path."""
        target = p.ing.ann.rewrite_target
        if target is None:
            return ()
        key = (target, p.path, p.kind)
        hit = self._transforms.get(key)
        if hit is None:
            transform = rewrite_transform(p.path, p.kind, target)
            hit = self._transforms[key] = () if transform is None else (transform,)
        return hit

    def policies(self, ing: _Ingress) -> tuple[Policy, ...]:
        """The policies of the primary's annotations: the annotation set's, with a RateLimit of
        the Ingress's own partition."""
        if ing.policies is None:
            ann = ing.ann
            key = (ann.whitelist_source_range, ann.cors_allow_origin, ann.proxy_body_size, ann.auth_url)
            shared = self._policies.get(key)
            if shared is None:
                shared = self._policies[key] = shared_policies(ann)
            before, after = shared
            if ann.limit_rps is not None:
                rate = RateLimit(ann.limit_rps, "00:00:01", f"ingress/{ing.namespace}/{ing.name}")
                ing.policies = (*before, rate, *after)
                ing.policies_key = (key, ann.limit_rps, rate.partition)
            else:
                ing.policies = before + after
                ing.policies_key = key
        return ing.policies

    @staticmethod
    def tier(p: _Path) -> int:
        if p.is_default:
            return TIER_DEFAULT_BACKEND
        return TIER_DEGRADED if p.error_reason == "InvalidPath" else TIER_NORMAL

    def add_route(self, p: _Path, source: _Path, route_id: str, match: Match, ranks: str, behavior: Behavior) -> None:
        """A route of path ``p`` (its precedence); ``source``: the path it is made of (``p``, or
        the canary path of its canary-by-header route)."""
        key = key_from_parts(self.tier(p), self.ctx.host_part(p.host), ranks, p.ing.owner_key, max(p.rule, 0), p.index)
        self.ctx.add_route(Route(route_id, p.host, match, behavior, key, source.ing.source, source.rule, source.index))


def load_balancer_ingress(snapshot: Any, service_ref: tuple[str, str]) -> list[dict[str, str]]:
    """``status.loadBalancer.ingress`` entries of the data-plane Service (ip / hostname), else
    its ``spec.clusterIP``; [] when the Service is absent or has no address."""
    namespace, name = service_ref
    svc = snapshot.services.get(f"{namespace}/{name}")
    if not isinstance(svc, Mapping):
        return []
    out: list[dict[str, str]] = []
    for entry in f.items(f.mapping(f.mapping(svc.get("status")).get("loadBalancer")).get("ingress")):
        entry = f.mapping(entry)
        item = {k: entry[k] for k in ("ip", "hostname") if isinstance(entry.get(k), str) and entry[k]}
        if item and item not in out:
            out.append(item)
    if out:
        return out
    cluster_ip = f.mapping(svc.get("spec")).get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip and cluster_ip != "None":
        return [{"ip": cluster_ip}]
    return []


def foreign_annotations_note(obj: Mapping[str, Any], annotations: Mapping[str, Any]) -> str:
    """The note of a served Ingress's ``ForeignAnnotation`` Warning Event: the
    ``nginx.ingress.kubernetes.io/`` annotations that change security or routing and are not in
    force here (``nginx_annotations.foreign_annotations``); "" when there are none."""
    if not any(type(k) is str and k.startswith(NGINX_PREFIX) for k in annotations):
        return ""
    found = ingress_foreign_annotations(obj)
    return foreign_annotation_message(found) if found else ""


def translate(ctx: RenderContext, cache: memo.RenderCache | None = None) -> None:
    """Translate every owned Ingress of ``ctx.snapshot`` into ``ctx`` (routes, clusters,
    listeners, certificates, TLS files, events, statuses). See the module docstring. With a
    :class:`~titanium_gateway.render.memo.RenderCache`, the routes of a path whose Ingress (and
    canary) did not change are replayed (render/memo.py)."""
    Translator(ctx, cache).run()


__all__: tuple[str, ...] = (
    "translate",
    "Translator",
    "select_ingresses",
    "is_owned",
    "owned_classes",
    "normalize_host",
    "normalize_path",
    "invalid_path_match",
    "rewrite_transform",
    "shared_policies",
    "load_balancer_ingress",
)
