"""``twp/schema.json``, the document's JSON schema, generated from the model.

Every object of the document is declared once, on its class in :mod:`.model` (its ``DOC``: the
keys, the schema of each value, which the render always writes; the transform and policy kinds
from their fields' rules, :mod:`.params`): the document's three shapes are
:attr:`~titanium_gateway.twp.model.Document.DOC`, ``SPLIT`` and ``PART``, the objects they list
its ``DEFS``. ``make generate`` (``hack/generate.py``) writes the file; ``--check`` exits 1 when
the committed file is not what the model gives, and so does
``tests/render/test_schema_generated.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from titanium_gateway.twp import model as m
from titanium_gateway.twp.params import kind_entry  # noqa: F401  (schema.kind_entry: a kind's entry)

SCHEMA_FILE = Path(__file__).with_name("schema.json")
TITLE = "twp.yaml as rendered by titanium-gateway (root document or part)"


def generate() -> dict[str, Any]:
    """The document's JSON schema (draft 2020-12), made from the model."""
    doc = m.Document
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://titaniumproxy.com/schemas/twp-{m.SCHEMA_VERSION}.json",
        "title": TITLE,
        "$defs": {name: cls.DOC.schema() for name, cls in doc.DEFS.items()},
        "oneOf": [doc.DOC.schema(), doc.SPLIT.schema(), doc.PART.schema()],
    }


def text(schema: Mapping[str, Any]) -> str:
    """The file's text (2-space indent, one trailing newline)."""
    return json.dumps(schema, indent=2) + "\n"


def generated_text() -> str:
    """What the file should hold."""
    return text(generate())
