from __future__ import annotations

import yaml

from tests.render.core_fixtures import (
    cond,
    config,
    endpoints,
    gateway,
    gatewayclass,
    grant,
    listener,
    listener_status,
    route,
    run,
    service,
    status_of,
    tls_secret,
)
from titanium_gateway.render.gateway import host_matches, intersect_hostname, selector_matches


def gw_cond(res, ctype, name="web", ns="apps"):  # type: ignore[no-untyped-def]
    return cond(status_of(res, "Gateway", ns, name).status["conditions"], ctype)


def lcond(res, lname, ctype, gw="web"):  # type: ignore[no-untyped-def]
    return cond(listener_status(res, lname, gw)["conditions"], ctype)


def test_gatewayclass_ours_only_and_other_gateways_untouched() -> None:
    res = run([gatewayclass(), gatewayclass("other", "example.com/x"),
               gateway(), gateway("foreign", cls="other"), route(parents=[{"name": "foreign"}], name="r2")])
    kinds = {(s.kind, s.name) for s in res.statuses}
    assert ("GatewayClass", "titanium") in kinds and ("GatewayClass", "other") not in kinds
    assert ("Gateway", "foreign") not in kinds and ("HTTPRoute", "r2") not in kinds
    assert cond(status_of(res, "GatewayClass", "", "titanium").status["conditions"], "Accepted")["status"] == "True"


def test_http_listener_accepted_and_programmed_states() -> None:
    objs = [gatewayclass(), gateway()]
    pending = run(objs, probe_message="2 of 3 pods confirmed")
    assert gw_cond(pending, "Accepted")["reason"] == "Accepted"
    assert gw_cond(pending, "Programmed")["reason"] == "Pending"
    assert gw_cond(pending, "Programmed")["message"] == "2 of 3 pods confirmed"
    assert lcond(pending, "http", "Programmed")["reason"] == "Pending"
    confirmed = run(objs, confirmed_config_hash=pending.config_hash)
    assert gw_cond(confirmed, "Programmed")["status"] == "True"
    assert lcond(confirmed, "http", "Programmed")["status"] == "True"
    assert run(objs, assume_programmed=True).config_hash == pending.config_hash
    ls = listener_status(pending, "http")
    assert ls["supportedKinds"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"},
                                    {"group": "gateway.networking.k8s.io", "kind": "GRPCRoute"}]
    assert [c["type"] for c in ls["conditions"]] == ["Accepted", "Programmed", "ResolvedRefs", "Conflicted"]
    assert config(pending)["listeners"] == [{"host": "0.0.0.0", "port": 8080, "type": "transparent",
                                             "decryptSsl": False}]
    assert pending.listeners and next(iter(pending.listeners)).port == 8080


def test_unsupported_protocol_and_port_unavailable() -> None:
    gw = gateway(listeners=[listener("tcp", 9000, "TCP"), listener("odd", 81, "HTTP"), listener()])
    res = run([gatewayclass(), gw])
    assert lcond(res, "tcp", "Accepted")["reason"] == "UnsupportedProtocol"
    assert listener_status(res, "tcp")["supportedKinds"] == []
    assert lcond(res, "odd", "Accepted")["reason"] == "PortUnavailable"
    assert lcond(res, "odd", "Programmed")["reason"] == "Invalid"
    assert gw_cond(res, "Accepted")["status"] == "True"
    assert gw_cond(res, "Accepted")["reason"] == "ListenersNotValid"
    only_bad = run([gatewayclass(), gateway(listeners=[listener("tcp", 9000, "TCP")])])
    assert gw_cond(only_bad, "Accepted")["status"] == "False"
    assert config(only_bad)["listeners"] == []


def test_port_map_missing_port_maps_to_itself() -> None:
    res = run([gatewayclass(), gateway(listeners=[listener("x", 8080)])], data_plane_ports=(8080,))
    assert lcond(res, "x", "Accepted")["status"] == "True"
    assert config(res)["listeners"][0]["port"] == 8080


def test_passthrough_and_addresses_unsupported() -> None:
    gw = gateway(listeners=[listener("tls", 443, "HTTPS", tls={"mode": "Passthrough"})])
    assert lcond(run([gatewayclass(), gw]), "tls", "Accepted")["reason"] == "UnsupportedProtocol"
    res = run([gatewayclass(), gateway(addresses=[{"value": "1.2.3.4"}]), service(), endpoints(), route()])
    assert gw_cond(res, "Accepted")["reason"] == "UnsupportedAddress"
    assert gw_cond(res, "Programmed")["status"] == "False"
    assert config(res)["routes"] == []


def test_invalid_route_kinds() -> None:
    mixed = listener(allowedRoutes={"kinds": [{"kind": "HTTPRoute"}, {"kind": "TCPRoute"}]})
    res = run([gatewayclass(), gateway(listeners=[mixed])])
    assert lcond(res, "http", "ResolvedRefs")["reason"] == "InvalidRouteKinds"
    assert listener_status(res, "http")["supportedKinds"] == [{"group": "gateway.networking.k8s.io",
                                                               "kind": "HTTPRoute"}]
    assert lcond(res, "http", "Accepted")["status"] == "True"
    only = listener(allowedRoutes={"kinds": [{"kind": "FooRoute"}]})
    res = run([gatewayclass(), gateway(listeners=[only]), route()])
    assert listener_status(res, "http")["supportedKinds"] == []
    assert listener_status(res, "http")["attachedRoutes"] == 0
    assert cond(status_of(res, "HTTPRoute", "apps", "shop").status["parents"][0]["conditions"],
                "Accepted")["reason"] == "NotAllowedByListeners"


def test_conflicts_inside_one_gateway_and_across() -> None:
    gw = gateway(listeners=[listener("a", 80, "HTTP", hostname="x.com"), listener("b", 80, "HTTP", hostname="x.com"),
                            listener("c", 80, "HTTPS")])
    res = run([gatewayclass(), gw])
    assert lcond(res, "a", "Conflicted")["status"] == "False"
    assert lcond(res, "b", "Conflicted")["reason"] == "HostnameConflict"
    assert lcond(res, "c", "Conflicted")["reason"] == "ProtocolConflict"
    old = gateway("old", listeners=[listener("h", 80)], created="2020-01-01T00:00:00Z")
    new = gateway("new", listeners=[listener("s", 8080, "HTTPS", tls={"certificateRefs": [{"name": "shop-tls"}]})])
    res = run([gatewayclass(), old, new, tls_secret()], port_map={80: 8080})
    assert lcond(res, "h", "Conflicted", gw="old")["status"] == "False"
    assert lcond(res, "s", "Conflicted", gw="new")["reason"] == "ProtocolConflict"
    # same hostname on another Gateway does not conflict; same protocol merges into one listener
    other = gateway("other", listeners=[listener("a", 80, "HTTP", hostname="x.com")])
    res = run([gatewayclass(), gateway(listeners=[listener("a", 80, "HTTP", hostname="x.com")]), other])
    assert lcond(res, "a", "Conflicted", gw="other")["status"] == "False"
    assert len(config(res)["listeners"]) == 1


def test_https_listener_certificates() -> None:
    gw = gateway(listeners=[
        listener("https", 443, "HTTPS", hostname="shop.example.com", tls={"certificateRefs": [{"name": "shop-tls"}]}),
        listener("any", 443, "HTTPS", tls={"certificateRefs": [{"name": "wild-tls"}]}),
    ])
    res = run([gatewayclass(), gw, tls_secret(), tls_secret("wild-tls", cn="w.example.com")])
    assert lcond(res, "https", "ResolvedRefs")["status"] == "True"
    assert sorted(res.tls_files) == ["apps.shop-tls.pfx", "apps.wild-tls.pfx"]
    certs = config(res)["certificates"]["items"]
    assert certs == [{"file": "apps.shop-tls.pfx", "hosts": ["shop.example.com"]},
                     {"file": "apps.wild-tls.pfx", "hosts": [], "default": True}]
    assert config(res)["listeners"] == [{"host": "0.0.0.0", "port": 8443, "type": "transparent", "decryptSsl": True}]
    assert [c.source for c in res.certificates] == ["apps/shop-tls", "apps/wild-tls"]
    assert b"PRIVATE" not in res.config


def test_default_certificate_oldest_gateway_wins() -> None:
    a = gateway("a", listeners=[listener("s", 443, "HTTPS", tls={"certificateRefs": [{"name": "a-tls"}]})],
                created="2024-05-01T00:00:00Z")
    b = gateway("b", listeners=[listener("s", 443, "HTTPS", tls={"certificateRefs": [{"name": "b-tls"}]})],
                created="2023-05-01T00:00:00Z")
    res = run([gatewayclass(), a, b, tls_secret("a-tls"), tls_secret("b-tls")])
    items = config(res)["certificates"]["items"]
    assert [i.get("default", False) for i in items] == [False, True]


def test_certificate_errors() -> None:
    def one(ref, *extra):  # type: ignore[no-untyped-def]
        gw = gateway(listeners=[listener("s", 443, "HTTPS", tls={"certificateRefs": [ref]})])
        return run([gatewayclass(), gw, route(parents=[{"name": "web"}]), *extra])

    missing = one({"name": "nope"})
    assert lcond(missing, "s", "ResolvedRefs")["reason"] == "InvalidCertificateRef"
    assert lcond(missing, "s", "Programmed")["status"] == "False"
    # the route still attaches (counted) but is not served
    assert listener_status(missing, "s")["attachedRoutes"] == 1
    assert config(missing)["routes"] == []
    bad = one({"name": "shop-tls"}, {**tls_secret(), "data": {"tls.crt": "Zm9v", "tls.key": "Zm9v"}})
    assert lcond(bad, "s", "ResolvedRefs")["reason"] == "InvalidCertificateRef"
    assert bad.tls_files == {}
    kind = one({"name": "shop-tls", "kind": "ConfigMap"}, tls_secret())
    assert lcond(kind, "s", "ResolvedRefs")["reason"] == "InvalidCertificateRef"
    cross = one({"name": "shop-tls", "namespace": "certs"}, tls_secret(ns="certs"))
    assert lcond(cross, "s", "ResolvedRefs")["reason"] == "RefNotPermitted"
    granted = one({"name": "shop-tls", "namespace": "certs"}, tls_secret(ns="certs"),
                  grant("certs", "Gateway", "apps", "Secret"))
    assert lcond(granted, "s", "ResolvedRefs")["status"] == "True"
    assert "certs.shop-tls.pfx" in granted.tls_files
    no_refs = run([gatewayclass(), gateway(listeners=[listener("s", 443, "HTTPS")])])
    assert lcond(no_refs, "s", "ResolvedRefs")["reason"] == "InvalidCertificateRef"


def test_attached_routes_count_only_the_routes_accepted_on_each_listener() -> None:
    """v1.6 ListenerStatus.attachedRoutes: the routes Accepted on the listener, nothing else."""
    gw = gateway(listeners=[listener("a", hostname="a.example.com"), listener("b", hostname="*.b.example.com"),
                            listener("all")])
    res = run([gatewayclass(), gw,
               route("to-a", hostnames=["a.example.com", "x.example.org"]),  # a and all
               route("to-b", hostnames=["c.b.example.com"]),  # b and all
               route("nowhere", hostnames=["x.example.org"], parents=[{"name": "web", "sectionName": "a"}]),
               route("bad-rule", hostnames=["a.example.com"],  # Accepted=False: UnsupportedValue
                     rules=[{"backendRefs": [{"name": "api", "port": 8080}], "retry": {"attempts": 2}}]),
               route("by-section", parents=[{"name": "web", "sectionName": "b"}])])  # b only
    assert {name: listener_status(res, name)["attachedRoutes"] for name in ("a", "b", "all")} == {
        "a": 1, "b": 2, "all": 2}
    bad = status_of(res, "HTTPRoute", "apps", "bad-rule").status["parents"][0]["conditions"]
    assert cond(bad, "Accepted")["reason"] == "UnsupportedValue"
    nowhere = status_of(res, "HTTPRoute", "apps", "nowhere").status["parents"][0]["conditions"]
    assert cond(nowhere, "Accepted")["reason"] == "NoMatchingListenerHostname"


def test_addresses_from_data_plane_service() -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "titanium", "namespace": "gateway-system"},
           "spec": {"clusterIP": "10.96.0.10"}, "status": {"loadBalancer": {"ingress": [{"ip": "172.18.0.5"}]}}}
    res = run([gatewayclass(), gateway(), svc])
    assert status_of(res, "Gateway", "apps", "web").status["addresses"] == [{"type": "IPAddress",
                                                                            "value": "172.18.0.5"}]
    del svc["status"]
    res = run([gatewayclass(), gateway(), svc])
    assert status_of(res, "Gateway", "apps", "web").status["addresses"] == [{"type": "IPAddress",
                                                                            "value": "10.96.0.10"}]


def test_allowed_routes_namespaces() -> None:
    ns_obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"env": "prod"}}}
    sel = listener(allowedRoutes={"namespaces": {"from": "Selector", "selector": {
        "matchLabels": {"env": "prod"},
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team"]}]}}})
    objs = [gatewayclass(), gateway(listeners=[sel]), ns_obj,
            route(ns="team", parents=[{"name": "web", "namespace": "apps"}]),
            route(name="same", parents=[{"name": "web"}])]
    res = run(objs)
    assert cond(status_of(res, "HTTPRoute", "team", "shop").status["parents"][0]["conditions"],
                "Accepted")["status"] == "True"
    assert cond(status_of(res, "HTTPRoute", "apps", "same").status["parents"][0]["conditions"],
                "Accepted")["reason"] == "NotAllowedByListeners"
    assert listener_status(res, "http")["attachedRoutes"] == 1
    same = run([gatewayclass(), gateway(), route(ns="team", parents=[{"name": "web", "namespace": "apps"}])])
    assert cond(status_of(same, "HTTPRoute", "team", "shop").status["parents"][0]["conditions"],
                "Accepted")["reason"] == "NotAllowedByListeners"


def test_selector_semantics() -> None:
    labels = {"a": "1", "b": "2"}
    assert selector_matches({}, labels)
    assert selector_matches({"matchExpressions": [{"key": "c", "operator": "DoesNotExist"}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, labels)
    assert selector_matches({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, labels)
    assert not selector_matches("x", labels)


def test_hostname_helpers() -> None:
    assert host_matches("*.example.com", "a.b.example.com")
    assert not host_matches("*.example.com", "example.com")
    assert intersect_hostname(None, "a.com") == "a.com"
    assert intersect_hostname("*.example.com", "a.example.com") == "a.example.com"
    assert intersect_hostname("a.example.com", "*.example.com") == "a.example.com"
    assert intersect_hostname("*.example.com", "*.a.example.com") == "*.a.example.com"
    assert intersect_hostname("a.com", "b.com") is None


def test_existing_last_transition_time_kept() -> None:
    first = run([gatewayclass(), gateway()], now="2025-01-01T00:00:00Z")
    gw = gateway()
    gw["status"] = dict(status_of(first, "Gateway", "apps", "web").status)
    again = run([gatewayclass(), gw], now="2026-01-01T00:00:00Z")
    assert gw_cond(again, "Accepted")["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert lcond(again, "http", "Accepted")["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert yaml.safe_dump(status_of(again, "Gateway", "apps", "web").status)


def test_invalid_listener_hostname_is_not_accepted() -> None:
    gw = gateway(listeners=[listener("bad", 80, hostname="a..b"), listener("ok", 80, hostname="OK.example.com")])
    res = run([gatewayclass(), gw])
    assert lcond(res, "bad", "Accepted")["reason"] == "UnsupportedValue"
    assert "hostname" in lcond(res, "bad", "Accepted")["message"]
    assert lcond(res, "ok", "Accepted")["status"] == "True"


def test_listener_messages_are_bounded() -> None:
    gw = gateway(listeners=[listener("s", 443, "HTTPS", tls={"certificateRefs": [{"name": "x" * 70000}]})])
    res = run([gatewayclass(), gw])
    assert len(lcond(res, "s", "ResolvedRefs")["message"]) <= 1100
