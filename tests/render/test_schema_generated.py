"""``twp/schema.json`` is what ``twp/schema.py`` makes of the model: a kind added or changed in
``twp/model.py`` without ``make generate`` fails here."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from titanium_gateway.twp import model as m
from titanium_gateway.twp import params, schema

ROOT = Path(__file__).parents[2]


def test_the_committed_schema_is_the_generated_one() -> None:
    assert schema.SCHEMA_FILE.read_text() == schema.generated_text(), \
        "twp/schema.json is stale: run `make generate` (hack/generate.py)"


def test_the_check_mode_agrees() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "hack" / "generate.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_a_changed_kind_changes_the_generated_schema(monkeypatch) -> None:
    """The generator really writes the kinds from the model: a kind left out of the model's
    table is left out of the schema."""
    monkeypatch.setattr(m, "POLICY_KINDS", m.POLICY_KINDS[:-1])
    policies = schema.generate()["$defs"]["route"]["properties"]["policies"]["items"]["oneOf"]
    assert [p["properties"]["kind"]["const"] for p in policies] == [c.KIND for c in m.POLICY_KINDS]


def test_every_object_of_the_schema_is_its_model_class_s_declaration() -> None:
    """Nothing of the schema is written by hand: each ``$defs`` entry and each document shape
    is the ``DOC`` of its class, key by key."""
    made = schema.generate()
    for name, cls in m.Document.DEFS.items():
        entry = made["$defs"][name]
        assert list(entry["properties"]) == list(cls.DOC.keys)
        assert entry.get("required", []) == list(cls.DOC.required)
    assert [s["title"] for s in made["oneOf"]] == [o.extra["title"] for o in
                                                    (m.Document.DOC, m.Document.SPLIT, m.Document.PART)]
    route = made["$defs"]["route"]
    assert route["oneOf"] == [{"required": [a.KEY]} for a in m.ACTION_KINDS]
    assert route["properties"]["match"]["properties"]["pathKind"]["enum"] == list(m.Match.DOC["pathKind"].values)


def test_a_key_declared_on_the_model_is_in_the_schema(monkeypatch) -> None:
    """A key added to a class's declaration appears in the generated schema (and the committed
    file is stale until ``make generate``)."""
    doc = m.Listener.DOC
    monkeypatch.setattr(m.Listener, "DOC", params.Obj({**doc.keys_, "backlog": params.Key(params.integer(1))}))
    listener = schema.generate()["$defs"]["listener"]
    assert list(listener["properties"]) == ["host", "port", "type", "decryptSsl", "backlog"]
    assert listener["properties"]["backlog"] == {"type": "integer", "minimum": 1}
    assert schema.text(schema.generate()) != schema.SCHEMA_FILE.read_text()


def _golden_files() -> list[Path]:
    data = ROOT / "tests" / "render" / "testdata"
    return sorted([*data.glob("*/twp.yaml"), *data.glob("*/twp.part-*.yaml"),
                   *data.glob("*/gateways/*/twp.yaml"), *data.glob("*/gateways/*/twp.part-*.yaml")])


def test_every_golden_document_validates_against_the_generated_schema() -> None:
    """The generated schema accepts what the render emits: every golden ``twp.yaml`` and part."""
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(schema.generate())
    files = _golden_files()
    assert len(files) > 100
    bad = {}
    for path in files:
        errors = list(validator.iter_errors(yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)))  # noqa: S506
        if errors:
            bad[str(path.relative_to(ROOT))] = errors[0].message
    assert not bad


@pytest.mark.parametrize("cls", [*m.TRANSFORM_KINDS, *m.POLICY_KINDS], ids=lambda c: c.KIND)
def test_every_parameter_declares_its_rule(cls: type) -> None:
    assert [p.name for p in params.layout(cls)] == [f.name for f in dataclasses.fields(cls)]


def test_a_kind_field_without_a_rule_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Loose:
        KIND: ClassVar[str] = "Loose"
        name: str

    with pytest.raises(TypeError, match="no parameter rule"):
        params.layout(Loose)


def _objects(data: object, node: object, path: tuple, out: dict) -> None:
    """Each object the model declares (``params.Obj``) met in a parsed document: its first
    occurrence, by declaration."""
    if callable(node) and not isinstance(node, params.Obj):
        return  # a list of transforms or policies: their rules are tested on their own
    if isinstance(node, dict) and "$ref" in node:
        node = m.Document.DEFS[node["$ref"].rsplit("/", 1)[1]].DOC
    if isinstance(node, params.Obj) and isinstance(data, dict):
        out.setdefault(id(node), (node, path))
        for key, value in data.items():
            _objects(value, node[key].schema, (*path, key), out)
    elif isinstance(node, dict) and node.get("type") == "array" and isinstance(data, list):
        for i, item in enumerate(data):
            _objects(item, node["items"], (*path, i), out)


def _at(doc: dict, path: tuple) -> dict:
    for step in path:
        doc = doc[step]
    return doc


def test_the_reader_allows_and_requires_the_keys_the_model_declares() -> None:
    """The reader's tables are the model's: for each object the goldens hold, a key the class
    does not declare is an unknown field and a key it makes the reader require is missing."""
    from titanium_gateway.twp.load import ConfigError, load_config

    found: dict = {}
    docs = []  # (a root document, its parts' bytes): a split root's objects are changed, its parts not
    for path in _golden_files():
        if path.name == "twp.yaml":
            doc = yaml.safe_load(path.read_bytes())
            parts = {p.name: p.read_bytes() for p in path.parent.glob("twp.part-*.yaml")}
            docs.append((doc, parts))
            _objects(doc, m.Document.SPLIT if "include" in doc else m.Document.DOC, (len(docs) - 1,), found)
    declared = {id(cls.DOC) for cls in m.Document.DEFS.values()}
    assert declared <= set(found), "a golden case for each object of the document"
    assert len(found) >= 15
    for node, path in found.values():
        base, parts = docs[path[0]]
        for change, reason in [("unknown", "unknown field"),
                               *((key, f"missing required field {key!r}") for key in node.read_required
                                 if not (node is m.Document.SPLIT and key == "include"))]:  # (its mark)
            doc = copy.deepcopy(base)
            target = _at(doc, path[1:])
            if change == "unknown":
                target["someKeyNobodyDeclared"] = "x"
            else:
                del target[change]
            with pytest.raises(ConfigError) as err:
                load_config(yaml.safe_dump(doc).encode(), parts)
            assert err.value.reason == reason, (path, change, err.value)
