"""Quick start end to end: Gateway + HTTPRoute -> config written -> pods confirm -> Programmed."""

from __future__ import annotations

import yaml

from tests.integration.conftest import Env, wait_for
from titanium_gateway.writers.pods import parse_poke, poke_value


def test_quick_start_reaches_programmed(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    c = env.wait_programmed()
    assert c["reason"] == "Programmed"
    doc = yaml.safe_load(env.root_config())
    assert doc["listeners"][0]["port"] == 8080
    for stub in env.fleet:
        assert stub.config_hash is not None
    route = env.must("HTTPRoute", "apps", "shop")
    parents = route["status"]["parents"]
    assert parents[0]["controllerName"] == env.rel.controller_name
    accepted = [c for c in parents[0]["conditions"] if c["type"] == "Accepted"]
    assert accepted and accepted[0]["status"] == "True"
    # poked pods carry the digest of the confirmed hash (and of the TLS files: none here)
    pods = [env.must("Pod", env.rel.namespace, s.name) for s in env.fleet]
    h = env.fleet[0].config_hash
    assert h is not None
    # (a pod slow to confirm may have been re-poked: ``<value>/<n>``)
    assert all(parse_poke(p["metadata"]["annotations"]["gateway.titaniumproxy.com/config-poke"])[0] == poke_value(h)
               for p in pods)
    # the Deployment is stamped with the listener set
    dep = env.must("Deployment", env.rel.namespace, env.rel.data_plane)
    assert dep["spec"]["template"]["metadata"]["annotations"]["gateway.titaniumproxy.com/listeners"] == "8080/http"
    wait_for(lambda: env.fleet[0].config_hash == env.fleet[1].config_hash)
