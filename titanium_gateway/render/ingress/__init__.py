"""Ingress (networking.k8s.io/v1) -> model routes + clusters + statuses and events.

:func:`translate` is called by :func:`titanium_gateway.render.render` after the Gateway
listeners and HTTPRoutes are in the :class:`~titanium_gateway.render.builder.RenderContext`.
Modules, one job each, in the HTTPRoute translator's style (memos keyed by values):

* ``ownership`` - which Ingresses are ours (ingressClassName, the default IngressClass, the
  legacy ``kubernetes.io/ingress.class`` annotation), and why the others are not;
* ``annotations`` - the ``titanium.io/`` annotations, one validated parser each;
* ``nginx`` - what each ``nginx.ingress.kubernetes.io/`` annotation means here (the
  ``ForeignAnnotation`` events; ``migrate-ingress``);
* ``objects`` - the translation's view of an owned Ingress and of its paths;
* ``paths`` - hosts and paths normalized, one route candidate per path (InvalidPath);
* ``backends`` - the cluster settings of an annotation set, a backend's cluster;
* ``routes`` - a path's routes: its cluster (with its canary's share and header route), the
  annotations' transforms and policies, or a 500 with why;
* ``canary``, ``tls`` - canary Ingresses bound to their primary; ``tls`` Secrets bound;
* ``status`` - ``status.loadBalancer`` and the Warning Events of an owned Ingress.

:class:`Translator` (one render's Ingress translation) runs them: owned Ingresses oldest first,
their annotations and cluster settings, every path (a path owned by an older Ingress is a
RouteConflict), TLS, canaries, the routes of every primary path (replayed per path from a
:class:`~titanium_gateway.render.memo.RenderCache` while its Ingress and canary are unchanged),
then the HTTP and HTTPS data-plane listeners.

Everything is indexed once (dicts keyed by host/path/type), so the work is linear in the
number of Ingress paths. Never raises on malformed input; deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render import memo
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.ingress import canary, ownership, status, tls
from titanium_gateway.render.ingress.backends import Backends
from titanium_gateway.render.ingress.nginx import FOREIGN_ANNOTATION_REASON, foreign_annotations_note
from titanium_gateway.render.ingress.objects import IngressInfo, PathInfo
from titanium_gateway.render.ingress.paths import Paths
from titanium_gateway.render.ingress.routes import Routes
from titanium_gateway.render.ingress.status import event, shadowed_paths
from titanium_gateway.render.ingress.titanium import parse_annotations
from titanium_gateway.render.precedence import owner_part
from titanium_gateway.render.status.ingress import IngressStatuses
from titanium_gateway.twp.model import Source

__all__ = ["Translator", "shadowed_paths", "translate"]


class Translator:
    """The Ingress translation of one render (see the module doc). ``Backends`` and ``Routes``
    make its parts (a test replaces them with versions without memos)."""

    Backends = Backends
    Routes = Routes

    def __init__(self, ctx: RenderContext, cache: memo.RenderCache | None = None) -> None:
        self.ctx = ctx
        #: render/memo.py: recordings of ``Routes.emit`` per path, valid while the path deps hold
        self.cache = cache
        self.path_memo: dict[str, Any] | None = None
        self.path_kept: dict[str, Any] = {}
        options = self.options = ctx.options
        self.http_port = options.data_plane_port(80)
        self.https_port = options.data_plane_port(443)
        self.lb_addresses = tuple(status.load_balancer_ingress(ctx.snapshot, options.data_plane_service))
        self.statuses = IngressStatuses()
        self.http_ok, self.http_why = self._port_usable(self.http_port, "HTTP")
        self.https_ok, self.https_why = self._port_usable(self.https_port, "HTTPS")
        self.https_needed = False
        self.paths = Paths(ctx)
        self.backends = self.Backends(ctx)
        self.routes = self.Routes(ctx, self.backends)

    def _port_usable(self, port: int, protocol: str) -> tuple[bool, str]:
        if port not in self.options.data_plane_ports:
            return False, f"{protocol} port {port} is not in the data-plane ports"
        used = self.ctx.gateway_ports.get(port)
        if used is not None and used != protocol:
            return False, f"{protocol} port {port} is used by a Gateway listener with protocol {used}"
        return True, ""

    # -- main -----------------------------------------------------------------------------
    def run(self) -> None:
        ctx = self.ctx
        selected, not_ours = ownership.select(ctx.snapshot, self.options)
        for record in not_ours:
            ctx.not_ours(record)
        ingresses = [self.prepare(obj, *age) for age, obj in selected]
        if not ingresses:
            return
        owners: dict[tuple[str, str, str], PathInfo] = {}
        primaries: list[PathInfo] = []
        canaries: list[IngressInfo] = []
        for ing in ingresses:
            status.status(ctx, ing, self.lb_addresses, self.statuses)
            if not self.http_ok:
                event(ctx, ing, "PortUnavailable", self.http_why)
            if ing.is_canary:
                canaries.append(ing)
                continue
            paths = self.paths.of(ing)
            if not paths:
                status.not_served(ctx, ing, "none of its paths is valid (InvalidPath events say why)" if any(
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
                    event(ctx, ing, "RouteConflict", message)
            if tls.bind(ctx, ing, self.https_ok, self.https_why):
                self.https_needed = True
        for ing in canaries:
            canary.bind(ctx, ing, self.paths, owners, self.backends)
        self._open_path_memo()
        for p in primaries:
            self.emit_memoized(p)
        if self.path_memo is not None:
            self.path_memo.clear()
            self.path_memo.update(self.path_kept)
        if self.http_ok and not ctx.add_listener(self.http_port, False):
            for ing in ingresses:
                event(ctx, ing, "PortUnavailable", f"HTTP port {self.http_port} is bound with TLS")
        if self.https_needed:
            ctx.add_listener(self.https_port, True)

    def prepare(self, obj: Mapping[str, Any], created: str, namespace: str, name: str) -> IngressInfo:
        """``created``, ``namespace``, ``name``: the Ingress's :func:`.ownership.age_key`."""
        meta = f.metadata(obj)
        ann = parse_annotations(f.mapping(meta.get("annotations")), namespace)  # (by content: shared)
        ing = IngressInfo(
            obj=obj,
            namespace=namespace,
            name=name,
            uid=f.string(meta.get("uid")),
            created=created,
            ann=ann,
            is_canary=ann.canary,
            owner_key=owner_part(created, namespace, name),
            source=Source(kinds.INGRESS.kind, namespace, name),
        )
        for unknown in ann.unknown:
            event(self.ctx, ing, "UnknownAnnotation", f"{unknown} is not a known annotation; it is ignored")
        for err in ann.errors:
            event(self.ctx, ing, "InvalidAnnotation", err.message)
        foreign = foreign_annotations_note(obj, f.mapping(meta.get("annotations")))
        if foreign:
            event(self.ctx, ing, FOREIGN_ANNOTATION_REASON, foreign)
        if ann.valid and not ing.is_canary:
            self.backends.cluster_settings(ing)
        return ing

    # -- memo (render/memo.py) ---------------------------------------------------------------
    def _open_path_memo(self) -> None:
        """What ``Routes.emit(p)`` reads besides the path, its Ingress and its canary: the
        options and the Services and Secrets (backends, upstream TLS settings), the Services
        tracked by name last (render/memo.py)."""
        cache = self.cache
        if cache is None:
            return
        snap = self.ctx.snapshot
        parts = (self.ctx.backends.service_versions, memo.versions(snap.secrets))
        deps = None if any(x is None for x in parts) else (
            self.options, *parts, self.ctx.backends.lookup_versions(cache.service_lookups))  # (last: see memo)
        if deps is None or deps != cache.ingress_path_deps:
            cache.ingress_paths.clear()
            cache.ingress_path_deps = deps
        self.path_memo = cache.ingress_paths if deps is not None else None

    def emit_memoized(self, p: PathInfo) -> None:
        """``Routes.emit(p)``, or the replay of its recording when the path's Ingress and its
        canary are the same objects (resourceVersion) as when it was recorded."""
        store = self.path_memo
        emit = self.routes.emit
        if store is None:
            emit(p)
            return
        sig: Any = memo.resource_version(p.ing.obj)
        if sig is not None and p.canaries:
            canary_path = p.canaries[0][0]
            ver = memo.resource_version(canary_path.ing.obj)
            sig = None if ver is None else (sig, canary_path.ing.ref, ver, canary_path.route_id)
        if sig is None:
            emit(p)
            return
        hit = store.get(p.route_id)
        if hit is not None and hit[0] == sig and self.ctx.replay(hit[1]):
            self.path_kept[p.route_id] = hit
            return
        rec, _ = self.ctx.record(emit, p)
        if rec.replayable():
            self.path_kept[p.route_id] = (sig, rec)


def translate(ctx: RenderContext, cache: memo.RenderCache | None = None) -> None:
    """Translate every owned Ingress of ``ctx.snapshot`` into ``ctx`` (routes, clusters,
    listeners, certificates, TLS files, events, statuses), and say why the others are not
    ours. See the module docstring. With a :class:`~titanium_gateway.render.memo.RenderCache`,
    the routes of a path whose Ingress (and canary) did not change are replayed."""
    Translator(ctx, cache).run()
