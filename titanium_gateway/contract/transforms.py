"""Transforms applied to a request head before forwarding, and to the response head.

Each transform kind registers what it does (:data:`ON_REQUEST`, :data:`ON_RESPONSE`, with the
decorators :func:`request_transform` and :func:`response_transform`); a kind of the model that
is registered nowhere fails ``tests/dataplane/test_rule_coverage.py``.

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

from collections.abc import Callable, Iterable
from typing import Any

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


#: kind class -> what it does to the request: ``(transform, path, headers) -> (path, headers)``
ON_REQUEST: dict[type[Any], Callable[[Any, str, Headers], tuple[str, Headers]]] = {}
#: kind class -> what it does to the response headers: ``(transform, headers) -> headers``
ON_RESPONSE: dict[type[Any], Callable[[Any, Headers], Headers]] = {}


def request_transform(*kinds: type[Any]) -> Callable[[Callable[..., tuple[str, Headers]]], Callable[..., tuple[str, Headers]]]:
    """Registers what the transform ``kinds`` do to a request."""
    def register(fn: Callable[..., tuple[str, Headers]]) -> Callable[..., tuple[str, Headers]]:
        for kind in kinds:
            ON_REQUEST[kind] = fn
        return fn
    return register


def response_transform(*kinds: type[Any]) -> Callable[[Callable[..., Headers]], Callable[..., Headers]]:
    """Registers what the transform ``kinds`` do to the response headers."""
    def register(fn: Callable[..., Headers]) -> Callable[..., Headers]:
        for kind in kinds:
            ON_RESPONSE[kind] = fn
        return fn
    return register


def on_response(t: m.Transform) -> bool:
    """A transform of the response (the only transforms that apply after forwarding)."""
    return type(t) in ON_RESPONSE


@request_transform(m.RequestHeaderSet)
def _request_header_set(t: m.RequestHeaderSet, path: str, headers: Headers) -> tuple[str, Headers]:
    return path, set_header(headers, t.name, t.value)


@request_transform(m.RequestHeaderAppend)
def _request_header_append(t: m.RequestHeaderAppend, path: str, headers: Headers) -> tuple[str, Headers]:
    return path, append_header(headers, t.name, t.value)


@request_transform(m.RequestHeaderRemove)
def _request_header_remove(t: m.RequestHeaderRemove, path: str, headers: Headers) -> tuple[str, Headers]:
    return path, remove_header(headers, t.name)


@request_transform(m.HostSet)
def _host_set(t: m.HostSet, path: str, headers: Headers) -> tuple[str, Headers]:
    return path, set_header(headers, "Host", t.host)


@response_transform(m.ResponseHeaderSet)
def _response_header_set(t: m.ResponseHeaderSet, headers: Headers) -> Headers:
    return set_header(headers, t.name, t.value)


@response_transform(m.ResponseHeaderAppend)
def _response_header_append(t: m.ResponseHeaderAppend, headers: Headers) -> Headers:
    return append_header(headers, t.name, t.value, own_line=_is(t.name, "set-cookie"))


@response_transform(m.ResponseHeaderRemove)
def _response_header_remove(t: m.ResponseHeaderRemove, headers: Headers) -> Headers:
    return remove_header(headers, t.name)


def _nonempty(path: str) -> str:
    return path or "/"


@request_transform(m.PathSet)
def _path_set(t: m.PathSet, path: str, headers: Headers) -> tuple[str, Headers]:
    return _nonempty(t.path), headers


@request_transform(m.PathRegexReplace)
def _path_regex_replace(t: m.PathRegexReplace, path: str, headers: Headers) -> tuple[str, Headers]:
    return _nonempty(compiled(t.pattern).sub(lambda _match: t.replacement, path, count=1)), headers


@request_transform(m.PathRemovePrefix)
def _path_remove_prefix(t: m.PathRemovePrefix, path: str, headers: Headers) -> tuple[str, Headers]:
    prefix = t.prefix.rstrip("/")
    if prefix and (path == prefix or path.startswith(prefix + "/")):
        return _nonempty(path[len(prefix):]), headers
    return path, headers


@request_transform(m.PathPrefix)
def _path_prefix(t: m.PathPrefix, path: str, headers: Headers) -> tuple[str, Headers]:
    return _nonempty(t.prefix.rstrip("/") + path), headers


def apply_request_transforms(transforms: Iterable[m.Transform], path: str, headers: Headers) -> tuple[str, Headers]:
    """The upstream path and headers after the route's request transforms, in list order (a
    response transform does nothing here)."""
    for t in transforms:
        fn = ON_REQUEST.get(type(t))
        if fn is not None:
            path, headers = fn(t, path, headers)
    return path, headers


def apply_response_transforms(transforms: Iterable[m.Transform], headers: Headers) -> Headers:
    """The response headers after the route's response transforms, in list order."""
    for t in transforms:
        fn = ON_RESPONSE.get(type(t))
        if fn is not None:
            headers = fn(t, headers)
    return headers
