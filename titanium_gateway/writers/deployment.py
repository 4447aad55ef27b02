"""Listener stamp: when the listener set changes, annotate the data-plane Deployment's pod
template (``gateway.titaniumproxy.com/listeners``) so Kubernetes rolls the pods, which bind
listeners only at start. The pods inherit the annotation: the prober counts a pod as confirmed
only once it was created with the current set.

The chart's template carries no annotation, which stands for the empty set (``""``): an empty
set is not stamped while no data-plane pod carries a non-empty stamp, so a fresh install with no
Gateway does not roll the data plane for nothing; the first non-empty set and every change after
it are stamped. Before its first stamp in a term (after a start or a failover) the stamper reads
the Deployment once by name: a template that already carries the set is not patched again."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from titanium_gateway.kube.api import DEPLOYMENTS, ApiError, KubeApi
from titanium_gateway.render.result import ListenerKey
from titanium_gateway.writers.base import LeaderGuard, WriteError, unreadable

log = logging.getLogger(__name__)
LISTENERS_ANNOTATION = "gateway.titaniumproxy.com/listeners"


def canonical_listeners(listeners: Iterable[ListenerKey]) -> str:
    """``8080/http,8443/https``: sorted by port, ``https`` when the listener decrypts TLS."""
    return ",".join(f"{k.port}/{'https' if k.decrypt_ssl else 'http'}" for k in sorted(set(listeners)))


class DeploymentStamper:
    def __init__(self, api: KubeApi, namespace: str, name: str | None, *, guard: LeaderGuard) -> None:
        self.api = api
        self.namespace = namespace
        self.name = name
        self.guard = guard
        self._lock = threading.Lock()
        self._stamped: str | None = None
        #: the template was read in this term (``_stamped`` then holds its annotation, if any)
        self._read = False

    def reset(self) -> None:
        with self._lock:
            self._stamped = None
            self._read = False

    def _missing(self) -> WriteError:
        return WriteError(f"Deployment {self.namespace}/{self.name} does not exist (--data-plane-deployment)")

    def _learn(self) -> None:
        """The stamp the template carries now (one GET per term)."""
        assert self.name
        self._read = True  # (unreadable: stamped as without the read, and not read again this term)
        try:
            cur = self.api.get(DEPLOYMENTS, self.namespace, self.name)
        except ApiError as e:
            if e.is_not_found:
                self._read = False
                raise self._missing() from e
            unreadable(e, f"Deployment {self.namespace}/{self.name}")
            return
        template = ((cur.get("spec") or {}).get("template") or {}).get("metadata") or {}
        value = (template.get("annotations") or {}).get(LISTENERS_ANNOTATION)
        if isinstance(value, str):
            self._stamped = value

    def stamp(self, listeners: Iterable[ListenerKey], pods: Iterable[Mapping[str, Any]] = ()) -> bool:
        """Returns True when the Deployment was patched. No-op without --data-plane-deployment.
        ``pods``: the data-plane pods (cache); while nothing was stamped in this term, an empty
        set is stamped only when one of them was created with a non-empty stamp."""
        if not self.name:
            return False
        value = canonical_listeners(listeners)
        with self._lock:
            if not self._read:
                self._learn()
            if value == self._stamped:
                return False
            if not value and self._stamped is None and not any(
                    ((p.get("metadata") or {}).get("annotations") or {}).get(LISTENERS_ANNOTATION) for p in pods):
                return False  # the template's missing annotation already means "no listener"
            self.guard.check(f"stamp Deployment {self.namespace}/{self.name}")
            body = {"spec": {"template": {"metadata": {"annotations": {LISTENERS_ANNOTATION: value}}}}}
            try:
                self.api.patch(DEPLOYMENTS, self.namespace, self.name, body, patch_type="merge")
            except ApiError as e:
                if e.is_not_found:
                    raise self._missing() from e
                raise
            self._stamped = value
            log.info("stamped data-plane Deployment listeners",
                     extra={"kind": "Deployment", "namespace": self.namespace, "object_name": self.name,
                            "listeners": value})
            return True
