"""The data-plane routes of Ingress paths: each path one route ``ingress/<ns>/<name>/r<rule>p<path>``
(the defaultBackend ``ingress/<ns>/<name>/default``: any host, any path, after every other
route), forwarding to its backend's cluster (with its canary: a weighted split, and a route for
the canary-by-header header) with the ``titanium.io/`` annotations' transforms and policies, or
answering 500 with why it cannot be served.

Matches, transforms, policies and behaviors are made once per render for each distinct content
(a few backends and annotation sets serve thousands of paths), and shared.
"""

from __future__ import annotations

from typing import Any

from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.ingress.backends import Backends
from titanium_gateway.render.ingress.objects import IngressInfo, PathInfo
from titanium_gateway.render.ingress.status import event
from titanium_gateway.render.ingress.titanium import IngressAnnotations
from titanium_gateway.render.precedence import (
    TIER_DEFAULT_BACKEND,
    TIER_DEGRADED,
    TIER_NORMAL,
    key_from_parts,
    match_part,
)
from titanium_gateway.render.regex import regex_escape
from titanium_gateway.render.unhonoured import unhonoured
from titanium_gateway.twp.model import (
    DEFAULT_SETTINGS,
    Behavior,
    Cluster,
    Cors,
    ExtAuth,
    Forward,
    IpAllowDeny,
    Match,
    MaxRequestBodySize,
    PathRegexReplace,
    Policy,
    RateLimit,
    Route,
    Split,
    WeightedCluster,
)

#: Timeout of the ExtAuth subrequest (the seed gives none; see docs/ingress.md).
EXT_AUTH_TIMEOUT = "00:00:05"
#: Value of the canary-by-header header that forces the canary.
CANARY_HEADER_VALUE = "always"


def rewrite_transform(path: str | None, kind: str | None, target: str) -> PathRegexReplace | None:
    """The PathRegexReplace transform of ``titanium.io/rewrite-target`` for one route.

    Exact: the whole path becomes ``target``. Prefix (and the defaultBackend, a prefix ``/``):
    the matched prefix is replaced on a segment boundary, ``/foo`` -> ``/bar`` turns
    ``/foo/x`` into ``/bar/x`` and ``/foo`` into ``/bar``; a target of ``/`` turns ``/foo/x``
    into ``/x`` (never ``//x``). Returns None when the rewrite changes nothing.
    """
    if kind == "Exact" and path is not None:
        if path == target:
            return None
        pattern, replacement = f"^{regex_escape(path)}$", target
    else:
        prefix = path or "/"
        tgt = target.rstrip("/") or "/"
        if prefix == "/":
            if tgt == "/":
                return None
            pattern, replacement = "^(?:/$|(?=/))", tgt
        else:
            pattern = f"^{regex_escape(prefix)}(?=/|$)"
            replacement = "" if tgt == "/" else tgt
    return PathRegexReplace(pattern, replacement)


def shared_policies(ann: IngressAnnotations) -> tuple[tuple[Policy, ...], tuple[Policy, ...]]:
    """The policies of an annotation set before and after its RateLimit (the one policy that
    names its Ingress), in the contract's order."""
    before: list[Policy] = []
    if ann.whitelist_source_range is not None:
        before.append(IpAllowDeny(tuple(ann.whitelist_source_range)))
    after: list[Policy] = []
    if ann.cors_allow_origin is not None:
        after.append(Cors(tuple(ann.cors_allow_origin)))
    if ann.proxy_body_size is not None:
        after.append(MaxRequestBodySize(ann.proxy_body_size))
    if ann.auth_url is not None:
        after.append(ExtAuth(ann.auth_url, EXT_AUTH_TIMEOUT))
    return tuple(before), tuple(after)


class Routes:
    """The routes of Ingress paths in one render (see the module doc)."""

    def __init__(self, ctx: RenderContext, backends: Backends) -> None:
        self.ctx = ctx
        self.backends = backends
        #: what the shared policies read of an annotation set -> (before, after) its RateLimit
        self._policies: dict[tuple[Any, ...], tuple[tuple[Policy, ...], tuple[Policy, ...]]] = {}
        #: (path, kind) -> the match (host aside) and its precedence part
        self._matches: dict[tuple[Any, Any], tuple[Match, str]] = {}
        #: (rewrite target, path, kind) -> the transforms of a route
        self._transforms: dict[tuple[Any, ...], tuple[PathRegexReplace, ...]] = {}
        #: (action, transforms, policies keys) -> the behavior of the routes that have them
        self._behaviors: dict[tuple[Any, ...], Behavior] = {}

    def emit(self, p: PathInfo) -> None:
        ing = p.ing
        reason, message = p.error_reason, p.error_message
        cluster: Cluster | None = None
        if not reason:
            settings = ing.settings or DEFAULT_SETTINGS
            cluster, reason, message = self.backends.backend_cluster(ing, p.backend, settings, ing.id_suffix)
            if reason:
                event(self.ctx, ing, reason, f"{p.describe()}: {message}")
        if not reason and not ing.ann.valid:
            reason, message = "InvalidAnnotation", "; ".join(e.message for e in ing.ann.errors)
        if not reason and ing.settings is None:
            reason, message = "InvalidAnnotation", ing.settings_error
        match, ranks = self.match(p.path, p.kind)
        if reason or cluster is None:
            self.add_route(p, p, p.route_id, match, ranks, self.behavior(("d", reason or "BackendNotFound"), p, False))
            return
        cid = self.ctx.add_cluster(cluster)
        canary = p.canaries[0] if p.canaries else None
        if canary is None:
            self.add_route(p, p, p.route_id, match, ranks, self.behavior(("c", cid), p, True))
            return
        canary_path, canary_cluster = canary
        canary_cid = self.ctx.add_cluster(canary_cluster)
        weight = canary_path.ing.ann.canary_weight
        self.add_route(p, p, p.route_id, match, ranks, self.behavior(("w", cid, 100 - weight, canary_cid, weight), p, True))
        header = canary_path.ing.ann.canary_by_header
        if header:
            header_match = Match(match.path, match.path_kind, headers=((header, CANARY_HEADER_VALUE),))
            self.add_route(p, canary_path, canary_path.route_id, header_match, match_part(header_match),
                           self.behavior(("c", canary_cid), p, True))

    def behavior(self, action: tuple[Any, ...], p: PathInfo, decorated: bool) -> Behavior:
        """The behavior of a route of ``p`` with ``action`` (``("c", cluster id)``, ``("w", cluster
        id, weight, canary cluster id, weight)`` or ``("d", reason code)``), with the primary's
        transforms and policies when ``decorated``: one object for the routes of equal content
        (a few backends and annotation sets serve thousands of paths)."""
        if decorated:
            target = p.ing.ann.rewrite_target
            policies = self.policies(p.ing)
            key = (action, None if target is None else (target, p.path, p.kind), p.ing.policies_key)
        else:
            key = action
        made = self._behaviors.get(key)
        if made is None:
            kind = action[0]
            if kind == "c":
                made_action: Any = Forward(action[1])
            elif kind == "w":
                made_action = Split((WeightedCluster(action[1], action[2]), WeightedCluster(action[3], action[4])))
            else:
                made_action = unhonoured(action[1])
            made = self._behaviors[key] = (Behavior(made_action, None, self.transforms(p), policies) if decorated
                                           else Behavior(made_action))
        return made

    def match(self, path: str | None, kind: str | None) -> tuple[Match, str]:
        """The route's match without its host (shared by every path with the same path and
        kind) and its precedence part."""
        key = (path, kind) if path is not None and kind is not None else (None, None)
        hit = self._matches.get(key)
        if hit is None:
            match = Match(path, kind) if key[0] is not None else Match()
            hit = self._matches[key] = (match, match_part(match))
        return hit

    def transforms(self, p: PathInfo) -> tuple[PathRegexReplace, ...]:
        """The transforms of the primary's annotations for one path."""
        target = p.ing.ann.rewrite_target
        if target is None:
            return ()
        key = (target, p.path, p.kind)
        hit = self._transforms.get(key)
        if hit is None:
            transform = rewrite_transform(p.path, p.kind, target)
            hit = self._transforms[key] = () if transform is None else (transform,)
        return hit

    def policies(self, ing: IngressInfo) -> tuple[Policy, ...]:
        """The policies of the primary's annotations: the annotation set's, with a RateLimit of
        the Ingress's own partition."""
        if ing.policies is None:
            ann = ing.ann
            key = (ann.whitelist_source_range, ann.cors_allow_origin, ann.proxy_body_size, ann.auth_url)
            shared = self._policies.get(key)
            if shared is None:
                shared = self._policies[key] = shared_policies(ann)
            before, after = shared
            if ann.limit_rps is not None:
                rate = RateLimit(ann.limit_rps, "00:00:01", f"ingress/{ing.namespace}/{ing.name}")
                ing.policies = (*before, rate, *after)
                ing.policies_key = (key, ann.limit_rps, rate.partition)
            else:
                ing.policies = before + after
                ing.policies_key = key
        return ing.policies

    @staticmethod
    def tier(p: PathInfo) -> int:
        if p.is_default:
            return TIER_DEFAULT_BACKEND
        return TIER_DEGRADED if p.error_reason == "InvalidPath" else TIER_NORMAL

    def add_route(self, p: PathInfo, source: PathInfo, route_id: str, match: Match, ranks: str, behavior: Behavior) -> None:
        """A route of path ``p`` (its precedence); ``source``: the path it is made of (``p``, or
        the canary path of its canary-by-header route)."""
        key = key_from_parts(self.tier(p), self.ctx.host_part(p.host), ranks, p.ing.owner_key, max(p.rule, 0), p.index)
        self.ctx.add_route(Route(route_id, p.host, match, behavior, key, source.ing.source, source.rule, source.index))

