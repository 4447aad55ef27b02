"""Transforms applied to a request head before forwarding, and to the response head.

Headers are tuples of ``(name, value)`` lines in order; names compare case-insensitively.

* ``*HeaderSet``: every line of the name is replaced by one line ``name: value``.
* ``*HeaderAppend``: the existing lines of the name and the new value become ONE line joined
  with ``, `` (``foo`` + ``bar`` -> ``foo, bar``); absent, the line is added. On the response,
  an appended ``Set-Cookie`` keeps its own line.
* ``*HeaderRemove``: every line of the name goes.
* ``HostSet``: the upstream Host header (otherwise the request's Host, with its port, is
  forwarded unchanged).
* ``PathSet`` replaces the whole path; ``PathRegexReplace`` replaces the first match of its
  pattern with the literal replacement (no ``$`` substitutions); ``PathRemovePrefix`` strips a
  prefix on a segment boundary; ``PathPrefix`` prepends one. An empty path becomes ``/``. The
  query string is not part of the path and is never touched.
"""

from __future__ import annotations

from collections.abc import Iterable

from titanium_gateway.twp import model as m
from titanium_gateway.twp.regex import compiled

Headers = tuple[tuple[str, str], ...]


def _is(name: str, other: str) -> bool:
    return name.lower() == other.lower()


def get_all(headers: Headers, name: str) -> list[str]:
    return [v for k, v in headers if _is(k, name)]


def set_header(headers: Headers, name: str, value: str) -> Headers:
    out: list[tuple[str, str]] = []
    placed = False
    for k, v in headers:
        if _is(k, name):
            if not placed:
                out.append((name, value))
                placed = True
            continue
        out.append((k, v))
    if not placed:
        out.append((name, value))
    return tuple(out)


def append_header(headers: Headers, name: str, value: str, *, own_line: bool = False) -> Headers:
    if own_line or not any(_is(k, name) for k, _ in headers):
        return (*headers, (name, value))
    joined = ", ".join([*get_all(headers, name), value])
    out: list[tuple[str, str]] = []
    placed = False
    for k, v in headers:
        if _is(k, name):
            if not placed:
                out.append((k, joined))
                placed = True
            continue
        out.append((k, v))
    return tuple(out)


def remove_header(headers: Headers, name: str) -> Headers:
    return tuple((k, v) for k, v in headers if not _is(k, name))


_SET = (m.RequestHeaderSet, m.ResponseHeaderSet)
_APPEND = (m.RequestHeaderAppend, m.ResponseHeaderAppend)
HEADER_TRANSFORMS = (*_SET, *_APPEND, m.RequestHeaderRemove, m.ResponseHeaderRemove)
HeaderTransform = (m.RequestHeaderSet | m.RequestHeaderAppend | m.RequestHeaderRemove | m.ResponseHeaderSet
                   | m.ResponseHeaderAppend | m.ResponseHeaderRemove)


def on_response(t: m.Transform) -> bool:
    """A header transform of the response (the only transforms that apply after forwarding)."""
    return isinstance(t, m.RESPONSE_TRANSFORMS)


def apply_header_transform(t: HeaderTransform, headers: Headers) -> Headers:
    if isinstance(t, _SET):
        return set_header(headers, t.name, t.value)
    if isinstance(t, _APPEND):
        return append_header(headers, t.name, t.value, own_line=on_response(t) and _is(t.name, "set-cookie"))
    return remove_header(headers, t.name)


def _nonempty(path: str) -> str:
    return path or "/"


def apply_path_transform(t: m.Transform, path: str) -> str:
    if isinstance(t, m.PathSet):
        return _nonempty(t.path)
    if isinstance(t, m.PathRegexReplace):
        return _nonempty(compiled(t.pattern).sub(lambda _match: t.replacement, path, count=1))
    if isinstance(t, m.PathRemovePrefix):
        prefix = t.prefix.rstrip("/")
        if prefix and (path == prefix or path.startswith(prefix + "/")):
            return _nonempty(path[len(prefix):])
        return path
    if isinstance(t, m.PathPrefix):
        return _nonempty(t.prefix.rstrip("/") + path)
    return path


def apply_request_transforms(transforms: Iterable[m.Transform], path: str, headers: Headers) -> tuple[str, Headers]:
    """The upstream path and headers after the route's request transforms, in list order."""
    for t in transforms:
        if isinstance(t, HEADER_TRANSFORMS):
            if not on_response(t):
                headers = apply_header_transform(t, headers)
        elif isinstance(t, m.HostSet):
            headers = set_header(headers, "Host", t.host)
        else:
            path = apply_path_transform(t, path)
    return path, headers


def apply_response_transforms(transforms: Iterable[m.Transform], headers: Headers) -> Headers:
    """The response headers after the route's response transforms, in list order."""
    for t in transforms:
        if on_response(t):
            headers = apply_header_transform(t, headers)  # type: ignore[arg-type]
    return headers
