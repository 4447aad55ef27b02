"""A thread-safe indexed cache of raw API objects keyed ``namespace/name`` (or ``name``).

Objects are stored as given minus ``metadata.managedFields`` (a shallow copy of the object
and its metadata; the rest is shared, never deep-copied). Stored objects are treated as
immutable: callers must not mutate what they get back.

``snapshot()`` returns a read-only mapping of the current contents in O(1): the store is
copy-on-write, so the first mutation after a snapshot copies the key->object dict (O(n),
references only) and the snapshot keeps seeing the old contents.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]


def object_key(obj: Obj) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
    md = obj.get("metadata") or {}
    name = md.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    ns = md.get("namespace")
    return f"{ns}/{name}" if ns else str(name)


def split_key(key: str) -> tuple[str | None, str]:
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else (None, key)


def strip_managed_fields(obj: Obj) -> Obj:
    """The object without ``metadata.managedFields`` (unchanged object when it has none)."""
    md = obj.get("metadata")
    if not isinstance(md, dict) or "managedFields" not in md:
        return obj
    out = dict(obj)
    out["metadata"] = {k: v for k, v in md.items() if k != "managedFields"}
    return out


def namespace_index(obj: Obj) -> list[str]:
    """Index function: the object's namespace."""
    ns = (obj.get("metadata") or {}).get("namespace")
    return [ns] if ns else []


@dataclass
class ReplaceResult:
    """What ``Store.replace`` changed: added objects, (old, new) updates, deleted objects."""

    added: list[Obj] = field(default_factory=list)
    updated: list[tuple[Obj, Obj]] = field(default_factory=list)
    deleted: list[Obj] = field(default_factory=list)


class Store:
    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None,
                 key_func: Callable[[Obj], str] = object_key) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, Obj] = {}
        self._shared = False  # a snapshot references self._items: copy before writing
        self._key = key_func
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}
        self._rv = ""
        self._changes = 0  # objects added, updated or deleted so far (a cheap version of the contents)
        #: (old, new) -> True for an update that is not counted in ``changes`` (``set_uncounted``)
        self._uncounted: Callable[[Obj, Obj], bool] | None = None

    # --- writes -----------------------------------------------------------------------------
    def _writable(self) -> dict[str, Obj]:
        if self._shared:
            self._items = dict(self._items)
            self._shared = False
        return self._items

    def _index_add(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            idx = self._indices[name]
            for v in fn(obj):
                idx.setdefault(v, set()).add(key)

    def _index_remove(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            idx = self._indices[name]
            for v in fn(obj):
                keys = idx.get(v)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del idx[v]

    def _put_locked(self, obj: Obj) -> tuple[str, Obj | None, Obj]:
        obj = strip_managed_fields(obj)
        key = self._key(obj)
        items = self._writable()
        old = items.get(key)
        if old is not None:
            self._index_remove(key, old)
        items[key] = obj
        self._index_add(key, obj)
        if old is None or self._uncounted is None or not self._uncounted(old, obj):
            self._changes += 1
        return key, old, obj

    def upsert(self, obj: Obj) -> tuple[Obj | None, Obj]:
        """Add or update; returns ``(old or None, stored)``."""
        with self._lock:
            _, old, new = self._put_locked(obj)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self._rv = str(rv)
            return old, new

    add = upsert
    update = upsert

    def delete(self, obj_or_key: Obj | str) -> Obj | None:
        """Remove by object or key; returns the removed object (None when absent)."""
        with self._lock:
            key = obj_or_key if isinstance(obj_or_key, str) else self._key(obj_or_key)
            if key not in self._items:
                return None
            items = self._writable()
            old = items.pop(key)
            self._index_remove(key, old)
            self._changes += 1
            if not isinstance(obj_or_key, str):
                rv = (obj_or_key.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self._rv = str(rv)
            return old

    def replace(self, items: Iterable[Obj], resource_version: str = "", *,
                namespace: str | None = None) -> ReplaceResult:
        """Make the contents exactly ``items`` (a relist); objects absent from ``items`` are deleted.

        With ``namespace`` only that namespace's objects are replaced (one reflector per
        namespace feeding one store). Unchanged objects (same resourceVersion) are not reported.
        """
        res = ReplaceResult()
        with self._lock:
            seen: set[str] = set()
            for obj in items:
                key, old, new = self._put_locked(obj)
                seen.add(key)
                if old is None:
                    res.added.append(new)
                elif _rv(old) != _rv(new) or not _rv(new):
                    res.updated.append((old, new))
            for key in [k for k in self._items if k not in seen]:
                if namespace is not None and split_key(key)[0] != namespace:
                    continue
                items_ = self._writable()
                old = items_.pop(key)
                self._index_remove(key, old)
                self._changes += 1
                res.deleted.append(old)
            self._rv = resource_version
        return res

    def set_uncounted(self, uncounted: Callable[[Obj, Obj], bool] | None) -> None:
        """Updates for which ``uncounted(old, new)`` is True (called under the store's lock, so
        at once with the update) still replace the object but do not count in ``changes``: its
        readers treat them as no change (e.g. the echo of their own status write)."""
        with self._lock:
            self._uncounted = uncounted

    def set_resource_version(self, rv: str) -> None:
        with self._lock:
            self._rv = rv

    # --- reads ------------------------------------------------------------------------------
    @property
    def changes(self) -> int:
        """How many times the contents changed (every upsert, delete and relisted object counts,
        but an update ``set_uncounted`` excludes; never decreases): equal values mean equal
        contents, up to those updates."""
        with self._lock:
            return self._changes

    @property
    def resource_version(self) -> str:
        with self._lock:
            return self._rv

    def get(self, key: str) -> Obj | None:
        with self._lock:
            return self._items.get(key)

    def get_like(self, obj: Obj) -> Obj | None:
        """The stored object with the key of ``obj`` (None when absent or ``obj`` has no key)."""
        try:
            key = self._key(obj)
        except (ValueError, TypeError, AttributeError):
            return None
        return self.get(key)

    def get_object(self, namespace: str | None, name: str) -> Obj | None:
        return self.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[Obj]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def index_keys(self, index_name: str, value: str) -> list[str]:
        with self._lock:
            if index_name not in self._indices:
                raise KeyError(f"no index {index_name!r}")
            return sorted(self._indices[index_name].get(value, ()))

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        with self._lock:
            return [self._items[k] for k in self.index_keys(index_name, value)]

    def index_values(self, index_name: str) -> list[str]:
        with self._lock:
            if index_name not in self._indices:
                raise KeyError(f"no index {index_name!r}")
            return sorted(self._indices[index_name])

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        with self._lock:
            for name, fn in indexers.items():
                if name in self._indexers:
                    raise ValueError(f"index {name!r} exists")
                self._indexers[name] = fn
                self._indices[name] = {}
                for key, obj in self._items.items():
                    for v in fn(obj):
                        self._indices[name].setdefault(v, set()).add(key)

    def snapshot(self) -> Mapping[str, Obj]:
        """A read-only ``key -> object`` view frozen at this moment (O(1); copy-on-write)."""
        return self.versioned_snapshot()[0]

    def versioned_snapshot(self) -> tuple[Mapping[str, Obj], int]:
        """``snapshot()`` and the ``changes`` count it reflects, taken atomically."""
        with self._lock:
            self._shared = True
            return MappingProxyType(self._items), self._changes


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def snapshot_all(stores: Mapping[str, Store]) -> dict[str, Mapping[str, Obj]]:
    """Snapshot several stores (each O(1)); the reconcile takes every cache at once."""
    return {name: s.snapshot() for name, s in stores.items()}
