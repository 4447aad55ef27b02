"""Two controller instances in one process with separate identities: only the leader writes;
when it stops, the other takes over (within the lease duration + one reconcile)."""

from __future__ import annotations

import time

from tests.integration.conftest import Env, condition, wait_for
from titanium_gateway.controller.options import LeaseTimings


def test_only_the_leader_writes_and_a_graceful_stop_hands_over(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    a = env.start_controller(identity="ctrl-a")
    wait_for(lambda: a.is_leader, timeout=5, what="a leads")
    b = env.start_controller(identity="ctrl-b")
    env.wait_programmed()
    assert not b.is_leader
    assert b.ctrl.reconciles == 0 or b.ctrl.last_result is None
    lease = env.must("Lease", env.rel.namespace, env.rel.lease)
    assert lease["spec"]["holderIdentity"] == "ctrl-a"
    assert a.shutdown() == 0  # SIGTERM path: workers stop, Lease released
    t0 = time.monotonic()
    wait_for(lambda: b.is_leader, timeout=5, what="b takes over after the release")
    env.route(name="cart", host="cart.example.com")
    wait_for(lambda: "cart.example.com" in env.root_config(), timeout=5)
    env.wait_programmed()
    assert time.monotonic() - t0 < 15
    assert b.ctrl.last_result is not None


def test_crashed_leader_is_replaced_after_lease_expiry(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    a = env.start_controller(identity="ctrl-a")
    wait_for(lambda: a.is_leader, timeout=5)
    b = env.start_controller(identity="ctrl-b")
    env.wait_programmed()
    # a "crash": a's elector stops renewing and never releases the Lease; a stops counting
    # itself leader once its renew deadline passed
    t0 = time.monotonic()
    a.crash_elector()
    wait_for(lambda: not a.is_leader, timeout=5)
    wait_for(lambda: b.is_leader, timeout=10, what="b acquires the expired Lease")
    took = time.monotonic() - t0
    assert 1.5 <= took < 2.0 + 3 * 0.25 + 1  # the (2 s) lease expired first, then b's next attempt
    env.route(name="cart", host="cart.example.com")
    wait_for(lambda: "cart.example.com" in env.root_config(), timeout=5)
    assert env.must("Lease", env.rel.namespace, env.rel.lease)["spec"]["holderIdentity"] == "ctrl-b"


def test_losing_the_lease_stops_writing_and_exits_nonzero(env: Env) -> None:
    env.service("api")
    env.gateway()
    a = env.start_controller(identity="ctrl-a")
    wait_for(lambda: a.is_leader, timeout=5)
    env.wait_programmed()
    # someone else takes the Lease: a's renewals fail (409 / held by another)
    env.server.update_object("Lease", env.rel.namespace, env.rel.lease,
                             lambda o: o["spec"].update(holderIdentity="intruder", leaseDurationSeconds=3600))
    wait_for(lambda: not a.is_leader, timeout=5, what="a stops leading")
    a.thread.join(10)
    assert a.exit_code == [1]
    env.server.clear_log()
    env.route(name="cart", host="cart.example.com")
    time.sleep(0.5)
    assert [r for r in env.writes() if r.resource != "leases"] == []


def test_default_lease_timings_hand_over_within_15s(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    defaults = LeaseTimings()
    assert (defaults.lease_duration, defaults.renew_deadline, defaults.retry_period) == (15.0, 10.0, 2.0)
    a = env.start_controller(identity="ctrl-a", lease=None)
    wait_for(lambda: a.is_leader, timeout=5)
    b = env.start_controller(identity="ctrl-b", lease=None)
    env.wait_programmed()
    assert a.shutdown() == 0
    t0 = time.monotonic()
    wait_for(lambda: b.is_leader, timeout=15, what="b leads with default timings")
    env.route(name="cart", host="cart.example.com")
    wait_for(lambda: "cart.example.com" in env.root_config(), timeout=5)
    assert time.monotonic() - t0 < 15 + 1


def test_no_leader_election_writes_without_touching_the_lease(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    inst = env.start_controller("--no-leader-election", identity="solo")
    env.wait_programmed()
    assert inst.runtime.elector is None
    assert env.server.requests(resource="leases") == []
    assert inst.shutdown() == 0


def test_default_timings_crashed_leader_replaced_after_about_15s(env: Env) -> None:
    """A leader that dies without releasing: with the defaults (15 s / 10 s / 2 s) the follower
    takes over once 15 s passed since it last saw the Lease change, at its next attempt."""
    env.service("api")
    env.gateway()
    a = env.start_controller(identity="ctrl-a", lease=None)
    wait_for(lambda: a.is_leader, timeout=10)
    b = env.start_controller(identity="ctrl-b", lease=None)
    env.wait_programmed()
    t0 = time.monotonic()
    a.crash_elector()
    wait_for(lambda: b.is_leader, timeout=25, interval=0.1, what="b leads after the lease expired")
    took = time.monotonic() - t0
    assert 12.0 <= took <= 15.0 + 2 * 2.0 * 1.2 + 1.0, took
    env.route(name="cart", host="cart.example.com")
    wait_for(lambda: "cart.example.com" in env.root_config(), timeout=5)


def test_leader_change_does_not_repost_events(env: Env) -> None:
    env.service("api")
    env.ensure_ns("apps")
    env.server.put_object({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {
            "name": "shop", "namespace": "apps", "annotations": {"titanium.io/no-such-annotation": "x"}},
        "spec": {"ingressClassName": env.rel.ingress_class, "rules": [{"host": "shop.example.com", "http": {
            "paths": [{"path": "/", "pathType": "Prefix",
                       "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}})

    def events() -> list[dict]:  # type: ignore[type-arg]
        return [e for e in env.server.list_objects("events.events.k8s.io", "apps") if e.get("reason") == "UnknownAnnotation"]

    a = env.start_controller(identity="ctrl-a")
    wait_for(lambda: a.is_leader, timeout=5)
    b = env.start_controller(identity="ctrl-b")
    wait_for(events, timeout=10, what="event posted by a")
    assert a.shutdown() == 0
    wait_for(lambda: b.is_leader and b.ctrl.last_result is not None, timeout=10)
    n = b.ctrl.reconciles
    b.ctrl.trigger.trigger()
    wait_for(lambda: b.ctrl.reconciles > n, timeout=5)
    assert len(events()) == 1 and events()[0]["reportingInstance"] == "ctrl-a"


def test_failover_keeps_programmed_true_and_its_transition_time(env: Env) -> None:
    """The new leader does not know what the pods run (a peer wrote the config): it probes before
    it writes any status, so the Gateway's Programmed condition stays True through the failover,
    with its lastTransitionTime; the config stays the same and the pods reload nothing."""
    env.service("api")
    env.gateway()
    env.route()
    a = env.start_controller(identity="ctrl-a")
    wait_for(lambda: a.is_leader, timeout=5)
    b = env.start_controller(identity="ctrl-b")
    env.wait_programmed()
    before = condition(env.get("Gateway", "apps", "web"), "Programmed")
    reloads = [s.reloads for s in env.fleet]
    config = env.root_config()
    seen: list[dict[str, object] | None] = []
    env.server.react("gateways", lambda _t, obj: seen.append(condition(obj, "Programmed")))
    env.server.clear_log()
    a.crash_elector()  # no release: b takes the Lease once it expired
    wait_for(lambda: b.is_leader, timeout=10, what="b leads")
    wait_for(lambda: b.ctrl.last_result is not None and b.ctrl._confirmed == b.ctrl.last_result.config_hash,
             timeout=10, what="b confirmed what the pods run")
    n = b.ctrl.reconciles
    wait_for(lambda: b.ctrl.reconciles >= n + 1, timeout=10, what="another pass of b")
    assert b.ctrl.status_writer.wait_idle(10)
    assert all(c is not None and c["status"] == "True" for c in seen), seen
    assert condition(env.get("Gateway", "apps", "web"), "Programmed") == before
    assert env.root_config() == config
    assert [s.reloads for s in env.fleet] == reloads


def test_a_restarted_controller_without_leader_election_keeps_programmed_true(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    first = env.start_controller("--no-leader-election", identity="solo-1")
    env.wait_programmed()
    assert first.shutdown() == 0
    before = condition(env.get("Gateway", "apps", "web"), "Programmed")
    seen: list[dict[str, object] | None] = []
    env.server.react("gateways", lambda _t, obj: seen.append(condition(obj, "Programmed")))
    second = env.start_controller("--no-leader-election", identity="solo-2")
    wait_for(lambda: second.ctrl.last_result is not None
             and second.ctrl._confirmed == second.ctrl.last_result.config_hash, timeout=10, what="confirmed")
    n = second.ctrl.reconciles
    wait_for(lambda: second.ctrl.reconciles >= n + 1, timeout=10, what="another pass")
    assert second.ctrl.status_writer.wait_idle(10)
    assert all(c is not None and c["status"] == "True" for c in seen), seen
    assert condition(env.get("Gateway", "apps", "web"), "Programmed") == before
