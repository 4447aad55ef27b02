"""The Gateway API CustomResourceDefinitions the in-process API server serves
(tests/support/apiserver.py): the chart's v1.6.3 standard bundle by default, or what an older
bundle served (``v1_2_1_standard``), for the controller's discovery (controller/gatewayapi.py).

The objects are the chart's CRDs with their schemas cut down to what the controller reads of them
(each version's ``status.supportedFeatures``, where there is one), ``Established``. The in-process
server validates objects against the chart's full schemas (tests/support/crdschema.py) whatever
CRD objects it serves.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from typing import Any

import yaml

from tests.support.crdschema import CRD_DIR

Obj = dict[str, Any]
BUNDLE_VERSION = "gateway.networking.k8s.io/bundle-version"
CHANNEL = "gateway.networking.k8s.io/channel"
#: The five kinds of the v1.2.1 standard bundle
V1_2_1_KINDS = ("GatewayClass", "Gateway", "HTTPRoute", "GRPCRoute", "ReferenceGrant")


def _trimmed(version: Obj) -> Obj:
    status = (((version.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}).get("status") or {}
    features = (status.get("properties") or {}).get("supportedFeatures")
    out = {k: v for k, v in version.items() if k != "schema"}
    props: Obj = {}
    if features is not None:
        props["status"] = {"type": "object", "properties": {"supportedFeatures": features}}
    out["schema"] = {"openAPIV3Schema": {"type": "object", "properties": props}}
    return out


@functools.lru_cache(maxsize=1)
def _chart_crds() -> tuple[Obj, ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out = []
    for f in sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.load_all(f.read_text(), Loader=loader):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                doc["spec"]["versions"] = [_trimmed(v) for v in doc["spec"]["versions"]]
                doc["status"] = {"conditions": [{"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                                                 "message": "the initial names have been accepted"}],
                                 "acceptedNames": {"kind": doc["spec"]["names"]["kind"],
                                                   "plural": doc["spec"]["names"]["plural"]},
                                 "storedVersions": [v["name"] for v in doc["spec"]["versions"] if v.get("storage")]}
                out.append(doc)
    return tuple(out)


def kind_of(crd: Obj) -> str:
    return str(crd["spec"]["names"]["kind"])


def chart_crds(kinds: Iterable[str] | None = None) -> list[Obj]:
    """The chart's CRDs (v1.6.3 standard), of ``kinds`` only when given."""
    wanted = set(kinds) if kinds is not None else None
    return [copy.deepcopy(c) for c in _chart_crds() if wanted is None or kind_of(c) in wanted]


def serving(crd: Obj, **served: bool) -> Obj:
    """``crd`` with the ``served`` flag of the named versions set (``v1beta1=False``)."""
    out = copy.deepcopy(crd)
    for v in out["spec"]["versions"]:
        if v["name"] in served:
            v["served"] = served[v["name"]]
    return out


def v1_2_1_standard() -> list[Obj]:
    """What the v1.2.1 standard bundle serves: five kinds, ReferenceGrant v1beta1 only (v1 arrived
    in v1.5), no GatewayClass ``status.supportedFeatures``."""
    out = []
    for crd in chart_crds(V1_2_1_KINDS):
        crd["metadata"]["annotations"][BUNDLE_VERSION] = "v1.2.1"
        if kind_of(crd) == "ReferenceGrant":
            crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
            crd["spec"]["versions"][0]["storage"] = True
        for v in crd["spec"]["versions"]:
            v["schema"] = {"openAPIV3Schema": {"type": "object", "properties": {}}}
        out.append(crd)
    return out


__all__ = ["V1_2_1_KINDS", "chart_crds", "kind_of", "serving", "v1_2_1_standard"]
