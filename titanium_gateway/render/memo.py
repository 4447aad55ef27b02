"""Translation memo across renders: what an unchanged object translated to last time.

The render is a pure function of its snapshot, so a reconcile after one EndpointSlice change
would translate 10k unchanged HTTPRoutes again (benchmarks/FINDINGS.md R5). A
:class:`RenderCache` passed to :func:`titanium_gateway.render.render` remembers, per source
object, the *effects* its translation had on the :class:`~titanium_gateway.render.builder.RenderContext`
(a :class:`Recording`: its model routes, its clusters by id (each knows the Service port it
was resolved from), statuses, events, listener counts) and replays them when neither the object nor
anything its translation reads has changed. The output is byte for byte the output without
the cache (``tests/render/test_memo.py`` checks it over every golden input and sequences of
changes); the cache only decides how much work it takes.

Validity, conservatively:

* an HTTPRoute's recording is keyed by its ``(uid, resourceVersion)`` and valid while the
  *route dependencies* are unchanged: the options, the Gateway listeners as the route
  translation sees them (:func:`gateway_fingerprint`: never their status), and the
  ``(key, uid, resourceVersion)`` of every GatewayClass, Namespace, ReferenceGrant, Service
  and Secret. EndpointSlices are not among them: clusters are resolved again on every replay,
  so endpoint churn re-translates nothing. Nor are the Gateways' own data-plane Services
  (made by the controller, their status written by the load balancer): those, and Services
  that do not exist, count by name, only once a translation looked them up
  (``BackendIndex.service_versions`` leaves them out; ``RenderCache.service_lookups``), so a
  Gateway's data plane appearing or getting its address re-translates only what names it;
* the HTTPRoutes are replayed in blocks of consecutive keys (:func:`replay_or_translate`): a
  block none of whose routes changed replays as one recording, the same effects in the same
  order as its routes one by one;
* the Ingress translation (conflicts and canaries make Ingresses depend on each other) is
  recorded as a whole, valid while every Ingress, IngressClass, Service (as above), Secret and
  Namespace version, the options and the ports Gateway listeners use are unchanged, and Ingress
  by Ingress (:class:`IngressParts`): an Ingress that changed and shares no path (host, path,
  kind) with another, before and after, is translated alone and the others replayed;
* what comes after the translations starts from the last render's too: the order
  (:func:`order_from_hint`), the unreachable rules (:class:`UnreachableMemo`), the sorted keys
  of the statuses (:class:`SortedKeys`) and the text (``emit.EmitCache``);
* an object without ``metadata.resourceVersion`` (an offline render of files) is never
  memoized, nor is a recording in which a condition stamped ``snapshot.now`` (a transition:
  the next render must stamp its own ``now``, exactly as a fresh render would; once the status
  is written the object has a new resourceVersion and is recorded again), nor one that added
  a cluster it cannot resolve again.

A cache belongs to one caller (the controller's single reconcile worker); it is not
thread-safe. Recordings not used by a render are dropped, so the cache holds at most one
render's worth of text.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway.render.result import EventRecord, NotOurs, ObjectStatus
from titanium_gateway.sequences import common_ends, same_objects
from titanium_gateway.twp.emit import EmitCache


@dataclass(slots=True)
class Recording:
    """The effects of translating one source (or every Ingress) on a render context."""

    #: the model routes it added (see builder.add_route)
    routes: list[Any] = field(default_factory=list)
    #: clusters in the order first added: the id of one resolved from a Service port (its
    #: :class:`~titanium_gateway.twp.model.Backend`, resolved again on replay) or a
    #: constant cluster (no backend, no destinations)
    clusters: list[Any] = field(default_factory=list)
    cluster_ids: set[str] = field(default_factory=set)
    statuses: list[ObjectStatus] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    #: what it found not ours (ctx.not_ours)
    not_ours: list[NotOurs] = field(default_factory=list)
    #: add_listener(port, decrypt, plane) calls, in order
    listeners: list[tuple[int, bool, str]] = field(default_factory=list)
    #: bind_certificate(namespace, name, hosts, default_rank, plane) calls, in order
    certificates: list[tuple[str, str, tuple[str, ...], Any, str]] = field(default_factory=list)
    #: add_tls_file(name, data, plane) calls, in order
    tls_files: list[tuple[str, bytes, str]] = field(default_factory=list)
    #: translator-specific effects (HTTPRoute: the listeners whose attachedRoutes it counts)
    extra: list[Any] = field(default_factory=list)
    #: condition lists made while recording (checked by :meth:`replayable`, then dropped)
    conditions: list[Any] = field(default_factory=list)
    #: cannot be replayed (a cluster it cannot resolve again)
    volatile: bool = False
    #: once kept for replays in bulk (:meth:`replayable`): its routes' (plane, id) and its
    #: statuses' keys, for a replay at C speed (dict updates)
    route_keys: Sequence[tuple[str, str]] = ()
    status_items: Sequence[tuple[Any, ObjectStatus]] = ()

    def absorb(self, other: Recording) -> None:
        """Add another recording's effects to this one (a recording made, or replayed, while
        this one was recording)."""
        self.routes.extend(other.routes)
        for c in other.clusters:
            cid = c if type(c) is str else c.id
            if cid not in self.cluster_ids:
                self.cluster_ids.add(cid)
                self.clusters.append(c)
        self.statuses.extend(other.statuses)
        self.events.extend(other.events)
        self.not_ours.extend(other.not_ours)
        self.listeners.extend(other.listeners)
        self.certificates.extend(other.certificates)
        self.tls_files.extend(other.tls_files)
        self.conditions.extend(other.conditions)
        self.volatile = self.volatile or other.volatile

    def replayable(self, bulk: bool = False) -> bool:
        """False when a condition stamped ``now`` (a transition: the next render must stamp its
        own ``now``, as a fresh render would) or a cluster cannot be resolved again. Drops what
        only the recording needed either way. ``bulk``: a recording of many objects, made ready
        for a replay at C speed (its routes' and statuses' keys, held only where it pays)."""
        stamped = any(c.stamped for c in self.conditions)
        self.conditions = _NONE  # type: ignore[assignment]
        self.cluster_ids = _NO_IDS  # type: ignore[assignment]
        if bulk and self.routes:
            self.route_keys = [(r.plane, r.id) for r in self.routes]
        if bulk and self.statuses:
            self.status_items = [(st.key, st) for st in self.statuses]
        # a kept recording holds no empty lists (10k recordings: ~1 KiB each otherwise)
        for name in ("routes", "clusters", "statuses", "events", "not_ours", "listeners", "certificates", "tls_files",
                     "extra"):
            if not getattr(self, name):
                setattr(self, name, _NONE)
        return not (stamped or self.volatile)


_NONE: tuple[Any, ...] = ()
_NO_IDS: frozenset[str] = frozenset()


def resource_version(obj: Any) -> tuple[str, str] | None:
    """``(uid, resourceVersion)`` of an object, None when it has no resourceVersion."""
    meta = obj.get("metadata") if (type(obj) is dict or isinstance(obj, Mapping)) else None
    if not (type(meta) is dict or isinstance(meta, Mapping)):
        return None
    rv = meta.get("resourceVersion")
    if not isinstance(rv, str) or not rv:
        return None
    uid = meta.get("uid")
    return (uid if isinstance(uid, str) else "", rv)


def versions(objects: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """``(key, uid, resourceVersion)`` of every object, in key order; None when one has no
    resourceVersion (nothing depending on them can be memoized)."""
    out: list[tuple[str, str, str]] = []
    for key in sorted(objects):
        ver = resource_version(objects[key])
        if ver is None:
            return None
        out.append((key, *ver))
    return tuple(out)


def gateway_fingerprint(gateways: Mapping[tuple[str, str], Any]) -> tuple[Any, ...]:
    """Everything of our Gateways that an HTTPRoute's translation reads (``_attach``,
    ``_effective_hosts``): identity, acceptance and each listener's attachment facts. Never
    their status, so writing a Gateway's status (attachedRoutes) invalidates nothing."""
    out = []
    for key in sorted(gateways):
        gw = gateways[key]
        out.append((key, gw.namespace, gw.name, gw.accepted, gw.plane, tuple(
            (li.index, li.name, li.port, li.dp_port, li.protocol, li.hostname, li.allowed_from,
             repr(li.allowed_selector), li.route_kinds, li.attachable, li.valid, li.usable, li.listener_set)
            for li in gw.listeners)))
    return tuple(out)


def listener_set_fingerprint(listener_sets: Mapping[tuple[str, str], Any]) -> tuple[Any, ...]:
    """What an HTTPRoute's translation reads of the ListenerSets of ours besides their listeners
    (in :func:`gateway_fingerprint`): which are ours, to which Gateway, and their acceptance."""
    return tuple((key, ls.gateway.namespace, ls.gateway.name, ls.acceptance) for key, ls in sorted(listener_sets.items()))


class SortedKeys:
    """The keys of a mapping sorted, from the last keys sorted: the same keys cost a
    comparison at C speed, a few added or removed a bisection each (the statuses of a render,
    the HTTPRoutes' keys)."""

    __slots__ = ("_keys", "_sorted")

    def __init__(self) -> None:
        self._keys: dict[Any, None] = {}
        self._sorted: list[Any] = []

    def sort(self, mapping: Mapping[Any, Any]) -> list[Any]:
        """``sorted(mapping)`` (a list the caller must not change)."""
        keys = mapping.keys()
        last = self._keys
        if keys == last.keys():
            return self._sorted
        gone = last.keys() - keys
        new = keys - last.keys()
        if (len(gone) + len(new)) * 16 > len(keys):
            out = sorted(keys)
        else:
            out = list(self._sorted)
            for key in gone:
                del out[bisect.bisect_left(out, key)]
            for key in sorted(new):
                bisect.insort(out, key)
        self._keys, self._sorted = dict.fromkeys(out), out
        return out


#: A key ends a block of the objects memoized together (:func:`replay_or_translate`) when its
#: hash has these bits clear: blocks of ~64 keys on average, where they end depending only on
#: the keys themselves (a key added or removed moves no other block's ends).
_BLOCK_END_BITS = 63


@dataclass(slots=True)
class _Block:
    """Consecutive objects (by key) whose recordings are replayed as one."""

    keys: list[str]
    versions: list[Any]
    recording: Recording
    #: the extra effects of its objects, counted (the attachments of HTTPRoutes)
    extra: dict[Any, int]


def fast_versions(objects: Mapping[str, Any], keys: Sequence[str]) -> list[tuple[str, str] | None]:
    """:func:`resource_version` of ``objects[key]`` for each key, with one Python step per
    object where the object is as the API server gives it."""
    out: list[tuple[str, str] | None] = []
    append = out.append
    for key in keys:
        obj = objects[key]
        try:
            meta = obj["metadata"]
            uid, rv = meta.get("uid", ""), meta["resourceVersion"]
        except (KeyError, TypeError, AttributeError):
            append(resource_version(obj))
            continue
        if type(rv) is str and rv and type(uid) is str:
            append((uid, rv))
        else:
            append(resource_version(obj))
    return out


def replay_or_translate(ctx: Any, cache: RenderCache, objects: Mapping[str, Any], deps: Any,
                        translate: Callable[[Any], list[Any]], apply: Callable[[Mapping[Any, int]], None],
                        skip: Callable[[Any], bool]) -> None:
    """Every object of ``objects`` (the HTTPRoutes) in key order: its recorded effects replayed
    when it (its ``(uid, resourceVersion)``) and ``deps`` are unchanged, else ``translate(obj)``
    recorded (it returns the object's extra effects, done already: what ``apply`` does again,
    counted, on a replay). ``skip(obj)``: an object not translated at all.

    The objects are taken in blocks of consecutive keys (~64, :data:`_BLOCK_END_BITS`) and a
    block none of whose objects changed is replayed as one recording (the effects of its
    objects in order, :meth:`Recording.absorb`): the same effects in the same order as its
    objects one by one, so the render is the same, with one Python step per block instead of
    per object. A block with a change replays its other objects one by one and is recorded
    again."""
    if deps is None or deps != cache.route_deps:
        cache.routes.clear()
        cache.route_blocks = {}
        cache.route_deps = deps
    memo = cache.routes if deps is not None else None
    keys = cache.route_keys.sort(objects)
    if memo and len(memo) > len(keys):
        for gone in memo.keys() - objects.keys():
            del memo[gone]
    if memo is None:
        for key in keys:
            obj = objects[key]
            if not skip(obj):
                translate(obj)
        return
    versions = fast_versions(objects, keys)
    blocks, kept = cache.route_blocks, {}
    ends = [n + 1 for n, key in enumerate(keys) if not hash(key) & _BLOCK_END_BITS]
    if keys and (not ends or ends[-1] != len(keys)):
        ends.append(len(keys))
    start = 0
    for end in ends:
        first = keys[start]
        block = blocks.get(first)
        if (block is not None and block.keys == keys[start:end] and block.versions == versions[start:end]
                and ctx.replay(block.recording)):
            apply(block.extra)
            cache.hits += end - start
            kept[first] = block
        else:
            extra: dict[Any, int] = {}
            rec, whole = ctx.record(_each, ctx, cache, objects, keys, versions, start, end, translate, apply, skip, extra)
            if whole and rec.replayable(bulk=True):
                kept[first] = _Block(keys[start:end], versions[start:end], rec, extra)
        start = end
    cache.route_blocks = kept


def _each(ctx: Any, cache: RenderCache, objects: Mapping[str, Any], keys: list[str], versions: list[Any], start: int,
          end: int, translate: Callable[[Any], list[Any]], apply: Callable[[Mapping[Any, int]], None],
          skip: Callable[[Any], bool], extra: dict[Any, int]) -> bool:
    """The objects of one block one by one (see :func:`replay_or_translate`), their extra effects
    counted into ``extra``; True when each is replayable."""
    memo = cache.routes
    whole = True
    for n in range(start, end):
        key = keys[n]
        obj = objects[key]
        if skip(obj):
            continue
        version = versions[n]
        if version is None:
            translate(obj)
            whole = False
            continue
        hit = memo.get(key)
        if hit is not None and hit[0] == version and ctx.replay(hit[1]):
            items = hit[1].extra
            apply(_counted(items))
            cache.hits += 1
        else:
            rec, items = ctx.record(translate, obj)
            rec.extra = items
            cache.misses += 1
            if rec.replayable():
                memo[key] = (version, rec)
            else:
                memo.pop(key, None)
                whole = False
        for item in items:
            extra[item] = extra.get(item, 0) + 1
    return whole


def _counted(items: Iterable[Any]) -> dict[Any, int]:
    counts: dict[Any, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


@dataclass(slots=True)
class IngressParts:
    """The Ingress translation of the last render, Ingress by Ingress: each owned Ingress's
    effects recorded apart, and what tells whether it shares anything with another (an
    Ingress's paths depend on the others only through paths with the same host, path and kind:
    which is older, RouteConflict, canaries). An Ingress that changed and shares no such path
    with another, before or after, is translated alone and the others replayed."""

    #: Ingress key -> its effects (owned Ingresses, in the order translated)
    recordings: dict[str, Recording] = field(default_factory=dict)
    #: Ingress key -> (the conflict keys of its paths, a canary, binds a certificate)
    facts: dict[str, tuple[frozenset[Any], bool, bool]] = field(default_factory=dict)
    #: the effects of no Ingress in particular (the Ingresses not ours, the listeners)
    rest: Recording | None = None
    #: what the translation read besides the Ingresses; the Ingresses' keys and versions
    deps: Any = None
    keys: tuple[str, ...] = ()
    versions: tuple[Any, ...] = ()
    #: conflict key -> how many Ingresses have a path with it
    holders: dict[Any, int] = field(default_factory=dict)

    #: the parts in blocks of consecutive Ingresses (as for the HTTPRoutes): (their keys, the
    #: recording of their effects in order), made when first needed
    blocks: list[tuple[list[str], Recording]] | None = None

    def in_blocks(self) -> list[tuple[list[str], Recording]]:
        if self.blocks is None:
            blocks: list[tuple[list[str], Recording]] = []
            keys: list[str] = []
            for key in self.recordings:
                keys.append(key)
                if not hash(key) & _BLOCK_END_BITS:
                    blocks.append((keys, self._absorbed(keys)))
                    keys = []
            if keys:
                blocks.append((keys, self._absorbed(keys)))
            self.blocks = blocks
        return self.blocks

    def _absorbed(self, keys: list[str]) -> Recording:
        rec = Recording()
        for key in keys:
            rec.absorb(self.recordings[key])
        rec.replayable(bulk=True)
        return rec

    def renew(self, changed: Iterable[str]) -> None:
        """The blocks with an Ingress of ``changed`` (whose part is new) are made again."""
        if self.blocks is not None:
            changed = set(changed)
            self.blocks = [(keys, self._absorbed(keys)) if changed.intersection(keys) else (keys, rec)
                           for keys, rec in self.blocks]

    def count(self) -> None:
        holders: dict[Any, int] = {}
        for keys, _, _ in self.facts.values():
            for k in keys:
                holders[k] = holders.get(k, 0) + 1
        self.holders = holders

    def moved(self, before: Iterable[Any], after: Iterable[Any]) -> None:
        """An Ingress's conflict keys were ``before`` and are ``after``: the counts follow."""
        holders = self.holders
        for k in before:
            holders[k] -= 1
            if not holders[k]:
                del holders[k]
        for k in after:
            holders[k] = holders.get(k, 0) + 1

    def changed(self, keys: tuple[str, ...], versions: tuple[Any, ...], most: int) -> list[str] | None:
        """The keys of the Ingresses whose version changed (at most ``most``); None when
        Ingresses were added or removed, or more changed."""
        if keys != self.keys:
            return None
        out = [k for k, a, b in zip(keys, versions, self.versions, strict=True) if a != b]
        if len(out) > most or any(a[0] != b[0] for k, a, b in zip(keys, versions, self.versions, strict=True)
                                  if k in out):
            return None  # (many, or one deleted and made again: another uid)
        return out

    def alone(self, key: str, conflict_keys: frozenset[Any] | None = None) -> bool:
        """The Ingress ``key`` is an owned primary that shares no path with another, as it was
        (and with ``conflict_keys``, its paths' now)."""
        facts = self.facts.get(key)
        if facts is None or facts[1] or key not in self.recordings:
            return False
        holders = self.holders
        if any(holders.get(k, 0) != 1 for k in facts[0]):
            return False
        return conflict_keys is None or all(holders.get(k, 0) == (1 if k in facts[0] else 0) for k in conflict_keys)


class UnreachableMemo:
    """The unreachable rules (render/reach.py) of the last render's routes, and what the
    search found of each of their keys: after a change only the keys of the routes gone or
    new are searched again (:func:`~titanium_gateway.render.reach.bucket_records`), and the
    answer is put together from every key's findings (``reach.unreachable_of``): the same
    answer as ``find_unreachable`` over all routes."""

    __slots__ = ("routes", "found", "groups", "open", "covered")

    def __init__(self) -> None:
        self.routes: tuple[Any, ...] = ()
        self.found: tuple[Any, ...] = ()
        #: key -> its routes in order
        self.groups: dict[Any, list[Any]] = {}
        #: unit -> how many of its routes are not covered (with the routes of no key)
        self.open: dict[Any, int] = {}
        #: key -> its covered routes (with their covers) of bucket_records, for the keys with one
        self.covered: dict[Any, list[Any]] = {}

    def find(self, routes: tuple[Any, ...], key: Callable[[Any], Any]) -> tuple[Any, ...]:
        """The unreachable rules of ``routes`` (in order by ``key``, the render's route order)."""
        from titanium_gateway.render import reach

        old = self.routes
        p, s = common_ends(old, routes, same_objects)
        if p == len(old) == len(routes):
            return self.found
        gone, new = old[p:len(old) - s], routes[p:len(routes) - s]
        if not old or (len(gone) + len(new)) * 8 > len(routes):
            self._build(routes)
        else:
            touched: set[Any] = set()
            for r in gone:  # (what the keys touched found is forgotten before they change)
                k = reach.bucket_key(r)
                if k is not None and k not in touched:
                    touched.add(k)
                    self._forget(k)
            for r in new:
                k = reach.bucket_key(r)
                if k is not None and k not in touched and k in self.groups:
                    touched.add(k)
                    self._forget(k)
            for r in gone:
                k = reach.bucket_key(r)
                if k is None:
                    self._count(reach.unit_of(r), -1)
                    continue
                group = self.groups[k]
                at = bisect.bisect_left(group, key(r), key=key)
                while group[at] is not r:
                    at += 1
                del group[at]
                touched.add(k)
            for r in new:
                k = reach.bucket_key(r)
                if k is None:
                    self._count(reach.unit_of(r), 1)
                    continue
                bisect.insort_right(self.groups.setdefault(k, []), r, key=key)
                touched.add(k)
            for k in touched:
                if self.groups[k]:
                    self._search(k)
                else:
                    del self.groups[k]
        self.routes = routes

        def position(r: Any) -> int:
            at = bisect.bisect_left(routes, key(r), key=key)
            while routes[at] is not r:
                at += 1
            return at

        opened = self.open
        self.found = reach.unreachable_of(
            [item for found in self.covered.values() for item in found],
            lambda unit: opened.get(unit, 0) > 0, position)
        return self.found

    def _build(self, routes: tuple[Any, ...]) -> None:
        from titanium_gateway.render import reach

        self.groups, self.open, self.covered = {}, {}, {}
        for r in routes:
            k = reach.bucket_key(r)
            if k is None:
                self._count(reach.unit_of(r), 1)
            else:
                group = self.groups.get(k)
                if group is None:
                    self.groups[k] = [r]
                else:
                    group.append(r)
        for k in self.groups:
            self._search(k)

    def _search(self, k: Any) -> None:
        from titanium_gateway.render import reach

        covered, uncovered = reach.bucket_records(self.groups[k])
        for r in uncovered:
            self._count(reach.unit_of(r), 1)
        if covered:
            self.covered[k] = covered

    def _forget(self, k: Any) -> None:
        """Take back what :meth:`_search` counted of the key ``k`` (its routes as they are)."""
        from titanium_gateway.render import reach

        _, uncovered = reach.bucket_records(self.groups[k])
        for r in uncovered:
            self._count(reach.unit_of(r), -1)
        self.covered.pop(k, None)

    def _count(self, unit: Any, n: int) -> None:
        if unit is None:
            return
        got = self.open.get(unit, 0) + n
        if got:
            self.open[unit] = got
        else:
            del self.open[unit]


class RenderCache:
    """Recordings kept between renders (see the module doc). Pass the same instance to every
    render of one controller; ``hits``/``misses`` count HTTPRoute recordings replayed or made."""

    def __init__(self) -> None:
        self.route_deps: Any = None
        self.routes: dict[str, tuple[tuple[str, str], Recording]] = {}
        #: the HTTPRoutes' blocks by their first key (:func:`replay_or_translate`)
        self.route_blocks: dict[str, _Block] = {}
        #: the last render's HTTPRoutes' keys sorted, and its statuses'
        self.route_keys = SortedKeys()
        self.status_keys = SortedKeys()
        self.ingress_keys = SortedKeys()
        self.ingress_deps: Any = None
        self.ingress: Recording | None = None
        self.ingress_parts: IngressParts | None = None
        #: Ingress path route id -> (Ingress + canary versions, recording of its routes)
        self.ingress_path_deps: Any = None
        self.ingress_paths: dict[str, tuple[Any, Recording]] = {}
        #: the last render's routes in precedence order (a start for the next sort)
        self.order: Sequence[Any] = ()
        #: the same routes by (data plane, route id)
        self.order_index: Mapping[tuple[str, str], Any] = {}
        #: cluster id -> (Service + EndpointSlice versions, cluster) of the last render
        self.clusters: dict[str, tuple[Any, Any]] = {}
        #: the text of the last render's routes and clusters (emit.EmitCache), per data plane
        self.texts: dict[str, EmitCache] = {}
        #: the last render's routes (in order) and the unreachable rules found in them
        self.unreachable = UnreachableMemo()
        #: (namespace, name) of the Services looked up that were missing or a data plane's own:
        #: the last item of each of the dependencies above is their versions
        self.service_lookups: set[tuple[str, str]] = set()
        self.hits = 0
        self.misses = 0
        self.ingress_hits = 0

    def ingress_versions(self, ingresses: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """:func:`versions` of the Ingresses (their keys sorted from the last render's)."""
        keys = self.ingress_keys.sort(ingresses)
        found = fast_versions(ingresses, keys)
        if None in found:
            return None
        return (tuple(keys), tuple(found))

    def track_lookups(self, looked_up: set[tuple[str, str]],
                      versions: Callable[[Iterable[tuple[str, str]]], tuple[Any, ...]]) -> None:
        """After a render's translations: add the Services it looked up by name to the tracked
        ones, with their versions now (the same snapshot the recordings were made from)."""
        if looked_up <= self.service_lookups:
            return
        self.service_lookups |= looked_up
        now = versions(self.service_lookups)
        for name in ("route_deps", "ingress_deps", "ingress_path_deps"):
            deps = getattr(self, name)
            if deps is not None:
                setattr(self, name, (*deps[:-1], now))

    def clear(self) -> None:
        self.route_deps = None
        self.routes.clear()
        self.route_blocks = {}
        self.route_keys, self.status_keys, self.ingress_keys = SortedKeys(), SortedKeys(), SortedKeys()
        self.ingress_deps = None
        self.ingress = None
        self.ingress_parts = None
        self.ingress_path_deps = None
        self.ingress_paths = {}
        self.order = ()
        self.order_index = {}
        self.clusters = {}
        self.texts = {}
        self.unreachable = UnreachableMemo()
        self.service_lookups = set()

    @property
    def text(self) -> EmitCache:
        """The text of the shared data plane's routes and clusters."""
        return self.plane_text("")

    def plane_text(self, plane: str) -> EmitCache:
        """The text of the last render's routes and clusters of one data plane."""
        cache = self.texts.get(plane)
        if cache is None:
            cache = self.texts[plane] = EmitCache()
        return cache

    def keep_texts(self, planes: Iterable[str]) -> None:
        """Drop the text of the data planes that are gone."""
        keep = set(planes)
        self.texts = {k: v for k, v in self.texts.items() if k in keep}


def order_from_hint(hint: Sequence[Any], current: Mapping[tuple[str, str], Any], key: Callable[[Any], Any],
                    fresh: Sequence[Any] | None = None, index: Mapping[tuple[str, str], Any] | None = None
                    ) -> list[Any]:
    """The routes of ``current`` (by ``(plane, id)``) sorted by ``key``, stably in the order
    ``hint`` then ``current`` (exactly ``sorted``'s answer), given ``hint``, the last render's
    routes sorted by ``key``: the routes still there are taken in its order and only the others
    are placed.

    ``fresh``: the routes of ``current`` made by this render's translations (the others are
    replayed: routes of ``hint``), ``index``: ``hint`` by ``(plane, id)``. With them, when
    every route gone is one a fresh route took the place of (a route changed), nothing is done
    per route of ``hint``; else the routes gone and new are found by the objects' identities,
    with set operations and ``compress`` (C speed). The places are found by bisection."""
    values = current.values()
    gone: list[Any] | None = None
    if fresh is not None and index is not None:
        new = list(fresh)
        missing = len(hint) - (len(current) - len(new))
        gone = []
        if missing:
            for r in new:
                old = index.get((r.plane, r.id))
                if old is not None and old is not r:
                    gone.append(old)
            if len(gone) != missing:
                gone = None
    if gone is None:
        now = set(map(id, values))
        before = set(map(id, hint))
        new_ids, gone_ids = now - before, before - now
        gone = list(itertools.compress(hint, map(gone_ids.__contains__, map(id, hint)))) if gone_ids else []
        new = list(itertools.compress(values, map(new_ids.__contains__, map(id, values)))) if new_ids else []
    if len(gone) * 16 > len(hint):
        drop = set(map(id, gone))
        items = [r for r in hint if id(r) not in drop]
    else:
        items = list(hint)
        for r in gone:
            at = bisect.bisect_left(items, key(r), key=key)
            while items[at] is not r:  # (equal keys: the one gone is further on)
                at += 1
            del items[at]
    if new:
        new.sort(key=key)
        if len(new) * 16 > len(items):
            items += new
            items.sort(key=key)
        else:
            for r in new:
                bisect.insort_right(items, r, key=key)
    if len(items) != len(current):  # (a replayed route not from ``hint``: never, but then a plain sort)
        return sorted(values, key=key)
    return items
