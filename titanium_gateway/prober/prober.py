"""The data-plane prober: confirms that every ready data-plane pod runs the config written.

For every READY endpoint of the data-plane Service (from the EndpointSlices in the cache) it
asks ``GET /readyz`` and ``GET /version`` (bearer token) on the admin port. The config is
confirmed only when ALL ready endpoints answer /readyz 200 and report the expected
``config_hash``; otherwise the result carries a message naming the pod and what it reported
(the render puts it in Programmed=False/Pending). Requests are short and retried briefly
(tenacity) on connection errors only.

With ``--data-plane-deployment`` (the controller stamps the listener set on the pod template,
which the pods inherit) a ready endpoint also has to run the current listener set: listeners
are bound at start, so a pod created from an older template does not serve a new listener even
after it reloaded the new twp.yaml (``awaiting_rollout``). Endpoints are mapped to their Pod by
address (``status.podIP``/``podIPs``), falling back to ``targetRef.name`` when the Pod has no
address in the cache.
"""

from __future__ import annotations

import logging
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
    "metadata.name", "metadata.namespace", "metadata.uid", "metadata.deletionTimestamp",
    "metadata.annotations[gateway.titaniumproxy.com/config-poke]",
    "metadata.annotations[gateway.titaniumproxy.com/listeners]",
    "status.podIP", "status.podIPs[].ip",
)
"""Fields of the data-plane Pods read by the prober (``ready_endpoints``: endpoint address ->
Pod, the listener stamp the Pod was created with) and the pod writers (``writers/pods.py``:
name, namespace, uid, deletionTimestamp, config-poke; ``writers/deployment.py``: the listeners
annotation). An informer transform of the Pods must keep all of them; EndpointSlice
``targetRef``/``nodeName`` are not needed (endpoints are mapped to Pods by address)."""


@dataclass(frozen=True)
class Endpoint:
    pod: str
    address: str
    #: the listener set the endpoint's Pod was created with (its ``LISTENERS_ANNOTATION``, "" when
    #: absent); None: no Pod known for the endpoint (only set when ``ready_endpoints`` got pods)
    listeners: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ProbeResult:
    confirmed_hash: str | None
    message: str = ""


def _pod_addresses(pod: Mapping[str, Any]) -> list[str]:
    status = pod.get("status") or {}
    addrs = [str(status["podIP"])] if status.get("podIP") else []
    for ip in status.get("podIPs") or []:
        if isinstance(ip, Mapping) and ip.get("ip"):
            addrs.append(str(ip["ip"]))
    return addrs


def ready_endpoints(slices: Iterable[Mapping[str, Any]], namespace: str, service: str,
                    pods: Iterable[Mapping[str, Any]] | None = None) -> list[Endpoint]:
    """Ready endpoints of ``namespace/service`` (``conditions.ready`` absent counts as ready).
    With ``pods`` (the data-plane Pods) each endpoint is named after the Pod with its address
    and carries that Pod's listener stamp (``Endpoint.listeners``)."""
    by_addr: dict[str, Mapping[str, Any]] = {}
    by_name: dict[str, Mapping[str, Any]] = {}
    # a Pod being deleted yields its address to a live Pod that reuses it
    for pod in sorted(pods or (), key=lambda p: not (p.get("metadata") or {}).get("deletionTimestamp")):
        md = pod.get("metadata") or {}
        by_name[str(md.get("name") or "")] = pod
        for a in _pod_addresses(pod):
            by_addr[a] = pod
    out: dict[str, Endpoint] = {}
    for sl in slices:
        meta = sl.get("metadata") or {}
        if meta.get("namespace") != namespace or (meta.get("labels") or {}).get(SERVICE_NAME_LABEL) != service:
            continue
        for ep in sl.get("endpoints") or []:
            if not isinstance(ep, Mapping):
                continue
            cond = ep.get("conditions") or {}
            if cond.get("ready") is False or cond.get("terminating") is True:
                continue
            addrs = ep.get("addresses") or []
            if not addrs:
                continue
            addr = str(addrs[0])
            ref = str((ep.get("targetRef") or {}).get("name") or "")
            if pods is None:
                out.setdefault(addr, Endpoint(ref or addr, addr))
                continue
            p = by_addr.get(addr) or (by_name.get(ref) if ref else None)
            if p is None:
                out.setdefault(addr, Endpoint(ref or addr, addr, None))
                continue
            md = p.get("metadata") or {}
            stamp = str((md.get("annotations") or {}).get(LISTENERS_ANNOTATION) or "")
            out.setdefault(addr, Endpoint(str(md.get("name") or ref or addr), addr, stamp))
    return sorted(out.values(), key=lambda e: (e.pod, e.address))


def awaiting_rollout(endpoints: Iterable[Endpoint], listeners: str) -> str:
    """"" when every endpoint's Pod was created with the listener set ``listeners`` (canonical,
    see ``writers.deployment.canonical_listeners``; a Pod without the annotation counts as the
    empty set, what the chart's template starts with), else a Pending message naming the Pod
    that awaits the rollout. Endpoints need ``listeners`` from ``ready_endpoints(..., pods)``."""
    problems = []
    for ep in endpoints:
        if ep.listeners is None:
            problems.append(f"pod {ep.pod} ({ep.address}) is not in the data-plane pod cache yet: "
                            "its listeners are unknown, awaiting the data-plane rollout")
        elif ep.listeners != listeners:
            problems.append(f"pod {ep.pod} ({ep.address}) awaits the data-plane rollout: it was started "
                            f"with listeners {ep.listeners or 'none'}, the config needs {listeners or 'none'}")
    if not problems:
        return ""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return problems[0] + more


class _Transient(Exception):
    pass


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

    def _get(self, url: str, auth: bool) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.token}"} if auth else {}

        @retry(stop=stop_after_attempt(self.attempts), wait=wait_fixed(self.retry_wait),
               retry=retry_if_exception_type(_Transient), reraise=True)
        def once() -> requests.Response:
            try:
                return self.session.get(url, headers=headers, timeout=self.timeout)
            except (requests.ConnectionError, requests.Timeout) as e:
                raise _Transient(str(e)) from None

        return once()

    def check(self, ep: Endpoint, expected: str) -> str | None:
        """None when ``ep`` runs ``expected``, else why not."""
        try:
            r = self._get(self._url(ep, "/readyz"), auth=False)
            if r.status_code != 200:
                return f"pod {ep.pod} ({ep.address}) is not ready: /readyz answered {r.status_code}"
            v = self._get(self._url(ep, "/version"), auth=True)
        except _Transient as e:
            return f"pod {ep.pod} ({ep.address}) is unreachable: {e.__class__.__name__}"
        except requests.RequestException as e:
            return f"pod {ep.pod} ({ep.address}) probe failed: {e.__class__.__name__}"
        if v.status_code == 401:
            return f"pod {ep.pod} ({ep.address}) rejected the admin token (/version 401)"
        if v.status_code != 200:
            return f"pod {ep.pod} ({ep.address}): /version answered {v.status_code}"
        try:
            got = v.json().get("config_hash")
        except (ValueError, AttributeError):
            return f"pod {ep.pod} ({ep.address}): /version is not JSON"
        if got != expected:
            shown = str(got)[:12] if got else "none"
            return f"pod {ep.pod} ({ep.address}) runs config {shown}, waiting for {expected[:12]}"
        return None

    def probe(self, endpoints: Iterable[Endpoint], expected: str) -> ProbeResult:
        eps = list(endpoints)
        if not eps:
            self._results.labels(result="no-endpoints").inc()
            return ProbeResult(None, "no ready data-plane endpoints")
        if len(eps) == 1:
            answers = [self.check(eps[0], expected)]
        else:  # in parallel: one slow pod must not delay the others (bounded by ``timeout`` x attempts)
            with ThreadPoolExecutor(max_workers=min(self.max_parallel, len(eps)),
                                    thread_name_prefix="prober") as pool:
                answers = list(pool.map(lambda ep: self.check(ep, expected), eps))
        problems = [p for p in answers if p]
        if problems:
            self._results.labels(result="pending").inc()
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            return ProbeResult(None, problems[0] + more)
        self._results.labels(result="confirmed").inc()
        return ProbeResult(expected, "")
