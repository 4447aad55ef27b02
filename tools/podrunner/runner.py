"""The node agent: the pods bound to our Node, run as local processes.

For every pod on the node (and, after ``bind_after`` seconds, every pod no scheduler bound):

- an address from the pod range and, for images on the own stack, a network namespace joined to
  the bridge (``network.Network``);
- its volumes projected into ``<state>/pods/<uid>/volumes/<name>/`` with the kubelet's atomic
  ``..data`` swap, re-synced on every change of the pod (the controller's config-poke annotation
  is such a change) and every ``sync_period`` seconds; projected service-account tokens from the
  TokenRequest API, renewed at 80 % of their life;
- each container started as the program its image maps to (``images.ImageMap``) with the env
  the kubelet would build, restarted by the pod's restartPolicy with the kubelet's back-off,
  probed (readiness, liveness, startup) as its spec says;
- the pod's status (IPs, phase, conditions, container states) written back, Ready only once
  every container is ready: a container without a readiness probe once its image's ``listens``
  ports accept connections;
- on deletion: SIGTERM, SIGKILL after the grace period, namespace and address released, and the
  pod object deleted with grace 0 (the kubelet's last word, without which it would stay
  Terminating forever).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from titanium_gateway.kube.api import CONFIG_MAPS, PODS, SECRETS, ApiError, Obj
from titanium_gateway.kube.informer import SharedInformer
from tools.podrunner.env import EnvNotReady, container_env
from tools.podrunner.images import Image, ImageError, ImageMap
from tools.podrunner.kube import NODES, RunnerApi
from tools.podrunner.network import AddressPool, Network
from tools.podrunner.probes import Probe, ProbeWorker
from tools.podrunner.process import ContainerProcess, Exit, Mount, MountPlan, launch_argv, rfc3339
from tools.podrunner.volumes import AtomicWriter, Sources, VolumeNotReady, payload_for_volume
from tools.podrunner.workqueue import DelayingQueue

log = logging.getLogger(__name__)

BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
OWNED_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")
BACKOFF_INITIAL = 10.0  # the kubelet's crash-loop back-off: 10 s doubling to 300 s
BACKOFF_MAX = 300.0
#: the kubelet's configMapAndSecretChangeDetectionStrategy values this runner has: Watch (the
#: kubelet's default) reads ConfigMaps and Secrets from watch-fed caches; Cache fetches the ones
#: a pod references from the API server at each sync of the pod (the kubelet's TTL cache, which
#: RegisterPod empties on every pod sync), so a pod change never projects an older object
CHANGE_DETECTION = ("Watch", "Cache")


@dataclass
class ContainerRuntime:
    spec: Obj
    image: Image | None = None
    proc: ContainerProcess | None = None
    restart_count: int = 0
    last_exit: Exit | None = None
    logs: list[str] = field(default_factory=list)  # one log file per instance, oldest first
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    started: bool = False  # its image's listens ports accepted (or it has none)
    backoff: float = 0.0
    backoff_until: float = 0.0
    readiness: ProbeWorker | None = None
    liveness: ProbeWorker | None = None
    startup: ProbeWorker | None = None

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))

    def running(self) -> bool:
        return self.proc is not None and self.proc.running()

    def ready(self) -> bool:
        if not self.running() or not self.started:
            return False
        if self.startup is not None and not self.startup.result:
            return False
        return self.readiness.result if self.readiness is not None else True

    def stop_probes(self) -> None:
        for w in (self.readiness, self.liveness, self.startup):
            if w is not None:
                w.stop()
        self.readiness = self.liveness = self.startup = None


@dataclass
class PodRuntime:
    uid: str
    namespace: str
    name: str
    dir: str
    ip: str = ""
    netns: str | None = None
    veth: str | None = None
    network: str = "own"
    start_time: str = ""
    containers: dict[str, ContainerRuntime] = field(default_factory=dict)
    writers: dict[str, AtomicWriter] = field(default_factory=dict)
    volume_error: str = ""
    tokens: dict[tuple[str, str], tuple[str, float, float]] = field(default_factory=dict)
    last_status: Obj | None = None
    terminating: bool = False
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)  # type -> (status, time)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def _key(pod: Obj) -> str:
    m = pod.get("metadata") or {}
    return f"{m.get('namespace', '')}/{m.get('name', '')}"


class Runner:
    def __init__(self, api: RunnerApi, *, node_name: str, node_ip: str, images: ImageMap, network: Network,
                 pod_pool: AddressPool, state_dir: str, sync_period: float = 10.0, bind_after: float = 5.0,
                 api_host: str | None = None, api_port: int = 6443, kubelet_port: int = 10250,
                 workers: int = 4, backoff_initial: float = BACKOFF_INITIAL, change_detection: str = "Watch",
                 informer_factory: Callable[..., SharedInformer] = SharedInformer) -> None:
        self.api = api
        self.node_name = node_name
        self.node_ip = node_ip
        self.images = images
        self.net = network
        self.pool = pod_pool
        self.state_dir = state_dir
        self.sync_period = sync_period
        self.bind_after = bind_after
        self.kubelet_port = kubelet_port
        self.workers = workers
        self.backoff_initial = backoff_initial
        if change_detection not in CHANGE_DETECTION:
            raise ValueError(f"change detection {change_detection!r}: one of {', '.join(CHANGE_DETECTION)}")
        self.change_detection = change_detection
        host = api_host or node_ip
        self.service_env = {
            "KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": str(api_port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(api_port), "KUBERNETES_PORT": f"tcp://{host}:{api_port}",
            f"KUBERNETES_PORT_{api_port}_TCP": f"tcp://{host}:{api_port}",
            f"KUBERNETES_PORT_{api_port}_TCP_PROTO": "tcp", f"KUBERNETES_PORT_{api_port}_TCP_PORT": str(api_port),
            f"KUBERNETES_PORT_{api_port}_TCP_ADDR": host,
        }
        self.pods_informer = informer_factory(api, PODS, name="pods")
        self.config_maps = informer_factory(api, CONFIG_MAPS, name="configmaps")
        self.secrets = informer_factory(api, SECRETS, name="secrets")
        self.queue: DelayingQueue[str] = DelayingQueue("podrunner")
        self.pods: dict[str, PodRuntime] = {}
        self.first_seen: dict[str, float] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.sources = Sources(self._config_map, self._secret, self._token)

    # -- lookups -------------------------------------------------------------------------------
    def _config_map(self, ns: str, name: str) -> Obj | None:
        return self.config_maps.get(ns, name)

    def _secret(self, ns: str, name: str) -> Obj | None:
        return self.secrets.get(ns, name)

    def _token(self, pod: Obj, source: Obj) -> str:
        meta = pod.get("metadata") or {}
        rt = self.pods.get(_key(pod))
        cache_key = (str(source.get("audience", "")), str(source.get("path", "token")))
        now = time.time()
        if rt is not None and cache_key in rt.tokens:
            token, issued, expires = rt.tokens[cache_key]
            if now < issued + 0.8 * (expires - issued):
                return token
        expiration = int(source.get("expirationSeconds", 3600) or 3600)
        sa = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        try:
            answer = self.api.request_token(meta.get("namespace", ""), sa,
                                            audiences=[source["audience"]] if source.get("audience") else None,
                                            expiration_seconds=expiration, pod_name=meta.get("name", ""),
                                            pod_uid=meta.get("uid", ""))
        except (ApiError, OSError) as e:
            raise VolumeNotReady(f"token request for service account {sa}: {e}") from e
        token = str((answer.get("status") or {}).get("token", ""))
        if not token:
            raise VolumeNotReady(f"token request for service account {sa}: no token in the answer")
        if rt is not None:
            rt.tokens[cache_key] = (token, now, now + expiration)
        return token

    def log_path(self, ns: str, pod: str, container: str, previous: bool) -> str | None:
        rt = self.pods.get(f"{ns}/{pod}")
        if rt is None or container not in rt.containers:
            return None
        # "current" is the latest instance, running or not; "previous" the one before it.
        logs = rt.containers[container].logs
        index = -2 if previous else -1
        return logs[index] if len(logs) >= -index else None

    def log_alive(self, ns: str, pod: str, container: str) -> bool:
        rt = self.pods.get(f"{ns}/{pod}")
        return rt is not None and container in rt.containers and rt.containers[container].running()

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Runner:
        os.makedirs(os.path.join(self.state_dir, "pods"), exist_ok=True)
        for leftover in self.net.leftover_namespaces():
            log.warning("removing the leftover pod namespace %s", leftover)
            self.net.remove_own_stack(leftover, "")
        self._register_node()
        for inf in (self.config_maps, self.secrets, self.pods_informer):
            inf.start()
        for inf in (self.config_maps, self.secrets, self.pods_informer):
            inf.wait_for_sync(120)
        self.pods_informer.add_event_handler(
            on_add=lambda o: self.queue.add(_key(o)),
            on_update=lambda _o, n: self.queue.add(_key(n)),
            on_delete=lambda o: self.queue.add(_key(o)))
        for i in range(self.workers):
            t = threading.Thread(target=self._work, name=f"podrunner-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._periodic, name="podrunner-sync", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def _register_node(self) -> None:
        """What the kubelet reports about its node that the API server needs to reach it: the
        InternalIP and the kubelet port. The address list is replaced (a merge patch), leaving
        the InternalIP as the only address: the API server prefers a Hostname address, which
        nothing here could resolve, for its connections to the kubelet (pods/log)."""
        body = {"status": {"addresses": [{"type": "InternalIP", "address": self.node_ip}],
                           "daemonEndpoints": {"kubeletEndpoint": {"Port": self.kubelet_port}}}}
        try:
            self.api.patch(NODES, None, self.node_name, body, patch_type="merge", subresource="status")
        except ApiError as e:
            log.warning("could not update node %s status: %s", self.node_name, e)

    def stop(self, grace: float = 5.0) -> None:
        """Stop every pod (SIGTERM, SIGKILL after ``grace``), remove namespaces and addresses."""
        self._stop.set()
        self.queue.shut_down()
        for inf in (self.pods_informer, self.config_maps, self.secrets):
            inf.stop()
        with self._lock:
            runtimes = list(self.pods.values())
            self.pods.clear()
        threads = [threading.Thread(target=self._teardown, args=(rt, grace), daemon=True) for rt in runtimes]
        for t in threads:
            t.start()
        for t in threads:
            t.join(grace + 20)

    def _periodic(self) -> None:
        while not self._stop.wait(self.sync_period):
            for key in list(self.pods):
                self.queue.add(key)

    def _work(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown or key is None:
                return
            try:
                again = self.sync_pod(key)
                if again is not None and not self._stop.is_set():
                    self.queue.add_after(key, again)
            except Exception:  # noqa: BLE001 - one pod's failure must not stop the node
                log.exception("pod %s: sync failed", key)
                self.queue.add_after(key, 2.0)
            finally:
                self.queue.done(key)

    # -- one pod -------------------------------------------------------------------------------
    def sync_pod(self, key: str) -> float | None:
        """Bring pod ``key`` to its desired state; returns seconds after which to look again."""
        ns, _, name = key.partition("/")
        pod = self.pods_informer.get(ns, name)
        rt = self.pods.get(key)
        if pod is None:
            self.first_seen.pop(key, None)
            if rt is not None and not rt.terminating:
                self._forget(rt)
                self._teardown(rt, 0.0)
            return None
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        uid = meta.get("uid", "")
        if rt is not None and rt.uid != uid:
            self._forget(rt)
            self._teardown(rt, 0.0)
            rt = None
        node = spec.get("nodeName") or ""
        if not node:
            return self._maybe_bind(key, pod)
        self.first_seen.pop(key, None)
        if node != self.node_name:
            if rt is not None:
                self._forget(rt)
                self._teardown(rt, 0.0)
            return None
        if meta.get("deletionTimestamp"):
            self._begin_termination(key, pod, rt)
            return None
        phase = (pod.get("status") or {}).get("phase")
        if rt is None and phase in ("Succeeded", "Failed"):
            return None
        if rt is None:
            rt = self._admit(pod)
        if rt.terminating:
            return None
        if not self._ensure_network(rt, pod):
            self._write_status(rt, pod)
            return 5.0
        again = self._sync_volumes(rt, pod, self._sources_for(pod))
        for c in rt.containers.values():
            d = self._sync_container(rt, pod, c)
            if d is not None:
                again = d if again is None else min(again, d)
        self._write_status(rt, pod)
        return again

    def _maybe_bind(self, key: str, pod: Obj) -> float | None:
        now = time.monotonic()
        seen = self.first_seen.setdefault(key, now)
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            return None
        if now - seen < self.bind_after:
            return self.bind_after - (now - seen) + 0.05
        meta = pod["metadata"]
        try:
            self.api.bind(meta["namespace"], meta["name"], meta.get("uid", ""), self.node_name)
            log.info("pod %s: bound to %s (no scheduler did)", key, self.node_name)
        except ApiError as e:
            if e.status not in (404, 409):
                log.warning("pod %s: binding failed: %s", key, e)
                return 2.0
        return None

    def _admit(self, pod: Obj) -> PodRuntime:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        key = _key(pod)
        rt = PodRuntime(uid=meta.get("uid", ""), namespace=meta.get("namespace", ""), name=meta.get("name", ""),
                        dir=os.path.join(self.state_dir, "pods", meta.get("uid", "") or meta.get("name", "")))
        rt.start_time = rfc3339()
        for cspec in spec.get("containers") or []:
            c = ContainerRuntime(spec=cspec)
            try:
                c.image = self.images.find(str(cspec.get("image", "")))
            except ImageError as e:
                c.waiting_reason, c.waiting_message = "ErrImagePull", str(e)
            rt.containers[c.name] = c
        networks = {c.image.network for c in rt.containers.values() if c.image is not None}
        rt.network = "shared" if networks == {"shared"} else "own"
        if spec.get("initContainers"):
            for c in rt.containers.values():
                c.image = None
                c.waiting_reason = "PodInitializing"
                c.waiting_message = "init containers are not supported by the pod runner"
        os.makedirs(os.path.join(rt.dir, "volumes"), exist_ok=True)
        with self._lock:
            self.pods[key] = rt
        log.info("pod %s: admitted", key)
        return rt

    def _ensure_network(self, rt: PodRuntime, pod: Obj) -> bool:
        """The pod's sandbox: its address and, on the own stack, its namespace. A pod none of
        whose images can run gets none (it could never use them)."""
        if rt.ip:
            return True
        if not any(c.image is not None for c in rt.containers.values()):
            return False
        old_ip = (pod.get("status") or {}).get("podIP", "")
        try:
            rt.ip = old_ip if old_ip and self.pool.reserve(old_ip) else self.pool.allocate()
            if rt.network == "own":
                rt.netns, rt.veth = self.net.add_own_stack(rt.ip)
            else:
                self.net.add_local(rt.ip)
        except Exception as e:  # noqa: BLE001
            log.error("pod %s: network setup failed: %s", rt.key, e)
            if rt.ip:
                self.pool.release(rt.ip)
            rt.ip = ""
            for c in rt.containers.values():
                if c.image is not None:
                    c.waiting_reason, c.waiting_message = "ContainerCreating", f"pod sandbox: {e}"
            return False
        log.info("pod %s: IP %s (%s stack%s)", rt.key, rt.ip, rt.network, f", netns {rt.netns}" if rt.netns else "")
        return True

    def _sources_for(self, pod: Obj) -> Sources:
        """Where this sync reads ConfigMaps and Secrets: the watch caches, or (Cache) the API
        server, once per object for the whole sync (the kubelet's GET per object; a pod that
        mounts many, such as a data plane with its part ConfigMaps, has them listed once per
        kind in its namespace instead; an error falls back to the caches)."""
        if self.change_detection != "Cache":
            return self.sources
        ns = (pod.get("metadata") or {}).get("namespace", "")
        wanted: dict[str, set[str]] = {"configMap": set(), "secret": set()}
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            for src in [vol, *((vol.get("projected") or {}).get("sources") or [])]:
                for kind in wanted:
                    if kind in src:
                        wanted[kind].add(str(src[kind].get("secretName") or src[kind].get("name") or ""))
        fresh: dict[str, dict[str, Obj] | None] = {}
        for kind, res in (("configMap", CONFIG_MAPS), ("secret", SECRETS)):
            if not wanted[kind]:
                continue
            try:
                if len(wanted[kind]) > 4:
                    fresh[kind] = {o["metadata"]["name"]: o for o in self.api.list(res, ns).get("items") or []}
                    continue
                got: dict[str, Obj] = {}
                for name in wanted[kind]:
                    try:
                        got[name] = self.api.get(res, ns, name)
                    except ApiError as e:
                        if not e.is_not_found:
                            raise
                fresh[kind] = got
            except (ApiError, OSError) as e:
                log.warning("pod %s/%s: listing %s failed, using the cache: %s", ns,
                            (pod.get("metadata") or {}).get("name", ""), res.plural, e)

        def lookup(kind: str, cached: Callable[[str, str], Obj | None]) -> Callable[[str, str], Obj | None]:
            objs = fresh.get(kind)
            return cached if objs is None else (lambda namespace, name: objs.get(name) if namespace == ns
                                                 else cached(namespace, name))

        return Sources(lookup("configMap", self._config_map), lookup("secret", self._secret), self._token)

    def _sync_volumes(self, rt: PodRuntime, pod: Obj, sources: Sources | None = None) -> float | None:
        sources = sources or self.sources
        errors = []
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            name = vol.get("name", "")
            target = os.path.join(rt.dir, "volumes", name)
            if "hostPath" in vol:
                continue
            try:
                payload = payload_for_volume(pod, vol, sources)
            except VolumeNotReady as e:
                errors.append(f'MountVolume.SetUp failed for volume "{name}": {e}')
                continue
            if payload is None:
                os.makedirs(target, exist_ok=True)
                continue
            writer = rt.writers.setdefault(name, AtomicWriter(target))
            try:
                if writer.write(payload):
                    log.info("pod %s: volume %s updated", rt.key, name)
            except (OSError, ValueError) as e:
                errors.append(f'MountVolume.SetUp failed for volume "{name}": {e}')
        rt.volume_error = "; ".join(errors)
        return 2.0 if errors else None

    def _volume_paths(self, rt: PodRuntime, pod: Obj) -> dict[str, str]:
        out = {}
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            name = vol.get("name", "")
            out[name] = vol["hostPath"].get("path", "") if "hostPath" in vol else os.path.join(rt.dir, "volumes", name)
        return out

    def _mount_plan(self, rt: PodRuntime, pod: Obj, cspec: Obj) -> MountPlan:
        paths = self._volume_paths(rt, pod)
        mounts = []
        for vm in cspec.get("volumeMounts") or []:
            host = paths.get(vm.get("name", ""))
            if host is None:
                continue
            if vm.get("subPath"):
                host = os.path.join(host, vm["subPath"])
            mounts.append(Mount(vm.get("mountPath", ""), host, bool(vm.get("readOnly", False))))
        return MountPlan(mounts)

    def _sync_container(self, rt: PodRuntime, pod: Obj, c: ContainerRuntime) -> float | None:
        spec = pod.get("spec") or {}
        if c.running():
            if c.liveness is not None and not c.liveness.result:
                log.info("pod %s: container %s failed its liveness probe, restarting", rt.key, c.name)
                c.stop_probes()
                assert c.proc is not None
                c.proc.stop(float(spec.get("terminationGracePeriodSeconds", 30) or 0))
                return 0.05
            if not c.started:
                if self._listening(rt, c):
                    c.started = True
                    self._start_probes(rt, c)
                    log.info("pod %s: container %s started", rt.key, c.name)
                    return None
                return 0.2
            return None
        # Not running: never started, exited, or waiting.
        if c.image is None:
            return 5.0
        if c.proc is not None and c.proc.exit is not None:
            self._record_exit(rt, c)
            policy = spec.get("restartPolicy", "Always")
            if policy == "Never" or (policy == "OnFailure" and c.last_exit and c.last_exit.code == 0):
                return None
        if rt.volume_error:
            c.waiting_reason, c.waiting_message = "ContainerCreating", rt.volume_error
            return 2.0
        now = time.monotonic()
        if now < c.backoff_until:
            c.waiting_reason = "CrashLoopBackOff"
            c.waiting_message = (f"back-off {int(c.backoff)}s restarting failed container={c.name} "
                                 f"pod={rt.name}_{rt.namespace}({rt.uid})")
            return c.backoff_until - now
        return self._start_container(rt, pod, c)

    def _record_exit(self, rt: PodRuntime, c: ContainerRuntime) -> None:
        assert c.proc is not None and c.proc.exit is not None
        c.stop_probes()
        c.last_exit = c.proc.exit
        c.proc = None
        c.started = False
        ran = c.last_exit.finished - c.last_exit.started
        # The kubelet resets the back-off after a container ran 10 minutes without trouble.
        c.backoff = self.backoff_initial if c.backoff == 0 or ran > 600 else min(c.backoff * 2, BACKOFF_MAX)
        c.backoff_until = time.monotonic() + c.backoff
        log.info("pod %s: container %s exited with %s (restart in %.0fs)", rt.key, c.name, c.last_exit.code, c.backoff)

    def _start_container(self, rt: PodRuntime, pod: Obj, c: ContainerRuntime) -> float | None:
        assert c.image is not None
        plan = self._mount_plan(rt, pod, c.spec)
        restart = c.last_exit is not None
        try:
            # Only what the pod says is translated, never the image map's own program paths.
            translated = dict(c.spec)
            for k in ("command", "args"):
                if c.spec.get(k):
                    translated[k] = [plan.translate(str(a)) for a in c.spec[k]]
            argv = c.image.argv(translated)
            env = dict(BASE_ENV)
            env["HOSTNAME"] = rt.name
            env.update(c.image.env)
            env.update({k: plan.translate(v) for k, v in container_env(
                pod, c.spec, config_map=self._config_map, secret=self._secret,
                service_env=self.service_env).items()})
        except EnvNotReady as e:
            c.waiting_reason, c.waiting_message = "CreateContainerConfigError", str(e)
            return 2.0
        except ImageError as e:
            c.waiting_reason, c.waiting_message = "RunContainerError", str(e)
            return 10.0
        if rt.network == "shared":
            env["PODRUNNER_BIND_ADDRESS"] = rt.ip
        workdir = plan.translate(c.spec["workingDir"]) if c.spec.get("workingDir") else rt.dir
        if restart:
            c.restart_count += 1
        log_path = os.path.join(rt.dir, "logs", c.name, f"{c.restart_count}.log")
        key = rt.key
        c.proc = ContainerProcess(f"{key}/{c.name}", launch_argv(argv, rt.netns, plan), env, log_path,
                                  cwd=workdir, on_exit=lambda _e: self.queue.add(key))
        c.logs.append(log_path)
        try:
            c.proc.start()
        except OSError as e:
            c.proc = None
            c.waiting_reason, c.waiting_message = "RunContainerError", str(e)
            return 10.0
        c.waiting_reason, c.waiting_message = "", ""
        log.info("pod %s: container %s running (pid %s): %s", key, c.name, c.proc.pid, " ".join(argv))
        return 0.05

    def _listening(self, rt: PodRuntime, c: ContainerRuntime) -> bool:
        assert c.image is not None
        for port in c.image.listens:
            try:
                with socket.create_connection((rt.ip, port), timeout=0.5):
                    pass
            except OSError:
                return False
        return True

    def _start_probes(self, rt: PodRuntime, c: ContainerRuntime) -> None:
        key = rt.key

        def changed(_result: bool) -> None:
            self.queue.add(key)

        for kind, attr in (("readiness", "readinessProbe"), ("liveness", "livenessProbe"),
                           ("startup", "startupProbe")):
            spec = c.spec.get(attr)
            if not spec:
                continue
            probe = Probe(spec, c.spec, rt.ip, exec_fn=self._exec_fn(rt, c))
            setattr(c, kind, ProbeWorker(kind, probe, changed).start())

    def _exec_fn(self, rt: PodRuntime, c: ContainerRuntime) -> Callable[[list[str], float], int]:
        def run(command: list[str], timeout: float) -> int:
            import subprocess

            argv = launch_argv(command, rt.netns, None)
            return subprocess.run(argv, timeout=timeout, capture_output=True, check=False).returncode

        return run  # type: ignore[return-value]

    # -- status ----------------------------------------------------------------------------------
    def _transition(self, rt: PodRuntime, ctype: str, status: str) -> str:
        prev = rt.transitions.get(ctype)
        if prev is None or prev[0] != status:
            rt.transitions[ctype] = (status, rfc3339())
        return rt.transitions[ctype][1]

    def build_status(self, rt: PodRuntime, pod: Obj) -> Obj:
        old = pod.get("status") or {}
        statuses = []
        for cspec in (pod.get("spec") or {}).get("containers") or []:
            c = rt.containers[cspec.get("name", "")]
            st: Obj = {"name": c.name, "image": cspec.get("image", ""),
                       "imageID": f"podrunner://{cspec.get('image', '')}",
                       "ready": c.ready(), "started": bool(c.running() and c.started),
                       "restartCount": c.restart_count}
            if c.running():
                assert c.proc is not None
                st["containerID"] = f"podrunner://{rt.uid}/{c.name}/{c.restart_count}"
                st["state"] = {"running": {"startedAt": rfc3339(c.proc.started)}}
            elif c.last_exit is not None and (c.waiting_reason == "" or rt.terminating):
                st["state"] = {"terminated": _terminated(c.last_exit)}
            else:
                waiting: Obj = {"reason": c.waiting_reason or "ContainerCreating"}
                if c.waiting_message:
                    waiting["message"] = c.waiting_message
                st["state"] = {"waiting": waiting}
            restarted = c.last_exit is not None and "terminated" not in st["state"]
            st["lastState"] = {"terminated": _terminated(c.last_exit)} if restarted else {}
            statuses.append(st)
        containers = list(rt.containers.values())
        all_ready = bool(containers) and all(c.ready() for c in containers)
        ever_started = all(c.running() or c.last_exit is not None for c in containers)
        policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
        done = containers and all(not c.running() for c in containers) and all(c.last_exit is not None for c in containers)
        if done and policy == "Never":
            phase = "Succeeded" if all(c.last_exit and c.last_exit.code == 0 for c in containers) else "Failed"
        elif done and policy == "OnFailure" and all(c.last_exit and c.last_exit.code == 0 for c in containers):
            phase = "Succeeded"
        elif ever_started and containers:
            phase = "Running"
        else:
            phase = "Pending"
        sandbox = "True" if rt.ip else "False"
        ready = "True" if all_ready and phase == "Running" else "False"
        conds = [
            {"type": "PodReadyToStartContainers", "status": sandbox},
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": ready},
            {"type": "ContainersReady", "status": ready},
        ]
        for cond in conds:
            cond["lastProbeTime"] = None
            cond["lastTransitionTime"] = self._transition(rt, cond["type"], cond["status"])
            if cond["status"] == "False" and cond["type"] in ("Ready", "ContainersReady"):
                not_ready = sorted(c.name for c in containers if not c.ready())
                cond["reason"] = "ContainersNotReady"
                cond["message"] = f"containers with unready status: [{' '.join(not_ready)}]"
        others = [c for c in old.get("conditions") or [] if c.get("type") not in OWNED_CONDITIONS]
        if not any(c.get("type") == "PodScheduled" for c in others):
            others.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": rt.start_time})
        status: Obj = {
            "phase": phase,
            "conditions": others + conds,
            "hostIP": self.node_ip, "hostIPs": [{"ip": self.node_ip}],
            "startTime": old.get("startTime") or rt.start_time,
            "containerStatuses": statuses,
        }
        if rt.ip:
            status["podIP"], status["podIPs"] = rt.ip, [{"ip": rt.ip}]
        if old.get("qosClass"):
            status["qosClass"] = old["qosClass"]
        return status

    def _write_status(self, rt: PodRuntime, pod: Obj) -> None:
        status = self.build_status(rt, pod)
        if status == rt.last_status:
            return
        try:
            self.api.replace_status(PODS, rt.namespace, rt.name, status)
            rt.last_status = status
        except ApiError as e:
            if e.status != 404:
                log.warning("pod %s: status update failed: %s", rt.key, e)
            self.queue.add_after(rt.key, 1.0)

    # -- termination -----------------------------------------------------------------------------
    def _forget(self, rt: PodRuntime) -> None:
        with self._lock:
            if self.pods.get(rt.key) is rt:
                del self.pods[rt.key]

    def _begin_termination(self, key: str, pod: Obj, rt: PodRuntime | None) -> None:
        meta = pod["metadata"]
        if rt is not None and rt.terminating:
            return
        grace = float(meta.get("deletionGracePeriodSeconds",
                               (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)) or 0)
        if rt is not None:
            rt.terminating = True

        def finish() -> None:
            if rt is not None:
                self._teardown(rt, grace)
                self._forget(rt)
            try:
                self.api.delete_now(PODS, meta["namespace"], meta["name"], meta.get("uid"))
                log.info("pod %s: deleted", key)
            except ApiError as e:
                if e.status not in (404, 409):
                    log.warning("pod %s: final delete failed: %s", key, e)
                    self.queue.add_after(key, 2.0)

        threading.Thread(target=finish, name=f"terminate-{key}", daemon=True).start()

    @staticmethod
    def _stop_container(rt: PodRuntime, c: ContainerRuntime, proc: ContainerProcess, grace: float) -> None:
        """The kubelet's container kill: a preStop ``sleep`` hook first (only with a grace period,
        counted against it), then SIGTERM, then SIGKILL when the rest of the grace period (at
        least 2 s after a hook) has passed. ``exec``/``httpGet`` hooks are not run (logged)."""
        hook = ((c.spec.get("lifecycle") or {}).get("preStop")) or {}
        if hook and grace > 0 and c.running():
            if "sleep" in hook:
                slept = min(float((hook.get("sleep") or {}).get("seconds", 0) or 0), grace)
                log.info("pod %s: container %s: preStop sleep %.0f s", rt.key, c.spec.get("name"), slept)
                time.sleep(slept)
                grace = max(grace - slept, 2.0)
            else:
                log.warning("pod %s: container %s: preStop %s hooks are not supported here; not run",
                            rt.key, c.spec.get("name"), sorted(hook))
        proc.stop(grace)

    def _teardown(self, rt: PodRuntime, grace: float) -> None:
        rt.terminating = True
        stoppers = []
        for c in rt.containers.values():
            c.stop_probes()
            if c.proc is not None:
                t = threading.Thread(target=self._stop_container, args=(rt, c, c.proc, grace), daemon=True)
                t.start()
                stoppers.append(t)
        for t in stoppers:
            t.join(grace + 15)
        if rt.netns:
            self.net.remove_own_stack(rt.netns, rt.veth or "")
        elif rt.ip and rt.network == "shared":
            self.net.remove_local(rt.ip)
        if rt.ip:
            self.pool.release(rt.ip)
        with contextlib.suppress(OSError):
            shutil.rmtree(rt.dir)
        log.info("pod %s: stopped and cleaned up", rt.key)


def _terminated(e: Exit) -> Obj:
    out: Obj = {"exitCode": e.code, "reason": "Completed" if e.code == 0 else "Error",
                "startedAt": rfc3339(e.started), "finishedAt": rfc3339(e.finished)}
    if e.signal:
        out["signal"] = e.signal
    return out

