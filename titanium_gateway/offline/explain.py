"""``titanium-gateway explain``: which route answers a request, and why.

The input is read and rendered exactly as ``titanium-gateway render`` does
(:mod:`titanium_gateway.offline.render_cmd`: the same loader, snapshot and render options). The rendered
``twp.yaml`` and its parts are then loaded by the contract library
(:func:`titanium_gateway.contract.load_config`) and the request is decided by
:func:`titanium_gateway.contract.decide`, the code the reference data plane runs for every
request. The decision is told in the words of the input: the winning route's object, rule and
match (the render's model, :attr:`RenderResult.document`, by route id), the Services behind its
clusters, the certificate a TLS listener serves for the request's SNI name, the policies, the
transforms and the routes that also match but lose.

The interface (request syntax, text and JSON output, exit codes) is in ``docs/render-cli.md``.
Exit codes: 0 a route answers, 3 nothing answers (no route matches: 404; no listener on the
port; the listener's protocol is not the request's; no certificate for the TLS handshake), 2
bad input or usage (as ``render``), 1 an internal error.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from titanium_gateway import contract
from titanium_gateway.contract.policies import permits
from titanium_gateway.contract.routing import Check, ForwardTo, NotFound, RedirectTo, Respond, hostname_of
from titanium_gateway.contract.transforms import apply_request_transforms
from titanium_gateway.contract.values import seconds
from titanium_gateway.offline.args import (
    CommandLineParser,
    UsageError,
    add_render_arguments,
    options_from_args,
)
from titanium_gateway.offline.load import LoadReport, load_manifests
from titanium_gateway.offline.manifests import InputError
from titanium_gateway.offline.snapshot import Prepared, prepare
from titanium_gateway.offline.summary import input_notices, plane_file
from titanium_gateway.render import gc_paused
from titanium_gateway.render.httproute.rules import rule_name
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import Plane, RenderResult
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.twp import model
from titanium_gateway.twp.emit import kind_data
from titanium_gateway.twp.load import Config

PROG = "titanium-gateway explain"
#: Exit codes.
EXIT_ANSWERED = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_NOT_ANSWERED = 3

DEFAULT_PORTS = {"http": 80, "https": 443}
_TOKEN = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
#: At most this many near misses are shown when no route matches.
HINTS = 3


# -- the request ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RequestSpec:
    """The request as given on the command line.

    ``host`` is the URL's host (None: the URL names none, the Gateway's address is used),
    ``port`` the URL's explicit port (None: the scheme's default), ``target`` the
    request-target (path and query as sent), ``headers`` the ``-H`` lines in order."""

    method: str
    scheme: str
    host: str | None
    port: int | None
    target: str
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def gateway_port(self) -> int:
        return self.port if self.port is not None else DEFAULT_PORTS[self.scheme]

    def host_header(self) -> str | None:
        """The value of the ``-H Host:`` line, if any."""
        for k, v in self.headers:
            if k.lower() == "host":
                return v
        return None


def parse_header(text: str) -> tuple[str, str]:
    """``Name: value`` (curl's ``-H``); ``Name:`` is an empty value."""
    name, colon, value = text.partition(":")
    name = name.strip()
    if not colon or not name:
        raise UsageError(f"header {text!r}: expected 'Name: value'")
    if not _TOKEN.match(name):
        raise UsageError(f"header {text!r}: {name!r} is not a valid header name")
    value = value.strip()
    if any(ord(c) < 0x20 and c != "\t" or ord(c) == 0x7F for c in value):
        raise UsageError(f"header {text!r}: the value holds a control character")
    return name, value


def _normalize_host(host: str, where: str) -> str:
    host = host.lower()
    if host.startswith("["):
        return host
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise UsageError(f"{where}: {host!r} is not a valid host name") from None
    return host


def parse_request(text: str, headers: Sequence[str] = ()) -> RequestSpec:
    """``METHOD URL``: an absolute ``http://`` or ``https://`` URL, or a URL without a host
    (``/path``, ``http:///path``, ``https://:8443/path``) for the Gateway's address."""
    parts = text.split()
    if len(parts) != 2:
        raise UsageError(f"--request {text!r}: expected 'METHOD URL', e.g. 'GET https://shop.example.com/api'")
    method, url = parts
    if not _TOKEN.match(method):
        raise UsageError(f"--request {text!r}: {method!r} is not a valid method")
    if _CONTROL.search(url):
        raise UsageError(f"--request {text!r}: the URL holds a control character")
    hdrs = tuple(parse_header(h) for h in headers)
    hosts = [v for k, v in hdrs if k.lower() == "host"]
    if len(hosts) > 1:
        raise UsageError("more than one Host header")
    if url.startswith("/"):
        if url.startswith("//"):
            raise UsageError(f"--request {text!r}: a URL without a scheme; write http://HOST/PATH or /PATH")
        scheme, netloc, rest = "http", "", url
    else:
        scheme, sep, after = url.partition("://")
        scheme = scheme.lower()
        if not sep or scheme not in DEFAULT_PORTS:
            raise UsageError(f"--request {text!r}: expected an http:// or https:// URL, or a path starting with /")
        cut = min((i for i in (after.find("/"), after.find("?"), after.find("#")) if i >= 0), default=len(after))
        netloc, rest = after[:cut], after[cut:]
    split = urlsplit(f"{scheme}://{netloc}{rest}")
    if "@" in netloc:
        raise UsageError(f"--request {text!r}: user information in the URL is not supported")
    try:
        port = split.port
    except ValueError:
        raise UsageError(f"--request {text!r}: invalid port in {netloc!r}") from None
    if port is not None and port == 0:
        raise UsageError(f"--request {text!r}: port 0")
    raw_host = netloc.rsplit(":", 1)[0] if port is not None or netloc.endswith(":") else netloc
    host = _normalize_host(raw_host, f"--request {text!r}") if raw_host else None
    path = split.path or "/"
    if not path.startswith("/"):
        path = "/" + path
    target = path + (f"?{split.query}" if split.query else "")
    return RequestSpec(method, scheme, host, port, target, hdrs)


# -- the Gateway's address -------------------------------------------------------------------
def _address_values(addresses: Any) -> list[str]:
    out: list[str] = []
    for a in addresses if isinstance(addresses, list) else ():
        if isinstance(a, Mapping) and isinstance(a.get("value"), str) and a["value"]:
            out.append(a["value"])
    return out


def gateway_addresses(result: RenderResult, prepared: Prepared) -> dict[str, list[str]]:
    """``Gateway namespace/name`` -> its addresses, for every Gateway of this controller: the
    status addresses the render gives it (from the data-plane Service), else the input
    Gateway's ``status.addresses``, else its ``spec.addresses``. Without a Gateway of ours,
    ``Ingress namespace/name`` -> the load-balancer addresses the render gives each Ingress of
    ours (the same data-plane Service)."""
    out: dict[str, list[str]] = {}
    for st in result.statuses:
        if st.kind != "Gateway":
            continue
        key = f"{st.namespace}/{st.name}"
        values = _address_values(st.status.get("addresses"))
        if not values:
            obj = prepared.snapshot.gateways.get(key)
            obj = obj if isinstance(obj, Mapping) else {}
            status, spec = obj.get("status"), obj.get("spec")
            values = _address_values(status.get("addresses") if isinstance(status, Mapping) else None)
            if not values:
                values = _address_values(spec.get("addresses") if isinstance(spec, Mapping) else None)
        out[f"Gateway {key}"] = values
    if out:
        return out
    for st in result.statuses:
        if st.kind == "Ingress":
            lb = st.status.get("loadBalancer")
            entries = lb.get("ingress") if isinstance(lb, Mapping) else None
            values = [str(e.get("ip") or e.get("hostname")) for e in entries if isinstance(e, Mapping)
                      and (e.get("ip") or e.get("hostname"))] if isinstance(entries, list) else []
            out[f"Ingress {st.namespace}/{st.name}"] = values
    return out


def choose_address(addresses: Mapping[str, list[str]]) -> str:
    """The one address of the Gateways, or a UsageError saying why there is none."""
    distinct = sorted({v for values in addresses.values() for v in values})
    if len(distinct) == 1:
        return distinct[0]
    if not addresses:
        raise UsageError("the request names no host and the input has no Gateway or Ingress of this controller: "
                         "give the host in the URL (http://HOST/PATH) or with -H 'Host: HOST'")
    if not distinct:
        names = sorted(addresses)
        raise UsageError(f"the request names no host and {', '.join(names)} {'has' if len(names) == 1 else 'have'} "
                         "no address (addresses come from the data-plane Service, see --data-plane-service): "
                         "give the host in the URL (http://HOST/PATH) or with -H 'Host: HOST'")
    listed = "; ".join(f"{k}: {', '.join(v) or 'none'}" for k, v in sorted(addresses.items()))
    raise UsageError(f"the request names no host and there are several addresses ({listed}): "
                     "give the host in the URL (http://HOST/PATH) or with -H 'Host: HOST'")


def _host_for_header(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


# -- the explanation -----------------------------------------------------------------------
@dataclass
class Explanation:
    """Everything ``explain`` says about one request (``as_json`` is the JSON output)."""

    request: dict[str, Any]
    listener: dict[str, Any] | None = None
    certificate: dict[str, Any] | None = None
    route: str | None = None
    order: int | None = None
    source: dict[str, Any] | None = None
    action: str = "none"
    status: int | None = None
    location: str | None = None
    body: str | None = None
    #: a 500 answer: why, from the source object's status and Events (the body is its reason only)
    why: list[str] = field(default_factory=list)
    backends: list[dict[str, Any]] = field(default_factory=list)
    mirror: dict[str, Any] | None = None
    transforms: list[dict[str, Any]] = field(default_factory=list)
    upstream: dict[str, Any] | None = None
    policies: list[dict[str, Any]] = field(default_factory=list)
    timeout: str | None = None
    answered_by: str | None = None  # the policy that answers before the route's action
    match: list[dict[str, Any]] = field(default_factory=list)
    losing: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None
    hints: list[dict[str, Any]] = field(default_factory=list)
    #: the Gateway whose own data plane answers (None: the shared data plane)
    data_plane: str | None = None

    @property
    def answered(self) -> bool:
        return self.route is not None

    def as_json(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "listener": self.listener,
            "certificate": self.certificate,
            "route": self.route,
            "order": self.order,
            "source": self.source,
            "action": self.action,
            "status": self.status,
            "location": self.location,
            "body": self.body,
            "why": self.why,
            "backends": self.backends,
            "mirror": self.mirror,
            "transforms": self.transforms,
            "upstream": self.upstream,
            "policies": self.policies,
            "timeout": self.timeout,
            "answeredBy": self.answered_by,
            "match": self.match,
            "losing": [x["route"] for x in self.losing],
            "losingRoutes": self.losing,
            "note": self.note,
            "hints": self.hints,
            "dataPlane": self.data_plane,
        }


def _source(route: model.Route | None, snapshot: Snapshot | None = None) -> dict[str, Any] | None:
    """Where a route comes from: its object, rule (and the rule's ``name``, when it has one) and
    match or path."""
    if route is None or not route.source.kind:
        return None
    s = route.source
    out: dict[str, Any] = {"kind": s.kind, "namespace": s.namespace, "name": s.name, "rule": route.rule_index,
                           "match": route.match_index}
    if s.kind == "HTTPRoute" and snapshot is not None:
        name = rule_name(snapshot.httproutes.get(f"{s.namespace}/{s.name}"), route.rule_index)
        if name:
            out["ruleName"] = name
    return out


def _check(c: Check) -> dict[str, Any]:
    return {"field": c.field, "expected": c.expected, "actual": c.actual, "ok": c.ok}


def _backend(doc: model.Document, config: Config, cluster_id: str, weight: int | None,
             total: int | None) -> dict[str, Any]:
    mc = doc.cluster(cluster_id)
    backend = mc.backend if mc is not None else None
    cc = config.clusters.get(cluster_id)
    out: dict[str, Any] = {
        "cluster": cluster_id,
        "namespace": backend.namespace if backend is not None else None,
        "service": backend.service if backend is not None else None,
        "port": backend.port if backend is not None else None,
    }
    if weight is not None:
        out["weight"] = weight
        out["percent"] = round(100.0 * weight / total, 2) if total and weight > 0 else 0.0
    out["destinations"] = len(cc.destinations) if cc is not None else 0
    return out


def _policy_verdicts(route: model.Route, req: contract.Request, client_given: bool) -> tuple[list[str], Any]:
    """Each policy's verdict for this request, in order, and the answer of the first policy that
    answers itself (None when every one lets the request through or one cannot be told here)."""
    verdicts: list[str] = []
    answer = None
    for policy in route.behavior.policies:
        if answer is not None:
            verdicts.append("not reached")
            continue
        if isinstance(policy, model.ExtAuth):
            verdicts.append(f"asks {policy.url}: a 2xx answer lets the request through, any other is relayed")
            continue
        if isinstance(policy, model.IpAllowDeny) and not client_given:
            verdicts.append("depends on the client address (give --client-address)")
            continue
        verdict = contract.evaluate(policy, req, limiter=None)
        if isinstance(verdict, contract.Answer):
            answer = verdict
            verdicts.append(f"answers {verdict.status}")
        elif isinstance(policy, model.RateLimit):
            verdicts.append(f"lets it through (up to {permits(policy)} request(s) per {seconds(policy.window):g} s "
                            "per client address, then 429)")
        else:
            verdicts.append("lets it through")
    return verdicts, answer


#: ``--gateway`` naming the shared data plane (the Ingresses' in per-gateway mode)
SHARED_PLANE = "shared"


def choose_plane(result: RenderResult, spec: RequestSpec, gateway: str | None,
                 addresses: Mapping[str, list[str]]) -> Plane:
    """The data plane the request reaches: the one ``gateway`` (``NAMESPACE/NAME``, or
    ``shared``) names; else the Gateway whose address is the URL's host; else the only one that
    serves something. With one data plane for every Gateway, that one. A UsageError when the
    choice is not clear."""
    planes = result.data_planes()
    if len(planes) == 1:
        return planes[0]
    if gateway is not None:
        if gateway == SHARED_PLANE:
            return planes[0]
        ns, _, name = gateway.rpartition("/")
        own = next((p for p in planes if p.gateway is not None and (p.gateway.namespace, p.gateway.name) == (ns, name)),
                   None)
        if own is None:
            named = ", ".join(f"{p.gateway.namespace}/{p.gateway.name}" for p in planes if p.gateway is not None)
            raise UsageError(f"--gateway {gateway}: no data plane of a Gateway of that name (the Gateways with a data "
                             f"plane of their own: {named or 'none'}; or --gateway {SHARED_PLANE})")
        return own
    if spec.host is not None:
        by_address = [p for p in planes if p.gateway is not None
                      and spec.host in addresses.get(f"Gateway {p.gateway.namespace}/{p.gateway.name}", [])]
        if len(by_address) == 1:
            return by_address[0]
    serving = [p for p in planes if p.gateway is not None or (p.document is not None and p.document.listeners)]
    if len(serving) == 1:
        return serving[0]
    named = ", ".join(f"{p.gateway.namespace}/{p.gateway.name}" if p.gateway is not None else SHARED_PLANE
                      for p in serving)
    raise UsageError(f"each Gateway has a data plane of its own: name the one the request reaches with --gateway "
                     f"NAMESPACE/NAME, or --gateway {SHARED_PLANE} for the Ingresses' ({named})")


def explain_request(spec: RequestSpec, result: RenderResult, prepared: Prepared, options: RenderOptions,
                    client_address: str | None = None, gateway: str | None = None) -> Explanation:
    """The explanation of ``spec`` against the rendered ``result``, on the data plane
    :func:`choose_plane` picks. Raises UsageError when the request names no host and the
    Gateways give no single address, or when the data plane is not clear."""
    addresses = gateway_addresses(result, prepared)
    plane = choose_plane(result, spec, gateway, addresses)
    doc = plane.document
    if doc is None:
        raise RuntimeError("the render result carries no document")
    config = contract.load_config(plane.config, dict(plane.parts))

    host_header = spec.host_header()
    url_host = spec.host
    if url_host is None and host_header is None:
        if plane.gateway is not None:
            addresses = {k: v for k, v in addresses.items()
                         if k == f"Gateway {plane.gateway.namespace}/{plane.gateway.name}"}
        url_host = choose_address(addresses)
    headers = list(spec.headers)
    if host_header is None:
        assert url_host is not None
        value = _host_for_header(url_host)
        if spec.port is not None and spec.port != DEFAULT_PORTS[spec.scheme]:
            value += f":{spec.port}"
        headers.insert(0, ("Host", value))
    port = spec.gateway_port
    url_authority = _host_for_header(url_host) if url_host is not None else ""
    if spec.port is not None:
        url_authority += f":{spec.port}"
    request_info: dict[str, Any] = {
        "method": spec.method,
        "url": f"{spec.scheme}://{url_authority}{spec.target}",
        "scheme": spec.scheme,
        "host": hostname_of(host_header if host_header is not None else _host_for_header(url_host or "")),
        "port": port,
        "headers": [{"name": k, "value": v} for k, v in headers],
    }
    ex = Explanation(request_info)
    if plane.gateway is not None:
        ex.data_plane = f"{plane.gateway.namespace}/{plane.gateway.name}"

    # the listener: the Gateway port mapped to the data-plane port, as the render maps it (a
    # Gateway's own data plane: the container port its Service sends that port to)
    served = {p.port: p.container_port for p in plane.gateway.ports} if plane.gateway is not None else {}
    dp_port = served.get(port) or options.port_map.get(port, port)
    listener = next((x for x in doc.listeners if x.port == dp_port), None)
    wants_tls = spec.scheme == "https"
    if listener is None:
        bound = ", ".join(f"{x.port}{' (TLS)' if x.decrypt_ssl else ''}" for x in doc.listeners) or "none"
        ex.note = (f"no listener on port {port} (data-plane port {dp_port}; the data plane listens on: {bound}): "
                   "the connection is refused")
        return ex
    ex.listener = {"port": port, "dataPlanePort": dp_port, "tls": listener.decrypt_ssl}
    if listener.decrypt_ssl != wants_tls:
        ex.note = (f"port {port} (data-plane port {dp_port}) is a TLS listener: a plain http request gets no HTTP answer"
                   if listener.decrypt_ssl else
                   f"port {port} (data-plane port {dp_port}) is a plain HTTP listener: an https request fails its "
                   "TLS handshake")
        return ex

    # TLS: the certificate for the SNI name (the URL's host, as clients send it; none for an address)
    if wants_tls:
        sni_host = url_host if url_host is not None else hostname_of(host_header or "")
        sni = None if not sni_host or _is_ip(sni_host) else sni_host.rstrip(".")
        item = contract.select_certificate(config.certificates, sni)
        if item is None:
            ex.certificate = {"sni": sni, "file": None, "secret": None, "hosts": [], "default": False,
                              "selectedBy": None}
            ex.note = (f"no certificate for SNI {sni!r} and no default certificate: the TLS handshake fails"
                       if sni else "the request sends no SNI name and there is no default certificate: the TLS "
                       "handshake fails")
            return ex
        secrets = {c.file: c.source for c in plane.certificates}
        by = ("exact host" if sni and sni in item.hosts else
              "wildcard host" if sni and any(contract.wildcard_covers(h, sni) for h in item.hosts) else "default")
        ex.certificate = {"sni": sni, "file": item.file, "secret": secrets.get(item.file), "hosts": list(item.hosts),
                          "default": item.default, "selectedBy": by}

    client = client_address or ""
    req = contract.Request.from_target(spec.method, spec.target, headers, client_address=client, scheme=spec.scheme,
                                       port=dp_port)
    decision = contract.decide(config, req)
    by_id = {r.id: r for r in doc.routes}
    for loser in decision.losers:
        ex.losing.append({"route": loser.id, "order": config.order(loser),
                          "source": _source(by_id.get(loser.id), prepared.snapshot)})
    croute = decision.route
    if croute is None:
        ex.action, ex.status = "none", NotFound().status
        ex.note = "no route matches the request: the data plane answers 404"
        ex.hints = _hints(config, req, by_id, prepared.snapshot)
        return ex
    mroute = by_id.get(croute.id)
    ex.route, ex.order, ex.source = croute.id, config.order(croute), _source(mroute, prepared.snapshot)
    ex.match = [_check(c) for c in decision.why]
    outcome = decision.outcome
    behavior = mroute.behavior if mroute is not None else None
    if behavior is not None:
        ex.transforms = [kind_data(t) for t in behavior.transforms]
        ex.policies = [kind_data(p) for p in behavior.policies]
        if behavior.limits is not None:
            ex.timeout = behavior.limits.request_timeout
        if behavior.mirror is not None:
            mirror = _backend(doc, config, behavior.mirror.cluster_id, None, None)
            mirror["percent"] = behavior.mirror.percent
            ex.mirror = mirror
    verdicts, answer = _policy_verdicts(croute, req, client_address is not None)
    for entry, verdict in zip(ex.policies, verdicts, strict=False):
        entry["verdict"] = verdict
    notes: list[str] = []
    if isinstance(outcome, ForwardTo):
        ex.action = "forward"
        total = sum(c.weight for c in outcome.clusters if c.weight > 0)
        ex.backends = [_backend(doc, config, c.cluster_id, c.weight, total) for c in outcome.clusters]
        empty = [b for b in ex.backends if b["weight"] > 0 and b["destinations"] == 0]
        if total == 0:
            ex.status = 503
            notes.append("every backend has weight 0: the data plane answers 503")
        elif sum(b["weight"] for b in empty) == total:
            ex.status = 503
            notes.append("no backend has a ready endpoint: the data plane answers 503")
        else:
            ex.status = 200
            if empty:
                share = round(100.0 * sum(b["weight"] for b in empty) / total, 2)
                names = ", ".join(b["cluster"] for b in empty)
                notes.append(f"{share:g}% of the requests go to a cluster without ready endpoints ({names}) "
                             "and are answered 503")
        path, upstream_headers = apply_request_transforms(croute.behavior.transforms, req.path, req.headers)
        upstream_host = next((v for k, v in upstream_headers if k.lower() == "host"), None)
        ex.upstream = {"path": path, "query": req.query, "host": upstream_host,
                       "headers": [{"name": k, "value": v} for k, v in upstream_headers]}
    elif isinstance(outcome, RedirectTo):
        ex.action, ex.status, ex.location = "redirect", outcome.status, outcome.location
    elif isinstance(outcome, Respond):
        ex.action, ex.status, ex.body = "direct", outcome.status, outcome.body
        ex.why = _why(result, mroute, outcome.body)
    if answer is not None:
        notes.insert(0, f"the {answer.policy} policy answers {answer.status} before the route's action")
        ex.status, ex.answered_by = answer.status, answer.policy
    ex.note = "; ".join(notes) or None
    return ex


def _why(result: RenderResult, route: model.Route | None, reason: str) -> list[str]:
    """Why the route's source object answers 500 with ``reason``: the False conditions of its
    status (an HTTPRoute's parents), then its Warning Events (an Ingress's): those of that reason
    that name the route's path, else those of that reason, else all; each as ``Reason: message``."""
    if route is None or not route.source.kind:
        return []
    s = route.source
    out: list[str] = []
    for st in result.statuses:
        if (st.kind, st.namespace, st.name) != (s.kind, s.namespace, s.name):
            continue
        conditions = [c for p in st.status.get("parents") or () for c in p.get("conditions") or ()]
        conditions += list(st.status.get("conditions") or ())
        out += [f"{c.get('reason')}: {c.get('message')}" for c in conditions if c.get("status") == "False"]
    events = [e for e in result.events if (e.kind, e.namespace, e.name) == (s.kind, s.namespace, s.name)
              and e.type == "Warning"]
    of_reason = [e for e in events if e.reason == reason]
    # an Ingress's Events name the path ("host h path /p (Prefix): ...", "rule 0 path 2: ...")
    names = tuple(n for n in (f" {route.match.path} " if route.match.path else "",
                              f" rule {route.rule_index} path {route.match_index}: ") if n)
    of_route = [e for e in of_reason if any(n in f" {e.message} " for n in names)]
    out += [f"{e.reason}: {e.message}" for e in of_route or of_reason or events]
    return list(dict.fromkeys(out))


def _hints(config: Config, req: contract.Request, by_id: Mapping[str, model.Route],
           snapshot: Snapshot | None = None) -> list[dict[str, Any]]:
    """The routes that miss the request by the fewest conditions (at most :data:`HINTS`)."""
    scored: list[tuple[int, int, model.Route, tuple[Check, ...]]] = []
    for r, order in zip(config.routes, config.orders, strict=True):
        cs = contract.checks(r, req)
        failed = sum(1 for c in cs if not c.ok)
        if failed:
            scored.append((failed, order, r, cs))
    scored.sort(key=lambda x: (x[0], x[1]))
    return [{"route": r.id, "source": _source(by_id.get(r.id), snapshot),
             "failed": [_check(c) for c in cs if not c.ok]} for _, _, r, cs in scored[:HINTS]]


# -- text ------------------------------------------------------------------------------------
def _source_text(source: Mapping[str, Any] | None) -> str:
    if source is None:
        return "(source unknown)"
    where = f"{source['kind']} {source['namespace']}/{source['name']}"
    if source["kind"] == "Ingress":
        if source["rule"] < 0:
            return f"{where}, defaultBackend"
        return f"{where}, rule {source['rule']}, path {source['match']}"
    rule = f"rule {source['rule']}" + (f" ({source['ruleName']!r})" if source.get("ruleName") else "")
    return f"{where}, {rule}, match {source['match']}"


def _backend_text(b: Mapping[str, Any]) -> str:
    if b["service"] is None:
        behind = "no Service (an invalid backend reference)"
    else:
        behind = f"Service {b['namespace']}/{b['service']} port {b['port']}"
    n = b["destinations"]
    dests = f"{n} destination{'s' if n != 1 else ''}" if n else "no ready endpoint: 503"
    return f"{b['cluster']} -> {behind}, {dests}"


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in params.items())


def _check_text(c: Mapping[str, Any]) -> str:
    actual = "(absent)" if c["actual"] is None else repr(c["actual"])
    return f"{c['field']}: wants {c['expected']!r}, request has {actual}"


def text_report(ex: Explanation) -> str:
    lines: list[str] = []
    r = ex.request
    lines.append(f"request:     {r['method']} {r['url']}")
    host_line = next((h["value"] for h in r["headers"] if h["name"].lower() == "host"), "")
    others = [f"{h['name']}: {h['value']}" for h in r["headers"] if h["name"].lower() != "host"]
    lines.append(f"             Host: {host_line}" + (f"; {'; '.join(others)}" if others else ""))
    if ex.data_plane is not None:
        lines.append(f"data plane:  Gateway {ex.data_plane}'s own")
    if ex.listener is not None:
        lst = ex.listener
        lines.append(f"listener:    port {lst['port']} -> data-plane port {lst['dataPlanePort']} "
                     f"({'TLS' if lst['tls'] else 'HTTP'})")
    if ex.certificate is not None:
        c = ex.certificate
        sni = c["sni"] or "(none)"
        if c["file"] is None:
            lines.append(f"certificate: none for SNI {sni}")
        else:
            secret = f" (Secret {c['secret']})" if c["secret"] else ""
            lines.append(f"certificate: {c['file']}{secret} for SNI {sni}, by {c['selectedBy']}; "
                         f"serves {', '.join(c['hosts']) or 'no host name'}{' (default)' if c['default'] else ''}")
    if ex.route is None:
        lines.append(f"answer:      {ex.status if ex.status is not None else 'none'}: {ex.note}")
        if ex.hints:
            lines.append("nearest routes:")
            for h in ex.hints:
                lines.append(f"  {h['route']}  ({_source_text(h['source'])})")
                lines.extend(f"    {_check_text(c)}" for c in h["failed"])
        return "\n".join(lines) + "\n"
    lines.append(f"route:       {ex.route} (order {ex.order})")
    lines.append(f"from:        {_source_text(ex.source)}")
    if ex.match:
        lines.append("matched by:  " + "; ".join(
            f"{c['field']} {c['expected']} ({c['actual']!r})" for c in ex.match))
    else:
        lines.append("matched by:  any request (the route has no condition)")
    status = f"{ex.status}" if ex.answered_by is None else f"the {ex.answered_by} policy answers {ex.status} first"
    if ex.action == "forward":
        lines.append(f"action:      forward ({status})")
        for b in ex.backends:
            lines.append(f"  {b['percent']:g}% (weight {b['weight']}) {_backend_text(b)}")
    elif ex.action == "redirect":
        lines.append(f"action:      redirect, Location: {ex.location} ({status})")
    else:
        lines.append(f"action:      direct response: {ex.body!r} ({status})")
        lines.extend(f"  why: {w}" for w in ex.why)
    if ex.mirror is not None:
        lines.append(f"mirror:      {ex.mirror['percent']:g}% copied to {_backend_text(ex.mirror)}")
    if ex.policies:
        lines.append("policies:")
        lines.extend(f"  {p['kind']} {_params_text(p['parameters'])}: {p.get('verdict', '')}" for p in ex.policies)
    if ex.transforms:
        lines.append("transforms:")
        lines.extend(f"  {t['kind']} {_params_text(t['parameters'])}" for t in ex.transforms)
    if ex.upstream is not None:
        query = f"?{ex.upstream['query']}" if ex.upstream["query"] else ""
        lines.append(f"upstream:    {r['method']} {ex.upstream['path']}{query}, Host: {ex.upstream['host']}")
    if ex.timeout is not None:
        lines.append(f"timeout:     {ex.timeout} for the whole request")
    if ex.note:
        lines.append(f"note:        {ex.note}")
    if ex.losing:
        lines.append("also matching, lower in precedence:")
        lines.extend(f"  {x['route']} (order {x['order']}; {_source_text(x['source'])})" for x in ex.losing)
    return "\n".join(lines) + "\n"


# -- the command -------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = CommandLineParser(
        prog=PROG,
        description="Render Gateway API / Ingress manifests as `render` does and tell which data-plane route "
        "answers a request, what it does with it, and why.",
    )
    p.add_argument("-f", "--filename", dest="paths", action="append", required=True, metavar="PATH",
                   help="a YAML/JSON file (multi-document, Lists unwrapped), a directory of them, or - for stdin; "
                   "repeatable")
    p.add_argument("--request", required=True, metavar="'METHOD URL'",
                   help="the request, e.g. 'GET https://shop.example.com/api?x=1'; a URL without a host "
                   "('GET /x', 'GET https:///x', 'GET http://:8080/x') goes to the Gateway's address")
    p.add_argument("-H", "--header", dest="headers", action="append", default=[], metavar="'NAME: VALUE'",
                   help="a request header (repeatable); Host sets the host the routes see")
    p.add_argument("--client-address", metavar="IP",
                   help="the client's address, for IP allow-list policies (default: unknown)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text",
                   help="text (default) or json: one JSON object")
    p.add_argument("--gateway", metavar="NAMESPACE/NAME",
                   help="with a data plane per Gateway: the Gateway whose data plane the request reaches, or "
                   f"'{SHARED_PLANE}' for the shared one (the Ingresses'); by default the one whose address "
                   "the URL names, or the only one")
    add_render_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse(argv)
    if isinstance(args, int):
        return args
    try:
        spec = parse_request(args.request, args.headers)
        if args.client_address is not None:
            try:
                ipaddress.ip_address(args.client_address)
            except ValueError:
                raise UsageError(f"--client-address {args.client_address!r} is not an IP address") from None
    except UsageError as exc:
        return parser.usage_error(str(exc))
    options = options_from_args(args)
    with gc_paused():  # a short-lived process that builds no reference cycles
        return _run(args, spec, options)


def _notices(result: RenderResult, report: LoadReport, prepared: Prepared, options: RenderOptions) -> list[str]:
    """What the user must know about the input besides the answer (stderr)."""
    lines = input_notices(report, prepared, options, result)
    for plane in result.data_planes():
        if plane.delivery_error:
            lines.append(f"WARNING: the controller would not deliver {plane_file(plane)}: {plane.delivery_error}")
    for e in result.events:
        if e.type == "Warning":
            lines.append(f"Event Warning {e.reason} on {e.kind} {e.namespace}/{e.name}: {e.message}")
    return lines


def _run(args: argparse.Namespace, spec: RequestSpec, options: RenderOptions) -> int:
    report = LoadReport()
    try:
        manifests = load_manifests(args.paths, report)
    except InputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from titanium_gateway.render import render

    prepared = prepare([m.obj for m in manifests], secret_namespaces=args.secret_namespaces, defaulted=True)
    del manifests
    result = render(prepared.snapshot, options)
    try:
        ex = explain_request(spec, result, prepared, options, args.client_address, args.gateway)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except contract.ConfigError as exc:  # the render wrote what the data plane refuses: a bug
        print(f"{PROG}: internal error: the rendered config does not load: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    if args.output == "json":
        sys.stdout.write(json.dumps(ex.as_json(), indent=2) + "\n")
    else:
        sys.stdout.write(text_report(ex))
    notices = _notices(result, report, prepared, options)
    if notices:
        sys.stderr.write("\n".join(notices) + "\n")
    return EXIT_ANSWERED if ex.answered else EXIT_NOT_ANSWERED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
