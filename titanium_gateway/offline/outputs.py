"""The files of ``render --out``: ``twp.yaml`` (+ parts), ``status.yaml``, ``events.yaml`` and
``certificates.yaml``, as bytes (:func:`output_files`) or written into a directory
(:func:`write_outputs`). With a data plane per Gateway, each Gateway's ``twp.yaml`` (+ parts)
and ``certificates.yaml`` are in ``gateways/<namespace>/<name>/`` (:func:`plane_directory`);
the top-level ones are the shared data plane's (the Ingresses')."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from titanium_gateway import kinds
from titanium_gateway.render.options import DEFAULT_CONTROLLER_NAME
from titanium_gateway.render.result import ObjectStatus, Plane, RenderResult
from titanium_gateway.render.snapshot import CLUSTER_SCOPED, KIND_FIELDS, Snapshot
from titanium_gateway.render.statusmerge import SHARED_LISTS, final_status
from titanium_gateway.twp import blockyaml

__all__ = [
    "certificate_list", "certificates_yaml", "event_list", "events_yaml", "output_files", "plane_directory",
    "sorted_statuses",
    "status_documents", "status_yaml", "to_yaml", "write_outputs",
]



def to_yaml(value: Any) -> str:
    """Block-style YAML of plain data (multi-line strings as literal blocks), as PyYAML writes it."""
    return blockyaml.dump(value)


def _status_sort_key(s: ObjectStatus) -> tuple[int, str, str, str]:
    return (kinds.rank(s.kind), s.kind, s.namespace, s.name)  # (the order of the table of kinds)


def sorted_statuses(result: RenderResult) -> list[Any]:
    """The render's statuses in the order of status.yaml and the summary: kind, namespace, name."""
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
    HTTPRoute (any route, a BackendTLSPolicy), every parent (ancestor) entry ours (the merge keeps
    only ours when there are no others)."""
    todo: list[Any] = [wanted]
    while todo:
        m = todo.pop()
        for k, v in m.items():
            if v is None or type(k) is not str:
                return False
            t = type(v)
            if t is dict or (t is not list and t is not str and isinstance(v, Mapping)):
                todo.append(v)
    shared = SHARED_LISTS.get(kind)
    if shared is not None:
        entries = wanted.get(shared)
        if not isinstance(entries, list):
            return False
        return all(isinstance(p, Mapping) and p.get("controllerName") == controller_name for p in entries)
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
    statuses = [*result.statuses, *result.released]
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


def certificate_list(result: RenderResult | Plane) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in result.certificates:
        item: dict[str, Any] = {"file": c.file, "hosts": list(c.hosts), "source": c.source}
        if c.default:
            item["default"] = True
        out.append(item)
    return out


def certificates_yaml(result: RenderResult | Plane) -> str:
    """``certificates.yaml``: the PFX entries of the TLS Secret, never key material."""
    return to_yaml(certificate_list(result))


def plane_directory(plane: Plane) -> str:
    """Where a data plane's files go in ``--out``: ``""`` (the top level) for the shared one,
    ``gateways/<namespace>/<name>`` for a Gateway's own."""
    return "" if plane.gateway is None else f"gateways/{plane.gateway.namespace}/{plane.gateway.name}"


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
    for plane in result.gateway_planes():
        where = plane_directory(plane)
        files[f"{where}/twp.yaml"] = plane.config
        for name, data in plane.parts:
            files[f"{where}/{name}"] = data
        files[f"{where}/certificates.yaml"] = certificates_yaml(plane).encode()
    return files


def write_outputs(
    result: RenderResult,
    out_dir: Path,
    snapshot: Snapshot | None = None,
    controller_name: str = DEFAULT_CONTROLLER_NAME,
) -> list[str]:
    """Writes :func:`output_files` into ``out_dir`` (stale part files, and the files of Gateways
    no longer rendered in ``gateways/``, removed); returns the names."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = output_files(result, snapshot, controller_name)
    for stale in out_dir.glob("twp.part-*.yaml"):
        if stale.name not in files:
            stale.unlink()
    for stale in out_dir.glob("gateways/*/*/*.yaml"):
        if stale.relative_to(out_dir).as_posix() not in files:
            stale.unlink()
    for name, data in files.items():
        target = out_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(target)
    return list(files)

