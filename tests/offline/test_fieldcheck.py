"""Fields unknown to an object's schema (titanium_gateway.offline.fieldcheck) and the schema file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from tests.render.conftest import TESTDATA, case_names
from titanium_gateway.offline import fieldcheck
from titanium_gateway.offline.load import LoadReport, load_manifests

ROOT = Path(__file__).parents[2]
GATEWAY = "gateway.networking.k8s.io"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("generate_field_schemas", ROOT / "hack" / "generate-field-schemas.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_schema_file_is_generated_from_the_chart_crds_and_the_client() -> None:
    gen = _generator()
    committed = json.loads(fieldcheck.SCHEMA_FILE.read_text())
    fresh = gen.build()
    import kubernetes

    assert set(committed["kinds"]) == set(fresh["kinds"])
    assert {k.rsplit("/", 1)[1] for k in committed["kinds"]} >= {
        "GatewayClass", "Gateway", "HTTPRoute", "ReferenceGrant", "Namespace", "Service", "EndpointSlice", "Secret",
        "IngressClass", "Ingress"}
    if committed["sources"]["builtins"] != f"kubernetes Python client {kubernetes.__version__}":
        pytest.skip(f"the file was made with {committed['sources']['builtins']}; this is {kubernetes.__version__}")
    assert gen.render(fresh) == fieldcheck.SCHEMA_FILE.read_text(), "run hack/generate-field-schemas.py"


def test_generator_nodes() -> None:
    gen = _generator()
    assert gen._crd_node({"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {}}}) == 0
    assert gen._crd_node({"type": "object", "additionalProperties": {"type": "object", "properties": {"x": {}}}}) == \
        {"m": {"p": {"x": 0}}}
    assert gen._crd_node({"type": "array", "items": {"type": "string"}}) == {"l": 0}
    assert gen._crd_node({"type": "object"}) == 0


def _route(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GATEWAY}/v1", "kind": "HTTPRoute", "metadata": {"name": "r", "labelz": {}}, "spec": spec,
            "status": {"whatever": 1}}


def test_unknown_fields_are_found_with_their_paths() -> None:
    route = _route(parentRef=[{"name": "gw"}], rules=[{"matches": [{"path": {"value": "/", "typ": "Exact"}}],
                                                        "rulez": 1, "backendRefs": [{"name": "s", "prot": 1}]}],
                   hostnames=["a"])
    assert fieldcheck.unknown_fields(route) == [
        "metadata.labelz", "spec.parentRef", "spec.rules[0].rulez", "spec.rules[0].backendRefs[0].prot",
        "spec.rules[0].matches[0].path.typ"]
    beta = dict(route, apiVersion=f"{GATEWAY}/v1beta1")
    assert fieldcheck.unknown_fields(beta) == fieldcheck.unknown_fields(route)
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "i", "annotations": {"any.thing/x": "y"}, "labels": {"a": "b"}},
               "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {"servce": {}}}]}}], "tls": [{"host": []}]}}
    assert fieldcheck.unknown_fields(ingress) == ["spec.rules[0].http.paths[0].backend.servce", "spec.tls[0].host"]
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"portz": [], "ports": [{"port": 1, "nam": "x"}]}}
    assert fieldcheck.unknown_fields(svc) == ["spec.portz", "spec.ports[0].nam"]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}, "datas": {}, "data": {"tls.crt": "x"}, "type": "t"}
    assert fieldcheck.unknown_fields(secret) == ["datas"]
    eps = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "x"}, "addressType": "IPv4",
           "endpoint": [], "endpoints": [{"addresses": [], "conditions": {"ready": True, "redy": 1}}]}
    assert fieldcheck.unknown_fields(eps) == ["endpoint", "endpoints[0].conditions.redy"]
    # status is the controllers' (never checked); kinds without a schema give nothing; wrong types are not our job
    assert fieldcheck.unknown_fields({"apiVersion": "v1", "kind": "Pod", "metadata": {}, "bogus": 1}) == []
    assert fieldcheck.unknown_fields({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "datta": {}}) == ["datta"]
    assert fieldcheck.unknown_fields(_route(rules="junk", parentRefs=[1, None, {"nme": 1}])) == \
        ["metadata.labelz", "spec.parentRefs[2].nme"]


def test_a_schema_with_maps_and_free_objects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "schemas.json"
    path.write_text(json.dumps({"kinds": {"x/v1/K": {"p": {"spec": {"p": {"free": 0, "byName": {"m": {"r": "d0"}},
                                                                          "list": {"l": {"r": "d0"}}}}}}},
                                "defs": {"d0": {"p": {"a": 0}}}}))
    monkeypatch.setattr(fieldcheck, "SCHEMA_FILE", path)
    fieldcheck.schemas.cache_clear()
    try:
        obj = {"spec": {"free": {"any": {"thing": 1}}, "byName": {"k1": {"a": 1, "b": 2}}, "list": [{"c": 1}]}}
        assert fieldcheck.unknown_fields(obj, "x/v1", "K") == ["spec.byName.k1.b", "spec.list[0].c"]
    finally:
        fieldcheck.schemas.cache_clear()


#: Golden inputs that use fields the chart's (standard channel) CRDs do not have: requestMirror
#: percent and fraction are experimental-channel fields of Gateway API v1.2.1 (standard since
#: v1.3), so an API server with the v1.2.1 standard CRDs drops them; the warning says so.
#: (none: requestMirror percent and fraction, unknown to v1.2.1, are standard since v1.3)
EXPECTED_WARNINGS: dict[str, list[str]] = {
    # a subject alternative name type of no release (what a newer one could add): refused, and named
    "backendtlspolicy-fails-closed": ["spec.validation.subjectAltNames[0].ipAddress"],
}


@pytest.mark.parametrize("case", case_names())
def test_golden_inputs_have_no_unknown_fields(case: str) -> None:
    report = LoadReport()
    load_manifests([TESTDATA / case / "in.yaml"], report)
    assert [w.rsplit("field '", 1)[1].split("'")[0] for w in report.warnings] == EXPECTED_WARNINGS.get(case, [])


def test_examples_have_no_unknown_fields() -> None:
    report = LoadReport()
    load_manifests([ROOT / "examples" / "quickstart", ROOT / "examples" / "https"], report)
    assert report.warnings == [] and report.ignored == []


def test_a_field_of_a_newer_release_is_named_as_such_with_what_the_render_does() -> None:
    assert fieldcheck.newer_field("HTTPRoute", "spec.rules[3].retry") == (
        "Gateway API v1.7 (experimental in v1.6.3)", "not supported, the rule answers 500")
    assert fieldcheck.newer_field("HTTPRoute", "spec.rules[0].sessionPersistence.cookieConfig") is not None
    assert fieldcheck.newer_field("HTTPRoute", "spec.rules[0].rulez") is None
    assert fieldcheck.newer_field("Gateway", "spec.rules[0].retry") is None
    assert fieldcheck.describe_unknown("HTTPRoute", "spec.rules[0].rulez") == "unknown field 'spec.rules[0].rulez'"
    assert fieldcheck.describe_unknown("Gateway", "spec.listeners[1].tls.frontendValidation") == (
        "field 'spec.listeners[1].tls.frontendValidation' is from the Gateway API v1.2.1 experimental channel, newer"
        " than the v1.6.3 standard schemas; not supported, the listener is not accepted")


def _object_with(path: str) -> dict:
    """An object holding ``path`` (``spec.rules[].retry``: ``[]`` is one list item) set to {}."""
    root: dict = {}
    node = root
    keys = path.split(".")
    for i, key in enumerate(keys):
        name, is_list = (key[:-2], True) if key.endswith("[]") else (key, False)
        child: dict = {}
        node[name] = [child] if is_list else child
        if i < len(keys) - 1:
            node = child
    return root


@pytest.mark.parametrize("kind_path", sorted(fieldcheck.NEWER_FIELDS))
def test_every_newer_field_is_unknown_to_the_schemas(kind_path: tuple[str, str]) -> None:
    """An entry the schemas (the chart's CRDs) know is never reached: the table follows the CRDs."""
    kind, path = kind_path
    obj = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, **_object_with(path)}
    assert path.replace("[]", "[0]") in fieldcheck.unknown_fields(obj)
