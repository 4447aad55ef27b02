"""Status writes: GatewayClass, Gateway, HTTPRoute and Ingress, through the ``/status``
subresource with a merge patch (never strategic: the Gateway API kinds are CRDs).

* Written only when the wanted status differs from the informer's current object.
* The patch carries ``metadata.resourceVersion``: a 409 Conflict re-reads the object and
  retries with the status recomputed against it.
* HTTPRoute ``status.parents``: entries of other controllers are kept, ours replaced by the
  render's, ours that the render no longer lists dropped.
* Many objects are written in parallel by a bounded thread pool; the API client's token bucket
  keeps the requests within the configured QPS/burst.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway.kube.api import (
    GATEWAY_CLASSES,
    GATEWAYS,
    HTTPROUTES,
    INGRESSES,
    ApiError,
    KubeApi,
    Resource,
)
from titanium_gateway.metrics import REGISTRY, Registry
from titanium_gateway.render.result import ObjectStatus
from titanium_gateway.writers.base import LeaderGuard, NotLeader

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
CurrentGetter = Callable[[str, str, str], Obj | None]

RESOURCES: Mapping[str, Resource] = {
    "GatewayClass": GATEWAY_CLASSES, "Gateway": GATEWAYS, "HTTPRoute": HTTPROUTES, "Ingress": INGRESSES,
}
MAX_CONFLICT_RETRIES = 5


def merged_status(kind: str, current: Obj | None, wanted: Mapping[str, Any], controller_name: str) -> dict[str, Any]:
    """The status to write for ``wanted`` given the object's current status."""
    cur = dict((current or {}).get("status") or {})
    if kind != "HTTPRoute":
        # The whole status is ours: a field the render no longer sets is removed (null in a merge patch).
        out: dict[str, Any] = {k: None for k in cur if k not in wanted}
        out.update(wanted)
        return out
    others = [p for p in cur.get("parents") or [] if isinstance(p, Mapping)
              and p.get("controllerName") != controller_name]
    ours = [p for p in wanted.get("parents") or [] if p.get("controllerName") == controller_name]
    merged = {k: v for k, v in wanted.items() if k != "parents"}
    merged["parents"] = others + ours
    return merged


def status_differs(current: Obj | None, status: Mapping[str, Any]) -> bool:
    cur = (current or {}).get("status") or {}
    return any(_norm(cur.get(k)) != _norm(v) for k, v in status.items())


def _norm(v: Any) -> Any:
    """Treat an absent list/dict like an empty one (the server drops empty values)."""
    if v in (None, [], {}):
        return None
    if isinstance(v, Mapping):
        return {k: _norm(x) for k, x in v.items() if _norm(x) is not None}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def _rv(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


@dataclass
class StatusReport:
    written: int = 0
    unchanged: int = 0
    conflicts: int = 0
    missing: int = 0
    errors: list[str] = field(default_factory=list)


class StatusWriter:
    def __init__(self, api: KubeApi, *, controller_name: str, guard: LeaderGuard, current: CurrentGetter,
                 workers: int = 16, registry: Registry | None = None) -> None:
        self.api = api
        self.controller_name = controller_name
        self.guard = guard
        self.current = current
        self.workers = max(1, workers)
        reg = registry or REGISTRY
        self._writes = reg.counter("titanium_status_writes_total", "Status patches written.", ["kind"])
        self._conflicts = reg.counter("titanium_status_conflicts_total",
                                      "Status patches answered 409 Conflict (re-read and retried).", ["kind"])
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="status-writer")
        # (kind, ns, name) -> (resourceVersion our write was based on, status written): while the
        # informer still shows that resourceVersion, its copy is older than our write.
        self._written: dict[tuple[str, str, str], tuple[str, Any]] = {}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def write_all(self, statuses: Iterable[ObjectStatus]) -> StatusReport:
        """Write every changed status (in parallel); raises NotLeader if leadership was lost."""
        report = StatusReport()
        todo = []
        statuses = list(statuses)
        live = {st.key for st in statuses}
        for k in [k for k in self._written if k not in live]:
            del self._written[k]
        for st in statuses:
            if st.kind not in RESOURCES:
                continue
            cur = self.current(st.kind, st.namespace, st.name)
            if cur is None:
                report.missing += 1
                continue
            want = merged_status(st.kind, cur, st.status, self.controller_name)
            if not status_differs(cur, want):
                report.unchanged += 1
                continue
            memo = self._written.get(st.key)
            if memo is not None and memo == (_rv(cur), want):
                report.unchanged += 1  # written already; the cache has not caught up yet
                continue
            todo.append((st, cur))
        if not todo:
            return report
        results = list(self._pool.map(lambda a: self._write_one(*a), todo)) if len(todo) > 1 \
            else [self._write_one(*todo[0])]
        lost = False
        for outcome, conflicts, err in results:
            report.conflicts += conflicts
            if outcome == "written":
                report.written += 1
            elif outcome == "missing":
                report.missing += 1
            elif outcome == "not-leader":
                lost = True
            elif outcome in ("unchanged", "rejected"):
                report.unchanged += 1
            else:
                report.errors.append(err)
        if lost:
            raise NotLeader("leadership lost while writing statuses")
        return report

    def _write_one(self, st: ObjectStatus, cur: Obj) -> tuple[str, int, str]:
        res = RESOURCES[st.kind]
        ns = st.namespace or None
        conflicts = 0
        for _attempt in range(MAX_CONFLICT_RETRIES + 1):
            status = merged_status(st.kind, cur, st.status, self.controller_name)
            if not status_differs(cur, status):
                return "unchanged", conflicts, ""
            body: dict[str, Any] = {"status": status}
            rv = (cur.get("metadata") or {}).get("resourceVersion")
            if rv:
                body["metadata"] = {"resourceVersion": rv}
            try:
                self.guard.check(f"write {st.kind} {st.namespace}/{st.name} status")
            except NotLeader:
                return "not-leader", conflicts, ""
            try:
                self.api.patch(res, ns, st.name, body, patch_type="merge", subresource="status")
                self._written[st.key] = (_rv(cur), status)
                self._writes.labels(kind=st.kind).inc()
                log.debug("wrote status", extra={"kind": st.kind, "namespace": st.namespace, "object_name": st.name})
                return "written", conflicts, ""
            except ApiError as e:
                if e.is_not_found:
                    return "missing", conflicts, ""
                if 400 <= e.status < 500 and e.status not in (408, 409, 429):
                    # The server rejects this object's status (e.g. its spec is invalid): retrying
                    # cannot help; the next change of the object brings a new attempt.
                    log.warning("status rejected", extra={"kind": st.kind, "namespace": st.namespace,
                                                          "object_name": st.name, "error": str(e)})
                    return "rejected", conflicts, ""
                if not e.is_conflict:
                    log.warning("status write failed", extra={"kind": st.kind, "namespace": st.namespace,
                                                               "object_name": st.name, "error": str(e)})
                    return "error", conflicts, f"{st.kind} {st.namespace}/{st.name}: {e}"
                conflicts += 1
                self._conflicts.labels(kind=st.kind).inc()
                try:
                    cur = self.api.get(res, ns, st.name)
                except ApiError as ge:
                    if ge.is_not_found:
                        return "missing", conflicts, ""
                    return "error", conflicts, f"{st.kind} {st.namespace}/{st.name}: re-read: {ge}"
            except Exception as e:  # a transport error: reported, retried by the next reconcile
                return "error", conflicts, f"{st.kind} {st.namespace}/{st.name}: {type(e).__name__}: {e}"
        return "error", conflicts, f"{st.kind} {st.namespace}/{st.name}: still conflicting after retries"
