"""The pure render: cluster snapshot in, twp.yaml bytes, statuses and events out.

``render(snapshot, options, cache=None) -> RenderResult``: no I/O, no clock (``snapshot.now``),
no randomness; the same input in any order gives the same bytes. A :class:`RenderCache` (one
per caller, reused across renders) only saves work: translations of unchanged objects are
replayed (render/memo.py), the result is the same. Steps: GatewayClasses -> Gateways
(listeners, certificates) -> ListenerSets -> HTTPRoutes -> Ingresses -> routes ordered by precedence -> the
twp Document -> unreachable rules (render/reach.py, told through each kind's status) -> emit
(twp/emit.py: YAML, parts, hash) -> the Gateways' and ListenerSets' statuses with Programmed
(render/status/: the status collector) -> result (docs/render-design.md has the picture).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

from titanium_gateway import kinds
from titanium_gateway.render import backendtlsstatus as _backendtlsstatus
from titanium_gateway.render import fields as _fields
from titanium_gateway.render import gateway as _gateway
from titanium_gateway.render import gatewayclass as _gatewayclass
from titanium_gateway.render import grpcroute as _grpcroute
from titanium_gateway.render import httproute as _httproute
from titanium_gateway.render import ingress as _ingress
from titanium_gateway.render import listenerevents as _listenerevents
from titanium_gateway.render import listenerset as _listenerset
from titanium_gateway.render import memo as _memo
from titanium_gateway.render import otherroutes as _otherroutes
from titanium_gateway.render import planes as _planes
from titanium_gateway.render import reach as _reach
from titanium_gateway.render.builder import RenderContext, route_order
from titanium_gateway.render.gatewayapi import listener_sets_served
from titanium_gateway.render.httproute import kindconflicts as _kindconflicts
from titanium_gateway.render.httproute import status as _httproute_status
from titanium_gateway.render.ingress import status as _ingress_status
from titanium_gateway.render.memo import RenderCache
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import CertificateEntry, GatewayRef, Plane, RenderResult
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.render.status import programmed as _programmed
from titanium_gateway.twp import emit as _emit
from titanium_gateway.twp import model as _model
from titanium_gateway.twp.model import Document, Source
from titanium_gateway.twp.model import Route as _Route

_SERVED_ROUTES = frozenset(row.kind for row in kinds.SERVED_ROUTES)

__all__ = ["render", "gc_paused", "Document", "RenderCache", "RenderContext", "RenderOptions", "RenderResult", "Snapshot"]


class gc_paused:  # noqa: N801 - used like a function: ``with gc_paused():``
    """The one place the cyclic GC is paused: around a render (and around the offline CLI's
    load-render-write, which builds the same kind of data). A render creates no reference
    cycles (a test checks that ``gc.collect()`` finds nothing after a render with the collector
    off), so collections during it only walk the caller's heap (the informer caches) and made a
    10k render ~1/3 slower and superlinear (benchmarks/FINDINGS.md R1). Reference counting
    still frees everything; the collector is re-enabled only if it was enabled, as the last
    thing done (a collection the render's garbage makes due then runs in the caller, after)."""

    __slots__ = ("enabled",)

    def __enter__(self) -> None:
        self.enabled = gc.isenabled()
        if self.enabled:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()


def render(snapshot: Snapshot, options: RenderOptions, cache: RenderCache | None = None) -> RenderResult:
    """The render (see the module doc), with the cyclic GC paused (:func:`gc_paused`)."""
    with gc_paused():
        try:
            return _render(snapshot, options, cache)
        except BaseException:
            if cache is not None:
                cache.clear()  # a render that did not finish may have left the cache half updated
            raise


def _route_deps(ctx: RenderContext, gateways: dict, cache: RenderCache) -> tuple | None:
    """What every HTTPRoute translation may read besides the route itself (render/memo.py):
    the Gateways not ours too (why, for ``not_ours``), and the names of all (the routes naming
    a Gateway that does not exist); last, the Services tracked by name."""
    snapshot = ctx.snapshot
    parts = (_memo.versions(snapshot.namespaces), _memo.versions(snapshot.reference_grants),
             ctx.backends.service_versions, _memo.versions(snapshot.backend_tls_policies),
             _memo.versions(snapshot.config_maps) if snapshot.backend_tls_policies else ())
    if any(p is None for p in parts):
        return None
    return (ctx.options, _memo.gateway_fingerprint(gateways), tuple(sorted(ctx.foreign_gateways().items())),
            tuple(sorted(snapshot.gateways)),  # (every Gateway's name: NoMatchingParent Events)
            _memo.listener_set_fingerprint(ctx.listener_sets), tuple(sorted(ctx.foreign_listener_sets())),
            snapshot.unreadable.get(kinds.REFERENCE_GRANT.kind), *parts, ctx.backends.lookup_versions(cache.service_lookups))


def _ingress_deps(ctx: RenderContext, cache: RenderCache) -> tuple[tuple, tuple[tuple, tuple]] | None:
    """What the Ingress translation (all Ingresses together) may read (render/memo.py): what
    it reads besides the Ingresses (last, the Services tracked by name), then the Ingresses'
    keys and versions."""
    snap = ctx.snapshot
    parts = (_memo.versions(snap.ingress_classes), ctx.backends.service_versions, _memo.versions(snap.secrets),
             _memo.versions(snap.namespaces))
    ingresses = cache.ingress_versions(snap.ingresses)
    if ingresses is None or any(p is None for p in parts):
        return None
    return ((ctx.options, tuple(sorted(ctx.gateway_ports.items())), tuple(sorted(ctx.listeners.items())), *parts,
             ctx.backends.lookup_versions(cache.service_lookups)), ingresses)


def _translate_ingresses(ctx: RenderContext, cache: RenderCache | None) -> None:
    if cache is None:
        _ingress.translate(ctx)
        return
    deps = _ingress_deps(ctx, cache)
    if deps is not None and deps == cache.ingress_deps and cache.ingress is not None and ctx.replay(cache.ingress):
        cache.ingress_hits += 1
        return
    parts = cache.ingress_parts
    if deps is not None and parts is not None and deps[0] == parts.deps and parts.rest is not None:
        changed = parts.changed(*deps[1], most=4)
        if changed and all(parts.alone(key) for key in changed):
            rec, done = ctx.record(_ingresses_alone, ctx, parts, changed)
            if done:
                parts.keys, parts.versions = deps[1]
                cache.ingress_deps, cache.ingress = (deps, rec) if rec.replayable(bulk=True) else (None, None)
                if parts.rest is None:
                    cache.ingress_parts = None
                return
    cache.ingress_deps, cache.ingress, cache.ingress_parts = None, None, None
    parts = _memo.IngressParts()
    rec, _ = ctx.record(_ingress.translate, ctx, cache, parts)
    parts.rest = rec
    whole = _memo.Recording()
    whole.absorb(rec)
    replayable = rec.replayable()
    for part in parts.recordings.values():
        whole.absorb(part)
        replayable = part.replayable() and replayable
    if deps is not None and whole.replayable(bulk=True) and replayable:
        cache.ingress_deps, cache.ingress = deps, whole
        parts.deps, (parts.keys, parts.versions) = deps
        parts.count()
        cache.ingress_parts = parts


def _ingresses_alone(ctx: RenderContext, parts: _memo.IngressParts, changed: list[str]) -> bool:
    """The Ingresses ``changed``, each sharing no path with another Ingress before and after
    (:meth:`memo.IngressParts.alone`), translated alone and every other Ingress's effects
    replayed: what the whole translation does then. False, with nothing done, when one is no
    longer alone (or no longer an owned primary Ingress)."""
    changed_set = set(changed)
    others_bind = any(facts[2] for key, facts in parts.facts.items() if key not in changed_set)
    for key in changed:
        found = _ingress.conflict_keys(ctx, key, ctx.snapshot.ingresses[key])
        if found is None or not parts.alone(key, found[0]):
            return False
        if not others_bind and (found[1] or parts.facts[key][2]):  # (whether the HTTPS listener is needed)
            return False
    recordings = parts.recordings
    blocks = [(keys, rec, not changed_set.intersection(keys)) for keys, rec in parts.in_blocks()]
    for keys, rec, whole in blocks:
        if not (ctx.can_replay(rec) if whole else all(ctx.can_replay(recordings[k]) for k in keys if k not in changed_set)):
            return False
    assert parts.rest is not None
    replays = [parts.rest]
    for keys, rec, whole in blocks:
        replays += [rec] if whole else [recordings[key] for key in keys if key not in changed_set]
    for rec in replays:
        if not ctx.replay(rec):  # (can_replay said it would: never half a translation, silently)
            raise RuntimeError("an Ingress recording checked for a replay did not replay")
    for key in changed:
        before = parts.facts[key][0]
        _ingress.translate_one(ctx, ctx.snapshot.ingresses[key], parts)
        if ctx.recording is not None:  # (the part is recorded apart: the whole has it too)
            ctx.recording.absorb(parts.recordings[key])
        parts.moved(before, parts.facts[key][0])
        if not parts.recordings[key].replayable():
            parts.rest = None  # (a condition stamped now: the next render translates everything)
    parts.renew(changed)
    return True


def _find_unreachable(routes: tuple[_Route, ...], cache: RenderCache | None) -> tuple[_reach.Unreachable, ...]:
    """:func:`reach.find_unreachable`; with a cache, only the keys of the routes changed since
    the last render are searched again (render/memo.py)."""
    if cache is None:
        return _reach.find_unreachable(routes)
    return cache.unreachable.find(routes, route_order)


def _render(snapshot: Snapshot, options: RenderOptions, cache: RenderCache | None) -> RenderResult:
    ctx = RenderContext(snapshot, options)
    if cache is not None:
        ctx.order_hint, ctx.order_index, ctx.known_clusters = cache.order, cache.order_index, cache.clusters
        cache.order, cache.order_index = (), {}  # released: the context holds them until the sort
    classes = _gatewayclass.translate(ctx)
    gateways = _gateway.translate(ctx, classes)
    listener_sets = _listenerset.translate(ctx, gateways, listener_sets_served(snapshot.gateway_api,
                                                                               snapshot.listener_sets))
    conflicts = _kindconflicts.find(ctx, gateways)  # (an HTTPRoute and a GRPCRoute sharing a hostname)
    if cache is None:
        _httproute.translate(ctx, gateways, conflicts=conflicts)
    else:
        deps = _route_deps(ctx, gateways, cache)
        if deps is not None and conflicts.lost:  # (the Services tracked by name stay last)
            deps = (*deps[:-1], conflicts.key(), deps[-1])
        _httproute.translate(ctx, gateways, cache, deps, conflicts)
    _grpcroute.translate(ctx, gateways, conflicts)
    _otherroutes.translate(ctx, gateways)  # (TLSRoute, TCPRoute, UDPRoute: not accepted, and why)
    _translate_ingresses(ctx, cache)
    if cache is not None:
        cache.track_lookups(ctx.backends.looked_up, ctx.backends.lookup_versions)
    ctx.end_translation()

    routes = tuple(ctx.take_ordered_routes())
    documents = _documents(ctx, routes, options.data_plane_mode)
    # rules no request can reach (the routes are in their final order): events and status notes
    unreachable = _report_unreachable(ctx, _find_unreachable(routes, cache))
    # (each data plane's CA files, the policies' statuses)
    _backendtlsstatus.finish(ctx, ctx.backend_tls, {key: document for key, (document, _) in documents.items()},
                       _listenerset.parents(listener_sets))
    if cache is not None:
        cache.order, cache.order_index, cache.clusters = routes, ctx.taken_routes, ctx.cluster_table()
    ctx.taken_routes = {}
    planes: list[Plane] = []
    deliveries: dict[str, _programmed.Delivery] = {}
    owners = {info.plane: info for info in gateways.values() if info.plane}
    for key, (document, entries) in documents.items():
        out = _emit.emit(document, part_limit=options.part_limit_bytes, max_parts=options.max_parts,
                         cache=cache.plane_text(key) if cache is not None else None)
        confirmed, message = snapshot.probe(key)
        deliveries[key] = _programmed.delivery(out.config_hash, out.delivery_error,
                                               assume_programmed=options.assume_programmed,
                                               confirmed_hash=confirmed, probe_message=message)
        owner = owners.get(key)
        planes.append(Plane(key, out.config, out.config_hash, out.parts, ctx.plane_tls_files(key), entries,
                            ctx.listener_keys(key), out.delivery_error, document,
                            _gateway_ref(owner) if owner is not None else None,
                            tuple(sorted(k for k, info in gateways.items() if info.plane == key)),
                            owner.address_problem if owner is not None else "",
                            tuple(sorted(k for k, ls in listener_sets.items() if ls.gateway.plane == key)),
                            owner.address_reason if owner is not None else "AddressNotAssigned"))
    if cache is not None:
        cache.keep_texts(documents)
    for key in sorted(gateways):
        ctx.status.outcome(_gateway.outcome(gateways[key]))
    for key in sorted(listener_sets):  # (a ListenerSet's Programmed follows its Gateway's data plane)
        ctx.status.outcome(_listenerset.outcome(listener_sets[key]))
    ctx.status.finish(deliveries, snapshot.now)
    _listenerevents.listener_events(ctx)  # (from the statuses just built)
    assert planes[0].key == _planes.SHARED
    return RenderResult(
        statuses=ctx.status.statuses() if cache is None else ctx.status.statuses(order=cache.status_keys.sort),
        events=ctx.events(),
        unreachable=unreachable,
        released=ctx.status.released(),
        not_ours=ctx.not_ours_records(),
        planes=tuple(planes),
        gateway_outcomes=ctx.status.outcomes(),
    )


def _documents(ctx: RenderContext, routes: Sequence[_Route], mode: str
               ) -> dict[str, tuple[Document, tuple[CertificateEntry, ...]]]:
    """Each data plane's document (the shared one first) and its certificate entries: its
    listeners, certificates and routes (in order), and the clusters its routes name
    (``every_cluster``: the shared plane of ``shared`` mode, every cluster of the render)."""
    keys = ctx.planes()
    by_plane: dict[str, list[_Route]] = {key: [] for key in keys}
    if len(keys) == 1:
        by_plane[keys[0]] = list(routes)
    else:
        for route in routes:
            by_plane[route.plane].append(route)
    out: dict[str, tuple[Document, tuple[CertificateEntry, ...]]] = {}
    for key in keys:
        mine = by_plane[key]
        if _planes.every_cluster(mode, key):
            clusters = tuple(ctx.sorted_clusters())
        else:
            named: set[str] = set()
            for route in mine:
                behavior = route.behavior
                named.update(_model.cluster_ids(behavior.action))
                if behavior.mirror is not None:
                    named.add(behavior.mirror.cluster_id)
            table = ctx.clusters
            clusters = tuple(table[cid] for cid in sorted(named) if cid in table)
        entries = ctx.certificate_entries(key)
        out[key] = (Document(ctx.listener_values(key), ctx.certificate_values(entries), tuple(mine), clusters),
                    entries)
    return out


def _gateway_ref(info: _gateway.GatewayInfo) -> GatewayRef:
    """What the controller creates a Gateway's own data plane from."""
    meta = _fields.metadata(info.obj)
    infrastructure = _fields.mapping(_fields.mapping(info.obj.get("spec")).get("infrastructure"))

    def pairs(value: object) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, v) for k, v in _fields.mapping(value).items() if type(k) is str and type(v) is str))

    return GatewayRef(info.namespace, info.name, _fields.string(meta.get("uid")), info.class_name,
                      pairs(infrastructure.get("labels")), pairs(infrastructure.get("annotations")),
                      info.requested_address,
                      info.container_ports.served() if info.container_ports is not None else ())


def _report_unreachable(ctx: RenderContext, unreachable: Sequence[_reach.Unreachable]
                        ) -> tuple[_reach.Unreachable, ...]:
    """What the analysis found, told where users look: a ``ShadowedRule`` Warning Event per rule
    and, for an HTTPRoute, a sentence in its Accepted message (each by the status of its kind).
    An Ingress path that is a RouteConflict is not told twice. Returns the rules told."""
    told = [u for u in unreachable if not _reach.is_route_conflict(u)]
    by_source: dict[Source, list[_reach.Unreachable]] = {}
    for u in told:
        by_source.setdefault(u.source, []).append(u)
    for source, rules in by_source.items():
        if source.kind in _SERVED_ROUTES:
            _httproute_status.shadowed_rules(ctx, source, rules)
        else:
            _ingress_status.shadowed_paths(ctx, source, rules)
    return tuple(told)
