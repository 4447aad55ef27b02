"""The chart installed with real Helm on the local cluster, and the controller run from this
checkout as the chart's ServiceAccount (``tests/cluster``, ``hack/kube/dev.sh``).

``ChartRelease.install(cluster, helm, name)`` runs ``helm install`` of charts/titanium-gateway
(CRDs from the chart, every object it pre-creates) with names of its own (release, namespace,
GatewayClass, IngressClass, controller names: ``name``), the chart's controller Deployment
scaled to 0: the controller runs as a local process instead, ``ControllerProcess``, with the
environment the chart gives its container (read from the installed Deployment: the same
flags, the admin token from the Secret) and a kubeconfig holding a TokenRequest token of the
chart's ServiceAccount, so every request it makes is authorized by the chart's RBAC.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.support.kubecluster import REPO, LocalCluster
from tests.support.release import Release

__all__ = ["ChartRelease", "ControllerProcess", "CHART"]

CHART = REPO / "charts" / "titanium-gateway"
# Helm's own state in the repository's cache, as hack/helm.sh keeps it.
HELM_ENV = {f"HELM_{k}_HOME": str(REPO / ".cache" / "helm" / "home" / k.lower()) for k in ("CACHE", "CONFIG", "DATA")}


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@dataclass
class ChartRelease:
    cluster: LocalCluster
    helm: str
    rel: Release
    values: dict[str, Any]
    workdir: Path
    processes: list[ControllerProcess] = field(default_factory=list)
    helm_release: str = ""  # the Helm release's name (default: rel.name)

    # ------------------------------------------------------------------ install

    @classmethod
    def values_for(cls, name: str, *, parts: int = 8, data_plane_replicas: int = 2) -> dict[str, Any]:
        return {
            "fullnameOverride": name,
            "gatewayClass": {"name": name},
            "ingressClass": {"name": name},
            "controller": {"replicas": 0, "controllerName": f"titaniumproxy.com/{name}",
                           "ingressControllerName": f"titanium.io/{name}"},
            # the tier's stub kubelet runs the shared data plane's pods; a test of the data planes
            # of Gateways asks for dataPlane.mode=perGateway (and runs its pods itself)
            "dataPlane": {"replicas": data_plane_replicas, "configParts": parts, "mode": "shared"},
        }

    @classmethod
    def install(cls, cluster: LocalCluster, helm: str, name: str, *, namespace: str | None = None,
                values: dict[str, Any] | None = None, workdir: str | os.PathLike[str] | None = None,
                timeout: float = 180, extra_args: list[str] | None = None) -> ChartRelease:
        """``helm install NAME charts/titanium-gateway`` into NAMESPACE (default NAME), created
        (``extra_args``: more ``helm install`` arguments, e.g. ``--skip-crds``)."""
        namespace = namespace or name
        vals = _deep_merge(cls.values_for(name), values or {})
        wd = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"release-{name}-"))
        wd.mkdir(parents=True, exist_ok=True)
        (wd / "values.yaml").write_text(yaml.safe_dump(vals))
        cluster.run(helm, "install", name, str(CHART), "--namespace", namespace, "--create-namespace",
                    "--values", str(wd / "values.yaml"), "--timeout", f"{int(timeout)}s", *(extra_args or []),
                    timeout=timeout + 30,
                    env=HELM_ENV)
        rel = Release(namespace=namespace, name=name, parts=int(vals["dataPlane"]["configParts"]),
                      controller_name=vals["controller"]["controllerName"],
                      ingress_controller_name=vals["controller"]["ingressControllerName"],
                      gateway_class=vals["gatewayClass"]["name"], ingress_class=vals["ingressClass"]["name"])
        out = cls(cluster, helm, rel, vals, wd)
        rel.token = out.admin_token()
        return out

    @classmethod
    def attach(cls, cluster: LocalCluster, helm: str, name: str, namespace: str, *,
               workdir: str | os.PathLike[str] | None = None) -> ChartRelease:
        """A release installed earlier (``helm get values --all``)."""
        import json

        out = cluster.run(helm, "get", "values", name, "--namespace", namespace, "--all", "--output", "json",
                          env=HELM_ENV).stdout
        vals = json.loads(out)
        fullname = vals.get("fullnameOverride") or (name if "titanium-gateway" in name else f"{name}-titanium-gateway")
        rel = Release(namespace=namespace, name=fullname, parts=int(vals["dataPlane"]["configParts"]),
                      controller_name=vals["controller"]["controllerName"],
                      ingress_controller_name=vals["controller"]["ingressControllerName"],
                      gateway_class=vals["gatewayClass"]["name"], ingress_class=vals["ingressClass"]["name"])
        wd = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"release-{name}-"))
        wd.mkdir(parents=True, exist_ok=True)
        out_rel = cls(cluster, helm, rel, vals, wd)
        out_rel.helm_release = name
        rel.token = out_rel.admin_token()
        return out_rel

    def uninstall(self, *, wait_namespace: bool = False) -> None:
        """Stop the controllers, ``helm uninstall``, then delete the namespace. Pods of the
        namespace are removed at once (no kubelet confirms their deletion otherwise)."""
        for p in self.processes:
            p.stop()
        with self.cluster.inside():
            api = self.cluster.api
            self.cluster.run(self.helm, "uninstall", self.helm_release or self.rel.name, "--namespace", self.rel.namespace,
                             "--timeout", "120s", check=False, timeout=150, env=HELM_ENV)
            for pod in api.list("Pod", self.rel.namespace):
                api.delete("Pod", self.rel.namespace, pod["metadata"]["name"], grace_period=0)
            api.delete("Namespace", None, self.rel.namespace)
            if wait_namespace:
                end = time.monotonic() + 120
                while api.get_object("Namespace", None, self.rel.namespace) is not None and time.monotonic() < end:
                    time.sleep(0.5)

    # ------------------------------------------------------------------ names and reads

    @property
    def namespace(self) -> str:
        return self.rel.namespace

    @property
    def service_account_user(self) -> str:
        ns, name = self.rel.service_account.split(":")
        return f"system:serviceaccount:{ns}:{name}"

    @property
    def data_plane_selector(self) -> dict[str, str]:
        with self.cluster.inside():
            dep = self.cluster.api.get("Deployment", self.namespace, self.rel.data_plane)
        return dict(dep["spec"]["selector"]["matchLabels"])

    def admin_token(self) -> str:
        with self.cluster.inside():
            sec = self.cluster.api.get("Secret", self.namespace, self.rel.admin_token_secret)
        return base64.b64decode(sec["data"]["token"]).decode()

    def controller_env(self, identity: str) -> dict[str, str]:
        """The environment the chart gives the controller container, for pod ``identity``."""
        with self.cluster.inside():
            api = self.cluster.api
            dep = api.get("Deployment", self.namespace, f"{self.rel.name}-controller")
            container = dep["spec"]["template"]["spec"]["containers"][0]
            env: dict[str, str] = {}
            for e in container.get("env") or []:
                if "value" in e:
                    env[e["name"]] = str(e["value"])
                    continue
                src = e.get("valueFrom") or {}
                if "fieldRef" in src:
                    path = src["fieldRef"]["fieldPath"]
                    env[e["name"]] = {"metadata.namespace": self.namespace, "metadata.name": identity}[path]
                elif "secretKeyRef" in src:
                    ref = src["secretKeyRef"]
                    sec = api.get("Secret", self.namespace, ref["name"])
                    env[e["name"]] = base64.b64decode(sec["data"][ref["key"]]).decode()
                else:
                    raise AssertionError(f"unsupported env source in the chart: {e}")
        command = container.get("command") or []
        assert command[:2] == ["titanium-gateway", "controller"], command
        if "TITANIUM_GATEWAY_DATA_PLANE_TEMPLATE" in env:
            # what the chart mounts in the pod (the data-plane template ConfigMap) as a local file
            with self.cluster.inside():
                cm = self.cluster.api.get("ConfigMap", self.namespace, f"{self.rel.name}-data-plane-template")
            path = self.workdir / "data-plane.yaml"
            path.write_text(cm["data"]["data-plane.yaml"])
            env["TITANIUM_GATEWAY_DATA_PLANE_TEMPLATE"] = str(path)
        return env

    # ------------------------------------------------------------------ controllers

    def start_controller(self, identity: str, *, health_port: int, env: dict[str, str] | None = None,
                         args: list[str] | None = None, server: str | None = None, log_path: Path | None = None,
                         detach: bool = False, token_seconds: int = 7200) -> ControllerProcess:
        """The controller as the chart's ServiceAccount, in a process of its own inside the
        cluster's network (``server``: reach the API server at another address, e.g. a relay)."""
        sa_ns, sa_name = self.rel.service_account.split(":")
        kubeconfig = self.cluster.service_account_kubeconfig(
            sa_ns, sa_name, self.workdir / f"{identity}.kubeconfig", server=server, seconds=token_seconds)
        proc_env = dict(os.environ)
        for k in list(proc_env):
            if k.startswith("TITANIUM_GATEWAY_") or k in ("KUBECONFIG", "POD_NAME", "POD_NAMESPACE"):
                del proc_env[k]
        proc_env.update(self.controller_env(identity))
        proc_env["TITANIUM_GATEWAY_HEALTH_PORT"] = str(health_port)  # one host network for every replica
        proc_env["PYTHONPATH"] = str(REPO) + (os.pathsep + proc_env["PYTHONPATH"] if proc_env.get("PYTHONPATH") else "")
        proc_env.update(env or {})
        p = ControllerProcess(self.cluster, identity, kubeconfig, proc_env, health_port, args or [],
                              log_path or self.workdir / f"{identity}.log")
        p.start(detach=detach)
        self.processes.append(p)
        return p


class ControllerProcess:
    """``python -m titanium_gateway controller --kubeconfig ...`` in the cluster's network."""

    def __init__(self, cluster: LocalCluster, identity: str, kubeconfig: Path, env: dict[str, str],
                 health_port: int, args: list[str], log_path: Path) -> None:
        self.cluster, self.identity, self.kubeconfig, self.env = cluster, identity, kubeconfig, env
        self.health_port, self.args, self.log_path = health_port, args, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self._http = requests.Session()
        self._http.trust_env = False

    def start(self, *, detach: bool = False) -> None:
        """``detach``: in a session of its own, to outlive the caller (make dev)."""
        cmd = [sys.executable, "-m", "titanium_gateway", "controller", "--kubeconfig", str(self.kubeconfig),
               *self.args]
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child holds it
        with self.cluster.inside():
            self.proc = subprocess.Popen(cmd, env=self.env, cwd=str(REPO), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=detach)
        log.close()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, no Lease release."""
        if self.alive():
            self.signal(signal.SIGKILL)
            assert self.proc is not None
            self.proc.wait(30)

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM and wait (SIGKILL after ``timeout``); the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _get(self, path: str) -> requests.Response | None:
        try:
            with self.cluster.inside():
                return self._http.get(f"http://127.0.0.1:{self.health_port}{path}", timeout=5)
        except requests.RequestException:
            return None

    def ready(self) -> bool:
        r = self._get("/readyz")
        return r is not None and r.status_code == 200

    def metrics(self) -> dict[str, float]:
        """``name{labels}`` -> value from /metrics ({} when it does not answer)."""
        r = self._get("/metrics")
        out: dict[str, float] = {}
        if r is None or r.status_code != 200:
            return out
        for line in r.text.splitlines():
            if line and not line.startswith("#"):
                key, _, val = line.rpartition(" ")
                try:
                    out[key] = float(val)
                except ValueError:
                    continue
        return out

    def metric(self, name: str, **labels: str) -> float:
        """The sum of a metric's samples whose labels include ``labels``."""
        total = 0.0
        for key, v in self.metrics().items():
            base, _, rest = key.partition("{")
            if base != name:
                continue
            if all(f'{k}="{val}"' in rest for k, val in labels.items()):
                total += v
        return total

    def is_leader(self) -> bool:
        return self.metric("leader_election_master_status") >= 1
