"""``events.k8s.io/v1`` Events for the render's ``EventRecord``s.

``EventPolicy`` is the dedupe/bump policy, a small unit on an injectable clock: a problem is
posted once; while it remains (it is in every reconcile's result) its Event's ``series.count``
is bumped every ``repeat_interval`` (30 minutes); once it disappears it is forgotten, so if it
returns it is posted again at once, as a new Event (``<object>.<hash>.<occurrence>``). A new
leader finds its predecessor's Events by name: the latest occurrence is adopted while it is live
(last observed within the repeat interval plus ``STALE_GRACE``), else the problem was fixed since
and its return is posted as the next occurrence. Memory is bounded (least recently seen entries go first).
``EventWriter`` turns the policy's decisions into API calls. A 429 (or any answer with
Retry-After) stops the writes of that pass and pauses the writer until the Retry-After has
passed (``paused_for()``); what was not written is decided again on the next pass.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from titanium_gateway.kube.api import EVENTS, ApiError, KubeApi
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.render.result import EventRecord
from titanium_gateway.writers.base import LeaderGuard, microtime, retry_after_of

log = logging.getLogger(__name__)
REPEAT_INTERVAL = 30 * 60.0
MAX_TRACKED = 10_000
#: A leader bumps the Event of a problem that remains every REPEAT_INTERVAL (the controller
#: reconciles when a bump is due). An Event last observed longer ago than that plus this grace
#: (takeover, a slow reconcile, clock skew) was not kept alive: its problem was fixed since.
STALE_GRACE = 5 * 60.0
#: Occurrences of one problem read when adopting a predecessor's Events (the latest counts).
MAX_OCCURRENCE_READS = 64

DedupeKey = tuple[str, str, str, str, str]


@dataclass
class _Tracked:
    record: EventRecord
    first_posted: float
    last_emitted: float
    count: int = 1
    event_name: str = ""
    event_namespace: str = ""


@dataclass(frozen=True)
class Decision:
    action: Literal["post", "bump"]
    record: EventRecord
    count: int
    #: name/namespace of the Event to bump (empty for a post).
    event_name: str = ""
    event_namespace: str = ""


@dataclass
class EventPolicy:
    clock: Clock = REAL_CLOCK
    repeat_interval: float = REPEAT_INTERVAL
    max_tracked: int = MAX_TRACKED
    _tracked: OrderedDict[DedupeKey, _Tracked] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def decide(self, current: Iterable[EventRecord]) -> list[Decision]:
        """What to do for the problems present now; forgets those that are gone."""
        now = self.clock.now()
        out: list[Decision] = []
        with self._lock:
            seen: set[DedupeKey] = set()
            for rec in current:
                key = rec.dedupe_key
                if key in seen:
                    continue
                seen.add(key)
                t = self._tracked.get(key)
                if t is None:
                    out.append(Decision("post", rec, 1))
                elif now - t.last_emitted >= self.repeat_interval:
                    out.append(Decision("bump", rec, t.count + 1, t.event_name, t.event_namespace))
            for key in [k for k in self._tracked if k not in seen]:
                del self._tracked[key]
        return out

    def record(self, decision: Decision, event_name: str = "", event_namespace: str = "") -> None:
        """The decision was carried out (call only on success, so failures are retried)."""
        now = self.clock.now()
        key = decision.record.dedupe_key
        with self._lock:
            t = self._tracked.get(key)
            if decision.action == "post" or t is None:
                t = _Tracked(decision.record, now, now, decision.count, event_name, event_namespace)
                self._tracked[key] = t
            else:
                t.count = decision.count
                t.last_emitted = now
                if event_name:
                    t.event_name, t.event_namespace = event_name, event_namespace
            self._tracked.move_to_end(key)
            while len(self._tracked) > self.max_tracked:
                self._tracked.popitem(last=False)

    def reset(self) -> None:
        with self._lock:
            self._tracked.clear()

    def next_due(self) -> float | None:
        """Clock time the next bump is due (None when nothing is tracked)."""
        with self._lock:
            if not self._tracked:
                return None
            return min(t.last_emitted for t in self._tracked.values()) + self.repeat_interval

    def backdate(self, key: DedupeKey, seconds: float) -> None:
        """The tracked problem was last emitted ``seconds`` ago (an adopted Event)."""
        with self._lock:
            t = self._tracked.get(key)
            if t is not None:
                t.last_emitted = self.clock.now() - max(0.0, seconds)

    def __len__(self) -> int:
        with self._lock:
            return len(self._tracked)



#: events.k8s.io/v1 Event.note is at most 1 KiB, measured in bytes (UTF-8) by the API server.
NOTE_MAX_BYTES = 1024


def fit_bytes(text: str, limit: int) -> str:
    """``text`` cut so its UTF-8 encoding fits ``limit`` bytes, never splitting a character
    (a lone surrogate, which UTF-8 cannot carry, is replaced)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return data.decode("utf-8")
    return data[:limit].decode("utf-8", "ignore")

def event_name(rec: EventRecord, occurrence: int = 1) -> str:
    """Deterministic per problem and occurrence, so a new leader finds the Event its
    predecessor posted (create answers 409 AlreadyExists) instead of posting a duplicate."""
    digest = hashlib.sha256(repr(rec.dedupe_key).encode()).hexdigest()[:12]
    base = (rec.name or "object")[:200]
    return f"{base}.{digest}.{occurrence}"


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class EventWriter:
    def __init__(self, api: KubeApi, *, controller_name: str, identity: str, guard: LeaderGuard,
                 policy: EventPolicy | None = None, clock: Clock = REAL_CLOCK,
                 default_namespace: str = "default") -> None:
        self.api = api
        self.controller_name = controller_name
        self.identity = identity
        self.guard = guard
        self.clock = clock
        self.policy = policy or EventPolicy(clock=clock)
        self.default_namespace = default_namespace
        #: dedupe key -> occurrences posted in this term (a problem that returns gets a new Event)
        self._occurrences: OrderedDict[DedupeKey, int] = OrderedDict()
        self._paused_until: float | None = None  # clock time: no Event write before (Retry-After)

    def paused_for(self) -> float:
        """Seconds until Event writes may resume (0 when not paused)."""
        if self._paused_until is None:
            return 0.0
        return max(0.0, self._paused_until - self.clock.now())

    def reset(self) -> None:
        """A new leadership term: forget what was posted (existing Events are adopted on 409)."""
        self.policy.reset()
        self._occurrences.clear()

    def _next_occurrence(self, key: DedupeKey) -> int:
        n = self._occurrences.get(key, 0) + 1
        self._occurrences[key] = n
        self._occurrences.move_to_end(key)
        while len(self._occurrences) > self.policy.max_tracked:
            self._occurrences.popitem(last=False)
        return n

    def _read(self, ns: str, name: str) -> dict[str, Any] | None:
        """The Event (an empty merge patch reads it: RBAC grants create and patch only), or None."""
        try:
            return self.api.patch(EVENTS, ns, name, {}, patch_type="merge")
        except ApiError as e:
            if e.is_not_found:
                return None
            raise

    def _age(self, ev: dict[str, Any]) -> float | None:
        """Seconds since the Event was last observed (posted or bumped); None when unknown."""
        series = ev.get("series") or {}
        last = _parse_time(series.get("lastObservedTime")) or _parse_time(ev.get("eventTime"))
        return (self.clock.wall() - last).total_seconds() if last is not None else None

    def _is_live(self, ev: dict[str, Any]) -> bool:
        """Kept alive by a leader (bumped every repeat interval while its problem remained)."""
        age = self._age(ev)
        return age is not None and age < self.policy.repeat_interval + STALE_GRACE

    def _post(self, d: Decision) -> int:
        """Post the problem's next occurrence. When that Event exists (a previous leader posted
        it), find the latest occurrence: while it is live the problem has remained, so it is
        adopted (bumped when due); a stale one means the problem was fixed since and has
        returned, so a NEW Event is posted at once."""
        rec = d.record
        key = rec.dedupe_key
        ns = rec.namespace or self.default_namespace
        n = self._next_occurrence(key)
        name = event_name(rec, n)
        try:
            self.api.create(EVENTS, ns, self.body(rec, name, ns))
        except ApiError as e:
            if e.status != 409:
                raise
        else:
            self.policy.record(d, name, ns)
            log.info("posted event", extra={"kind": rec.kind, "namespace": rec.namespace,
                                             "object_name": rec.name, "reason": rec.reason, "event_message": rec.message})
            return 1
        latest, ev = n, self._read(ns, name)
        for m in range(n + 1, n + MAX_OCCURRENCE_READS):
            nxt = self._read(ns, event_name(rec, m))
            if nxt is None:
                break
            latest, ev = m, nxt
        self._occurrences[key] = latest
        if ev is not None and self._is_live(ev):
            return self._adopt(d, event_name(rec, latest), ns, ev)
        n = self._next_occurrence(key)
        name = event_name(rec, n)
        try:
            self.api.create(EVENTS, ns, self.body(rec, name, ns))
        except ApiError as e:
            if e.status != 409:
                raise
            ev = self._read(ns, name)  # another writer posted it just now
            return self._adopt(d, name, ns, ev) if ev is not None else 0
        self.policy.record(d, name, ns)
        log.info("posted event", extra={"kind": rec.kind, "namespace": rec.namespace, "object_name": rec.name,
                                         "reason": rec.reason, "event_message": rec.message, "event": name})
        return 1

    def _adopt(self, d: Decision, name: str, ns: str, ev: dict[str, Any]) -> int:
        """The Event exists (posted by a previous leader): track it, bump it when it is due."""
        series = ev.get("series") or {}
        count = int(series.get("count") or 1)
        known_age = self._age(ev)
        age = known_age if known_age is not None else self.policy.repeat_interval
        if age >= self.policy.repeat_interval:
            count += 1
            self.api.patch(EVENTS, ns, name, {
                "series": {"count": count, "lastObservedTime": microtime(self.clock.wall())}}, patch_type="merge")
            self.policy.record(dataclasses.replace(d, count=count), name, ns)
            return 2
        self.policy.record(dataclasses.replace(d, count=count), name, ns)
        self.policy.backdate(d.record.dedupe_key, age)
        return 1

    def body(self, rec: EventRecord, name: str, namespace: str) -> dict[str, Any]:
        regarding: dict[str, Any] = {"kind": rec.kind, "name": rec.name}
        if rec.namespace:
            regarding["namespace"] = rec.namespace
        if rec.uid:
            regarding["uid"] = rec.uid
        if rec.api_version:
            regarding["apiVersion"] = rec.api_version
        return {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": microtime(self.clock.wall()),
            "reportingController": self.controller_name,
            "reportingInstance": self.identity,
            "action": "Reconcile",
            "reason": rec.reason,
            "note": fit_bytes(rec.message, NOTE_MAX_BYTES),
            "type": rec.type,
            "regarding": regarding,
        }

    def write(self, records: Iterable[EventRecord]) -> int:
        """Post or bump as the policy decides; returns the number of API writes."""
        n = 0
        if self.paused_for() > 0:
            return 0
        for d in self.policy.decide(records):
            self.guard.check(f"{d.action} event {d.record.reason}")
            try:
                if d.action == "bump" and d.event_name:
                    try:
                        self.api.patch(EVENTS, d.event_namespace, d.event_name, {
                            "series": {"count": d.count, "lastObservedTime": microtime(self.clock.wall())}},
                            patch_type="merge")
                        self.policy.record(d)
                        n += 1
                        continue
                    except ApiError as e:
                        if not e.is_not_found:
                            raise
                        # The Event expired (TTL): post a fresh one.
                n += self._post(d)
            except ApiError as e:
                log.warning("event write failed", extra={"kind": d.record.kind, "namespace": d.record.namespace,
                                                          "object_name": d.record.name, "reason": d.record.reason,
                                                          "error": str(e)})
                ra = retry_after_of(e)
                if ra is not None:  # the API server asked us to wait: no further Event write until then
                    self._paused_until = self.clock.now() + ra
                    break
        return n
