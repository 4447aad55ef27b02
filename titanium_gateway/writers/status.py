"""Status writes: GatewayClass, Gateway, ListenerSet, the routes (HTTPRoute, GRPCRoute, TLSRoute,
TCPRoute, UDPRoute), BackendTLSPolicy and Ingress, through the ``/status`` subresource with a
merge patch (never strategic: the Gateway API kinds are CRDs).

* Written only when the wanted status differs from the informer's current object.
* The patch carries ``metadata.resourceVersion``: a 409 Conflict re-reads the object and
  retries with the status recomputed against it.
* A route's ``status.parents`` (a BackendTLSPolicy's ``status.ancestors``): entries of other
  controllers are kept, ours replaced by the render's, ours that the render no longer lists
  dropped.
* Many objects are written in parallel by a bounded thread pool; the API client's token bucket
  keeps the requests within the configured QPS/burst.
* A 429 (or any answer with Retry-After) pauses every status write of this writer until the
  Retry-After has passed: the writes still queued are held back, not sent, and reported as
  errors with ``StatusReport.retry_after``.
* The merge itself (other controllers' route parents kept) is the render's pure
  :func:`titanium_gateway.render.statusmerge.merged_status`: one definition for the writer and
  the offline ``status.yaml``.

The informer's echo of our own write (the object as it was, with only the status we sent now
on it) needs no reconcile: ``echoes`` tells the controller so (see its docstring).

Two ways in: ``write_all`` writes a batch and returns its report (synchronous); ``submit``
hands a reconcile's statuses to the writer's own worker thread and returns at once, so the
config path never waits for status writes (C1). The worker keeps one pending entry per object,
latest wins (a status superseded before it was sent is never sent), writes what is pending as a
batch, and retries what failed itself: after the Retry-After the server asked for, else after an
exponential back-off (``default_controller_rate_limiter``: per-batch failures, plus the overall
bucket), while a newer status for the same object replaces the failed one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.kube.api import ApiError, KubeApi, Resource
from titanium_gateway.kube.ratelimit import RateLimiter, default_controller_rate_limiter
from titanium_gateway.kube.threads import CoreThread, dead
from titanium_gateway.metrics import REGISTRY, Registry
from titanium_gateway.render.result import ObjectStatus
from titanium_gateway.render.statusmerge import merged_status
from titanium_gateway.writers.base import LeaderGuard, NotLeader, retry_after_of

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]
CurrentGetter = Callable[[str, str, str], Obj | None]
#: A precondition on the object's current state, checked before each write attempt (also after
#: a 409 re-read): False skips the write.
WriteGuard = Callable[[Obj], bool]

#: kind -> Resource of the kinds whose status this controller writes (the table of kinds)
RESOURCES: Mapping[str, Resource] = kinds.status_resources()
MAX_CONFLICT_RETRIES = 5
StatusKey = tuple[str, str, str]
#: The status worker's failure back-off: (first, cap) seconds, doubling per failed batch in a row.
RETRY_BACKOFF = (0.5, 60.0)

__all__ = ["StatusReport", "StatusWriter", "WriteGuard", "merged_status", "status_differs"]


def status_differs(current: Obj | None, status: Mapping[str, Any]) -> bool:
    """``status`` would change the object's current status. A condition's ``lastTransitionTime``
    alone never counts: the render stamps a transition it has not seen in its cache yet with its
    own clock, while the object already carries the earlier, true time (written by a previous
    pass the cache had not caught up with)."""
    cur = (current or {}).get("status") or {}
    return any(_norm(cur.get(k)) != _norm(v) for k, v in status.items())


def _digest(status: Any) -> bytes:
    """A short fingerprint of a status as :func:`_norm` sees it (what ``_written`` remembers of
    a write: 16 bytes, not the status: 20k objects would keep 20k status bodies alive)."""
    text = json.dumps(_norm(status), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _norm(v: Any) -> Any:
    """Treat an absent list/dict like an empty one (the server drops empty values); ignore
    ``lastTransitionTime``."""
    if v is None:
        return None
    t = type(v)
    if t is str or t is int or t is bool or t is float:
        return v
    if t is list:
        return [_norm(x) for x in v] or None
    if t is dict or isinstance(v, Mapping):
        out = {}
        for k, x in v.items():
            if k == "lastTransitionTime":
                continue
            n = _norm(x)
            if n is not None:
                out[k] = n
        return out or None  # {"ingress": null} is as empty as {}
    if isinstance(v, list):
        return [_norm(x) for x in v] or None
    return v


def _rv(obj: Obj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


#: metadata a status write changes (the server's bookkeeping), ignored by :func:`_same_but_status`
_WRITE_META = frozenset({"resourceVersion", "managedFields"})


def _same_but_status(old: Obj, new: Obj) -> bool:
    """``old`` and ``new`` differ at most in ``status``, ``metadata.resourceVersion`` and
    ``metadata.managedFields`` (what a write through the status subresource changes)."""
    if len(old) - ("status" in old) != len(new) - ("status" in new):
        return False
    for k, v in new.items():
        if k == "status":
            continue
        if k not in old:
            return False
        ov = old[k]
        if k == "metadata" and isinstance(v, Mapping) and isinstance(ov, Mapping):
            if {mk: mv for mk, mv in v.items() if mk not in _WRITE_META} != \
                    {mk: mv for mk, mv in ov.items() if mk not in _WRITE_META}:
                return False
        elif ov != v:
            return False
    return True


@dataclass
class StatusReport:
    written: int = 0
    unchanged: int = 0
    conflicts: int = 0
    missing: int = 0
    errors: list[str] = field(default_factory=list)
    #: seconds the API server asked us to wait (429 Retry-After) before writing again; None: no wait
    retry_after: float | None = None
    #: keys of the statuses that failed (to be retried)
    failed: list[StatusKey] = field(default_factory=list)


class StatusWriter:
    def __init__(self, api: KubeApi, *, controller_name: str, guard: LeaderGuard, current: CurrentGetter,
                 workers: int = 16, registry: Registry | None = None,
                 retry_backoff: tuple[float, float] = RETRY_BACKOFF) -> None:
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
        # (kind, ns, name) -> (resourceVersion our write was based on, status written, whether that
        # version is the one the render saw): while the informer still shows that resourceVersion,
        # its copy is older than our write.
        self._written: dict[tuple[str, str, str], tuple[str, Any, bool]] = {}
        # key -> (resourceVersion, digest) of a status being sent right now onto the very version
        # the render saw: its echo may reach the informer before the answer reaches us
        self._sending: dict[StatusKey, tuple[str, bytes]] = {}
        self._pause_lock = threading.Lock()
        self._paused_until = 0.0  # time.monotonic(): no status write before this (Retry-After)
        # --- the worker (``submit``) ---
        self._cond = threading.Condition()
        #: key -> (status, guard, resourceVersion the render saw): what the worker writes next;
        #: latest wins
        self._pending: dict[StatusKey, tuple[ObjectStatus, WriteGuard | None, str]] = {}
        self._busy = False  # a batch is being written
        self._closed = False
        self._retry_at = 0.0  # time.monotonic(): the worker's failure back-off
        self._thread: threading.Thread | None = None
        self._limiter: RateLimiter = default_controller_rate_limiter(base_delay=retry_backoff[0],
                                                                     max_delay=retry_backoff[1])
        self.batches = 0
        self.last_report: StatusReport | None = None
        self._m_pending = reg.gauge("titanium_status_pending", "Statuses waiting for the status worker.")
        self._m_echoes = reg.counter("titanium_status_echoes_total",
                                     "Informer updates that only carried a status this controller wrote "
                                     "(no reconcile needed).", ["kind"])

    def _pause(self, seconds: float) -> None:
        with self._pause_lock:
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    def paused_for(self) -> float:
        """Seconds until status writes may resume (0 when not paused)."""
        with self._pause_lock:
            return max(0.0, self._paused_until - time.monotonic())

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def echoes(self, kind: str, old: Obj, new: Obj, *, count: bool = True) -> bool:
        """``new`` is ``old`` with nothing changed but the status, ``old`` is exactly the version
        of the object the render saw when it asked for that status (the write went onto it), and
        the status is the one this writer last wrote (or is writing): the informer's echo of our
        own write.

        Such an update needs no reconcile. The render reads an object's own status only for the
        ``lastTransitionTime`` of unchanged conditions and for our earlier parent entries of an
        HTTPRoute; given the object it rendered from, with the status it asked for on it, it
        renders the same config and the same statuses (a transition time alone is no change), so
        the writers would find nothing to write. Skipping it matters in a status storm: every
        echo would otherwise trigger a full re-render (every written object has a new
        resourceVersion) while the writes are still going out. Anything else is not an echo:
        another writer's status, a spec, label or annotation change, an update spanning several
        writes after a relist, and our status written onto a newer version than the render saw
        (after a 409 re-read, or when the cache moved on before the worker came to it: the
        render's wish may be stale for that version, e.g. a Gateway moved to another class). The
        next reconcile, whatever triggers it, renders from the caches as they are. ``count``:
        count a recognized echo in ``titanium_status_echoes_total``."""
        if kind not in RESOURCES or not isinstance(old, Mapping) or not isinstance(new, Mapping):
            return False
        meta = new.get("metadata") or {}
        key = (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        old_rv = _rv(old)
        if not old_rv:
            return False
        ours = []
        sending = self._sending.get(key)
        if sending is not None and sending[0] == old_rv:
            ours.append(sending[1])
        memo = self._written.get(key)
        if memo is not None and memo[2] and memo[0] == old_rv:
            ours.append(memo[1])
        if not ours or not _same_but_status(old, new) or _digest(new.get("status")) not in ours:
            return False
        if count:
            self._m_echoes.labels(kind=kind).inc()
        return True

    # --- the worker -----------------------------------------------------------------------------
    def submit(self, statuses: Iterable[ObjectStatus],
               guards: Mapping[StatusKey, WriteGuard] | None = None,
               seen: Mapping[StatusKey, str] | None = None, *, complete: bool = True) -> None:
        """Hand every wanted status of one reconcile to the worker and return at once.

        ``statuses`` is the complete set (what is not in it is no longer ours to remember), or
        with ``complete=False`` only those that changed since the last submit; each
        replaces a pending status of the same object. Only those that differ from the object's
        current status are written, by the worker, when it comes to them. ``seen``: the
        resourceVersion of each object as the render saw it (see :meth:`echoes`)."""
        guards = guards or {}
        seen = seen or {}
        statuses = [st for st in statuses if st.kind in RESOURCES]
        live = {st.key for st in statuses}
        with self._cond:
            if self._closed:
                return
            for k in [k for k in list(self._written) if k not in live] if complete else ():
                self._written.pop(k, None)
            for st in statuses:
                self._pending[st.key] = (st, guards.get(st.key), seen.get(st.key, ""))
            self._m_pending.set(len(self._pending))
            if self._thread is None:
                self._thread = CoreThread(self._run, "status-worker")
                self._thread.start()
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    def dead_threads(self) -> list[str]:
        """["status-worker"] when the worker thread ended although the writer was not closed."""
        with self._cond:
            thread, closed = self._thread, self._closed
        return [thread.name] if thread is not None and dead(thread, closed) else []

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is pending nor being written (True), or ``timeout`` real seconds."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left if left is not None else 1.0)
            return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    wait = max(self._retry_at - time.monotonic(), self.paused_for()) if self._pending else None
                    if wait is not None and wait <= 0:
                        break
                    self._cond.wait(wait)
                if self._closed:
                    return
                batch, self._pending = self._pending, {}
                self._busy = True
                self._m_pending.set(0)
            try:
                report = self._write_batch(batch)
            except Exception:  # noqa: BLE001 - the worker must survive anything
                log.exception("status worker: batch failed")
                report = StatusReport(errors=["internal error"], failed=list(batch))
            with self._cond:
                self._busy = False
                self.batches += 1
                self.last_report = report
                if report.failed:
                    for key in report.failed:  # a newer status of the same object wins
                        if key in batch and key not in self._pending:
                            self._pending[key] = batch[key]
                    delay = self._limiter.when("status")
                    if report.retry_after is not None:
                        delay = max(delay, report.retry_after)
                    self._retry_at = time.monotonic() + delay
                    log.warning("status writes failed; retrying", extra={
                        "errors": len(report.errors), "retry_in_s": round(delay, 3),
                        "error": report.errors[0] if report.errors else ""})
                else:
                    self._limiter.forget("status")
                self._m_pending.set(len(self._pending))
                self._cond.notify_all()
            if report.written or report.conflicts:
                log.info("statuses written", extra={"written": report.written, "conflicts": report.conflicts,
                                                     "errors": len(report.errors)})

    def _write_batch(self, batch: Mapping[StatusKey, tuple[ObjectStatus, WriteGuard | None, str]]) -> StatusReport:
        try:
            return self._write(list(st for st, _, _ in batch.values()), {k: g for k, (_, g, _) in batch.items() if g},
                               prune=False, seen={k: rv for k, (_, _, rv) in batch.items() if rv})
        except NotLeader:
            # no longer leading: nothing of this term is written; a new term re-renders everything
            log.info("status worker: not the leader; pending statuses dropped")
            with self._cond:
                self._pending.clear()
            return StatusReport()

    def write_all(self, statuses: Iterable[ObjectStatus],
                  guards: Mapping[tuple[str, str, str], WriteGuard] | None = None,
                  seen: Mapping[StatusKey, str] | None = None) -> StatusReport:
        """Write every changed status (in parallel) and wait; raises NotLeader if leadership was lost.

        ``guards``: per object key, a precondition on the current object (checked against the
        cache and again after a 409 re-read); when it fails the status is left as it is.
        ``seen``: as for :meth:`submit`."""
        return self._write(list(statuses), guards or {}, prune=True, seen=seen or {})

    def _write(self, statuses: list[ObjectStatus], guards: Mapping[StatusKey, WriteGuard],
               prune: bool, seen: Mapping[StatusKey, str]) -> StatusReport:
        report = StatusReport()
        todo = []
        if prune:
            live = {st.key for st in statuses}
            with self._cond:
                for k in [k for k in list(self._written) if k not in live]:
                    self._written.pop(k, None)
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
            if memo is not None:
                if memo[0] != _rv(cur):
                    del self._written[st.key]  # the cache has caught up with that write
                elif memo[1] == _digest(want):
                    report.unchanged += 1  # written already; the cache has not caught up yet
                    continue
            todo.append((st, cur, guards.get(st.key), want, seen.get(st.key, "")))
        if not todo:
            return report
        results = list(self._pool.map(lambda a: self._write_one(*a), todo)) if len(todo) > 1 \
            else [self._write_one(*todo[0])]
        lost = False
        for (st, *_), (outcome, conflicts, err) in zip(todo, results, strict=True):
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
                report.failed.append(st.key)
        wait = self.paused_for()
        if report.errors and wait > 0:
            report.retry_after = wait
        if lost:
            raise NotLeader("leadership lost while writing statuses")
        return report

    def _write_one(self, st: ObjectStatus, cur: Obj, guard: WriteGuard | None = None,
                   want: dict[str, Any] | None = None, seen: str = "") -> tuple[str, int, str]:
        """``want``: the merged status for ``cur``, already known to differ from it; ``seen``: the
        resourceVersion of the object the render saw ("" unknown)."""
        try:
            return self._write_one_attempts(st, cur, guard, want, seen)
        finally:
            self._sending.pop(st.key, None)  # written (then in _written) or not sent

    def _write_one_attempts(self, st: ObjectStatus, cur: Obj, guard: WriteGuard | None,
                            want: dict[str, Any] | None, seen: str) -> tuple[str, int, str]:
        res = RESOURCES[st.kind]
        ns = st.namespace or None
        conflicts = 0
        for _attempt in range(MAX_CONFLICT_RETRIES + 1):
            if guard is not None and not guard(cur):
                return "unchanged", conflicts, ""
            if want is not None:  # computed for this ``cur`` by _write (the first attempt)
                status, want = want, None
            else:
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
            wait = self.paused_for()
            if wait > 0:  # the API server asked us to wait: do not send it
                return "throttled", conflicts, f"{st.kind} {st.namespace}/{st.name}: held back {wait:.1f}s " \
                                               "(the API server asked to wait)"
            digest = _digest(status)
            base = _rv(cur)
            seen_base = bool(seen) and base == seen  # onto the very version the render saw
            if seen_base:
                self._sending[st.key] = (base, digest)
            else:
                self._sending.pop(st.key, None)
            try:
                self.api.patch(res, ns, st.name, body, patch_type="merge", subresource="status")
                self._written[st.key] = (base, digest, seen_base)
                self._writes.labels(kind=st.kind).inc()
                log.debug("wrote status", extra={"kind": st.kind, "namespace": st.namespace, "object_name": st.name})
                return "written", conflicts, ""
            except ApiError as e:
                if e.is_not_found:
                    return "missing", conflicts, ""
                ra = retry_after_of(e)
                if ra is not None:
                    self._pause(ra)
                    log.warning("status write throttled", extra={"kind": st.kind, "namespace": st.namespace,
                                                                 "object_name": st.name, "error": str(e),
                                                                 "retry_in_s": ra})
                    return "error", conflicts, f"{st.kind} {st.namespace}/{st.name}: {e}"
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
                    ra = retry_after_of(ge)
                    if ra is not None:
                        self._pause(ra)
                    return "error", conflicts, f"{st.kind} {st.namespace}/{st.name}: re-read: {ge}"
            except Exception as e:  # a transport error: reported, retried by the next reconcile
                return "error", conflicts, f"{st.kind} {st.namespace}/{st.name}: {type(e).__name__}: {e}"
        return "error", conflicts, f"{st.kind} {st.namespace}/{st.name}: still conflicting after retries"
