"""Gateway: listeners, certificates, merging across Gateways, status.

Gateways of our classes are processed oldest first (creationTimestamp, namespace, name), so
"the newer listener" of a cross-Gateway ProtocolConflict is the one seen later. Per listener:

* protocol HTTP, or HTTPS with TLS mode Terminate; else Accepted False UnsupportedProtocol;
* data-plane port: on the shared data plane, the port map (missing -> same port), and a port
  not in ``options.data_plane_ports`` is Accepted False PortUnavailable; on a Gateway's own data
  plane (``per-gateway``) every port is served, on the container port ``render/listenerports.py``
  gives it;
* inside one Gateway: same port with another protocol -> Conflicted ProtocolConflict, same port
  + protocol + hostname -> Conflicted HostnameConflict (the later listener); across Gateways
  only a protocol clash on one data-plane port conflicts (the newer listener);
* ``allowedRoutes.kinds``: HTTPRoute is supported, others give ResolvedRefs False
  InvalidRouteKinds (supportedKinds lists what is served);
* HTTPS ``certificateRefs``: core Secret (else InvalidCertificateRef), ReferenceGrant across
  namespaces (else RefNotPermitted), a valid kubernetes.io/tls pair (else InvalidCertificateRef).

Routes may attach to a listener (and are counted in attachedRoutes) when it is accepted, not
conflicted and serves HTTPRoute; it is *valid* when, for HTTPS, it also has at least one valid
certificate, and *usable* (programmed, its routes emitted) when it is valid and its Gateway has
a data plane (render/planes.py: the shared one, or in ``per-gateway`` mode its own, which a
Gateway whose namespace the controller may not create objects in does not get: Programmed
False, NoResources). Listener conflicts are within one data plane: across Gateways only in
``shared`` mode. :func:`translate` decides each condition
(``ListenerInfo.accepted``/``resolved``/``conflicted``, ``GatewayInfo.acceptance``) in named
steps; :func:`status` writes them, with Programmed (render/programmed.py), once the config
hash is known.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from titanium_gateway.render import fields as f
from titanium_gateway.render import planes as _planes
from titanium_gateway.render import programmed
from titanium_gateway.render.builder import RenderContext
from titanium_gateway.render.conditions import ConditionList, bound_message, existing_conditions
from titanium_gateway.render.gatewayclass import GatewayClasses
from titanium_gateway.render.listenerports import ContainerPorts
from titanium_gateway.render.precedence import creation_timestamp
from titanium_gateway.render.programmed import Delivery
from titanium_gateway.render.referencegrant import GATEWAY_GROUP
from titanium_gateway.render.result import NotOurs, ObjectStatus

API_VERSION = "gateway.networking.k8s.io/v1"
HTTPROUTE_KIND = {"group": GATEWAY_GROUP, "kind": "HTTPRoute"}


# -- hostnames ------------------------------------------------------------------------------
MAX_HOSTNAME_LENGTH = 253
_HOSTNAME = re.compile(r"(?:\*\.)?[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")  # (no captures: faster)


def valid_hostname(host: str) -> bool:
    """An RFC 1123 DNS name, optionally with a leading ``*.`` (the Gateway API Hostname)."""
    return len(host) <= MAX_HOSTNAME_LENGTH and _HOSTNAME.fullmatch(host) is not None


def host_matches(pattern: str, host: str) -> bool:
    """Does ``pattern`` (exact or ``*.suffix``: one or more labels) cover ``host``?"""
    pattern, host = pattern.lower(), host.lower()
    if pattern.startswith("*."):
        suffix = pattern[1:]
        return host.endswith(suffix) and len(host) > len(suffix) and not host.startswith("*")
    return pattern == host


def intersect_hostname(listener: str | None, route: str) -> str | None:
    """The hostname both a listener hostname and a route hostname accept, or None."""
    if listener is None:
        return route
    if host_matches(listener, route):
        return route
    if host_matches(route, listener):
        return listener
    if listener.startswith("*.") and route.startswith("*."):
        if route.endswith(listener[1:]):
            return route
        if listener.endswith(route[1:]):
            return listener
    if listener.lower() == route.lower():
        return route
    return None


# -- selectors ------------------------------------------------------------------------------
def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics; a malformed selector matches nothing."""
    if not isinstance(selector, Mapping):
        return False
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        return False
    for k, v in match_labels.items():
        if labels.get(k) != v:
            return False
    exprs = selector.get("matchExpressions") or []
    if not isinstance(exprs, list):
        return False
    for expr in exprs:
        if not isinstance(expr, Mapping):
            return False
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str) or not isinstance(values, list):
            return False
        if op == "In":
            if not values or labels.get(key) not in values:
                return False
        elif op == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if key not in labels:
                return False
        elif op == "DoesNotExist":
            if key in labels:
                return False
        else:
            return False
    return True


#: A condition decided by the translation: (status, reason, message).
Outcome = tuple[bool, str, str]


@dataclass
class ListenerInfo:
    gateway_ns: str
    gateway_name: str
    index: int
    name: str
    port: int
    dp_port: int
    protocol: str
    hostname: str | None
    allowed_from: str = "Same"
    allowed_selector: Any = None
    serves_httproute: bool = True
    #: routes may attach (and are counted): accepted, not conflicted, serves HTTPRoute
    attachable: bool = False
    #: attachable and its references resolve (HTTPS: a valid certificate)
    valid: bool = False
    #: valid and its Gateway has a data plane: programmed, its routes emitted
    usable: bool = False
    #: the data plane that serves it (render/planes.py), None: none (see ``GatewayInfo.plane``)
    plane: str | None = _planes.SHARED
    attached: int = 0
    supported_kinds: list[dict[str, str]] = field(default_factory=list)
    #: the listener's conditions (its previous ones for the transition times), set by :func:`status`
    conditions: ConditionList | None = None
    accepted: Outcome = (True, "Accepted", "listener is accepted")
    resolved: Outcome = (True, "ResolvedRefs", "all references are resolved")
    conflicted: Outcome = (False, "NoConflicts", "no conflicts")
    #: (namespace, name) of the ListenerSet it comes from (render/listenerset.py); None: the Gateway's own
    listener_set: tuple[str, str] | None = None

    def allows_namespace(self, ctx: RenderContext, namespace: str) -> bool:
        if self.allowed_from == "All":
            return True
        if self.allowed_from == "Selector":
            return selector_matches(self.allowed_selector, ctx.namespace_labels(namespace))
        return namespace == (self.listener_set[0] if self.listener_set is not None else self.gateway_ns)


@dataclass
class GatewayInfo:
    namespace: str
    name: str
    obj: Mapping[str, Any]
    accepted: bool
    listeners: list[ListenerInfo]
    conditions: ConditionList
    addresses: list[dict[str, str]]
    #: the Gateway's Accepted condition
    acceptance: Outcome = (True, "Accepted", "Gateway is accepted")
    #: ``spec.allowedListeners.namespaces``: from (None, Same, All, Selector) and the selector
    allowed_listeners: tuple[str, Any] = ("None", None)
    #: ``status.attachedListenerSets`` (render/listenerset.py); None: not written (no ListenerSets served)
    attached_listener_sets: int | None = None
    kind: ClassVar[str] = "Gateway"
    #: the data plane that serves it (and its ListenerSets): ``""`` the shared one,
    #: ``namespace/name`` its own; None: none (a rejected Gateway, or ``no_plane`` says why)
    plane: str | None = _planes.SHARED
    #: why a valid Gateway has no data plane (Programmed False, NoResources)
    no_plane: str = ""
    #: its GatewayClass
    class_name: str = ""
    #: the address ``spec.addresses`` asks for (its own data plane's Service carries it)
    requested_address: str | None = None
    #: why its requested address is not (yet) its address (Programmed False, ``address_reason``)
    address_problem: str = ""
    #: AddressNotAssigned (not yet the Service's) or AddressNotUsable (cannot be used)
    address_reason: str = "AddressNotAssigned"
    #: ``per-gateway``: the container ports of its own data plane (and the ports its Service exposes)
    container_ports: ContainerPorts | None = None


def _addresses(ctx: RenderContext, service: tuple[str, str] | None = None, gateway: str = "") -> list[dict[str, str]]:
    """The addresses of a data-plane Service (``service``: the shared one; ``gateway``: the
    Gateway whose own data plane's Service it is, which only a Service the controller labelled
    for it can be): its load balancer's, else its cluster IP."""
    ns, name = service or ctx.options.data_plane_service
    svc = ctx.snapshot.services.get(f"{ns}/{name}")
    if not isinstance(svc, Mapping):
        return []
    labels = f.metadata(svc).get("labels")
    if gateway and not (_planes.is_managed(labels) and labels.get(_planes.GATEWAY_NAME_LABEL) == gateway):
        return []
    out: list[dict[str, str]] = []
    status = svc.get("status")
    lb = status.get("loadBalancer") if isinstance(status, Mapping) else None
    ingress = lb.get("ingress") if isinstance(lb, Mapping) else None
    if isinstance(ingress, list):
        for item in ingress:
            if not isinstance(item, Mapping):
                continue
            if f.text(item.get("ip")):
                out.append({"type": "IPAddress", "value": item["ip"]})
            elif f.text(item.get("hostname")):
                out.append({"type": "Hostname", "value": item["hostname"]})
    if not out:
        spec = svc.get("spec")
        cluster_ip = f.text(spec.get("clusterIP")) if isinstance(spec, Mapping) else ""
        if cluster_ip and cluster_ip != "None":
            out.append({"type": "IPAddress", "value": cluster_ip})
    return out


def _gateway_sort_key(gw: Mapping[str, Any]) -> tuple[str, str, str]:
    meta = gw.get("metadata") if isinstance(gw.get("metadata"), Mapping) else {}
    return (creation_timestamp(gw), f.text(meta.get("namespace")) or "default", f.text(meta.get("name")))


def _certificates(
    ctx: RenderContext, gw_ns: str, gw_created: str, gw_name: str, li: ListenerInfo, tls: Mapping[str, Any],
    owner_kind: str = "Gateway",
) -> tuple[bool, str, str]:
    """Bind the listener's certificates into its data plane (with none, the conversion is only
    checked); returns (any valid, error reason, error message)."""
    refs = tls.get("certificateRefs")
    if not isinstance(refs, list) or not refs:
        return False, "InvalidCertificateRef", "an HTTPS listener needs certificateRefs"
    any_ok = False
    reason = message = ""
    hosts = [li.hostname] if li.hostname else []
    rank = None if li.hostname else (gw_created, gw_ns, gw_name, li.index)
    for ref in refs:
        if not isinstance(ref, Mapping):
            reason, message = reason or "InvalidCertificateRef", message or "malformed certificateRef"
            continue
        group, kind = f.string(ref.get("group")), f.string(ref.get("kind")) or "Secret"
        name = f.text(ref.get("name"))
        ns = f.text(ref.get("namespace")) or gw_ns
        if group != "" or kind != "Secret":
            reason = reason or "InvalidCertificateRef"
            message = message or f"certificateRef {f.shown(group)}/{f.shown(kind)} {name} is not a core Secret"
            continue
        if not ctx.grants.allows(
            from_group=GATEWAY_GROUP, from_kind=owner_kind, from_namespace=gw_ns,
            to_group="", to_kind="Secret", to_namespace=ns, to_name=name,
        ):
            reason = reason or "RefNotPermitted"
            message = message or ctx.grants.refusal("Secret", ns, name)
            continue
        problem = ctx.certificate_problem(ns, name) if li.plane is None else \
            ctx.bind_certificate(ns, name, hosts, rank, li.plane).error
        if problem:
            reason = reason or "InvalidCertificateRef"
            message = message or problem
            continue
        any_ok = True
    return any_ok, reason, message


# -- fields of newer Gateway API releases ---------------------------------------------------
# The API server prunes the fields its CRD schema does not have, so a field the render does not
# know comes from a newer release or the experimental channel. One that changes what the
# Gateway does is never ignored (docs/gateway-api.md, "Fields of newer Gateway API releases").
_SPEC_FIELDS = frozenset({"gatewayClassName", "listeners", "addresses", "infrastructure"})
_LISTENER_FIELDS = frozenset({"name", "hostname", "port", "protocol", "tls", "allowedRoutes"})
_LISTENER_TLS_FIELDS = frozenset({"mode", "certificateRefs", "options"})
#: ``spec.infrastructure``: labels and annotations for generated resources (this controller
#: creates none per Gateway: nothing to apply them to) and the implementation's parameters.
_INFRASTRUCTURE_FIELDS = frozenset({"labels", "annotations", "parametersRef"})
#: validation of client certificates on every HTTPS port
_ALL_PORTS = frozenset({-1})


def _gateway_problem(spec: Mapping[str, Any]) -> tuple[str, str]:
    """(reason, message) of what makes the whole Gateway unsupported, ("", "") when nothing."""
    problems: list[str] = []
    reason = "UnsupportedValue"
    for key, value in spec.items():
        if key in _SPEC_FIELDS:
            continue
        if key == "tls" and not f.mapping(value).get("backend"):
            continue  # (the frontend part is the HTTPS listeners')
        if key == "allowedListeners":
            from_ = allowed_listeners(spec)[0]
            if from_ not in ("None", "Same", "All", "Selector"):
                problems.append(f"spec.allowedListeners.namespaces.from {f.brief(from_)} is not supported")
            continue
        if key == "defaultScope" and (value is None or value == "None"):
            continue
        if key == "tls":
            problems.append("spec.tls.backend is not supported (the data plane presents no client certificate"
                            " to backends)")
            continue
        problems.append(f"spec.{f.plain(key)} is not supported")
    infrastructure = spec.get("infrastructure")
    if isinstance(infrastructure, Mapping):
        for key, value in infrastructure.items():
            if key == "parametersRef" and value is not None:
                if not problems:
                    reason = "InvalidParameters"
                problems.append("spec.infrastructure.parametersRef is not supported (this controller takes no parameters)")
            elif key not in _INFRASTRUCTURE_FIELDS:
                problems.append(f"spec.infrastructure.{f.plain(key)} is not supported")
    return (reason, bound_message("; ".join(problems))) if problems else ("", "")


def allowed_listeners(spec: Mapping[str, Any]) -> tuple[str, Any]:
    """``spec.allowedListeners.namespaces``: (from, selector); from is ``None`` when absent."""
    namespaces = f.mapping(f.mapping(spec.get("allowedListeners")).get("namespaces"))
    value = namespaces.get("from")
    return (value if isinstance(value, str) and value else "None"), namespaces.get("selector")


def _frontend_validation(spec: Mapping[str, Any]) -> tuple[frozenset[int], str]:
    """The ports whose HTTPS listeners ``spec.tls.frontend`` asks to validate client
    certificates on (``_ALL_PORTS``: every one), and the field's path; empty when none."""
    frontend = f.mapping(f.mapping(spec.get("tls")).get("frontend"))
    if not frontend:
        return frozenset(), ""
    if f.mapping(frontend.get("default")).get("validation"):
        return _ALL_PORTS, "spec.tls.frontend.default.validation"
    ports = set()
    path = ""
    for i, entry in enumerate(f.items(frontend.get("perPort"))):
        entry = f.mapping(entry)
        port = f.port(entry.get("port"))
        if port and f.mapping(entry.get("tls")).get("validation"):
            ports.add(port)
            path = path or f"spec.tls.frontend.perPort[{i}].tls.validation"
    return frozenset(ports), path


def _listener_problem(raw: Mapping[str, Any], tls: Mapping[str, Any], index: int) -> str:
    """The fields of a listener (and its ``tls``) of a newer release, as one message; "" when none."""
    problems = [f"spec.listeners[{index}].{f.plain(k)} is not supported" for k in raw if k not in _LISTENER_FIELDS]
    for k in tls:
        if k == "frontendValidation":
            problems.append(f"spec.listeners[{index}].tls.frontendValidation (client certificate validation)"
                            " is not supported")
        elif k not in _LISTENER_TLS_FIELDS:
            problems.append(f"spec.listeners[{index}].tls.{f.plain(k)} is not supported")
    return "; ".join(problems)


class _Ports:
    """The data-plane ports of the Gateways translated so far (oldest first): their protocol
    once a listener on them is programmed, per data plane, and the listeners of the Gateway
    being translated."""

    __slots__ = ("protocol", "local")

    def __init__(self) -> None:
        self.protocol: dict[tuple[str | None, int], str] = {}
        self.local: dict[int, list[ListenerInfo]] = {}


def translate(ctx: RenderContext, classes: GatewayClasses) -> dict[tuple[str, str], GatewayInfo]:
    """Every Gateway of our classes, oldest first; returns them by (namespace, name). Those of
    other classes are not ours (``ctx.not_ours``). Their statuses are made by :func:`status`
    once Programmed is known."""
    gateways = []
    for key in sorted(ctx.snapshot.gateways):
        gw = ctx.snapshot.gateways[key]
        spec = gw.get("spec") if f.is_mapping(gw) else None
        class_name = f.string(spec.get("gatewayClassName")) if f.is_mapping(spec) else ""
        why = classes.why_not(class_name)
        if why:
            meta = f.metadata(gw)
            ctx.not_ours(NotOurs("Gateway", f.text(meta.get("namespace")) or "default", f.text(meta.get("name")), why))
        elif f.is_mapping(spec):
            gateways.append(gw)
    gateways.sort(key=_gateway_sort_key)
    shared = _addresses(ctx) if ctx.options.data_plane_mode == _planes.SHARED_MODE else []
    ports = _Ports()
    result: dict[tuple[str, str], GatewayInfo] = {}
    for gw in gateways:
        info = _gateway(ctx, gw, shared, ports)
        if info is not None:
            result[(info.namespace, info.name)] = info
    return result


def _unusable(ctx: RenderContext, value: str) -> str:
    """Why the data plane cannot use the IP address ``value`` ("" when it can): not an IP
    address, or outside the addresses its load balancer gives (``--gateway-address-ranges``)."""
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return f"{f.brief(value)} is not an IP address"
    ranges = ctx.options.gateway_address_ranges
    if ranges and not any(address in network for network in _networks(ranges)):
        return (f"{value} is outside the addresses the load balancer gives ({', '.join(ranges)}: "
                "--gateway-address-ranges, chart value dataPlane.service.addressRanges)")
    return ""


def _networks(ranges: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(r, strict=False) for r in ranges)


def _requested_address(ctx: RenderContext, addresses: Any) -> tuple[str | None, str, str]:
    """(the address ``spec.addresses`` asks its own data plane's Service for (None: any), why
    the Gateway cannot be accepted ("" when it can), why an address it asks for cannot be used
    ("" when every one can)). Accepted: IPAddresses, on a LoadBalancer Service. The Service
    carries one address (its loadBalancerIP): the first usable one; an address outside
    ``--gateway-address-ranges``, or one more, cannot be used (Programmed AddressNotUsable)."""
    wanted: list[str] = []
    for i, entry in enumerate(f.items(addresses)):
        entry = f.mapping(entry)
        kind = f.string(entry.get("type")) or "IPAddress"
        value = f.text(entry.get("value"))
        if kind != "IPAddress":
            return None, (f"spec.addresses[{i}] of type {f.plain(kind)} is not supported: the data plane's Service "
                          "takes an IPAddress"), ""
        if value:
            wanted.append(value)
    if wanted and ctx.options.gateway_service_type != "LoadBalancer":
        return None, (f"spec.addresses asks for {f.brief(wanted[0])}, which only a LoadBalancer Service can carry "
                      f"(the data planes' Services are of type {ctx.options.gateway_service_type}: chart value "
                      "dataPlane.service.type)"), ""
    verdicts = [(v, _unusable(ctx, v)) for v in wanted]
    problems = [why for _v, why in verdicts if why]
    usable = [v for v, why in verdicts if not why]
    if len(usable) > 1:
        problems.append(f"the data plane's Service carries one address ({usable[0]}): "
                        f"{', '.join(usable[1:])} cannot be used as well")
    problem = bound_message("spec.addresses: " + "; ".join(problems)) if problems else ""
    return (usable[0] if usable else None), "", problem


def _plane_of(ctx: RenderContext, ns: str, name: str, rejected: bool) -> tuple[str | None, str]:
    """The data plane of a Gateway of ours, and why it has none ("" when it has one or is
    rejected)."""
    if ctx.options.data_plane_mode == _planes.SHARED_MODE:
        return _planes.SHARED, ""
    if rejected:
        return None, ""
    allowed = ctx.options.gateway_namespaces
    if allowed and ns not in allowed:
        return None, (f"the controller creates data planes in namespaces {', '.join(allowed)} only, not in {ns} "
                      "(--gateway-namespaces; chart value dataPlane.gatewayNamespaces)")
    return _planes.gateway_plane(ns, name), ""


def _gateway(ctx: RenderContext, gw: Mapping[str, Any], shared_addresses: list[dict[str, str]], ports: _Ports
             ) -> GatewayInfo | None:
    """One Gateway: its data plane, its listeners, then its own acceptance."""
    created, ns, name = _gateway_sort_key(gw)
    if not name:
        return None
    spec = gw["spec"]
    status = f.mapping(gw.get("status"))
    old_listeners = {
        f.text(ls.get("name")): ls for ls in (status.get("listeners") or []) if isinstance(ls, Mapping)
    } if isinstance(status.get("listeners"), list) else {}
    per_gateway = ctx.options.data_plane_mode != _planes.SHARED_MODE
    requested, address_error, unusable = (None, "", "")
    if not spec.get("addresses"):
        pass
    elif per_gateway:
        requested, address_error, unusable = _requested_address(ctx, spec.get("addresses"))
    else:
        address_error = "spec.addresses is not supported; the address comes from the data-plane Service"
    spec_reason, spec_msg = ("", "") if spec.keys() <= _SPEC_FIELDS and not spec.get("infrastructure") \
        else _gateway_problem(spec)
    rejected = bool(address_error) or bool(spec_reason)
    plane, no_plane = _plane_of(ctx, ns, name, rejected)
    if plane is not None:
        ctx.add_plane(plane)
    frontend = _frontend_validation(spec) if "tls" in spec else (frozenset(), "")
    infos: list[ListenerInfo] = []
    seen_names: set[str] = set()
    ports.local = {}
    raw_listeners = spec.get("listeners") if isinstance(spec.get("listeners"), list) else []
    container_ports = ContainerPorts(
        (f.port(raw.get("port")) or 0 for raw in raw_listeners if isinstance(raw, Mapping)), ctx.options.port_map,
        (ctx.options.data_plane_admin_port,)) if per_gateway else None
    for index, raw in enumerate(raw_listeners):
        if not isinstance(raw, Mapping):
            continue
        lname = f.text(raw.get("name")) or f"listener-{index}"
        if lname in seen_names:
            continue
        seen_names.add(lname)
        li = _listener(ctx, raw, index, lname, (created, ns, name), frontend, rejected, ports, plane,
                       container_ports=container_ports)
        li.conditions = ctx.conditions(gw, existing_conditions(old_listeners.get(lname)))
        infos.append(li)
    valid = sum(1 for li in infos if li.valid)
    if address_error:
        acceptance = (False, "UnsupportedAddress", bound_message(address_error))
    elif spec_reason:
        acceptance = (False, spec_reason, spec_msg)
    elif infos and valid == len(infos):
        acceptance = (True, "Accepted", "Gateway is accepted")
    elif valid:
        acceptance = (True, "ListenersNotValid", f"{len(infos) - valid} of {len(infos)} listeners are not valid")
    else:
        acceptance = (False, "ListenersNotValid", "no listener is valid")
    class_name = f.string(spec.get("gatewayClassName"))
    if per_gateway:
        addresses = _addresses(ctx, (ns, _planes.plane_names(name, class_name).service), name) \
            if plane is not None else []
    else:
        addresses = shared_addresses
    address_problem, address_reason = "", "AddressNotAssigned"
    if unusable:
        address_problem, address_reason = unusable, "AddressNotUsable"
    elif requested is not None and not any(a.get("value") == requested for a in addresses):
        address_problem = (f"the requested address {requested} is not assigned yet: the data plane's Service has "
                           f"{', '.join(a['value'] for a in addresses) or 'no address'}")
    return GatewayInfo(ns, name, gw, not rejected and valid > 0, infos, ctx.conditions(gw, existing_conditions(status)),
                       addresses, acceptance, allowed_listeners(spec) if "allowedListeners" in spec else ("None", None),
                       plane=plane, no_plane=no_plane, class_name=class_name, requested_address=requested,
                       address_problem=address_problem, address_reason=address_reason,
                       container_ports=container_ports)


def _listener(ctx: RenderContext, raw: Mapping[str, Any], index: int, lname: str, gateway: tuple[str, str, str],
              frontend: tuple[frozenset[int], str], rejected: bool, ports: _Ports, plane: str | None,
              owner_kind: str = "Gateway", container_ports: ContainerPorts | None = None) -> ListenerInfo:
    """One listener: accepted (protocol, fields, hostname, port), the routes it allows, its
    conflicts, its certificates; a usable one opens its data-plane port. ``gateway``: (created,
    namespace, name) of the object that holds it (``owner_kind``: a Gateway or a ListenerSet);
    ``container_ports``: its Gateway's own data plane's (``per-gateway``), None: the shared one's
    port map."""
    created, ns, name = gateway
    port = f.port(raw.get("port")) or 0
    protocol = f.string(raw.get("protocol"))
    hostname = f.text(raw.get("hostname")).lower() or None
    if not port:
        dp_port = 0
    elif container_ports is not None:
        dp_port = container_ports.container_port(port)
    else:
        dp_port = ctx.options.data_plane_port(port)
    li = ListenerInfo(ns, name, index, lname, port, dp_port, protocol, hostname)
    li.plane = plane
    tls = raw.get("tls") if isinstance(raw.get("tls"), Mapping) else {}
    accepted_reason, accepted_msg = _acceptance(ctx, raw, tls, li, index, frontend)
    kinds_ok = _allowed_routes(raw, li, accepted_reason)
    conflict = "" if accepted_reason else _conflict(li, ports)
    refs_reason = refs_msg = ""
    cert_ok = True
    if not accepted_reason and not conflict and protocol == "HTTPS" and li.serves_httproute:
        cert_ok, refs_reason, refs_msg = _certificates(ctx, ns, created, name, li, tls, owner_kind)
    if not kinds_ok and not refs_reason:
        refs_reason, refs_msg = "InvalidRouteKinds", (
            f"no route kind is served on protocol {protocol!r}" if accepted_reason == "UnsupportedProtocol"
            else "only HTTPRoute is supported in allowedRoutes.kinds")
    li.attachable = not accepted_reason and not conflict and li.serves_httproute and not rejected
    li.valid = li.attachable and cert_ok
    li.usable = li.valid and plane is not None
    if accepted_reason:
        li.accepted = (False, accepted_reason, bound_message(accepted_msg))
    if refs_reason:
        li.resolved = (False, refs_reason, bound_message(refs_msg))
    if conflict:
        li.conflicted = (True, conflict, "another listener uses this data-plane port with another protocol"
                         if conflict == "ProtocolConflict" else "another listener uses this port and hostname")
    if li.usable:
        assert plane is not None
        ports.protocol.setdefault((plane, li.dp_port), protocol)
        ctx.add_listener(li.dp_port, protocol == "HTTPS", plane)
        if container_ports is not None:
            container_ports.serve(li.port, protocol == "HTTPS")
        if plane == _planes.SHARED:
            ctx.gateway_ports.setdefault(li.dp_port, protocol)
    return li


def listener_set_ports(ctx: RenderContext, gw: GatewayInfo) -> _Ports:
    """The port state the listeners of ``gw``'s ListenerSets are checked against: the data-plane
    ports programmed so far (every Gateway's, by data plane) and the Gateway's own accepted
    listeners (which take precedence over a ListenerSet's)."""
    ports = _Ports()
    ports.protocol = {(plane, port): "HTTPS" if decrypt else "HTTP"
                      for plane, listeners in ctx.plane_listeners.items() for port, decrypt in listeners.items()}
    for li in gw.listeners:
        if li.accepted[0]:
            ports.local.setdefault(li.dp_port, []).append(li)
    return ports


def set_listener(ctx: RenderContext, raw: Mapping[str, Any], index: int, lname: str, owner: tuple[str, str, str],
                 gw: GatewayInfo, ports: _Ports) -> ListenerInfo:
    """A listener of a ListenerSet (``owner``: its created, namespace, name) of ``gw``, translated
    like the Gateway's own (its certificates referenced from the ListenerSet); it belongs to the
    Gateway's listeners (``gateway_ns``/``gateway_name``, ``listener_set`` set) and to its data
    plane (its port opened there, its certificates bound into that plane's TLS Secret)."""
    spec = f.mapping(gw.obj.get("spec"))
    frontend = _frontend_validation(spec) if "tls" in spec else (frozenset(), "")
    li = _listener(ctx, raw, index, lname, owner, frontend, not gw.acceptance[0], ports, gw.plane,
                   owner_kind="ListenerSet", container_ports=gw.container_ports)
    li.gateway_ns, li.gateway_name, li.listener_set = gw.namespace, gw.name, (owner[1], owner[2])
    if li.accepted[1] == "UnsupportedProtocol" and li.port and any(
            other.protocol != li.protocol for other in ports.local.get(li.dp_port, ())):
        # (a port a listener before it uses with another protocol: the conflict is what the
        # Gateway API reports for an entry, whatever its protocol)
        li.conflicted = (True, "ProtocolConflict", "another listener uses this data-plane port with another protocol")
    return li


def _acceptance(ctx: RenderContext, raw: Mapping[str, Any], tls: Mapping[str, Any], li: ListenerInfo, index: int,
                frontend: tuple[frozenset[int], str]) -> tuple[str, str]:
    """Why the listener is not accepted ("", "" when it is)."""
    protocol, port = li.protocol, li.port
    raw_hostname = raw.get("hostname")
    frontend_ports, frontend_path = frontend
    if protocol not in ("HTTP", "HTTPS"):
        return "UnsupportedProtocol", f"protocol {protocol!r} is not supported"
    if protocol == "HTTPS" and f.string(tls.get("mode") or "Terminate") != "Terminate":
        return "UnsupportedProtocol", "TLS mode Passthrough is not supported"
    if not (raw.keys() <= _LISTENER_FIELDS and tls.keys() <= _LISTENER_TLS_FIELDS) and (
            newer := _listener_problem(raw, tls, index)):
        return "UnsupportedValue", newer
    if protocol == "HTTPS" and frontend_ports and (frontend_ports is _ALL_PORTS or port in frontend_ports):
        return "UnsupportedValue", f"{frontend_path} (client certificate validation) is not supported"
    if raw_hostname is not None and (li.hostname is None or not valid_hostname(li.hostname)):
        shown = repr(raw_hostname[:64]) if isinstance(raw_hostname, str) else f"a {type(raw_hostname).__name__}"
        return "UnsupportedValue", f"hostname {shown} is not a valid hostname"
    if not port:
        return "PortUnavailable", "the listener has no valid port"
    if ctx.options.data_plane_mode == _planes.SHARED_MODE and li.dp_port not in ctx.options.data_plane_ports:
        return "PortUnavailable", f"port {port} maps to data-plane port {li.dp_port}, which the data plane does not expose"
    return "", ""


def _allowed_routes(raw: Mapping[str, Any], li: ListenerInfo, accepted_reason: str) -> bool:
    """The namespaces and kinds the listener allows (into ``li``); False when a kind is not
    HTTPRoute (InvalidRouteKinds)."""
    allowed = raw.get("allowedRoutes") if isinstance(raw.get("allowedRoutes"), Mapping) else {}
    namespaces = allowed.get("namespaces") if isinstance(allowed.get("namespaces"), Mapping) else {}
    li.allowed_from = f.string(namespaces.get("from")) or "Same"
    li.allowed_selector = namespaces.get("selector")
    kinds_ok = True
    kinds = allowed.get("kinds")
    if accepted_reason == "UnsupportedProtocol":
        li.serves_httproute = False
        kinds_ok = not (isinstance(kinds, list) and kinds)  # (no kind listed is served on it)
    elif isinstance(kinds, list) and kinds:
        li.serves_httproute = False
        for k in kinds:
            if isinstance(k, Mapping) and (f.string(k.get("group")) if "group" in k else GATEWAY_GROUP) == GATEWAY_GROUP \
                    and k.get("kind") == "HTTPRoute":
                li.serves_httproute = True
            else:
                kinds_ok = False
    li.supported_kinds = [dict(HTTPROUTE_KIND)] if li.serves_httproute else []
    return kinds_ok


def _conflict(li: ListenerInfo, ports: _Ports) -> str:
    """The conflict of an accepted listener ("" for none): on its data-plane port, with a listener
    of its Gateway (another protocol, or the same port and hostname) or with an older Gateway's
    programmed listener of another protocol."""
    conflict = ""
    for other in ports.local.get(li.dp_port, []):
        if other.protocol != li.protocol:
            conflict = "ProtocolConflict"
            break
        if other.port == li.port and (other.hostname or "") == (li.hostname or ""):
            conflict = "HostnameConflict"
            break
    if not conflict and ports.protocol.get((li.plane, li.dp_port), li.protocol) != li.protocol:
        conflict = "ProtocolConflict"
    ports.local.setdefault(li.dp_port, []).append(li)
    return conflict


def listener_status(li: ListenerInfo, delivery: Delivery) -> dict[str, Any]:
    """A listener's status entry (``delivery``: its data plane's). A ListenerSet's listener that
    is conflicted is also not accepted nor programmed, with the conflict's reason (the Gateway
    API's ListenerEntryStatus)."""
    lc = li.conditions
    assert lc is not None
    if li.conflicted[0] and li.listener_set is not None:
        lc.set("Accepted", False, li.conflicted[1], li.conflicted[2])
        lc.set("Programmed", False, li.conflicted[1], li.conflicted[2])
    else:
        lc.set("Accepted", *li.accepted)
        lc.set("Programmed", *programmed.condition("listener", li.valid, delivery))
    lc.set("ResolvedRefs", *li.resolved)
    lc.set("Conflicted", *li.conflicted)
    return {"name": li.name, "supportedKinds": li.supported_kinds, "attachedRoutes": li.attached,
            "conditions": lc.as_list()}


def status(ctx: RenderContext, info: GatewayInfo, delivery: Delivery) -> None:
    """The status of one Gateway (every condition in one place, once Programmed is known):
    ``delivery`` is its data plane's (:func:`programmed.no_plane` for a Gateway without one)."""
    # (a ListenerSet's listeners are in its own status)
    listeners = [listener_status(li, delivery) for li in info.listeners if li.listener_set is None]
    info.conditions.set("Accepted", *info.acceptance)
    info.conditions.set("Programmed", *programmed.condition("gateway", info.accepted, delivery,
                                                            address_problem=info.address_problem,
                                                            address_reason=info.address_reason))
    body: dict[str, Any] = {"addresses": info.addresses, "conditions": info.conditions.as_list(),
                            "listeners": listeners}
    if info.attached_listener_sets is not None:
        body["attachedListenerSets"] = info.attached_listener_sets
    ctx.add_status(ObjectStatus(API_VERSION, "Gateway", info.namespace, info.name, body))
