from __future__ import annotations

from titanium_gateway.kube.api import DEPLOYMENTS, PODS
from titanium_gateway.render.result import ListenerKey
from titanium_gateway.writers.base import LeaderGuard
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION, DeploymentStamper, canonical_listeners
from titanium_gateway.writers.pods import POKE_ANNOTATION, PodPoker

from .fakes import RecordingApi


def test_poke_each_pod_once_per_hash() -> None:
    api = RecordingApi()
    pods = [api.put(PODS, {"metadata": {"name": f"p{i}", "namespace": "gw", "uid": f"u{i}"}}) for i in range(2)]
    poker = PodPoker(api, "gw", guard=LeaderGuard())
    assert poker.poke(pods, "h1") == 2
    assert all(api.obj(PODS, "gw", f"p{i}")["metadata"]["annotations"][POKE_ANNOTATION] == "h1" for i in range(2))
    assert poker.poke(pods, "h1") == 0  # the cache may still show the old annotation: no repeat
    fresh = [api.obj(PODS, "gw", "p0"), api.obj(PODS, "gw", "p1")]
    assert poker.poke(fresh, "h2") == 2
    assert all(c["patch_type"] == "merge" for c in api.writes())


def test_stamp_only_when_listener_set_changes() -> None:
    api = RecordingApi()
    api.put(DEPLOYMENTS, {"metadata": {"name": "dp", "namespace": "gw"}, "spec": {"template": {"metadata": {}}}})
    s = DeploymentStamper(api, "gw", "dp", guard=LeaderGuard())
    ls = {ListenerKey(8443, True), ListenerKey(8080, False)}
    assert canonical_listeners(ls) == "8080/http,8443/https"
    assert s.stamp(ls)
    assert not s.stamp(set(ls))
    ann = api.obj(DEPLOYMENTS, "gw", "dp")["spec"]["template"]["metadata"]["annotations"]
    assert ann[LISTENERS_ANNOTATION] == "8080/http,8443/https"
    assert s.stamp({ListenerKey(8080, False)})
    assert len(api.writes("deployments")) == 2
    assert not DeploymentStamper(api, "gw", None, guard=LeaderGuard()).stamp(ls)  # no deployment flag
