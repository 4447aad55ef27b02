"""Config poke: after each config or TLS Secret write, annotate every data-plane pod with a
digest of both (``poke_value``) so the kubelet refreshes the mounted ConfigMap and Secret at
once (instead of on its next periodic sync). The Secret is covered too: a certificate rotation
changes the PFX bytes but not twp.yaml (which names the file without a digest)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from titanium_gateway.kube.api import PODS, ApiError, KubeApi
from titanium_gateway.writers.base import LeaderGuard

log = logging.getLogger(__name__)
POKE_ANNOTATION = "gateway.titaniumproxy.com/config-poke"


def poke_value(config_hash: str, tls_files: Mapping[str, bytes] | None = None) -> str:
    """Hex SHA-256 of the config hash and, sorted by name, each TLS Secret file's name and
    SHA-256: it changes whenever the root twp.yaml or any certificate file changes."""
    h = hashlib.sha256(f"config {config_hash}\n".encode())
    for name in sorted(tls_files or {}):
        h.update(f"file {name} {hashlib.sha256((tls_files or {})[name]).hexdigest()}\n".encode())
    return h.hexdigest()


class PodPoker:
    def __init__(self, api: KubeApi, namespace: str, *, guard: LeaderGuard) -> None:
        self.api = api
        self.namespace = namespace
        self.guard = guard
        self._poked: dict[str, str] = {}  # pod uid (or name) -> hash we set (the cache may lag)

    def reset(self) -> None:
        self._poked.clear()

    def poke(self, pods: Iterable[Mapping[str, Any]], config_hash: str,
             tls_files: Mapping[str, bytes] | None = None) -> int:
        """Patch the annotation on each pod (of the namespace) that does not carry
        ``poke_value(config_hash, tls_files)`` yet; returns how many were patched. A pod that
        went away meanwhile is skipped."""
        pods = list(pods)
        value = poke_value(config_hash, tls_files)
        n = 0
        for pod in pods:
            meta = pod.get("metadata") or {}
            if meta.get("namespace") != self.namespace or meta.get("deletionTimestamp"):
                continue
            if (meta.get("annotations") or {}).get(POKE_ANNOTATION) == value:
                continue
            name = str(meta.get("name", ""))
            ident = str(meta.get("uid") or name)
            if self._poked.get(ident) == value:
                continue
            self.guard.check(f"poke pod {self.namespace}/{name}")
            try:
                self.api.patch(PODS, self.namespace, name,
                               {"metadata": {"annotations": {POKE_ANNOTATION: value}}}, patch_type="merge")
                self._poked[ident] = value
                n += 1
            except ApiError as e:
                if not e.is_not_found:
                    raise
        live = {str((p.get("metadata") or {}).get("uid") or (p.get("metadata") or {}).get("name")) for p in pods}
        for k in [k for k in self._poked if k not in live]:
            del self._poked[k]
        if n:
            log.info("poked data-plane pods", extra={"namespace": self.namespace, "count": n,
                                                      "config_hash": config_hash, "poke": value})
        return n
