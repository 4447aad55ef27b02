"""docs/install.md's Values table against charts/titanium-gateway/values.yaml, both ways.

Every key of values.yaml is a row of the table (a map is one entry where the table documents
it as one, e.g. `controller.resources`; otherwise each of its keys is), every key of the table
exists in values.yaml, and each default the table gives is the one values.yaml has.

How a row is read: the first cell lists backticked key paths joined by ` / `; a path starting
with `.` replaces the last segment of the path before it (`controller.kubeApiQps` /
`.kubeApiBurst`). The second cell gives one default per key, joined by ` / ` in the same order,
or one default for every key of the row. A default is the first backticked text of its part,
read as YAML (`true`, `64`, `[]`, `""`, `{requests: {cpu: 100m}}`); a backticked text with a
`<placeholder>` in it, or a part without backticks ("chart appVersion", "empty"), describes
what an empty value stands for, so values.yaml must hold an empty value there ("", [] or {}).

Elsewhere in the user docs (README.md, docs/*.md), a backticked value path (`dataPlane.ports`)
must exist, and a table with Value and Default columns must give the real defaults.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
VALUES = ROOT / "charts" / "titanium-gateway" / "values.yaml"
INSTALL = ROOT / "docs" / "install.md"

EMPTY: tuple[Any, ...] = ("", [], {}, None)
_MISSING = object()


def values() -> dict:
    return yaml.safe_load(VALUES.read_text())


def lookup(tree: dict, path: str) -> Any:
    node: Any = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def leaves(tree: dict, documented: set[str], prefix: str = "") -> list[str]:
    """Every key path of values.yaml that the table must document: a scalar, a list, an empty
    map, or a non-empty map the table documents as one entry; other maps are walked."""
    out = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in documented:
            out.extend(leaves(value, documented, path + "."))
        else:
            out.append(path)
    return out


def split_cells(line: str) -> list[str]:
    """The cells of a Markdown table row; a `|` inside backticks stays in its cell."""
    cells, cell, in_code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += ch
    cells.append(cell.strip())
    return cells


def tables(text: str) -> list[tuple[int, list[str], list[tuple[int, list[str]]]]]:
    """(line number of the header, header cells, [(line number, cells)]) of each table."""
    found = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s|:-]+\|$", lines[i + 1]):
            header_at, header = i + 1, split_cells(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append((i + 1, split_cells(lines[i])))
                i += 1
            found.append((header_at, header, rows))
        else:
            i += 1
    return found


def split_parts(cell: str) -> list[str]:
    """A cell split on ` / ` outside backticks."""
    parts, part, in_code, i = [], "", False, 0
    while i < len(cell):
        if cell[i] == "`":
            in_code = not in_code
        if not in_code and cell.startswith(" / ", i):
            parts.append(part.strip())
            part = ""
            i += 3
            continue
        part += cell[i]
        i += 1
    parts.append(part.strip())
    return parts


def row_keys(cell: str, where: str) -> list[str]:
    keys: list[str] = []
    for part in split_parts(cell):
        m = re.fullmatch(r"`([A-Za-z0-9_.]+)`", part)
        assert m, f"{where}: {part!r} in the Value cell is not one backticked key path"
        key = m.group(1)
        if key.startswith("."):
            assert keys, f"{where}: {key!r} shorthand without a key before it"
            parent = keys[-1].rpartition(".")[0]
            key = parent + key if parent else key[1:]
        keys.append(key)
    return keys


def documented_default(part: str) -> tuple[bool, Any]:
    """(True, value) for a backticked YAML default; (False, text) for a description of what an
    empty value stands for."""
    m = re.search(r"`([^`]*)`", part)
    if not m or "<" in m.group(1):
        return False, part
    return True, yaml.safe_load(m.group(1)) if m.group(1) != "" else ""


def value_rows(text: str, name: str, first_line: int = 1) -> list[tuple[str, list[str], list[str]]]:
    """(where, keys, default parts) of every row of every table with Value and Default columns;
    `first_line` is the line of the file where `text` starts."""
    out = []
    for _, header, rows in tables(text):
        if not header or header[0] != "Value" or "Default" not in header:
            continue
        col = header.index("Default")
        for line, cells in rows:
            where = f"{name}:{line + first_line - 1}"
            keys = row_keys(cells[0], where)
            defaults = split_parts(cells[col])
            assert len(defaults) in (1, len(keys)), (
                f"{where}: {len(keys)} keys but {len(defaults)} defaults ({cells[col]!r}); give one"
                " default per key, or one for all")
            if len(defaults) == 1:
                defaults = defaults * len(keys)
            out.append((where, keys, defaults))
    return out


def install_rows() -> list[tuple[str, list[str], list[str]]]:
    text = INSTALL.read_text()
    section = text.split("\n## Values\n", 1)
    assert len(section) == 2, "docs/install.md has no '## Values' section"
    first_line = section[0].count("\n") + 3
    rows = value_rows(section[1].split("\n## ", 1)[0], "docs/install.md", first_line)
    assert rows, "docs/install.md's Values section has no Value | Default table"
    return rows


def check_default(where: str, key: str, part: str, actual: Any) -> str | None:
    literal, documented = documented_default(part)
    if literal:
        if documented != actual:
            return (f"{where}: `{key}` defaults to {documented!r} in the table but to {actual!r}"
                    " in values.yaml")
    elif actual not in EMPTY:
        return (f"{where}: `{key}` is described as {documented!r} (an empty value's meaning) but"
                f" values.yaml sets {actual!r}: put the default in backticks")
    return None


def test_every_values_key_is_in_the_table() -> None:
    rows = install_rows()
    documented = {key for _, keys, _ in rows for key in keys}
    missing = [k for k in leaves(values(), documented) if k not in documented]
    assert not missing, (
        "values.yaml keys missing from docs/install.md's Values table: "
        + ", ".join(f"`{k}` (values.yaml: {lookup(values(), k)!r})" for k in missing))


def test_every_table_key_exists_with_its_default() -> None:
    tree = values()
    problems = []
    seen: dict[str, str] = {}
    for where, keys, defaults in install_rows():
        for key, part in zip(keys, defaults, strict=True):
            if key in seen:
                problems.append(f"{where}: `{key}` is documented twice (also {seen[key]})")
            seen[key] = where
            actual = lookup(tree, key)
            if actual is _MISSING:
                problems.append(f"{where}: `{key}` (table default {part!r}) is not in values.yaml")
                continue
            problem = check_default(where, key, part, actual)
            if problem:
                problems.append(problem)
    assert not problems, "\n".join(problems)


def user_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", [p.relative_to(ROOT).as_posix() for p in user_docs()])
def test_chart_values_named_in_the_docs_exist(doc: str) -> None:
    """A backticked `controller.x` / `dataPlane.x.y` (a path under a top-level key of
    values.yaml) anywhere in the user docs names a real value; a table with Value and Default
    columns in another doc gives its real default too."""
    tree = values()
    text = (ROOT / doc).read_text()
    problems = []
    for line_no, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r"`([A-Za-z]+(?:\.[A-Za-z]+)+)(?:=[^`]*)?`", line):
            path = m.group(1)
            if path.split(".")[0] in tree and lookup(tree, path) is _MISSING:
                problems.append(f"{doc}:{line_no}: `{path}` is not a value of values.yaml")
    if doc != "docs/install.md":
        for where, keys, defaults in value_rows(text, doc):
            for key, part in zip(keys, defaults, strict=True):
                actual = lookup(tree, key)
                if actual is not _MISSING and (problem := check_default(where, key, part, actual)):
                    problems.append(problem)
    assert not problems, "\n".join(problems)


def test_the_checker_catches_what_it_should() -> None:
    """The parser on a made-up table: shorthand, one default for a group, a stale key, a wrong
    default and a description where a value is set are all reported."""
    text = "\n".join([
        "| Value | Default | Meaning |",
        "|---|---|---|",
        "| `a.b` / `.c` | `1` / `x` | |",
        "| `d.e` / `.f` | empty | |",
        "| `n` / `.m` | `\"\"` | |",
        "| `g` | requests 1 | |",
    ])
    rows = value_rows(text, "t")
    assert [keys for _, keys, _ in rows] == [["a.b", "a.c"], ["d.e", "d.f"], ["n", "m"], ["g"]]
    tree = {"a": {"b": 2, "c": "x"}, "d": {"e": [], "f": {}}, "g": {"requests": 1}, "h": 3,
            "n": "", "m": ""}
    assert check_default("t", "a.b", "`1`", 2) is not None
    assert "1" in check_default("t", "a.b", "`1`", 2) and "2" in check_default("t", "a.b", "`1`", 2)
    assert check_default("t", "a.c", "`x`", "x") is None
    assert check_default("t", "d.e", "empty", []) is None
    assert check_default("t", "g", "requests 1", {"requests": 1}) is not None
    assert check_default("t", "s", "`<fullname>-x`", "") is None
    documented = {k for _, keys, _ in rows for k in keys}
    assert [k for k in leaves(tree, documented) if k not in documented] == ["h"]
    assert lookup(tree, "a.z") is _MISSING
