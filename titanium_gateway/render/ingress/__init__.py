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
    def run(self, parts: memo.IngressParts | None = None) -> None:
        """Every Ingress. ``parts`` (render/memo.py): each owned Ingress's effects recorded
        apart (in ``parts.recordings``, by its key), with the facts that tell whether it shares
        anything with another Ingress; the effects of none in particular (the Ingresses not
        ours, the listeners) in the recording open in the context."""
        ctx = self.ctx
        outer = ctx.recording
        selected, not_ours = ownership.select(ctx.snapshot, self.options)
        for record in not_ours:
            ctx.not_ours(record)
        ingresses = []
        for age, obj in selected:
            self._part(parts, f"{age[1]}/{age[2]}")
            ingresses.append(self.prepare(obj, *age))
        ctx.recording = outer
        if not ingresses:
            return
        owners: dict[tuple[str, str, str], PathInfo] = {}
        primaries: list[PathInfo] = []
        canaries: list[IngressInfo] = []
        for ing in ingresses:
            self._part(parts, ing.ref)
            self._status(ing)
            if ing.is_canary:
                canaries.append(ing)
                continue
            paths = self._paths(ing)
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
            bound = tls.bind(ctx, ing, self.https_ok, self.https_why)
            if bound:
                self.https_needed = True
            if parts is not None:
                parts.facts[ing.ref] = (frozenset(p.conflict_key for p in paths), False, bound)
        for ing in canaries:
            self._part(parts, ing.ref)
            canary.bind(ctx, ing, self.paths, owners, self.backends)
            if parts is not None:
                parts.facts[ing.ref] = (frozenset(p.conflict_key for p in Paths(_Unheard()).of(ing)),  # type: ignore[arg-type]
                                        True, False)
        self._open_path_memo()
        for p in primaries:
            self._part(parts, p.ing.ref)
            self.emit_memoized(p)
        ctx.recording = outer
        if self.path_memo is not None:
            self.path_memo.clear()
            self.path_memo.update(self.path_kept)
        self._listeners(ingresses)

    def _status(self, ing: IngressInfo) -> None:
        status.status(self.ctx, ing, self.lb_addresses, self.statuses)
        if not self.http_ok:
            event(self.ctx, ing, "PortUnavailable", self.http_why)

    def _paths(self, ing: IngressInfo) -> list[PathInfo]:
        """The paths of a primary Ingress (NotServed when it has none)."""
        paths = self.paths.of(ing)
        if not paths:
            status.not_served(self.ctx, ing, "none of its paths is valid (InvalidPath events say why)" if any(
                f.items(f.mapping(f.mapping(rule).get("http")).get("paths"))
                for rule in f.items(f.mapping(ing.obj.get("spec")).get("rules")))
                else "it has no rule paths and no defaultBackend")
        return paths

    def _listeners(self, ingresses: list[IngressInfo]) -> None:
        ctx = self.ctx
        if self.http_ok and not ctx.add_listener(self.http_port, False):
            for ing in ingresses:
                event(ctx, ing, "PortUnavailable", f"HTTP port {self.http_port} is bound with TLS")
        if self.https_needed:
            ctx.add_listener(self.https_port, True)

    def _part(self, parts: memo.IngressParts | None, key: str) -> None:
        """What follows is the Ingress ``key``'s (recorded in its part)."""
        if parts is not None:
            rec = parts.recordings.get(key)
            if rec is None:
                rec = parts.recordings[key] = memo.Recording()
            self.ctx.recording = rec

    def run_one(self, obj: Mapping[str, Any], parts: memo.IngressParts) -> IngressInfo | None:
        """The Ingress ``obj`` alone, as :meth:`run` translates it when it shares no path with
        another Ingress (render/memo.py checks that it does not, before and after), its effects
        into its part; None (and nothing done) when it is not an owned primary Ingress."""
        ctx = self.ctx
        outer = ctx.recording
        owned, has_default = ownership.owned_classes(ctx.snapshot.ingress_classes, self.options.ingress_controller_name)
        if not ownership.is_owned(obj, owned, has_default, self.options.watch_legacy_annotation):
            return None
        age = ownership.age_key(obj)
        key = f"{age[1]}/{age[2]}"
        if parse_annotations(f.mapping(f.metadata(obj).get("annotations")), age[1]).canary:
            return None
        parts.recordings[key] = memo.Recording()
        self._part(parts, key)
        try:
            ing = self.prepare(obj, *age)
            self._status(ing)
            paths = self._paths(ing)
            bound = tls.bind(ctx, ing, self.https_ok, self.https_why)
            parts.facts[key] = (frozenset(p.conflict_key for p in paths), False, bound)
            self.path_memo = None  # (its paths' routes: translated)
            for p in paths:
                self.routes.emit(p)
        finally:
            ctx.recording = outer
        return ing

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


def translate(ctx: RenderContext, cache: memo.RenderCache | None = None, parts: memo.IngressParts | None = None
              ) -> None:
    """Translate every owned Ingress of ``ctx.snapshot`` into ``ctx`` (routes, clusters,
    listeners, certificates, TLS files, events, statuses), and say why the others are not
    ours. See the module docstring. With a :class:`~titanium_gateway.render.memo.RenderCache`,
    the routes of a path whose Ingress (and canary) did not change are replayed; with
    ``parts``, each Ingress's effects are recorded apart (:meth:`Translator.run`)."""
    Translator(ctx, cache).run(parts)


def translate_one(ctx: RenderContext, obj: Mapping[str, Any], parts: memo.IngressParts) -> bool:
    """:meth:`Translator.run_one`: False when ``obj`` is not an owned primary Ingress."""
    return Translator(ctx).run_one(obj, parts) is not None


class _Unheard:
    """Where the events of a look at an Ingress's paths go when only their keys are wanted."""

    def add_event(self, _event: Any) -> None:
        pass


def conflict_keys(ctx: RenderContext, key: str, obj: Mapping[str, Any]) -> tuple[frozenset[Any], bool] | None:
    """``(the conflict keys of its paths, whether it names a TLS Secret)`` of the Ingress
    ``key`` when it is an owned primary (not a canary) known by that key, else None; nothing is
    added to ``ctx``."""
    options = ctx.options
    owned, has_default = ownership.owned_classes(ctx.snapshot.ingress_classes, options.ingress_controller_name)
    if not ownership.is_owned(obj, owned, has_default, options.watch_legacy_annotation):
        return None
    created, namespace, name = ownership.age_key(obj)
    if key != f"{namespace}/{name}" or f.namespace_of(f.metadata(obj)) != namespace or not name:
        return None
    ann = parse_annotations(f.mapping(f.metadata(obj).get("annotations")), namespace)
    if ann.canary:
        return None
    ing = IngressInfo(obj=obj, namespace=namespace, name=name, uid="", created=created, ann=ann, is_canary=False,
                      owner_key="", source=Source(kinds.INGRESS.kind, namespace, name))
    paths = Paths(_Unheard()).of(ing)  # type: ignore[arg-type]
    return frozenset(p.conflict_key for p in paths), bool(f.items(f.mapping(obj.get("spec")).get("tls")))
