"""The node agent end to end against the fake API server, with shared-stack pods on loopback
addresses (127.0.0.100+): status, env, volumes and their refresh, restarts, deletion."""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import sys
import time
import urllib.request

import pytest

from tests.support.apiserver import FakeApiServer
from tools.podrunner.images import ImageMap
from tools.podrunner.kube import RunnerApi
from tools.podrunner.network import AddressPool
from tools.podrunner.runner import Runner

PROGRAM = os.path.join(os.path.dirname(__file__), "program.py")


class FakeNetwork:
    def __init__(self):
        self.local: list[str] = []
        self.calls: list[tuple[str, str]] = []

    def leftover_namespaces(self):
        return []

    def add_local(self, addr):
        self.calls.append(("add", addr))
        self.local.append(addr)

    def remove_local(self, addr):
        self.calls.append(("remove", addr))
        self.local.remove(addr)

    def add_own_stack(self, ip):  # pragma: no cover - the test uses the shared stack
        raise AssertionError("own stack not expected")

    def remove_own_stack(self, netns, veth):  # pragma: no cover
        raise AssertionError("own stack not expected")


def wait_for(cond, timeout=20.0, what=""):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = cond()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}: {last!r}")


def get(url):
    """The body, or None when nothing answers whole (no listener, or the process went mid-answer)."""
    try:
        return urllib.request.urlopen(url, timeout=2).read()
    except (OSError, http.client.HTTPException):
        return None


def pod_manifest():
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "apps", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-0", "restartPolicy": "Always", "terminationGracePeriodSeconds": 2,
                     "containers": [{
                         "name": "web", "image": "test/program:1", "args": ["--file", "/etc/cfg/twp.yaml"],
                         "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                 {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "token"}}}],
                         "ports": [{"name": "http", "containerPort": 8080}],
                         "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1},
                         "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True}]}],
                     "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]}}


@pytest.fixture
def cluster(tmp_path):
    with FakeApiServer(bookmark_interval=0.5) as server:
        server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
        server.put_object({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "apps"},
                           "data": {"twp.yaml": "v1"}})
        server.put_object({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tok", "namespace": "apps"},
                           "data": {"token": base64.b64encode(b"s3cret").decode()}})
        images = ImageMap.from_dict({"images": [{"match": "test/program:*", "entrypoint": ["prog"],
                                                 "path": {"prog": [sys.executable, PROGRAM]},
                                                 "network": "shared", "listens": [8080]}]})
        net = FakeNetwork()
        runner = Runner(RunnerApi(server.client_configuration()), node_name="node-0", node_ip="127.0.0.1",
                        images=images, network=net, pod_pool=AddressPool("127.0.0.100", "127.0.0.110"),
                        state_dir=str(tmp_path / "state"), sync_period=3600, backoff_initial=0.2).start()
        try:
            yield server, runner, net
        finally:
            runner.stop(grace=2)


def status_of(server):
    pod = server.get_object("Pod", "apps", "web-1")
    return (pod or {}).get("status") or {}


def ready(server):
    st = status_of(server)
    return any(c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions") or [])


def test_pod_lifecycle(cluster, tmp_path):
    server, runner, net = cluster
    server.put_object(pod_manifest())
    wait_for(lambda: ready(server), what="Ready")
    st = status_of(server)
    assert st["phase"] == "Running" and st["podIP"] == "127.0.0.100" and st["podIPs"] == [{"ip": "127.0.0.100"}]
    assert st["hostIP"] == "127.0.0.1"
    [cs] = st["containerStatuses"]
    assert cs["ready"] and cs["started"] and cs["restartCount"] == 0 and "running" in cs["state"]
    assert net.local == ["127.0.0.100"]
    env = json.loads(get("http://127.0.0.100:8080/env"))
    assert env["POD_NAME"] == "web-1" and env["TOKEN"] == "s3cret" and env["HOSTNAME"] == "web-1"
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and env["KUBERNETES_SERVICE_PORT"] == "6443"
    assert env["PODRUNNER_BIND_ADDRESS"] == "127.0.0.100"
    assert get("http://127.0.0.100:8080/file") == b"v1"

    # A ConfigMap change alone is not projected (no periodic sync within the test) ...
    server.update_object("ConfigMap", "apps", "cfg", lambda cm: cm["data"].update({"twp.yaml": "v2"}))
    time.sleep(1.0)
    assert get("http://127.0.0.100:8080/file") == b"v1"
    # ... a change of the pod (the controller's config-poke annotation) projects it at once.
    server.update_object("Pod", "apps", "web-1", lambda p: p["metadata"].setdefault("annotations", {}).update(
        {"gateway.titaniumproxy.com/config-poke": "1"}))
    wait_for(lambda: get("http://127.0.0.100:8080/file") == b"v2", what="v2 projected")

    # The container dies: it is restarted (restartPolicy Always) and becomes ready again.
    pid = runner.pods["apps/web-1"].containers["web"].proc.pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: status_of(server)["containerStatuses"][0]["restartCount"] == 1 and ready(server),
             what="restarted and ready")
    cs = status_of(server)["containerStatuses"][0]
    assert cs["lastState"]["terminated"]["exitCode"] == 137
    assert runner.log_path("apps", "web-1", "web", True).endswith("/0.log")
    assert runner.log_path("apps", "web-1", "web", False).endswith("/1.log")

    # Deleted: the process goes, the address is released.
    server.delete_object("Pod", "apps", "web-1")
    wait_for(lambda: get("http://127.0.0.100:8080/healthz") is None, what="process stopped")
    wait_for(lambda: net.local == [], what="address removed")
    assert runner.pool.in_use() == []


def test_missing_secret_keeps_the_container_waiting(cluster):
    server, runner, net = cluster
    server.delete_object("Secret", "apps", "tok")
    # The runner's Secret cache hears of the delete by watch: a pod seen first would start.
    wait_for(lambda: runner.secrets.get("apps", "tok") is None, what="the runner's cache without the Secret")
    server.put_object(pod_manifest())
    wait_for(lambda: (status_of(server).get("containerStatuses") or [{}])[0].get("state", {}).get("waiting", {})
             .get("reason") == "CreateContainerConfigError", what="CreateContainerConfigError")
    assert not ready(server) and status_of(server)["phase"] == "Pending"
    server.put_object({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tok", "namespace": "apps"},
                       "data": {"token": base64.b64encode(b"later").decode()}})
    wait_for(lambda: ready(server), what="Ready once the Secret exists")


def test_unknown_image_is_reported(cluster):
    server, runner, net = cluster
    pod = pod_manifest()
    pod["spec"]["containers"][0]["image"] = "docker.io/library/nginx:1"
    server.put_object(pod)
    wait_for(lambda: (status_of(server).get("containerStatuses") or [{}])[0].get("state", {}).get("waiting", {})
             .get("reason") == "ErrImagePull", what="ErrImagePull")
    msg = status_of(server)["containerStatuses"][0]["state"]["waiting"]["message"]
    assert "no program for image 'docker.io/library/nginx:1'" in msg


class _Proc:
    def __init__(self) -> None:
        self.stopped: list[tuple[float, float]] = []  # (when, grace)

    def running(self) -> bool:
        return not self.stopped

    def stop(self, grace: float) -> None:
        self.stopped.append((time.monotonic(), grace))


def _stop(spec: dict, grace: float) -> tuple[float, list[tuple[float, float]]]:
    from tools.podrunner.runner import ContainerRuntime, PodRuntime

    proc = _Proc()
    c = ContainerRuntime(spec=spec, proc=proc)  # type: ignore[arg-type]
    rt = PodRuntime(uid="u", namespace="ns", name="p", dir="/nonexistent")
    t0 = time.monotonic()
    Runner._stop_container(rt, c, proc, grace)  # type: ignore[arg-type]
    return t0, proc.stopped


def test_prestop_sleep_runs_before_sigterm_within_the_grace_period():
    spec = {"name": "c", "lifecycle": {"preStop": {"sleep": {"seconds": 1}}}}
    t0, stopped = _stop(spec, 30)
    assert len(stopped) == 1 and stopped[0][0] - t0 >= 1.0 and stopped[0][1] == 29
    # a hook longer than the grace period is cut short; SIGKILL comes 2 s after it at the least
    t0, stopped = _stop({"name": "c", "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}, 0.5)
    assert 0.5 <= stopped[0][0] - t0 < 2 and stopped[0][1] == 2.0
    # no grace period (a forced delete): no hook, as the kubelet does
    t0, stopped = _stop(spec, 0)
    assert stopped[0][0] - t0 < 0.5 and stopped[0][1] == 0


def test_cache_change_detection_reads_what_a_pod_references_from_the_api(cluster, tmp_path):
    server, started, net = cluster

    def runner(change_detection):
        r = Runner(RunnerApi(server.client_configuration()), node_name="node-0", node_ip="127.0.0.1",
                   images=started.images, network=net, pod_pool=AddressPool("127.0.0.111", "127.0.0.112"),
                   state_dir=str(tmp_path / change_detection), change_detection=change_detection)
        # what a watch cache that lags behind the pod event holds
        r.config_maps.get = lambda ns, name: {"metadata": {"name": name, "namespace": ns},
                                              "data": {"twp.yaml": "stale"}}
        return r

    pod = pod_manifest()
    assert runner("Watch")._sources_for(pod).config_map("apps", "cfg")["data"]["twp.yaml"] == "stale"
    fresh = runner("Cache")._sources_for(pod)
    assert fresh.config_map("apps", "cfg")["data"]["twp.yaml"] == "v1"
    assert fresh.config_map("apps", "absent") is None
    assert fresh.config_map("other", "cfg")["data"]["twp.yaml"] == "stale"  # only the pod's namespace is read
    # a pod that mounts many (a data plane and its optional parts): listed once, same answers
    many = pod_manifest()
    many["spec"]["volumes"] = [{"name": "cfg", "projected": {"sources": [
        {"configMap": {"name": "cfg"}}, *({"configMap": {"name": f"cfg-part-{n}", "optional": True}} for n in range(1, 6))]}}]
    listed = runner("Cache")._sources_for(many)
    assert listed.config_map("apps", "cfg")["data"]["twp.yaml"] == "v1" and listed.config_map("apps", "cfg-part-1") is None
    with pytest.raises(ValueError):
        runner("Get")
