"""``titanium-gateway migrate-ingress``: Ingresses written for ingress-nginx, converted.

Reads manifests (the offline loader: files, directories, ``-``), and for every Ingress of an
ingress-nginx class reports each ``nginx.ingress.kubernetes.io/`` annotation as mapped (to
which ``titanium.io/`` annotation, and how the meaning differs), unsupported, or without
effect (``titanium_gateway.render.ingress.nginx``). With ``--out DIR`` it writes the converted
Ingresses, one file each. The exit code is 1 when a security-relevant annotation (or
ingress-nginx's default HTTPS redirect) has no equivalent, or when a path that ingress-nginx read
as a regular expression stays a literal prefix that never matches, so a script cannot miss it;
2 on bad input or usage; 0 otherwise. The interface is in ``docs/render-cli.md`` and the
migration guide in ``docs/migrating-from-ingress-nginx.md``.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from titanium_gateway.offline.args import CommandLineParser
from titanium_gateway.offline.manifests import InputError, Manifest, Origin, ReadNotes, read_manifests
from titanium_gateway.render.ingress import nginx as na
from titanium_gateway.render.ingress.ownership import LEGACY_CLASS_ANNOTATION
from titanium_gateway.twp import blockyaml

NGINX_CONTROLLER = "k8s.io/ingress-nginx"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
DEFAULT_TREAT = ("nginx",)
DEFAULT_TARGET_CLASS = "titanium"
#: What makes a path a regular expression that, read as a literal prefix, no request path
#: holds in practice (a ``.`` alone still matches the same literal requests).
_NEVER_LITERAL = re.compile(r"[\\^$|?*+()\[\]{}]")
_SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink",
                  "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")


@dataclass
class IngressReport:
    """One Ingress of the input: converted (with its findings) or skipped (with why)."""

    namespace: str
    name: str
    origin: Origin
    source_class: str
    skipped: str = ""
    analysis: na.Analysis | None = None
    #: Ingress-level notes about matching (pathType ImplementationSpecific, ...).
    notes: list[str] = field(default_factory=list)
    #: the paths the converted Ingress keeps that can never match what they matched (exit 1).
    path_errors: list[str] = field(default_factory=list)
    converted: dict[str, Any] | None = None

    @property
    def blocking(self) -> tuple[na.Finding, ...]:
        return self.analysis.blocking if self.analysis is not None else ()


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def ingress_class(ingress: Mapping[str, Any]) -> str:
    """``spec.ingressClassName``, else the legacy ``kubernetes.io/ingress.class`` annotation."""
    name = _str(_map(ingress.get("spec")).get("ingressClassName"))
    return name or _str(_map(_map(ingress.get("metadata")).get("annotations")).get(LEGACY_CLASS_ANNOTATION))


def nginx_classes(manifests: Sequence[Manifest], treat: Sequence[str]) -> set[str]:
    """The class names to convert: ``treat`` and every IngressClass of the input whose
    controller is ingress-nginx's."""
    names = set(treat)
    for m in manifests:
        obj = m.obj
        if obj.get("kind") == "IngressClass" and _str(_map(obj.get("spec")).get("controller")) == NGINX_CONTROLLER:
            names.add(_str(_map(obj.get("metadata")).get("name")))
    return names


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _paths(ingress: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out = []
    for rule in _list(_map(ingress.get("spec")).get("rules")):
        for p in _list(_map(_map(rule).get("http")).get("paths")):
            if isinstance(p, Mapping):
                out.append(p)
    return out


def convert(ingress: Mapping[str, Any], target_class: str = DEFAULT_TARGET_CLASS,
            ) -> tuple[dict[str, Any], na.Analysis, list[str], list[str]]:
    """The converted Ingress, the analysis of its annotations, notes on path matching, and the
    paths that can never match (a regular expression of ingress-nginx kept as a literal prefix)."""
    meta = _map(ingress.get("metadata"))
    spec = _map(ingress.get("spec"))
    namespace = _str(meta.get("namespace")) or "default"
    annotations = {k: v for k, v in _map(meta.get("annotations")).items() if isinstance(k, str)}
    path_values = [p["path"] for p in _paths(ingress) if isinstance(p.get("path"), str)]
    analysis = na.analyze(annotations, namespace=namespace, paths=path_values, has_tls=bool(spec.get("tls")))
    kept_nginx = {f.annotation for f in analysis.findings if f.verdict == na.UNSUPPORTED}
    new_annotations: dict[str, Any] = {}
    for k, v in annotations.items():
        if k in (LEGACY_CLASS_ANNOTATION, LAST_APPLIED):
            continue
        if k.startswith(na.PREFIX) and k not in kept_nginx:
            continue
        new_annotations[k] = v
    notes: list[str] = []
    for k, v in analysis.titanium.items():
        if k in annotations and annotations[k] != v:
            notes.append(f"{k} is already set to {annotations[k]!r}: kept (the conversion gives {v!r})")
            continue
        new_annotations[k] = v
    new_meta: dict[str, Any] = {k: copy.deepcopy(v) for k, v in meta.items() if k not in _SERVER_FIELDS and k != "annotations"}
    if new_annotations:
        new_meta["annotations"] = dict(sorted(new_annotations.items()))
    new_spec = copy.deepcopy(dict(spec))
    new_spec["ingressClassName"] = target_class
    rewrite = next((f for f in analysis.findings if f.annotation == na.PREFIX + "rewrite-target"), None)
    idiom = None
    if rewrite is not None and rewrite.verdict == na.MAPPED and na.uses_capture_groups(rewrite.value):
        idiom = na.rewrite_idiom(path_values, rewrite.value.strip())
    regex = _str(annotations.get(na.PREFIX + "use-regex")).strip() in ("true", "True", "TRUE", "1", "t", "T")
    # ingress-nginx reads the paths as regular expressions with use-regex, and with any rewrite-target
    regex_paths = regex or rewrite is not None
    errors: list[str] = []
    for rule in _list(new_spec.get("rules")):
        for p in _list(_map(_map(rule).get("http")).get("paths")):
            if not isinstance(p, dict):
                continue
            if idiom is not None and isinstance(p.get("path"), str):
                base = idiom[0][path_values.index(p["path"])]
                notes.append(f"path {p['path']!r} ({p.get('pathType')}) becomes {base!r} (Prefix)")
                p["path"], p["pathType"] = base, "Prefix"
            elif p.get("pathType") == "ImplementationSpecific" and regex_paths and _NEVER_LITERAL.search(_str(p.get("path"))):
                errors.append(f"path {p['path']!r} (ImplementationSpecific) is a regular expression in ingress-nginx "
                              "and a literal Prefix here: it matches only a request path that holds these characters "
                              "as they are, so in practice never. Rewrite it as Prefix or Exact paths")
            elif p.get("pathType") == "ImplementationSpecific" and not regex:
                notes.append(f"path {p.get('path')!r} is ImplementationSpecific: a Prefix here, which ends at a "
                             f"segment boundary ({p.get('path')!r} does not match {str(p.get('path')).rstrip('/') + 'x'!r}; "
                             "ingress-nginx's plain prefix does)")
    converted = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": new_meta, "spec": new_spec}
    return converted, analysis, notes, errors


def migrate(
    manifests: Sequence[Manifest],
    treat: Sequence[str] = DEFAULT_TREAT,
    target_class: str = DEFAULT_TARGET_CLASS,
    treat_unclassed: bool = False,
) -> list[IngressReport]:
    classes = nginx_classes(manifests, treat)
    reports: list[IngressReport] = []
    for m in manifests:
        obj = m.obj
        if obj.get("kind") != "Ingress":
            continue
        meta = _map(obj.get("metadata"))
        namespace, name = _str(meta.get("namespace")) or "default", _str(meta.get("name"))
        cls = ingress_class(obj)
        report = IngressReport(namespace, name, m.origin, cls)
        if obj.get("apiVersion") != "networking.k8s.io/v1":
            report.skipped = f"apiVersion {obj.get('apiVersion')} is not served any more: write it as networking.k8s.io/v1 first"
        elif cls and cls not in classes:
            report.skipped = f"class {cls} is not converted (--treat-class {cls} converts it)"
        elif not cls and not treat_unclassed:
            report.skipped = "it names no class (--treat-unclassed converts it)"
        else:
            report.converted, report.analysis, report.notes, report.path_errors = convert(obj, target_class)
        reports.append(report)
    return reports


# --- output --------------------------------------------------------------------------------------


def _flags(f: na.Finding) -> str:
    tags = [t for t, on in (("security", f.security), ("routing", f.routing)) if on]
    return f" [{', '.join(tags)}]" if tags else ""


def text_report(reports: Sequence[IngressReport], target_class: str, notes: ReadNotes | None = None) -> str:
    lines: list[str] = []
    counts = {na.MAPPED: 0, na.UNSUPPORTED: 0, na.NO_EFFECT: 0}
    blocking: list[str] = []
    never: list[str] = []
    converted = skipped = 0
    for r in reports:
        head = f"Ingress {r.namespace}/{r.name} ({r.origin})"
        if r.skipped:
            skipped += 1
            lines.append(f"{head}: skipped: {r.skipped}")
            continue
        converted += 1
        assert r.analysis is not None
        lines.append(f"{head}: class {r.source_class or '(none)'} -> {target_class}")
        if not r.analysis.findings:
            lines.append("  no nginx.ingress.kubernetes.io/ annotation")
        for f in r.analysis.findings:
            counts[f.verdict] += 1
            label = "UNSUPPORTED" if f.blocking else f.verdict
            value = na.short(f.value)
            if f.verdict == na.MAPPED:
                target = ", ".join(f"{k}: {v!r}" for k, v in f.titanium.items()) or "(nothing to set)"
                lines.append(f"  {label:<12} {f.annotation}: {value!r} -> {target}{_flags(f)}")
            else:
                lines.append(f"  {label:<12} {f.annotation}: {value!r}{_flags(f)}")
            if f.note:
                lines.append(f"               {f.note}")
            if f.blocking:
                blocking.append(f"{r.namespace}/{r.name} {f.annotation}")
        for f in r.analysis.notes:
            label = "UNSUPPORTED" if f.blocking else "note"
            lines.append(f"  {label:<12} {f.effect}{_flags(f)}")
            lines.append(f"               {f.note}")
            if f.blocking:
                blocking.append(f"{r.namespace}/{r.name} ({f.effect})")
        for note in r.notes:
            lines.append(f"  {'note':<12} {note}")
        for error in r.path_errors:
            lines.append(f"  {'ERROR':<12} {error}")
            never.append(f"{r.namespace}/{r.name} {error.split(' (ImplementationSpecific)', 1)[0]}")
    if notes is not None:
        lines.extend(notes.empty)
        lines.extend(notes.skipped)
    total = sum(counts.values())
    lines.append(
        f"Summary: {converted} Ingress(es) converted, {skipped} skipped; {total} nginx annotation(s): "
        f"{counts[na.MAPPED]} mapped, {counts[na.UNSUPPORTED]} unsupported, {counts[na.NO_EFFECT]} without effect"
    )
    if blocking:
        lines.append(f"{len(blocking)} security-relevant setting(s) without an equivalent (exit code 1): " + "; ".join(blocking))
    if never:
        lines.append(f"{len(never)} path(s) that can never match (exit code 1): " + "; ".join(never))
    return "\n".join(lines) + "\n"


def _finding_json(f: na.Finding) -> dict[str, Any]:
    return {"annotation": f.annotation, "value": f.value, "verdict": f.verdict, "effect": f.effect, "note": f.note,
            "security": f.security, "routing": f.routing, "titanium": dict(f.titanium), "blocking": f.blocking}


def json_report(reports: Sequence[IngressReport], target_class: str) -> str:
    items = []
    for r in reports:
        item: dict[str, Any] = {"namespace": r.namespace, "name": r.name, "origin": str(r.origin), "class": r.source_class}
        if r.skipped:
            item["skipped"] = r.skipped
        else:
            assert r.analysis is not None
            item["targetClass"] = target_class
            item["findings"] = [_finding_json(f) for f in r.analysis.findings]
            item["ingressNotes"] = [_finding_json(f) for f in r.analysis.notes]
            item["pathNotes"] = list(r.notes)
            item["pathErrors"] = list(r.path_errors)
            item["blocking"] = bool(r.blocking)
        items.append(item)
    return json.dumps({"ingresses": items, "blocking": any(r.blocking for r in reports),
                       "neverMatching": any(r.path_errors for r in reports)}, indent=2) + "\n"


def output_name(r: IngressReport) -> str:
    """``<namespace>_<name>.yaml`` (``_`` never occurs in a Kubernetes name)."""
    return f"{r.namespace}_{r.name}.yaml"


def write_converted(reports: Sequence[IngressReport], out_dir: Path) -> list[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    names = []
    for r in reports:
        if r.converted is None:
            continue
        name = output_name(r)
        header = f"# Converted from ingress-nginx by titanium-gateway migrate-ingress ({r.origin}).\n"
        tmp = out_dir / f".{name}.tmp"
        tmp.write_text(header + blockyaml.dump(r.converted), encoding="utf-8")
        tmp.replace(out_dir / name)
        names.append(name)
    return names


# --- command line --------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = CommandLineParser(
        prog="titanium-gateway migrate-ingress",
        description="Report what every nginx.ingress.kubernetes.io/ annotation of your Ingresses becomes here, "
        "and convert them (exit 1 when a security-relevant one has no equivalent or a path can never match).",
    )
    p.add_argument("-f", "--filename", dest="paths", action="append", required=True, metavar="PATH",
                   help="a YAML/JSON file, a directory of them, or - for stdin; repeatable")
    p.add_argument("--treat-class", dest="treat", action="append", metavar="CLASS",
                   help="an ingress-nginx class name to convert (default nginx; IngressClasses of the input whose "
                   "controller is k8s.io/ingress-nginx count too); repeatable")
    p.add_argument("--treat-unclassed", action="store_true",
                   help="also convert Ingresses that name no class (ingress-nginx's --watch-ingress-without-class)")
    p.add_argument("--class", dest="target_class", default=DEFAULT_TARGET_CLASS, metavar="NAME",
                   help="the IngressClass the converted Ingresses name (default %(default)s, the chart's)")
    p.add_argument("--out", metavar="DIR", type=Path, help="write each converted Ingress to DIR/<namespace>_<name>.yaml")
    p.add_argument("--format", choices=("text", "json"), default="text", help="the report's format on stdout")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse(argv)
    if isinstance(args, int):
        return args
    notes = ReadNotes()
    try:
        manifests = read_manifests(args.paths, notes)
    except InputError as exc:
        print(f"titanium-gateway migrate-ingress: error: {exc}", file=sys.stderr)
        return 2
    treat = tuple(args.treat) if args.treat else DEFAULT_TREAT
    reports = migrate(manifests, treat, args.target_class, args.treat_unclassed)
    if args.out is not None:
        try:
            names = write_converted(reports, args.out)
        except OSError as exc:
            print(f"titanium-gateway migrate-ingress: error: cannot write {args.out}: {exc}", file=sys.stderr)
            return 2
    if args.format == "json":
        sys.stdout.write(json_report(reports, args.target_class))
    else:
        sys.stdout.write(text_report(reports, args.target_class, notes))
        if not reports:
            print("no Ingress in the input", file=sys.stderr)
    if args.out is not None:
        print(f"wrote {len(names)} converted Ingress(es) to {args.out}", file=sys.stderr)
    return 1 if any(r.blocking or r.path_errors for r in reports) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
