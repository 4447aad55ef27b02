"""``titanium-gateway render``: the offline render, fed from manifest files instead of informers.

The interface is specified in ``docs/render-cli.md``. The pieces, reused by the golden tests,
the property tests, the benchmarks and the other offline commands:

* :func:`load_manifests` / :func:`load_objects` read YAML/JSON files and directories
  (``titanium_gateway.manifests``) into normalised objects with their origin (defaults applied,
  unwatched kinds dropped, unknown fields warned), raising :class:`InputError` on bad input;
* :func:`prepare` / :func:`build_snapshot` turn them into a render :class:`Snapshot` the way the
  controller's informers would see them (assumed Namespaces added, Secrets outside
  ``--secret-namespaces`` left out);
* :func:`add_render_arguments` / :func:`options_from_args`: the controller options that change
  the render, with the chart's defaults;
* :func:`summary` and :func:`not_taking_part`: what the render did and what could not take part;
* :func:`main` is the command line (exit 0 rendered, 2 bad input or usage, 1 internal error).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import hashlib
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from titanium_gateway import blockyaml, fieldcheck
from titanium_gateway.manifests import (
    MANIFEST_SUFFIXES,
    CommandLineParser,
    InputError,
    Manifest,
    Origin,
    ReadNotes,
    read_manifests,
)
from titanium_gateway.render.options import (
    DEFAULT_CONTROLLER_NAME,
    DEFAULT_DATA_PLANE_PORTS,
    DEFAULT_INGRESS_CONTROLLER_NAME,
    DEFAULT_MAX_PARTS,
    DEFAULT_PORT_MAP,
    RenderOptions,
    parse_port_map,
    parse_ports,
)
from titanium_gateway.render.result import ObjectStatus, RenderResult
from titanium_gateway.render.snapshot import CLUSTER_SCOPED, KIND_FIELDS, Snapshot, object_key
from titanium_gateway.render.statusmerge import final_status, orphaned_route_statuses

#: The fixed "now" of an offline render (lastTransitionTime of changed conditions).
OFFLINE_NOW = "1970-01-01T00:00:00Z"
#: creationTimestamp stand-in of the first object without one; the n-th gets n seconds more.
STANDIN_EPOCH = _dt.datetime(2000, 1, 1, tzinfo=_dt.timezone.utc)
#: The label the API server puts on every Namespace.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: Where ``helm install titanium-gateway ./charts/titanium-gateway -n gateway-system`` puts the
#: data plane: the controller's ``--data-plane-namespace`` and ``--data-plane-service``.
CHART_NAMESPACE = "gateway-system"
CHART_DATA_PLANE_SERVICE = "titanium-gateway-data-plane"

_GATEWAY_GROUP = "gateway.networking.k8s.io"
#: kind -> {served apiVersion: the apiVersion the controller reads it as}. The v1beta1 and v1
#: schemas of these kinds are identical; the API server converts, so the render sees v1.
SERVED_VERSIONS: Mapping[str, Mapping[str, str]] = {
    "GatewayClass": {f"{_GATEWAY_GROUP}/v1": f"{_GATEWAY_GROUP}/v1", f"{_GATEWAY_GROUP}/v1beta1": f"{_GATEWAY_GROUP}/v1"},
    "Gateway": {f"{_GATEWAY_GROUP}/v1": f"{_GATEWAY_GROUP}/v1", f"{_GATEWAY_GROUP}/v1beta1": f"{_GATEWAY_GROUP}/v1"},
    "HTTPRoute": {f"{_GATEWAY_GROUP}/v1": f"{_GATEWAY_GROUP}/v1", f"{_GATEWAY_GROUP}/v1beta1": f"{_GATEWAY_GROUP}/v1"},
    "ReferenceGrant": {f"{_GATEWAY_GROUP}/v1beta1": f"{_GATEWAY_GROUP}/v1beta1"},
    "Namespace": {"v1": "v1"},
    "Service": {"v1": "v1"},
    "EndpointSlice": {"discovery.k8s.io/v1": "discovery.k8s.io/v1"},
    "Secret": {"v1": "v1"},
    "IngressClass": {"networking.k8s.io/v1": "networking.k8s.io/v1"},
    "Ingress": {"networking.k8s.io/v1": "networking.k8s.io/v1"},
}
assert set(SERVED_VERSIONS) == set(KIND_FIELDS)

#: Order of kinds in status.yaml and in the summary.
_KIND_RANK = {"GatewayClass": 0, "Gateway": 1, "HTTPRoute": 2, "IngressClass": 3, "Ingress": 4}

__all__ = [
    "InputError",
    "LoadReport",
    "MANIFEST_SUFFIXES",
    "Prepared",
    "add_render_arguments",
    "apply_defaults",
    "assumed_namespaces",
    "build_snapshot",
    "load_manifests",
    "load_objects",
    "main",
    "not_taking_part",
    "options_from_args",
    "output_files",
    "prepare",
    "status_documents",
    "summary",
    "write_outputs",
]


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


# --- objects ------------------------------------------------------------------------------------


def _describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    if obj.get("kind") in CLUSTER_SCOPED:
        return f"{obj.get('kind')} {meta.get('name')}"
    return f"{obj.get('kind')} {meta.get('namespace') or 'default'}/{meta.get('name')}"


def _standin_time(index: int) -> str:
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
            meta["creationTimestamp"] = _standin_time(index)
        if not meta.get("uid"):
            meta["uid"] = _standin_uid(index)
        if kind == "Namespace" and isinstance(meta.get("name"), str):
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


def _ns_of(refs: Any) -> Iterator[str]:
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, Mapping):
            ns = ref.get("namespace")
            if isinstance(ns, str) and ns:
                yield ns


def _filter_refs(filters: Any) -> Iterator[str]:
    for f in filters if isinstance(filters, list) else ():
        if isinstance(f, Mapping):
            mirror = f.get("requestMirror")
            if isinstance(mirror, Mapping):
                yield from _ns_of([mirror.get("backendRef")])


def _referenced_namespaces(kind: Any, spec: Any) -> Iterator[str]:
    """The namespaces an object's references name: a Gateway's certificateRefs, an HTTPRoute's
    parentRefs, backendRefs and mirror backendRefs, a ReferenceGrant's ``from``."""
    if not isinstance(spec, Mapping):
        return
    if kind == "HTTPRoute":
        yield from _ns_of(spec.get("parentRefs"))
        for rule in _seq(spec.get("rules")):
            if not isinstance(rule, Mapping):
                continue
            backends = rule.get("backendRefs")
            yield from _ns_of(backends)
            yield from _filter_refs(rule.get("filters"))
            for b in backends if isinstance(backends, list) else ():
                if isinstance(b, Mapping) and b.get("filters"):
                    yield from _filter_refs(b.get("filters"))
    elif kind == "Gateway":
        for listener in _seq(spec.get("listeners")):
            if isinstance(listener, Mapping) and isinstance(listener.get("tls"), Mapping):
                yield from _ns_of(listener["tls"].get("certificateRefs"))
    elif kind == "ReferenceGrant":
        yield from _ns_of(spec.get("from"))


def _namespace_names(objects: Iterable[Mapping[str, Any]]) -> tuple[set[str], set[str]]:
    """(Namespaces in the input, Namespaces named by an object: its own or a reference)."""
    present: set[str] = set()
    named: set[str] = set()
    for obj in objects:
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            continue
        kind = obj.get("kind")
        if kind == "Namespace":
            present.add(str(meta.get("name")))
        if kind in CLUSTER_SCOPED:
            continue
        ns = meta.get("namespace")
        named.add(ns if isinstance(ns, str) and ns else "default")
        if kind in ("Gateway", "HTTPRoute", "ReferenceGrant"):
            named.update(_referenced_namespaces(kind, obj.get("spec")))
    return present, named


def _namespace_object(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {NAMESPACE_NAME_LABEL: name},
            "generation": 1,
            "creationTimestamp": _standin_time(0),
            "uid": _namespace_uid(name),
        },
    }


def assumed_namespaces(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces named by an object (its own namespace or a reference) but absent from the input."""
    present, named = _namespace_names(objects)
    return [_namespace_object(name) for name in sorted(named - present)]


def _namespace_uid(name: str) -> str:
    # surrogatepass: a lone surrogate (a YAML "\udfff" escape) is bad input the render reports,
    # not a reason for the loader to crash
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-5{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"


@dataclass
class Prepared:
    """A snapshot as the controller's informers would hold it, and what was adjusted."""

    snapshot: Snapshot
    #: Names of the Namespaces assumed because they are not in the input.
    assumed: list[str]
    #: Secrets the controller would not read (outside ``--secret-namespaces``), as "ns/name".
    unread_secrets: list[str]


def prepare(
    objects: Iterable[Mapping[str, Any]],
    now: str = OFFLINE_NOW,
    secret_namespaces: Sequence[str] = (),
    *,
    defaulted: bool = False,
    **kwargs: Any,
) -> Prepared:
    """The render snapshot of ``objects`` (defaults applied where missing, unless
    ``defaulted``: they come from :func:`load_manifests`; absent Namespaces assumed). With
    ``secret_namespaces`` (the controller's ``--secret-namespaces``), Secrets of other
    namespaces are left out, as the controller's Secret watch never sees them."""
    objs = list(objects) if defaulted else apply_defaults(objects)
    unread: list[str] = []
    if secret_namespaces:
        allowed = set(secret_namespaces)
        kept = []
        for o in objs:
            if o.get("kind") == "Secret" and o["metadata"].get("namespace") not in allowed:
                unread.append(object_key(o))
            else:
                kept.append(o)
        objs = kept
    present, named = _namespace_names(objs)
    assumed = sorted(named - present)
    snapshot = Snapshot.from_objects([*objs, *(_namespace_object(n) for n in assumed)], now=now, **kwargs)
    return Prepared(snapshot, assumed, unread)


def build_snapshot(objects: Iterable[Mapping[str, Any]], now: str = OFFLINE_NOW, **kwargs: Any) -> Snapshot:
    """A render snapshot of ``objects`` (defaults applied where missing; absent Namespaces
    assumed; ``secret_namespaces=`` as in :func:`prepare`)."""
    return prepare(objects, now=now, **kwargs).snapshot


# --- output -------------------------------------------------------------------------------------


def to_yaml(value: Any) -> str:
    """Block-style YAML of plain data (multi-line strings as literal blocks), as PyYAML writes it."""
    return blockyaml.dump(value)


def _status_sort_key(s: ObjectStatus) -> tuple[int, str, str, str]:
    return (_KIND_RANK.get(s.kind, 9), s.kind, s.namespace, s.name)


def _sorted_statuses(result: RenderResult) -> list[Any]:
    return sorted(result.statuses, key=_status_sort_key)


def _current_object(snapshot: Snapshot, st: ObjectStatus) -> Mapping[str, Any] | None:
    field_name = KIND_FIELDS.get(st.kind)
    if field_name is None:
        return None
    key = st.name if st.kind in CLUSTER_SCOPED else f"{st.namespace or 'default'}/{st.name}"
    obj = getattr(snapshot, field_name).get(key)
    return obj if isinstance(obj, Mapping) else None


def _status_field(current: Mapping[str, Any] | None) -> Any:
    return current.get("status") if isinstance(current, Mapping) else None


def _unmerged(kind: str, wanted: Mapping[str, Any], controller_name: str) -> bool:
    """Whether ``wanted`` is already the final status of an object without an input status:
    no ``None`` value in a mapping position (the merge patch would drop it) and, for an
    HTTPRoute, every parent entry ours (the merge keeps only ours when there are no others)."""
    todo: list[Any] = [wanted]
    while todo:
        m = todo.pop()
        for k, v in m.items():
            if v is None or type(k) is not str:
                return False
            t = type(v)
            if t is dict or (t is not list and t is not str and isinstance(v, Mapping)):
                todo.append(v)
    if kind == "HTTPRoute":
        parents = wanted.get("parents")
        if not isinstance(parents, list):
            return False
        return all(isinstance(p, Mapping) and p.get("controllerName") == controller_name for p in parents)
    return True


def status_documents(
    result: RenderResult,
    snapshot: Snapshot | None = None,
    controller_name: str = DEFAULT_CONTROLLER_NAME,
    *,
    copy: bool = True,
) -> list[dict[str, Any]]:
    """The ``status.yaml`` documents. With the input ``snapshot``, each status is the one the
    object ends with after the controller's write (``render/statusmerge.py``, the same merge as
    the status writer): an HTTPRoute keeps the ``status.parents`` entries of other controllers
    from its input status, before ours; an HTTPRoute the render no longer reports on but whose
    input status holds a parent entry of ``controller_name`` gets a document with that entry
    dropped. Without it, the render's own statuses (ours only). ``copy=False``: a status that
    needs no merge is the render's own object, not a copy (for writing it out)."""
    statuses = list(result.statuses)
    if snapshot is not None:
        statuses += orphaned_route_statuses(statuses, snapshot.httproutes.values(), controller_name)
    docs: list[dict[str, Any]] = []
    for st in sorted(statuses, key=_status_sort_key):
        meta: dict[str, Any] = {"namespace": st.namespace, "name": st.name} if st.namespace else {"name": st.name}
        if snapshot is not None:
            current = _current_object(snapshot, st)
            if not copy and not _status_field(current) and _unmerged(st.kind, st.status, controller_name):
                status: Any = st.status
            else:  # (final_status makes a plain copy)
                status = final_status(st.kind, current, st.status, controller_name)
        else:
            status = blockyaml.plain(st.status) if copy else st.status
        docs.append({"apiVersion": st.api_version, "kind": st.kind, "metadata": meta, "status": status})
    return docs


def status_yaml(
    result: RenderResult, snapshot: Snapshot | None = None, controller_name: str = DEFAULT_CONTROLLER_NAME
) -> str:
    """``status.yaml``: one document per owned GatewayClass, Gateway, HTTPRoute and Ingress
    (merged with the input objects' statuses when ``snapshot`` is given, see
    :func:`status_documents`)."""
    return blockyaml.dump_documents(status_documents(result, snapshot, controller_name, copy=False))


def event_list(result: RenderResult) -> list[dict[str, Any]]:
    return [
        {
            "involvedObject": {"kind": e.kind, "namespace": e.namespace, "name": e.name},
            "type": e.type,
            "reason": e.reason,
            "message": e.message,
        }
        for e in result.events
    ]


def events_yaml(result: RenderResult) -> str:
    return to_yaml(event_list(result))


def certificate_list(result: RenderResult) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in result.certificates:
        item: dict[str, Any] = {"file": c.file, "hosts": list(c.hosts), "source": c.source}
        if c.default:
            item["default"] = True
        out.append(item)
    return out


def certificates_yaml(result: RenderResult) -> str:
    """``certificates.yaml``: the PFX entries of the TLS Secret, never key material."""
    return to_yaml(certificate_list(result))


def output_files(
    result: RenderResult, snapshot: Snapshot | None = None, controller_name: str = DEFAULT_CONTROLLER_NAME
) -> dict[str, bytes]:
    """Every file ``--out`` writes, name -> bytes (``snapshot``: the rendered input, to merge
    the statuses as the controller's writer does; see :func:`status_documents`)."""
    files: dict[str, bytes] = {"twp.yaml": result.config}
    for name, data in result.parts:
        files[name] = data
    files["status.yaml"] = status_yaml(result, snapshot, controller_name).encode()
    files["events.yaml"] = events_yaml(result).encode()
    files["certificates.yaml"] = certificates_yaml(result).encode()
    return files


def write_outputs(
    result: RenderResult,
    out_dir: Path,
    snapshot: Snapshot | None = None,
    controller_name: str = DEFAULT_CONTROLLER_NAME,
) -> list[str]:
    """Writes :func:`output_files` into ``out_dir`` (stale part files removed); returns the names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = output_files(result, snapshot, controller_name)
    for stale in out_dir.glob("twp.part-*.yaml"):
        if stale.name not in files:
            stale.unlink()
    for name, data in files.items():
        tmp = out_dir / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(out_dir / name)
    return list(files)


# --- the summary --------------------------------------------------------------------------------

_LINE_START_KEY = re.compile(rb"\n[A-Za-z_]")
_COUNTED = (b"listeners", b"routes", b"clusters")


def config_counts(result: RenderResult) -> dict[str, int]:
    """The number of listeners, routes and clusters in twp.yaml and its parts: those of the
    rendered document (``result.document``), which emit writes whole unless the config cannot
    be delivered (an item larger than a part ends it); else counted from the bytes."""
    doc = result.document
    if doc is not None and not result.delivery_error:
        return {"listeners": len(doc.listeners), "routes": len(doc.routes), "clusters": len(doc.clusters)}
    return counts_from_bytes(result)


def counts_from_bytes(result: RenderResult) -> dict[str, int]:
    """:func:`config_counts` from the bytes (the top-level block lists of the emitted document:
    one ``- `` line per item at the list's indentation) instead of parsing 20 MB of YAML again."""
    counts = {"listeners": 0, "routes": 0, "clusters": 0}
    for data in [result.config, *(d for _, d in result.parts)]:
        starts = [0] + [m.start() + 1 for m in _LINE_START_KEY.finditer(data)] + [len(data)]
        for begin, end in zip(starts, starts[1:], strict=False):
            for key in _COUNTED:
                if data.startswith(key + b":", begin):
                    break
            else:
                continue
            line_end = data.find(b"\n", begin, end)
            if line_end < 0 or data[begin + len(key) + 1 : line_end].strip():
                continue  # "routes: []" (or a value on the key's line): no block items
            item = data.find(b"-", line_end, end)
            if item < 0:
                continue
            indent = data[line_end:item]  # "\n" and the items' indentation
            if indent.strip(b"\n "):
                continue
            counts[key.decode()] += data.count(indent + b"- ", line_end, end) + data.count(indent + b"-\n", line_end, end)
    return counts


def _conditions_text(conditions: Any) -> str:
    if not isinstance(conditions, (list, tuple)):
        return "no conditions"
    parts = []
    for c in conditions:
        if not isinstance(c, Mapping):
            continue
        text = f"{c.get('type')}={c.get('status')}"
        if c.get("reason") and c.get("reason") != c.get("type"):
            text += f" ({c.get('reason')})"
        parts.append(text)
    return ", ".join(parts) or "no conditions"


def _messages(conditions: Any) -> list[str]:
    if not isinstance(conditions, (list, tuple)):
        return []
    healthy_false = {"Conflicted"}  # a False Conflicted condition is the good state
    return [
        f"{c.get('type')}: {c.get('message')}"
        for c in conditions
        if isinstance(c, Mapping)
        and c.get("message")
        and ((c.get("status") != "True") != (c.get("type") in healthy_false))
    ]


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _seq(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


#: The IngressClass annotation that makes it the default class, and the legacy class annotation
#: (see the Ingress page, "Choosing the Ingresses this controller serves").
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
LEGACY_CLASS_NAME = "titanium"


def ingress_not_served(
    ingress: Mapping[str, Any], ingress_classes: Mapping[str, Any], options: RenderOptions
) -> str | None:
    """Why this controller does not serve ``ingress`` (``None`` when it does), following the
    Ingress page: ingressClassName naming one of our IngressClasses; else the legacy annotation
    (with --watch-legacy-annotation); else one of our classes being the default."""
    owned: dict[str, Mapping[str, Any]] = {}
    for key, cls in ingress_classes.items():
        if _str(_map(_map(cls).get("spec")).get("controller")) == options.ingress_controller_name:
            owned[_str(_map(_map(cls).get("metadata")).get("name")) or str(key)] = cls
    has_default = any(
        _str(_map(_map(c.get("metadata")).get("annotations")).get(DEFAULT_CLASS_ANNOTATION)) == "true"
        for c in owned.values()
    )
    class_name = _map(ingress.get("spec")).get("ingressClassName")
    if isinstance(class_name, str) and class_name:
        if class_name in owned:
            return None
        other = ingress_classes.get(class_name)
        if other is None:
            return f"its IngressClass {class_name} is not in the input"
        controller = _str(_map(_map(other).get("spec")).get("controller")) or "none"
        return f"its IngressClass {class_name} belongs to controller {controller}, not {options.ingress_controller_name}"
    legacy = _map(_map(ingress.get("metadata")).get("annotations")).get(LEGACY_CLASS_ANNOTATION)
    if legacy is not None:
        ours = isinstance(legacy, str) and (legacy in owned or legacy == LEGACY_CLASS_NAME)
        if not ours:
            return f"its {LEGACY_CLASS_ANNOTATION} annotation names another controller's class ({legacy!r})"
        if options.watch_legacy_annotation:
            return None
        if has_default:
            return None
        return (f"it names its class only with the {LEGACY_CLASS_ANNOTATION} annotation ({legacy!r}), "
                "which is read only with --watch-legacy-annotation, and no IngressClass of ours is the default")
    if has_default:
        return None
    return (f"it has no ingressClassName and no IngressClass of ours is the default "
            f"({DEFAULT_CLASS_ANNOTATION}: \"true\")")


def not_taking_part(
    snapshot: Snapshot, options: RenderOptions, report: LoadReport | None = None
) -> list[str]:
    """What in the input could not take part in the render, and why: HTTPRoutes whose parent
    Gateway is not in the input (or is another controller's), Gateways whose GatewayClass is not
    in the input (or is another controller's), Ingresses this controller does not serve."""
    report = report if report is not None else LoadReport()
    lines: list[str] = []
    classes = snapshot.gateway_classes
    ours_classes = {k for k, c in classes.items() if _str(_map(_map(c).get("spec")).get("controllerName")) == options.controller_name}

    def gateway_problem(key: str, gw: Mapping[str, Any]) -> str | None:
        class_name = _str(_map(gw.get("spec")).get("gatewayClassName"))
        if class_name in ours_classes:
            return None
        if class_name not in classes:
            return f"its GatewayClass {class_name or '(none)'} is not in the input"
        controller = _str(_map(_map(classes[class_name]).get("spec")).get("controllerName")) or "none"
        return f"its GatewayClass {class_name} belongs to controller {controller}"

    gateway_problems: dict[str, str | None] = {}
    for key, gw in sorted(snapshot.gateways.items()):
        problem = gateway_problem(key, _map(gw))
        gateway_problems[key] = problem
        if problem:
            lines.append(f"Gateway {key}{report.where('Gateway', key)}: {problem}")
    for key, route in sorted(snapshot.httproutes.items()):
        route = _map(route)
        namespace = _str(_map(route.get("metadata")).get("namespace")) or "default"
        problems = []
        for ref in _seq(_map(route.get("spec")).get("parentRefs")):
            ref = _map(ref)
            group = ref.get("group", _GATEWAY_GROUP)
            kind = ref.get("kind", "Gateway")
            name = _str(ref.get("name"))
            if group != _GATEWAY_GROUP or kind != "Gateway":
                problems.append(f"parent {kind} {name} is not a Gateway")
                continue
            gw_key = f"{_str(ref.get('namespace')) or namespace}/{name}"
            if gw_key not in snapshot.gateways:
                problems.append(f"parent Gateway {gw_key} is not in the input")
            elif gateway_problems.get(gw_key):
                problems.append(f"parent Gateway {gw_key} is not ours ({gateway_problems[gw_key]})")
        if not _seq(_map(route.get("spec")).get("parentRefs")):
            problems.append("it has no parentRefs")
        if problems:
            lines.append(f"HTTPRoute {key}{report.where('HTTPRoute', key)}: " + "; ".join(problems))
    for key, ing in sorted(snapshot.ingresses.items()):
        why = ingress_not_served(_map(ing), snapshot.ingress_classes, options)
        if why:
            lines.append(f"Ingress {key}{report.where('Ingress', key)}: not served: {why}")
    return lines


def reach_lines(result: RenderResult) -> list[str]:
    """The summary's sections of the rules no request reaches (``ShadowedRule``) and of the
    accepted objects the config does not serve (``NotServed``)."""
    lines: list[str] = []
    if result.unreachable:
        lines.append(f"Unreachable rules ({len(result.unreachable)}):")
        lines.extend(f"  {u.source.kind} {u.source.namespace}/{u.source.name} {u.message(limit=8)}"
                     for u in result.unreachable)
    unserved = [e for e in result.events if e.reason == "NotServed"]
    if unserved:
        lines.append(f"Accepted but not served ({len(unserved)}):")
        lines.extend(f"  {e.kind} {e.namespace}/{e.name}: {e.message.partition(': ')[2] or e.message}"
                     for e in unserved)
    document = result.document
    if document is not None and document.routes and not document.listeners:
        lines.append("WARNING: twp.yaml opens no listener: none of its routes is served")
    return lines


#: Up to this many owned objects the summary lists each; above, HTTPRoutes and Ingresses in
#: their good state are counted instead (the GatewayClasses, Gateways and every object with a
#: problem are still listed).
SUMMARY_EVERY_OBJECT_UP_TO = 200
_CONDENSED_KINDS = frozenset({"HTTPRoute", "Ingress"})


def _good(conditions: Any) -> bool:
    for c in _seq(conditions):
        if not isinstance(c, Mapping):
            continue
        healthy = "False" if c.get("type") == "Conflicted" else "True"
        if c.get("status") != healthy:
            return False
    return True


def _healthy(kind: str, status: Mapping[str, Any]) -> bool:
    if kind == "HTTPRoute":
        parents = _seq(status.get("parents"))
        return bool(parents) and all(_good(_map(p).get("conditions")) for p in parents)
    return True  # an Ingress's status is its addresses; its problems are Events


def summary(
    result: RenderResult,
    report: LoadReport | None = None,
    prepared: Prepared | None = None,
    options: RenderOptions | None = None,
) -> str:
    """A human summary: per owned object its conditions and why; the Events; counts; then what
    could not take part (with ``prepared`` and ``options``), the assumed Namespaces, the
    warnings (unknown fields) and the notes of the loader."""
    lines: list[str] = []
    statuses = _sorted_statuses(result)
    condensed = len(statuses) > SUMMARY_EVERY_OBJECT_UP_TO
    event_objects = {(e.kind, e.namespace, e.name) for e in result.events}
    quiet: dict[str, int] = {}
    for st in statuses:
        name = f"{st.namespace}/{st.name}" if st.namespace else st.name
        status = st.status
        if condensed and st.kind in _CONDENSED_KINDS and (st.kind, st.namespace, st.name) not in event_objects \
                and _healthy(st.kind, status):
            quiet[st.kind] = quiet.get(st.kind, 0) + 1
            continue
        if st.kind == "HTTPRoute":
            parents = _seq(status.get("parents"))
            lines.append(f"{st.kind} {name}: {len(parents)} parent(s)")
            for p in parents:
                ref = _map(p.get("parentRef"))
                target = f"{ref.get('namespace', st.namespace)}/{ref.get('name')}"
                if ref.get("sectionName"):
                    target += f"/{ref['sectionName']}"
                if ref.get("port"):
                    target += f":{ref['port']}"
                lines.append(f"  parent {target}: {_conditions_text(p.get('conditions'))}")
                lines.extend(f"    {m}" for m in _messages(p.get("conditions")))
        elif st.kind == "Ingress":
            ingress = _seq(_map(status.get("loadBalancer")).get("ingress"))
            addrs = ", ".join(str(i.get("ip") or i.get("hostname")) for i in ingress if isinstance(i, Mapping))
            lines.append(f"{st.kind} {name}: owned; addresses: {addrs or 'none'}")
        else:
            lines.append(f"{st.kind} {name}: {_conditions_text(status.get('conditions'))}")
            lines.extend(f"    {m}" for m in _messages(status.get("conditions")))
            for listener in _seq(status.get("listeners")):
                lines.append(
                    f"  listener {listener.get('name')}: attachedRoutes={listener.get('attachedRoutes')}, "
                    f"{_conditions_text(listener.get('conditions'))}"
                )
                lines.extend(f"    {m}" for m in _messages(listener.get("conditions")))
            addresses = status.get("addresses")
            if st.kind == "Gateway":
                vals = ", ".join(str(a.get("value")) for a in _seq(addresses) if isinstance(a, Mapping))
                lines.append(f"  addresses: {vals or 'none'}")
    for kind, n in quiet.items():
        what = "every parent Accepted, references resolved" if kind == "HTTPRoute" else "served, no Event"
        lines.append(f"{kind}: {n} not listed: {what} (status.yaml with --out has them all)")
    for e in result.events:
        lines.append(f"Event {e.type} {e.reason} on {e.kind} {e.namespace}/{e.name}: {e.message}")
    lines.extend(reach_lines(result))
    counts = config_counts(result)
    lines.append(
        f"twp.yaml: {counts['listeners']} listener(s), {counts['routes']} route(s), "
        f"{counts['clusters']} cluster(s), {len(result.certificates)} certificate(s), "
        f"{len(result.parts)} part(s); config_hash {result.config_hash}"
    )
    if result.delivery_error:
        lines.append(f"WARNING: the controller would not deliver this config: {result.delivery_error}")
    if not result.statuses:
        lines.insert(0, "no GatewayClass, Gateway, HTTPRoute or Ingress of this controller in the input")
    lines.extend(input_notices(report if report is not None else LoadReport(), prepared, options))
    return "\n".join(lines) + "\n"


def input_notices(report: LoadReport, prepared: Prepared | None, options: RenderOptions | None) -> list[str]:
    """What the user must know about the input besides the render: what could not take part,
    Secrets not read, namespaces assumed, warnings, ignored objects, notes, empty and skipped
    files (the summary's tail; ``explain`` prints it too)."""
    lines: list[str] = []
    if prepared is not None and options is not None:
        absent = not_taking_part(prepared.snapshot, options, report)
        if absent:
            lines.append(f"Not taking part ({len(absent)}):")
            lines.extend(f"  {line}" for line in absent)
        if prepared.unread_secrets:
            lines.append(f"Secrets not read (outside --secret-namespaces): {', '.join(prepared.unread_secrets)}")
        if prepared.assumed:
            lines.append(f"Namespaces assumed (not in the input): {', '.join(prepared.assumed)}")
    if report.warnings:
        lines.append(f"Warnings ({len(report.warnings)}):")
        lines.extend(f"  {w}" for w in report.warnings)
    if report.ignored:
        lines.append(f"ignored {len(report.ignored)} object(s): " + "; ".join(report.ignored))
    lines.extend(report.notes)
    lines.extend(report.empty)
    lines.extend(report.skipped)
    return lines


# --- options ------------------------------------------------------------------------------------


def _port_map_arg(text: str) -> dict[int, int]:
    try:
        return parse_port_map(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc) or f"invalid port map {text!r}") from None


def _ports_arg(text: str) -> tuple[int, ...]:
    try:
        ports = parse_ports(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc) or f"invalid port list {text!r}") from None
    if not ports:
        raise argparse.ArgumentTypeError("the port list is empty")
    return ports


def _service_arg(text: str) -> str:
    if text.count("/") > 1 or text.startswith("/") or text.endswith("/") or not text.strip():
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME or NAME, got {text!r}")
    return text


def _nonempty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _parts_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{value} is outside 0-1000")
    return value


def _namespaces_arg(text: str) -> tuple[str, ...]:
    return tuple(sorted({x.strip() for x in text.split(",") if x.strip()}))


def add_render_arguments(p: argparse.ArgumentParser) -> None:
    """The controller options that change what the render produces, named and defaulted as the
    controller's flags are set by the chart (``charts/titanium-gateway``, default values,
    ``helm install titanium-gateway ... -n gateway-system``), plus ``--assume-programmed``."""
    p.add_argument("--assume-programmed", action="store_true",
                   help="report Programmed as it will be once every data-plane pod confirmed the config")
    p.add_argument("--controller-name", default=DEFAULT_CONTROLLER_NAME, type=_nonempty,
                   help="GatewayClass.spec.controllerName to own (default %(default)s)")
    p.add_argument("--ingress-controller-name", default=DEFAULT_INGRESS_CONTROLLER_NAME, type=_nonempty,
                   help="IngressClass.spec.controller to own (default %(default)s)")
    p.add_argument("--watch-legacy-annotation", action="store_true",
                   help="also own Ingresses with the kubernetes.io/ingress.class annotation")
    p.add_argument("--port-map", type=_port_map_arg, default=dict(DEFAULT_PORT_MAP),
                   help="Gateway port to data-plane port (default 80=8080,443=8443)")
    p.add_argument("--data-plane-ports", type=_ports_arg, default=DEFAULT_DATA_PLANE_PORTS,
                   help="ports the data plane can bind, the chart's dataPlane.ports (default 8080,8443)")
    p.add_argument("--data-plane-namespace", default=CHART_NAMESPACE, type=_nonempty,
                   help="namespace of the data plane: the release namespace (default %(default)s)")
    p.add_argument("--data-plane-service", type=_service_arg, default=CHART_DATA_PLANE_SERVICE,
                   help="the data-plane Service, NAME (in --data-plane-namespace) or NAMESPACE/NAME: the "
                   "source of Gateway and Ingress addresses (default %(default)s, the chart's)")
    p.add_argument("--config-parts", type=_parts_arg, default=DEFAULT_MAX_PARTS,
                   help="number of part ConfigMaps the data-plane pods mount, the chart's "
                   "dataPlane.configParts (default %(default)s)")
    p.add_argument("--secret-namespaces", type=_namespaces_arg, default=(), metavar="NS,NS",
                   help="only Secrets of these namespaces are read, the chart's controller.secretNamespaces "
                   "(default: all)")


def options_from_args(args: argparse.Namespace) -> RenderOptions:
    """The render options of :func:`add_render_arguments`' arguments."""
    ns, _, name = args.data_plane_service.rpartition("/")
    return RenderOptions(
        controller_name=args.controller_name,
        ingress_controller_name=args.ingress_controller_name,
        watch_legacy_annotation=args.watch_legacy_annotation,
        port_map=dict(args.port_map),
        data_plane_ports=tuple(args.data_plane_ports),
        data_plane_service=(ns or args.data_plane_namespace, name),
        assume_programmed=args.assume_programmed,
        max_parts=args.config_parts,
        secret_namespaces=tuple(args.secret_namespaces),
    )


def _parser() -> argparse.ArgumentParser:
    p = CommandLineParser(
        prog="titanium-gateway render",
        description="Render Gateway API / Ingress manifests offline into the data plane's twp.yaml, "
        "with the statuses, events and certificates the controller would write.",
    )
    p.add_argument("-f", "--filename", dest="paths", action="append", required=True, metavar="PATH",
                   help="a YAML/JSON file (multi-document, Lists unwrapped), a directory of them, or - for stdin; repeatable")
    p.add_argument("--out", metavar="DIR", type=Path,
                   help="write twp.yaml (+ parts), status.yaml, events.yaml, certificates.yaml into DIR")
    add_render_arguments(p)
    return p


def _render_function() -> Callable[[Snapshot, RenderOptions], RenderResult]:
    """The pure render, or an ImportError with a clear message while it is not available."""
    from titanium_gateway import render as render_pkg

    fn = getattr(render_pkg, "render", None)
    if not callable(fn):
        raise ImportError("titanium_gateway.render has no render() function yet")
    return fn  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse(argv)
    if isinstance(args, int):
        return args
    options = options_from_args(args)
    report = LoadReport()
    # a short-lived process that builds millions of objects and no reference cycles: the cyclic
    # collector would only walk them again and again (reference counting still frees them)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(args, options, report)
    finally:
        if gc_was_enabled:
            gc.enable()


def _run(args: argparse.Namespace, options: RenderOptions, report: LoadReport) -> int:
    try:
        manifests = load_manifests(args.paths, report)
    except InputError as exc:
        print(f"titanium-gateway render: error: {exc}", file=sys.stderr)
        return 2
    try:
        render = _render_function()
    except ImportError as exc:
        print(f"titanium-gateway render: the render core is not available in this build: {exc}", file=sys.stderr)
        return 1
    prepared = prepare([m.obj for m in manifests], secret_namespaces=args.secret_namespaces, defaulted=True)
    del manifests
    result = render(prepared.snapshot, options)
    if args.out is not None:
        try:
            names = write_outputs(result, args.out, prepared.snapshot, options.controller_name)
        except OSError as exc:
            print(f"titanium-gateway render: error: cannot write {args.out}: {exc}", file=sys.stderr)
            return 2
        sys.stderr.write(summary(result, report, prepared, options))
        parts = [n for n in names if n.startswith("twp.part-")]
        listed = [n for n in names if n not in parts]
        if parts:
            listed[0] += f" (+ {len(parts)} part(s) twp.part-1.yaml ... twp.part-{len(parts)}.yaml)"
        print(f"wrote {args.out}/: {', '.join(listed)}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(result.config)
        sys.stdout.flush()
        sys.stderr.write(summary(result, report, prepared, options))
        if result.parts:
            print(f"the config is split into {len(result.parts)} part(s); only twp.yaml is shown: "
                  "use --out DIR to get them", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
