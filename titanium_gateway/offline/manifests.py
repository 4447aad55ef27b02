"""Manifest files -> documents -> objects, each with where it came from.

The offline commands (``render``, ``migrate-ingress``) read Kubernetes manifests the way
``kubectl apply -f`` does, strictly:

* a path is a file, a directory (its ``*.yaml``, ``*.yml`` and ``*.json``, sorted by name, not
  recursive) or ``-`` for stdin;
* a file is JSON (one value or a stream of values) or YAML (one or more documents);
  ``kind: List`` (any ``*List`` with ``items``) is unwrapped;
* a duplicate mapping key is an error naming the file and line (kubectl rejects it too; with
  YAML it is most often two documents run together without ``---``);
* a file that is not UTF-8 text is an error; an empty file is noted.

JSON is read with :mod:`json`. YAML goes through libyaml's parser (``yaml._yaml.CParser``)
and a small constructor of our own working on its events (the common case: no anchors,
aliases, merge keys or explicit collection tags); anything else falls back to PyYAML's
``SafeLoader`` machinery with the same checks. Timestamps stay strings, as the API server keeps
them. Every failure is an :class:`InputError` whose message names the file and position.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml import events as _ev
from yaml import nodes as _nodes

try:  # libyaml's parser (a C extension of PyYAML)
    from yaml._yaml import CParser as _CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _CParser = None

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: A YAML document may expand through its aliases to this many nodes, or to 4 times the nodes
#: it holds, whichever is more (a "billion laughs" document is a few hundred bytes that
#: expands to 10^9 nodes; a dump that shares a few lists is far below).
MAX_ALIAS_EXPANSION = 1_000_000
ALIAS_EXPANSION_FACTOR = 4

_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class InputError(Exception):
    """Bad input: an unreadable or invalid file, a duplicate key, an object without
    apiVersion/kind/name. The message names the file and the position."""


class Origin:
    """Where an object was read: file, document (from 1), List item (from 1), line (from 1)."""

    __slots__ = ("source", "document", "item", "line")

    def __init__(self, source: str, document: int, item: int | None = None, line: int | None = None) -> None:
        self.source, self.document, self.item, self.line = source, document, item, line

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Origin) and (self.source, self.document, self.item, self.line) == (
            other.source, other.document, other.item, other.line)

    def __hash__(self) -> int:
        return hash((self.source, self.document, self.item, self.line))

    def __repr__(self) -> str:
        return f"Origin({self.source!r}, {self.document}, {self.item}, {self.line})"

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        text = f"{where}: document {self.document}"
        if self.item is not None:
            text += f", item {self.item}"
        return text


class Manifest:
    """One object of the input and its origin."""

    __slots__ = ("obj", "origin")

    def __init__(self, obj: dict[str, Any], origin: Origin) -> None:
        self.obj, self.origin = obj, origin

    def __repr__(self) -> str:
        return f"Manifest({self.obj.get('kind')!r}, {self.origin})"


@dataclass
class Source:
    """One input file: its display name and text (``None`` when it was not read)."""

    name: str
    text: str


@dataclass
class ReadNotes:
    """What reading noticed besides the objects: empty files, files a directory held that are
    not manifests."""

    empty: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


# --- files ------------------------------------------------------------------------------------


def _decode(name: str, data: bytes) -> str:
    if b"\x00" in data:
        raise InputError(f"{name}: not a UTF-8 text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not a UTF-8 text file") from None
    return text[1:] if text.startswith("\ufeff") else text


def _read_stdin() -> bytes | str:
    buffer = getattr(sys.stdin, "buffer", None)
    return buffer.read() if buffer is not None else sys.stdin.read()


def read_sources(path: str | Path, notes: ReadNotes | None = None) -> list[Source]:
    """The manifest files one ``-f`` argument names, read and decoded (in order)."""
    notes = notes if notes is not None else ReadNotes()
    text_path = str(path)
    if text_path == "-":
        data = _read_stdin()
        return [Source("<stdin>", data if isinstance(data, str) else _decode("<stdin>", data))]
    p = Path(text_path)
    if p.is_dir():
        files = []
        for child in sorted(p.iterdir(), key=lambda c: c.name):
            if child.is_file() and child.name.endswith(MANIFEST_SUFFIXES):
                files.append(child)
            elif child.is_file():
                notes.skipped.append(f"{child}: not read (only *.yaml, *.yml and *.json are)")
    elif p.exists():
        files = [p]
    else:
        raise InputError(f"{text_path}: no such file or directory")
    out = []
    for f in files:
        try:
            data = f.read_bytes()
        except OSError as exc:
            raise InputError(f"{f}: cannot read: {exc.strerror or exc}") from None
        out.append(Source(str(f), _decode(str(f), data)))
    return out


# --- JSON -------------------------------------------------------------------------------------


class _DuplicateKey(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]], dict: type = dict, len: Any = len) -> dict[str, Any]:  # noqa: A002
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _DuplicateKey
    return d


_JSON_DECODER = json.JSONDecoder(object_pairs_hook=_pairs)
_JSON_WS = re.compile(r"[ \t\n\r]*")
# A JSON string (unrolled: fast on long strings) or a bracket.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]')


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _json_duplicate(text: str, start: int) -> tuple[int, int, str] | None:
    """``(line, column, key)`` of the first duplicate key of an object in ``text[start:]``."""
    stack: list[set[str] | None] = []
    ws = _JSON_WS.match
    for m in _JSON_TOKEN.finditer(text, start):
        tok = m.group()
        c = tok[0]
        if c == "{":
            stack.append(set())
        elif c == "[":
            stack.append(None)
        elif c == "}" or c == "]":
            if stack:
                stack.pop()
        else:
            keys = stack[-1] if stack else None
            if keys is not None and text.startswith(":", ws(text, m.end()).end()):
                key = json.loads(tok)
                if key in keys:
                    line, col = _line_col(text, m.start())
                    return line, col, key
                keys.add(key)
    return None


def _duplicate_message(source: str, document: int, line: int, col: int, key: str) -> str:
    return f"{source}: document {document}: line {line}, column {col}: {_duplicate_text(key)}"


def _parse_json(text: str, source: str) -> list[tuple[Any, int | None, list[int]]]:
    docs: list[tuple[Any, int | None, list[int]]] = []
    pos = _JSON_WS.match(text).end()
    while pos < len(text):
        try:
            value, end = _JSON_DECODER.raw_decode(text, pos)
        except _DuplicateKey:
            found = _json_duplicate(text, pos)
            line, col, key = found if found is not None else (*_line_col(text, pos), "?")
            raise InputError(_duplicate_message(source, len(docs) + 1, line, col, key)) from None
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{source}: document {len(docs) + 1}: invalid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
            ) from None
        except RecursionError:
            raise InputError(f"{source}: document {len(docs) + 1}: nested too deeply") from None
        docs.append((value, None, []))
        pos = _JSON_WS.match(text, end).end()
    return docs


def _looks_like_json(text: str) -> bool:
    m = _JSON_WS.match(text)
    return text[m.end() : m.end() + 1] in ("{", "[")


# --- YAML: libyaml events, our constructor -----------------------------------------------------

#: PyYAML's YAML 1.1 implicit resolvers, without the timestamp one (timestamps stay strings).
_RESOLVERS: dict[Any, list[tuple[str, Any]]] = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_SCALAR_CONSTRUCTORS = {
    tag: fn
    for tag, fn in yaml.SafeLoader.yaml_constructors.items()
    if tag
    in (
        "tag:yaml.org,2002:null",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:binary",
        _TIMESTAMP_TAG,
    )
}


class _Fallback(Exception):
    """The event constructor met an anchor alias, a merge key or an explicit tag: the file is
    read again by the node-based loader."""


class _YAMLProblem(Exception):
    """A problem found by our constructor (or libyaml's parser), with its position."""

    def __init__(self, message: str, line: int, column: int, document: int = 0) -> None:
        super().__init__(message)
        self.line, self.column, self.document = line, column, document


def _syntax_problem(exc: yaml.YAMLError, document: int) -> _YAMLProblem:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    return _YAMLProblem(f"invalid YAML: {problem}", line, column, document)


_NO_KEY = object()


def _scalar(value: str, tag: str | None, plain: bool, cache: dict[str, Any]) -> Any:
    if tag is None or tag == "!":
        if not plain:
            return value
        hit = cache.get(value, _NO_KEY)
        if hit is not _NO_KEY:
            return hit
        for rtag, rx in _RESOLVERS.get(value[:1], ()):
            if rx.match(value):
                tag = rtag
                break
        else:
            for rtag, rx in _RESOLVERS.get(None, ()):
                if rx.match(value):
                    tag = rtag
                    break
            else:
                cache[value] = value
                return value
        result = _construct_scalar(value, tag)
        cache[value] = result
        return result
    if tag == _STR_TAG:
        return value
    return _construct_scalar(value, tag)


def _construct_scalar(value: str, tag: str) -> Any:
    fn = _SCALAR_CONSTRUCTORS.get(tag)
    if fn is None:
        raise _Fallback  # a merge key, a custom tag, ...: the node loader decides
    return fn(_CONSTRUCTOR, _nodes.ScalarNode(tag, value))


def _parse_yaml_events(text: str) -> list[tuple[Any, int | None, list[int]]]:
    """Every document of ``text``: ``(value, line of its root, lines of its top-level list's
    items)``. Raises :class:`_Fallback` or :class:`_YAMLProblem` (or yaml.YAMLError from libyaml)."""
    assert _CParser is not None
    parser = _CParser(text)
    get = parser.get_event
    Scalar, MapStart, MapEnd = _ev.ScalarEvent, _ev.MappingStartEvent, _ev.MappingEndEvent
    SeqStart, SeqEnd, Alias = _ev.SequenceStartEvent, _ev.SequenceEndEvent, _ev.AliasEvent
    DocStart, DocEnd = _ev.DocumentStartEvent, _ev.DocumentEndEvent
    docs: list[tuple[Any, int | None, list[int]]] = []
    cache: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = []
    top: Any = None
    key: Any = _NO_KEY
    root: Any = None
    root_line: int | None = None
    item_lines: list[int] = []
    try:
        while True:
            ev = get()
            if ev is None:
                break
            cls = ev.__class__
            if cls is Scalar:
                value = _scalar(ev.value, ev.tag, ev.implicit[0], cache)
            elif cls is MapStart or cls is SeqStart:
                if ev.tag is not None and ev.tag != "!":
                    raise _Fallback
                if top is None:
                    root_line = ev.start_mark.line + 1
                elif type(top) is dict and key is _NO_KEY:
                    m = ev.start_mark
                    raise _YAMLProblem("a mapping key must be a scalar", m.line + 1, m.column + 1, len(docs) + 1)
                elif len(stack) == 2 and type(top) is list and stack[-1][1] == "items":
                    item_lines.append(ev.start_mark.line + 1)
                stack.append((top, key))
                if cls is MapStart:
                    top, key = {}, _NO_KEY
                else:
                    top, key = [], None
                continue
            elif cls is MapEnd or cls is SeqEnd:
                value = top
                top, key = stack.pop()
            elif cls is Alias:
                raise _Fallback
            elif cls is DocStart:
                root, root_line, item_lines = None, None, []
                continue
            elif cls is DocEnd:
                docs.append((root, root_line, item_lines))
                continue
            else:  # stream start / end
                continue
            if top is None:
                root = value
                if root_line is None:
                    root_line = ev.start_mark.line + 1
            elif key is None:
                top.append(value)
            elif key is _NO_KEY:
                if value in top:
                    m = ev.start_mark
                    raise _YAMLProblem(_duplicate_text(value), m.line + 1, m.column + 1, len(docs) + 1)
                key = value
            else:
                top[key] = value
                key = _NO_KEY
    except yaml.YAMLError as exc:
        raise _syntax_problem(exc, len(docs) + 1) from None
    finally:
        parser.dispose()
    return docs


def _duplicate_text(key: Any) -> str:
    hint = " (two documents without --- between them?)" if key in ("apiVersion", "kind", "metadata") else ""
    return f"duplicate key {key!r}{hint}"


# --- YAML: the node-based loader (anchors, aliases, merge keys, tags) ---------------------------

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _NodeLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """A SafeLoader (libyaml's parser when available) that keeps timestamps as strings and
    rejects duplicate keys (merge keys may still override, as in YAML 1.1)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, _nodes.MappingNode):
            seen = set()
            for key_node, _value in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                if not isinstance(key_node, _nodes.ScalarNode):
                    m = key_node.start_mark
                    raise _YAMLProblem("a mapping key must be a scalar", m.line + 1, m.column + 1)
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    m = key_node.start_mark
                    raise _YAMLProblem(_duplicate_text(key), m.line + 1, m.column + 1)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_NodeLoader.yaml_implicit_resolvers = _RESOLVERS


def _expansion(node: Any, sizes: dict[int, int], active: set[int]) -> int:
    """Nodes ``node`` stands for once every alias is expanded (iterative; raises on a cycle)."""
    todo: list[tuple[Any, bool]] = [(node, False)]
    while todo:
        n, done = todo.pop()
        ident = id(n)
        if done:
            active.discard(ident)
            if isinstance(n, _nodes.MappingNode):
                total = 1 + sum(sizes[id(k)] + sizes[id(v)] for k, v in n.value)
            else:
                total = 1 + sum(sizes[id(c)] for c in n.value)
            sizes[ident] = total
            continue
        if ident in sizes:
            continue
        if isinstance(n, _nodes.ScalarNode):
            sizes[ident] = 1
            continue
        if ident in active:
            m = n.start_mark
            raise _YAMLProblem("a recursive alias (a node that contains itself)", m.line + 1, m.column + 1)
        active.add(ident)
        todo.append((n, True))
        children = [c for pair in n.value for c in pair] if isinstance(n, _nodes.MappingNode) else n.value
        todo.extend((c, False) for c in children if id(c) not in sizes)
    total = sizes[id(node)]
    limit = max(MAX_ALIAS_EXPANSION, ALIAS_EXPANSION_FACTOR * len(sizes))
    if total > limit:
        m = node.start_mark
        raise _YAMLProblem(f"aliases expand to {total} nodes, more than {limit}", m.line + 1, m.column + 1)
    return total


def _parse_yaml_nodes(text: str) -> list[tuple[Any, int | None, list[int]]]:
    loader = _NodeLoader(text)
    docs: list[tuple[Any, int | None, list[int]]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            _expansion(node, {}, set())
            lines: list[int] = []
            if isinstance(node, _nodes.MappingNode):
                for k, v in node.value:
                    if getattr(k, "value", None) == "items" and isinstance(v, _nodes.SequenceNode):
                        lines = [c.start_mark.line + 1 for c in v.value]
            docs.append((loader.construct_document(node), node.start_mark.line + 1, lines))
    except _YAMLProblem as exc:
        exc.document = exc.document or len(docs) + 1
        raise
    except yaml.YAMLError as exc:
        raise _syntax_problem(exc, len(docs) + 1) from None
    except RecursionError:
        raise _YAMLProblem("nested too deeply", 0, 0, len(docs) + 1) from None
    finally:
        loader.dispose()
    return docs


def _parse_yaml(text: str, source: str) -> list[tuple[Any, int | None, list[int]]]:
    try:
        try:
            if _CParser is None:
                raise _Fallback
            return _parse_yaml_events(text)
        except _Fallback:
            return _parse_yaml_nodes(text)
    except _YAMLProblem as exc:
        text_ = str(exc)
        if text_.startswith(_INVALID):
            where = f" (line {exc.line}, column {exc.column})" if exc.line else ""
            message = f"invalid YAML{where}: {text_[len(_INVALID):]}"
        else:
            message = (f"line {exc.line}, column {exc.column}: " if exc.line else "") + text_
        raise InputError(f"{source}: document {exc.document or 1}: {message}") from None


_INVALID = "invalid YAML: "


# --- documents -> objects ----------------------------------------------------------------------


def parse_documents(text: str, source: str) -> list[tuple[Any, int | None, list[int]]]:
    """Every document of one file: ``(value, line, item lines)`` (lines from 1; ``None`` /
    empty for JSON). JSON-looking text (``{`` or ``[`` first) is read as JSON; when it is not
    valid JSON it is read as YAML (a flow mapping is YAML too), and a ``.json`` file reports
    the JSON error."""
    if _looks_like_json(text):
        try:
            return _parse_json(text, source)
        except InputError as json_error:
            if "duplicate key" in str(json_error):
                raise
            try:
                return _parse_yaml(text, source)
            except InputError:
                if source.endswith(".json"):
                    raise json_error from None
                raise
    return _parse_yaml(text, source)


def _check_object(obj: Any, where: Origin) -> dict[str, Any]:
    if type(obj) is dict:
        meta = obj.get("metadata")
        if (type(obj.get("apiVersion")) is str and obj["apiVersion"] and type(obj.get("kind")) is str and obj["kind"]
                and type(meta) is dict and type(meta.get("name")) is str and meta["name"]
                and type(meta.get("namespace", "")) is str):
            return obj  # the common case, checked in one go
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected an object (a mapping), got {type(obj).__name__}")
    missing = [k for k in ("apiVersion", "kind") if not isinstance(obj.get(k), str) or not obj.get(k)]
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        missing.append("metadata.name")
    if missing:
        kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "object"
        raise InputError(f"{where}: {kind} without {', '.join(missing)}")
    assert isinstance(meta, dict)
    if meta.get("namespace") is not None and not isinstance(meta["namespace"], str):
        raise InputError(f"{where}: metadata.namespace must be a string")
    return obj


def is_list(doc: Any) -> bool:
    """A ``kind: List`` (or any ``*List``) with ``items``: kubectl's multi-object form."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("kind"), str)
        and doc["kind"].endswith("List")
        and isinstance(doc.get("items"), list)
    )


def iter_objects(source: Source, notes: ReadNotes | None = None) -> Iterator[Manifest]:
    """The objects of one file, ``List`` items unwrapped, each checked for apiVersion, kind
    and metadata.name."""
    name = source.name
    count = 0
    for index, (doc, line, item_lines) in enumerate(parse_documents(source.text, name), start=1):
        if doc is None:
            continue  # an empty document (e.g. a trailing ---)
        if is_list(doc):
            for item_index, item in enumerate(doc["items"], start=1):
                item_line = item_lines[item_index - 1] if item_index <= len(item_lines) else None
                where = Origin(name, index, item_index, item_line)
                count += 1
                yield Manifest(_check_object(item, where), where)
        else:
            where = Origin(name, index, None, line)
            count += 1
            yield Manifest(_check_object(doc, where), where)
    if count == 0 and notes is not None:
        notes.empty.append(f"{name}: empty (no objects)")


def read_manifests(paths: Sequence[str | Path], notes: ReadNotes | None = None) -> list[Manifest]:
    """Every object of the files and directories in ``paths``, in order (raises InputError)."""
    notes = notes if notes is not None else ReadNotes()
    out: list[Manifest] = []
    for path in paths:
        for source in read_sources(path, notes):
            out.extend(iter_objects(source, notes))
    return out


__all__ = [
    "InputError",
    "Manifest",
    "Origin",
    "ReadNotes",
    "Source",
    "is_list",
    "iter_objects",
    "parse_documents",
    "read_manifests",
    "read_sources",
]
