"""``SharedInformer``: one store fed by reflector(s), many event handlers (client-go
SharedIndexInformer, without the DeltaFIFO: handlers are called on the reflector's thread right
after the store changed, so they must be cheap — the controller only enqueues a key).

With ``namespaces=[...]`` the informer runs one reflector per namespace into one store (e.g.
TLS Secrets when ``--secret-namespaces`` is set); otherwise one reflector for ``namespace``
(None: all namespaces / cluster-scoped).

``InformerSet`` starts many informers and waits for all of them to sync; informers may be added
and removed while it is read (copy on write).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from titanium_gateway.kube.api import ApiError, KubeApi, Obj, Resource
from titanium_gateway.kube.clock import REAL_CLOCK, Clock
from titanium_gateway.kube.reflector import Backoff, Reflector
from titanium_gateway.kube.store import IndexFunc, Store
from titanium_gateway.kube.threads import CoreThread, dead, describe

log = logging.getLogger(__name__)

#: Answers that make a failing list or watch a lasting failure soon (``LASTING_AFTER``): the
#: permission (401, 403) or the resource version (404) is gone; any other failure becomes lasting
#: after a longer while. (A few seconds ride out a CRD whose storage the API server is
#: re-creating, which may answer 404 for a moment.)
LASTING_STATUSES = frozenset({401, 403, 404})
LASTING_AFTER = 5.0


@dataclass
class EventHandler:
    """Callbacks with raw dicts; any may be None."""

    on_add: Callable[[Obj], None] | None = None
    on_update: Callable[[Obj, Obj], None] | None = None
    on_delete: Callable[[Obj], None] | None = None


class _Fanout:
    """The reflectors' sink: calls every registered handler, isolating their failures."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._handlers: list[EventHandler] = []

    def add(self, h: EventHandler) -> None:
        with self._lock:
            self._handlers.append(h)

    def _each(self) -> list[EventHandler]:
        with self._lock:
            return list(self._handlers)

    def _call(self, fn: Callable[..., None] | None, *args: Obj) -> None:
        if fn is None:
            return
        try:
            fn(*args)
        except Exception:  # noqa: BLE001
            log.exception("informer %s: handler failed", self.name)

    def on_add(self, obj: Obj) -> None:
        for h in self._each():
            self._call(h.on_add, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        for h in self._each():
            self._call(h.on_update, old, new)

    def on_delete(self, obj: Obj) -> None:
        for h in self._each():
            self._call(h.on_delete, obj)


class SharedInformer:
    def __init__(self, api: KubeApi, resource: Resource, namespace: str | None = None, *,
                 namespaces: Sequence[str] | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, indexers: Mapping[str, IndexFunc] | None = None,
                 resync_period: float | None = None, page_size: int = 500, watch_timeout: int = 300,
                 backoff_factory: Callable[[], Backoff] | None = None, clock: Clock = REAL_CLOCK,
                 name: str | None = None, transform: Callable[[Obj], Obj] | None = None,
                 watch_list: bool = False) -> None:
        """``transform`` (client-go ``SetTransform``): applied to every listed or watched object
        before it is stored and handed to the handlers (to drop what nobody reads); it must not
        modify its argument, and must keep ``metadata.name``/``namespace``/``resourceVersion``.
        ``watch_list``: list with a streaming list where the server serves one (``Reflector``)."""
        if namespace is not None and namespaces:
            raise ValueError("give namespace or namespaces, not both")
        self.resource = resource
        self.clock = clock
        self.name = name or resource.plural
        self.store = Store(indexers)
        self._fanout = _Fanout(self.name)
        scopes: list[str | None] = list(namespaces) if namespaces else [namespace]
        if len(set(scopes)) != len(scopes):
            raise ValueError("duplicate namespaces")
        self.reflectors = [
            Reflector(api, resource, self.store, self._fanout, namespace=ns, label_selector=label_selector,
                      field_selector=field_selector, page_size=page_size, watch_timeout=watch_timeout,
                      resync_period=resync_period, backoff=backoff_factory() if backoff_factory else None,
                      clock=clock, name=f"{self.name}/{ns}" if ns else self.name, transform=transform,
                      watch_list=watch_list)
            for ns in scopes
        ]
        self._threads: list[CoreThread] = []
        self._lock = threading.Lock()

    def add_event_handler(self, handler: EventHandler | None = None, *,
                          on_add: Callable[[Obj], None] | None = None,
                          on_update: Callable[[Obj, Obj], None] | None = None,
                          on_delete: Callable[[Obj], None] | None = None) -> EventHandler:
        """Register callbacks. A handler added after sync is first told about every cached object
        (``on_add``) so it never misses state."""
        h = handler or EventHandler(on_add, on_update, on_delete)
        self._fanout.add(h)
        if self.has_synced() and h.on_add is not None:
            for obj in self.store.list():
                self._fanout._call(h.on_add, obj)
        return h

    def start(self) -> None:
        """Start the reflector threads (daemon); a second call does nothing."""
        with self._lock:
            if self._threads:
                return
            for r in self.reflectors:
                t = CoreThread(r.run, f"reflector-{r.name}")
                self._threads.append(t)
                t.start()

    def dead_threads(self) -> list[str]:
        """Names of the reflector threads that ended although not stopped (see ``kube.threads``)."""
        with self._lock:
            threads = list(self._threads)
        return [t.name for t, r in zip(threads, self.reflectors, strict=False) if dead(t, r.stopped)]

    def stop(self, join_timeout: float | None = None) -> None:
        """Stop the reflectors; with ``join_timeout`` wait (real seconds) for their threads."""
        for r in self.reflectors:
            r.stop()
        if join_timeout is not None:
            end = time.monotonic() + join_timeout
            for t in self._threads:
                t.join(max(0.0, end - time.monotonic()))

    def has_synced(self) -> bool:
        return all(r.has_synced() for r in self.reflectors)

    def failure(self) -> tuple[float, BaseException | None] | None:
        """``(since, last error)`` of the reflector failing the longest, None while none fails
        (see ``Reflector.failing_since``): the cache may be stale meanwhile."""
        worst: tuple[float, BaseException | None] | None = None
        for r in self.reflectors:
            since = r.failing_since
            if since is not None and (worst is None or since < worst[0]):
                worst = (since, r.last_error)
        return worst

    def stale(self, stale_after: float, lasting_after: float = LASTING_AFTER) -> str:
        """Why this cache cannot be trusted ("" while it can): its list or watch fails lastingly,
        after ``lasting_after`` seconds for 401, 403 and 404, after ``stale_after`` seconds for
        any other error (410 loops, 5xx, connection errors: a passing outage keeps the cache in
        force)."""
        failure = self.failure()
        if failure is None:
            return ""
        since, error = failure
        gone = isinstance(error, ApiError) and error.status in LASTING_STATUSES
        if self.clock.now() - since < (lasting_after if gone else stale_after):
            return ""
        return str(error) if isinstance(error, ApiError) else describe(error) if error is not None else "failing"

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        for r in self.reflectors:
            left = None if end is None else max(0.0, end - time.monotonic())
            if not r.wait_for_sync(left):
                return False
        return True

    def list(self) -> list[Obj]:
        return self.store.list()

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.store.get_object(namespace, name)

    @property
    def last_sync_resource_version(self) -> str:
        return ",".join(r.last_sync_resource_version for r in self.reflectors)


class InformerSet:
    """Named informers started together; ``wait_for_sync`` until all have listed once."""

    def __init__(self, informers: Mapping[str, SharedInformer] | None = None) -> None:
        self._informers: dict[str, SharedInformer] = dict(informers or {})

    def add(self, name: str, informer: SharedInformer) -> SharedInformer:
        if name in self._informers:
            raise ValueError(f"informer {name!r} exists")
        # copy on write: a reader iterating the set meanwhile keeps the mapping it started with
        self._informers = {**self._informers, name: informer}
        return informer

    def __getitem__(self, name: str) -> SharedInformer:
        return self._informers[name]

    def get(self, name: str) -> SharedInformer | None:
        return self._informers.get(name)

    def replace(self, name: str, informer: SharedInformer) -> SharedInformer | None:
        """Put ``informer`` under ``name`` at once (the caller stops the one it replaces, returned)."""
        old = self._informers.get(name)
        self._informers = {**self._informers, name: informer}
        return old

    def remove(self, name: str) -> SharedInformer | None:
        """Take an informer out of the set (the caller stops it); None when absent."""
        informers = dict(self._informers)
        gone = informers.pop(name, None)
        self._informers = informers
        return gone

    def __iter__(self) -> Iterable[str]:  # type: ignore[override]
        return iter(self._informers)

    def items(self) -> list[tuple[str, SharedInformer]]:
        return list(self._informers.items())

    def start(self) -> None:
        for inf in self._informers.values():
            inf.start()

    def stop(self, join_timeout: float | None = None) -> None:
        for inf in self._informers.values():
            inf.stop(join_timeout)

    def has_synced(self) -> bool:
        return all(inf.has_synced() for inf in self._informers.values())

    def dead_threads(self) -> list[str]:
        return [name for inf in self._informers.values() for name in inf.dead_threads()]

    def unsynced(self) -> list[str]:
        return sorted(n for n, inf in self._informers.items() if not inf.has_synced())

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """True when every informer synced within ``timeout`` real seconds (None: forever)."""
        end = None if timeout is None else time.monotonic() + timeout
        for inf in self._informers.values():
            left = None if end is None else max(0.0, end - time.monotonic())
            if not inf.wait_for_sync(left):
                return False
        return True

    def changes(self) -> int:
        """Total store changes of every informer (see ``Store.changes``)."""
        return sum(inf.store.changes for inf in self._informers.values())

    def lists(self) -> int:
        """Total (re)lists done by every reflector."""
        return sum(r.lists for inf in self._informers.values() for r in inf.reflectors)

    def snapshot(self) -> dict[str, Mapping[str, Obj]]:
        """Every cache at once (each O(1), copy-on-write)."""
        return {n: inf.store.snapshot() for n, inf in self._informers.items()}

    def versioned_snapshot(self) -> tuple[dict[str, Mapping[str, Obj]], dict[str, int]]:
        """``snapshot()`` plus, per informer, the ``Store.changes`` count each cache view reflects:
        equal counts mean equal contents."""
        caches: dict[str, Mapping[str, Obj]] = {}
        versions: dict[str, int] = {}
        for n, inf in self._informers.items():
            caches[n], versions[n] = inf.store.versioned_snapshot()
        return caches, versions
