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


__all__ = ["Param", "Layout", "param", "layout", "parameters_schema", "timespan_seconds", "timespan_problem", "twp_key",
           "TEXT", "HEADER_NAME", "HEADER_VALUE", "HOST", "PATH", "PATH_PREFIX", "REGEX", "TIMESPAN", "NETWORK",
           "NONEMPTY", "HTTP_URL", "COUNT", "POSITIVE", "TIMESPAN_PATTERN", "HEADER_NAME_PATTERN"]
