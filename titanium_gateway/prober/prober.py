"""The data-plane prober: confirms that every ready data-plane pod runs the config written.

The data plane is what ``--data-plane-service`` serves, whatever labels its pods carry
(``data_plane``): its pods are the Pods its EndpointSlices point at (``targetRef``; by address
for an endpoint without one) and the Pods its ``spec.selector`` matches. They are poked and
stamped (``writers/pods.py``, ``writers/deployment.py``); its READY endpoints are probed.

For every ready endpoint it asks ``GET /readyz`` and ``GET /version`` (bearer token) on the
admin port. The config is confirmed only when ALL ready endpoints answer /readyz 200 and report
the expected ``config_hash``; otherwise the result carries a message naming the pod and what it
reported (the render puts it in Programmed=False/Pending): a data plane without the admin API
(no ``/version`` with a ``config_hash``), a token the pod rejects, nothing listening on the
admin port, or a pod still loading the new config are told apart, and a lasting cause is named
before a passing one. Requests are short and retried briefly (tenacity) on connection errors
only.

With ``--data-plane-deployment`` (the controller stamps the listener set on the pod template,
which the pods inherit) a ready endpoint also has to run the current listener set: listeners
are bound at start, so a pod created from an older template does not serve a new listener even
after it reloaded the new twp.yaml (``awaiting_rollout``).
"""

from __future__ import annotations

import errno
import logging
import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import requests
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_fixed

from titanium_gateway.metrics import REGISTRY, Registry
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION

log = logging.getLogger(__name__)
SERVICE_NAME_LABEL = "kubernetes.io/service-name"

POD_FIELDS_USED = (
    "metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion",
    "metadata.deletionTimestamp", "metadata.labels",
    "metadata.annotations[gateway.titaniumproxy.com/config-poke]",
    "metadata.annotations[gateway.titaniumproxy.com/listeners]",
    "status.podIP", "status.podIPs[].ip",
)
"""Fields of the Pods read by the data-plane discovery (``data_plane``: a Pod by name, uid or
address, its labels against the Service's selector), the prober (the listener stamp the Pod was
created with) and the pod writers (``writers/pods.py``: name, namespace, uid,
deletionTimestamp, config-poke; ``writers/deployment.py``: the listeners annotation). The
informer transform of the Pods keeps exactly these (and the informer's own resourceVersion)."""


def slice_service_key(obj: Mapping[str, Any]) -> list[str]:
    """EndpointSlice index function: ``namespace/service`` of the Service the slice belongs to."""
    md = obj.get("metadata") or {}
    svc = (md.get("labels") or {}).get(SERVICE_NAME_LABEL)
    ns = md.get("namespace")
    return [f"{ns}/{svc}"] if isinstance(svc, str) and svc and isinstance(ns, str) and ns else []


@dataclass(frozen=True)
class Endpoint:
    pod: str
    address: str
    #: the listener set the endpoint's Pod was created with (its ``LISTENERS_ANNOTATION``, "" when
    #: absent); None: no Pod known for the endpoint (only set when ``ready_endpoints`` got pods)
    listeners: str | None = field(default=None, compare=False)
    #: when ``listeners`` is None with pods given: why no Pod is known for the endpoint
    unknown: str = field(default="", compare=False)


@dataclass(frozen=True)
class ProbeResult:
    confirmed_hash: str | None
    message: str = ""
    #: whether the endpoints were examined one by one (False: the probe was not made, e.g. while
    #: awaiting a rollout; the fields below then say nothing)
    examined: bool = False
    #: the pods (``Endpoint.pod``) that run the expected config
    confirmed_pods: frozenset[str] = frozenset()
    #: the pods with a problem that waiting (or a re-poke) will not cure (``PodProblem.lasting``)
    lasting_pods: frozenset[str] = frozenset()


def _pod_addresses(pod: Mapping[str, Any]) -> list[str]:
    status = pod.get("status") or {}
    addrs = [str(status["podIP"])] if status.get("podIP") else []
    for ip in status.get("podIPs") or []:
        if isinstance(ip, Mapping) and ip.get("ip"):
            addrs.append(str(ip["ip"]))
    return addrs


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, Mapping) else {}


class PodIndex:
    """The cached Pods by namespace/name and by address (a Pod being deleted yields its address
    to a live Pod that reuses it). ``namespace``: the one namespace the Pods were listed from
    (the data-plane namespace), named in the messages about endpoints it cannot resolve."""

    def __init__(self, pods: Iterable[Mapping[str, Any]], namespace: str | None = None) -> None:
        self.namespace = namespace
        self.by_name: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.by_addr: dict[str, Mapping[str, Any]] = {}
        for pod in sorted(pods, key=lambda p: not _meta(p).get("deletionTimestamp")):
            md = _meta(pod)
            self.by_name[(str(md.get("namespace") or ""), str(md.get("name") or ""))] = pod
            for a in _pod_addresses(pod):
                self.by_addr[a] = pod

    def resolve(self, ep: Mapping[str, Any], slice_namespace: str) -> tuple[Mapping[str, Any] | None, str]:
        """The Pod behind endpoint ``ep`` of a slice in ``slice_namespace``, or None and why not.

        A ``targetRef`` to a Pod names it (namespace defaulting to the slice's; its uid, when
        both carry one, must match: a Pod recreated under the same name is another Pod); an
        endpoint without one (a hand-made slice) is matched by address."""
        ref = ep.get("targetRef")
        addrs = [str(a) for a in ep.get("addresses") or []]
        shown = addrs[0] if addrs else "?"
        if isinstance(ref, Mapping) and ref.get("name") and ref.get("kind") in (None, "", "Pod"):
            ns, name = str(ref.get("namespace") or slice_namespace), str(ref["name"])
            pod = self.by_name.get((ns, name))
            uid = ref.get("uid")
            if pod is not None and (not uid or not _meta(pod).get("uid") or _meta(pod).get("uid") == uid):
                return pod, ""
            if self.namespace is not None and ns != self.namespace:
                return None, (f"endpoint {shown} is pod {ns}/{name}, outside the data-plane namespace "
                              f"{self.namespace} whose pods the controller watches (--data-plane-namespace)")
            return None, f"pod {name} ({shown}) is not in the controller's pod cache yet"
        for a in addrs:
            pod = self.by_addr.get(a)
            if pod is not None:
                return pod, ""
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return None, f"endpoint {shown} has no targetRef and no pod{where} has that address"


def _service_slices(slices: Iterable[Mapping[str, Any]], namespace: str, service: str) -> list[Mapping[str, Any]]:
    return [sl for sl in slices if _meta(sl).get("namespace") == namespace
            and (_meta(sl).get("labels") or {}).get(SERVICE_NAME_LABEL) == service]


def _endpoints(sl: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [ep for ep in sl.get("endpoints") or [] if isinstance(ep, Mapping) and ep.get("addresses")]


def _is_ready(ep: Mapping[str, Any]) -> bool:
    """``conditions.ready`` absent counts as ready (EndpointSlice API); terminating never does."""
    cond = ep.get("conditions") or {}
    return cond.get("ready") is not False and cond.get("terminating") is not True


def _endpoint(ep: Mapping[str, Any], slice_namespace: str, index: PodIndex | None) -> Endpoint:
    addr = str(ep["addresses"][0])
    ref = ep.get("targetRef")
    ref_name = str(ref.get("name") or "") if isinstance(ref, Mapping) else ""
    if index is None:
        return Endpoint(ref_name or addr, addr)
    pod, why = index.resolve(ep, slice_namespace)
    if pod is None:
        return Endpoint(ref_name or addr, addr, None, why)
    md = _meta(pod)
    stamp = str((md.get("annotations") or {}).get(LISTENERS_ANNOTATION) or "")
    return Endpoint(str(md.get("name") or ref_name or addr), addr, stamp)


def ready_endpoints(slices: Iterable[Mapping[str, Any]], namespace: str, service: str,
                    pods: Iterable[Mapping[str, Any]] | None = None, *,
                    pod_namespace: str | None = None) -> list[Endpoint]:
    """Ready endpoints of ``namespace/service`` (``conditions.ready`` absent counts as ready).
    With ``pods`` (the cached Pods of ``pod_namespace``) each endpoint is named after its Pod
    (``PodIndex.resolve``) and carries that Pod's listener stamp (``Endpoint.listeners``)."""
    index = None if pods is None else PodIndex(pods, pod_namespace)
    out: dict[str, Endpoint] = {}
    for sl in _service_slices(slices, namespace, service):
        for ep in _endpoints(sl):
            if _is_ready(ep):
                e = _endpoint(ep, namespace, index)
                out.setdefault(e.address, e)
    return sorted(out.values(), key=lambda e: (e.pod, e.address))


def selector_text(selector: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def _selector(service: Mapping[str, Any] | None) -> dict[str, str]:
    """The Service's ``spec.selector`` (empty: none; such a Service selects no Pod)."""
    sel = ((service or {}).get("spec") or {}).get("selector")
    if not isinstance(sel, Mapping):
        return {}
    return {str(k): str(v) for k, v in sel.items() if isinstance(k, str) and isinstance(v, str)}


@dataclass(frozen=True)
class DataPlane:
    """The data plane behind ``--data-plane-service``, from the caches (``data_plane``)."""

    namespace: str
    service: str
    #: the Service object (None: not in the cache)
    service_object: Mapping[str, Any] | None
    #: every Pod of the data plane (ready or not), by name: the pods to poke and stamp
    pods: tuple[Mapping[str, Any], ...]
    #: the ready endpoints, each with its Pod's listener stamp: the endpoints to probe
    endpoints: tuple[Endpoint, ...]
    #: endpoints listed in the Service's slices that are not ready (or terminating)
    not_ready: tuple[str, ...] = ()

    def no_endpoint_message(self) -> str:
        """Why there is no ready endpoint (for Programmed=False/Pending)."""
        svc = f"{self.namespace}/{self.service}"
        head = "no ready data-plane endpoint"
        if self.not_ready:
            shown = ", ".join(self.not_ready[:3]) + (f" and {len(self.not_ready) - 3} more"
                                                     if len(self.not_ready) > 3 else "")
            return (f"{head}: none of the {len(self.not_ready)} endpoints of the data-plane Service {svc} is ready "
                    f"({shown}); a data-plane pod turns ready once it has loaded a config")
        if self.service_object is None:
            return f"{head}: the data-plane Service {svc} does not exist (--data-plane-service)"
        sel = _selector(self.service_object)
        if not sel:
            return (f"{head}: the data-plane Service {svc} has no selector and no EndpointSlice lists an endpoint "
                    "for it")
        return (f"{head}: the data-plane Service {svc} has no endpoints: no running pod matches its selector "
                f"{selector_text(sel)}")


def is_data_plane_pod(pod: Mapping[str, Any], service: Mapping[str, Any] | None,
                      slices: Iterable[Mapping[str, Any]], namespace: str, name: str) -> bool:
    """Whether ``pod`` is (now) a Pod of the data plane of Service ``namespace/name``: its
    selector matches the Pod's labels, or one of its slices points at the Pod (by targetRef, or
    by address for an endpoint without one). Cheap: for filtering Pod events."""
    md = _meta(pod)
    pod_ns, pod_name = md.get("namespace"), md.get("name")
    sel = _selector(service)
    if sel and pod_ns == namespace:
        labels = md.get("labels") or {}
        if all(labels.get(k) == v for k, v in sel.items()):
            return True
    addrs = set(_pod_addresses(pod))
    for sl in _service_slices(slices, namespace, name):
        for ep in _endpoints(sl):
            ref = ep.get("targetRef")
            if isinstance(ref, Mapping) and ref.get("name") and ref.get("kind") in (None, "", "Pod"):
                if ref.get("name") == pod_name and (ref.get("namespace") or namespace) == pod_ns:
                    return True
            elif addrs.intersection(str(a) for a in ep.get("addresses") or []):
                return True
    return False


def data_plane(service: Mapping[str, Any] | None, slices: Iterable[Mapping[str, Any]],
               pods: Iterable[Mapping[str, Any]], namespace: str, name: str, *,
               pod_namespace: str | None = None) -> DataPlane:
    """The data plane of Service ``namespace/name`` (``service``: that Service from the cache, or
    None), whatever labels its Pods carry: the Pods its EndpointSlices point at (any readiness)
    and the Pods of ``namespace`` its ``spec.selector`` matches, out of ``pods`` (the cached
    Pods of ``pod_namespace``); its ready endpoints mapped to those Pods."""
    pods = list(pods)
    index = PodIndex(pods, pod_namespace)
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    ready: dict[str, Endpoint] = {}
    not_ready: dict[str, str] = {}
    for sl in _service_slices(slices, namespace, name):
        for ep in _endpoints(sl):
            pod, _why = index.resolve(ep, namespace)
            if pod is not None:
                md = _meta(pod)
                found[(str(md.get("namespace") or ""), str(md.get("name") or ""))] = pod
            if _is_ready(ep):
                e = _endpoint(ep, namespace, index)
                ready.setdefault(e.address, e)
            else:
                addr = str(ep["addresses"][0])
                shown = f"pod {_meta(pod).get('name')}" if pod is not None else addr
                not_ready.setdefault(addr, shown)
    sel = _selector(service)
    if sel:
        for pod in pods:
            md = _meta(pod)
            labels = md.get("labels") or {}
            if md.get("namespace") == namespace and all(labels.get(k) == v for k, v in sel.items()):
                found[(namespace, str(md.get("name") or ""))] = pod
    for addr in ready:
        not_ready.pop(addr, None)
    return DataPlane(namespace, name, service, tuple(p for _, p in sorted(found.items(), key=lambda kv: kv[0])),
                     tuple(sorted(ready.values(), key=lambda e: (e.pod, e.address))),
                     tuple(not_ready[a] for a in sorted(not_ready)))


def awaiting_rollout(endpoints: Iterable[Endpoint], listeners: str) -> str:
    """"" when every endpoint's Pod was created with the listener set ``listeners`` (canonical,
    see ``writers.deployment.canonical_listeners``; a Pod without the annotation counts as the
    empty set, what the chart's template starts with), else a Pending message naming the Pod
    that awaits the rollout. Endpoints need ``listeners`` from ``ready_endpoints(..., pods)``."""
    problems = []
    for ep in endpoints:
        if ep.listeners is None:
            why = ep.unknown or f"pod {ep.pod} ({ep.address}) is not in the controller's pod cache yet"
            problems.append(f"{why}: its listener set is unknown, so it cannot count as rolled out "
                            "(--data-plane-deployment)")
        elif ep.listeners != listeners:
            problems.append(f"pod {ep.pod} ({ep.address}) awaits the data-plane rollout: it was started "
                            f"with listeners {ep.listeners or 'none'}, the config needs {listeners or 'none'}")
    if not problems:
        return ""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return problems[0] + more


class _Transient(Exception):
    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


#: Answers of a server that does not implement a path at all (as opposed to failing it).
NOT_SERVED = frozenset({404, 405, 501})
_HEX_SHA256 = re.compile(r"^[0-9a-f]{64}$")
NO_ADMIN_API = ("this data plane cannot confirm which config it runs, so Programmed will not turn True; "
                "it needs a Titanium build with the admin API (/readyz, and /version reporting the config_hash)")


def _refused(error: BaseException) -> bool:
    """Whether ``error`` (a requests error, with the urllib3 and socket errors it wraps) is a
    refused TCP connection: nothing listens on the port."""
    seen: set[int] = set()
    todo: list[Any] = [error]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen or not isinstance(e, BaseException):
            continue
        seen.add(id(e))
        if isinstance(e, ConnectionRefusedError) or (isinstance(e, OSError) and e.errno == errno.ECONNREFUSED):
            return True
        todo.extend([e.__cause__, e.__context__, getattr(e, "reason", None), *e.args])
    return False


@dataclass(frozen=True)
class PodProblem:
    """Why one pod does not confirm the config; ``lasting``: it will not pass by waiting (a
    data plane without the admin API, a token mismatch, nothing on the admin port)."""

    message: str
    lasting: bool = False


class Prober:
    def __init__(self, admin_port: int, token: str, *, timeout: float = 2.0, attempts: int = 2,
                 retry_wait: float = 0.2, registry: Registry | None = None,
                 session: requests.Session | None = None, max_parallel: int = 16) -> None:
        self.admin_port = admin_port
        self.max_parallel = max(1, max_parallel)
        self.token = token
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.retry_wait = retry_wait
        self.session = session or requests.Session()
        self._results = (registry or REGISTRY).counter(
            "titanium_probe_results_total", "Data-plane probe rounds by result.", ["result"])

    def _url(self, ep: Endpoint, path: str) -> str:
        host = f"[{ep.address}]" if ":" in ep.address else ep.address
        return f"http://{host}:{self.admin_port}{path}"

    def _get(self, url: str, auth: bool, token: str | None = None) -> requests.Response:
        token = self.token if token is None else token
        headers = {"Authorization": f"Bearer {token}"} if auth else {}

        @retry(stop=stop_after_attempt(self.attempts), wait=wait_fixed(self.retry_wait),
               retry=retry_if_exception_type(_Transient), reraise=True)
        def once() -> requests.Response:
            try:
                return self.session.get(url, headers=headers, timeout=self.timeout)
            except (requests.ConnectionError, requests.Timeout) as e:
                raise _Transient(e) from None

        return once()

    def _failed(self, who: str, path: str, error: BaseException) -> PodProblem:
        if isinstance(error, _Transient):
            cause = error.error
            if isinstance(cause, requests.Timeout):
                return PodProblem(f"{who}: {path} on the admin port {self.admin_port} did not answer within "
                                  f"{self.timeout:g} s")
            if _refused(cause):
                return PodProblem(f"{who}: connection refused on the admin port {self.admin_port}: nothing listens "
                                  f"there. Either --admin-port is not the data plane's admin port, or {NO_ADMIN_API}",
                                  lasting=True)
            return PodProblem(f"{who} is unreachable on the admin port {self.admin_port}: "
                              f"{cause.__class__.__name__}")
        return PodProblem(f"{who}: the probe of {path} failed: {error.__class__.__name__}")

    def examine(self, ep: Endpoint, expected: str, token: str | None = None) -> PodProblem | None:
        """None when ``ep`` runs ``expected``, else why not. Never raises. ``token``: the admin
        token of its data plane (None: the controller's own, the shared data plane's)."""
        who = f"pod {ep.pod} ({ep.address})"
        try:
            r = self._get(self._url(ep, "/readyz"), auth=False)
        except Exception as e:  # noqa: BLE001 - any failure is this pod's answer, never the reconcile's
            return self._failed(who, "/readyz", e)
        if r.status_code in NOT_SERVED:
            return PodProblem(f"{who} does not serve /readyz ({r.status_code}) on the admin port "
                              f"{self.admin_port}: {NO_ADMIN_API}", lasting=True)
        if r.status_code != 200:
            return PodProblem(f"{who} is not ready: /readyz answered {r.status_code}")
        try:
            v = self._get(self._url(ep, "/version"), auth=True, token=token)
        except Exception as e:  # noqa: BLE001
            return self._failed(who, "/version", e)
        if v.status_code in (401, 403):
            if not (self.token if token is None else token):
                return PodProblem(f"{who} rejected the request without an admin token (/version {v.status_code}): "
                                  "the controller has no TITANIUM_ADMIN_TOKEN; give it the data plane's token",
                                  lasting=True)
            return PodProblem(f"{who} rejected the admin token (/version {v.status_code}): the controller's "
                              "TITANIUM_ADMIN_TOKEN does not match the data plane's (both must come from the "
                              "same Secret)", lasting=True)
        if v.status_code in NOT_SERVED:
            return PodProblem(f"{who} does not serve /version ({v.status_code}) with a config_hash: {NO_ADMIN_API}",
                              lasting=True)
        if v.status_code != 200:
            return PodProblem(f"{who}: /version answered {v.status_code}")
        try:
            body = v.json()
        except ValueError:
            return PodProblem(f"{who}: /version answered 200 but its body is not JSON, so it reports no config_hash: "
                              f"{NO_ADMIN_API}", lasting=True)
        if not isinstance(body, Mapping) or "config_hash" not in body:
            return PodProblem(f"{who}: /version answered 200 without a config_hash field: {NO_ADMIN_API}",
                              lasting=True)
        got = body["config_hash"]
        if got is None or got == "":
            return PodProblem(f"{who} has not loaded a config yet (/version reports no config_hash), "
                              f"waiting for {expected[:12]}")
        if not isinstance(got, str) or not _HEX_SHA256.match(got):
            shown = repr(got)[:40]
            return PodProblem(f"{who}: /version reports config_hash {shown}, which is not a SHA-256 hex digest: "
                              f"{NO_ADMIN_API}", lasting=True)
        if got != expected:
            return PodProblem(f"{who} runs config {got[:12]}, waiting for {expected[:12]} (still loading it)")
        return None

    def check(self, ep: Endpoint, expected: str) -> str | None:
        """None when ``ep`` runs ``expected``, else why not (``examine``'s message)."""
        p = self.examine(ep, expected)
        return None if p is None else p.message

    def probe(self, endpoints: Iterable[Endpoint], expected: str, *, no_endpoints: str = "",
              token: str | None = None) -> ProbeResult:
        """Confirmed when every endpoint runs ``expected``; else the message of one pod that does
        not (one with a lasting problem first), and how many more. ``no_endpoints``: the message
        when there is no endpoint at all; ``token``: the data plane's admin token (None: the
        controller's own)."""
        eps = list(endpoints)
        if not eps:
            self._results.labels(result="no-endpoints").inc()
            return ProbeResult(None, no_endpoints or "no ready data-plane endpoint", examined=True)
        if len(eps) == 1:
            answers = [self.examine(eps[0], expected, token)]
        else:  # in parallel: one slow pod must not delay the others (bounded by ``timeout`` x attempts)
            with ThreadPoolExecutor(max_workers=min(self.max_parallel, len(eps)),
                                    thread_name_prefix="prober") as pool:
                answers = list(pool.map(lambda ep: self.examine(ep, expected, token), eps))
        problems = [p for p in answers if p is not None]
        confirmed = frozenset(ep.pod for ep, p in zip(eps, answers, strict=True) if p is None)
        if problems:
            self._results.labels(result="pending").inc()
            first = next((p for p in problems if p.lasting), problems[0])
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            lasting = frozenset(ep.pod for ep, p in zip(eps, answers, strict=True) if p is not None and p.lasting)
            return ProbeResult(None, first.message + more, True, confirmed, lasting)
        self._results.labels(result="confirmed").inc()
        return ProbeResult(expected, "", True, confirmed)
