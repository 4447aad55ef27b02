"""Two replicas on a real API server, the chart's lease timings (15 s lease, 10 s renew
deadline, 2 s retry period with a jitter of up to 20 %): the leader is SIGKILLed (no release)
and the other takes over once the lease has expired; a SIGTERM releases the Lease and the
follower leads within a retry period."""

from __future__ import annotations

import signal
import threading
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from tests.cluster.conftest import ClusterEnv, condition, wait_for

pytestmark = pytest.mark.timeout(600)

LEASE, RETRY, JITTER = 15.0, 2.0, 1.2
# Takeover after the holder's last renew: the follower sees that renew on its next poll (at most
# one jittered retry period later), counts the lease from then, and acquires on the first poll
# after expiry (at most one more). SLACK: requests and scheduling on a loaded machine.
SLACK = 3.0


def micro(value: str) -> float:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def lease(env: ClusterEnv) -> dict[str, Any]:
    obj = env.get("Lease", env.ns, env.release.rel.lease)
    assert obj is not None
    return obj["spec"]


def test_sigkill_takeover_after_expiry_and_sigterm_hands_over(env: ClusterEnv) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.set_load_balancer()
    a = env.start_controller("ctrl-a")
    wait_for(a.is_leader, 60, what="ctrl-a leads")
    b = env.start_controller("ctrl-b")
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
    assert not b.is_leader()
    spec = lease(env)
    assert spec["holderIdentity"] == "ctrl-a" and spec["leaseDurationSeconds"] == LEASE
    # MicroTime as the server stores it: six fractional digits
    assert len(spec["renewTime"].split(".")[1]) == len("000000Z")
    b_success = b.metric("controller_runtime_reconcile_total", result="success")
    assert b_success == 0  # a follower renders, never writes

    # --- SIGKILL: no release; the Lease must expire first
    config_rv = env.get("ConfigMap", env.ns, env.release.rel.config_map)["metadata"]["resourceVersion"]
    reloads = {p.name: p.stub.reloads for p in env.kubelet.running()}
    env.expect_alive.discard("ctrl-a")
    a.kill()
    killed_at = time.time()
    last_renew = micro(lease(env)["renewTime"])  # what A wrote last (a renew in flight included)
    mark = env.cluster.audit.mark()
    taken = wait_for(lambda: (s := lease(env))["holderIdentity"] == "ctrl-b" and s, LEASE + 4 * RETRY * JITTER + 30,
                     0.1, "ctrl-b holds the Lease")
    takeover = micro(taken["acquireTime"]) - last_renew
    print(f"SIGKILL: takeover {takeover:.2f} s after the last renew ({time.time() - killed_at:.2f} s after the kill)")
    assert takeover >= LEASE - 0.05, f"took the Lease {takeover:.2f} s after the last renew: before it expired"
    assert takeover <= LEASE + 2 * RETRY * JITTER + SLACK, f"takeover {takeover:.2f} s after the last renew"
    assert taken["leaseTransitions"] >= 1
    wait_for(b.is_leader, 30, what="ctrl-b reports leadership")

    # The new leader reconciles once: it reads each object it writes once by name, finds what
    # the old one wrote, and writes none of them again: the server keeps the ConfigMap as it
    # was (same resourceVersion) and no pod reloads.
    wait_for(lambda: b.metric("controller_runtime_reconcile_total", result="success") >= 1, 30, what="ctrl-b reconciles")
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=60)
    time.sleep(5)  # a quiet window: nothing more comes
    per_object: dict[str, int] = {}
    for w in env.controller_writes(mark):
        ref = w["objectRef"]
        # statuses: see test_failover_keeps_programmed_true below
        if ref["resource"] in ("configmaps", "secrets", "deployments", "pods"):
            key = f"{w['verb']} {ref['resource']}{'/' + ref['subresource'] if ref.get('subresource') else ''} {ref.get('name')}"
            per_object[key] = per_object.get(key, 0) + 1
    print("writes of the new term:", per_object)
    assert per_object == {}, per_object
    assert env.get("ConfigMap", env.ns, env.release.rel.config_map)["metadata"]["resourceVersion"] == config_rv
    assert {p.name: p.stub.reloads for p in env.kubelet.running()} == reloads
    env.route(name="cart", host="cart.example.com")  # and it does the work
    wait_for(lambda: "cart.example.com" in env.route_hosts(), 60, what="ctrl-b writes a change")

    # --- SIGTERM: the leader releases the Lease, the follower leads within a retry period
    c = env.start_controller("ctrl-c")
    assert not c.is_leader()
    env.expect_alive.discard("ctrl-b")
    b.signal(signal.SIGTERM)
    assert b.proc is not None and b.proc.wait(30) == 0
    released_at = time.time()
    released = wait_for(lambda: (s := lease(env))["holderIdentity"] == "ctrl-c" and s, 30, 0.05, "ctrl-c holds the Lease")
    handover = micro(released["acquireTime"]) - released_at
    print(f"SIGTERM: ctrl-c acquired {handover:.2f} s after ctrl-b exited")
    assert handover <= RETRY * JITTER + SLACK, f"handover took {handover:.2f} s"
    wait_for(c.is_leader, 30, what="ctrl-c reports leadership")


def test_failover_keeps_programmed_true(env: ClusterEnv) -> None:
    """The new leader probes the pods before it writes any status: the Programmed condition the
    old leader wrote stays as it was (True, same lastTransitionTime) through the failover."""
    env.service("api")
    env.gateway()
    env.route()
    env.set_load_balancer()
    a = env.start_controller("ctrl-a")
    wait_for(a.is_leader, 60, what="ctrl-a leads")
    b = env.start_controller("ctrl-b")
    before = env.wait_condition("Gateway", "web", "Programmed", ns=env.apps, timeout=120)
    seen: list[tuple[str, str, str]] = []
    stop = threading.Event()
    gw = env.get("Gateway", env.apps, "web")
    assert gw is not None

    def watch() -> None:
        api = env.cluster.admin_api()
        rv = gw["metadata"]["resourceVersion"]
        while not stop.is_set():
            for ev in api.watch("Gateway", env.apps, resource_version=rv, timeout_seconds=5):
                obj = ev["object"]
                if ev["type"] in ("ADDED", "MODIFIED") and (c := condition(obj, "Programmed")):
                    seen.append((c["status"], c["reason"], c["lastTransitionTime"]))
                rv = obj["metadata"].get("resourceVersion", rv)

    with env.cluster.inside():
        t = threading.Thread(target=watch, daemon=True)
        t.start()
    env.expect_alive.discard("ctrl-a")
    a.kill()
    wait_for(b.is_leader, LEASE + 4 * RETRY * JITTER + 30, 0.2, "ctrl-b leads")
    wait_for(lambda: b.metric("controller_runtime_reconcile_total", result="success") >= 1, 30)
    time.sleep(5)
    stop.set()
    after = condition(env.get("Gateway", env.apps, "web"), "Programmed")
    print("Programmed during the failover:", seen)
    assert all(s == "True" for s, _, _ in seen), seen
    assert after == before, (before, after)
