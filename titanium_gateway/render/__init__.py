"""The pure render: cluster snapshot in, twp.yaml bytes, statuses and events out.

``render(snapshot, options) -> RenderResult``: no I/O, no clock (``snapshot.now``), no
randomness; the same input in any order gives the same bytes. Steps: GatewayClasses ->
Gateways (listeners, certificates) -> HTTPRoutes -> ``ingress.translate(ctx)`` -> routes
ordered by precedence -> emit (YAML, parts, hash) -> Programmed conditions -> result.
"""

from __future__ import annotations

import gc

from titanium_gateway.render import emit as _emit
from titanium_gateway.render import gateway as _gateway
from titanium_gateway.render import gatewayclass as _gatewayclass
from titanium_gateway.render import httproute as _httproute
from titanium_gateway.render import ingress as _ingress
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import RenderResult
from titanium_gateway.render.snapshot import Snapshot

__all__ = ["render", "RenderContext", "RenderOptions", "RenderResult", "Snapshot"]


def render(snapshot: Snapshot, options: RenderOptions) -> RenderResult:
    """Render with the cyclic GC paused: the render creates no reference cycles (a test checks
    that ``gc.collect()`` finds nothing after a render with the collector off), so collections
    during it only walk the caller's heap (the informer caches) and made a 10k render ~1/3
    slower and superlinear (benchmarks/FINDINGS.md R1). Reference counting still frees
    everything; the collector is re-enabled only if it was enabled."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        return _render(snapshot, options)
    finally:
        if enabled:
            gc.enable()


def _render(snapshot: Snapshot, options: RenderOptions) -> RenderResult:
    ctx = RenderContext(snapshot, options)
    classes = _gatewayclass.translate(ctx)
    gateways = _gateway.translate(ctx, classes)
    ctx.shared["gateways"] = gateways
    _httproute.translate(ctx, gateways)
    _ingress.translate(ctx)

    listeners = [
        {"host": "0.0.0.0", "port": port, "type": "transparent", "decryptSsl": decrypt}
        for port, decrypt in sorted(ctx.listeners.items())
    ]
    cert_entries = ctx.certificate_entries()
    certificates = []
    for entry in cert_entries:
        item = {"file": entry.file, "hosts": list(entry.hosts)}
        if entry.default:
            item["default"] = True
        certificates.append(item)
    out = _emit.emit(
        listeners,
        certificates,
        ctx.take_ordered_routes(),
        ctx.sorted_clusters(),
        part_limit=options.part_limit_bytes,
        max_parts=options.max_parts,
    )
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
        tls_files=dict(sorted(ctx.tls_files.items())),
        certificates=cert_entries,
        statuses=ctx.sorted_statuses(),
        events=ctx.events(),
        listeners=ctx.listener_keys(),
        delivery_error=out.delivery_error,
    )
