"""A data plane without the admin API on a real API server: the pod loads the config and turns
ready, but ``/version`` answers 404, or 200 without a ``config_hash`` (the public Titanium CLI
is such a data plane). Programmed stays False, reason Pending, with the message that says so,
and the pod is poked once (a re-poke cannot cure that)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.cluster.conftest import ClusterEnv, condition, wait_for
from tests.support.dataplane import StubDataPlane

pytestmark = pytest.mark.timeout(300)

NO_ADMIN_API = ("this data plane cannot confirm which config it runs, so Programmed will not turn True; "
                "it needs a Titanium build with the admin API (/readyz, and /version reporting the config_hash)")
ONE_POD = {"dataPlane": {"replicas": 1}}


@pytest.mark.parametrize(("env", "answer", "says"), [
    (ONE_POD, (404, None), "does not serve /version (404) with a config_hash: " + NO_ADMIN_API),
    (ONE_POD, (200, {"version": "7.0.3"}), ": /version answered 200 without a config_hash field: " + NO_ADMIN_API),
], indirect=["env"], ids=["version-404", "no-config-hash"])
def test_a_data_plane_without_the_admin_api_leaves_programmed_false_saying_so(
        env: ClusterEnv, answer: tuple[int, Any], says: str) -> None:
    def no_admin_api(stub: StubDataPlane) -> None:
        stub.version_answer = answer  # /readyz stays the contract's: 200 once a config is loaded

    env.kubelet.on_launch = no_admin_api  # the pods the listener rollout creates too
    for p in env.data_plane_pods(1):
        no_admin_api(p.stub)
    env.service("api")
    env.gateway()
    env.route()
    env.set_load_balancer()
    mark = env.cluster.audit.mark()
    env.start_controller()

    def expected() -> str | None:
        """The message naming the data plane's one pod (None during the listener rollout)."""
        pods = env.kubelet.running()
        if len(pods) != 1:
            return None
        return f"pod {pods[0].name} ({pods[0].ip})" + ("" if says.startswith(":") else " ") + says

    c = wait_for(lambda: (c := condition(env.get("Gateway", env.apps, "web"), "Programmed"))
                 and c.get("message") == expected() and c, 120, 0.5, "Programmed saying there is no admin API")
    assert c["status"] == "False" and c["reason"] == "Pending", c
    (pod,) = env.kubelet.running()
    assert pod.stub.config_hash is not None  # it runs the config: it just cannot say so
    assert [r for r in pod.stub.requests if r.path == "/version" and r.authorized]  # the controller asked
    time.sleep(8)  # longer than the first re-poke delays (3 s, then 6 s)
    c = condition(env.get("Gateway", env.apps, "web"), "Programmed")
    assert c is not None and c["status"] == "False" and c["message"] == expected(), c
    pokes: dict[str, int] = {}
    for e in env.controller_writes(mark, "pods"):
        pokes[e["objectRef"]["name"]] = pokes.get(e["objectRef"]["name"], 0) + 1
    assert pokes.get(pod.name) == 1 and set(pokes.values()) == {1}, pokes  # poked once, never re-poked
