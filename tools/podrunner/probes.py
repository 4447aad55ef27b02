"""Container probes with the kubelet's semantics.

``Probe`` runs one check (httpGet: a status in [200, 400); tcpSocket: a connection; exec: exit
status 0) against the pod IP. ``ProbeWorker`` runs a probe every ``periodSeconds`` after
``initialDelaySeconds`` and flips its result after ``successThreshold`` successes or
``failureThreshold`` failures in a row, calling ``on_change(result)``. A readiness or startup
worker starts as failed, a liveness worker as succeeded (as the kubelet's prober does).
"""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import Any

Obj = dict[str, Any]
log = logging.getLogger(__name__)


def resolve_port(container: Obj, port: Any) -> int:
    """A probe's ``port``: a number, a numeric string or the name of a container port."""
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ValueError(f"container {container.get('name')!r} has no port named {port!r}")


class Probe:
    """One probe definition of a container, bound to the pod's IP."""

    def __init__(self, spec: Obj, container: Obj, pod_ip: str,
                 exec_fn: Callable[[Sequence[str], float], int] | None = None) -> None:
        self.spec = spec
        self.container = container
        self.pod_ip = pod_ip
        self.exec_fn = exec_fn
        self.timeout = float(spec.get("timeoutSeconds", 1) or 1)

    def check(self) -> tuple[bool, str]:
        """(success, message)."""
        try:
            if "httpGet" in self.spec:
                return self._http(self.spec["httpGet"])
            if "tcpSocket" in self.spec:
                ts = self.spec["tcpSocket"]
                host = ts.get("host") or self.pod_ip
                with socket.create_connection((host, resolve_port(self.container, ts.get("port"))), self.timeout):
                    return True, ""
            if "exec" in self.spec:
                if self.exec_fn is None:
                    return False, "exec probes are not available for this container"
                code = self.exec_fn(self.spec["exec"].get("command") or [], self.timeout)
                return code == 0, f"exit status {code}"
            return False, f"unsupported probe {sorted(self.spec)}"
        except (OSError, ValueError, http.client.HTTPException, subprocess.SubprocessError) as e:
            return False, str(e) or type(e).__name__

    def _http(self, hg: Obj) -> tuple[bool, str]:
        host = hg.get("host") or self.pod_ip
        port = resolve_port(self.container, hg.get("port"))
        conn: http.client.HTTPConnection
        if str(hg.get("scheme", "HTTP")).upper() == "HTTPS":
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE  # the kubelet does not verify probe certificates
            conn = http.client.HTTPSConnection(host, port, timeout=self.timeout, context=ctx)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
        try:
            headers = {"User-Agent": "kube-probe/1.36", "Accept": "*/*"}
            for h in hg.get("httpHeaders") or []:
                headers[h.get("name", "")] = h.get("value", "")
            conn.request("GET", hg.get("path") or "/", headers=headers)
            resp = conn.getresponse()
            resp.read(10 * 1024)
            return 200 <= resp.status < 400, f"HTTP probe failed with statuscode: {resp.status}"
        finally:
            conn.close()


class ProbeWorker:
    """Runs a ``Probe`` periodically in a thread (see module doc)."""

    def __init__(self, kind: str, probe: Probe, on_change: Callable[[bool], None],
                 wait: Callable[[float], bool] | None = None) -> None:
        self.kind = kind
        self.probe = probe
        spec = probe.spec
        self.initial_delay = float(spec.get("initialDelaySeconds", 0) or 0)
        self.period = float(spec.get("periodSeconds", 10) or 10)
        self.success_threshold = int(spec.get("successThreshold", 1) or 1)
        self.failure_threshold = int(spec.get("failureThreshold", 3) or 3)
        self.result = kind == "liveness"
        self.last_message = ""
        self.on_change = on_change
        self._stop = threading.Event()
        self._wait = wait or self._stop.wait
        self._thread: threading.Thread | None = None
        self._successes = 0
        self._failures = 0

    def step(self) -> None:
        """One probe and its effect on the result (the thread calls this every period)."""
        ok, message = self.probe.check()
        self.last_message = "" if ok else message
        if ok:
            self._failures = 0
            self._successes += 1
            if not self.result and self._successes >= self.success_threshold:
                self.result = True
                self.on_change(True)
        else:
            self._successes = 0
            self._failures += 1
            if self.result and self._failures >= self.failure_threshold:
                self.result = False
                self.on_change(False)

    def _run(self) -> None:
        if self._wait(self.initial_delay):
            return
        while not self._stop.is_set():
            try:
                self.step()
            except Exception:  # noqa: BLE001 - a probe bug must not end the worker
                log.exception("%s probe failed unexpectedly", self.kind)
            if self._wait(self.period):
                return

    def start(self) -> ProbeWorker:
        self._thread = threading.Thread(target=self._run, name=f"probe-{self.kind}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
