"""The manifest loader (titanium_gateway.offline.manifests): JSON and YAML, strictness, positions."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from titanium_gateway.offline import manifests as m

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "60"))


class _Reference(yaml.SafeLoader):
    """PyYAML's SafeLoader without the timestamp resolver: what the loader must agree with."""


_Reference.yaml_implicit_resolvers = {
    k: [(t, r) for t, r in v if t != "tag:yaml.org,2002:timestamp"] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _values(text: str, name: str = "in.yaml") -> list[Any]:
    return [doc for doc, _line, _items in m.parse_documents(text, name)]


def _error(text: str, name: str = "in.yaml") -> str:
    with pytest.raises(m.InputError) as info:
        m.parse_documents(text, name)
    return str(info.value)


# --- YAML values: the same as PyYAML's SafeLoader ------------------------------------------------

SCALARS = ["a", "1", "-2", "0x1f", "0o17", "017", "1_000", "1.5", "-.5", ".inf", "-.inf", ".nan", "1e3", "1.0e+3",
           "true", "True", "FALSE", "yes", "No", "on", "OFF", "y", "n", "~", "null", "Null", "", "2024-01-01",
           "2024-01-01T00:00:00Z", "12:30", "190:20:30", "'quoted'", '"dq \\t"', "<<x", "=", "a b", "a: b",
           "'true'", '"1"', "!!str 1", "!!int '7'", "!!float 1", "!!bool yes", "!!null ''", "- x", "x #c"]


@pytest.mark.parametrize("scalar", SCALARS)
def test_scalars_resolve_as_pyyaml_does(scalar: str) -> None:
    text = f"k: {scalar}\nl: [{scalar if not scalar.startswith(('- ', '!!')) else 'z'}]\n"
    try:
        expected = list(yaml.load_all(text, Loader=_Reference))  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        _error(text)
        return
    got = _values(text)
    assert got == expected
    assert [type(v) for d in got for v in d.values()] == [type(v) for d in expected for v in d.values()]


_key = st.text(alphabet="abcxyz-_.0123", min_size=1, max_size=6)
_scalar = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(), st.text(max_size=12),
                    st.floats(allow_nan=False, width=32), st.sampled_from(["yes", "0x10", "1.5", "~", "2024-01-01"]))
_tree = st.recursive(_scalar, lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(_key, kids, max_size=4)),
                     max_leaves=25)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(doc=st.lists(_tree, min_size=1, max_size=3), flow=st.booleans())
def test_generated_yaml_loads_as_pyyaml_loads_it(doc: list[Any], flow: bool) -> None:
    text = yaml.safe_dump_all(doc, default_flow_style=flow, allow_unicode=True)
    assert _values(text) == list(yaml.load_all(text, Loader=_Reference))  # noqa: S506


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(doc=_tree)
def test_generated_json_loads(doc: Any) -> None:
    text = json.dumps({"doc": doc}, indent=1)
    assert _values(text, "in.json") == [json.loads(text)]
    compact = json.dumps([doc])
    assert _values(compact, "in.json") == [json.loads(compact)]


def test_anchors_aliases_merges_and_tags_are_read_like_pyyaml() -> None:
    text = "base: &b {x: 1, y: 2}\nuse: *b\nmerged:\n  <<: *b\n  y: 3\nbin: !!binary aGk=\nset: !!set {a, b}\n"
    assert _values(text) == list(yaml.load_all(text, Loader=_Reference))  # noqa: S506


# --- strictness ----------------------------------------------------------------------------------


def test_duplicate_keys_name_the_line() -> None:
    assert _error("a: 1\nb:\n  c: 1\n  c: 2\n") == "in.yaml: document 1: line 4, column 3: duplicate key 'c'"
    assert _error("a: 1\n---\na: 1\na: 2\n") == "in.yaml: document 2: line 4, column 1: duplicate key 'a'"
    # also when the loader falls back to the node-based path (an alias in the file)
    assert _error("x: &x 1\ny: *x\na: 1\na: 2\n") == "in.yaml: document 1: line 4, column 1: duplicate key 'a'"
    # a merge key may override (YAML 1.1); a key given twice may not
    assert _values("b: &b {x: 1}\nc:\n  <<: *b\n  x: 2\n") == [{"b": {"x": 1}, "c": {"x": 2}}]


def test_documents_run_together_are_an_error_with_a_hint() -> None:
    text = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n"
    msg = _error(text)
    assert "line 4, column 1: duplicate key 'apiVersion' (two documents without --- between them?)" in msg


def test_json_duplicate_keys_name_the_line_and_column() -> None:
    text = '{\n  "a": {"b": 1,\n        "b": 2}\n}\n'
    assert _error(text, "x.json") == "x.json: document 1: line 3, column 9: duplicate key 'b'"
    stream = '{"a": 1}\n{"a": 1, "a": 2}\n'
    assert "x.json: document 2: line 2, column 10: duplicate key 'a'" in _error(stream, "x.json")
    # a key inside a string value is not a key
    assert _values('{"a": "\\"b\\": 1, \\"b\\": 2"}', "x.json") == [{"a": '"b": 1, "b": 2'}]


def test_json_streams_and_errors() -> None:
    assert _values('{"a": 1} {"b": 2}\n[3]', "x.json") == [{"a": 1}, {"b": 2}, [3]]
    msg = _error('{"a": [1}', "x.json")
    assert msg.startswith("x.json: document 1: invalid JSON (line 1, column 9)"), msg
    assert "invalid YAML" in _error('{"a": [1}', "x.yaml")
    # what YAML accepts (a trailing comma) is read, as kubectl's decoder does
    assert _values('{"a": 1,}', "x.json") == [{"a": 1}]
    # JSON-looking text that is YAML (a flow mapping) is YAML unless the file is .json
    assert _values("{a: 1}\n") == [{"a": 1}]


def test_complex_keys_recursive_aliases_and_alias_bombs_are_errors() -> None:
    assert "a mapping key must be a scalar" in _error("? [a, b]\n: 1\n")
    assert "a mapping key must be a scalar" in _error("{[a]: 1}\n")
    assert "recursive alias" in _error("a: &a [*a]\n")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6))
    assert "aliases expand to" in _error(bomb)
    assert "could not determine a constructor for the tag '!Ref'" in _error("a: !Ref x\n")


def test_syntax_errors_name_the_document_and_line() -> None:
    msg = _error("a: 1\n---\nb: [1,\n")
    assert msg.startswith("in.yaml: document 2: invalid YAML (line 4, column 1)")
    assert "invalid YAML (line 1, column 3)" in _error("a:\tb: c\n") or "invalid YAML" in _error("a:\tb: c\n")


def test_files_binary_empty_bom_and_directories(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_bytes(b"\xef\xbb\xbfapiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    (tmp_path / "b.yaml").write_text("# nothing\n---\n")
    (tmp_path / "c.json").write_text("")
    (tmp_path / "notes.txt").write_text("hello")
    notes = m.ReadNotes()
    objs = m.read_manifests([tmp_path], notes)
    assert [o.obj["metadata"]["name"] for o in objs] == ["a"]
    assert notes.empty == [f"{tmp_path / 'b.yaml'}: empty (no objects)", f"{tmp_path / 'c.json'}: empty (no objects)"]
    assert notes.skipped == [f"{tmp_path / 'notes.txt'}: not read (only *.yaml, *.yml and *.json are)"]
    for data in (b"\xff\xfe\x00a", b"kind: \x00", bytes(range(256))):
        bad = tmp_path / "bin.yaml"
        bad.write_bytes(data)
        with pytest.raises(m.InputError, match=r"bin\.yaml: not a UTF-8 text file$"):
            m.read_manifests([bad])
        bad.unlink()
    with pytest.raises(m.InputError, match="nope.yaml: no such file or directory"):
        m.read_manifests([tmp_path / "nope.yaml"])


def test_stdin_text_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("apiVersion: v1\nkind: Namespace\nmetadata: {name: s}\n"))
    assert [x.origin.source for x in m.read_manifests(["-"])] == ["<stdin>"]

    class Binary:
        buffer = io.BytesIO(b"\x80\x81")

    monkeypatch.setattr("sys.stdin", Binary())
    with pytest.raises(m.InputError, match="<stdin>: not a UTF-8 text file"):
        m.read_manifests(["-"])


def test_origins_name_file_document_item_and_line(tmp_path: Path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n"
        "apiVersion: v1\nkind: List\nmetadata: {}\nitems:\n"
        "- apiVersion: v1\n  kind: Namespace\n  metadata: {name: b}\n"
        "- {apiVersion: v1, kind: Namespace, metadata: {name: c}}\n"
    )
    origins = [str(x.origin) for x in m.read_manifests([path])]
    assert origins == [f"{path}:1: document 1", f"{path}:9: document 2, item 1", f"{path}:12: document 2, item 2"]
    js = tmp_path / "in.json"
    js.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}]}))
    assert [str(x.origin) for x in m.read_manifests([js])] == [f"{js}: document 1, item 1"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("kind: Service\nmetadata: {name: x}\n", ":1: document 1: Service without apiVersion"),
        ("apiVersion: v1\nkind: Service\nmetadata: {}\n", "Service without metadata.name"),
        ("- a\n", "expected an object (a mapping), got list"),
        ("apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: [1]}\n", "metadata.namespace must be a string"),
        ("apiVersion: v1\nkind: List\nitems:\n- {kind: A, metadata: {name: x}}\n", ":4: document 1, item 1: A without apiVersion"),
    ],
)
def test_object_checks(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    with pytest.raises(m.InputError, match="in.yaml") as info:
        m.read_manifests([path])
    assert needle in str(info.value)
