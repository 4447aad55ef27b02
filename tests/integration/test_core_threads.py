"""The process outlives an API outage, and notices the death of any thread it depends on.

Started while the API server is unreachable, the leader elector retries (with back-off) for as
long as the process lives: when the server is back a replica takes the Lease and writes. A core
thread that dies (leader elector, reconcile worker, status worker, a reflector) is logged as JSON
with its traceback, turns ``/healthz`` 503 and makes the process exit 1.
"""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from tests.integration.conftest import Env, Instance, wait_for
from titanium_gateway.controller.logging import setup_logging
from titanium_gateway.kube.leaderelection import LeaderElector


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """The process's JSON log lines (the handler ``main`` installs), captured."""
    buf = io.StringIO()
    handler = setup_logging(stream=buf)
    try:
        yield buf
    finally:
        logging.getLogger().removeHandler(handler)


def lines(buf: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in buf.getvalue().splitlines() if x.strip()]


def healthz(inst: Instance) -> tuple[int, str]:
    r = requests.get(f"http://127.0.0.1:{inst.health_port}/healthz", timeout=5)
    return r.status_code, r.text


def lease_holder(env: Env) -> str:
    return str((env.must("Lease", env.rel.namespace, env.rel.lease).get("spec") or {}).get("holderIdentity") or "")


def test_replicas_started_during_an_api_outage_lead_once_it_is_back(env: Env, json_log: io.StringIO) -> None:
    env.service("api")
    env.gateway()
    env.route()
    cfg = env.server.client_configuration()
    env.server.stop()  # both replicas start while nothing answers on the API server's port
    a = env.start_controller(identity="ctrl-a", configuration=cfg)
    b = env.start_controller(identity="ctrl-b", configuration=cfg)
    time.sleep(2.0)  # several failed Lease reads each, with back-off
    for inst in (a, b):
        el = inst.runtime.elector
        assert el is not None and el.failures >= 2 and el.condition == "Error"
        assert healthz(inst) == (200, "ok\n")  # alive: waiting for the API server is no failure
    logged = lines(json_log)
    errors = [x for x in logged if x["msg"].startswith("leader election: get Lease gateway-system/titanium-gateway:")]
    assert errors and all("NewConnectionError" in x["msg"] and x["level"] == "error" for x in errors)
    assert len(errors) == 2  # once per replica, not at every retry
    assert not [x for x in logged if "died" in x["msg"]]
    env.server.start()  # same port, same state
    holder = wait_for(lambda: lease_holder(env), timeout=15, what="a Lease holder")
    assert holder in ("ctrl-a", "ctrl-b")
    env.wait_programmed(timeout=20)
    assert any(x["msg"] == "leader election: the Lease can be read again" for x in lines(json_log))


def test_the_process_started_during_an_outage_logs_json_only_and_leads(env: Env, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(env.server.kubeconfig()))
    env.service("api")
    env.gateway()
    env.route()
    env.server.stop()
    proc_env = {k: v for k, v in os.environ.items() if not k.startswith("TITANIUM_GATEWAY_")}
    proc_env.update({"TITANIUM_ADMIN_TOKEN": env.rel.token, "TITANIUM_GATEWAY_KUBECONFIG": str(kubeconfig),
                     "TITANIUM_GATEWAY_MIN_RECONCILE_MS": "100", "POD_NAME": "ctrl-proc"})
    args = [sys.executable, "-m", "titanium_gateway", "controller", *env.rel.controller_args(),
            f"--admin-port={env.fleet.port}", "--health-port=0",
            "--lease-duration=4", "--renew-deadline=3", "--retry-period=0.5"]
    proc = subprocess.Popen(args, env=proc_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3.0)
        assert proc.poll() is None
        env.server.start()
        assert wait_for(lambda: lease_holder(env) == "ctrl-proc", timeout=20, what="the process leads")
        env.wait_programmed(timeout=30)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=5)
    assert proc.returncode == 0, err[-3000:]
    logged = [json.loads(x) for x in err.splitlines() if x.strip()]  # every line is JSON: no raw traceback
    assert any(x["msg"].startswith("leader election: get Lease") and "NewConnectionError" in x["msg"]
               for x in logged)
    assert any(x["msg"] == "config written" for x in logged)


class HeldStop(threading.Event):
    """The process loop's stop event; while ``hold`` is set the loop's wait does not return, so a
    test sees ``/healthz`` before the process exits."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        while self.hold.is_set() and not self.is_set():
            time.sleep(0.01)
        return super().wait(timeout)


class Boom(BaseException):
    """What no ``except Exception`` catches: stands for an error nobody expected."""


def _boom(*_a: Any, **_kw: Any) -> Any:
    raise Boom("unexpected")


def _kill_elector(env: Env, inst: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    pass  # patched before the start (below)


def _kill_reconcile_worker(env: Env, inst: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inst.ctrl, "reconcile", _boom)
    env.gateway("other")


def _kill_status_worker(env: Env, inst: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inst.ctrl.status_writer, "_write_batch", _boom)
    env.gateway("other")


def _kill_reflectors(env: Env, inst: Instance, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inst.api, "watch", _boom)
    env.server.close_watches()  # every reflector watches again: and dies


@pytest.mark.parametrize(("thread", "kill"), [
    ("leader-elector", _kill_elector), ("reconcile-worker", _kill_reconcile_worker),
    ("status-worker", _kill_status_worker), ("reflector-gateways", _kill_reflectors)])
def test_a_dead_core_thread_turns_healthz_503_is_logged_as_json_and_exits_1(
        env: Env, json_log: io.StringIO, monkeypatch: pytest.MonkeyPatch, thread: str, kill: Any) -> None:
    env.gateway()
    if thread == "leader-elector":
        monkeypatch.setattr(LeaderElector, "try_acquire_or_renew", _boom)
    stop = HeldStop()
    stop.hold.set()
    inst = env.start_controller(stop=stop)
    if thread != "leader-elector":
        env.wait_programmed(status="False")  # running and writing
        kill(env, inst, monkeypatch)
    code, body = wait_for(lambda: (r := healthz(inst))[0] == 503 and thread in r[1] and r, timeout=10,
                          what=f"/healthz 503 naming {thread}")
    assert body.startswith("core thread died: ")
    died = [x for x in lines(json_log) if x["msg"] == f"thread {thread} died"]
    assert died and died[0]["level"] == "critical" and died[0]["thread_name"] == thread
    assert "Traceback" in died[0]["exc"] and "Boom: unexpected" in died[0]["exc"]
    stop.hold.clear()  # the process loop looks again: it stops
    inst.thread.join(15)
    assert not inst.thread.is_alive() and inst.exit_code == [1]
    (last,) = [x for x in lines(json_log) if x["msg"] == "core thread died: stopping so the pod restarts"]
    assert thread in last["threads"]
