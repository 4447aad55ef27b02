"""The pure render: cluster snapshot in, twp.yaml bytes, statuses and events out.

``render(snapshot, options, cache=None) -> RenderResult``: no I/O, no clock (``snapshot.now``),
no randomness; the same input in any order gives the same bytes. A :class:`RenderCache` (one
per caller, reused across renders) only saves work: translations of unchanged objects are
replayed (render/memo.py), the result is the same. Steps: GatewayClasses ->
Gateways (listeners, certificates) -> HTTPRoutes -> ``ingress.translate(ctx)`` -> routes
ordered by precedence -> unreachable rules (render/reach.py) -> emit (YAML, parts, hash) -> Programmed conditions -> result.
"""

from __future__ import annotations

import gc
import operator
from collections.abc import Sequence

from titanium_gateway.render import emit as _emit
from titanium_gateway.render import gateway as _gateway
from titanium_gateway.render import gatewayclass as _gatewayclass
from titanium_gateway.render import httproute as _httproute
from titanium_gateway.render import ingress as _ingress
from titanium_gateway.render import memo as _memo
from titanium_gateway.render import reach as _reach
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.memo import RenderCache
from titanium_gateway.render.model import Document
from titanium_gateway.render.model import Route as _Route
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import RenderResult
from titanium_gateway.render.snapshot import Snapshot

__all__ = ["render", "Document", "RenderCache", "RenderContext", "RenderOptions", "RenderResult", "Snapshot"]


def render(snapshot: Snapshot, options: RenderOptions, cache: RenderCache | None = None) -> RenderResult:
    """Render with the cyclic GC paused: the render creates no reference cycles (a test checks
    that ``gc.collect()`` finds nothing after a render with the collector off), so collections
    during it only walk the caller's heap (the informer caches) and made a 10k render ~1/3
    slower and superlinear (benchmarks/FINDINGS.md R1). Reference counting still frees
    everything; the collector is re-enabled only if it was enabled."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        return _render(snapshot, options, cache)
    except BaseException:
        if cache is not None:
            cache.clear()  # a render that did not finish may have left the cache half updated
        raise
    finally:
        if enabled:
            gc.enable()


def _route_deps(snapshot: Snapshot, options: RenderOptions, gateways: dict) -> tuple | None:
    """What every HTTPRoute translation may read besides the route itself (render/memo.py)."""
    parts = (_memo.versions(snapshot.namespaces), _memo.versions(snapshot.reference_grants),
             _memo.versions(snapshot.services))
    if any(p is None for p in parts):
        return None
    return (options, _memo.gateway_fingerprint(gateways), snapshot.unreadable.get("ReferenceGrant"), *parts)


def _ingress_deps(ctx: RenderContext) -> tuple | None:
    """What the Ingress translation (all Ingresses together) may read (render/memo.py)."""
    snap = ctx.snapshot
    parts = tuple(_memo.versions(objs) for objs in (snap.ingresses, snap.ingress_classes, snap.services,
                                                     snap.secrets, snap.namespaces))
    if any(p is None for p in parts):
        return None
    return (ctx.options, tuple(sorted(ctx.gateway_ports.items())), tuple(sorted(ctx.listeners.items())), *parts)


def _translate_ingresses(ctx: RenderContext, cache: RenderCache | None) -> None:
    if cache is None:
        _ingress.translate(ctx)
        return
    deps = _ingress_deps(ctx)
    if deps is not None and deps == cache.ingress_deps and cache.ingress is not None and ctx.replay(cache.ingress):
        cache.ingress_hits += 1
        return
    cache.ingress_deps, cache.ingress = None, None
    rec, _ = ctx.record(_ingress.translate, ctx, cache)
    if deps is not None and rec.replayable():
        cache.ingress_deps, cache.ingress = deps, rec


def _find_unreachable(routes: Sequence[_Route], cache: RenderCache | None) -> tuple[_reach.Unreachable, ...]:
    """:func:`reach.find_unreachable`, or the last render's answer when ``routes`` are the very
    route objects of the last render, in the same order (an EndpointSlice or Service change)."""
    if cache is None:
        return _reach.find_unreachable(routes)
    last = cache.unreachable
    if last is not None and len(last[0]) == len(routes) and all(map(operator.is_, last[0], routes)):
        return last[1]  # type: ignore[no-any-return]
    found = _reach.find_unreachable(routes)
    cache.unreachable = (routes, found)
    return found


def _render(snapshot: Snapshot, options: RenderOptions, cache: RenderCache | None) -> RenderResult:
    ctx = RenderContext(snapshot, options)
    if cache is not None:
        ctx.order_hint, ctx.known_clusters = cache.order, cache.clusters
        cache.order = ()  # released: the context holds it until the sort
    classes = _gatewayclass.translate(ctx)
    gateways = _gateway.translate(ctx, classes)
    ctx.shared["gateways"] = gateways
    if cache is None:
        _httproute.translate(ctx, gateways)
    else:
        _httproute.translate(ctx, gateways, cache, _route_deps(snapshot, options, gateways))
    _translate_ingresses(ctx, cache)
    ctx.end_translation()

    cert_entries = ctx.certificate_entries()
    document = Document(ctx.listener_values(), ctx.certificate_values(cert_entries), tuple(ctx.take_ordered_routes()),
                        tuple(ctx.sorted_clusters()))
    # rules no request can reach (the routes are in their final order): events and status notes
    unreachable = _reach.report(ctx, _find_unreachable(document.routes, cache))
    out = _emit.emit(document, part_limit=options.part_limit_bytes, max_parts=options.max_parts,
                     cache=cache.text if cache is not None else None)
    if cache is not None:
        cache.order, cache.clusters = document.routes, ctx.cluster_table()
    if out.delivery_error:
        programmed, reason, message = False, "NoResources", out.delivery_error
    elif options.assume_programmed or snapshot.confirmed_config_hash == out.config_hash:
        programmed, reason, message = True, "Programmed", ""
    else:
        programmed, reason = False, "Pending"
        message = snapshot.probe_message or f"waiting for the data plane to load config {out.config_hash[:12]}"
    _gateway.finalize(ctx, gateways, programmed, reason, message)
    return RenderResult(
        config=out.config,
        config_hash=out.config_hash,
        parts=out.parts,
        tls_files=ctx.tls_files.sorted(),
        certificates=cert_entries,
        statuses=ctx.sorted_statuses(),
        events=ctx.events(),
        listeners=ctx.listener_keys(),
        delivery_error=out.delivery_error,
        document=document,
        unreachable=unreachable,
    )
