"""The data-plane ConfigMaps: the root (key ``twp.yaml``) and the parts
(``<config-map>-part-<n>``, key ``twp.part-<n>.yaml``).

Rules (the contract's "parts"): parts are written before the root; a ConfigMap is written only
when its bytes change; a part the new root no longer lists is emptied (never deleted) only
after the root that stops listing it is confirmed by every data-plane pod; the objects are
pre-created by the chart, so the writer only updates them (a missing object is a clear error) -
except the ConfigMaps of a Gateway's own data plane, which the writer creates when they are
missing (``create``: the metadata of a new one).

A ConfigMap the chart pre-created whose metadata the writer knows (read, or returned by its
last write) is updated whole (PUT) with that metadata, its ``resourceVersion`` as the
precondition; one changed by someone else since (409), one not read, and a Gateway's own (RBAC
grants patch there, not update) are written with a JSON patch of their ``data``.

What was written is remembered as one SHA-256 per ConfigMap (not its text: 26 MB at 10k
routes), computed over the rendered bytes; only what is actually written is decoded to ``str``.
A ConfigMap not yet written in this term (after a start or a failover) is read once by name
first: one that already holds the bytes is not written again, so a restart with nothing changed
writes nothing.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from titanium_gateway.kube.api import CONFIG_MAPS, ApiError, KubeApi
from titanium_gateway.metrics import Registry
from titanium_gateway.render.result import Plane
from titanium_gateway.writers.base import LeaderGuard, WriteError, config_writes, unreadable

log = logging.getLogger(__name__)
ROOT_KEY = "twp.yaml"


def part_name(config_map: str, n: int) -> str:
    return f"{config_map}-part-{n}"


def part_key(n: int) -> str:
    return f"twp.part-{n}.yaml"


def data_digest(data: Mapping[str, bytes]) -> str:
    """SHA-256 of a ConfigMap's ``data`` (keys in order, each key and value length-prefixed)."""
    h = hashlib.sha256()
    for key in sorted(data):
        k, v = key.encode("utf-8"), data[key]
        h.update(len(k).to_bytes(8, "big") + k + len(v).to_bytes(8, "big"))
        h.update(v)
    return h.hexdigest()


#: The digest of an emptied part (``data: {}``).
EMPTY = data_digest({})


class ConfigMapWriter:
    def __init__(self, api: KubeApi, namespace: str, name: str, *, max_parts: int, guard: LeaderGuard,
                 registry: Registry | None = None, create: Callable[[str], dict[str, Any]] | None = None) -> None:
        self.api = api
        #: the metadata of a ConfigMap to create when it is missing (None: never created)
        self.create = create
        self.namespace = namespace
        self.name = name
        self.max_parts = max_parts
        self.guard = guard
        self._lock = threading.Lock()
        #: object name -> ``data_digest`` of the data last written (absent: unknown, e.g. after a restart).
        self._known: dict[str, str] = {}
        #: part number -> config_hash of the root that stopped listing it.
        self._stale: dict[int, str] = {}
        #: config_hash whose root and parts were all written (or found written) since the last reset
        self._complete: str | None = None
        #: object name -> its metadata as last read or written (without ``managedFields``): what
        #: an update sends back (absent: written with a patch)
        self._meta: dict[str, dict[str, Any]] = {}
        self._writes = config_writes(registry)

    def reset(self) -> None:
        """Forget what was written (new leadership term: another replica may have written)."""
        with self._lock:
            self._known.clear()
            self._meta.clear()
            self._stale.clear()
            self._complete = None

    def is_complete(self, config_hash: str) -> bool:
        """The root with ``config_hash`` and every part it lists are written (since the last reset)."""
        with self._lock:
            return self._complete == config_hash

    def _missing(self, name: str) -> WriteError:
        return WriteError(
            f"ConfigMap {self.namespace}/{name} does not exist: the chart pre-creates it and the "
            "controller never creates it (check --config-map / --config-parts and the release)")

    def _learn(self, name: str) -> None:
        """What the ConfigMap holds now, when this term has not written it yet (one GET)."""
        try:
            cur = self.api.get(CONFIG_MAPS, self.namespace, name)
        except ApiError as e:
            if e.is_not_found:
                if self.create is not None:
                    return  # (created by the write)
                raise self._missing(name) from e
            unreadable(e, f"ConfigMap {self.namespace}/{name}")
            return
        if cur.get("binaryData"):
            return
        if self.create is not None and (cur.get("metadata") or {}).get("ownerReferences") != \
                self.create(name).get("ownerReferences"):
            return  # (another owner: a Gateway of that name deleted and made again; written with the new one)
        held = cur.get("data") or {}
        if isinstance(held, Mapping) and all(isinstance(v, str) for v in held.values()):
            self._known[name] = data_digest({str(k): v.encode("utf-8") for k, v in held.items()})
            self._remember(name, cur)

    def _remember(self, name: str, obj: Any) -> None:
        """Keep the metadata of ``obj`` (as read or written, without binaryData) for the next
        update (not for a Gateway's own ConfigMaps: those are patched)."""
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        if self.create is None and isinstance(meta, Mapping) and meta.get("resourceVersion") \
                and not obj.get("binaryData"):
            self._meta[name] = {k: v for k, v in meta.items() if k != "managedFields"}

    def _send(self, name: str, value: dict[str, str]) -> Any:
        """Update the ConfigMap with ``value`` as its data (PUT with the metadata last seen), or
        patch its data when that metadata is unknown or out of date (409); the object written."""
        meta = self._meta.pop(name, None)
        if meta is not None:
            try:
                return self.api.replace(CONFIG_MAPS, self.namespace, name,
                                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": value})
            except ApiError as e:
                if not e.is_conflict:
                    raise
        body: list[dict[str, Any]] = [{"op": "add", "path": "/data", "value": value}]
        if self.create is not None:  # (the owner too: see _learn)
            body.append({"op": "add", "path": "/metadata/ownerReferences",
                         "value": self.create(name).get("ownerReferences") or []})
        return self.api.patch(CONFIG_MAPS, self.namespace, name, body, patch_type="json")

    def _put(self, name: str, data: dict[str, bytes], what: str, *, create: bool = True) -> bool:
        digest = data_digest(data)
        if name not in self._known:
            self._learn(name)
        if self._known.get(name) == digest:
            return False
        self.guard.check(f"write ConfigMap {self.namespace}/{name}")
        value = {k: v.decode("utf-8") for k, v in data.items()}
        try:
            written = self._send(name, value)
        except ApiError as e:
            self._known.pop(name, None)
            if e.is_not_found and self.create is not None and create:
                written = self.api.create(CONFIG_MAPS, self.namespace, {"apiVersion": "v1", "kind": "ConfigMap",
                                                                        "metadata": self.create(name), "data": value})
            elif e.is_not_found:
                raise self._missing(name) from e
            else:
                raise
        self._remember(name, written)
        self._known[name] = digest
        self._writes.labels(object=what).inc()
        log.info("wrote ConfigMap", extra={"kind": "ConfigMap", "namespace": self.namespace, "object_name": name,
                                            "bytes": sum(len(v) for v in data.values())})
        return True

    def write(self, plane: Plane) -> bool:
        """Write parts then root; returns True when the root changed. Nothing is written when the
        plane has a delivery error (the previous config stays)."""
        if plane.delivery_error:
            return False
        with self._lock:
            if self._complete == plane.config_hash:
                return False  # every file of this config is written: its part bytes are not needed
            self._complete = None
            listed = len(plane.parts)
            if listed > self.max_parts:
                raise WriteError(f"{listed} config parts but the pods mount {self.max_parts}")
            for n, (fname, data) in enumerate(plane.parts, 1):
                if fname != part_key(n):
                    raise WriteError(f"part {n} is named {fname!r}, expected {part_key(n)!r}")
                if not data:
                    # a part is never empty (it holds "routes:"/"clusters:" at least): these are
                    # the bytes a reconciler released after writing them; it must render again
                    raise WriteError(f"part {n} of config {plane.config_hash[:12]} has no bytes")
                self._stale.pop(n, None)
                self._put(part_name(self.name, n), {part_key(n): data}, "part")
            changed = self._put(self.name, {ROOT_KEY: plane.config}, "root")
            for n in range(listed + 1, self.max_parts + 1):
                known = self._known.get(part_name(self.name, n))
                if self.create is not None and known is None:
                    continue  # (a part of a Gateway's data plane is created when needed: none seen here)
                if known != EMPTY and (changed or n not in self._stale):
                    self._stale[n] = plane.config_hash
            self._complete = plane.config_hash
            return changed

    def confirm(self, config_hash: str) -> int:
        """The root with ``config_hash`` is loaded by every pod: empty the parts it stopped listing.
        Returns how many parts were emptied."""
        with self._lock:
            done = 0
            for n, h in sorted(self._stale.items()):
                if h != config_hash:
                    continue
                try:
                    self._put(part_name(self.name, n), {}, "part", create=False)
                except WriteError:
                    # A part beyond what the chart created: nothing to empty.
                    log.debug("part ConfigMap absent", extra={"object_name": part_name(self.name, n)})
                    self._known[part_name(self.name, n)] = EMPTY
                del self._stale[n]
                done += 1
            return done

    def stale_parts(self) -> dict[int, str]:
        with self._lock:
            return dict(self._stale)
