"""The rule paths of an Ingress: hosts and paths normalized, each path (and the defaultBackend)
one :class:`~.objects.PathInfo`; a path that cannot be served is reported (InvalidPath) and
answers 500 for its own match."""

from __future__ import annotations

import re
from typing import Any

from titanium_gateway.render import fields as f
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.ingress.objects import IngressInfo, PathInfo
from titanium_gateway.render.ingress.status import event

PATH_TYPES = ("Exact", "Prefix", "ImplementationSpecific")
#: whitespace, control characters, ``?``, ``#`` and lone surrogates (which no YAML can hold)
_PATH_FORBIDDEN = re.compile("[\\s\\x00-\\x1f\\x7f?#\ud800-\udfff]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")


def normalize_host(raw: Any) -> tuple[str | None, str]:
    """``rules[].host`` -> (match host or None for any host, error message or "")."""
    if raw is None or raw == "":
        return None, ""
    if not isinstance(raw, str):
        return None, "host is not a string"
    host = raw.lower()
    if host.endswith("."):
        host = host[:-1]
    name = host[2:] if host.startswith("*.") else host
    if len(host) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        return None, f"host {raw!r} is not a DNS name or a *. wildcard"
    return host, ""


def normalize_path(raw_path: Any, path_type: Any) -> tuple[str | None, str | None, str]:
    """(path, data-plane pathKind, error) for one Ingress path.

    ``Exact`` keeps the path; ``Prefix`` and ``ImplementationSpecific`` are a segment prefix with
    a trailing ``/`` stripped (except ``/`` itself). A path that is not absolute, or that holds
    whitespace, a control character, ``?``, ``#`` or a lone surrogate, is an error, as is another
    pathType. An absent or empty path with pathType ``ImplementationSpecific`` (which the
    Ingress API allows: "an unspecified path matches all paths") is the Prefix ``/``.
    """
    if path_type == "ImplementationSpecific" and raw_path in (None, ""):
        return "/", "Prefix", ""
    if not isinstance(raw_path, str) or not raw_path.startswith("/") or _PATH_FORBIDDEN.search(raw_path):
        return None, None, f"path {raw_path!r} is not an absolute path"
    if path_type not in PATH_TYPES:
        return raw_path, None, f"pathType {path_type!r} is not Exact, Prefix or ImplementationSpecific"
    if path_type == "Exact":
        return raw_path, "Exact", ""
    path = raw_path.rstrip("/") or "/"
    return path, "Prefix", ""


def invalid_path_match(raw_path: Any, path_type: Any) -> tuple[str | None, str | None]:
    """(path, pathKind) of the 500 route of a path that :func:`normalize_path` rejects: the
    path's own match, as written, so it answers 500 where it would have matched and nowhere else.

    A string path keeps its text (a trailing ``/`` stripped for a Prefix, as for valid paths)
    with the kind of its pathType (an unknown pathType: ``Exact``). A non-absolute path such as
    ``z`` can match no request (request paths start with ``/``), so its route shadows nothing.
    An absent or empty path is "every path" (the Ingress API: an unspecified path matches all
    paths): (None, None). The route goes in the degraded tier (:meth:`Translator.tier`), after
    every normal route, so it never shadows another path.
    """
    if not isinstance(raw_path, str) or not raw_path:
        return None, None
    if path_type in ("Prefix", "ImplementationSpecific"):
        return raw_path.rstrip("/") or raw_path, "Prefix"
    return raw_path, "Exact"


class Paths:
    """The paths of one render: a (path, pathType) of exact types is normalized once (a few
    paths recur across thousands of Ingresses)."""

    __slots__ = ("ctx", "_normalized")

    def __init__(self, ctx: RenderContext) -> None:
        self.ctx = ctx
        #: (path, pathType) of exact types (str or None) -> normalize_path of them
        self._normalized: dict[tuple[Any, Any], tuple[str | None, str | None, str]] = {}

    def of(self, ing: IngressInfo) -> list[PathInfo]:
        """Every route candidate of one Ingress, InvalidPath reported here."""
        spec = f.mapping(ing.obj.get("spec"))
        out: list[PathInfo] = []
        prefix = f"ingress/{ing.namespace}/{ing.name}/"
        for r, rule in enumerate(f.items(spec.get("rules"))):
            rule = f.mapping(rule)
            host, host_error = normalize_host(rule.get("host"))
            for p, item in enumerate(f.items(f.mapping(rule.get("http")).get("paths"))):
                if host_error:
                    event(self.ctx, ing, "InvalidPath", f"rule {r}: {host_error}")
                    continue
                item = f.mapping(item)
                raw_path, raw_type = item.get("path"), item.get("pathType")
                if (raw_path is None or type(raw_path) is str) and (raw_type is None or type(raw_type) is str):
                    normalized = self._normalized.get((raw_path, raw_type))
                    if normalized is None:
                        normalized = self._normalized[(raw_path, raw_type)] = normalize_path(raw_path, raw_type)
                    path, kind, error = normalized
                else:
                    path, kind, error = normalize_path(raw_path, raw_type)
                if error:
                    # Never dropped: the path answers 500 for its own match (spec audit F10), but
                    # for a path no request can have (a lone surrogate: it cannot be written either).
                    event(self.ctx, ing, "InvalidPath", f"rule {r} path {p}: {error}")
                    path, kind = invalid_path_match(raw_path, raw_type)
                    if path is not None and not f.writable(path):
                        continue
                    out.append(PathInfo(ing, f"{prefix}r{r}p{p}", r, p, host, path, kind, f.string(raw_type),
                                        item.get("backend"), "InvalidPath", error))
                    continue
                out.append(PathInfo(ing, f"{prefix}r{r}p{p}", r, p, host, path, kind, f.string(raw_type),
                                    item.get("backend")))
        if "defaultBackend" in spec and spec.get("defaultBackend") is not None:
            out.append(PathInfo(ing, f"{prefix}default", -1, 0, None, None, None, "", spec.get("defaultBackend")))
        return out
