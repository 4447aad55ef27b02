"""Loading the offline commands' input: manifest files -> the objects the controller watches.

:func:`load_manifests` reads YAML/JSON files and directories (:mod:`.manifests`) into objects
with their origin, keeps the kinds and apiVersions the controller watches (the others are
reported, not fatal), warns about fields unknown to an object's schema (:mod:`.fieldcheck`),
replaces an object by a later document of the same kind and key, and applies what the API
server would have filled in (:func:`apply_defaults`). Bad input raises :class:`InputError`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.offline import fieldcheck
from titanium_gateway.offline.manifests import Manifest, Origin, ReadNotes, read_manifests
from titanium_gateway.render.snapshot import CLUSTER_SCOPED, object_key

__all__ = ["LoadReport", "SERVED_VERSIONS", "apply_defaults", "load_manifests", "load_objects"]

#: creationTimestamp stand-in of the first object without one; the n-th gets n seconds more.
STANDIN_EPOCH = _dt.datetime(2000, 1, 1, tzinfo=_dt.timezone.utc)
#: The label the API server puts on every Namespace.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

#: kind -> {served apiVersion: the apiVersion the controller reads it as} (``Kind.versions``: the
#: v1beta1 and v1 schemas of these kinds are identical; the API server converts, so the render sees v1).
SERVED_VERSIONS: Mapping[str, Mapping[str, str]] = {row.kind: row.served_versions for row in kinds.KINDS}


@dataclass
class LoadReport:
    """What the loader noticed besides the objects (printed on stderr by the CLI)."""

    #: "Kind namespace/name (file: document n): why" of each object of a kind (or apiVersion)
    #: the controller does not watch.
    ignored: list[str] = field(default_factory=list)
    #: Other notes: duplicates replaced by a later document.
    notes: list[str] = field(default_factory=list)
    #: Fields the object's schema does not have (never fatal).
    warnings: list[str] = field(default_factory=list)
    #: Files without objects, and files of a directory that are not manifests.
    empty: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: (kind, key) -> where the object was read (the last document of that kind and key).
    origins: dict[tuple[str, str], Origin] = field(default_factory=dict)

    def where(self, kind: str, key: str) -> str:
        origin = self.origins.get((kind, key))
        return f" ({origin})" if origin is not None else ""


def _describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    if obj.get("kind") in CLUSTER_SCOPED:
        return f"{obj.get('kind')} {meta.get('name')}"
    return f"{obj.get('kind')} {meta.get('namespace') or 'default'}/{meta.get('name')}"


def standin_time(index: int) -> str:
    """The creationTimestamp stand-in of the ``index``-th object (from :data:`STANDIN_EPOCH`)."""
    return (STANDIN_EPOCH + _dt.timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _standin_uid(index: int) -> str:
    return f"00000000-0000-4000-8000-{index:012d}"


def apply_defaults(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``objects`` with what the API server would have filled in.

    A missing namespace becomes ``default`` for namespaced kinds (and is dropped for
    cluster-scoped ones), a missing generation 1, a missing creationTimestamp/uid a
    deterministic stand-in from the object's position (so precedence ties follow file order),
    managedFields are dropped and a Namespace gets its ``kubernetes.io/metadata.name`` label.
    Fields already present are kept, so applying it twice changes nothing. Only the top level,
    ``metadata`` and a Namespace's labels are copied (the inputs are never modified); the rest
    is shared with the input.
    """
    out: list[dict[str, Any]] = []
    for index, original in enumerate(objects):
        obj = dict(original)
        meta = obj.get("metadata")
        meta = dict(meta) if isinstance(meta, Mapping) else {}
        obj["metadata"] = meta
        meta.pop("managedFields", None)
        kind = obj.get("kind")
        if kind in CLUSTER_SCOPED:
            meta.pop("namespace", None)
        elif not isinstance(meta.get("namespace"), str) or not meta.get("namespace"):
            meta["namespace"] = "default"
        if meta.get("generation") is None:
            meta["generation"] = 1
        if not meta.get("creationTimestamp"):
            meta["creationTimestamp"] = standin_time(index)
        if not meta.get("uid"):
            meta["uid"] = _standin_uid(index)
        if kind == kinds.NAMESPACE.kind and isinstance(meta.get("name"), str):
            labels = meta.get("labels")
            labels = dict(labels) if isinstance(labels, Mapping) else {}
            labels.setdefault(NAMESPACE_NAME_LABEL, meta["name"])
            meta["labels"] = labels
        out.append(obj)
    return out


def load_manifests(
    paths: Sequence[str | Path], report: LoadReport | None = None, *, check_fields: bool = True
) -> list[Manifest]:
    """Every watched object of the manifest files/directories in ``paths``, defaults applied,
    each with its origin.

    Order: the files in argument order (a directory's files sorted by name), documents in file
    order, ``List`` items in list order. A later object with the same kind and key replaces an
    earlier one at the earlier one's position (as a second ``kubectl apply`` would). Objects of
    other kinds are left out (``report.ignored``); fields unknown to an object's schema are
    ``report.warnings``. Raises :class:`InputError`.
    """
    report = report if report is not None else LoadReport()
    notes = ReadNotes()
    manifests = read_manifests(paths, notes)
    report.empty.extend(notes.empty)
    report.skipped.extend(notes.skipped)
    kept: list[Manifest] = []
    position: dict[tuple[str, str], int] = {}
    for m in manifests:
        obj = m.obj
        kind = obj["kind"]
        served = SERVED_VERSIONS.get(kind)
        if served is None:
            report.ignored.append(f"{_describe(obj)} ({m.origin}): kind not watched")
            continue
        api_version = obj["apiVersion"]
        if api_version not in served:
            report.ignored.append(
                f"{_describe(obj)} ({m.origin}): apiVersion {api_version} is not served"
                f" for {kind} (expected {' or '.join(sorted(served))})"
            )
            continue
        if check_fields:
            for path in fieldcheck.unknown_fields(obj, api_version, kind):
                report.warnings.append(f"{m.origin}: {_describe(obj)}: {fieldcheck.describe_unknown(kind, path)}")
        if served[api_version] != api_version:
            obj = dict(obj)
            obj["apiVersion"] = served[api_version]
        m.obj = obj
        ident = (kind, object_key(obj))
        if ident in position:
            report.notes.append(f"{_describe(obj)} ({m.origin}) replaces an earlier document")
            kept[position[ident]] = m
        else:
            position[ident] = len(kept)
            kept.append(m)
        report.origins[ident] = m.origin
    for m, obj in zip(kept, apply_defaults(m.obj for m in kept), strict=True):
        m.obj = obj
    return kept


def load_objects(
    paths: Sequence[str | Path], report: LoadReport | None = None, *, check_fields: bool = True
) -> list[dict[str, Any]]:
    """:func:`load_manifests` without the origins."""
    return [m.obj for m in load_manifests(paths, report, check_fields=check_fields)]

