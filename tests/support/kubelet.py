"""A stand-in kubelet for the data-plane pods of one release on the local cluster's Node.

The local control plane (hack/kube) has no kubelet: the Deployment and ReplicaSet controllers
create the data plane's Pods and the scheduler binds them to ``titanium-node-0``, and then
nothing runs them. ``StubKubelet`` does what a kubelet would for the Pods matching a label
selector in one namespace:

- a Pod bound to the Node gets an address from the cluster's pod range (a /32 on the cluster
  namespace's ``lo``) and a ``StubDataPlane`` serving the admin port on it;
- its status is written through ``pods/status`` like a kubelet's (Running, podIP, hostIP,
  container statuses, conditions), with ``Ready`` following the stub's ``/readyz`` as the
  chart's readinessProbe would (probed every ``probe_interval`` s); the EndpointSlice
  controller then lists the pod in its Service's EndpointSlice;
- the stub loads the root ConfigMap and its parts through the API like a mounted volume:
  refreshed when the Pod object changes (the controller's config-poke) or every
  ``sync_period`` s (``StubDataPlane.follow`` with a ``KubeApi``);
- a Pod being deleted is stopped and then removed (``gracePeriodSeconds: 0``), as a kubelet
  confirms a deletion once its containers are gone.

Everything runs in threads of the calling process, in the cluster's network namespace.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import requests

from tests.support.dataplane import StubDataPlane
from tests.support.kubeapi import KubeApiError
from tests.support.kubecluster import NODE_IP, NODE_NAME, LocalCluster

__all__ = ["StubKubelet", "RunningPod"]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunningPod:
    name: str
    uid: str
    ip: str
    stub: StubDataPlane
    api: Any = None  # the client the stub follows the ConfigMaps with
    ready: bool | None = None  # the Ready condition last written
    started: str = ""


class StubKubelet:
    """See module docstring."""

    def __init__(self, cluster: LocalCluster, namespace: str, selector: dict[str, str], *, token: str,
                 config_map: str, admin_port: int = 9901, mounted_parts: int = 64, interval: float = 0.2,
                 probe_interval: float = 0.5, sync_period: float = 60.0, follow_interval: float = 0.25,
                 version: str = "7.1.0-stub") -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.selector = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        self.token = token
        self.config_map = config_map
        self.admin_port = admin_port
        self.mounted_parts = mounted_parts
        self.interval = interval
        self.probe_interval = probe_interval
        self.sync_period = sync_period
        self.follow_interval = follow_interval
        self.version = version
        self.pods: dict[str, RunningPod] = {}  # by uid
        #: called with each stub before it serves (e.g. to make it a data plane without the admin API)
        self.on_launch: Callable[[StubDataPlane], None] | None = None
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._probe = requests.Session()
        self._probe.trust_env = False

    def start(self) -> StubKubelet:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"stub-kubelet-{self.namespace}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(15)
            self._thread = None
        with self._lock:
            pods, self.pods = list(self.pods.values()), {}
        for p in pods:
            self._kill(p)

    def __enter__(self) -> StubKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ views

    def running(self) -> list[RunningPod]:
        with self._lock:
            return sorted(self.pods.values(), key=lambda p: p.name)

    def stub(self, pod_name: str) -> StubDataPlane:
        for p in self.running():
            if p.name == pod_name:
                return p.stub
        raise KeyError(pod_name)

    # ------------------------------------------------------------------ loop

    def _run(self) -> None:
        with self.cluster.inside():
            api = self.cluster.admin_api()
            next_probe = 0.0
            try:
                while not self._stop.is_set():
                    try:
                        probe = time.monotonic() >= next_probe
                        if probe:
                            next_probe = time.monotonic() + self.probe_interval
                        self._sync(api, probe)
                    except Exception as e:  # keep going whatever a test does to the cluster
                        self.errors.append(repr(e))
                        del self.errors[:-50]
                    self._stop.wait(self.interval)
            finally:
                api.close()

    def _sync(self, api: Any, probe: bool) -> None:
        pods = api.list("Pod", self.namespace, label_selector=self.selector)
        seen: set[str] = set()
        for pod in pods:
            meta, spec = pod["metadata"], pod.get("spec") or {}
            uid = meta["uid"]
            if spec.get("nodeName") != NODE_NAME:
                continue  # not scheduled (yet)
            seen.add(uid)
            with self._lock:
                running = self.pods.get(uid)
            if meta.get("deletionTimestamp"):
                if running is not None:
                    with self._lock:
                        self.pods.pop(uid, None)
                    self._kill(running)
                with contextlib.suppress(KubeApiError):
                    api.delete("Pod", self.namespace, meta["name"], grace_period=0)
                continue
            if running is None:
                running = self._launch(pod)
                with self._lock:
                    self.pods[uid] = running
                probe = True
            if probe:
                ready = self._ready(running)
                if ready != running.ready:
                    self._write_status(api, pod, running, ready)
        with self._lock:
            gone = [p for uid, p in self.pods.items() if uid not in seen]
            for p in gone:
                self.pods.pop(p.uid, None)
        for p in gone:
            self._kill(p)

    def _launch(self, pod: dict[str, Any]) -> RunningPod:
        name = pod["metadata"]["name"]
        ip = self.cluster.ips.allocate()
        stub = StubDataPlane(self.token, host=ip, port=self.admin_port, version=self.version, name=name,
                             mounted_parts=self.mounted_parts)
        if self.on_launch is not None:
            self.on_launch(stub)
        try:
            stub.start()
        except OSError:
            self.cluster.ips.release(ip)
            raise
        # The stub reads through an API client of its own (its own thread).
        follow_api = self.cluster.admin_api()
        stub.follow(follow_api, self.namespace, self.config_map, interval=self.follow_interval,
                    pod_name=name, sync_period=self.sync_period)
        return RunningPod(name, pod["metadata"]["uid"], ip, stub, follow_api, started=_now())

    def _kill(self, p: RunningPod) -> None:
        p.stub.stop()
        if p.api is not None:
            p.api.close()
        self.cluster.ips.release(p.ip)

    def _ready(self, p: RunningPod) -> bool:
        """The chart's readinessProbe: GET /readyz on the admin port answers 200."""
        try:
            return self._probe.get(f"{p.stub.url}/readyz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def _write_status(self, api: Any, pod: dict[str, Any], p: RunningPod, ready: bool) -> None:
        now = _now()
        r = "True" if ready else "False"
        containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        status = {
            "phase": "Running", "hostIP": NODE_IP, "hostIPs": [{"ip": NODE_IP}], "podIP": p.ip,
            "podIPs": [{"ip": p.ip}], "startTime": p.started, "qosClass": "Burstable",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": p.started},
                {"type": "Initialized", "status": "True", "lastTransitionTime": p.started},
                {"type": "Ready", "status": r, "lastTransitionTime": now},
                {"type": "ContainersReady", "status": r, "lastTransitionTime": now},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": p.started},
            ],
            "containerStatuses": [
                {"name": c, "ready": ready, "started": True, "restartCount": 0, "image": "titanium",
                 "imageID": "", "containerID": f"stub://{p.uid}-{c}", "state": {"running": {"startedAt": p.started}}}
                for c in containers],
        }
        try:
            api.patch("Pod", self.namespace, p.name, {"status": status}, subresource="status")
            p.ready = ready
        except KubeApiError as e:
            if e.status != 404:
                raise
