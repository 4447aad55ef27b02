"""Ingress (networking.k8s.io/v1) translation into the shared render.

``translate(ctx)`` is called by :func:`titanium_gateway.render.render` after the
Gateway listeners are known. It selects the Ingresses this controller owns,
validates their annotations and adds routes, clusters, listeners, TLS files,
events and statuses to the shared render context.
"""

from __future__ import annotations

from typing import Any


def translate(ctx: Any) -> None:
    """Translate every owned Ingress of ``ctx.snapshot`` into ``ctx``.

    Placeholder so the core's import works; the real body follows.
    """
    return None
