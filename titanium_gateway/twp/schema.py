"""``twp/schema.json``, the document's JSON schema, generated where the model describes it.

The entry of every transform and policy kind (route ``transforms`` and ``policies``: ``kind``
const, ``parameters`` with one property per field) is made from its class in :mod:`.model`
(:func:`titanium_gateway.twp.params.parameters_schema`), as are the schema version and its
``$id``; the rest of the file (routes, clusters, listeners, certificates, the document shapes)
is kept as written. ``make generate`` (``hack/generate.py``) writes the file; ``--check`` exits 1
when the committed file is not what the model gives, and so does
``tests/render/test_schema_generated.py``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from titanium_gateway.twp import model as m
from titanium_gateway.twp.params import parameters_schema

SCHEMA_FILE = Path(__file__).with_name("schema.json")


def kind_entry(cls: type[Any]) -> dict[str, Any]:
    """The schema of one transform or policy: ``{kind: <KIND>, parameters: {...}}``."""
    return {
        "type": "object",
        "properties": {"kind": {"const": cls.KIND}, "parameters": parameters_schema(cls)},
        "additionalProperties": False,
        "required": ["kind", "parameters"],
    }


def _entries(kinds: Iterable[type[Any]]) -> list[dict[str, Any]]:
    return [kind_entry(cls) for cls in kinds]


def generate(base: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` (the schema as written) with what the model decides made from the model."""
    out = copy.deepcopy(dict(base))
    out["$id"] = f"https://titaniumproxy.com/schemas/twp-{m.SCHEMA_VERSION}.json"
    for shape in out["oneOf"]:
        version = shape["properties"].get("schemaVersion")
        if version is not None:
            version["const"] = m.SCHEMA_VERSION
    route = out["$defs"]["route"]["properties"]
    route["transforms"]["items"]["oneOf"] = _entries(m.TRANSFORM_KINDS)
    route["policies"]["items"]["oneOf"] = _entries(m.POLICY_KINDS)
    return out


def text(schema: Mapping[str, Any]) -> str:
    """The file's text (2-space indent, one trailing newline)."""
    return json.dumps(schema, indent=2) + "\n"


def generated_text(path: Path = SCHEMA_FILE) -> str:
    """What the file should hold, given its hand-written parts."""
    return text(generate(json.loads(path.read_text())))
