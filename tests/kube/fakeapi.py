"""An in-memory ``KubeApi`` for fast unit tests of the kube machinery.

One global resourceVersion; list with label (equality) and field selectors and pagination;
watch replaying a bounded history (410 from an older RV) then live changes; optimistic
concurrency (409 on a stale resourceVersion); error injection per verb; a call log.
"""

from __future__ import annotations

import copy
import queue
import threading
from collections.abc import Iterator
from typing import Any

from tests.support.k8sutil import merge_patch
from titanium_gateway.kube.api import ApiError, Obj, PatchType, Resource

_END = object()


def _labels_match(obj: Obj, selector: str | None) -> bool:
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in selector.split(","):
        k, _, v = term.partition("=")
        if labels.get(k) != v:
            return False
    return True


def _field(obj: Obj, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def _fields_match(obj: Obj, selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if _field(obj, k) == v:
                return False
        else:
            k, _, v = term.partition("=")
            if _field(obj, k.rstrip("=")) != v.lstrip("="):
                return False
    return True


class FakeKubeApi:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.rv = 100
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.history: list[tuple[int, str, Obj]] = []  # (rv, type, obj)
        self.oldest_rv = 100
        self.watchers: list[tuple[queue.Queue[Any], Resource, str | None, str | None, str | None]] = []
        self.errors: dict[str, list[BaseException]] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.end_watch_after_replay = False
        self.watch_scripts: list[list[Obj]] = []  # extra events appended to the next watch(es)

    # --- test controls ------------------------------------------------------------------------
    def fail(self, verb: str, *errors: BaseException) -> None:
        with self.lock:
            self.errors.setdefault(verb, []).extend(errors)

    def _maybe_fail(self, verb: str) -> None:
        errs = self.errors.get(verb)
        if errs:
            raise errs.pop(0)

    def count(self, verb: str, plural: str | None = None) -> int:
        with self.lock:
            return sum(1 for v, p, _ in self.calls if v == verb and (plural is None or p == plural))

    def calls_of(self, verb: str) -> list[dict[str, Any]]:
        with self.lock:
            return [kw for v, _, kw in self.calls if v == verb]

    def compact(self) -> None:
        """Forget the history: watching from an older RV now answers 410."""
        with self.lock:
            self.history.clear()
            self.oldest_rv = self.rv

    def end_watches(self) -> None:
        with self.lock:
            for w in self.watchers:
                w[0].put(_END)
            self.watchers.clear()

    def push_watch_event(self, ev: Obj) -> None:
        """Deliver a raw event (e.g. an ERROR Status) to every open watch."""
        with self.lock:
            for w in self.watchers:
                w[0].put(ev)

    def put(self, res: Resource, obj: Obj) -> Obj:
        """Create or overwrite without checks (test setup)."""
        with self.lock:
            md = obj.setdefault("metadata", {})
            key = (res.plural, md.get("namespace") or "", md["name"])
            etype = "MODIFIED" if key in self.objects else "ADDED"
            return self._store(res, key, obj, etype)

    def remove(self, res: Resource, namespace: str | None, name: str) -> None:
        with self.lock:
            key = (res.plural, namespace or "", name)
            old = self.objects.pop(key)
            self.rv += 1
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self._record(res, "DELETED", gone)

    # --- internals ----------------------------------------------------------------------------
    def _store(self, res: Resource, key: tuple[str, str, str], obj: Obj, etype: str) -> Obj:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        obj["metadata"].setdefault("managedFields", [{"manager": "fake"}])
        self.objects[key] = obj
        self._record(res, etype, obj)
        return copy.deepcopy(obj)

    def _record(self, res: Resource, etype: str, obj: Obj) -> None:
        self.history.append((self.rv, etype, copy.deepcopy(obj)))
        for q, wres, ns, ls, fs in self.watchers:
            if wres.plural == res.plural and self._matches(obj, ns, ls, fs):
                q.put({"type": etype, "object": copy.deepcopy(obj)})

    @staticmethod
    def _matches(obj: Obj, ns: str | None, ls: str | None, fs: str | None) -> bool:
        if ns and (obj.get("metadata") or {}).get("namespace") != ns:
            return False
        return _labels_match(obj, ls) and _fields_match(obj, fs)

    def _log(self, verb: str, res: Resource, **kw: Any) -> None:
        self.calls.append((verb, res.plural, kw))

    # --- KubeApi ------------------------------------------------------------------------------
    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, resource_version: str | None = None,
             limit: int | None = None, continue_token: str | None = None) -> Obj:
        with self.lock:
            self._log("list", res, namespace=namespace, label_selector=label_selector,
                      field_selector=field_selector, limit=limit, continue_token=continue_token)
            self._maybe_fail("list")
            items = [copy.deepcopy(o) for k, o in sorted(self.objects.items())
                     if k[0] == res.plural and self._matches(o, namespace, label_selector, field_selector)]
            for it in items:  # a real server leaves kind/apiVersion out of list items
                it.pop("kind", None)
                it.pop("apiVersion", None)
            start = int(continue_token or 0)
            md: Obj = {"resourceVersion": str(self.rv)}
            if limit:
                page = items[start:start + limit]
                if start + limit < len(items):
                    md["continue"] = str(start + limit)
            else:
                page = items
            return {"kind": f"{res.kind}List", "metadata": md, "items": page}

    def watch(self, res: Resource, namespace: str | None = None, *, resource_version: str | None = None,
              label_selector: str | None = None, field_selector: str | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = True,
              send_initial_events: bool = False) -> Iterator[Obj]:
        with self.lock:
            self._log("watch", res, namespace=namespace, resource_version=resource_version,
                      label_selector=label_selector, field_selector=field_selector,
                      timeout_seconds=timeout_seconds, allow_bookmarks=allow_bookmarks,
                      send_initial_events=send_initial_events)
            self._maybe_fail("watch")
            from_rv = int(resource_version or self.rv)
            if from_rv < self.oldest_rv:
                raise ApiError(410, "Expired", f"too old resource version: {from_rv} ({self.oldest_rv})")
            q: queue.Queue[Any] = queue.Queue()
            if send_initial_events:  # every object as ADDED, then the bookmark that ends them
                for k, o in sorted(self.objects.items()):
                    if k[0] == res.plural and self._matches(o, namespace, label_selector, field_selector):
                        q.put({"type": "ADDED", "object": copy.deepcopy(o)})
                q.put({"type": "BOOKMARK", "object": {"kind": res.kind, "apiVersion": res.api_version, "metadata": {
                    "resourceVersion": str(self.rv), "annotations": {"k8s.io/initial-events-end": "true"}}}})
            for rv, etype, obj in self.history:
                if rv > from_rv and obj.get("kind") == res.kind and self._matches(
                        obj, namespace, label_selector, field_selector):
                    q.put({"type": etype, "object": copy.deepcopy(obj)})
            if self.watch_scripts:
                for ev in self.watch_scripts.pop(0):
                    q.put(ev)
            if self.end_watch_after_replay:
                q.put(_END)
            else:
                self.watchers.append((q, res, namespace, label_selector, field_selector))
        return self._drain(q)

    @staticmethod
    def _drain(q: queue.Queue[Any]) -> Iterator[Obj]:
        while True:
            ev = q.get()
            if ev is _END:
                return
            if isinstance(ev, BaseException):
                raise ev
            yield ev

    def get(self, res: Resource, namespace: str | None, name: str, *, subresource: str | None = None) -> Obj:
        with self.lock:
            self._log("get", res, namespace=namespace, name=name)
            self._maybe_fail("get")
            o = self.objects.get((res.plural, namespace or "", name))
            if o is None:
                raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found')
            return copy.deepcopy(o)

    def get_metadata(self, res: Resource, namespace: str | None, name: str) -> Obj:
        o = self.get(res, namespace, name)
        return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": o.get("metadata") or {}}

    def create(self, res: Resource, namespace: str | None, body: Obj) -> Obj:
        with self.lock:
            self._log("create", res, namespace=namespace, body=copy.deepcopy(body))
            self._maybe_fail("create")
            md = body.setdefault("metadata", {})
            if namespace:
                md["namespace"] = namespace
            key = (res.plural, namespace or "", md["name"])
            if key in self.objects:
                raise ApiError(409, "AlreadyExists", f'{res.plural} "{md["name"]}" already exists')
            return self._store(res, key, body, "ADDED")

    def replace(self, res: Resource, namespace: str | None, name: str, body: Obj, *,
                subresource: str | None = None) -> Obj:
        with self.lock:
            self._log("replace", res, namespace=namespace, name=name, body=copy.deepcopy(body))
            self._maybe_fail("replace")
            key = (res.plural, namespace or "", name)
            cur = self.objects.get(key)
            if cur is None:
                raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found')
            want = (body.get("metadata") or {}).get("resourceVersion")
            if want and want != cur["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified; please apply your changes "
                                                "to the latest version and try again")
            return self._store(res, key, body, "MODIFIED")

    def patch(self, res: Resource, namespace: str | None, name: str, body: Any, *,
              patch_type: PatchType = "merge", subresource: str | None = None) -> Obj:
        with self.lock:
            self._log("patch", res, namespace=namespace, name=name, body=copy.deepcopy(body),
                      patch_type=patch_type)
            self._maybe_fail("patch")
            key = (res.plural, namespace or "", name)
            cur = self.objects.get(key)
            if cur is None:
                raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found')
            if patch_type != "merge":
                raise ApiError(415, "UnsupportedMediaType", "the fake takes merge patches only")
            return self._store(res, key, merge_patch(cur, body), "MODIFIED")

    def delete(self, res: Resource, namespace: str | None, name: str) -> Obj:
        with self.lock:
            self._log("delete", res, namespace=namespace, name=name)
            self._maybe_fail("delete")
            if (res.plural, namespace or "", name) not in self.objects:
                raise ApiError(404, "NotFound", f'{res.plural} "{name}" not found')
            self.remove(res, namespace, name)
            return {"kind": "Status", "status": "Success"}
