"""The local control plane of ``hack/kube`` for test tiers (``tests/cluster``).

``LocalCluster.start(dir)`` builds the control plane when needed (``hack/kube/build.sh``), starts
a cluster in ``dir`` (``hack/kube/up.sh``) or reuses the one running there, and ``stop()``
stops it again when it was started here. The cluster lives in a network namespace of its own
(docs/development.md, "Network layout"); ``inside()`` moves the CALLING THREAD into it for a
block (threads and processes started in the block stay there), which is how the tests, the
controller processes and the stub data-plane pods reach the API server and each other::

    cluster = LocalCluster.start(".cache/kube/test")
    with cluster.inside():
        print(cluster.api.version()["gitVersion"])
        cluster.kubectl("get", "ns")
    cluster.stop()

Also: ``compact_etcd()`` (every older resourceVersion expires), ``audit`` (the API server's
audit log: who did what, with which answer), ``service_account_kubeconfig()`` (a TokenRequest
token for a ServiceAccount), ``ips`` (pod addresses on the namespace's ``lo``).
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.kubeapi import KubeApi

__all__ = ["REPO", "KUBE_BIN", "LocalCluster", "AuditLog", "IpPool", "toolchain_problem", "netns"]

REPO = Path(__file__).resolve().parents[2]
KUBE_BIN = REPO / ".cache" / "kube" / "bin"
KUBE = KUBE_BIN / "kube"
NODE_IP = "198.18.0.1"
NODE_NAME = "titanium-node-0"

_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def toolchain_problem() -> str | None:
    """Why the local control plane cannot run here (None: it can)."""
    if not sys.platform.startswith("linux"):
        return "the local control plane needs Linux (network namespaces)"
    if os.geteuid() != 0:
        return "the local control plane needs root (it runs in a network namespace of its own)"
    if shutil.which("ip") is None:
        return "the local control plane needs iproute2 (`ip`)"
    if not KUBE.exists() and shutil.which("go") is None:
        return ("no Go toolchain on PATH and no built control plane in .cache/kube/bin "
                "(install Go and run hack/kube/build.sh)")
    return None


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def netns(name: str) -> Iterator[None]:
    """The calling thread in network namespace ``name`` (``/run/netns/<name>``) for the block."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/run/netns/{name}", os.O_RDONLY)
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class AuditLog:
    """The API server's audit log (JSON lines, one per request at Metadata level; the policy is
    hack/kube/audit-policy.yaml). ``mark()`` is a position; reads return the events after one."""

    path: Path
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def mark(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def events(self, since: int = 0, *, user: str | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        with self._lock:
            try:
                with open(self.path, "rb") as f:
                    f.seek(since)
                    data = f.read()
            except FileNotFoundError:
                return out
        for line in data.splitlines():
            if not line.endswith(b"}"):
                continue  # a line still being written
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if user is None or (ev.get("user") or {}).get("username") == user:
                out.append(ev)
        return out

    def forbidden(self, since: int = 0, *, user: str | None = None) -> list[dict[str, Any]]:
        """The 403 answers (a dry run left out: the controller's start check of its admission
        policy expects one, controller/admission.py)."""
        return [e for e in self.events(since, user=user) if (e.get("responseStatus") or {}).get("code") == 403
                and "dryRun=All" not in str(e.get("requestURI") or "")]

    def writes(self, since: int = 0, *, user: str | None = None, resource: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events(since, user=user)
                if e.get("verb") in ("create", "update", "patch", "delete", "deletecollection")
                and e.get("stage") == "ResponseComplete"
                and "dryRun=All" not in str(e.get("requestURI") or "")  # (writes nothing)
                and (resource is None or describe_resource(e) == resource)]


def describe_resource(ev: dict[str, Any]) -> str:
    """``resource`` or ``resource/subresource`` of an audit event."""
    ref = ev.get("objectRef") or {}
    return ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")


def describe(ev: dict[str, Any]) -> str:
    ref = ev.get("objectRef") or {}
    code = (ev.get("responseStatus") or {}).get("code")
    where = "/".join(x for x in (ref.get("namespace"), ref.get("name")) if x)
    return f"{ev.get('verb')} {describe_resource(ev)} {where} -> {code}"


class IpPool:
    """Pod addresses 198.18.1.1 - 198.18.239.254 of the cluster, each put on the cluster
    namespace's ``lo`` as a /32 while in use (pods sharing the namespace's stack)."""

    def __init__(self, netns_name: str, first: int = 1) -> None:
        self.netns = netns_name
        self._next = (first - 1) * 254  # index into the host range
        self._free: list[str] = []
        self._lock = threading.Lock()

    def _address(self, i: int) -> str:
        return f"198.18.{1 + i // 254}.{1 + i % 254}"

    def allocate(self) -> str:
        with self._lock:
            if self._free:
                ip = self._free.pop(0)
            else:
                if self._next >= 239 * 254:
                    raise RuntimeError("the pod address range is exhausted")
                ip = self._address(self._next)
                self._next += 1
        subprocess.run(["ip", "-n", self.netns, "addr", "replace", f"{ip}/32", "dev", "lo"], check=True,
                       capture_output=True)
        return ip

    def release(self, ip: str) -> None:
        subprocess.run(["ip", "-n", self.netns, "addr", "del", f"{ip}/32", "dev", "lo"], check=False,
                       capture_output=True)
        with self._lock:
            self._free.append(ip)


class LocalCluster:
    """One cluster of hack/kube (see module docstring)."""

    def __init__(self, directory: str | os.PathLike[str], *, started_here: bool = False) -> None:
        self.dir = Path(os.path.abspath(directory))
        env = self._read_env()
        self.netns: str = env["TITANIUM_KUBE_NETNS"]
        self.server: str = env["TITANIUM_KUBE_SERVER"]
        self.version: str = env.get("TITANIUM_KUBE_VERSION", "")
        self.started_here = started_here
        self.admin_kubeconfig = self.dir / "admin.kubeconfig"
        self.ca_file = self.dir / "pki" / "ca.crt"
        self.audit = AuditLog(self.dir / "logs" / "audit.log")
        self.ips = IpPool(self.netns)
        self._api: KubeApi | None = None

    def _read_env(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in (self.dir / "cluster.env").read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                out[k] = v
        return out

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def build(cls) -> str:
        """hack/kube/build.sh (seconds when nothing changed); its output, or RuntimeError."""
        p = subprocess.run([str(REPO / "hack/kube/build.sh")], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"hack/kube/build.sh failed (exit {p.returncode}):\n{_tail(p.stdout + p.stderr)}")
        return p.stderr

    @classmethod
    def start(cls, directory: str | os.PathLike[str]) -> LocalCluster:
        """Build if needed and start a cluster in ``directory`` (or reuse the one running there)."""
        cls.build()
        p = subprocess.run([str(REPO / "hack/kube/up.sh"), str(directory)], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"hack/kube/up.sh failed (exit {p.returncode}):\n{_tail(p.stdout + p.stderr)}")
        return cls(directory, started_here="already running" not in p.stderr)

    def stop(self) -> None:
        if self._api is not None:
            self._api.close()
            self._api = None
        p = subprocess.run([str(REPO / "hack/kube/down.sh"), str(self.dir)], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"hack/kube/down.sh failed (exit {p.returncode}):\n{_tail(p.stdout + p.stderr)}")

    def restart(self, component: str = "kube-apiserver") -> None:
        """hack/kube/restart.sh: the component stopped and started again (for the API server:
        every connection breaks, its watch cache starts afresh; back when /readyz answers)."""
        p = subprocess.run([str(REPO / "hack/kube/restart.sh"), component, str(self.dir)], capture_output=True,
                           text=True, timeout=400)
        if p.returncode != 0:
            raise RuntimeError(f"hack/kube/restart.sh failed (exit {p.returncode}):\n{_tail(p.stdout + p.stderr)}")

    def inside(self) -> contextlib.AbstractContextManager[None]:
        """The calling thread in the cluster's network namespace for the block."""
        return netns(self.netns)

    # ------------------------------------------------------------------ access

    @property
    def api(self) -> KubeApi:
        """An admin client (system:masters). Use it from inside()."""
        if self._api is None:
            self._api = KubeApi.from_kubeconfig(self.admin_kubeconfig)
        return self._api

    def admin_api(self) -> KubeApi:
        """A new admin client of its own (for a thread of its own)."""
        return KubeApi.from_kubeconfig(self.admin_kubeconfig)

    def env(self) -> dict[str, str]:
        """The environment of hack/kube/exec.sh: KUBECONFIG, the cluster's kubectl first on PATH,
        and a discovery cache of its own."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.admin_kubeconfig)
        env["TITANIUM_KUBE_DIR"] = str(self.dir)
        env["PATH"] = f"{KUBE_BIN}{os.pathsep}{env.get('PATH', '')}"
        env["KUBECACHEDIR"] = str(self.dir / "kubectl-cache")  # every cluster serves at one address
        return env

    def run(self, *cmd: str, input: str | None = None, check: bool = True, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """A command inside the cluster's network with the admin kubeconfig (as hack/kube/exec.sh)."""
        with self.inside():
            p = subprocess.run(list(cmd), input=input, capture_output=True, text=True, timeout=timeout,
                               env={**self.env(), **(env or {})})
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed (exit {p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(str(KUBE_BIN / "kubectl"), *args, input=input, check=check)

    def compact_etcd(self) -> int:
        """Compact etcd to its current revision (older resourceVersions are gone); the revision."""
        return int(self.run(str(KUBE), "etcd-compact").stdout.strip())

    def service_account_kubeconfig(self, namespace: str, name: str, path: str | os.PathLike[str], *,
                                   seconds: int = 7200, server: str | None = None) -> Path:
        """A kubeconfig for ServiceAccount ``namespace/name`` with a token from the TokenRequest
        API (``server``: another address for the API server, e.g. a relay)."""
        with self.inside():
            token = self.api.token_request(namespace, name, seconds=seconds)
        cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "sa",
               "clusters": [{"name": "local", "cluster": {
                   "server": server or self.server,
                   "certificate-authority-data": base64.b64encode(self.ca_file.read_bytes()).decode()}}],
               "users": [{"name": f"system:serviceaccount:{namespace}:{name}", "user": {"token": token}}],
               "contexts": [{"name": "sa", "context": {"cluster": "local",
                                                       "user": f"system:serviceaccount:{namespace}:{name}"}}]}
        out = Path(path)
        out.write_text(yaml.safe_dump(cfg))
        out.chmod(0o600)
        return out

    def log(self, component: str) -> Path:
        return self.dir / "logs" / f"{component}.log"
