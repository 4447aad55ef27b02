"""The generated TLS Secret (type Opaque): ``data`` = the render's ``tls_files`` in base64.

Written (a JSON patch replacing ``/data``) only when the bytes change; the chart pre-creates
the Secret, so a missing one is a clear error - except the Secret of a Gateway's own data
plane, which the writer creates when it is missing (``create``: the metadata of a new one) and
never reads: its metadata carries a hash of its data (``DATA_HASH_LABEL``), which a new term reads
(metadata only), and its write tests the controller's labels first. Like dropped config parts, a file the new config
no longer names is kept until that config is confirmed by every pod (``confirm``): pods still
running the previous config may reference it until they reload. The private keys inside the PFX files live only
in memory and in this Secret: nothing here logs file contents. Before its first write in a term
(after a start or a failover) the writer reads the Secret once by name: what it already holds
is not written again, and its files count as the ones written before.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Callable
from typing import Any

from titanium_gateway.kube.api import SECRETS, ApiError, KubeApi
from titanium_gateway.metrics import Registry
from titanium_gateway.render.result import RenderResult
from titanium_gateway.writers.base import LeaderGuard, Refused, WriteError, config_writes, unreadable
from titanium_gateway.writers.plane_objects import (
    DATA_HASH_LABEL,
    data_hash,
    data_hash_op,
    held_hash,
    ours_test,
)

log = logging.getLogger(__name__)


def encode_files(files: dict[str, bytes] | Any) -> dict[str, str]:
    return {name: base64.b64encode(data).decode("ascii") for name, data in sorted(files.items())}


class SecretWriter:
    def __init__(self, api: KubeApi, namespace: str, name: str, *, guard: LeaderGuard,
                 registry: Registry | None = None, create: Callable[[str], dict[str, Any]] | None = None) -> None:
        self.api = api
        #: the metadata of the Secret to create when it is missing (None: never created)
        self.create = create
        self.namespace = namespace
        self.name = name
        self.guard = guard
        self._lock = threading.Lock()
        self._known: dict[str, str] | None = None
        #: a Gateway's data plane's Secret: the hash of what it holds, learned from its metadata
        self._held = ""
        #: files kept after the config stopped naming them: name -> (base64, config_hash)
        self._retired: dict[str, tuple[str, str]] = {}
        self._writes = config_writes(registry)

    def reset(self) -> None:
        with self._lock:
            self._known = None
            self._held = ""
            self._retired.clear()

    def confirm(self, config_hash: str) -> bool:
        """The config ``config_hash`` runs everywhere: drop the files it no longer names."""
        with self._lock:
            gone = [f for f, (_, h) in self._retired.items() if h == config_hash]
            if not gone or self._known is None:
                return False
            for f in gone:
                del self._retired[f]
            return self._patch({k: v for k, v in self._known.items() if k not in gone})

    def _missing(self) -> WriteError:
        return WriteError(f"Secret {self.namespace}/{self.name} does not exist: the chart pre-creates it and "
                          "the controller never creates it (check --tls-secret and the release)")

    def _learn(self) -> None:
        """What the Secret holds now, when this term has not written it yet (one GET). Never for
        the Secret of a Gateway's own data plane: it is written without being read (the write
        tests this controller's labels first, so a Secret of that name it did not make is
        neither read nor changed)."""
        if self.create is not None:
            try:  # its metadata only: the hash of what it holds, when it is ours
                meta = self.api.get_metadata(SECRETS, self.namespace, self.name)
            except ApiError:
                return  # (missing: created by the write; unreadable: written)
            self._held = held_hash(meta, self.create(self.name).get("labels") or {})
            return
        try:
            cur = self.api.get(SECRETS, self.namespace, self.name)
        except ApiError as e:
            if e.is_not_found:
                if self.create is not None:
                    return  # (created by the write)
                raise self._missing() from e
            unreadable(e, f"Secret {self.namespace}/{self.name}")
            return
        if self.create is not None and (cur.get("metadata") or {}).get("ownerReferences") != \
                self.create(self.name).get("ownerReferences"):
            return  # (another owner: a Gateway of that name deleted and made again; written with the new one)
        held = cur.get("data") or {}
        if isinstance(held, dict) and all(isinstance(v, str) for v in held.values()):
            self._known = dict(held)

    def write(self, result: RenderResult) -> bool:
        """Returns True when the Secret was written."""
        if result.delivery_error:
            return False
        data = encode_files(result.tls_files)
        with self._lock:
            if self._known is None:
                self._learn()
            for f in list(self._retired):
                if f in data:
                    del self._retired[f]  # named again
            if self._known is not None:
                for f, v in self._known.items():
                    if f not in data:
                        # keep it until this config is confirmed (re-pinned to the newest config)
                        self._retired[f] = (self._retired.get(f, (v, ""))[0], result.config_hash)
            for f, (v, _) in self._retired.items():
                data[f] = v
            if self._known is None and self._held and self.create is not None:
                held, self._held = self._held, ""
                if held == data_hash(data, self.create(self.name).get("ownerReferences") or []):
                    self._known = data  # (already written: its metadata says so)
                    return False
            if data == self._known:
                return False
            return self._patch(data)

    def _patch(self, data: dict[str, str]) -> bool:
        self.guard.check(f"write Secret {self.namespace}/{self.name}")
        body: list[dict[str, Any]] = [{"op": "add", "path": "/data", "value": data}]
        if self.create is not None:  # (ours only, and the owner too: see _learn)
            owners = self.create(self.name).get("ownerReferences") or []
            body[:0] = ours_test(self.create(self.name).get("labels") or {})
            body += [{"op": "add", "path": "/metadata/ownerReferences", "value": owners},
                     data_hash_op(data_hash(data, owners))]
        try:
            self.api.patch(SECRETS, self.namespace, self.name, body, patch_type="json")
        except ApiError as e:
            self._known = None
            if self.create is not None and e.status in (409, 422):
                raise Refused(f"Secret {self.namespace}/{self.name} exists and was not made by this controller: "
                              "it is left alone (delete or rename it, or rename the Gateway)") from None
            if e.is_not_found and self.create is not None:
                meta = self.create(self.name)
                meta["labels"] = {**meta.get("labels", {}),
                                  DATA_HASH_LABEL: data_hash(data, meta.get("ownerReferences") or [])}
                self.api.create(SECRETS, self.namespace, {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                                          "metadata": meta, "data": data})
            elif e.is_not_found:
                raise self._missing() from e
            else:
                raise
        self._known = data
        self._writes.labels(object="tls-secret").inc()
        log.info("wrote TLS Secret", extra={"kind": "Secret", "namespace": self.namespace,
                                             "object_name": self.name, "files": sorted(data)})
        return True
