"""``Reflector``: keeps a ``Store`` equal to one resource (optionally one namespace, label and field
selectors) by listing, then watching from the list's resourceVersion (client-go tools/cache).

- The list is paginated (``limit``/``continue``); an expired continue token (410) falls back to
  one unpaginated list. With ``watch_list`` it is a streaming list instead (a watch with
  ``sendInitialEvents``: every object as ``ADDED``, then a bookmark that ends them), as client-go's
  WatchList; a server that refuses it (400/422: the WatchList feature off) or ends the stream
  before that bookmark is listed with pages, and is not asked again.
- The watch asks for bookmarks and a server-side timeout; when the stream ends normally the
  watch restarts at once from the last resourceVersion seen (events or bookmarks).
- 410 Gone, as an HTTP answer or as an ``ERROR`` event with code 410, makes it relist; the
  relist computes the deletes it missed (objects gone from the new list) and reports them.
- Any other error backs off exponentially with jitter (capped), never less than the server's
  Retry-After, and the watch resumes from the last resourceVersion (no relist needed).
- A malformed watch event or list item (not a JSON object, no object, no ``metadata`` or no
  ``metadata.name``) is skipped with a warning and counted (``malformed``,
  ``titanium_reflector_malformed_objects_total``); the watch goes on (its resourceVersion, when
  it has one, still advances), so one bad object never stops the cache nor makes it spin.
- Every store change is reported to an ``EventSink`` (on_add / on_update / on_delete) after
  the store was updated; ``resync_period`` re-reports every cached object as an update.
- ``failing_since``/``last_error``: since when the list or watch has been failing (None once a
  list succeeds, a watch is answered, or a watch event arrives): a cache that may be stale
  (e.g. 403 after an RBAC change, 404 once a version is no longer served) says so to its owner.
"""

from __future__ import annotations

import inspect
import logging
import random
import threading
from collections.abc import Callable
from typing import Any, Protocol

from titanium_gateway.kube.api import ApiError, KubeApi, Obj, Resource
from titanium_gateway.kube.clock import REAL_CLOCK, Clock, StopSignal
from titanium_gateway.kube.store import Store, strip_managed_fields
from titanium_gateway.metrics import Registry, reflector_malformed_objects

log = logging.getLogger(__name__)
#: The annotation of the bookmark that ends a streaming list's objects.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class EventSink(Protocol):
    def on_add(self, obj: Obj) -> None: ...

    def on_update(self, old: Obj, new: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


class Backoff:
    """Exponential back-off with jitter: ``initial * factor**n``, plus up to ``jitter`` x that at
    random, never more than ``cap``; ``next(retry_after)`` never returns less than Retry-After."""

    def __init__(self, initial: float = 0.8, factor: float = 2.0, cap: float = 30.0, jitter: float = 1.0,
                 rng: random.Random | None = None) -> None:
        if initial <= 0 or factor < 1 or cap < initial or jitter < 0:
            raise ValueError("need initial > 0, factor >= 1, cap >= initial, jitter >= 0")
        self.initial, self.factor, self.cap, self.jitter = initial, factor, cap, jitter
        self._rng = rng or random.Random()
        self.failures = 0

    def next(self, retry_after: float | None = None) -> float:
        base = min(self.cap, self.initial * self.factor ** min(self.failures, 64))
        self.failures += 1
        delay = min(self.cap, base * (1.0 + self.jitter * self._rng.random()))
        if retry_after is not None and retry_after > delay:
            delay = retry_after
        return delay

    def reset(self) -> None:
        self.failures = 0


def _malformed(obj: Any) -> str:
    """Why ``obj`` cannot be cached ("" when it can): an object with ``metadata.name``."""
    if not isinstance(obj, dict):
        return "no object" if obj is None else f"the object is a {type(obj).__name__}"
    md = obj.get("metadata")
    if not isinstance(md, dict):
        return "the object has no metadata"
    name = md.get("name")
    if not isinstance(name, str) or not name:
        return "the object has no metadata.name"
    ns = md.get("namespace")
    if ns is not None and not isinstance(ns, str):
        return "metadata.namespace is not a string"
    return ""


class _Gone(Exception):
    pass


class _Stopped(Exception):
    pass


class Reflector:
    def __init__(self, api: KubeApi, resource: Resource, store: Store, sink: EventSink | None = None, *,
                 namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, page_size: int = 500, watch_timeout: int = 300,
                 resync_period: float | None = None, backoff: Backoff | None = None,
                 min_watch_duration: float = 1.0, clock: Clock = REAL_CLOCK, name: str | None = None,
                 registry: Registry | None = None, transform: Callable[[Obj], Obj] | None = None,
                 watch_list: bool = False) -> None:
        self.api = api
        #: list with a streaming list (a watch with sendInitialEvents) while the server serves it
        self.watch_list = watch_list
        self.resource = resource
        self.store = store
        self.sink = sink
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.resync_period = resync_period
        self.backoff = backoff or Backoff()
        #: applied to every listed or watched object before it is stored (client-go SetTransform);
        #: a transform with a ``with_previous(obj, previous)`` attribute gets the stored object of
        #: the same key too, when there is one (e.g. to reuse its unchanged parts)
        self.transform = transform
        self.min_watch_duration = min_watch_duration
        self.clock = clock
        self.name = name or (f"{resource.plural}/{namespace}" if namespace else resource.plural)
        self._stop = StopSignal(clock)
        self._synced = threading.Event()
        self._rv = ""
        self._need_list = True
        self._last_list_at: float | None = None
        self._next_resync: float | None = None
        self.lists = 0  # counters for tests and debugging
        self.watches = 0
        self.errors = 0
        self.malformed = 0  # watch events and list items skipped (no object with metadata.name)
        self._m_malformed = reflector_malformed_objects(registry).labels(reflector=self.name)
        self.last_error: BaseException | None = None
        #: clock time of the first failed list or watch since the last success (None: none failed)
        self.failing_since: float | None = None
        self._stream: object | None = None  # the open watch stream (stop() closes it)

    # --- state --------------------------------------------------------------------------------
    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait (real seconds) for the first successful list."""
        return self._synced.wait(timeout)

    @property
    def last_sync_resource_version(self) -> str:
        return self._rv

    def stop(self) -> None:
        """Ask ``run`` to return: at once when it sleeps; a watch stream that can be closed from
        another thread (``RestApi``'s) is cut, else it returns at the next event or stream end."""
        with self._stop.cond:
            self._stop.stop()
            stream = self._stream
        close = getattr(stream, "close", None)
        if close is not None and not inspect.isgenerator(stream):
            try:
                close()
            except Exception:  # noqa: BLE001
                log.debug("reflector %s: closing the watch stream failed", self.name, exc_info=True)

    @property
    def stopped(self) -> bool:
        return self._stop.stopped

    @property
    def sleeping_until(self) -> float | None:
        """Clock time the current back-off sleep ends (None while awake)."""
        return self._stop.sleeping_until

    def _check_stop(self) -> None:
        if self._stop.stopped:
            raise _Stopped()

    def _sleep(self, seconds: float) -> None:
        self._stop.sleep(seconds)
        self._check_stop()

    # --- main loop ----------------------------------------------------------------------------
    def run(self) -> None:
        """List and watch until ``stop()``; never raises."""
        while not self._stop.stopped:
            try:
                self.run_once()
            except _Stopped:
                return
            except Exception as e:  # noqa: BLE001 - a reflector must survive any error
                self.errors += 1
                self.last_error = e
                if self.failing_since is None:
                    self.failing_since = self.clock.now()
                retry_after = e.retry_after if isinstance(e, ApiError) else None
                delay = self.backoff.next(retry_after)
                log.warning("reflector %s: %s; retrying in %.2fs", self.name, e, delay)
                try:
                    self._sleep(delay)
                except _Stopped:
                    return

    def run_once(self) -> None:
        """One cycle: relist when needed, then one watch stream until it ends. Raises on errors."""
        self._check_stop()
        if self._need_list:
            if self._last_list_at is not None and self.clock.now() - self._last_list_at < self.min_watch_duration:
                # relisting again right after a list (e.g. 410 at once): do not hammer the server
                self._sleep(self.backoff.next())
            self.list()
        self.watch_once()

    def list(self) -> None:
        """List everything (a streaming list, else paginated), replace the store, report the
        differences."""
        self._check_stop()
        listed = self._watch_list() if self.watch_list else None
        items, rv = listed if listed is not None else self._list_pages()
        self.lists += 1
        self.failing_since = None
        self._last_list_at = self.clock.now()
        res = self.store.replace(items, rv, namespace=self.namespace)
        self._rv = rv
        self._need_list = False
        self.backoff.reset()
        if self.resync_period:
            self._next_resync = self.clock.now() + self.resync_period
        self._synced.set()
        for obj in res.added:
            self._emit(lambda s, o=obj: s.on_add(o))
        for old, new in res.updated:
            self._emit(lambda s, o=old, n=new: s.on_update(o, n))
        for obj in res.deleted:
            self._emit(lambda s, o=obj: s.on_delete(o))

    def _watch_list(self) -> tuple[list[Obj], str] | None:
        """The objects and resourceVersion of a streaming list; None when the server does not
        serve one (then ``watch_list`` is switched off)."""
        items: list[Obj] = []
        try:
            stream = self.api.watch(self.resource, self.namespace, label_selector=self.label_selector,
                                    field_selector=self.field_selector, timeout_seconds=self.watch_timeout,
                                    allow_bookmarks=True, send_initial_events=True)
        except ApiError as e:
            if e.status not in (400, 422):
                raise
            log.info("reflector %s: no streaming list (%s); listing with pages", self.name, e)
            self.watch_list = False
            return None
        with self._stop.cond:
            self._stream = stream
        try:
            if self._stop.stopped:
                self.stop()
            for ev in stream:
                self._check_stop()
                etype = ev.get("type") if isinstance(ev, dict) else None
                obj = ev.get("object") if isinstance(ev, dict) else None
                if etype == "ADDED":
                    why = _malformed(obj)
                    if why:
                        self._skip(f"streamed list item {why}", obj)
                        continue
                    assert isinstance(obj, dict)
                    items.append(self._with_type(obj))
                elif etype == "BOOKMARK" and isinstance(obj, dict):
                    md = obj.get("metadata") or {}
                    if (md.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                        return items, str(md.get("resourceVersion") or "")
                elif etype == "ERROR":
                    self._handle(ev)  # raises (410 too: listed again after a back-off)
        finally:
            with self._stop.cond:
                self._stream = None
            close = getattr(stream, "close", None)
            if close is not None and not inspect.isgenerator(stream):
                try:
                    close()  # (at the bookmark: the watch goes on from its resourceVersion in watch_once)
                except Exception:  # noqa: BLE001
                    log.debug("reflector %s: closing the streaming list failed", self.name, exc_info=True)
        self._check_stop()
        log.info("reflector %s: the streaming list ended before its last bookmark; listing with pages", self.name)
        self.watch_list = False
        return None

    def _list_pages(self) -> tuple[list[Obj], str]:
        """The objects and resourceVersion of a paginated list."""
        items: list[Obj] = []
        token: str | None = None
        limit: int | None = self.page_size or None
        rv = ""
        while True:
            try:
                page = self.api.list(self.resource, self.namespace, label_selector=self.label_selector,
                                     field_selector=self.field_selector, limit=limit, continue_token=token)
            except ApiError as e:
                if e.is_gone and token:
                    log.info("reflector %s: continue token expired; listing without pagination", self.name)
                    items, token, limit = [], None, None
                    continue
                raise
            self._check_stop()
            for it in page.get("items") or []:
                why = _malformed(it)
                if why:
                    self._skip(f"list item {why}", it)
                    continue
                items.append(self._with_type(it))
            md = page.get("metadata") or {}
            rv = str(md.get("resourceVersion") or rv)
            token = md.get("continue") or None
            if not token:
                break
        return items, rv

    def watch_once(self) -> None:
        """One watch stream from the last resourceVersion; returns when it ends normally."""
        self._check_stop()
        timeout = self.watch_timeout
        if self.resync_period:
            timeout = max(1, min(timeout, int(self.resync_period)))
        # spread reconnects of many reflectors: between timeout and 2 x timeout, as client-go
        timeout = int(timeout * (1.0 + random.random()))
        started = self.clock.now()
        events = 0
        self.watches += 1
        try:
            stream = self.api.watch(self.resource, self.namespace, resource_version=self._rv,
                                    label_selector=self.label_selector, field_selector=self.field_selector,
                                    timeout_seconds=timeout, allow_bookmarks=True)
            with self._stop.cond:
                self._stream = stream
            if not inspect.isgenerator(stream):  # (an API client's stream: the server answered 200)
                self.failing_since = None
            if self._stop.stopped:
                self.stop()
            for ev in stream:
                self._check_stop()
                self.failing_since = None
                self._handle(ev)
                events += 1
                self.backoff.reset()
                self._maybe_resync()
        except ApiError as e:
            if e.is_gone:
                self._gone()
                return
            raise
        except _Gone:
            self._gone()
            return
        finally:
            with self._stop.cond:
                self._stream = None
        self.failing_since = None  # the stream ended normally
        self._check_stop()
        self._maybe_resync()
        if events == 0 and self.clock.now() - started < self.min_watch_duration:
            # an empty stream that ended at once: back off instead of spinning
            self._sleep(self.backoff.next())

    def _gone(self) -> None:
        log.info("reflector %s: resourceVersion %s expired (410); relisting", self.name, self._rv)
        self._need_list = True

    def _with_type(self, obj: Obj) -> Obj:
        """``obj`` with its kind and apiVersion, through the transform (given the stored object
        of the same key, if any, when the transform takes it: on a relist too)."""
        if not (obj.get("kind") and obj.get("apiVersion")):
            obj = dict(obj)
            obj.setdefault("apiVersion", self.resource.api_version)
            obj.setdefault("kind", self.resource.kind)
        transform = self.transform
        if transform is None:
            return obj
        with_previous = getattr(transform, "with_previous", None)
        if with_previous is not None:
            previous = self.store.get_like(obj)
            if previous is not None:
                return with_previous(obj, previous)
        return transform(obj)

    def _skip(self, what: str, obj: Any) -> None:
        self.malformed += 1
        self._m_malformed.inc()
        log.warning("reflector %s: skipped a malformed %s", self.name, what,
                    extra={"kind": self.resource.kind, "object": repr(obj)[:200]})

    def _handle(self, ev: Obj) -> None:
        if not isinstance(ev, dict):
            self._skip("watch event (not a JSON object)", ev)
            return
        etype = ev.get("type")
        obj = ev.get("object")
        if etype == "ERROR":
            obj = obj if isinstance(obj, dict) else {}
            try:
                code = int(obj.get("code") or 0)
            except (TypeError, ValueError):
                code = 0
            if code == 410:
                raise _Gone()
            raise ApiError(code or 500, str(obj.get("reason") or ""), str(obj.get("message") or ""), None, obj)
        md = obj.get("metadata") if isinstance(obj, dict) else None
        rv = str((md if isinstance(md, dict) else {}).get("resourceVersion") or "")
        if etype == "BOOKMARK":
            if rv:
                self._rv = rv
                self.store.set_resource_version(rv)
            return
        why = _malformed(obj)
        if why:
            self._skip(f"{etype} watch event: {why}", ev)
            if rv:
                self._rv = rv  # later events still resume after it
            return
        assert isinstance(obj, dict)
        obj = self._with_type(obj)
        if etype in ("ADDED", "MODIFIED"):
            old, new = self.store.upsert(obj)
            if old is None:
                self._emit(lambda s: s.on_add(new))
            else:
                self._emit(lambda s: s.on_update(old, new))
        elif etype == "DELETED":
            gone = self.store.delete(obj)
            final = gone if gone is not None else strip_managed_fields(obj)
            self._emit(lambda s: s.on_delete(final))
        else:
            log.warning("reflector %s: unknown watch event type %r", self.name, etype)
        if rv:
            self._rv = rv

    def _maybe_resync(self) -> None:
        if self._next_resync is None or self.resync_period is None:
            return
        if self.clock.now() < self._next_resync:
            return
        self._next_resync = self.clock.now() + self.resync_period
        for obj in self.store.list():
            if self.namespace is None or (obj.get("metadata") or {}).get("namespace") == self.namespace:
                self._emit(lambda s, o=obj: s.on_update(o, o))

    def _emit(self, call: Callable[[Any], None]) -> None:
        if self.sink is None:
            return
        try:
            call(self.sink)
        except Exception:  # noqa: BLE001 - a handler bug must not stop the cache
            log.exception("reflector %s: event handler failed", self.name)
