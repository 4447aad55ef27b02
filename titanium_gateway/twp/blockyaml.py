"""Block-style YAML of plain data: the one block writer (:class:`BlockWriter`), and with it
the offline render's status and event files, byte for byte what PyYAML writes.

:class:`BlockWriter` writes mappings and lists in block style with the scalars and keys of a
given policy; ``emit`` uses it with the document's scalars for an item it cannot write in flow
style, and :func:`dump` with PyYAML's (below), without PyYAML's Python representer on the
common path.

``dump(value)`` equals ``yaml.dump(value, Dumper=<SafeDumper with multi-line strings as
literal blocks>, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096)``
(the offline render's ``status.yaml``, ``events.yaml``, ``certificates.yaml``). Scalars whose
text is certain (ints, booleans, null, strings of plain characters that no YAML 1.1 resolver
reads as another type) are written directly; other strings are written once by PyYAML and
remembered; anything this writer is not sure of (a multi-line or very long string, a float,
a key that is not a plain string, a type that is not plain data) makes the whole value go
through PyYAML. ``tests/render/test_blockyaml.py`` compares both on the golden statuses and on
generated data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import yaml


class Dumper(yaml.SafeDumper):
    """Block-style YAML; multi-line strings as literal blocks."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


Dumper.add_representer(str, _str_representer)

WIDTH = 4096
#: Strings longer than this go through PyYAML with their document (line folding at WIDTH
#: depends on the column).
_MAX_CACHED = 1024


def pyyaml_dump(value: Any) -> str:
    """The reference: PyYAML's own output."""
    return yaml.dump(value, Dumper=Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=WIDTH)


class Unsure(Exception):
    """A writer met something it does not write itself (the caller lets PyYAML write it)."""


# A string PyYAML writes plain: starts with a letter, only these characters, and not a word
# that YAML 1.1 reads as a boolean or null (a letter-first string with a digit or one of
# "/_.-" is none of the implicit types).
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9/_.-]*")
_LETTERS = re.compile(r"[A-Za-z]+")
_WORDS = frozenset(
    ["yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL"]
)
_cache: dict[str, str] = {}


def _string(value: str) -> str:
    text = _cache.get(value)
    if text is not None:
        return text
    if _PLAIN.fullmatch(value) and not (value in _WORDS and _LETTERS.fullmatch(value)):
        return value
    if "\n" in value or len(value) > _MAX_CACHED:
        raise Unsure
    dumped = pyyaml_dump({"k": value})
    if not dumped.startswith("k: ") or dumped.count("\n") != 1:
        raise Unsure
    text = dumped[3:-1]
    if len(_cache) > 65536:
        _cache.clear()
    _cache[value] = text
    return text


def _scalar(value: Any) -> str:
    t = type(value)
    if t is str:
        return _string(value)
    if t is bool:
        return "true" if value else "false"
    if t is int:
        return str(value)
    if value is None:
        return "null"
    raise Unsure


_keys: dict[str, str] = {}


def _key(key: Any) -> str:
    hit = _keys.get(key) if type(key) is str else None
    if hit is not None:
        return hit
    if type(key) is not str or len(key) >= 128 or not _PLAIN.fullmatch(key) or key in _WORDS:
        raise Unsure  # (PyYAML writes a key of 128 characters or more as "? key")
    if len(_keys) < 4096:
        _keys[key] = key
    return key


class BlockWriter:
    """Writes block YAML into ``out``, each scalar as ``scalar(value)`` and each mapping key as
    ``key(k)`` (either raises :class:`Unsure` for what it does not write). Containers that recur
    (the render shares one conditions list among thousands of routes) are written once per
    indentation and their text reused: the memo keeps a reference to each object, so an id is
    never reused while it is in the memo."""

    def __init__(self, scalar: Callable[[Any], str], key: Callable[[Any], str]) -> None:
        self.scalar, self.key = scalar, key
        self.memo: dict[tuple[int, str, str], tuple[Any, str]] = {}
        #: (line prefix, key) -> "<prefix><key>:"
        self.heads: dict[tuple[str, Any], str] = {}

    def nested(self, value: Any, indent: str, first_prefix: str, kind: str) -> str:
        key = (id(value), indent, first_prefix)
        hit = self.memo.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        out: list[str] = []
        if kind == "m":
            self.mapping(value, indent, out, first_prefix)
        else:
            self.sequence(value, indent, out)
        text = "".join(out)
        self.memo[key] = (value, text)
        return text

    def mapping(self, value: Mapping[str, Any], indent: str, out: list[str], first_prefix: str) -> None:
        """The items of a non-empty mapping; the first line starts with ``first_prefix`` (``"- "``
        inside a list), the others with ``indent``."""
        prefix = first_prefix
        deeper = indent + "  "
        heads, scalar = self.heads, self.scalar
        for k, v in value.items():
            head = heads.get((prefix, k))
            if head is None:
                head = heads[(prefix, k)] = f"{prefix}{self.key(k)}:"
            t = type(v)
            if t is str:
                out.append(f"{head} {scalar(v)}\n")
            elif t is dict or isinstance(v, Mapping):
                if v:
                    out.append(head + "\n")
                    out.append(self.nested(v, deeper, deeper, "m"))
                else:
                    out.append(head + " {}\n")
            elif t is list or t is tuple:
                if v:
                    out.append(head + "\n")
                    out.append(self.nested(v, indent, "", "s"))
                else:
                    out.append(head + " []\n")
            else:
                out.append(f"{head} {scalar(v)}\n")
            prefix = indent

    def sequence(self, value: Any, indent: str, out: list[str]) -> None:
        deeper = indent + "  "
        dash = indent + "- "
        for item in value:
            t = type(item)
            if t is dict or (t is not str and isinstance(item, Mapping)):
                if item:
                    out.append(self.nested(item, deeper, dash, "m"))
                else:
                    out.append(f"{dash}{{}}\n")
            elif t is list or t is tuple:
                raise Unsure  # "- - x": rare, left to PyYAML
            else:
                out.append(f"{dash}{self.scalar(item)}\n")

    def dump(self, value: Any) -> str:
        """``value`` (a mapping or a list) as PyYAML's block style writes it; PyYAML writes
        anything this writer is unsure of."""
        out: list[str] = []
        try:
            t = type(value)
            if t is dict or isinstance(value, Mapping):
                if not value:
                    return "{}\n"
                self.mapping(value, "", out, "")
            elif t is list or t is tuple:
                if not value:
                    return "[]\n"
                self.sequence(value, "", out)
            else:
                raise Unsure
        except Unsure:
            return pyyaml_dump(plain(value))
        return "".join(out)


def dump(value: Any) -> str:
    """``value`` as PyYAML writes it (see the module doc)."""
    return BlockWriter(_scalar, _key).dump(value)


def dump_documents(values: Any) -> str:
    """The values as one multi-document stream (``---`` between documents), each as
    :func:`dump` writes it; containers shared between documents are written once."""
    writer = BlockWriter(_scalar, _key)
    return "".join(("---\n" if i else "") + writer.dump(v) for i, v in enumerate(values))


def plain(value: Any) -> Any:
    """Mappings/tuples (e.g. MappingProxyType) as plain dicts/lists, for PyYAML's dumper."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


__all__ = ["BlockWriter", "Dumper", "Unsure", "dump", "dump_documents", "pyyaml_dump"]
