"""Ingress on a real API server: class selection, status.loadBalancer from the data-plane
Service, Warning events through the events.k8s.io API (MicroTime with microseconds)."""

from __future__ import annotations

import re
from typing import Any

from tests.cluster.conftest import ClusterEnv, wait_for

NET = "networking.k8s.io/v1"


def ingress(env: ClusterEnv, name: str, host: str, cls: str | None, annotations: dict[str, str] | None = None,
            ) -> dict[str, Any]:
    spec: dict[str, Any] = {"rules": [{"host": host, "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}
    if cls is not None:
        spec["ingressClassName"] = cls
    return env.apply({"apiVersion": NET, "kind": "Ingress",
                      "metadata": {"name": name, "namespace": env.apps, "annotations": annotations or {}},
                      "spec": spec})


def warnings_for(env: ClusterEnv, name: str) -> list[dict[str, Any]]:
    return [e for e in env.api.list("Event", env.apps)
            if (e.get("regarding") or {}).get("name") == name and (e.get("regarding") or {}).get("kind") == "Ingress"
            and e.get("type") == "Warning"]


def test_ingress_class_status_and_warning_events(env: ClusterEnv) -> None:
    rel = env.release.rel
    env.service("api")
    ip = env.set_load_balancer()
    env.start_controller()
    ingress(env, "ours", "ours.example.com", rel.ingress_class)
    ingress(env, "theirs", "theirs.example.com", "some-other-class")
    ingress(env, "classless", "classless.example.com", None)
    ingress(env, "odd", "odd.example.com", rel.ingress_class, {"titanium.io/no-such-annotation": "x"})
    ingress(env, "bad", "bad.example.com", rel.ingress_class, {"titanium.io/limit-rps": "lots"})

    def lb(name: str) -> Any:
        return (((env.get("Ingress", env.apps, name) or {}).get("status") or {}).get("loadBalancer") or {}).get("ingress")

    wait_for(lambda: lb("ours") == [{"ip": ip}], 90, what="the Ingress's status.loadBalancer")
    wait_for(lambda: {"ours.example.com", "odd.example.com", "bad.example.com"} <= env.route_hosts(), 60,
             what="our Ingresses in twp.yaml")
    hosts = env.route_hosts()
    assert "theirs.example.com" not in hosts and "classless.example.com" not in hosts
    assert not lb("theirs") and not lb("classless")
    # a new address reaches the status
    env.set_load_balancer("198.18.250.200")
    wait_for(lambda: lb("ours") == [{"ip": "198.18.250.200"}], 60, what="the new load-balancer address")

    unknown = wait_for(lambda: [e for e in warnings_for(env, "odd") if e["reason"] == "UnknownAnnotation"], 60,
                       what="an UnknownAnnotation Warning event")
    invalid = wait_for(lambda: [e for e in warnings_for(env, "bad") if e["reason"] == "InvalidAnnotation"], 60,
                       what="an InvalidAnnotation Warning event")
    for ev in unknown + invalid:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", ev["eventTime"]), ev["eventTime"]
        assert ev["regarding"]["apiVersion"] == NET and ev["regarding"]["uid"]
        assert ev["reportingController"] and ev["reportingInstance"] and ev["action"]
    assert "titanium.io/no-such-annotation" in unknown[0]["note"]
    assert "limit-rps" in invalid[0]["note"]
    # the same events through the core v1 API (what kubectl describe shows)
    core = [e for e in env.api.list("CoreEvent", env.apps) if e["involvedObject"]["name"] in ("odd", "bad")]
    assert {e["reason"] for e in core} >= {"UnknownAnnotation", "InvalidAnnotation"}
    assert not warnings_for(env, "theirs")
