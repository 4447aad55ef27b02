"""Integration harness: the REAL controller (``controller.main.run``) against the FakeApiServer,
through the real ``kubernetes`` client (``RestApi``), with StubDataPlane pods following the
ConfigMap the controller writes. Everything on loopback; every wait is a poll with a timeout.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from tests.support.apiserver import FakeApiServer
from tests.support.dataplane import DataPlaneFleet
from tests.support.release import Release, seed_release
from titanium_gateway.controller.main import POOL_SIZE, Runtime, run
from titanium_gateway.controller.options import ControllerOptions, LeaseTimings, parse_options
from titanium_gateway.controller.reconciler import Controller
from titanium_gateway.kube.reflector import Backoff
from titanium_gateway.kube.rest import RestApi
from titanium_gateway.metrics import Registry

GW = "gateway.networking.k8s.io/v1"
LISTENERS = "gateway.titaniumproxy.com/listeners"
FAST_LEASE = LeaseTimings(lease_duration=2.0, renew_deadline=1.5, retry_period=0.25)


def wait_for(cond: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05, what: str = "") -> Any:
    end = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < end:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or cond}: last={last!r}")


def condition(obj: dict[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


@dataclass
class Instance:
    opts: ControllerOptions
    api: RestApi
    stop: threading.Event
    runtime: Runtime
    thread: threading.Thread
    registry: Registry
    exit_code: list[int] = field(default_factory=list)

    def shutdown(self, timeout: float = 10.0) -> int | None:
        self.stop.set()
        self.thread.join(timeout)
        self.api.close()
        return self.exit_code[0] if self.exit_code else None

    @property
    def ctrl(self) -> Controller:
        assert self.runtime.controller is not None
        return self.runtime.controller

    def metric(self, name: str, /, **labels: str) -> float:
        return self.registry.value(name, **labels)

    def reconcile_again(self, times: int = 3) -> None:
        """Trigger ``times`` more reconciles, each waited for (5 s at most)."""
        ctrl = self.ctrl
        for _ in range(times):
            n = ctrl.reconciles
            ctrl.trigger.trigger()
            wait_for(lambda: ctrl.reconciles > n, timeout=5, what="a triggered reconcile")  # noqa: B023 - called at once

    @property
    def health_port(self) -> int:
        assert self.runtime.health is not None
        return self.runtime.health.port

    def crash_elector(self) -> None:
        """Stop renewing WITHOUT releasing the Lease (as a killed process would)."""
        el = self.runtime.elector
        assert el is not None
        setattr(el, "release", lambda: False)  # noqa: B010
        el.stop()

    @property
    def is_leader(self) -> bool:
        el = self.runtime.elector
        return el.is_leader() if el is not None else True


class Rollout:
    """Stands in for the Deployment controller: when the data-plane Deployment's pod template
    carries a listener stamp a pod lacks, that pod is replaced by one created from the new
    template (here: its annotation is updated; the stub keeps its address and name). ``hold()``
    pauses it (a rollout still running), ``release()`` lets it finish."""

    def __init__(self, server: FakeApiServer, namespace: str, deployment: str, pods: list[str],
                 interval: float = 0.05) -> None:
        self.server, self.namespace, self.deployment, self.pods = server, namespace, deployment, pods
        self.interval = interval
        self._held = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="stub-rollout", daemon=True)
        self._thread.start()

    def hold(self) -> None:
        self._held.set()

    def release(self) -> None:
        self._held.clear()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            if self._held.is_set():
                continue
            try:
                dep = self.server.get_object("Deployment", self.namespace, self.deployment) or {}
                stamp = ((((dep.get("spec") or {}).get("template") or {}).get("metadata") or {})
                         .get("annotations") or {}).get(LISTENERS)
                if stamp is None:
                    continue
                for name in self.pods:
                    pod = self.server.get_object("Pod", self.namespace, name)
                    if pod is not None and (pod["metadata"].get("annotations") or {}).get(LISTENERS) != stamp:
                        self.server.update_object("Pod", self.namespace, name, lambda p, v=stamp: p["metadata"]
                                                  .setdefault("annotations", {}).__setitem__(LISTENERS, v))
            except Exception:  # keep rolling whatever a test does to the server
                continue


@dataclass
class Env:
    server: FakeApiServer
    rel: Release
    fleet: DataPlaneFleet
    instances: list[Instance] = field(default_factory=list)
    rollout: Rollout | None = None

    def start_controller(self, *extra: str, identity: str = "ctrl-a", lease: LeaseTimings | None = FAST_LEASE,
                         probe_interval: float = 0.5, min_reconcile_ms: int = 100, qps: float = 500,
                         burst: int = 1000, stop: threading.Event | None = None, configuration: Any = None,
                         **ckw: Any) -> Instance:
        """Run ``controller.main.run`` in a thread (``stop``: its stop event, a fresh one by default;
        ``configuration``: the client configuration, by default the server's, which must run)."""
        args = [*self.rel.controller_args(), f"--admin-port={self.fleet.port}", f"--identity={identity}",
                f"--min-reconcile-ms={min_reconcile_ms}", "--health-port=0", *extra]
        env = {"TITANIUM_ADMIN_TOKEN": self.rel.token}
        opts = parse_options(args, env)
        changes: dict[str, Any] = {"probe_interval": probe_interval, "kube_api_qps": qps, "kube_api_burst": burst}
        if lease is not None:
            changes["lease"] = lease
        opts = _replace(opts, **changes)
        cfg = configuration or self.server.client_configuration()
        cfg.connection_pool_maxsize = POOL_SIZE
        reg = Registry()
        api = RestApi(cfg, qps=opts.kube_api_qps, burst=opts.kube_api_burst,
                      request_timeout=10, watch_read_margin=5, registry=reg)
        rt = Runtime()
        stop = stop or threading.Event()
        codes: list[int] = []
        kwargs = {"watch_timeout": 30, "reflector_backoff": lambda: Backoff(0.05, 2.0, 1.0),
                  "retry_backoff": (0.1, 2.0)}
        kwargs.update(ckw)
        failure: list[BaseException] = []

        def target() -> None:
            try:
                codes.append(run(opts, api, stop, registry=reg, runtime=rt, controller_kwargs=kwargs))
            except BaseException as e:  # surfaced below instead of a silent dead thread
                failure.append(e)
                raise

        t = threading.Thread(target=target, name=f"controller-{identity}", daemon=True)
        t.start()
        inst = Instance(opts, api, stop, rt, t, reg, codes)
        self.instances.append(inst)
        wait_for(lambda: rt.started.is_set() or failure, timeout=10, what="controller start")
        if failure:
            raise AssertionError(f"controller {identity} failed to start: {failure[0]!r}") from failure[0]
        return inst

    # --- objects ---------------------------------------------------------------------------
    def gateway(self, name: str = "web", ns: str = "apps", listeners: list[dict[str, Any]] | None = None) -> None:
        self.ensure_ns(ns)
        self.server.put_object({"apiVersion": GW, "kind": "Gateway", "metadata": {"name": name, "namespace": ns},
                                "spec": {"gatewayClassName": self.rel.gateway_class, "listeners": listeners or [
                                    {"name": "http", "port": 80, "protocol": "HTTP",
                                     "allowedRoutes": {"namespaces": {"from": "Same"}}}]}})

    def route(self, name: str = "shop", ns: str = "apps", host: str = "shop.example.com",
              backend: str = "api", path: str = "/api", gateway: str = "web") -> None:
        self.server.put_object({"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": name, "namespace": ns},
                                "spec": {"parentRefs": [{"name": gateway}], "hostnames": [host],
                                         "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": path}}],
                                                    "backendRefs": [{"name": backend, "port": 8080}]}]}})

    def service(self, name: str = "api", ns: str = "apps", ips: tuple[str, ...] = ("10.0.0.1",)) -> None:
        self.ensure_ns(ns)
        self.server.put_object({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                                "spec": {"ports": [{"name": "http", "port": 8080, "targetPort": 8080}],
                                         "selector": {"app": name}}})
        self.server.put_object({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{name}-1", "namespace": ns, "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips]})

    def ensure_ns(self, ns: str) -> None:
        if self.server.get_object("Namespace", None, ns) is None:
            self.server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def get(self, kind: str, ns: str | None, name: str) -> dict[str, Any] | None:
        return self.server.get_object(kind, ns, name)

    def must(self, kind: str, ns: str | None, name: str) -> dict[str, Any]:
        obj = self.get(kind, ns, name)
        assert obj is not None, f"{kind} {ns}/{name} does not exist"
        return obj

    def root_config(self) -> str:
        cm = self.get("ConfigMap", self.rel.namespace, self.rel.config_map) or {}
        return str((cm.get("data") or {}).get("twp.yaml", ""))

    def route_hosts(self) -> set[str]:
        """Route hosts in the written config: the root ConfigMap and the parts it includes."""
        doc = yaml.safe_load(self.root_config() or "{}") or {}
        routes = list(doc.get("routes") or [])
        for inc in doc.get("include") or []:
            n = inc["file"].split("-")[1].split(".")[0]
            cm = self.get("ConfigMap", self.rel.namespace, f"{self.rel.config_map}-part-{n}") or {}
            part = yaml.safe_load((cm.get("data") or {}).get(inc["file"], "") or "{}") or {}
            routes += part.get("routes") or []
        return {(r.get("match") or {}).get("host") for r in routes} - {None}

    def wait_programmed(self, name: str = "web", ns: str = "apps", status: str = "True",
                        timeout: float = 20.0) -> dict[str, Any]:
        return wait_for(lambda: (c := condition(self.get("Gateway", ns, name), "Programmed"))
                        and c.get("status") == status and c, timeout, what=f"Gateway {ns}/{name} Programmed={status}")

    def writes(self, resource: str | None = None) -> list[Any]:
        return [r for r in self.server.requests() if r.method in ("POST", "PUT", "PATCH", "DELETE")
                and (resource is None or r.resource == resource)]


def _replace(opts: ControllerOptions, **changes: Any) -> ControllerOptions:
    import dataclasses

    return dataclasses.replace(opts, **changes)


@pytest.fixture
def env() -> Iterator[Env]:
    with cluster_env() as e:
        yield e


@contextlib.contextmanager
def cluster_env(crds: list[dict[str, Any]] | None = None) -> Iterator[Env]:
    """An API server (serving ``crds``, default the chart's Gateway API CRDs) with a release
    seeded and a data-plane fleet following it."""
    server = FakeApiServer(bookmark_interval=0.5, crds=crds).start()
    rel = Release()
    seed_release(server, rel)
    fleet = DataPlaneFleet.start(2, token=rel.token, service=rel.data_plane)
    fleet.register(server, rel.namespace, rel.data_plane, deployment=rel.data_plane)
    fleet.follow(server, rel.namespace, rel.config_map)
    with running(server, rel, fleet) as e:
        yield e


@contextlib.contextmanager
def running(server: FakeApiServer, rel: Release, fleet: DataPlaneFleet) -> Iterator[Env]:
    """An Env of this server, release and data-plane fleet (with its rollout), and on the way out
    every controller instance, the rollout, the fleet and the server stopped."""
    e = Env(server, rel, fleet, rollout=Rollout(server, rel.namespace, rel.data_plane, [s.name for s in fleet]))
    try:
        yield e
    finally:
        for inst in e.instances:
            inst.shutdown(5)
        assert e.rollout is not None
        e.rollout.stop()
        fleet.stop()
        server.stop()


def make_tls_secret(name: str, ns: str, cn: str = "shop.example.com") -> dict[str, Any]:
    """A kubernetes.io/tls Secret with a fresh self-signed EC certificate for ``cn``."""
    import base64
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
            .sign(key, hashes.SHA256()))
    crt = cert.public_bytes(serialization.Encoding.PEM)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": name, "namespace": ns},
            "data": {"tls.crt": base64.b64encode(crt).decode(), "tls.key": base64.b64encode(pem).decode()}}
