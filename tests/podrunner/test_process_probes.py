"""Container processes (logs, stop), the mount plan, probes and the kubelet log API."""

from __future__ import annotations

import http.server
import signal
import ssl
import sys
import threading
import time
import urllib.request

import pytest

from tools.podrunner.kubeletapi import KubeletApiServer
from tools.podrunner.probes import Probe, ProbeWorker, resolve_port
from tools.podrunner.process import ContainerProcess, Mount, MountPlan, launch_argv, read_log


def wait_for(cond, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    raise AssertionError("timed out")


def test_mount_plan_translates_and_mounts_only_under_run():
    plan = MountPlan([Mount("/etc/titanium", "/state/v/config", True), Mount("/etc/titanium/sub", "/state/v/sub"),
                      Mount("/var/run/secrets/kubernetes.io/serviceaccount", "/state/v/sa", True),
                      Mount("/root", "/state/v/conf")])
    assert plan.translate("/etc/titanium/twp.yaml") == "/state/v/config/twp.yaml"
    assert plan.translate("/etc/titanium/sub/x") == "/state/v/sub/x"   # the longest mountPath wins
    assert plan.translate("/etc/titaniumx") == "/etc/titaniumx"
    assert plan.translate("/root/Corefile") == "/state/v/conf/Corefile"
    script = plan.script()
    assert script.splitlines() == [
        "mount -t tmpfs -o mode=0755,size=16m podrunner-run /run",
        "mkdir -p /var/run/secrets/kubernetes.io/serviceaccount",
        "mount --bind /state/v/sa /var/run/secrets/kubernetes.io/serviceaccount",
        "mount -o remount,bind,ro /var/run/secrets/kubernetes.io/serviceaccount"]
    argv = launch_argv(["prog", "a b"], "tgp-x-1", plan)
    assert argv[:4] == ["ip", "netns", "exec", "tgp-x-1"]
    assert argv[4:9] == ["unshare", "--mount", "--propagation", "private", "--"]
    assert argv[-2:] == ["prog", "a b"]
    assert launch_argv(["prog"], None, MountPlan([Mount("/etc/x", "/s")])) == ["prog"]


def test_container_logs_in_cri_format_and_exit(tmp_path):
    exits = []
    code = "import sys; print('one'); print('two', flush=True); sys.stdout.write('partial'); sys.exit(3)"
    p = ContainerProcess("t", [sys.executable, "-c", code], {}, str(tmp_path / "logs" / "0.log"), on_exit=exits.append)
    p.start()
    wait_for(lambda: exits)
    assert exits[0].code == 3 and exits[0].signal is None
    raw = (tmp_path / "logs" / "0.log").read_bytes().splitlines()
    assert raw[0].split(b" ", 3)[1:] == [b"stdout", b"F", b"one"]
    assert raw[2].split(b" ", 3)[2:] == [b"P", b"partial"]
    assert read_log(str(tmp_path / "logs" / "0.log")) == b"one\ntwo\npartial\n"
    assert read_log(str(tmp_path / "logs" / "0.log"), tail_lines=1) == b"partial\n"
    assert read_log(str(tmp_path / "logs" / "0.log"), timestamps=True).split(b"\n")[0].endswith(b"Z one")
    assert read_log(str(tmp_path / "logs" / "0.log"), limit_bytes=5) == b"one\nt"


def test_stop_escalates_to_sigkill(tmp_path):
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
    p = ContainerProcess("t", [sys.executable, "-c", code], {}, str(tmp_path / "0.log"))
    p.start()
    wait_for(lambda: b"up" in read_log(str(tmp_path / "0.log")))
    t0 = time.monotonic()
    e = p.stop(0.5)
    assert e is not None and e.signal == signal.SIGKILL and e.code == 128 + 9
    assert time.monotonic() - t0 < 5


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        code = 200 if self.path == "/ok" else 503
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def http_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_probe_kinds(http_server):
    port = http_server.server_address[1]
    container = {"name": "c", "ports": [{"name": "admin", "containerPort": port}]}
    assert resolve_port(container, "admin") == port and resolve_port(container, "81") == 81
    assert Probe({"httpGet": {"path": "/ok", "port": "admin"}}, container, "127.0.0.1").check()[0]
    ok, msg = Probe({"httpGet": {"path": "/readyz", "port": port}}, container, "127.0.0.1").check()
    assert not ok and "503" in msg
    assert Probe({"tcpSocket": {"port": port}}, container, "127.0.0.1").check()[0]
    assert not Probe({"tcpSocket": {"port": 1}}, container, "127.0.0.1").check()[0]
    assert Probe({"exec": {"command": ["true"]}}, container, "127.0.0.1", exec_fn=lambda c, t: 0).check()[0]
    assert not Probe({"grpc": {"port": 1}}, container, "127.0.0.1").check()[0]


class _Scripted:
    def __init__(self, results):
        self.results = list(results)
        self.spec = {"successThreshold": 2, "failureThreshold": 2}

    def check(self):
        return self.results.pop(0), "scripted"


def test_probe_worker_thresholds():
    changes = []
    w = ProbeWorker("readiness", _Scripted([True, False, True, True, False, True, False, False]), changes.append)
    assert w.result is False
    for _ in range(8):
        w.step()
    # ready after two successes in a row, unready after two failures in a row
    assert changes == [True, False]
    live = ProbeWorker("liveness", _Scripted([False, False]), changes.append)
    assert live.result is True
    live.step()
    assert live.result is True
    live.step()
    assert live.result is False


def test_kubelet_log_api(tmp_path):
    log = tmp_path / "0.log"
    log.write_bytes(b"2026-01-01T00:00:00.000000000Z stdout F Echoing back request made to /mirror to client\n")

    def lookup(ns, pod, container, previous):
        return str(log) if (ns, pod, container) == ("infra", "echo-1", "echo") else None

    srv = KubeletApiServer(("127.0.0.1", 0), "node-0", lookup, lambda *a: False).start()
    try:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        base = f"https://127.0.0.1:{srv.server_address[1]}"
        body = urllib.request.urlopen(f"{base}/containerLogs/infra/echo-1/echo?tailLines=10", context=ctx).read()
        assert body == b"Echoing back request made to /mirror to client\n"
        follow = urllib.request.urlopen(f"{base}/containerLogs/infra/echo-1/echo?follow=true", context=ctx).read()
        assert follow == body
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{base}/containerLogs/infra/echo-2/echo", context=ctx)
        assert e.value.code == 404
        assert urllib.request.urlopen(f"{base}/healthz", context=ctx).read() == b"ok"
    finally:
        srv.stop()
