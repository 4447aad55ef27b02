from __future__ import annotations

from titanium_gateway.kube.api import DEPLOYMENTS, PODS
from titanium_gateway.render.result import ListenerKey
from titanium_gateway.writers.base import LeaderGuard
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION, DeploymentStamper, canonical_listeners
from titanium_gateway.writers.pods import POKE_ANNOTATION, PodPoker, poke_value

from .fakes import RecordingApi


def test_poke_each_pod_once_per_hash() -> None:
    api = RecordingApi()
    pods = [api.put(PODS, {"metadata": {"name": f"p{i}", "namespace": "gw", "uid": f"u{i}"}}) for i in range(2)]
    poker = PodPoker(api, "gw", guard=LeaderGuard())
    assert poker.poke(pods, "h1") == 2
    assert all(api.obj(PODS, "gw", f"p{i}")["metadata"]["annotations"][POKE_ANNOTATION] == poke_value("h1")
               for i in range(2))
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


def test_poke_value_covers_config_hash_and_tls_files() -> None:
    base = poke_value("h1", {"apps.a.pfx": b"one", "apps.b.pfx": b"two"})
    assert len(base) == 64 and base != "h1"
    assert poke_value("h1", {"apps.b.pfx": b"two", "apps.a.pfx": b"one"}) == base  # order-free
    assert poke_value("h2", {"apps.a.pfx": b"one", "apps.b.pfx": b"two"}) != base
    assert poke_value("h1", {"apps.a.pfx": b"ONE", "apps.b.pfx": b"two"}) != base  # a rotated certificate
    assert poke_value("h1", {"apps.a.pfx": b"one"}) != base
    assert poke_value("h1", {"apps.c.pfx": b"one", "apps.b.pfx": b"two"}) != base  # renamed


def test_certificate_rotation_pokes_the_pods_again() -> None:
    api = RecordingApi()
    pods = [api.put(PODS, {"metadata": {"name": f"p{i}", "namespace": "gw", "uid": f"u{i}"}}) for i in range(2)]
    poker = PodPoker(api, "gw", guard=LeaderGuard())
    assert poker.poke(pods, "h1", {"apps.shop.pfx": b"old key"}) == 2
    assert poker.poke(pods, "h1", {"apps.shop.pfx": b"old key"}) == 0
    # same twp.yaml (same config hash), new PFX bytes: the kubelet must refresh the Secret volume
    assert poker.poke(pods, "h1", {"apps.shop.pfx": b"new key"}) == 2
    want = poke_value("h1", {"apps.shop.pfx": b"new key"})
    assert all(api.obj(PODS, "gw", f"p{i}")["metadata"]["annotations"][POKE_ANNOTATION] == want for i in range(2))


def _pod(name: str, stamp: str | None = None) -> dict[str, object]:
    ann = {} if stamp is None else {LISTENERS_ANNOTATION: stamp}
    return {"metadata": {"name": name, "namespace": "gw", "annotations": ann}}


def test_empty_listener_set_is_not_stamped_on_a_fresh_install() -> None:
    api = RecordingApi()
    api.put(DEPLOYMENTS, {"metadata": {"name": "dp", "namespace": "gw"}, "spec": {"template": {"metadata": {}}}})
    s = DeploymentStamper(api, "gw", "dp", guard=LeaderGuard())
    # the chart's template has no stamp (the pods carry none) and there is no listener: no rollout
    assert not s.stamp(set(), [_pod("p0"), _pod("p1")])
    assert not s.stamp(set(), [])
    assert api.writes("deployments") == []
    # the first non-empty set is stamped, and every change after it, back to the empty set too
    assert s.stamp({ListenerKey(8080, False)}, [_pod("p0")])
    assert s.stamp(set(), [_pod("p0")])
    ann = api.obj(DEPLOYMENTS, "gw", "dp")["spec"]["template"]["metadata"]["annotations"]
    assert ann[LISTENERS_ANNOTATION] == ""
    assert len(api.writes("deployments")) == 2


def test_empty_listener_set_is_stamped_when_pods_run_an_older_stamp() -> None:
    api = RecordingApi()
    api.put(DEPLOYMENTS, {"metadata": {"name": "dp", "namespace": "gw"}, "spec": {"template": {"metadata": {}}}})
    s = DeploymentStamper(api, "gw", "dp", guard=LeaderGuard())
    # a new term (or restart): the pods were created with 8080/http, the Gateways are gone since
    assert s.stamp(set(), [_pod("p0", "8080/http")])
    assert not s.stamp(set(), [_pod("p0", "8080/http")])
    # pods that carry the empty stamp already: nothing to roll
    s2 = DeploymentStamper(api, "gw", "dp", guard=LeaderGuard())
    assert not s2.stamp(set(), [_pod("p0", "")])
    assert len(api.writes("deployments")) == 1
