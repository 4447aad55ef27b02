"""The status of the BackendTLSPolicies (render/backendtls.py decides their conditions), once the
documents are made: one ``status.ancestors`` entry per Gateway of ours through which a targeted
Service is used (a route of a data plane's document forwarding or mirroring to it, through its
accepted parents; a ListenerSet parent counts as its Gateway), with ``Accepted`` (``Accepted``,
``Conflicted``, ``Invalid``, ``NoValidCACertificate``, ``TargetNotFound``) and ``ResolvedRefs``
(``ResolvedRefs``, ``InvalidCACertificateRef``, ``InvalidKind``). Other controllers' entries are
kept (``statusmerge``); a policy no Gateway of ours uses anymore loses ours (``Released``).
Each policy's entries are recorded as a ``PolicyStatusOutcome``, built into its status by
render/status/policies.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from titanium_gateway import kinds
from titanium_gateway.render import fields as f
from titanium_gateway.render.backendtls import API_VERSION, KIND, MAX_ANCESTORS, BackendTlsPolicies, Policy
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.result import ObjectStatus, Released
from titanium_gateway.render.status.conditions import existing_conditions, generation
from titanium_gateway.render.status.policies import AncestorOutcome, PolicyStatusOutcome
from titanium_gateway.twp.model import Document, cluster_ids

if TYPE_CHECKING:
    from titanium_gateway.render.builder import RenderContext

_GATEWAY = kinds.GATEWAY.kind
_LISTENER_SET = kinds.LISTENER_SET.kind
_HTTP_ROUTE = kinds.HTTP_ROUTE.kind


def _services_used(ctx: RenderContext, documents: Iterable[Document]) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(namespace, Service) -> the HTTPRoutes (namespace, name) of the documents that send it traffic."""
    out: dict[tuple[str, str], set[tuple[str, str]]] = {}
    seen: set[tuple[Any, ...]] = set()
    for document in documents:
        for route in document.routes:
            source = route.source
            if source.kind != _HTTP_ROUTE:
                continue
            behavior = route.behavior
            ids = cluster_ids(behavior.action) + ((behavior.mirror.cluster_id,) if behavior.mirror is not None else ())
            for cid in ids:
                mark = (source.namespace, source.name, cid)
                if mark in seen:
                    continue
                seen.add(mark)
                cluster = document.cluster(cid)
                backend = cluster.backend if cluster is not None else None
                if backend is not None:
                    out.setdefault((backend.namespace, backend.service), set()).add((source.namespace, source.name))
    return out


def _route_gateways(ctx: RenderContext, route: tuple[str, str], set_parents: Mapping[tuple[str, str], tuple[str, str]]
                    ) -> set[tuple[str, str]]:
    """The Gateways of ours an HTTPRoute is accepted by (its status made in this render)."""
    status = ctx.status.get((_HTTP_ROUTE, *route))
    out: set[tuple[str, str]] = set()
    if status is None or type(status) is not ObjectStatus:
        return out
    for entry in f.items(status.status.get("parents")):
        if not any(c.get("type") == "Accepted" and c.get("status") == "True" for c in f.items(entry.get("conditions"))):
            continue
        ref = f.mapping(entry.get("parentRef"))
        key = (f.text(ref.get("namespace")) or route[0], f.text(ref.get("name")))
        kind = f.string(ref.get("kind")) or _GATEWAY
        if kind == _GATEWAY:
            out.add(key)
        elif kind == _LISTENER_SET and key in set_parents:
            out.add(set_parents[key])
    return out


def finish(ctx: RenderContext, policies: BackendTlsPolicies, documents: Mapping[str, Document],
           set_parents: Mapping[tuple[str, str], tuple[str, str]]) -> None:
    """Once the documents are made (``documents``: each data plane's, by plane key): the CA file
    of each policy a data plane's clusters use into that data plane's TLS Secret (here rather
    than where a backend is resolved: replayed translations resolve nothing), and every policy's
    status (:func:`status`)."""
    if not policies:
        return
    files = policies.ca_files()
    if files:
        for plane, document in documents.items():
            for cluster in document.clusters:
                backend = cluster.backend
                for key, name in backend.settings.tls if backend is not None else ():
                    if key == "caFile" and name in files:
                        ctx.add_tls_file(name, files[name], plane)
    status(ctx, policies, documents.values(), set_parents)


def status(ctx: RenderContext, policies: BackendTlsPolicies, documents: Iterable[Document],
           set_parents: Mapping[tuple[str, str], tuple[str, str]]) -> None:
    """The ``status.ancestors`` entries of ours of every policy (see the module doc).
    ``set_parents``: (namespace, name) of each ListenerSet of ours -> its Gateway."""
    controller = ctx.options.controller_name
    used = _services_used(ctx, documents) if policies else {}
    gateways_of: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for policy in policies.policies:
        gateways: set[tuple[str, str]] = set()
        for svc in policy.services:
            for route in used.get(svc, ()):
                hit = gateways_of.get(route)
                if hit is None:
                    hit = gateways_of[route] = _route_gateways(ctx, route, set_parents)
                gateways |= hit
        _policy_status(ctx, policy, sorted(gateways), controller)
    # a policy that carries an entry of ours but is not in the snapshot's policies list (no name)
    # is left alone; those whose targets are no longer used by us are released in _policy_status


def _policy_status(ctx: RenderContext, policy: Policy, gateways: list[tuple[str, str]], controller: str) -> None:
    old = [a for a in f.items(f.mapping(policy.obj.get("status")).get("ancestors"))
           if f.is_mapping(a) and a.get("controllerName") == controller]
    if not gateways:
        if old:
            ctx.add_status(Released.of(API_VERSION, KIND, policy.namespace, policy.name))
        return
    others = sum(1 for a in f.items(f.mapping(policy.obj.get("status")).get("ancestors"))
                 if f.is_mapping(a) and a.get("controllerName") != controller)
    room = max(0, MAX_ANCESTORS - others)
    entries = []
    for ns, name in gateways[:room]:
        ref = {"group": GATEWAY_GROUP, "kind": _GATEWAY, "namespace": ns, "name": name}
        previous: list[Mapping[str, Any]] = []
        for a in old:
            got = f.mapping(a.get("ancestorRef"))
            if f.text(got.get("name")) == name and (f.text(got.get("namespace")) or policy.namespace) == ns \
                    and (f.string(got.get("kind")) or _GATEWAY) == _GATEWAY:
                previous = existing_conditions(a)
                break
        entries.append(AncestorOutcome(ref, (("Accepted", *policy.accepted), ("ResolvedRefs", *policy.resolved)),
                                       previous))
    ctx.policy_status(PolicyStatusOutcome(KIND, policy.namespace, policy.name, generation(policy.obj),
                                          tuple(entries), API_VERSION))
