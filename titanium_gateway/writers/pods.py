"""Config poke: after each config or TLS Secret write, annotate every data-plane pod with a
digest of both (``poke_value``) so the kubelet refreshes the mounted ConfigMap and Secret at
once (instead of on its next periodic sync). The Secret is covered too: a certificate rotation
changes the PFX bytes but not twp.yaml (which names the file without a digest).

Re-poke: the kubelet reads ConfigMaps and Secrets from caches of its own, fed by watches other
than the pod's, so the pod change can reach it before the ConfigMap change it follows; it then
projects the old files again and the pod stays on the old config until the kubelet's next
periodic sync (about a minute). A pod that has not confirmed the config hash some seconds after
its poke is therefore poked again (``repoke``), with the annotation ``<poke value>/<n>`` for the
n-th re-poke: first ``RepokePolicy.first_after`` s after the poke, the wait doubling up to
``max_delay``, at most ``max_attempts`` times per pod and config, and never faster than a token
bucket of ``qps``/``burst`` re-pokes across all pods (a config every pod rejects must not turn
into a write storm). A pod that confirmed the hash, or whose problem re-poking cannot cure (a
data plane without the admin API, a token mismatch), is not poked again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from titanium_gateway.kube.api import PODS, ApiError, KubeApi
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.ratelimit import TokenBucket
from titanium_gateway.metrics import REGISTRY, Registry
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


def parse_poke(annotation: Any) -> tuple[str, int]:
    """``(poke value, re-pokes)`` of a config-poke annotation: ``V`` -> (V, 0), ``V/2`` -> (V, 2).
    Anything else (absent, not ours) -> ("", 0)."""
    if not isinstance(annotation, str) or not annotation:
        return "", 0
    value, sep, n = annotation.partition("/")
    if not sep:
        return value, 0
    return (value, int(n)) if n.isdigit() else ("", 0)


@dataclass(frozen=True)
class RepokePolicy:
    """When a pod that has not confirmed the config is poked again (see the module docstring)."""

    first_after: float = 3.0
    max_delay: float = 30.0
    max_attempts: int = 4
    qps: float = 2.0
    burst: int = 10

    def delay(self, attempts: int) -> float:
        """Seconds after the last (re-)poke before re-poke number ``attempts + 1``."""
        return min(self.first_after * (2 ** min(attempts, 32)), self.max_delay)


@dataclass
class _Poked:
    name: str
    value: str
    at: float  # clock time of the last (re-)poke, or when this term found the pod carrying it
    attempts: int  # re-pokes so far
    done: bool = False  # confirmed the config: never poked again for this value
    held: bool = False  # a problem re-poking cannot cure (last probe)


class PodPoker:
    def __init__(self, api: KubeApi, namespace: str, *, guard: LeaderGuard, clock: Clock = REAL_CLOCK,
                 policy: RepokePolicy | None = None, registry: Registry | None = None) -> None:
        self.api = api
        self.namespace = namespace
        self.guard = guard
        self.clock = clock
        self.policy = policy or RepokePolicy()
        self._bucket = TokenBucket(self.policy.qps, self.policy.burst, clock)
        self._poked: dict[str, _Poked] = {}  # pod uid (or name) -> what we set (the cache may lag)
        self._value = ""  # the poke value of the last poke(): re-pokes are for it only
        self._m_pokes = (registry or REGISTRY).counter(
            "titanium_config_pokes_total",
            "Config-poke annotations written on data-plane pods: the poke after a write, and re-pokes "
            "of pods that had not confirmed the config after a while.", ["kind"])

    def reset(self) -> None:
        self._poked.clear()
        self._value = ""

    def _patch(self, name: str, annotation: str) -> bool:
        """Write the annotation; False when the pod went away meanwhile."""
        try:
            self.api.patch(PODS, self.namespace, name,
                           {"metadata": {"annotations": {POKE_ANNOTATION: annotation}}}, patch_type="merge")
            return True
        except ApiError as e:
            if not e.is_not_found:
                raise
            return False

    def _mine(self, pod: Mapping[str, Any]) -> tuple[str, str] | None:
        """(name, identity) of a live pod of the namespace, else None."""
        meta = pod.get("metadata") or {}
        if meta.get("namespace") != self.namespace or meta.get("deletionTimestamp"):
            return None
        name = str(meta.get("name", ""))
        return name, str(meta.get("uid") or name)

    def poke(self, pods: Iterable[Mapping[str, Any]], config_hash: str,
             tls_files: Mapping[str, bytes] | None = None) -> int:
        """Patch the annotation on each pod (of the namespace) that does not carry
        ``poke_value(config_hash, tls_files)`` yet; returns how many were patched. A pod that
        went away meanwhile is skipped."""
        pods = list(pods)
        value = poke_value(config_hash, tls_files)
        self._value = value
        now = self.clock.now()
        n = 0
        for pod in pods:
            mine = self._mine(pod)
            if mine is None:
                continue
            name, ident = mine
            st = self._poked.get(ident)
            if st is not None and st.value == value:
                continue
            carried, attempts = parse_poke(((pod.get("metadata") or {}).get("annotations") or {}).get(POKE_ANNOTATION))
            if carried == value:
                # poked before (a previous term): its re-poke clock starts now
                self._poked[ident] = _Poked(name, value, now, attempts)
                continue
            self.guard.check(f"poke pod {self.namespace}/{name}")
            if self._patch(name, value):
                self._poked[ident] = _Poked(name, value, now, 0)
                n += 1
        live = {str((p.get("metadata") or {}).get("uid") or (p.get("metadata") or {}).get("name")) for p in pods}
        for k in [k for k in self._poked if k not in live]:
            del self._poked[k]
        if n:
            self._m_pokes.labels(kind="poke").inc(n)
            log.info("poked data-plane pods", extra={"namespace": self.namespace, "count": n,
                                                      "config_hash": config_hash, "poke": value})
        return n

    def repoke(self, pods: Iterable[Mapping[str, Any]], confirmed: Collection[str],
               held: Collection[str] = ()) -> int:
        """After a probe of the current config: poke again each pod poked with the current value
        that has not confirmed it (not in ``confirmed``, pod names) once its back-off has passed,
        except those in ``held`` (a problem re-poking cannot cure). Returns how many were
        re-poked. Call ``poke`` first (it sets the current value)."""
        if not self._value:
            return 0
        now = self.clock.now()
        due: list[tuple[float, str, _Poked]] = []
        for pod in pods:
            mine = self._mine(pod)
            st = None if mine is None else self._poked.get(mine[1])
            if st is None or st.value != self._value or st.done:
                continue
            if st.name in confirmed:
                st.done = True
                continue
            st.held = st.name in held
            if st.held or st.attempts >= self.policy.max_attempts:
                continue
            at = st.at + self.policy.delay(st.attempts)
            if now >= at:
                due.append((at, st.name, st))
        n = 0
        names = []
        for _at, name, st in sorted(due, key=lambda d: (d[0], d[1])):
            if not self._bucket.try_accept():
                break
            self.guard.check(f"re-poke pod {self.namespace}/{name}")
            st.attempts += 1
            st.at = now
            if self._patch(name, f"{st.value}/{st.attempts}"):
                n += 1
                names.append(name)
        if n:
            self._m_pokes.labels(kind="repoke").inc(n)
            log.info("re-poked data-plane pods that have not confirmed the config",
                     extra={"namespace": self.namespace, "count": n, "pods": names[:10], "poke": self._value})
        return n

    def next_repoke(self) -> float | None:
        """Clock time at which the next re-poke may be due (None: none will be): a reconcile then
        probes and re-pokes the pods still behind."""
        if not self._value:
            return None
        times = [st.at + self.policy.delay(st.attempts) for st in self._poked.values()
                 if st.value == self._value and not st.done and not st.held
                 and st.attempts < self.policy.max_attempts]
        if not times:
            return None
        at = min(times)
        if self._bucket.tokens < 1.0:  # rate-limited: not before the next token
            at = max(at, self.clock.now() + (1.0 - self._bucket.tokens) / self.policy.qps)
        return at
