#!/usr/bin/env python3
"""Generates ``titanium_gateway/offline/fieldschemas.json``: the field names of every kind the offline
render reads, so it can warn about fields the API server would not know (``parentRef:`` for
``parentRefs:``, ``rulez:``) without a cluster.

Sources:

* the Gateway API CRDs the chart ships (``charts/titanium-gateway/crds``): the
  ``openAPIV3Schema`` of every served version;
* the built-in kinds (Namespace, Service, EndpointSlice, Secret, IngressClass, Ingress, ConfigMap) and
  ``metadata`` (ObjectMeta, also used for the CRDs, whose schemas leave it open): the models of
  the kubernetes Python client (``openapi_types`` / ``attribute_map``), generated from the
  Kubernetes OpenAPI document of the version the client is made for.

Only names and shapes are kept: a node is ``0`` (any value: a scalar, an int-or-string, a field
marked ``x-kubernetes-preserve-unknown-fields``, or ``status``, which controllers write), ``{"p":
{name: node}}`` (an object with these fields and no others), ``{"m": node}`` (a map; the
CRD's ``additionalProperties``, the client's ``Dict[str, ...]``) or ``{"l": node}`` (a list).
Subtrees used more than once are stored once in ``defs`` and named ``{"r": "<id>"}``.

Run it again after updating the chart's CRDs or the kubernetes client:
``python3 hack/generate-field-schemas.py`` (``--check`` exits 1 when the file is not current).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = ROOT / "charts" / "titanium-gateway" / "crds"
OUT = ROOT / "titanium_gateway" / "offline" / "fieldschemas.json"

#: kind -> (apiVersion, kubernetes client model) of the built-in kinds the render reads.
BUILTINS = {
    "Namespace": ("v1", "V1Namespace"),
    "Service": ("v1", "V1Service"),
    "EndpointSlice": ("discovery.k8s.io/v1", "V1EndpointSlice"),
    "Secret": ("v1", "V1Secret"),
    "IngressClass": ("networking.k8s.io/v1", "V1IngressClass"),
    "Ingress": ("networking.k8s.io/v1", "V1Ingress"),
    "ConfigMap": ("v1", "V1ConfigMap"),
}
#: Top-level fields never checked: written by controllers, not by the author of a manifest.
UNCHECKED_ROOT = ("status",)
ANY = 0
_SHARE_MIN_CHARS = 120


def _crd_node(schema: dict[str, Any]) -> Any:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return ANY
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        return {"p": {name: _crd_node(sub) for name, sub in sorted(props.items())}}
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return {"m": _crd_node(extra)}
    items = schema.get("items")
    if isinstance(items, dict):
        node = _crd_node(items)
        return {"l": node}
    return ANY


def _client_type(type_name: str, models: Any) -> Any:
    m = re.fullmatch(r"List\[(.+)\]", type_name)
    if m:
        return {"l": _client_type(m.group(1), models)}
    m = re.fullmatch(r"Dict\[str, (.+)\]", type_name)
    if m:
        return {"m": _client_type(m.group(1), models)}
    cls = getattr(models, type_name, None)
    if cls is None or not hasattr(cls, "openapi_types"):
        return ANY  # str, int, bool, datetime, object (an int-or-string, fieldsV1, ...)
    return {
        "p": {
            cls.attribute_map[attr]: _client_type(t, models)
            for attr, t in sorted(cls.openapi_types.items(), key=lambda kv: cls.attribute_map[kv[0]])
        }
    }


def _root(node: Any, meta: Any) -> Any:
    props = dict(node["p"])
    props["metadata"] = meta
    for name in UNCHECKED_ROOT:
        if name in props:
            props[name] = ANY
    return {"p": dict(sorted(props.items()))}


def build() -> dict[str, Any]:
    import kubernetes
    import kubernetes.client as models

    meta = _client_type("V1ObjectMeta", models)
    kinds: dict[str, Any] = {}
    crd_files = []
    for f in sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            crd_files.append(f.name)
            for version in spec["versions"]:
                if not version.get("served"):
                    continue
                schema = version["schema"]["openAPIV3Schema"]
                kinds[f"{spec['group']}/{version['name']}/{spec['names']['kind']}"] = _root(_crd_node(schema), meta)
    for kind, (api_version, model) in BUILTINS.items():
        kinds[f"{api_version}/{kind}"] = _root(_client_type(model, models), meta)
    defs: dict[str, Any] = {}
    kinds = _share(kinds, defs)
    bundle_version = ""
    origin = CRD_DIR / "ORIGIN.md"
    if origin.exists():
        m = re.search(r"v\d+\.\d+\.\d+", origin.read_text())
        bundle_version = m.group(0) if m else ""
    return {
        "generatedBy": "hack/generate-field-schemas.py",
        "sources": {
            "crds": f"charts/titanium-gateway/crds ({', '.join(sorted(set(crd_files)))})"
            + (f", Gateway API {bundle_version}" if bundle_version else ""),
            "builtins": f"kubernetes Python client {kubernetes.__version__}",
        },
        "unchecked": list(UNCHECKED_ROOT),
        "kinds": dict(sorted(kinds.items())),
        "defs": defs,
    }


def _share(kinds: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Stores every subtree that occurs more than once (and is not tiny) once, in ``defs``."""
    counts: dict[str, int] = {}

    def count(node: Any) -> None:
        if not isinstance(node, dict):
            return
        text = json.dumps(node, sort_keys=True)
        counts[text] = counts.get(text, 0) + 1
        for child in _children(node):
            count(child)

    for node in kinds.values():
        count(node)
    names: dict[str, str] = {}

    def replace(node: Any, top: bool = False) -> Any:
        if not isinstance(node, dict):
            return node
        text = json.dumps(node, sort_keys=True)
        rebuilt = _rebuild(node, replace)
        if not top and counts.get(text, 0) > 1 and len(text) >= _SHARE_MIN_CHARS:
            if text not in names:
                names[text] = f"d{len(names)}"
                defs[names[text]] = rebuilt
            return {"r": names[text]}
        return rebuilt

    return {k: replace(v, top=True) for k, v in kinds.items()}


def _children(node: dict[str, Any]) -> list[Any]:
    if "p" in node:
        return list(node["p"].values())
    return [node.get("m", node.get("l"))]


def _rebuild(node: dict[str, Any], fn: Any) -> dict[str, Any]:
    if "p" in node:
        return {"p": {k: fn(v) for k, v in node["p"].items()}}
    key = "m" if "m" in node else "l"
    return {key: fn(node[key])}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=False, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed file is not current")
    args = parser.parse_args(argv)
    text = render(build())
    if args.check:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is not current: run hack/generate-field-schemas.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
