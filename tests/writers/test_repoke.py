"""Re-poke (writers/pods.py): a pod that has not confirmed the config some seconds after its
config-poke is poked again, with back-off, a cap per pod and config, and an overall rate limit;
never a pod that confirmed, nor one whose problem a re-poke cannot cure. Injectable clock."""

from __future__ import annotations

from typing import Any

import pytest

from titanium_gateway.kube.api import PODS, ApiError
from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.metrics import Registry
from titanium_gateway.writers.base import LeaderGuard, NotLeader
from titanium_gateway.writers.pods import POKE_ANNOTATION, PodPoker, RepokePolicy, parse_poke, poke_value

from .fakes import RecordingApi

V1, V2 = poke_value("h1"), poke_value("h2")


def setup(n: int = 1, *, policy: RepokePolicy | None = None, leader: dict[str, bool] | None = None,
          annotation: str | None = None) -> tuple[PodPoker, RecordingApi, FakeClock, Registry]:
    api = RecordingApi()
    for i in range(n):
        md: dict[str, Any] = {"name": f"p{i}", "namespace": "gw", "uid": f"u{i}"}
        if annotation is not None:
            md["annotations"] = {POKE_ANNOTATION: annotation}
        api.put(PODS, {"metadata": md})
    clock, reg = FakeClock(), Registry()
    flag = leader if leader is not None else {"on": True}
    poker = PodPoker(api, "gw", guard=LeaderGuard(lambda: flag["on"]), clock=clock, registry=reg,
                     policy=policy or RepokePolicy(first_after=3, max_delay=10, max_attempts=3, qps=100, burst=100))
    return poker, api, clock, reg


def pods(api: RecordingApi) -> list[dict[str, Any]]:
    return [o for (plural, _ns, _n), o in sorted(api.objects.items()) if plural == "pods"]


def annotation(api: RecordingApi, name: str) -> str:
    return str(api.obj(PODS, "gw", name)["metadata"]["annotations"][POKE_ANNOTATION])


def test_a_pod_behind_is_poked_again_with_back_off_up_to_the_cap() -> None:
    poker, api, clock, reg = setup()
    assert poker.poke(pods(api), "h1") == 1
    assert poker.next_repoke() == clock.now() + 3
    assert poker.repoke(pods(api), confirmed=()) == 0  # just poked
    clock.step(2.9)
    assert poker.repoke(pods(api), confirmed=()) == 0
    clock.step(0.1)
    assert poker.repoke(pods(api), confirmed=()) == 1
    assert annotation(api, "p0") == f"{V1}/1"  # a change of the pod: the kubelet syncs its volumes again
    assert poker.next_repoke() == clock.now() + 6  # doubled
    clock.step(5.9)
    assert poker.repoke(pods(api), confirmed=()) == 0
    clock.step(0.1)
    assert poker.repoke(pods(api), confirmed=()) == 1 and annotation(api, "p0") == f"{V1}/2"
    clock.step(10)  # 12 s capped at max_delay 10
    assert poker.repoke(pods(api), confirmed=()) == 1 and annotation(api, "p0") == f"{V1}/3"
    assert poker.next_repoke() is None  # max_attempts: the kubelet's periodic sync is left
    clock.step(1000)
    assert poker.repoke(pods(api), confirmed=()) == 0
    assert len(api.writes("pods")) == 4
    assert reg.value("titanium_config_pokes_total", kind="poke") == 1
    assert reg.value("titanium_config_pokes_total", kind="repoke") == 3
    # the cached pod carries the re-poke: poke() does not take it for a missing poke
    assert poker.poke(pods(api), "h1") == 0


def test_a_pod_that_confirmed_is_never_poked_again_for_that_config() -> None:
    poker, api, clock, _ = setup(2)
    poker.poke(pods(api), "h1")
    clock.step(3)
    assert poker.repoke(pods(api), confirmed={"p1"}) == 1
    assert annotation(api, "p0") == f"{V1}/1" and annotation(api, "p1") == V1
    clock.step(100)  # p1 falls behind later (e.g. a restarted container): not a projection race
    assert poker.repoke(pods(api), confirmed=()) == 1
    assert annotation(api, "p1") == V1
    assert [w["name"] for w in api.writes("pods")] == ["p0", "p1", "p0", "p0"]


def test_a_problem_a_re_poke_cannot_cure_holds_it_back() -> None:
    poker, api, clock, _ = setup()
    poker.poke(pods(api), "h1")
    clock.step(3)
    assert poker.repoke(pods(api), confirmed=(), held={"p0"}) == 0  # e.g. no admin API, wrong token
    assert poker.next_repoke() is None
    clock.step(1)
    assert poker.repoke(pods(api), confirmed=()) == 1  # that problem went away, the pod is still behind


def test_a_new_config_starts_over_and_a_re_poke_is_for_the_current_one_only() -> None:
    poker, api, clock, _ = setup()
    poker.poke(pods(api), "h1")
    clock.step(3)
    assert poker.repoke(pods(api), confirmed=()) == 1
    clock.step(1)
    assert poker.poke(pods(api), "h2") == 1 and annotation(api, "p0") == V2
    clock.step(2.9)
    assert poker.repoke(pods(api), confirmed=()) == 0
    clock.step(0.1)
    assert poker.repoke(pods(api), confirmed=()) == 1 and annotation(api, "p0") == f"{V2}/1"


def test_many_pods_behind_are_re_poked_within_the_rate_limit_most_overdue_first() -> None:
    policy = RepokePolicy(first_after=3, max_delay=30, max_attempts=4, qps=1, burst=5)
    poker, api, clock, _ = setup(30, policy=policy)
    early = pods(api)[:10]
    poker.poke(early, "h1")
    clock.step(1)
    poker.poke(pods(api), "h1")  # the other 20 a second later
    assert len(api.writes("pods")) == 30
    clock.step(10)
    assert poker.repoke(pods(api), confirmed=()) == 5  # the burst
    assert {w["name"] for w in api.writes("pods")[30:]} <= {p["metadata"]["name"] for p in early}
    assert poker.repoke(pods(api), confirmed=()) == 0  # no token left
    at = poker.next_repoke()
    assert at is not None and at == pytest.approx(clock.now() + 1.0)
    clock.step(1)
    assert poker.repoke(pods(api), confirmed=()) == 1
    clock.step(60)  # 60 s at 1 re-poke a second, burst 5: 5 at once
    assert poker.repoke(pods(api), confirmed=()) == 5
    assert len(api.writes("pods")) == 30 + 11


def test_a_new_term_adopts_the_pokes_it_finds_and_keeps_counting() -> None:
    """The previous leader poked (and re-poked twice): the new one writes nothing at once, and
    re-pokes a pod still behind once more at most (max_attempts 3), its clock starting now."""
    poker, api, clock, _ = setup(annotation=f"{V1}/2")
    poker.reset()
    assert poker.poke(pods(api), "h1") == 0
    assert poker.next_repoke() == clock.now() + 10  # the delay after the 2nd re-poke (12, capped)
    clock.step(10)
    assert poker.repoke(pods(api), confirmed=()) == 1 and annotation(api, "p0") == f"{V1}/3"
    clock.step(100)
    assert poker.repoke(pods(api), confirmed=()) == 0


def test_only_the_leader_re_pokes() -> None:
    leader = {"on": True}
    poker, api, clock, _ = setup(leader=leader)
    poker.poke(pods(api), "h1")
    leader["on"] = False
    clock.step(3)
    with pytest.raises(NotLeader):
        poker.repoke(pods(api), confirmed=())
    assert len(api.writes("pods")) == 1


def test_a_pod_gone_meanwhile_is_skipped_and_forgotten() -> None:
    poker, api, clock, _ = setup(2)
    poker.poke(pods(api), "h1")
    clock.step(3)
    api.fail_next("patch", "pods", ApiError(404, "NotFound", "gone"))
    assert poker.repoke(pods(api), confirmed=()) == 1
    poker.poke(pods(api)[1:], "h1")  # p0 is no longer listed
    clock.step(100)
    assert poker.repoke(pods(api), confirmed=()) == 1
    assert [w["name"] for w in api.writes("pods")][-1] == "p1"


def test_parse_poke() -> None:
    assert parse_poke(V1) == (V1, 0)
    assert parse_poke(f"{V1}/3") == (V1, 3)
    assert parse_poke(f"{V1}/x") == ("", 0)
    assert parse_poke(None) == ("", 0) and parse_poke("") == ("", 0) and parse_poke(7) == ("", 0)
