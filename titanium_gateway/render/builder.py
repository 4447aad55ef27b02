"""The render accumulator: one :class:`RenderContext` per render, filled by every translator.

Order of a render (see :func:`titanium_gateway.render.render`):
GatewayClasses -> Gateways (listeners, certificates) -> HTTPRoutes -> ``ingress.translate(ctx)``
-> routes ordered -> emit -> Programmed conditions -> result.

Context API for translators (HTTPRoute, Ingress):

* ``ctx.snapshot``, ``ctx.options``, ``ctx.now`` — inputs (never mutate objects).
* ``ctx.backends`` — :class:`~titanium_gateway.render.backends.BackendIndex`; use
  ``backends.resolve_backend(ctx.backends, ns, svc, port, settings)`` then
  ``ctx.add_cluster(resolution.cluster)``.
* ``ctx.grants`` — :class:`~titanium_gateway.render.referencegrant.ReferenceGrantIndex`.
* ``ctx.namespace_labels(ns)`` — labels of a Namespace (absent Namespace: only
  ``kubernetes.io/metadata.name``).
* ``ctx.gateway_ports`` — ``{data-plane port: "HTTP" | "HTTPS"}`` used by programmed Gateway
  listeners (filled before Ingress runs; Ingress reports PortUnavailable on a clash).
* ``ctx.add_listener(port, decrypt) -> bool`` — a data-plane listener; False (nothing changed)
  when the port is already bound with the other ``decrypt`` value.
* ``ctx.add_cluster(cluster) -> str`` — dedup by ``cluster["id"]`` (first wins); returns the id.
  Use :func:`~titanium_gateway.render.backends.cluster_id` for ids.
* ``ctx.add_route(route, key) -> bool`` — ``route`` is the emitted dict WITHOUT ``order``
  (keys: ``id``, ``match``, one action, optional ``mirror``, ``transforms``, ``policies``,
  ``limits``); ``key`` from :func:`titanium_gateway.render.precedence.route_key` (pass the
  same ``route_id``). False when the id is already taken (nothing added).
* ``ctx.bind_certificate(namespace, name, hosts, default_rank=None) -> CertificateConversion``
  — converts the kubernetes.io/tls Secret ``namespace/name`` (memoized), and on success adds
  ``<ns>.<name>.pfx`` to the TLS files and records SNI ``hosts``; ``default_rank`` (a tuple,
  smaller wins, e.g. ``(created, ns, name, index)``) makes it a default candidate: the
  smallest rank over all bindings becomes the one ``default: true`` item. On error (missing
  Secret, conversion failure) nothing is bound and ``.error`` says why (InvalidCertificateRef).
* ``ctx.add_tls_file(name, data)`` — another file of the TLS Secret (upstream-TLS PEM).
* ``ctx.add_status(ObjectStatus)`` — keyed by (kind, namespace, name); the last one wins.
* ``ctx.add_event(EventRecord)`` — deduplicated by ``EventRecord.dedupe_key``.
* ``ctx.conditions(obj, previous)`` — a :class:`~titanium_gateway.render.conditions.ConditionList`
  stamped with the object's generation and ``ctx.now``.
* ``ctx.shared["gateways"]`` — ``{(ns, name): gateway.GatewayInfo}`` of our Gateways (read only).

Precedence tiers (``precedence.TIER_*``): NORMAL for routes whose match is exact, DEGRADED for a
500 route carrying only the expressible part of a match it cannot express (ordered after every
normal route, so it never shadows), DEFAULT_BACKEND for the Ingress defaultBackend (last).
A route that cannot be honoured is ``{"id", "match", "directResponse": {"status": 500, "body":
"<Reason>: <why>"}}``; an invalid share of a weighted split points at a cluster with
``destinations: []`` (503).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from titanium_gateway.render.backends import BackendIndex, resolve_backend
from titanium_gateway.render.certificates import CertificateConversion, convert_tls_secret, pfx_file_name
from titanium_gateway.render.conditions import ConditionList
from titanium_gateway.render.emit import (
    Pieces,
    cluster_fragment,
    match_lead,
    route_fragment,
    route_fragment_split,
    route_head,
    route_head_of_host,
    utf8_size,
)
from titanium_gateway.render.memo import Recording
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.precedence import PrecedenceKey, host_part
from titanium_gateway.render.referencegrant import ReferenceGrantIndex
from titanium_gateway.render.result import CertificateEntry, EventRecord, ListenerKey, ObjectStatus
from titanium_gateway.render.snapshot import Snapshot

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass
class _CertBinding:
    namespace: str
    name: str
    hosts: set[str] = field(default_factory=set)
    default_rank: tuple[Any, ...] | None = None


class RenderContext:
    """Everything one render accumulates (see module doc for the API)."""

    def __init__(self, snapshot: Snapshot, options: RenderOptions) -> None:
        self.snapshot = snapshot
        self.options = options
        self.now = snapshot.now
        self.backends = BackendIndex(snapshot)
        self.grants = ReferenceGrantIndex(snapshot)
        #: HTTPRoute backendRef -> (cluster, reason, message), see httproute._resolve_ref
        self.resolved_refs: dict[tuple[Any, ...], tuple[Any, str, str]] = {}
        #: (id of a rule's backendRefs list, namespace, settings) -> (that list, what it makes), see
        #: httproute._backends_of
        self.rule_backends: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        #: id of a rule's filters list -> (that list, its header transforms and problems, or
        #: None when there are other filters), see httproute._header_filters
        self.rule_filters: dict[int, tuple[Any, Any]] = {}
        #: content of a common-shape HTTPRoute match -> (what it makes, its problems), see
        #: httproute._match_key
        self.rule_matches: dict[tuple[Any, ...], tuple[Any, list[str]]] = {}
        #: id of a rule's ``matches`` list of common-shape matches only -> (that list, the
        #: matches it makes, their problems), see httproute._rule_matches
        self.match_lists: dict[int, tuple[Any, tuple[Any, ...], tuple[str, ...]]] = {}
        #: id of a rule's action (backends) or transforms list -> (it, its route lines), see
        #: httproute._block_text
        self.tail_texts: dict[int, tuple[Any, str | None]] = {}
        #: match host -> the start of its routes' match line (emit.match_lead), and its
        #: precedence part (precedence.host_part)
        self._match_leads: dict[str, str] = {}
        self.host_parts: dict[str | None, str] = {}
        #: (generation, id of the previous conditions list, Accepted, ResolvedRefs) -> (that
        #: list, its ConditionList, the conditions), see httproute._status
        self.route_conditions: dict[tuple[Any, ...], tuple[Any, Any, list[Any]]] = {}
        #: id of a Secret -> (it, its certificate conversion), see convert
        self._conversions: dict[int, tuple[Any, CertificateConversion]] = {}
        #: (id of a parentRef, the route's namespace) -> (it, its identity), see
        #: httproute._identity
        self.parent_identities: dict[tuple[int, str], tuple[Any, tuple[Any, ...]]] = {}
        #: id of a parentRef -> (it, its echo), see httproute._status
        self.parent_echoes: dict[int, tuple[Any, dict[str, Any]]] = {}
        #: (id of a Gateway, sectionName, port, route namespace) -> (that Gateway, whether any
        #: listener is selected, the listeners counted, those admitted, whether one of those has
        #: a hostname), see httproute._attach
        self.parent_listeners: dict[tuple[Any, ...], tuple[Any, bool, list[Any], list[Any], bool]] = {}
        self._ns_labels: dict[str, dict[str, str]] = {}
        for key, ns in snapshot.namespaces.items():
            meta = ns.get("metadata") if isinstance(ns, Mapping) else None
            meta = meta if isinstance(meta, Mapping) else {}
            name = meta.get("name") if isinstance(meta.get("name"), str) else key
            labels = meta.get("labels")
            clean = {
                str(k): str(v) for k, v in (labels.items() if isinstance(labels, Mapping) else ())
                if isinstance(k, str) and isinstance(v, str)
            }
            clean.setdefault(NAMESPACE_NAME_LABEL, name)
            self._ns_labels[name] = clean
        self.gateway_ports: dict[int, str] = {}
        self.listeners: dict[int, bool] = {}
        self.clusters: dict[str, dict[str, Any]] = {}
        #: route id -> (key, id, fragment head, fragment tail: text, or (match line, the text
        #: after it shared by the routes of one rule)), or (key, id, route dict, None)
        #: for a route the fast writer cannot cut (written once its order is known)
        self._routes: dict[str, tuple[PrecedenceKey, str, Any, str | None]] = {}
        self._route_count = 0
        #: the routes' entries in precedence order, once taken (the next render's sort hint)
        self.sorted_entries: list[Any] = []
        self._certs: dict[tuple[str, str], _CertBinding] = {}
        self.tls_files: dict[str, bytes] = {}
        self.statuses: dict[tuple[str, str, str], ObjectStatus] = {}
        self._events: dict[tuple[str, str, str, str, str], EventRecord] = {}
        #: Free-form data shared between translators (e.g. Gateway info for HTTPRoutes).
        self.shared: dict[str, Any] = {}
        #: While set, every output call is also recorded here (see render/memo.py).
        self.recording: Recording | None = None
        #: cluster id -> (namespace, service, port, settings, id suffix) of the clusters
        #: recorded or replayed by this render; ``known_recipes``: the previous render's
        self.recipes: dict[str, tuple[Any, ...]] = {}
        self.known_recipes: Mapping[str, tuple[Any, ...]] = {}
        #: cluster id -> (Service version, cluster, fragment) of the previous render
        self.known_clusters: Mapping[str, tuple[Any, dict[str, Any], str]] = {}
        #: the previous render's route entries in order: a near-sorted start for the sort
        self.order_hint: list[Any] = []
        #: keep :attr:`sorted_entries` for the next render's hint (with a RenderCache only)
        self.keep_order = False

    # -- inputs -----------------------------------------------------------------------------
    def namespace_labels(self, namespace: str) -> Mapping[str, str]:
        labels = self._ns_labels.get(namespace)
        if labels is None:
            return {NAMESPACE_NAME_LABEL: namespace}
        return labels

    def conditions(self, obj: Mapping[str, Any], previous: Iterable[Mapping[str, Any]]) -> ConditionList:
        conds = ConditionList(obj, previous=previous, now=self.now)
        if self.recording is not None:
            self.recording.conditions.append(conds)
        return conds

    # -- outputs ----------------------------------------------------------------------------
    def add_listener(self, port: int, decrypt: bool) -> bool:
        if self.recording is not None:
            self.recording.listeners.append((port, decrypt))
        current = self.listeners.get(port)
        if current is None:
            self.listeners[port] = decrypt
            return True
        return current == decrypt

    def add_cluster(self, cluster: Mapping[str, Any]) -> str:
        cid = cluster["id"]
        if type(cid) is not str:
            cid = str(cid)
        if self.recording is not None:
            self._record_cluster(cid, cluster)
        if cid not in self.clusters:
            self.clusters[cid] = dict(cluster)
        return cid

    def _record_cluster(self, cid: str, cluster: Mapping[str, Any]) -> None:
        """How to get this cluster again in a later render: its id, with the Service port it
        resolves in :attr:`recipes` (its endpoints may have changed by then), or the constant
        itself (no destinations)."""
        rec = self.recording
        assert rec is not None
        if cid in rec.cluster_ids:
            return
        recipes = self.backends.recipes
        suffix = ""
        recipe = recipes.get(cid)
        if recipe is None:
            for suffix in ("-h2c", "-grpc"):
                if cid.endswith(suffix):
                    recipe = recipes.get(cid[: -len(suffix)])
                    break
        if recipe is not None:
            full = (*recipe, suffix)
            again = self._resolve_recipe(full)
            if again is not None and again == cluster:
                rec.cluster_ids.add(cid)
                rec.clusters.append(cid)
                self.recipes[cid] = full
                return
        elif cluster.keys() <= {"id", "destinations"} and cluster.get("destinations") == []:
            rec.cluster_ids.add(cid)
            rec.clusters.append(dict(cluster))
            return
        rec.volatile = True

    def _resolve_recipe(self, recipe: tuple[Any, ...]) -> dict[str, Any] | None:
        namespace, service, port, settings, suffix = recipe
        res = resolve_backend(self.backends, namespace, service, port, settings)
        if res.cluster is None:
            return None
        if suffix:
            return {**res.cluster, "id": f"{res.cluster['id']}{suffix}"}
        return res.cluster

    def add_route(self, route: Mapping[str, Any], key: PrecedenceKey, tail: str | None = None) -> bool:
        """Written to text right away (without ``order``, spliced in once every route is
        known), so the route dicts never pile up and a recording holds text only. ``tail``:
        the text of every line after ``match`` when the caller already has it
        (:func:`~titanium_gateway.render.emit.route_tail` of the route's other keys, shared by
        the routes of one rule)."""
        rid = str(route["id"])
        if rid in self._routes:
            return False
        if tail is not None and type(route.get("id")) is str:
            lines = route_head(rid, route["match"])
            if lines is not None:
                self._add_entry(rid, (key, rid, lines[0], (lines[1], tail)))  # tail kept shared
                return True
        split = route_fragment_split(route) if type(route.get("id")) is str else None
        entry = (key, rid, split[0], split[1]) if split is not None else (key, rid, dict(route), None)
        self._add_entry(rid, entry)
        return True

    def add_route_text(self, rid: str, host: str | None, match: Mapping[str, Any], key: PrecedenceKey,
                       tail: str, body: str | None = None, plain_id: bool = False) -> bool | None:
        """:meth:`add_route` of ``{"id": rid, "match": {"host": host, **match}, <the keys tail was
        written from>}`` (no host when ``host`` is empty) without building that dict; None when
        the id and match lines cannot be written by the fast writer (then call
        :meth:`add_route` with the whole route)."""
        routes = self._routes
        if plain_id and body is not None and host and type(host) is str and body != "{}":
            # route_head_of_host's common case, inline (once per data-plane route; a test
            # checks the two agree): an id written as it is, a host and a match body
            lead = self._match_leads.get(host)
            if lead is None:
                lead = self._match_leads[host] = match_lead(host)
            entry = (key, rid, f"- id: {rid}\n", (f"{lead}{body[1:]}\n", tail))  # tail kept shared
        else:
            if rid in routes:
                return False
            lines = route_head_of_host(rid, host, match, body, plain_id)
            if lines is None:
                return None
            entry = (key, rid, lines[0], (lines[1], tail))
        if routes.setdefault(rid, entry) is not entry:  # (_add_entry, inline: once per data-plane route)
            return False  # the id is taken: the first route keeps it
        if self.recording is not None:
            self.recording.routes.append(entry)
        return True

    def _add_entry(self, rid: str, entry: tuple[Any, ...]) -> None:
        self._routes[rid] = entry
        if self.recording is not None:
            self.recording.routes.append(entry)

    def bind_certificate(
        self,
        namespace: str,
        name: str,
        hosts: Iterable[str],
        default_rank: tuple[Any, ...] | None = None,
    ) -> CertificateConversion:
        secret = self.snapshot.secrets.get(f"{namespace}/{name}")
        if secret is None:
            return CertificateConversion(None, f"Secret {namespace}/{name} not found")
        conv = self.convert(secret)
        if not conv.ok:
            return CertificateConversion(None, f"Secret {namespace}/{name}: {conv.error}")
        if self.recording is not None:
            hosts = tuple(hosts)
            self.recording.certificates.append((namespace, name, hosts, default_rank))
        binding = self._certs.setdefault((namespace, name), _CertBinding(namespace, name))
        binding.hosts.update(h for h in hosts if h)
        if default_rank is not None and (binding.default_rank is None or default_rank < binding.default_rank):
            binding.default_rank = default_rank
        assert conv.pfx is not None
        self.tls_files[pfx_file_name(namespace, name)] = conv.pfx
        return conv

    def add_tls_file(self, name: str, data: bytes) -> None:
        if self.recording is not None:
            self.recording.tls_files.append((name, data))
        self.tls_files[name] = data

    def add_status(self, status: ObjectStatus) -> None:
        if self.recording is not None:
            self.recording.statuses.append(status)
        self.statuses[status.key] = status

    def add_event(self, event: EventRecord) -> None:
        if self.recording is not None:
            self.recording.events.append(event)
        self._events.setdefault(event.dedupe_key, event)

    # -- memo (render/memo.py) ----------------------------------------------------------------
    def record(self, fn: Callable[..., Any], *args: Any) -> tuple[Recording, Any]:
        """``fn(*args)`` with its effects recorded: ``(recording, fn's result)``. A recording
        made while another one is open is added to that one too."""
        outer, rec = self.recording, Recording()
        self.recording = rec
        try:
            out = fn(*args)
        finally:
            self.recording = outer
        if outer is not None:
            outer.absorb(rec)
        return rec, out

    def replay(self, rec: Recording) -> bool:
        """Apply a recording's effects (added to the open recording, if any). False, with
        nothing changed, when it cannot apply exactly (a cluster no longer resolves, a route id
        is taken): the caller translates the object instead."""
        known = self.clusters
        clusters: list[Mapping[str, Any]] = []
        for c in rec.clusters:
            if type(c) is dict:
                clusters.append(c)
            elif c not in known:
                recipe = self.known_recipes.get(c)
                if recipe is None:
                    return False
                hit = self.known_clusters.get(c)
                if hit is not None and hit[0] == self.backends.version(recipe[0], recipe[1]):
                    got = hit[1]  # same Service and EndpointSlices: the same cluster
                else:
                    got = self._resolve_recipe(recipe)
                    if got is None:
                        return False
                self.recipes[c] = recipe
                clusters.append(got)
            else:
                recipe = self.known_recipes.get(c)
                if recipe is None:
                    return False
                self.recipes[c] = recipe
        routes = self._routes
        for entry in rec.routes:
            if entry[1] in routes:
                return False
        for cluster in clusters:
            cid = str(cluster["id"])
            if cid not in known:
                known[cid] = dict(cluster)
        for entry in rec.routes:
            routes[entry[1]] = entry
        for status in rec.statuses:
            self.statuses[status.key] = status
        for event in rec.events:
            self._events.setdefault(event.dedupe_key, event)
        outer, self.recording = self.recording, None  # absorbed whole below, not call by call
        try:
            for port, decrypt in rec.listeners:
                self.add_listener(port, decrypt)
            for namespace, name, hosts, rank in rec.certificates:
                self.bind_certificate(namespace, name, hosts, rank)
        finally:
            self.recording = outer
        for name, data in rec.tls_files:
            self.tls_files[name] = data
        if outer is not None:
            outer.absorb(rec)
        return True

    # -- finishing --------------------------------------------------------------------------
    def ordered_routes(self) -> list[dict[str, Any]]:
        """Routes sorted by precedence key, each with ``order`` = 1, 2, ... (id first), read
        back from their text; the context is unchanged (the render uses :meth:`take_ordered_routes`)."""
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        text = "".join(self._ordered_pieces(sorted(self._routes.values())).texts)
        return list(yaml.load(text, Loader=loader) or [])

    def end_translation(self) -> None:
        """Drop the translators' per-render memos once every object is translated: what the
        ordering and emit make next (the document and its parts) then no longer adds to them
        at the render's peak. Their values stay where routes and statuses share them."""
        for memo in (self.resolved_refs, self.rule_backends, self.rule_filters, self.rule_matches, self.match_lists,
                     self.tail_texts, self._match_leads, self.host_parts, self.route_conditions, self._conversions,
                     self.parent_identities, self.parent_echoes, self.parent_listeners):
            memo.clear()

    def host_part(self, host: str | None) -> str:
        """:func:`~titanium_gateway.render.precedence.host_part` once per render for each match
        host (the HTTPRoute and Ingress translators share it)."""
        part = self.host_parts.get(host)
        if part is None:
            part = self.host_parts[host] = host_part(host)
        return part

    def convert(self, secret: Any) -> CertificateConversion:
        """``convert_tls_secret(secret)`` once per render for each Secret object (kept alive in
        the value): a Secret is often bound by many Ingresses and listeners, and each call
        decodes and hashes its PEM text to find the conversion."""
        hit = self._conversions.get(id(secret))
        if hit is None or hit[0] is not secret:
            hit = self._conversions[id(secret)] = (secret, convert_tls_secret(secret))
        return hit[1]

    def take_ordered_routes(self) -> Pieces:
        """The routes' text in precedence order (key, then id: ids are unique, so the sort
        never compares further), each with its ``order`` line. Drops the context's
        references as it goes."""
        routes = self._routes
        hint = self.order_hint
        if hint:
            # replayed entries are the very tuples of the previous render: start from its
            # order (Timsort then does ~n comparisons), new entries appended
            items: list[Any] = [e for e in hint if routes.get(e[1]) is e]
            if len(items) != len(routes):
                seen = {e[1] for e in items}
                items += [e for rid, e in routes.items() if rid not in seen]
            items.sort()
        else:
            items = sorted(routes.values())
        self.order_hint = []
        if self.keep_order:  # a cache's recordings hold these strings anyway
            self.sorted_entries = items
        self._route_count = len(items)
        routes.clear()
        return self._ordered_pieces(items)

    def _ordered_pieces(self, items: list[Any]) -> Pieces:
        """Each route's pieces: its id and ``order`` lines, match line and tail (the text
        after the match line, shared by the routes of a rule), or the text of a route the fast
        writer could not cut; in one flat list (see :class:`~titanium_gateway.render.emit.Pieces`)."""
        release = not self.keep_order
        texts: list[str] = []
        ends: list[int] = []
        sizes: list[int] = []
        append, end, size = texts.append, ends.append, sizes.append
        for n in range(len(items)):
            _, _, head, tail = items[n]
            if release:
                items[n] = None  # the text is only needed once it is written
            if type(tail) is tuple and len(tail) == 2:  # (match line, the rule's shared tail)
                match, rest = tail
                head = f"{head}  order: {n + 1}\n"  # (id and order lines: one piece)
                append(head)
                append(match)
                append(rest)
                # the fast writer's text is ASCII (non-ASCII is escaped): len is the size
                size(len(head) + len(match) + len(rest))
                end(len(texts))
                continue
            order = f"  order: {n + 1}\n"
            if tail is None:
                text = route_fragment({"id": head["id"], "order": n + 1, **head})
                append(text)
                size(utf8_size(text))
            else:
                pieces = (head, order, *tail) if type(tail) is tuple else (head, order, tail)
                texts += pieces
                size(sum(map(len, pieces)))
            end(len(texts))
        return Pieces(texts, ends, sizes)

    def route_count(self) -> int:
        return len(self._routes) or self._route_count

    def sorted_clusters(self) -> list[dict[str, Any]]:
        return [self.clusters[k] for k in sorted(self.clusters)]

    def cluster_fragments(self) -> tuple[list[str], dict[str, tuple[Any, dict[str, Any], str]]]:
        """The clusters' fragments in id order, re-using the previous render's text of a
        cluster whose Service and EndpointSlices are unchanged; and the new such table."""
        out: list[str] = []
        table: dict[str, tuple[Any, dict[str, Any], str]] = {}
        known = self.known_clusters
        lists: dict[int, tuple[Any, str]] = {}  # (self.clusters keeps the lists alive meanwhile)
        for cid in sorted(self.clusters):
            cluster = self.clusters[cid]
            recipe = self.recipes.get(cid)
            ver = self.backends.version(recipe[0], recipe[1]) if recipe is not None else None
            hit = known.get(cid) if ver is not None else None
            if hit is not None and hit[0] == ver and hit[1] == cluster:
                text = hit[2]
            else:
                text = cluster_fragment(cluster, lists)
            if ver is not None:
                table[cid] = (ver, cluster, text)
            out.append(text)
        return out, table

    def listener_keys(self) -> frozenset[ListenerKey]:
        return frozenset(ListenerKey(p, d) for p, d in self.listeners.items())

    def certificate_entries(self) -> tuple[CertificateEntry, ...]:
        ranked = [b for b in self._certs.values() if b.default_rank is not None]
        default = min(ranked, key=lambda b: (b.default_rank, b.namespace, b.name)) if ranked else None
        entries = [
            CertificateEntry(
                file=pfx_file_name(b.namespace, b.name),
                hosts=tuple(sorted(b.hosts)),
                source=f"{b.namespace}/{b.name}",
                default=b is default,
            )
            for b in self._certs.values()
        ]
        return tuple(sorted(entries, key=lambda e: e.file))

    def events(self) -> tuple[EventRecord, ...]:
        return tuple(self._events[k] for k in sorted(self._events))

    def sorted_statuses(self) -> tuple[ObjectStatus, ...]:
        return tuple(map(self.statuses.__getitem__, sorted(self.statuses)))
