"""Pod volumes as the kubelet writes them.

``AtomicWriter`` publishes a set of files into a directory the way the kubelet's atomic writer
does for ConfigMap, Secret, downward API and projected volumes: the payload goes into a fresh
hidden directory ``..<timestamp>``, the symlink ``..data`` is swapped to it in one ``rename``,
and every top-level name is a symlink through ``..data`` (``twp.yaml -> ..data/twp.yaml``). A
reader that opens ``..data/...`` or follows the visible links sees either the whole old payload
or the whole new one, never a mix. An unchanged payload writes nothing.

``payload_for_volume`` computes the payload of one pod volume from the objects the runner's
caches hold (``Sources``); a missing non-optional source raises ``VolumeNotReady`` (the kubelet's
FailedMount: the pod waits and the runner retries).
"""

from __future__ import annotations

import base64
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
DATA_DIR = "..data"
_DATA_TMP = "..data_tmp"


@dataclass(frozen=True)
class FileEntry:
    data: bytes
    mode: int


Payload = dict[str, FileEntry]  # relative path -> content


class VolumeNotReady(Exception):
    """A volume cannot be set up yet (a missing ConfigMap/Secret/key, no token): retry later."""


def _valid_relative(path: str) -> bool:
    if not path or path.startswith("/") or path.startswith(".."):
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


class AtomicWriter:
    """Writes payloads into ``target`` with the kubelet's ``..data`` swap (see module doc)."""

    def __init__(self, target: str, clock: Callable[[], float] = time.time) -> None:
        self.target = target
        self._clock = clock

    def current(self) -> Payload | None:
        """The payload the directory shows now (None before the first write)."""
        data = os.path.join(self.target, DATA_DIR)
        if not os.path.islink(data):
            return None
        out: Payload = {}
        root = os.path.realpath(data)
        for dirpath, _dirs, files in os.walk(root):
            for f in files:
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, root)
                with open(full, "rb") as fh:
                    out[rel] = FileEntry(fh.read(), os.stat(full).st_mode & 0o7777)
        return out

    def write(self, payload: Mapping[str, FileEntry]) -> bool:
        """Publish ``payload``; False (nothing written) when it is what the directory shows."""
        for rel in payload:
            if not _valid_relative(rel):
                raise ValueError(f"invalid path {rel!r} in a volume payload")
        os.makedirs(self.target, exist_ok=True)
        old = self.current()
        if old is not None and old == dict(payload):
            return False
        data_link = os.path.join(self.target, DATA_DIR)
        old_dir = os.readlink(data_link) if os.path.islink(data_link) else None
        stamp = time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime(self._clock()))
        new_name = f"..{stamp}.{time.monotonic_ns() % 1_000_000_000:09d}"
        new_dir = os.path.join(self.target, new_name)
        os.mkdir(new_dir, 0o755)
        for rel, entry in payload.items():
            full = os.path.join(new_dir, rel)
            os.makedirs(os.path.dirname(full), mode=0o755, exist_ok=True)
            with open(full, "wb") as fh:
                fh.write(entry.data)
            os.chmod(full, entry.mode)
        tmp_link = os.path.join(self.target, _DATA_TMP)
        if os.path.lexists(tmp_link):
            os.unlink(tmp_link)
        os.symlink(new_name, tmp_link)
        os.rename(tmp_link, data_link)  # the atomic step
        # Visible names: one symlink per top-level entry, through ..data.
        tops = {rel.split("/", 1)[0] for rel in payload}
        for top in tops:
            link = os.path.join(self.target, top)
            if not os.path.islink(link):
                if os.path.lexists(link):
                    raise ValueError(f"{link} exists and is not a volume link")
                os.symlink(os.path.join(DATA_DIR, top), link)
        for name in os.listdir(self.target):
            if name.startswith(".."):
                continue
            if name not in tops and os.path.islink(os.path.join(self.target, name)):
                os.unlink(os.path.join(self.target, name))
        if old_dir and old_dir != new_name:
            shutil.rmtree(os.path.join(self.target, old_dir), ignore_errors=True)
        return True


# -- payloads ------------------------------------------------------------------------------------

class Sources:
    """What a payload is computed from: object lookups by (namespace, name) and a token source."""

    def __init__(self, config_map: Callable[[str, str], Obj | None], secret: Callable[[str, str], Obj | None],
                 token: Callable[[Obj, Obj], str] | None = None) -> None:
        self.config_map = config_map
        self.secret = secret
        self.token = token  # (pod, serviceAccountToken source) -> token


def _config_map_data(cm: Obj) -> dict[str, bytes]:
    out = {k: str(v).encode() for k, v in (cm.get("data") or {}).items()}
    for k, v in (cm.get("binaryData") or {}).items():
        out[k] = base64.b64decode(v)
    return out


def _secret_data(secret: Obj) -> dict[str, bytes]:
    out = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    for k, v in (secret.get("stringData") or {}).items():
        out[k] = str(v).encode()
    return out


def _keyed(kind: str, name: str, data: Mapping[str, bytes], items: list[Obj] | None, optional: bool,
           mode: int) -> Payload:
    out: Payload = {}
    if items:
        for item in items:
            key, path = item.get("key", ""), item.get("path", "")
            if key not in data:
                if optional:
                    continue
                raise VolumeNotReady(f"{kind} {name} has no key {key!r}")
            out[path] = FileEntry(data[key], int(item.get("mode", mode)))
    else:
        for key, value in data.items():
            out[key] = FileEntry(value, mode)
    return out


def _field_value(pod: Obj, path: str) -> str:
    meta = pod.get("metadata") or {}
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName", ""),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", ""),
        "status.podIP": (pod.get("status") or {}).get("podIP", ""),
        "status.hostIP": (pod.get("status") or {}).get("hostIP", ""),
    }
    if path in simple:
        return str(simple[path])
    for prefix, mapping in (("metadata.labels", meta.get("labels") or {}),
                            ("metadata.annotations", meta.get("annotations") or {})):
        if path == prefix:
            return "\n".join(f'{k}="{v}"' for k, v in sorted(mapping.items()))
        if path.startswith(prefix + "['") and path.endswith("']"):
            return str(mapping.get(path[len(prefix) + 2:-2], ""))
    raise VolumeNotReady(f"unsupported fieldRef {path!r}")


def field_value(pod: Obj, path: str) -> str:
    """The value of a downward API ``fieldRef.fieldPath`` for ``pod``."""
    return _field_value(pod, path)


def _downward(pod: Obj, items: list[Obj], mode: int) -> Payload:
    out: Payload = {}
    for item in items or []:
        ref = item.get("fieldRef")
        if not ref:
            raise VolumeNotReady(f"downward API item {item.get('path')!r}: only fieldRef is supported")
        out[item["path"]] = FileEntry(_field_value(pod, ref.get("fieldPath", "")).encode(),
                                      int(item.get("mode", mode)))
    return out


def payload_for_volume(pod: Obj, volume: Obj, sources: Sources) -> Payload | None:
    """The files of ``volume`` of ``pod``; None for a volume that is a plain directory
    (emptyDir); raises ``VolumeNotReady`` when a source is missing."""
    ns = (pod.get("metadata") or {}).get("namespace", "")
    if "emptyDir" in volume:
        return None
    if "configMap" in volume:
        src = volume["configMap"]
        return _config_map_payload(ns, src, sources, int(src.get("defaultMode", 0o644)))
    if "secret" in volume:
        src = volume["secret"]
        return _secret_payload(ns, src, sources, int(src.get("defaultMode", 0o644)))
    if "downwardAPI" in volume:
        src = volume["downwardAPI"]
        return _downward(pod, src.get("items") or [], int(src.get("defaultMode", 0o644)))
    if "projected" in volume:
        src = volume["projected"]
        mode = int(src.get("defaultMode", 0o644))
        out: Payload = {}
        for source in src.get("sources") or []:
            if "configMap" in source:
                out.update(_config_map_payload(ns, source["configMap"], sources, mode))
            elif "secret" in source:
                out.update(_secret_payload(ns, source["secret"], sources, mode))
            elif "downwardAPI" in source:
                out.update(_downward(pod, source["downwardAPI"].get("items") or [], mode))
            elif "serviceAccountToken" in source:
                sat = source["serviceAccountToken"]
                if sources.token is None:
                    raise VolumeNotReady("no service account token source")
                out[sat.get("path", "token")] = FileEntry(sources.token(pod, sat).encode(), mode)
            else:
                raise VolumeNotReady(f"unsupported projected source {sorted(source)}")
        return out
    raise VolumeNotReady(f"unsupported volume type in {sorted(k for k in volume if k != 'name')}")


def _config_map_payload(ns: str, src: Obj, sources: Sources, mode: int) -> Payload:
    name = src.get("name", "")
    optional = bool(src.get("optional", False))
    cm = sources.config_map(ns, name)
    if cm is None:
        if optional:
            return {}
        raise VolumeNotReady(f'configmap "{name}" not found')
    return _keyed("configmap", name, _config_map_data(cm), src.get("items"), optional, mode)


def _secret_payload(ns: str, src: Obj, sources: Sources, mode: int) -> Payload:
    name = src.get("secretName") or src.get("name", "")
    optional = bool(src.get("optional", False))
    secret = sources.secret(ns, name)
    if secret is None:
        if optional:
            return {}
        raise VolumeNotReady(f'secret "{name}" not found')
    return _keyed("secret", name, _secret_data(secret), src.get("items"), optional, mode)
