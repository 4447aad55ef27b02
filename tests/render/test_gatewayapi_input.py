"""What the cluster serves of the Gateway API as the render's input: grants that cannot be read
refuse every cross-namespace reference, and the GatewayClass says which bundle it found and
writes ``status.supportedFeatures`` only where the served CRD has the field."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from tests.render.core_fixtures import (
    cond,
    endpoints,
    gateway,
    gatewayclass,
    grant,
    listener,
    listener_status,
    route,
    service,
    status_of,
    tls_secret,
)
from titanium_gateway.render import RenderCache, RenderOptions, render
from titanium_gateway.render.features import SUPPORTED_FEATURES
from titanium_gateway.render.gatewayapi import FEATURES_AS_OBJECTS, FEATURES_AS_STRINGS, GatewayApiInfo
from titanium_gateway.render.snapshot import Snapshot

GW = "gateway.networking.k8s.io"
V1_6_3 = GatewayApiInfo(bundle="v1.6.3 (standard)", watched=MappingProxyType(
    {k: f"{GW}/v1" for k in ("GatewayClass", "Gateway", "HTTPRoute", "ReferenceGrant")}),
    supported_features=FEATURES_AS_OBJECTS)
UNREADABLE = MappingProxyType({"ReferenceGrant": "gateway.networking.k8s.io/v1 referencegrants cannot be read: "
                                                 "403 Forbidden: no"})


def snap(objects: list[dict[str, Any]], **kw: Any) -> Snapshot:
    return Snapshot.from_objects(objects, **kw)


def cross_namespace() -> list[dict[str, Any]]:
    return [gatewayclass(), gateway(listeners=[listener(), listener("s", 443, "HTTPS", tls={
        "certificateRefs": [{"name": "shop-tls", "namespace": "certs"}]})]),
        route(rules=[{"backendRefs": [{"name": "api", "namespace": "backends", "port": 8080}]}]),
        route("local", hostnames=["local.example.com"]),
        service(ns="backends"), endpoints(ns="backends"), service(), endpoints(), tls_secret(ns="certs"),
        grant("backends", "HTTPRoute", "apps", "Service"), grant("certs", "Gateway", "apps", "Secret")]


def parent(result: Any, name: str = "shop") -> list[dict[str, Any]]:
    return status_of(result, "HTTPRoute", "apps", name).status["parents"][0]["conditions"]


def test_grants_that_cannot_be_read_refuse_every_cross_namespace_reference() -> None:
    known = render(snap(cross_namespace()), RenderOptions())
    assert cond(parent(known), "ResolvedRefs")["status"] == "True"
    assert cond(listener_status(known, "s")["conditions"], "ResolvedRefs")["status"] == "True"
    unknown = render(snap(cross_namespace(), unreadable=UNREADABLE), RenderOptions())
    refs = cond(parent(unknown), "ResolvedRefs")
    assert refs["reason"] == "RefNotPermitted"
    assert refs["message"] == ("Service backends/api is in another namespace and the ReferenceGrants could not be "
                               f"read ({UNREADABLE['ReferenceGrant']})")
    tls = cond(listener_status(unknown, "s")["conditions"], "ResolvedRefs")
    assert tls["reason"] == "RefNotPermitted" and "Secret certs/shop-tls" in tls["message"]
    assert "could not be read" in tls["message"]
    assert cond(parent(unknown, "local"), "ResolvedRefs")["status"] == "True"  # same namespace: no grant needed
    assert unknown.tls_files == {} and known.tls_files


def test_the_route_memo_follows_the_grants_becoming_unknown() -> None:
    cache = RenderCache()
    objs = cross_namespace()
    first = render(snap(objs), RenderOptions(), cache)
    unknown = render(snap(objs, unreadable=UNREADABLE), RenderOptions(), cache)
    again = render(snap(objs), RenderOptions(), cache)
    assert [cond(parent(r), "ResolvedRefs")["status"] for r in (first, unknown, again)] == ["True", "False", "True"]


def gatewayclass_status(**kw: Any) -> dict[str, Any]:
    res = render(snap([gatewayclass()], **kw), RenderOptions())
    return dict(status_of(res, "GatewayClass", "", "titanium").status)


def test_supported_features_only_where_the_served_crd_has_the_field() -> None:
    assert "supportedFeatures" not in gatewayclass_status()  # offline: unknown
    assert "supportedFeatures" not in gatewayclass_status(gateway_api=GatewayApiInfo(bundle="v1.2.1 (standard)"))
    objects = gatewayclass_status(gateway_api=V1_6_3)["supportedFeatures"]
    assert objects == [{"name": name} for name in SUPPORTED_FEATURES]
    assert [f["name"] for f in objects] == sorted(f["name"] for f in objects)  # the CRD requires the order
    strings = GatewayApiInfo(supported_features=FEATURES_AS_STRINGS)
    assert gatewayclass_status(gateway_api=strings)["supportedFeatures"] == list(SUPPORTED_FEATURES)


def test_the_gatewayclass_message_names_the_bundle_and_what_the_cluster_lacks() -> None:
    def message(**kw: Any) -> str:
        return str(cond(gatewayclass_status(**kw)["conditions"], "Accepted")["message"])

    assert message() == "GatewayClass is accepted by this controller"
    assert message(gateway_api=V1_6_3) == "GatewayClass is accepted by this controller; Gateway API CRDs v1.6.3 (standard)"
    no_grants = GatewayApiInfo(bundle="", watched=MappingProxyType({"GatewayClass": f"{GW}/v1"}))
    assert message(gateway_api=no_grants) == (
        "GatewayClass is accepted by this controller; Gateway API CRDs of mixed or unknown bundles; "
        "ReferenceGrant is not installed: cross-namespace references are refused")
    assert message(gateway_api=V1_6_3, unreadable=UNREADABLE) == (
        "GatewayClass is accepted by this controller; Gateway API CRDs v1.6.3 (standard); ReferenceGrant cannot be "
        f"read ({UNREADABLE['ReferenceGrant']}): cross-namespace references are refused")
