"""Started while the API server is unreachable (nothing listens where its kubeconfig points:
connection refused), the controller waits without dying, logging only JSON lines, and leads once
the API server answers there: it takes the Lease and turns the Gateway Programmed.

A dead core thread (``/healthz`` 503, exit 1) is not provoked here: the threads are built so that
no answer of an API server ends them (any failure of a request is a failed attempt, retried),
so a real server cannot kill one honestly; only an injected error can, which needs the process
itself: tests/integration/test_core_threads.py injects one into each core thread of the real
controller (against the FakeApiServer, through the real client) and checks the 503, the JSON
critical line with the traceback and the exit code. This test checks the other half on the
real server: an outage is no failure (``/healthz`` stays 200, no thread dies)."""

from __future__ import annotations

import json
import time

import pytest

from tests.cluster.conftest import ClusterEnv, wait_for
from tests.support.kubecluster import NODE_IP
from tests.support.tcprelay import TcpRelay

pytestmark = pytest.mark.timeout(420)


def test_started_during_an_outage_the_controller_leads_once_the_api_server_answers(env: ClusterEnv) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.set_load_balancer()
    relay = TcpRelay((NODE_IP, 6443), listen_host=NODE_IP)
    port = relay.port
    relay.stop()  # the controller's API server address: nothing listens there (connection refused)
    lease_before = env.get("Lease", env.ns, env.release.rel.lease)["spec"]
    p = env.start_controller(server=f"https://{NODE_IP}:{port}", wait_ready=False)
    relay = None
    try:
        time.sleep(8)  # several failed Lease reads, with back-off
        assert p.alive(), p.log()[-3000:]
        health = p._get("/healthz")
        assert health is not None and (health.status_code, health.text) == (200, "ok\n")  # waiting is no failure
        assert not p.ready()  # /readyz: the informers have not listed
        assert not p.is_leader()
        assert env.get("Lease", env.ns, env.release.rel.lease)["spec"] == lease_before  # not a single write
        mark = env.cluster.audit.mark()

        relay = TcpRelay((NODE_IP, 6443), listen_host=NODE_IP, port=port).start()  # the API server is back
        t0 = time.monotonic()
        wait_for(p.is_leader, 90, 0.5, "the controller leads")
        print(f"leading {time.monotonic() - t0:.1f} s after the API server came back")
        assert env.get("Lease", env.ns, env.release.rel.lease)["spec"]["holderIdentity"] == "ctrl-a"
        env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
        assert "shop.example.com" in env.route_hosts()
        assert env.controller_writes(mark, "leases")
        health = p._get("/healthz")
        assert health is not None and health.status_code == 200
    finally:
        if relay is not None:
            relay.stop()
    lines = [line for line in p.log().splitlines() if line.strip()]
    logged = []
    for line in lines:  # every line is one JSON object: no raw traceback on stderr
        try:
            logged.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a line of the controller's output is not JSON: {line[:300]!r}")
    failed = [x for x in logged if x["msg"].startswith("leader election: get Lease")]
    assert failed and all(x["level"] == "error" for x in failed), failed
    assert any("Connection refused" in x["msg"] or "NewConnectionError" in x["msg"] for x in failed), failed
    assert len(failed) <= 2, failed  # the same error is logged once, not at every retry
    assert any(x["msg"] == "leader election: the Lease can be read again" for x in logged)
    assert not [x for x in logged if "died" in x["msg"] or x["level"] == "critical"]
