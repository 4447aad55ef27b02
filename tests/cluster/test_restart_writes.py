"""A controller restart with nothing changed writes nothing (the API server's audit log is the
witness): the new leader reads the data-plane ConfigMaps, the TLS Secret and the Deployment once
by name, finds what it would write already there, and ``titanium_config_writes_total`` stays at 0
(docs/operations.md, Metrics)."""

from __future__ import annotations

import time

import pytest

from tests.cluster.conftest import ClusterEnv, wait_for
from tests.support.kubecluster import describe, describe_resource

pytestmark = pytest.mark.timeout(300)


def settled(env: ClusterEnv, quiet: float = 3.0, timeout: float = 60.0) -> None:
    """Until the controller has written nothing (but its Lease) for ``quiet`` seconds."""
    end = time.monotonic() + timeout
    while True:
        mark = env.cluster.audit.mark()
        time.sleep(quiet)
        if not [e for e in env.controller_writes(mark) if describe_resource(e) != "leases"]:
            return
        assert time.monotonic() < end, "the controller kept writing"


def test_a_restart_with_nothing_changed_writes_nothing(env: ClusterEnv) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.set_load_balancer()
    first = env.start_controller("ctrl-a")
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps)
    settled(env)
    assert env.controller_writes(env.audit_mark, "configmaps"), "the first controller wrote the config"

    env.expect_alive.discard("ctrl-a")
    assert first.stop() == 0  # SIGTERM: the Lease is released
    mark = env.cluster.audit.mark()
    second = env.start_controller("ctrl-b")
    wait_for(second.is_leader, 60, what="ctrl-b leads")
    wait_for(lambda: second.metric("controller_runtime_reconcile_total", result="success") >= 2, 60,
             what="ctrl-b reconciled")
    settled(env)
    writes = [e for e in env.controller_writes(mark) if describe_resource(e) != "leases"]
    assert not writes, "a restart with nothing changed wrote:\n" + "\n".join(describe(e) for e in writes)
    assert second.metric("titanium_config_writes_total") == 0
    # what it did instead: one read by name of each object it writes
    reads = [e for e in env.cluster.audit.events(mark, user=env.controller_user())
             if e.get("verb") == "get" and e.get("stage") == "ResponseComplete"
             and describe_resource(e) in ("configmaps", "secrets", "deployments")]
    rel = env.release.rel
    expected = {("configmaps", rel.config_map), *(("configmaps", n) for n in rel.part_names),
                ("secrets", rel.tls_secret), ("deployments", rel.data_plane)}
    assert sorted((describe_resource(e), e["objectRef"]["name"]) for e in reads) == sorted(expected)
    # and the Gateway stays Programmed (no Pending in between: the first pass probes first)
    env.wait_condition("Gateway", "web", "Programmed", ns=env.apps)
