"""The rules of a transform's or policy's parameters: what each field of a kind class in
:mod:`.model` is written as, and what the contract requires of it.

A kind class declares each field with :func:`param` and one of the rules below; from them

* the reader (:func:`titanium_gateway.twp.load.load_config`) checks a value read (strict reads
  only: a generated document is read with the type checks alone);
* the schema generator (:mod:`.schema`) writes the field's entry of ``twp/schema.json``.

A field's Python type says how it is written (``{kind, parameters}``: every parameter a string,
an int in decimal, a tuple a non-empty list of strings); its rule says the rest: the JSON schema
of the string (of each item, for a tuple) and the check, which returns why a value is not
valid (None when it is). An int field's rule gives its smallest value instead.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from titanium_gateway.twp.regex import compiled

#: a TimeSpan ``[d.]hh:mm:ss[.fff]``: the check, and the same as the schema's pattern
_TIMESPAN = re.compile(r"^(?:([0-9]+)\.)?([0-9]{2}):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]{3}))?$")
TIMESPAN_PATTERN = r"^([0-9]+\.)?[0-9]{2}:[0-5][0-9]:[0-5][0-9](\.[0-9]{3})?$"
HEADER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$")
_HTTP_URL = re.compile(r"^https?://[^/@\s]+(/\S*)?$")


@functools.lru_cache(maxsize=4096)
def timespan_seconds(text: str) -> float:
    """A TimeSpan ``[d.]hh:mm:ss[.fff]`` in seconds; raises ValueError when it is not one."""
    t = _TIMESPAN.match(text)
    if t is None:
        raise ValueError(f"{text!r} is not a TimeSpan [d.]hh:mm:ss[.fff]")
    days, hours, minutes, seconds, millis = t.groups()
    return (int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + int(seconds)
            + int(millis or 0) / 1000)


def timespan_problem(text: str) -> str | None:
    """Why ``text`` is not a duration the document may hold (None: it is one)."""
    if not text:
        return "must not be empty"
    try:
        total = timespan_seconds(text)
    except ValueError as exc:
        return str(exc)
    return "a zero duration is never emitted (the field is omitted instead)" if total <= 0 else None


def _nonempty(text: str) -> str | None:
    return None if text else "must not be empty"


def _header_name(text: str) -> str | None:
    return None if HEADER_NAME_PATTERN.match(text) else f"{text!r} is not a header name"


def _header_value(text: str) -> str | None:
    return "a header value cannot hold CR, LF or NUL" if any(c in text for c in "\r\n\0") else None


def _absolute_path(text: str) -> str | None:
    if not text:
        return "must not be empty"
    return None if text.startswith("/") else f"{text!r} does not start with /"


def _regex(text: str) -> str | None:
    if not text:
        return "must not be empty"
    try:
        compiled(text)
    except re.error as exc:
        return f"the regular expression does not compile: {exc}"
    return None


def _network(text: str) -> str | None:
    try:
        ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return f"{text!r} is not an address or CIDR prefix"
    return None


def _http_url(text: str) -> str | None:
    if not text:
        return "must not be empty"
    return None if _HTTP_URL.match(text) else f"{text!r} is not an absolute http or https URL without credentials"


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter's rule: the JSON schema of its string (a tuple field: of each item) and the
    contract's check of a value read; an int field's smallest value."""

    schema: Mapping[str, Any]
    check: Callable[[str], str | None] | None = None
    minimum: int = 0


_STRING_SCHEMA = MappingProxyType({"type": "string"})
_NONEMPTY_SCHEMA = MappingProxyType({"type": "string", "minLength": 1})

#: any string
TEXT = Param(_STRING_SCHEMA)
#: a header name (an RFC 9110 token)
HEADER_NAME = Param(_NONEMPTY_SCHEMA, _header_name)
#: a header value: no CR, LF or NUL
HEADER_VALUE = Param(_STRING_SCHEMA, _header_value)
#: a host name (any non-empty string: the data plane sends it as it is)
HOST = Param(_NONEMPTY_SCHEMA, _nonempty)
#: a path that starts with ``/``
PATH = Param(MappingProxyType({"type": "string", "pattern": "^/"}), _absolute_path)
#: a path prefix that starts with ``/``
PATH_PREFIX = Param(_NONEMPTY_SCHEMA, _absolute_path)
#: a regular expression of the data plane's dialect (:mod:`.regex`)
REGEX = Param(_NONEMPTY_SCHEMA, _regex)
#: a TimeSpan longer than zero
TIMESPAN = Param(MappingProxyType({"type": "string", "pattern": TIMESPAN_PATTERN}), timespan_problem)
#: an address or CIDR prefix
NETWORK = Param(_NONEMPTY_SCHEMA, _network)
#: a non-empty string
NONEMPTY = Param(_NONEMPTY_SCHEMA, _nonempty)
#: an absolute http(s) URL without credentials
HTTP_URL = Param(_NONEMPTY_SCHEMA, _http_url)
#: an int of 0 or more / 1 or more
COUNT = Param(_STRING_SCHEMA)
POSITIVE = Param(_STRING_SCHEMA, minimum=1)

_KEY = "twp"


def param(rule: Param) -> Any:
    """The dataclass field of a kind class's parameter with its rule."""
    return dataclasses.field(metadata={_KEY: rule})


@dataclass(frozen=True, slots=True)
class Layout:
    """A parameter of a kind: its field name, document key, written type and rule."""

    name: str
    key: str
    type: type  # str | int | tuple
    rule: Param


def twp_key(name: str) -> str:
    """A field name as the document's key: ``path_kind`` -> ``pathKind``."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@functools.cache
def layout(cls: type[Any]) -> tuple[Layout, ...]:
    """The parameters of a transform or policy class, in field order."""
    import typing

    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        written = tuple if typing.get_origin(hint) is tuple else hint
        if written not in (str, int, tuple):
            raise TypeError(f"{cls.__name__}.{f.name}: a parameter is a str, an int or a tuple of str")
        rule = f.metadata.get(_KEY)
        if rule is None:
            raise TypeError(f"{cls.__name__}.{f.name} has no parameter rule (declare it with params.param)")
        out.append(Layout(f.name, twp_key(f.name), written, rule))
    return tuple(out)


def parameters_schema(cls: type[Any]) -> dict[str, Any]:
    """The JSON schema of a kind's ``parameters``, from its fields' rules."""
    props: dict[str, Any] = {}
    for p in layout(cls):
        if p.type is int:
            props[p.key] = {"type": "string", "pattern": "^[0-9]+$"}
        elif p.type is tuple:
            props[p.key] = {"type": "array", "items": dict(p.rule.schema), "minItems": 1}
        else:
            props[p.key] = dict(p.rule.schema)
    names = [p.key for p in layout(cls)]
    return {"type": "object", "properties": props, "additionalProperties": False, "required": names}


# == the document's objects ===================================================================
# Each object of the document (a listener, a route, its match, a cluster...) is declared once,
# as the ``DOC`` of its class in :mod:`.model`: an :class:`Obj` of its keys, each a :class:`Key`
# with the JSON schema of its value. The schema generator (:mod:`.schema`) writes them; the reader
# (:mod:`.load`) takes from them the keys it allows and requires, enums and integer ranges.
Node = Any  # a JSON schema (a mapping), an Obj, or a callable that makes either (resolved late)


def _typed(json_type: str, **rules: Any) -> dict[str, Any]:
    """``{"type": json_type}`` with the rules that are given (None: not given), in order."""
    return {"type": json_type, **{k: v for k, v in rules.items() if v is not None}}


def string(min_length: int | None = None, pattern: str | None = None) -> dict[str, Any]:
    return _typed("string", minLength=min_length, pattern=pattern)


def integer(lo: int | None = None, hi: int | None = None) -> dict[str, Any]:
    return _typed("integer", minimum=lo, maximum=hi)


def number(lo: float, hi: float) -> dict[str, Any]:
    return {"type": "number", "minimum": lo, "maximum": hi}


def boolean() -> dict[str, Any]:
    return {"type": "boolean"}


def enum(*values: Any) -> dict[str, Any]:
    return {"enum": list(values)}


def const(value: Any) -> dict[str, Any]:
    return {"const": value}


def array(items: Node, min_items: int | None = None, unique: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array"}
    if min_items is not None:
        out["minItems"] = min_items
    if unique:
        out["uniqueItems"] = True
    out["items"] = items
    return out


def ref(name: str) -> dict[str, Any]:
    """A reference to one of the schema's ``$defs`` (an object declared once, used by several)."""
    return {"$ref": f"#/$defs/{name}"}


def str_map() -> dict[str, Any]:
    """A mapping of strings to strings (match headers, query)."""
    return {"type": "object", "additionalProperties": {"type": "string"}}


@dataclass(frozen=True, slots=True)
class Key:
    """One key of a document object: the JSON schema of its value; ``required``: the render always
    writes it (the schema's ``required``); ``read_required``: the reader refuses an object without
    it (None: as ``required``; the contract gives some keys a default); ``bounds``: the integer
    range the reader accepts where it is not the schema's ``minimum``/``maximum``."""

    schema: Node
    required: bool = False
    read_required: bool | None = None
    bounds: tuple[int, int] | None = None

    def range(self) -> tuple[int, int]:
        """The integers the reader accepts (the schema's bounds; int64 where it gives none)."""
        if self.bounds is not None:
            return self.bounds
        s = self.schema
        return s.get("minimum", -(2**63)), s.get("maximum", 2**63 - 1)

    def item(self) -> Key:
        """The key of a list's items (their schema, e.g. for their range)."""
        return Key(self.schema["items"])

    @property
    def values(self) -> tuple[Any, ...]:
        """An enum's or const's values."""
        s = self.schema
        return tuple(s["enum"]) if "enum" in s else (s["const"],)


class Obj:
    """A document object: its keys in order (:class:`Key`) and what the schema adds
    (``extra``: e.g. ``dependentRequired``, ``oneOf``, ``title``)."""

    __slots__ = ("keys_", "keys", "required", "read_required", "extra")

    def __init__(self, keys: Mapping[str, Key], **extra: Any) -> None:
        self.keys_ = dict(keys)
        #: the keys the object may have, the keys the schema requires, the keys the reader requires
        self.keys: tuple[str, ...] = tuple(self.keys_)
        self.required: tuple[str, ...] = tuple(k for k, v in self.keys_.items() if v.required)
        self.read_required: tuple[str, ...] = tuple(
            k for k, v in self.keys_.items() if (v.required if v.read_required is None else v.read_required))
        self.extra = extra

    def __getitem__(self, key: str) -> Key:
        return self.keys_[key]

    def schema(self) -> dict[str, Any]:
        """The object's JSON schema (nested objects and late nodes resolved)."""
        out: dict[str, Any] = {"type": "object",
                               "properties": {k: resolve(v.schema) for k, v in self.keys_.items()},
                               "additionalProperties": False}
        if self.required:
            out["required"] = list(self.required)
        out.update(resolve(self.extra))
        return out


def resolve(node: Node) -> Any:
    """A schema node as JSON data: an Obj's schema, a callable's result, containers walked."""
    if isinstance(node, Obj):
        return node.schema()
    if callable(node):
        return resolve(node())
    if isinstance(node, Mapping):
        return {k: resolve(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [resolve(v) for v in node]
    return node


#: the keys of a transform or policy (both required)
KIND_KEYS = ("kind", "parameters")


def kind_entry(cls: type[Any]) -> dict[str, Any]:
    """The schema of one transform or policy: ``{kind: <KIND>, parameters: {...}}``."""
    return {
        "type": "object",
        "properties": dict(zip(KIND_KEYS, ({"const": cls.KIND}, parameters_schema(cls)), strict=True)),
        "additionalProperties": False,
        "required": list(KIND_KEYS),
    }


def kinds_array(kinds: Callable[[], tuple[type[Any], ...]]) -> Callable[[], dict[str, Any]]:
    """A list of transforms or policies: each one of ``kinds()`` (resolved when the schema is made)."""
    return lambda: {"type": "array", "items": {"oneOf": [kind_entry(cls) for cls in kinds()]}}


__all__ = ["Param", "Layout", "param", "layout", "parameters_schema", "timespan_seconds", "timespan_problem", "twp_key",
           "TEXT", "HEADER_NAME", "HEADER_VALUE", "HOST", "PATH", "PATH_PREFIX", "REGEX", "TIMESPAN", "NETWORK",
           "NONEMPTY", "HTTP_URL", "COUNT", "POSITIVE", "TIMESPAN_PATTERN", "HEADER_NAME_PATTERN",
           "Key", "Obj", "string", "integer", "number", "boolean", "enum", "const", "array", "ref", "str_map",
           "resolve", "kind_entry", "kinds_array", "KIND_KEYS"]
