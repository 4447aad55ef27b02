"""What the cluster serves, read from its CustomResourceDefinitions (pure).

The controller watches every CRD (``apiextensions.k8s.io/v1``, read-only; a field selector on
the group is not possible) through :func:`crd_transform`, which keeps a small summary of each:
its group, kind, plural, scope, each version's name, ``served`` and ``storage``, whether the CRD is
``Established``, the Gateway API bundle annotations, and, for a version whose status schema has
``supportedFeatures``, the shape of that list (``objects`` or ``strings``). The schemas themselves
(hundreds of KiB for HTTPRoute) are dropped. :class:`Served` answers from those summaries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

BUNDLE_VERSION = "gateway.networking.k8s.io/bundle-version"
CHANNEL = "gateway.networking.k8s.io/channel"
_ANNOTATIONS_KEPT = (BUNDLE_VERSION, CHANNEL)


def _mapping(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _features_shape(version: Mapping[str, Any]) -> str:
    """``objects``/``strings`` when the version's status schema has ``supportedFeatures``, else ""."""
    schema = _mapping(_mapping(version.get("schema")).get("openAPIV3Schema"))
    status = _mapping(_mapping(schema.get("properties")).get("status"))
    field = _mapping(_mapping(status.get("properties")).get("supportedFeatures"))
    if not field:
        return ""
    return "objects" if _mapping(field.get("items")).get("type") == "object" else "strings"


def crd_transform(obj: Obj) -> Obj:
    """The summary of a CRD the cache keeps (see the module docstring); never modifies ``obj``."""
    md = _mapping(obj.get("metadata"))
    spec = _mapping(obj.get("spec"))
    names = _mapping(spec.get("names"))
    annotations = {k: v for k, v in _mapping(md.get("annotations")).items() if k in _ANNOTATIONS_KEPT}
    versions = []
    for v in spec.get("versions") if isinstance(spec.get("versions"), list) else []:
        if isinstance(v, Mapping) and isinstance(v.get("name"), str):
            entry: Obj = {"name": v["name"], "served": v.get("served") is True, "storage": v.get("storage") is True}
            shape = _features_shape(v)
            if shape:
                entry["supportedFeatures"] = shape
            versions.append(entry)
    conditions = _mapping(obj.get("status")).get("conditions")
    established = any(isinstance(c, Mapping) and c.get("type") == "Established" and c.get("status") == "True"
                      for c in (conditions if isinstance(conditions, list) else []))
    meta: Obj = {k: md[k] for k in ("name", "uid", "resourceVersion") if k in md}
    if annotations:
        meta["annotations"] = annotations
    out: Obj = {"metadata": meta,
                "spec": {"group": spec.get("group"), "scope": spec.get("scope"),
                         "names": {"kind": names.get("kind"), "plural": names.get("plural")}, "versions": versions},
                "status": {"established": established}}
    for key in ("apiVersion", "kind"):
        if key in obj:
            out[key] = obj[key]
    return out


@dataclass(frozen=True)
class CrdInfo:
    """One CRD, as :func:`crd_transform` summarized it."""

    name: str
    group: str
    kind: str
    plural: str
    established: bool
    #: the served versions, in the CRD's order
    served: tuple[str, ...]
    bundle_version: str
    channel: str
    #: version -> the shape of ``status.supportedFeatures`` ("objects"/"strings"), where it has one
    features: Mapping[str, str]

    @classmethod
    def of(cls, summary: Mapping[str, Any]) -> CrdInfo:
        md, spec = _mapping(summary.get("metadata")), _mapping(summary.get("spec"))
        names, ann = _mapping(spec.get("names")), _mapping(md.get("annotations"))
        versions = [v for v in spec.get("versions") or [] if isinstance(v, Mapping)]
        return cls(name=str(md.get("name") or ""), group=str(spec.get("group") or ""), kind=str(names.get("kind") or ""),
                   plural=str(names.get("plural") or ""),
                   established=bool(_mapping(summary.get("status")).get("established")),
                   served=tuple(str(v["name"]) for v in versions if v.get("served")),
                   bundle_version=str(ann.get(BUNDLE_VERSION) or ""), channel=str(ann.get(CHANNEL) or ""),
                   features={str(v["name"]): str(v["supportedFeatures"]) for v in versions if v.get("supportedFeatures")})


class Served:
    """The CRDs of one API group, from the CRD cache's summaries."""

    def __init__(self, summaries: Iterable[Mapping[str, Any]], group: str) -> None:
        self.group = group
        self.crds: dict[str, CrdInfo] = {}
        for s in summaries:
            info = CrdInfo.of(s)
            if info.group == group and info.kind:
                self.crds[info.kind] = info

    def version(self, kind: str, preferred: Iterable[str]) -> str:
        """The first of ``preferred`` that the established CRD of ``kind`` serves; "" when none
        (not installed, not established yet, or only other versions served)."""
        crd = self.crds.get(kind)
        if crd is None or not crd.established:
            return ""
        return next((v for v in preferred if v in crd.served), "")

    def bundles(self) -> dict[str, list[str]]:
        """``"v1.6.3 (standard)"`` -> the kinds of that bundle (annotations absent: "unknown")."""
        out: dict[str, list[str]] = {}
        for kind, crd in sorted(self.crds.items()):
            label = f"{crd.bundle_version or 'unknown'} ({crd.channel or 'unknown channel'})"
            out.setdefault(label, []).append(kind)
        return out


__all__ = ["BUNDLE_VERSION", "CHANNEL", "CrdInfo", "Served", "crd_transform"]
