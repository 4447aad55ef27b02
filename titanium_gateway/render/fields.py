"""Reading raw objects: the one set of field accessors every translator uses.

Informer objects are raw JSON dicts that may hold anything (the offline render reads files):
every read goes through these, which never raise and never return a value of the wrong type.

* :func:`string`, :func:`mapping`, :func:`items`, :func:`port` — a field as a ``str`` / mapping
  / list / port number, or an empty value (``""``, an empty mapping, ``[]``, None);
* :func:`text` — a ``str`` that can be written to the data plane's YAML (no lone UTF-16
  surrogate, which no YAML parser accepts); names and references are read with it, so an
  unusable name is a missing name;
* :func:`metadata`, :func:`namespace_of`, :func:`name_of` — an object's identity;
* :func:`brief`, :func:`plain`, :func:`shown`, :func:`summarize` — input values in messages (bounded, safe);
* :func:`has_control`, :func:`writable` — values that may be forwarded (headers, paths);
* :func:`parse_duration_ms`, :func:`timespan` — GEP-2257 durations and the data plane's TimeSpan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

EMPTY: Mapping[str, Any] = MappingProxyType({})

#: A lone UTF-16 surrogate: a Python ``str`` can hold one (JSON ``"\\ud800"``, the pure-Python
#: YAML loader), but no UTF-8 text and no YAML document can.
_SURROGATE = re.compile("[\ud800-\udfff]")


def string(value: Any) -> str:
    """``value`` when it is a ``str``, else ``""``."""
    return value if isinstance(value, str) else ""


def text(value: Any) -> str:
    """``value`` when it is a ``str`` the data plane's YAML can hold, else ``""``."""
    if isinstance(value, str) and (value.isascii() or _SURROGATE.search(value) is None):
        return value
    return ""


def writable(value: str) -> bool:
    """Can ``value`` be written to the data plane's YAML (no lone surrogate)?"""
    return value.isascii() or _SURROGATE.search(value) is None


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one (never modified)."""
    if type(value) is dict:  # the common case, without the slower ABC check
        return value
    return value if isinstance(value, Mapping) else EMPTY


def is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def items(value: Any) -> list[Any]:
    """``value`` when it is a list, else ``[]``."""
    return value if isinstance(value, list) else []


def port(value: Any) -> int | None:
    """A port number 1-65535 (never a bool), else None."""
    if type(value) is int:
        return value if 1 <= value <= 65535 else None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        return None
    return int(value)


def integer(value: Any) -> int | None:
    """An ``int`` that is not a bool, else None."""
    if type(value) is int:
        return value
    return None if isinstance(value, bool) or not isinstance(value, int) else int(value)


def metadata(obj: Any) -> Mapping[str, Any]:
    """``obj.metadata`` as a mapping (empty when absent or malformed)."""
    return mapping(obj.get("metadata")) if is_mapping(obj) else EMPTY


def name_of(meta: Mapping[str, Any]) -> str:
    """``metadata.name`` ("" when missing or unusable: such an object is not translated)."""
    return text(meta.get("name"))


def namespace_of(meta: Mapping[str, Any]) -> str | None:
    """``metadata.namespace`` ("default" when absent or not a string; None when unusable)."""
    ns = meta.get("namespace")
    if not isinstance(ns, str) or not ns:
        return "default"
    return ns if writable(ns) else None


# -- values in messages ---------------------------------------------------------------------
_BRIEF_LIMIT = 64
MAX_PROBLEMS_LISTED = 5


def brief(value: Any) -> str:
    """A short, safe rendering of an input value for messages (never a deep repr)."""
    if isinstance(value, str):
        shown = value if len(value) <= _BRIEF_LIMIT else value[:_BRIEF_LIMIT] + "..."
        return repr(shown)
    if value is None or isinstance(value, (bool, int, float)):
        shown = repr(value)
        return shown if len(shown) <= _BRIEF_LIMIT else shown[:_BRIEF_LIMIT] + "..."
    return f"a {type(value).__name__}"


def plain(value: Any) -> str:
    """A short identifier-like string as is (names, type names); anything else via :func:`brief`."""
    if isinstance(value, str) and len(value) <= _BRIEF_LIMIT and value.isascii() and value.isprintable():
        return value
    return brief(value)


def shown(value: str) -> str:
    """A string in a message as it is, or via :func:`brief` when it cannot be written as text."""
    return value if writable(value) else brief(value)


def listed(named: int) -> int:
    """How many problems a condition lists: every one of a rule that answers 500, within the API's
    32768-character message limit (at most 90 problems of at most 303 characters)."""
    return min(90, max(MAX_PROBLEMS_LISTED, named))


def summarize(problems: list[str], limit: int = MAX_PROBLEMS_LISTED) -> str:
    """The first ``limit`` distinct problems joined, plus how many more (bounded length)."""
    unique = list(dict.fromkeys(problems))
    shown = "; ".join(p if len(p) <= 300 else p[:300] + "..." for p in unique[:limit])
    if len(unique) > limit:
        shown += f"; and {len(unique) - limit} more"
    return shown


# -- values that are forwarded --------------------------------------------------------------
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def has_control(value: str) -> bool:
    """CR, LF, NUL and other control characters: never forwarded in a header or a path."""
    if value.isascii() and value.isprintable():  # the common case, without the regex
        return False
    return _CONTROL.search(value) is not None


# -- durations ------------------------------------------------------------------------------
_DURATION = re.compile(r"^(?:[0-9]{1,5}(?:h|ms|m|s)){1,4}$")
_DURATION_PART = re.compile(r"([0-9]{1,5})(h|ms|m|s)")
_UNIT_MS = {"h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}


def parse_duration_ms(value: Any) -> int | None:
    """GEP-2257 duration (``10s``, ``500ms``, ``1h30m``) -> milliseconds; None when invalid."""
    if not isinstance(value, str) or not _DURATION.match(value):
        return None
    units = [u for _, u in _DURATION_PART.findall(value)]
    if len(set(units)) != len(units):
        return None
    return sum(int(n) * _UNIT_MS[u] for n, u in _DURATION_PART.findall(value))


def timespan(ms: int) -> str:
    """Milliseconds -> the data plane's TimeSpan ``[d.]hh:mm:ss[.fff]``."""
    seconds, millis = divmod(ms, 1000)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    days, hour = divmod(hours, 24)
    out = f"{hour:02d}:{minute:02d}:{sec:02d}"
    if days:
        out = f"{days}.{out}"
    if millis:
        out += f".{millis:03d}"
    return out
