"""The cluster tier: the controller against a REAL control plane (hack/kube: kube-apiserver
with etcd, kube-controller-manager, kube-scheduler), the chart installed by real Helm.

- One cluster for the whole tier (session fixture ``kube``) in ``.cache/kube/test`` (or
  ``$TITANIUM_CLUSTER_TEST_DIR``); a cluster already running there is used and left running
  (start one with ``hack/kube/up.sh .cache/kube/test`` to iterate fast).
- Per test: a release of its own (``helm install`` into a namespace of its own, with its own
  GatewayClass/IngressClass and controller names), the stub kubelet running its data-plane
  pods, and the controller as local processes under the chart's ServiceAccount.
- Every test runs with its thread inside the cluster's network namespace.
- A 403 answered to the controller's ServiceAccount fails the test (the audit log is read).

``TITANIUM_CLUSTER_TESTS=require`` (CI): the tier must run; a missing toolchain or a failed
build is an error, not a skip. ``=skip``: skipped. Unset: run when the toolchain is present.

Adding a test file: take the ``env`` fixture (``ClusterEnv``): ``env.start_controller()``,
``env.apply(obj)``, ``env.wait_for(...)``, ``env.gateway()``/``env.route()``; see
test_quickstart.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.chartrelease import ChartRelease, ControllerProcess
from tests.support.kubeapi import KubeApi, KubeApiError
from tests.support.kubecluster import REPO, LocalCluster, describe, toolchain_problem
from tests.support.kubelet import StubKubelet

MODE = os.environ.get("TITANIUM_CLUSTER_TESTS", "").strip().lower()
REQUIRED = MODE in ("require", "required", "1", "true", "yes")
DISABLED = MODE in ("skip", "0", "false", "no")
CLUSTER_DIR = Path(os.environ.get("TITANIUM_CLUSTER_TEST_DIR") or REPO / ".cache" / "kube" / "test")
HERE = Path(__file__).resolve().parent
GW = "gateway.networking.k8s.io/v1"

_build_error: list[str] = []


def _is_cluster_item(item: pytest.Item) -> bool:
    return HERE in Path(str(item.fspath)).resolve().parents


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tier ``cluster`` and run it after everything else (one cluster, set up once)."""
    mine = [i for i in items if _is_cluster_item(i)]
    for i in mine:
        i.add_marker(pytest.mark.cluster)
    others = [i for i in items if not _is_cluster_item(i)]
    items[:] = others + mine


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the control plane before the tests start (outside any test's timeout): seconds
    when built, about ten minutes the first time."""
    if DISABLED or session.config.option.collectonly:
        return
    if not any(_is_cluster_item(i) for i in session.items):
        return
    if toolchain_problem() is not None:
        return
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line("cluster tier: hack/kube/build.sh (the first build takes about 10 minutes)")
    try:
        out = LocalCluster.build()
        if tr is not None and out.strip():
            tr.write_line(out.strip().splitlines()[-1])
    except RuntimeError as e:
        _build_error.append(str(e))


def _unavailable(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"cluster tier REQUIRED (TITANIUM_CLUSTER_TESTS={MODE}) but {why}", pytrace=False)
    pytest.skip(f"cluster tier: {why}")


@dataclass
class KubeSession:
    cluster: LocalCluster
    helm: str
    names: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    ports: Iterator[int] = field(default_factory=lambda: itertools.count(18100))
    lb_ips: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def next_name(self, prefix: str = "tg") -> str:
        return f"{prefix}{os.getpid() % 1000}-{next(self.names)}"

    def next_lb_ip(self) -> str:
        return f"198.18.250.{1 + (next(self.lb_ips) - 1) % 254}"


@pytest.fixture(scope="session")
def kube() -> Iterator[KubeSession]:
    if DISABLED:
        pytest.skip("cluster tier: TITANIUM_CLUSTER_TESTS=skip")
    problem = toolchain_problem()
    if problem is not None:
        _unavailable(problem)
    if _build_error:
        pytest.fail(f"cluster tier: {_build_error[0]}", pytrace=False)
    helm = subprocess.run([str(REPO / "hack/helm.sh"), "--print-path"], capture_output=True, text=True)
    if helm.returncode != 0:
        _unavailable(f"no helm (hack/helm.sh: {helm.stderr.strip()[-300:]})")
    # one tier run per cluster directory at a time (a second run would stop the first's cluster)
    CLUSTER_DIR.parent.mkdir(parents=True, exist_ok=True)
    lock = open(f"{CLUSTER_DIR}.lock", "w")  # noqa: SIM115 - held for the session
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"cluster tier: waiting for another run using {CLUSTER_DIR}", flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        try:
            cluster = LocalCluster.start(CLUSTER_DIR)
        except RuntimeError as e:
            pytest.fail(f"cluster tier: {e}", pytrace=False)
        try:
            yield KubeSession(cluster, helm.stdout.strip())
        finally:
            if cluster.started_here and not os.environ.get("TITANIUM_CLUSTER_KEEP"):
                cluster.stop()
    finally:
        lock.close()


@pytest.fixture(autouse=True)
def _inside_cluster(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every cluster test's thread in the cluster's network namespace."""
    session: KubeSession = request.getfixturevalue("kube")
    with session.cluster.inside():
        yield


# ---------------------------------------------------------------------------- waits


def wait_for(cond: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2, what: str = "") -> Any:
    """Poll ``cond`` until it returns something truthy (returned) or ``timeout`` s pass.
    API errors while polling count as "not yet"."""
    end = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = cond()
        except KubeApiError as e:
            last = e
        else:
            if last:
                return last
        if time.monotonic() >= end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or cond}: last={last!r}")
        time.sleep(interval)


def condition(obj: dict[str, Any] | None, ctype: str) -> dict[str, Any] | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


# ---------------------------------------------------------------------------- per test


@dataclass
class ClusterEnv:
    kube: KubeSession
    release: ChartRelease
    kubelet: StubKubelet
    apps: str  # the test's application namespace
    lb_ip: str
    audit_mark: int
    expect_alive: set[str] = field(default_factory=set)

    @property
    def cluster(self) -> LocalCluster:
        return self.kube.cluster

    @property
    def api(self) -> KubeApi:
        return self.kube.cluster.api

    @property
    def ns(self) -> str:
        """The release's namespace (the data plane, its ConfigMaps, the Lease)."""
        return self.release.namespace

    wait_for = staticmethod(wait_for)
    condition = staticmethod(condition)

    # --- the controller ---------------------------------------------------------------------
    def start_controller(self, identity: str = "ctrl-a", *, wait_ready: bool = True, **kw: Any) -> ControllerProcess:
        p = self.release.start_controller(identity, health_port=next(self.kube.ports), **kw)
        self.expect_alive.add(identity)
        if wait_ready:
            wait_for(lambda: p.ready() or not p.alive(), 120, 0.5, f"controller {identity} /readyz")
            assert p.alive(), f"controller {identity} exited {p.proc.returncode if p.proc else ''}:\n{p.log()[-3000:]}"
        return p

    def controller_user(self) -> str:
        return self.release.service_account_user

    def forbidden(self) -> list[dict[str, Any]]:
        return self.cluster.audit.forbidden(self.audit_mark, user=self.controller_user())

    def controller_writes(self, since: int, resource: str | None = None) -> list[dict[str, Any]]:
        return self.cluster.audit.writes(since, user=self.controller_user(), resource=resource)

    # --- objects -----------------------------------------------------------------------------
    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.api.put_object(obj)

    def get(self, kind: str, ns: str | None, name: str) -> dict[str, Any] | None:
        return self.api.get_object(kind, ns, name)

    def gateway(self, name: str = "web", listeners: list[dict[str, Any]] | None = None,
                ns: str | None = None) -> dict[str, Any]:
        return self.apply({"apiVersion": GW, "kind": "Gateway", "metadata": {"name": name, "namespace": ns or self.apps},
                           "spec": {"gatewayClassName": self.release.rel.gateway_class, "listeners": listeners or [
                               {"name": "http", "port": 80, "protocol": "HTTP",
                                "allowedRoutes": {"namespaces": {"from": "Same"}}}]}})

    def route(self, name: str = "shop", host: str = "shop.example.com", backend: str = "api",
              path: str = "/api", gateway: str = "web", ns: str | None = None) -> dict[str, Any]:
        return self.apply({"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": name, "namespace": ns or self.apps},
                           "spec": {"parentRefs": [{"name": gateway}], "hostnames": [host],
                                    "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": path}}],
                                               "backendRefs": [{"name": backend, "port": 8080}]}]}})

    def service(self, name: str = "api", ips: tuple[str, ...] = ("10.0.0.1",), ns: str | None = None) -> None:
        """A backend Service and a hand-made EndpointSlice for it (no pods behind it)."""
        ns = ns or self.apps
        self.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                    "spec": {"ports": [{"name": "http", "port": 8080, "targetPort": 8080}]}})
        self.apply({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"name": f"{name}-1", "namespace": ns, "labels": {"kubernetes.io/service-name": name}},
                    "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                    "endpoints": [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips]})

    def namespace(self, name: str) -> str:
        with contextlib.suppress(KubeApiError):
            self.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        self._extra_namespaces.append(name)
        return name

    _extra_namespaces: list[str] = field(default_factory=list)

    def set_load_balancer(self, ip: str | None = None) -> str:
        """The data-plane Service's load-balancer address (what a cloud controller would write)."""
        ip = ip or self.lb_ip
        self.api.patch("Service", self.ns, self.release.rel.data_plane,
                       {"status": {"loadBalancer": {"ingress": [{"ip": ip}]}}}, subresource="status")
        return ip

    # --- what the controller wrote -----------------------------------------------------------
    def root_config(self) -> str:
        cm = self.get("ConfigMap", self.ns, self.release.rel.config_map) or {}
        return str((cm.get("data") or {}).get("twp.yaml", ""))

    def route_hosts(self) -> set[str]:
        import yaml

        doc = yaml.safe_load(self.root_config() or "{}") or {}
        routes = list(doc.get("routes") or [])
        for inc in doc.get("include") or []:
            n = inc["file"].split("-")[1].split(".")[0]
            cm = self.get("ConfigMap", self.ns, f"{self.release.rel.config_map}-part-{n}") or {}
            part = yaml.safe_load((cm.get("data") or {}).get(inc["file"], "") or "{}") or {}
            routes += part.get("routes") or []
        return {(r.get("match") or {}).get("host") for r in routes} - {None}

    def wait_condition(self, kind: str, name: str, ctype: str, status: str = "True", ns: str | None = None,
                       timeout: float = 90) -> dict[str, Any]:
        ns = ns if kind != "GatewayClass" else None
        return wait_for(lambda: (c := condition(self.get(kind, ns, name), ctype)) and c.get("status") == status and c,
                        timeout, what=f"{kind} {ns}/{name} {ctype}={status}")

    def data_plane_pods(self, n: int = 2, timeout: float = 120) -> list[Any]:
        """Wait until ``n`` data-plane pods run (the stub kubelet) and return them."""
        return wait_for(lambda: len(p := self.kubelet.running()) == n and p, timeout,
                        what=f"{n} data-plane pods running ({self.kubelet.errors[-3:]})")


@pytest.fixture
def env(kube: KubeSession, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ClusterEnv]:
    cluster = kube.cluster
    name = kube.next_name()
    mark = cluster.audit.mark()
    release = ChartRelease.install(cluster, kube.helm, name, workdir=tmp_path / "release",
                                   values=getattr(request, "param", None))
    kubelet = StubKubelet(cluster, release.namespace, release.data_plane_selector, token=release.rel.token,
                          config_map=release.rel.config_map, mounted_parts=release.rel.parts).start()
    apps = f"{name}-apps"
    cluster.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": apps}})
    e = ClusterEnv(kube, release, kubelet, apps, kube.next_lb_ip(), mark)
    try:
        yield e
    finally:
        dead = [p for p in release.processes if p.identity in e.expect_alive and not p.alive()]
        forbidden = e.forbidden()
        rep = getattr(request.node, "rep_call", None)
        if rep is not None and rep.failed:
            for p in release.processes:  # shown under "Captured stdout teardown"
                print(f"===== controller {p.identity} log (last 6000 chars) =====\n{p.log()[-6000:]}")
            print(f"===== stub kubelet errors: {kubelet.errors[-10:]}")
        logs = {p.identity: p.log() for p in release.processes}
        release.uninstall()
        kubelet.stop()
        for ns in [apps, *e._extra_namespaces]:
            with contextlib.suppress(KubeApiError):
                cluster.api.delete("Namespace", None, ns)
        assert not forbidden, "the API server answered 403 to the controller:\n" + "\n".join(
            describe(ev) for ev in forbidden[:20])
        assert not dead, "controller(s) exited: " + "; ".join(
            f"{p.identity} (exit {p.proc.returncode if p.proc else '?'}):\n{logs[p.identity][-3000:]}" for p in dead)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.rep_call = rep  # type: ignore[attr-defined]
    if REQUIRED and rep.skipped and not hasattr(rep, "wasxfail") and _is_cluster_item(item):
        # required means run: a skipped cluster test is a failure
        rep.outcome = "failed"
        rep.longrepr = f"cluster tier REQUIRED (TITANIUM_CLUSTER_TESTS={MODE}) but skipped: {rep.longrepr}"
