"""Re-poke: the kubelet's ConfigMap cache may lag the pod change that pokes it, so the poke
projects the old config and the pod would stay on it until the kubelet's periodic sync (a
minute here). The controller pokes such a pod again a few seconds later; a pod that confirmed
is left alone, and so is one whose problem a re-poke cannot cure. Through the real controller
against the FakeApiServer, with stub pods whose volumes refresh only on a change of their Pod
(or once a minute), one of them reading the ConfigMaps through a cache one second behind."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.integration.conftest import Env, condition, running, wait_for
from tests.support.apiserver import FakeApiServer
from tests.support.dataplane import DataPlaneFleet, sha256_hex
from tests.support.release import Release, seed_release
from titanium_gateway.writers.pods import POKE_ANNOTATION, parse_poke

LAG = 1.0  # the lagging pod's ConfigMap cache


@pytest.fixture
def lagging() -> Iterator[Env]:
    server = FakeApiServer(bookmark_interval=0.5).start()
    rel = Release()
    seed_release(server, rel)
    fleet = DataPlaneFleet.start(2, token=rel.token, service=rel.data_plane)
    fleet.register(server, rel.namespace, rel.data_plane, deployment=rel.data_plane)
    fleet[0].follow(server, rel.namespace, rel.config_map, pod_name=fleet[0].name, sync_period=60,
                    configmap_lag=LAG)
    fleet[1].follow(server, rel.namespace, rel.config_map, pod_name=fleet[1].name, sync_period=60)
    with running(server, rel, fleet) as e:
        yield e


def poke_patches(env: Env, pod: str) -> list[str]:
    out = []
    for r in env.server.requests("patch", "pods", name=pod):
        ann = ((r.body or {}).get("metadata") or {}).get("annotations") or {}
        if POKE_ANNOTATION in ann:
            out.append(str(ann[POKE_ANNOTATION]))
    return out


def test_a_pod_given_the_old_config_on_its_poke_is_poked_again_and_confirms_in_seconds(lagging: Env) -> None:
    env = lagging
    slow, fast = env.fleet[0].name, env.fleet[1].name
    env.service("api")
    env.gateway()
    env.route()
    t0 = time.monotonic()
    env.start_controller()
    # A fresh install: the slow pod's poke projects the empty ConfigMap again, so it stays
    # unready (no config) and Programmed needs the fast pod only; the re-poke brings it the
    # config within seconds (without it: the periodic sync, a minute).
    wait_for(lambda: (h := sha256_hex(env.root_config())) and all(s.config_hash == h for s in env.fleet),
             timeout=20, what="both pods on the first config")
    print(f"first config: both pods on it after {time.monotonic() - t0:.1f} s")
    env.wait_programmed(timeout=10)
    first = poke_patches(env, slow)
    value = parse_poke(first[0])[0]
    assert first[0] == value and first[1:] and all(parse_poke(p)[0] == value for p in first[1:]), first
    assert poke_patches(env, fast) == [value]  # it confirmed: never poked again

    # A config change: the slow pod is ready on the old config, so Programmed waits for it.
    env.route(name="cart", host="cart.example.com")
    t1 = time.monotonic()
    wait_for(lambda: "cart.example.com" in env.root_config(), timeout=10)
    h2 = sha256_hex(env.root_config())
    wait_for(lambda: all(s.config_hash == h2 for s in env.fleet)
             and (c := condition(env.get("Gateway", "apps", "web"), "Programmed")) and c["status"] == "True",
             timeout=20, what="both pods on the new config and Programmed True")
    print(f"second config: Programmed after {time.monotonic() - t1:.1f} s")
    second = poke_patches(env, slow)[len(first):]
    new = parse_poke(second[0])[0]
    assert new != value and second[0] == new and second[1:] and all(parse_poke(p)[0] == new for p in second[1:]), second
    assert poke_patches(env, fast) == [value, new]
    # confirmed: quiet from now on
    n = len(env.server.requests("patch", "pods"))
    time.sleep(4)
    assert len(env.server.requests("patch", "pods")) == n


def test_no_re_poke_when_the_pods_reject_the_admin_token(env: Env) -> None:
    """A problem a re-poke cannot cure (here the pods reject the controller's token) is no
    reason to write: each pod is poked once per config."""
    for s in env.fleet:
        s.token = "another-token"
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    c = wait_for(lambda: (c := condition(env.get("Gateway", "apps", "web"), "Programmed"))
                 and "rejected the admin token" in c.get("message", "") and c, timeout=15, what="Pending: the token")
    assert c["status"] == "False"
    time.sleep(8)  # the re-poke would come after 3 s, then 6 s
    for s in env.fleet:
        assert len(poke_patches(env, s.name)) == 1, poke_patches(env, s.name)
