"""``titanium-gateway render``: the offline render, fed from manifest files instead of informers.

The interface is specified in ``docs/render-cli.md``. This module holds three pieces that the
golden tests, the property tests and the benchmarks reuse:

* :func:`load_objects` reads YAML/JSON files and directories into normalised object dicts
  (defaults applied, unwatched kinds dropped), raising :class:`InputError` on bad input;
* :func:`build_snapshot` turns such a list into a render :class:`Snapshot` (assumed Namespaces
  added);
* :func:`main` is the command line (exit 0 rendered, 2 bad input or usage, 1 internal error).
"""

from __future__ import annotations

import argparse
import copy
import datetime as _dt
import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from titanium_gateway.render.options import (
    DEFAULT_CONTROLLER_NAME,
    DEFAULT_DATA_PLANE_PORTS,
    DEFAULT_INGRESS_CONTROLLER_NAME,
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
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

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


class InputError(Exception):
    """Bad input (unreadable file, invalid YAML, object without apiVersion/kind/name)."""


@dataclass
class LoadReport:
    """What the loader noticed besides the objects (printed on stderr by the CLI)."""

    #: "Kind namespace/name (file)" of each object of a kind the controller does not watch.
    ignored: list[str] = field(default_factory=list)
    #: Other notes: duplicates replaced by a later document.
    notes: list[str] = field(default_factory=list)


# --- YAML -------------------------------------------------------------------------------


class _ManifestLoader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings (Kubernetes treats them as strings)."""


_ManifestLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _parse_documents(text: str, source: str) -> list[Any]:
    """All documents of one file (JSON is tried first for ``.json``)."""
    if source.endswith(".json"):
        try:
            return [json.loads(text)]
        except ValueError:
            pass  # maybe a JSON stream or YAML in disguise: let the YAML parser decide
    docs: list[Any] = []
    try:
        for doc in yaml.load_all(text, Loader=_ManifestLoader):  # noqa: S506 - a SafeLoader subclass
            docs.append(doc)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{source}: document {len(docs) + 1}: invalid YAML{where}: {problem}") from None
    return docs


def _manifest_files(path: str) -> list[tuple[str, str]]:
    """``(display name, text)`` of each manifest file named by one ``-f`` argument."""
    if path == "-":
        return [("<stdin>", sys.stdin.read())]
    p = Path(path)
    if p.is_dir():
        files = sorted(
            (c for c in p.iterdir() if c.is_file() and c.name.endswith(MANIFEST_SUFFIXES)),
            key=lambda c: c.name,
        )
    elif p.exists():
        files = [p]
    else:
        raise InputError(f"{path}: no such file or directory")
    out: list[tuple[str, str]] = []
    for f in files:
        try:
            out.append((str(f), f.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{f}: cannot read: {exc}") from None
    return out


# --- objects ----------------------------------------------------------------------------


def _check_object(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected an object (a mapping), got {type(obj).__name__}")
    missing = [k for k in ("apiVersion", "kind") if not isinstance(obj.get(k), str) or not obj.get(k)]
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        missing.append("metadata.name")
    if missing:
        kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "object"
        raise InputError(f"{where}: {kind} without {', '.join(missing)}")
    assert isinstance(meta, dict)
    if meta.get("namespace") is not None and not isinstance(meta["namespace"], str):
        raise InputError(f"{where}: metadata.namespace must be a string")
    return obj


def _is_list(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("kind"), str)
        and doc["kind"].endswith("List")
        and isinstance(doc.get("items"), list)
    )


def _iter_file_objects(source: str, text: str) -> Iterator[tuple[dict[str, Any], str]]:
    for index, doc in enumerate(_parse_documents(text, source), start=1):
        if doc is None:
            continue  # an empty document (e.g. a trailing ---)
        if _is_list(doc):
            for item_index, item in enumerate(doc["items"], start=1):
                where = f"{source}: document {index}, item {item_index}"
                yield _check_object(item, where), where
        else:
            where = f"{source}: document {index}"
            yield _check_object(doc, where), where


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
    Fields already present are kept, so applying it twice changes nothing.
    """
    out: list[dict[str, Any]] = []
    for index, original in enumerate(objects):
        obj = copy.deepcopy(dict(original))
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


def load_objects(paths: Sequence[str | Path], report: LoadReport | None = None) -> list[dict[str, Any]]:
    """Every watched object of the manifest files/directories in ``paths``, defaults applied.

    Order: the files in argument order (a directory's files sorted by name), documents in file
    order, ``List`` items in list order. A later object with the same kind and key replaces an
    earlier one at the earlier one's position (as a second ``kubectl apply`` would). Objects of
    other kinds are left out (``report.ignored``). Raises :class:`InputError`.
    """
    report = report if report is not None else LoadReport()
    objects: list[dict[str, Any]] = []
    position: dict[tuple[str, str], int] = {}
    for path in paths:
        for source, text in _manifest_files(str(path)):
            for obj, where in _iter_file_objects(source, text):
                kind = obj["kind"]
                served = SERVED_VERSIONS.get(kind)
                if served is None:
                    report.ignored.append(f"{_describe(obj)} ({where}): kind not watched")
                    continue
                if obj["apiVersion"] not in served:
                    report.ignored.append(
                        f"{_describe(obj)} ({where}): apiVersion {obj['apiVersion']} is not served"
                        f" for {kind} (expected {' or '.join(sorted(served))})"
                    )
                    continue
                obj = dict(obj)
                obj["apiVersion"] = served[obj["apiVersion"]]
                ident = (kind, object_key(obj))
                if ident in position:
                    report.notes.append(f"{_describe(obj)} ({where}) replaces an earlier document")
                    objects[position[ident]] = obj
                else:
                    position[ident] = len(objects)
                    objects.append(obj)
    return apply_defaults(objects)


def _referenced_namespaces(value: Any) -> Iterator[str]:
    """Every ``namespace: <string>`` inside a spec (parentRefs, backendRefs, certificateRefs, from)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k == "namespace" and isinstance(v, str) and v:
                yield v
            else:
                yield from _referenced_namespaces(v)
    elif isinstance(value, list):
        for item in value:
            yield from _referenced_namespaces(item)


def assumed_namespaces(objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces named by an object (its own namespace or a reference) but absent from the input."""
    objects = list(objects)
    present = {
        str((o.get("metadata") or {}).get("name"))
        for o in objects
        if o.get("kind") == "Namespace" and isinstance(o.get("metadata"), Mapping)
    }
    named: set[str] = set()
    for obj in objects:
        meta = obj.get("metadata")
        if obj.get("kind") in CLUSTER_SCOPED or not isinstance(meta, Mapping):
            continue
        ns = meta.get("namespace")
        named.add(ns if isinstance(ns, str) and ns else "default")
        if obj.get("kind") in ("Gateway", "HTTPRoute", "ReferenceGrant"):
            named.update(_referenced_namespaces(obj.get("spec")))
    return [
        {
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
        for name in sorted(named - present)
    ]


def _namespace_uid(name: str) -> str:
    # surrogatepass: a lone surrogate (a YAML "\udfff" escape) is bad input the render reports,
    # not a reason for the loader to crash
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-5{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"


def build_snapshot(objects: Iterable[Mapping[str, Any]], now: str = OFFLINE_NOW, **kwargs: Any) -> Snapshot:
    """A render snapshot of ``objects`` (defaults applied where missing; absent Namespaces assumed)."""
    objs = apply_defaults(objects)
    return Snapshot.from_objects([*objs, *assumed_namespaces(objs)], now=now, **kwargs)


# --- output -----------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block-style YAML; multi-line strings as literal blocks."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_representer)


def _plain(value: Any) -> Any:
    """Mappings/tuples (e.g. MappingProxyType) as plain dicts/lists for the YAML dumper."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_yaml(value: Any) -> str:
    return yaml.dump(
        _plain(value), Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096
    )


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


def status_documents(
    result: RenderResult,
    snapshot: Snapshot | None = None,
    controller_name: str = DEFAULT_CONTROLLER_NAME,
) -> list[dict[str, Any]]:
    """The ``status.yaml`` documents. With the input ``snapshot``, each status is the one the
    object ends with after the controller's write (``render/statusmerge.py``, the same merge as
    the status writer): an HTTPRoute keeps the ``status.parents`` entries of other controllers
    from its input status, before ours; an HTTPRoute the render no longer reports on but whose
    input status holds a parent entry of ``controller_name`` gets a document with that entry
    dropped. Without it, the render's own statuses (ours only)."""
    statuses = list(result.statuses)
    if snapshot is not None:
        statuses += orphaned_route_statuses(statuses, snapshot.httproutes.values(), controller_name)
    docs: list[dict[str, Any]] = []
    for st in sorted(statuses, key=_status_sort_key):
        meta: dict[str, Any] = {"namespace": st.namespace, "name": st.name} if st.namespace else {"name": st.name}
        status = _plain(st.status)
        if snapshot is not None:
            status = final_status(st.kind, _current_object(snapshot, st), status, controller_name)
        docs.append({"apiVersion": st.api_version, "kind": st.kind, "metadata": meta, "status": status})
    return docs


def status_yaml(
    result: RenderResult, snapshot: Snapshot | None = None, controller_name: str = DEFAULT_CONTROLLER_NAME
) -> str:
    """``status.yaml``: one document per owned GatewayClass, Gateway, HTTPRoute and Ingress
    (merged with the input objects' statuses when ``snapshot`` is given, see
    :func:`status_documents`)."""
    return "".join(
        ("---\n" if i else "") + to_yaml(doc)
        for i, doc in enumerate(status_documents(result, snapshot, controller_name))
    )


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


def _config_counts(result: RenderResult) -> dict[str, int]:
    counts = {"listeners": 0, "routes": 0, "clusters": 0}
    for data in [result.config, *(d for _, d in result.parts)]:
        try:
            doc = yaml.safe_load(data)
        except yaml.YAMLError:
            continue
        if isinstance(doc, Mapping):
            for key in counts:
                if isinstance(doc.get(key), list):
                    counts[key] += len(doc[key])
    return counts


def _conditions_text(conditions: Any) -> str:
    if not isinstance(conditions, list):
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
    if not isinstance(conditions, list):
        return []
    healthy_false = {"Conflicted"}  # a False Conflicted condition is the good state
    return [
        f"{c.get('type')}: {c.get('message')}"
        for c in conditions
        if isinstance(c, Mapping)
        and c.get("message")
        and ((c.get("status") != "True") != (c.get("type") in healthy_false))
    ]


def summary(result: RenderResult, report: LoadReport | None = None) -> str:
    """A short human summary: per owned object accepted or not and why; counts."""
    lines: list[str] = []
    for st in _sorted_statuses(result):
        name = f"{st.namespace}/{st.name}" if st.namespace else st.name
        status = _plain(st.status)
        if st.kind == "HTTPRoute":
            parents = status.get("parents") or []
            lines.append(f"{st.kind} {name}: {len(parents)} parent(s)")
            for p in parents:
                ref = p.get("parentRef") or {}
                target = f"{ref.get('namespace', st.namespace)}/{ref.get('name')}"
                if ref.get("sectionName"):
                    target += f"/{ref['sectionName']}"
                if ref.get("port"):
                    target += f":{ref['port']}"
                lines.append(f"  parent {target}: {_conditions_text(p.get('conditions'))}")
                lines.extend(f"    {m}" for m in _messages(p.get("conditions")))
        elif st.kind == "Ingress":
            ingress = ((status.get("loadBalancer") or {}).get("ingress")) or []
            addrs = ", ".join(str(i.get("ip") or i.get("hostname")) for i in ingress if isinstance(i, Mapping))
            lines.append(f"{st.kind} {name}: owned; addresses: {addrs or 'none'}")
        else:
            lines.append(f"{st.kind} {name}: {_conditions_text(status.get('conditions'))}")
            lines.extend(f"    {m}" for m in _messages(status.get("conditions")))
            for listener in status.get("listeners") or []:
                lines.append(
                    f"  listener {listener.get('name')}: attachedRoutes={listener.get('attachedRoutes')}, "
                    f"{_conditions_text(listener.get('conditions'))}"
                )
                lines.extend(f"    {m}" for m in _messages(listener.get("conditions")))
            addresses = status.get("addresses")
            if st.kind == "Gateway":
                vals = ", ".join(str(a.get("value")) for a in addresses or [] if isinstance(a, Mapping))
                lines.append(f"  addresses: {vals or 'none'}")
    for e in result.events:
        lines.append(f"Event {e.type} {e.reason} on {e.kind} {e.namespace}/{e.name}: {e.message}")
    counts = _config_counts(result)
    lines.append(
        f"twp.yaml: {counts['listeners']} listener(s), {counts['routes']} route(s), "
        f"{counts['clusters']} cluster(s), {len(result.certificates)} certificate(s), "
        f"{len(result.parts)} part(s); config_hash {result.config_hash}"
    )
    if result.delivery_error:
        lines.append(f"WARNING: the controller would not deliver this config: {result.delivery_error}")
    if report is not None:
        if report.ignored:
            lines.append(f"ignored {len(report.ignored)} object(s): " + "; ".join(report.ignored))
        lines.extend(report.notes)
    if not result.statuses:
        lines.insert(0, "no GatewayClass, Gateway, HTTPRoute or Ingress of this controller in the input")
    return "\n".join(lines) + "\n"


# --- command line -----------------------------------------------------------------------


class _UsageError(Exception):
    pass


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


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


def _service_arg(text: str) -> tuple[str, str]:
    ns, sep, name = text.partition("/")
    if not sep:
        ns, name = "default", text
    if not ns or not name or "/" in name:
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/NAME or NAME, got {text!r}")
    return ns, name


def _nonempty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(
        prog="titanium-gateway render",
        description="Render Gateway API / Ingress manifests offline into the data plane's twp.yaml, "
        "with the statuses, events and certificates the controller would write.",
    )
    p.add_argument("-f", "--filename", dest="paths", action="append", required=True, metavar="PATH",
                   help="a YAML/JSON file (multi-document, Lists unwrapped), a directory of them, or - for stdin; repeatable")
    p.add_argument("--out", metavar="DIR", type=Path,
                   help="write twp.yaml (+ parts), status.yaml, events.yaml, certificates.yaml into DIR")
    p.add_argument("--assume-programmed", action="store_true",
                   help="report Programmed as it will be once every data-plane pod confirmed the config")
    p.add_argument("--controller-name", default=DEFAULT_CONTROLLER_NAME, type=_nonempty,
                   help="GatewayClass.spec.controllerName to own (default %(default)s)")
    p.add_argument("--ingress-controller-name", default=DEFAULT_INGRESS_CONTROLLER_NAME, type=_nonempty,
                   help="IngressClass.spec.controller to own (default %(default)s)")
    p.add_argument("--port-map", type=_port_map_arg, default=dict(DEFAULT_PORT_MAP),
                   help="Gateway port to data-plane port (default 80=8080,443=8443)")
    p.add_argument("--data-plane-ports", type=_ports_arg, default=DEFAULT_DATA_PLANE_PORTS,
                   help="ports the data plane can bind (default 8080,8443)")
    p.add_argument("--data-plane-service", type=_service_arg, default=("gateway-system", "titanium"),
                   help="NAMESPACE/NAME of the data-plane Service, the source of Gateway addresses "
                   "(default gateway-system/titanium)")
    p.add_argument("--watch-legacy-annotation", action="store_true",
                   help="also own Ingresses with the kubernetes.io/ingress.class annotation")
    return p


def options_from_args(args: argparse.Namespace) -> RenderOptions:
    return RenderOptions(
        controller_name=args.controller_name,
        ingress_controller_name=args.ingress_controller_name,
        watch_legacy_annotation=args.watch_legacy_annotation,
        port_map=dict(args.port_map),
        data_plane_ports=tuple(args.data_plane_ports),
        data_plane_service=tuple(args.data_plane_service),
        assume_programmed=args.assume_programmed,
    )


def _render_function() -> Callable[[Snapshot, RenderOptions], RenderResult]:
    """The pure render, or an ImportError with a clear message while it is not available."""
    from titanium_gateway import render as render_pkg

    fn = getattr(render_pkg, "render", None)
    if not callable(fn):
        raise ImportError("titanium_gateway.render has no render() function yet")
    return fn  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"titanium-gateway render: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    options = options_from_args(args)
    report = LoadReport()
    try:
        objects = load_objects(args.paths, report)
    except InputError as exc:
        print(f"titanium-gateway render: error: {exc}", file=sys.stderr)
        return 2
    try:
        render = _render_function()
    except ImportError as exc:
        print(f"titanium-gateway render: the render core is not available in this build: {exc}", file=sys.stderr)
        return 1
    snapshot = build_snapshot(objects)
    result = render(snapshot, options)
    if args.out is not None:
        try:
            names = write_outputs(result, args.out, snapshot, options.controller_name)
        except OSError as exc:
            print(f"titanium-gateway render: error: cannot write {args.out}: {exc}", file=sys.stderr)
            return 2
        sys.stderr.write(summary(result, report))
        print(f"wrote {', '.join(str(args.out / n) for n in names)}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(result.config)
        sys.stdout.flush()
        sys.stderr.write(summary(result, report))
        if result.parts:
            print(f"the config is split into {len(result.parts)} part(s); only twp.yaml is shown: "
                  "use --out DIR to get them", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
