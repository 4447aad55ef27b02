"""Canary Ingresses (``titanium.io/canary``): each path of a canary binds to the primary path
with the same host, path and kind (its cluster becomes the primary route's weighted share, and
a canary-by-header route); a path without primary, or a second canary, is reported."""

from __future__ import annotations

from collections.abc import Mapping

from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.ingress.backends import Backends
from titanium_gateway.render.ingress.objects import IngressInfo, PathInfo
from titanium_gateway.render.ingress.paths import Paths
from titanium_gateway.render.ingress.status import event


def bind(ctx: RenderContext, ing: IngressInfo, paths: Paths, owners: Mapping[tuple[str, str, str], PathInfo],
         backends: Backends) -> None:
    """Bind the paths of the canary Ingress ``ing`` to the primary paths (``owners``, by their
    conflict key)."""
    if not ing.ann.valid:
        return  # InvalidAnnotation already reported; the canary does nothing
    for p in paths.of(ing):
        if p.error_reason:
            continue
        primary = owners.get(p.conflict_key)
        if primary is None:
            event(ctx, ing, "CanaryWithoutPrimary", f"no Ingress serves {p.describe()}")
            continue
        if primary.canaries:
            event(ctx, ing, "CanaryConflict", f"{p.describe()} of Ingress {primary.ing.ref} already has the canary "
                                              f"{primary.canaries[0][0].ing.ref}")
            continue
        if primary.ing.settings is None:
            continue  # the primary answers 500 (its own events say why)
        cluster, reason, message = backends.backend_cluster(ing, p.backend, primary.ing.settings,
                                                            primary.ing.id_suffix)
        if reason or cluster is None:
            event(ctx, ing, reason, f"{p.describe()}: {message}")
            continue
        primary.canaries = ((p, cluster),)
