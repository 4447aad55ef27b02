"""The human summary of an offline render (``render`` writes it on stderr): per owned object its
conditions and why, the Events, the rules no request reaches, the counts of twp.yaml, then what
the user must know about the input (:func:`input_notices`, which ``explain`` prints too)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from titanium_gateway.offline.load import LoadReport
from titanium_gateway.offline.outputs import plane_directory, sorted_statuses
from titanium_gateway.offline.ownership import not_taking_part
from titanium_gateway.offline.snapshot import Prepared
from titanium_gateway.render.httproute.rules import rule_name
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import Plane, RenderResult
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.twp.model import Source

__all__ = ["config_counts", "counts_from_bytes", "input_notices", "plane_file", "reach_lines", "summary"]

_LINE_START_KEY = re.compile(rb"\n[A-Za-z_]")
_COUNTED = (b"listeners", b"routes", b"clusters")


def config_counts(result: RenderResult | Plane) -> dict[str, int]:
    """The number of listeners, routes and clusters in twp.yaml and its parts: those of the
    rendered document (``result.document``), which emit writes whole unless the config cannot
    be delivered (an item larger than a part ends it); else counted from the bytes."""
    doc = result.document
    if doc is not None and not result.delivery_error:
        return {"listeners": len(doc.listeners), "routes": len(doc.routes), "clusters": len(doc.clusters)}
    return counts_from_bytes(result)


def counts_from_bytes(result: RenderResult | Plane) -> dict[str, int]:
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

def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _seq(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


#: The IngressClass annotation that makes it the default class, and the legacy class annotation
def reach_lines(result: RenderResult, snapshot: Snapshot | None = None) -> list[str]:
    """The summary's sections of the rules no request reaches (``ShadowedRule``) and of the
    accepted objects the config does not serve (``NotServed``); with the input ``snapshot``, the
    rules' names beside their index."""
    lines: list[str] = []
    if result.unreachable:
        routes = snapshot.httproutes if snapshot is not None else {}

        def names(source: Source, index: int) -> str:
            return rule_name(routes.get(f"{source.namespace}/{source.name}"), index) if source.kind == "HTTPRoute" else ""

        lines.append(f"Unreachable rules ({len(result.unreachable)}):")
        lines.extend(f"  {u.source.kind} {u.source.namespace}/{u.source.name} {u.message(limit=8, names=names)}"
                     for u in result.unreachable)
    unserved = [e for e in result.events if e.reason == "NotServed"]
    if unserved:
        lines.append(f"Accepted but not served ({len(unserved)}):")
        lines.extend(f"  {e.kind} {e.namespace}/{e.name}: {e.message.partition(': ')[2] or e.message}"
                     for e in unserved)
    for plane in result.data_planes():
        document = plane.document
        if document is not None and document.routes and not document.listeners:
            lines.append(f"WARNING: {plane_file(plane)} opens no listener: none of its routes is served")
    return lines


def plane_file(plane: Plane) -> str:
    """The name of a data plane's twp.yaml in ``--out`` (``twp.yaml``: the shared one's)."""
    where = plane_directory(plane)
    return f"{where}/twp.yaml" if where else "twp.yaml"


#: Up to this many owned objects the summary lists each; above, HTTPRoutes and Ingresses in
#: their good state are counted instead (the GatewayClasses, Gateways and every object with a
#: problem are still listed).
SUMMARY_EVERY_OBJECT_UP_TO = 200
_CONDENSED_KINDS = frozenset({"HTTPRoute", "Ingress"})
#: the kinds whose status is a list of parent entries
_ROUTE_KINDS = frozenset({"HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute"})


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
    statuses = sorted_statuses(result)
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
        if st.kind in _ROUTE_KINDS or st.kind == "BackendTLSPolicy":
            entries = _seq(status.get("parents" if st.kind in _ROUTE_KINDS else "ancestors"))
            lines.append(f"{st.kind} {name}: {len(entries)} " + ("parent(s)" if st.kind in _ROUTE_KINDS
                                                                else "ancestor(s): the Gateways it is used through"))
            for p in entries:
                ref = _map(p.get("parentRef") or p.get("ancestorRef"))
                target = f"{ref.get('namespace', st.namespace)}/{ref.get('name')}"
                if ref.get("sectionName"):
                    target += f"/{ref['sectionName']}"
                if ref.get("port"):
                    target += f":{ref['port']}"
                if ref.get("kind") not in (None, "Gateway"):
                    target = f"{ref['kind']} {target}"
                lines.append(f"  {'parent' if st.kind in _ROUTE_KINDS else 'ancestor'} {target}: "
                             f"{_conditions_text(p.get('conditions'))}")
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
    lines.extend(reach_lines(result, prepared.snapshot if prepared is not None else None))
    planes = result.data_planes()
    for plane in planes:
        counts = config_counts(plane)
        whose = (f" (the data plane of Gateway {plane.gateway.namespace}/{plane.gateway.name})"
                 if plane.gateway is not None else " (the shared data plane)" if len(planes) > 1 else "")
        lines.append(
            f"{plane_file(plane)}{whose}: {counts['listeners']} listener(s), {counts['routes']} route(s), "
            f"{counts['clusters']} cluster(s), {len(plane.certificates)} certificate(s), "
            f"{len(plane.parts)} part(s); config_hash {plane.config_hash}"
        )
        if plane.delivery_error:
            lines.append(f"WARNING: the controller would not deliver {plane_file(plane)}: {plane.delivery_error}")
    if not result.statuses:
        lines.insert(0, "no GatewayClass, Gateway, route or Ingress of this controller in the input")
    lines.extend(input_notices(report if report is not None else LoadReport(), prepared, options, result))
    return "\n".join(lines) + "\n"


def readable_line(secret_namespaces: tuple[str, ...]) -> str:
    """Which Secrets (and CA ConfigMaps) the render assumed the controller may read."""
    if secret_namespaces:
        return (f"Secrets and ConfigMaps assumed readable: those of namespace(s) {', '.join(secret_namespaces)} only "
                "(--secret-namespaces; the chart's controller.secretNamespaces)")
    return ("Secrets and ConfigMaps assumed readable: those of every namespace (the default; "
            "--secret-namespaces NS,NS renders as a controller that reads only those namespaces)")


def input_notices(report: LoadReport, prepared: Prepared | None, options: RenderOptions | None,
                  result: RenderResult | None = None) -> list[str]:
    """What the user must know about the input besides the render: what could not take part,
    which Secrets were assumed readable and which were not read, namespaces assumed, warnings, ignored objects, notes, empty and skipped
    files (the summary's tail; ``explain`` prints it too)."""
    lines: list[str] = []
    if prepared is not None and options is not None:
        absent = not_taking_part(result, report) if result is not None else []
        if absent:
            lines.append(f"Not taking part ({len(absent)}):")
            lines.extend(f"  {line}" for line in absent)
        lines.append(readable_line(options.secret_namespaces))
        if prepared.unread_secrets:
            lines.append(f"Secrets not read (outside --secret-namespaces): {', '.join(prepared.unread_secrets)}")
        if prepared.unread_config_maps:
            lines.append(f"ConfigMaps not read (outside --secret-namespaces): {', '.join(prepared.unread_config_maps)}")
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


