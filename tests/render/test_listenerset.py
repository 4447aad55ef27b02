"""ListenerSet (render/listenerset.py): merged into its Gateway's data-plane listeners, its own
status, routes attaching to it. The conf-listenerset-* golden cases follow the upstream tests;
these pin what they do not show."""

from __future__ import annotations

from typing import Any

from titanium_gateway.render import RenderCache, render
from titanium_gateway.render.gatewayapi import GatewayApiInfo
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.render.status.programmed import reprogram

from .core_fixtures import (
    GW_API,
    cond,
    config,
    endpoints,
    gateway,
    gatewayclass,
    route,
    run,
    service,
    status_of,
    tls_secret,
)


def listener_set(name: str = "extra", ns: str = "apps", listeners: list[dict[str, Any]] | None = None,
                 parent: str = "web", parent_ns: str | None = None, created: str = "2024-01-05T00:00:00Z"
                 ) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": parent}
    if parent_ns:
        ref["namespace"] = parent_ns
    return {"apiVersion": GW_API, "kind": "ListenerSet",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": created, "generation": 2},
            "spec": {"parentRef": ref, "listeners": listeners or [
                {"name": "shop", "port": 80, "protocol": "HTTP", "hostname": "shop.example.com"}]}}


def open_gateway(**kw: Any) -> dict[str, Any]:
    return gateway(allowedListeners={"namespaces": {"from": "All"}}, **kw)


def objects(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [gatewayclass(), open_gateway(listeners=[{"name": "http", "port": 80, "protocol": "HTTP",
                                                     "hostname": "www.example.com"}]),
            service(), endpoints(), *extra]


def ls_status(result, name: str = "extra", ns: str = "apps") -> dict[str, Any]:
    return status_of(result, "ListenerSet", ns, name).status


def test_an_https_listener_of_a_listener_set_opens_its_port_and_binds_its_certificate() -> None:
    https = {"name": "secure", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
             "tls": {"certificateRefs": [{"name": "shop-tls"}]}}
    result = run([*objects(listener_set(ns="team", listeners=[https], parent_ns="apps"), tls_secret(ns="team"),
                           route(ns="team", parents=[{"kind": "ListenerSet", "name": "extra"}],
                                 rules=[{"backendRefs": [{"name": "api", "namespace": "apps", "port": 8080}]}]))],
                 port_map={80: 8080, 443: 8443})
    doc = config(result)
    assert {(x["port"], x["decryptSsl"]) for x in doc["listeners"]} == {(8080, False), (8443, True)}
    assert [c["file"] for c in doc["certificates"]["items"]] == ["team.shop-tls.pfx"]  # the ListenerSet's namespace
    listener = ls_status(result, ns="team")["listeners"][0]
    assert cond(listener["conditions"], "Programmed")["reason"] == "Pending"  # (valid: waits for the data plane)
    assert listener["attachedRoutes"] == 1
    gw = status_of(result, "Gateway", "apps", "web").status
    assert [li["name"] for li in gw["listeners"]] == ["http"]  # the Gateway lists only its own
    assert gw["attachedListenerSets"] == 1


def test_same_means_the_listener_sets_namespace() -> None:
    same = {"name": "same", "port": 80, "protocol": "HTTP", "hostname": "shop.example.com",
            "allowedRoutes": {"namespaces": {"from": "Same"}}}
    result = run(objects(listener_set(ns="team", listeners=[same], parent_ns="apps"),
                         route("ok", ns="team", parents=[{"kind": "ListenerSet", "name": "extra"}]),
                         route("no", ns="apps", parents=[{"kind": "ListenerSet", "name": "extra", "namespace": "team"}])))
    assert cond(status_of(result, "HTTPRoute", "team", "ok").status["parents"][0]["conditions"],
                "Accepted")["status"] == "True"
    refused = cond(status_of(result, "HTTPRoute", "apps", "no").status["parents"][0]["conditions"], "Accepted")
    assert refused["reason"] == "NotAllowedByListeners"


def test_a_route_to_a_listener_set_that_is_not_accepted_is_not_allowed() -> None:
    closed = gateway()  # allowedListeners: none
    result = run([gatewayclass(), closed, service(), endpoints(), listener_set(),
                  route(parents=[{"kind": "ListenerSet", "name": "extra"}])])
    assert cond(ls_status(result)["conditions"], "Accepted")["reason"] == "NotAllowed"
    assert "listeners" not in ls_status(result)
    accepted = cond(status_of(result, "HTTPRoute", "apps", "shop").status["parents"][0]["conditions"], "Accepted")
    assert (accepted["reason"], accepted["message"]) == ("NotAllowedByListeners", "the ListenerSet is not accepted")
    assert config(result)["routes"] == []


def test_a_listener_set_of_another_gateway_is_not_ours() -> None:
    theirs = gateway("theirs", cls="other")
    result = run([gatewayclass(), theirs, listener_set(parent="theirs"), listener_set("lost", parent="nowhere")])
    reasons = {r.key: r.reason for r in result.not_ours}
    assert reasons[("ListenerSet", "apps", "extra")].startswith("its parent Gateway apps/theirs is not ours")
    assert reasons[("ListenerSet", "apps", "lost")] == "its parent Gateway apps/nowhere is not in the input"
    assert not [s for s in result.statuses if s.kind == "ListenerSet"]


def test_attached_listener_sets_only_where_the_cluster_serves_them() -> None:
    without = GatewayApiInfo(watched={"Gateway": GW_API, "HTTPRoute": GW_API})
    with_ = GatewayApiInfo(watched={"Gateway": GW_API, "HTTPRoute": GW_API, "ListenerSet": GW_API})
    for info, want in ((without, None), (with_, 0)):
        result = render(Snapshot.from_objects(objects(), gateway_api=info), RenderOptions())
        assert status_of(result, "Gateway", "apps", "web").status.get("attachedListenerSets") == want


def test_reprogram_decides_only_what_depends_on_the_data_plane() -> None:
    conflicting = listener_set("late", listeners=[{"name": "dup", "port": 80, "protocol": "HTTP",
                                                    "hostname": "www.example.com"}])
    first = run(objects(listener_set(), conflicting), now="2026-01-01T00:00:00Z")
    assert cond(ls_status(first)["conditions"], "Programmed")["reason"] == "Pending"
    again = reprogram(first, assume_programmed=False, confirmed_hash=first.config_hash, probe_message="",
                      now="2026-01-02T00:00:00Z")
    assert cond(ls_status(again)["conditions"], "Programmed")["status"] == "True"
    assert cond(ls_status(again)["listeners"][0]["conditions"], "Programmed")["status"] == "True"
    late = ls_status(again, "late")
    assert cond(late["conditions"], "Programmed")["reason"] == "ListenersNotValid"
    assert cond(late["listeners"][0]["conditions"], "Programmed")["reason"] == "HostnameConflict"
    full = run(objects(listener_set(), conflicting), confirmed_config_hash=first.config_hash)
    for name in ("extra", "late"):
        assert [(c["type"], c["status"], c["reason"]) for c in ls_status(full, name)["conditions"]] == \
               [(c["type"], c["status"], c["reason"]) for c in ls_status(again, name)["conditions"]]


def test_a_listener_set_change_reaches_a_replayed_route() -> None:
    def versioned(obj: dict[str, Any], rv: str) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv, "uid": obj["metadata"]["name"]}}

    r = versioned(route(parents=[{"kind": "ListenerSet", "name": "extra"}]), "1")
    base = [versioned(o, "1") for o in objects()]
    cache, options = RenderCache(), RenderOptions()
    first = render(Snapshot.from_objects([*base, r, versioned(listener_set(), "1")]), options, cache)
    assert [x["match"]["host"] for x in config(first)["routes"]] == ["shop.example.com"]
    moved = listener_set(listeners=[{"name": "shop", "port": 80, "protocol": "HTTP", "hostname": "store.example.com"}])
    second = render(Snapshot.from_objects([*base, r, versioned(moved, "2")]), options, cache)
    assert [x["match"]["host"] for x in config(second)["routes"]] == ["store.example.com"]


def test_a_route_not_served_names_the_listener_set() -> None:
    https = {"name": "secure", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
             "tls": {"certificateRefs": [{"name": "missing"}]}}
    result = run(objects(listener_set(listeners=[https]), route(parents=[{"kind": "ListenerSet", "name": "extra"}])),
                 port_map={80: 8080, 443: 8443})
    message = cond(status_of(result, "HTTPRoute", "apps", "shop").status["parents"][0]["conditions"],
                   "Accepted")["message"]
    assert 'listener "secure" of ListenerSet apps/extra is not programmed (Secret apps/missing not found)' in message
