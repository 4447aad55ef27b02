"""A stub Titanium data-plane pod for tests: the admin endpoints of the contract.

``GET /readyz`` (no auth: 200 once a config is loaded, 503 before), ``GET /version`` and
``GET /metrics`` (``Authorization: Bearer <token>``; 401 otherwise). The config comes from
``load()`` or from following a ConfigMap in a ``FakeApiServer`` or a real API server
(``follow(KubeApi, ...)``; ``tests.support.kubelet`` runs stubs as real pods) (root ``twp.yaml`` plus the
``include``d parts ``<cm>-part-<n>`` / ``twp.part-<n>.yaml`` with their sha256 checked: a
missing or mismatching part keeps the previous config and retries, as the contract says).

Several stubs share one admin port on distinct loopback addresses (127.0.0.N), because the
controller reaches every pod on the single ``--admin-port``::

    fleet = DataPlaneFleet.start(2, token="t")
    fleet.register(server, "gateway-system", "titanium")   # Service, Pods, EndpointSlice
    fleet.follow(server, "gateway-system", "titanium")     # load what the controller writes
    ...
    fleet.stop()
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import yaml

from tests.support.httpserver import TrackingHTTPServer

__all__ = ["StubDataPlane", "DataPlaneFleet", "ConfigRejected", "sha256_hex", "DATA_PLANE_LABELS"]

DATA_PLANE_LABELS = {"app.kubernetes.io/name": "titanium", "app.kubernetes.io/component": "data-plane"}
ROOT_KEY = "twp.yaml"
_PART_FILE = re.compile(r"^twp\.part-(\d+)\.yaml$")


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _b(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else data


class ConfigRejected(Exception):
    """The config could not be loaded (bad YAML, missing part, sha256 mismatch)."""


@dataclass
class AdminRequest:
    path: str
    authorized: bool
    status: int
    time: float = field(default_factory=time.time)


class StubDataPlane:
    """One stub data-plane pod (see module docstring)."""

    def __init__(self, token: str, *, host: str = "127.0.0.1", port: int = 0, version: str = "7.1.0-stub",
                 name: str = "", mounted_parts: int = 8) -> None:
        self.token = token
        self.host = host
        self._port = port
        self.version = version
        self.name = name or f"titanium-{host.replace('.', '-')}"
        self.mounted_parts = mounted_parts
        self.lie_hash: str | None = None  # /version reports this instead of the loaded hash
        self.delay = 0.0  # seconds every admin answer waits (a slow or hung pod)
        self.fail_status: int | None = None  # answer every admin request with this status (e.g. 500)
        #: answer an authorized /version with (status, JSON body or None) instead: a data plane
        #: without the admin API, e.g. (404, None), or (200, {"version": "1.0"}) without config_hash
        self.version_answer: tuple[int, Any] | None = None
        self._ready_override = True
        self._lag = False
        self._lock = threading.RLock()
        self._loaded: bytes | None = None
        self._loaded_doc: Any = None
        self._parts: dict[str, bytes] = {}
        self._pending: tuple[bytes, dict[str, bytes]] | None = None
        self.reloads = 0
        self.rejected = 0
        self.loaded_hashes: list[str] = []
        self.requests: list[AdminRequest] = []
        self._httpd: TrackingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._follow_stop = threading.Event()
        self._follow_thread: threading.Thread | None = None
        self.last_error: str = ""

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> StubDataPlane:
        if self._httpd is not None:
            return self
        handler = type("_BoundAdmin", (_AdminHandler,), {"stub": self})
        httpd = TrackingHTTPServer((self.host, self._port), handler)
        self._httpd = httpd
        self._port = int(httpd.server_address[1])  # a restart binds the same port
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"stub-dataplane-{self.host}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._follow_stop.set()
        if self._follow_thread is not None:
            self._follow_thread.join(timeout=5)
            self._follow_thread = None
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StubDataPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            return self._port
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # ----------------------------------------------------------------- controls

    @property
    def ready(self) -> bool:
        with self._lock:
            return self._ready_override and self._loaded is not None

    def set_ready(self, ready: bool) -> None:
        with self._lock:
            self._ready_override = ready

    @property
    def lag(self) -> bool:
        return self._lag

    @lag.setter
    def lag(self, value: bool) -> None:
        with self._lock:
            self._lag = value
            if not value:
                self._apply_pending()

    def release(self) -> None:
        """Stop lagging and load the newest config offered meanwhile."""
        self.lag = False

    @property
    def config_hash(self) -> str | None:
        """The hash of the loaded root ``twp.yaml`` (what /version reports unless lying)."""
        with self._lock:
            return None if self._loaded is None else sha256_hex(self._loaded)

    @property
    def config(self) -> bytes | None:
        with self._lock:
            return self._loaded

    @property
    def document(self) -> Any:
        """The loaded config as one document: the root with the parts' routes and clusters merged in."""
        with self._lock:
            return self._loaded_doc

    # ----------------------------------------------------------------- loading

    def load(self, root: bytes | str, parts: dict[str, bytes | str] | None = None) -> bool:
        """Offer a config (root ``twp.yaml`` bytes, parts by file name). Returns True when it was
        loaded now; False when lagging (kept pending) or unchanged. Raises ConfigRejected."""
        rb = _b(root)
        pb = {k: _b(v) for k, v in (parts or {}).items()}
        with self._lock:
            if self._lag:
                self._pending = (rb, pb)
                return False
            return self._load_now(rb, pb)

    def _apply_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            with contextlib.suppress(ConfigRejected):
                self._load_now(*pending)

    def _load_now(self, root: bytes, parts: dict[str, bytes]) -> bool:
        if root == self._loaded and all(self._parts.get(k) == v for k, v in parts.items()):
            return False
        try:
            doc = yaml.safe_load(root)
        except yaml.YAMLError as e:
            self._reject(f"twp.yaml: {e}")
        if not isinstance(doc, dict):
            self._reject("twp.yaml: not a mapping")
        if "schemaVersion" not in doc:
            self._reject("twp.yaml: schemaVersion is required")
        used: dict[str, bytes] = {}
        include = doc.get("include") or []
        if include:
            doc = dict(doc)
            routes = list(doc.get("routes") or [])
            clusters = list(doc.get("clusters") or [])
            for entry in include:
                fname = str((entry or {}).get("file", ""))
                m = _PART_FILE.match(fname)
                if not m:
                    self._reject(f"include: bad file name {fname!r}")
                assert m is not None
                if int(m.group(1)) > self.mounted_parts:
                    self._reject(f"include: {fname} is not mounted (only {self.mounted_parts} parts)")
                data = parts.get(fname)
                if data is None:
                    self._reject(f"include: {fname} not present yet")
                assert data is not None
                if sha256_hex(data) != str(entry.get("sha256", "")).lower():
                    self._reject(f"include: {fname} sha256 mismatch (not loaded yet)")
                try:
                    part = yaml.safe_load(data) or {}
                except yaml.YAMLError as e:
                    self._reject(f"{fname}: {e}")
                routes.extend(part.get("routes") or [])
                clusters.extend(part.get("clusters") or [])
                used[fname] = data
            doc["routes"] = routes
            doc["clusters"] = clusters
        self._loaded = root
        self._loaded_doc = doc
        self._parts = used
        self.reloads += 1
        self.loaded_hashes.append(sha256_hex(root))
        self.last_error = ""
        return True

    def _reject(self, why: str) -> None:
        self.rejected += 1
        self.last_error = why
        raise ConfigRejected(why)

    def load_configmaps(self, root_cm: dict[str, Any] | None, part_cms: dict[int, dict[str, Any] | None]) -> bool:
        """Load from ConfigMap objects as the pod's volume shows them (missing ones are absent)."""
        if root_cm is None or ROOT_KEY not in (root_cm.get("data") or {}):
            return False
        parts: dict[str, bytes | str] = {}
        for n, cm in part_cms.items():
            if n > self.mounted_parts or cm is None:
                continue
            key = f"twp.part-{n}.yaml"
            val = (cm.get("data") or {}).get(key)
            if val is not None:
                parts[key] = val
        try:
            return self.load(root_cm["data"][ROOT_KEY], parts)
        except ConfigRejected:
            return False

    def follow(self, server: Any, namespace: str, configmap_name: str, *, interval: float = 0.05,
               pod_name: str | None = None, sync_period: float = 60.0, configmap_lag: float = 0.0) -> None:
        """Keep loading the ConfigMap ``configmap_name`` (and its parts) from ``server``: a
        FakeApiServer, or anything with its ``get_object(kind, namespace, name)`` read call
        (None when absent), such as ``tests.support.kubeapi.KubeApi`` for a real API server.

        Without ``pod_name`` every change is seen within ``interval``. With ``pod_name`` it
        behaves like a kubelet-mounted volume: the files refresh only when that Pod object
        changes (e.g. the controller's config-poke annotation) or every ``sync_period`` seconds.
        ``configmap_lag`` (with ``pod_name``): the ConfigMaps are read from a cache that shows a
        change only ``configmap_lag`` seconds after it was made, as the kubelet's ConfigMap
        cache, fed by a watch of its own, may lag the pod's: a refresh right after a change
        (e.g. on the poke that follows a ConfigMap write) projects the old files.
        """
        self._follow_stop.clear()
        history: list[tuple[float, Any, dict[int, Any]]] = []  # (seen at, root, parts): the lagging cache

        def read() -> tuple[Any, dict[int, Any]]:
            root = server.get_object("ConfigMap", namespace, configmap_name)
            parts = {n: server.get_object("ConfigMap", namespace, f"{configmap_name}-part-{n}")
                     for n in range(1, self.mounted_parts + 1)}
            return root, parts

        def cached() -> tuple[Any, dict[int, Any]]:
            """What a cache ``configmap_lag`` s behind shows: the root is watched (one read a
            turn), the parts are read when it changes (the controller writes them first)."""
            root = server.get_object("ConfigMap", namespace, configmap_name)
            rv = None if root is None else root["metadata"].get("resourceVersion")
            last = history[-1][1] if history else None
            if not history or rv != (None if last is None else last["metadata"].get("resourceVersion")):
                parts = {n: server.get_object("ConfigMap", namespace, f"{configmap_name}-part-{n}")
                         for n in range(1, self.mounted_parts + 1)}
                # the first state is known from the start (what the pod started with)
                history.append((-1.0 if not history else time.monotonic(), root, parts))
            horizon = time.monotonic() - configmap_lag
            while len(history) > 1 and history[1][0] <= horizon:
                del history[0]
            return history[0][1], history[0][2]

        def loop() -> None:
            seen_pod_rv: str | None = None  # the pod's non-status content
            next_sync = 0.0
            while not self._follow_stop.is_set():
                try:
                    refresh = pod_name is None
                    if pod_name is not None:
                        pod = server.get_object("Pod", namespace, pod_name)
                        # the kubelet re-syncs a pod's volumes when the pod changes (not on status updates)
                        rv = None if pod is None else json.dumps(
                            [pod["metadata"].get("annotations"), pod["metadata"].get("labels"), pod.get("spec")],
                            sort_keys=True)
                        if rv != seen_pod_rv or time.monotonic() >= next_sync:
                            refresh = True
                            seen_pod_rv = rv
                            next_sync = time.monotonic() + sync_period
                    lagging = cached() if configmap_lag > 0 and pod_name is not None else None
                    if refresh:
                        root, parts = lagging if lagging is not None else read()
                        self.load_configmaps(root, parts)
                except Exception as e:  # keep following whatever a test does to the server
                    self.last_error = repr(e)
                self._follow_stop.wait(interval)

        self._follow_thread = threading.Thread(target=loop, name=f"stub-follow-{self.host}", daemon=True)
        self._follow_thread.start()

    def metrics_text(self) -> str:
        with self._lock:
            return ("# HELP titanium_config_reloads_total Configs loaded.\n# TYPE titanium_config_reloads_total counter\n"
                    f"titanium_config_reloads_total {self.reloads}\n"
                    "# HELP titanium_config_rejected_total Configs rejected.\n# TYPE titanium_config_rejected_total counter\n"
                    f"titanium_config_rejected_total {self.rejected}\n"
                    "# HELP titanium_ready Whether a config is loaded.\n# TYPE titanium_ready gauge\n"
                    f"titanium_ready {1 if self.ready else 0}\n")


class _AdminHandler(BaseHTTPRequestHandler):
    stub: StubDataPlane
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def do_GET(self) -> None:  # noqa: N802
        stub = self.stub
        path = self.path.split("?", 1)[0]
        authorized = self.headers.get("Authorization") == f"Bearer {stub.token}"
        if stub.delay:
            time.sleep(stub.delay)
        if stub.fail_status is not None:
            code, body, ctype = stub.fail_status, b"injected failure\n", "text/plain"
        elif path == "/readyz":
            code, body, ctype = (200, b"ok\n", "text/plain") if stub.ready else (503, b"not ready\n", "text/plain")
        elif path in ("/version", "/metrics"):
            if not authorized:
                code, body, ctype = 401, b'{"error":"unauthorized"}', "application/json"
            elif path == "/version" and stub.version_answer is not None:
                code, answer = stub.version_answer
                body, ctype = ((b"not found\n", "text/plain") if answer is None
                               else (json.dumps(answer).encode(), "application/json"))
            elif path == "/version":
                with stub._lock:
                    h = stub.lie_hash if stub.lie_hash is not None else stub.config_hash
                code, body, ctype = 200, json.dumps({"version": stub.version, "config_hash": h}).encode(), "application/json"
            else:
                code, body, ctype = 200, stub.metrics_text().encode(), "text/plain; version=0.0.4"
        else:
            code, body, ctype = 404, b"not found\n", "text/plain"
        with stub._lock:
            stub.requests.append(AdminRequest(path, authorized, code))
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if code == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        self.end_headers()
        self.wfile.write(body)


def _free_shared_port(hosts: list[str]) -> int:
    """A port that is free on every one of ``hosts`` (bound briefly to check)."""
    for _ in range(50):
        s0 = socket.socket()
        s0.bind((hosts[0], 0))
        port = s0.getsockname()[1]
        socks = [s0]
        ok = True
        for h in hosts[1:]:
            s = socket.socket()
            try:
                s.bind((h, port))
                socks.append(s)
            except OSError as e:
                if e.errno not in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
                    raise
                ok = False
                s.close()
                break
        for s in socks:
            s.close()
        if ok:
            return int(port)
    raise RuntimeError("no port free on all loopback addresses")


class DataPlaneFleet:
    """Stub data-plane pods on 127.0.0.2, 127.0.0.3, ... sharing one admin port."""

    def __init__(self, stubs: list[StubDataPlane]) -> None:
        self.stubs = stubs
        self.server: Any = None
        self.namespace = ""
        self.service = ""
        self.probe_readyz = False
        self.labels: dict[str, str] = dict(DATA_PLANE_LABELS)
        self._probe_stop = threading.Event()
        self._probe_thread: threading.Thread | None = None
        self._last_ready: list[bool] = []

    @classmethod
    def start(cls, n: int, token: str, *, first_host: int = 2, port: int = 0, version: str = "7.1.0-stub",
              mounted_parts: int = 8, service: str = "titanium") -> DataPlaneFleet:
        hosts = [f"127.0.0.{first_host + i}" for i in range(n)]
        for attempt in range(5):
            p = port or _free_shared_port(hosts)
            stubs: list[StubDataPlane] = []
            try:
                for i, h in enumerate(hosts):
                    stubs.append(StubDataPlane(token, host=h, port=p, version=version, name=f"{service}-{i}",
                                               mounted_parts=mounted_parts).start())
                return cls(stubs)
            except OSError:
                for s in stubs:
                    s.stop()
                if port or attempt == 4:
                    raise
        raise RuntimeError("unreachable")

    @property
    def port(self) -> int:
        return self.stubs[0].port

    def __iter__(self) -> Any:
        return iter(self.stubs)

    def __getitem__(self, i: int) -> StubDataPlane:
        return self.stubs[i]

    def __len__(self) -> int:
        return len(self.stubs)

    def stop(self) -> None:
        self._probe_stop.set()
        if self._probe_thread is not None:
            self._probe_thread.join(timeout=5)
            self._probe_thread = None
        for s in self.stubs:
            s.stop()

    def __enter__(self) -> DataPlaneFleet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def follow(self, server: Any, namespace: str, configmap_name: str, *, interval: float = 0.05,
               sync_period: float | None = 60.0, configmap_lag: float = 0.0) -> None:
        """Every stub loads the ConfigMap like a kubelet-mounted volume of its Pod: refreshed when
        the Pod changes (config-poke) or every ``sync_period`` s (None: whenever it changes);
        ``configmap_lag``: see ``StubDataPlane.follow``."""
        for s in self.stubs:
            if sync_period is None:
                s.follow(server, namespace, configmap_name, interval=interval)
            else:
                s.follow(server, namespace, configmap_name, interval=interval, pod_name=s.name,
                         sync_period=sync_period, configmap_lag=configmap_lag)

    def register(self, server: Any, namespace: str, service: str, *, service_ports: tuple[tuple[int, int], ...] = (
            (80, 8080), (443, 8443)), service_type: str = "LoadBalancer", lb_ip: str | None = "203.0.113.10",
            deployment: str | None = None, probe_interval: float | None = 0.1,
            labels: dict[str, str] | None = None) -> None:
        """Create the data-plane Service, one Pod per stub and the EndpointSlice in ``server``.

        The EndpointSlice lists each stub's loopback address and the admin port as a named port
        (``admin``). With ``probe_interval`` (the chart's readinessProbe on /readyz) a pod and its
        endpoint are ready only while the stub answers /readyz 200 (a config loaded and not
        ``set_ready(False)``), re-probed every ``probe_interval`` s; with None, readiness is
        just the ``set_ready`` override."""
        self.server, self.namespace, self.service = server, namespace, service
        self.labels = dict(labels or DATA_PLANE_LABELS)
        self.probe_readyz = probe_interval is not None
        if server.get_object("Namespace", None, namespace) is None:
            server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        svc: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": service, "namespace": namespace,
                                                                "labels": dict(self.labels)},
            "spec": {"type": service_type, "selector": dict(self.labels),
                     "ports": [{"name": f"p{port}", "port": port, "targetPort": target, "protocol": "TCP"}
                               for port, target in service_ports]}}
        if service_type == "LoadBalancer" and lb_ip:
            svc["status"] = {"loadBalancer": {"ingress": [{"ip": lb_ip}]}}
        server.put_object(svc)
        if deployment:
            server.put_object({"apiVersion": "apps/v1", "kind": "Deployment",
                               "metadata": {"name": deployment, "namespace": namespace, "labels": dict(self.labels)},
                               "spec": {"replicas": len(self.stubs), "selector": {"matchLabels": dict(self.labels)},
                                        "template": {"metadata": {"labels": dict(self.labels)},
                                                     "spec": {"containers": [{"name": "titanium", "image": "titanium"}]}}}})
        self._last_ready = [self._is_ready(s) for s in self.stubs]
        for s in self.stubs:
            self._put_pod(s)
        self.sync_endpoints()
        if probe_interval is not None and self._probe_thread is None:
            self._probe_stop.clear()
            self._probe_thread = threading.Thread(target=self._probe_loop, args=(probe_interval,),
                                                  name="stub-kubelet-probe", daemon=True)
            self._probe_thread.start()

    def _is_ready(self, s: StubDataPlane) -> bool:
        running = s._httpd is not None
        return running and (s.ready if self.probe_readyz else s._ready_override)

    def _probe_loop(self, interval: float) -> None:
        while not self._probe_stop.wait(interval):
            now = [self._is_ready(s) for s in self.stubs]
            if now != self._last_ready:
                changed = [s for s, a, b in zip(self.stubs, now, self._last_ready, strict=True) if a != b]
                self._last_ready = now
                with contextlib.suppress(Exception):
                    for s in changed:
                        if self.server.get_object("Pod", self.namespace, s.name) is not None:
                            self._put_pod(s)
                    self.sync_endpoints()

    def _put_pod(self, s: StubDataPlane) -> None:
        ready = "True" if self._is_ready(s) else "False"
        status = {"phase": "Running", "podIP": s.host, "podIPs": [{"ip": s.host}],
                  "conditions": [{"type": "Ready", "status": ready}]}
        if self.server.get_object("Pod", self.namespace, s.name) is not None:
            self.server.update_object("Pod", self.namespace, s.name, lambda p: p.__setitem__("status", status))
            return
        self.server.put_object({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": s.name, "namespace": self.namespace, "labels": dict(self.labels)},
            "spec": {"containers": [{"name": "titanium", "image": "titanium"}], "nodeName": "node-1"},
            "status": status})

    def sync_endpoints(self) -> None:
        """Rewrite the EndpointSlice from the stubs' readiness overrides (and running state)."""
        if self.server is None:
            raise RuntimeError("register() first")
        endpoints = []
        for s in self.stubs:
            pod = self.server.get_object("Pod", self.namespace, s.name)
            if pod is None:
                continue
            ready = self._is_ready(s)
            endpoints.append({"addresses": [s.host], "conditions": {"ready": ready, "serving": ready,
                                                                    "terminating": False},
                              "targetRef": {"kind": "Pod", "name": s.name, "namespace": self.namespace,
                                            "uid": pod["metadata"]["uid"]}, "nodeName": "node-1"})
        self.server.put_object({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{self.service}-abcde", "namespace": self.namespace,
                         "labels": {"kubernetes.io/service-name": self.service,
                                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4", "endpoints": endpoints,
            "ports": [{"name": "admin", "port": self.port, "protocol": "TCP"},
                      {"name": "p80", "port": 8080, "protocol": "TCP"},
                      {"name": "p443", "port": 8443, "protocol": "TCP"}]})

    def set_ready(self, i: int, ready: bool, *, update_endpoints: bool = True) -> None:
        """Mark stub ``i`` (un)ready: its /readyz answers 503, its Pod and endpoint go not-ready."""
        s = self.stubs[i]
        s.set_ready(ready)
        if update_endpoints and self.server is not None:
            self._put_pod(s)
            self.sync_endpoints()

    def remove(self, i: int) -> StubDataPlane:
        """Stop stub ``i`` and delete its Pod and endpoint (a pod that went away)."""
        s = self.stubs[i]
        s.stop()
        if self.server is not None:
            self.server.delete_object("Pod", self.namespace, s.name)
            self.sync_endpoints()
        return s
