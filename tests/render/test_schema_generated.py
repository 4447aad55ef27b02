"""``twp/schema.json`` is what ``twp/schema.py`` makes of the model: a kind added or changed in
``twp/model.py`` without ``make generate`` fails here."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

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


def test_a_changed_kind_changes_the_generated_schema(tmp_path) -> None:
    """The generator really writes the kinds from the model: a file whose kind entries were
    dropped is regenerated whole."""
    data = json.loads(schema.SCHEMA_FILE.read_text())
    data["$defs"]["route"]["properties"]["policies"]["items"]["oneOf"] = []
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(data))
    assert schema.generated_text(path) == schema.SCHEMA_FILE.read_text()


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
