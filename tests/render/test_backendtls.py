"""BackendTLSPolicy: which policy a backend uses, what its cluster becomes, the policy's status
(render/backendtls.py). The golden cases backendtlspolicy-honoured and -fails-closed show the
whole output; these tests pin the rules one by one."""

from __future__ import annotations

from typing import Any

import pytest

from titanium_gateway.render import RenderCache, render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.render.statusmerge import final_status

from .core_fixtures import (
    CONTROLLER,
    GW_API,
    base_objects,
    cond,
    config,
    gateway,
    key_and_cert,
    parent_cond,
    route,
    run,
    status_of,
)


def policy(name: str = "api-tls", target: str = "api", section: str | None = None, ca: str | None = "api-ca",
           hostname: str = "api.internal", created: str = "2024-02-01T00:00:00Z", ns: str = "apps",
           **validation: Any) -> dict[str, Any]:
    ref: dict[str, Any] = {"group": "", "kind": "Service", "name": target}
    if section:
        ref["sectionName"] = section
    val: dict[str, Any] = {"hostname": hostname, **validation}
    if ca is not None:
        val["caCertificateRefs"] = [{"group": "", "kind": "ConfigMap", "name": ca}]
    return {"apiVersion": GW_API, "kind": "BackendTLSPolicy",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": created, "generation": 3},
            "spec": {"targetRefs": [ref], "validation": val}}


def ca_map(name: str = "api-ca", ns: str = "apps", pem: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": {"ca.crt": pem if pem is not None else key_and_cert("Test CA")[0].decode()}}


def the_cluster(result) -> dict[str, Any]:
    (cluster,) = config(result)["clusters"]
    return cluster


def ancestors(result, name: str = "api-tls") -> list[dict[str, Any]]:
    return status_of(result, "BackendTLSPolicy", "apps", name).status["ancestors"]


def test_a_policy_makes_its_backends_tls_with_its_ca_and_name() -> None:
    result = run([*base_objects(), route(), policy(), ca_map()])
    cluster = the_cluster(result)
    assert [d["useHttps"] for d in cluster["destinations"]] == [True]
    assert cluster["httpClient"] == {"tls": {"caFile": "backendtls.apps.api-tls.ca.crt", "serverName": "api.internal"}}
    assert result.tls_files["backendtls.apps.api-tls.ca.crt"] == key_and_cert("Test CA")[0]
    (entry,) = ancestors(result)
    assert entry["ancestorRef"] == {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "apps",
                                    "name": "web"}
    assert entry["controllerName"] == CONTROLLER
    assert cond(entry["conditions"], "Accepted")["status"] == "True"
    assert {c["observedGeneration"] for c in entry["conditions"]} == {3}
    assert parent_cond(result, "ResolvedRefs")["status"] == "True"  # the route's references resolve


def test_the_policy_of_the_port_name_beats_the_services() -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "apps"},
           "spec": {"ports": [{"name": "https", "port": 8080, "targetPort": 9000}]}}
    objs = [*base_objects()[:2], svc, base_objects()[3], route(), ca_map(),
            policy("whole", hostname="whole.internal", created="2020-01-01T00:00:00Z"),
            policy("port", section="https", hostname="port.internal")]
    result = run(objs)
    assert the_cluster(result)["httpClient"]["tls"]["serverName"] == "port.internal"
    for name in ("whole", "port"):  # not a conflict: different targets
        assert cond(ancestors(result, name)[0]["conditions"], "Accepted")["reason"] == "Accepted"


@pytest.mark.parametrize(("created_a", "created_b", "winner"), [
    ("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", "a"),
    ("2024-01-02T00:00:00Z", "2024-01-01T00:00:00Z", "b"),
    ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z", "a"),  # a tie: namespace/name
])
def test_the_older_policy_on_one_target_wins_the_other_is_conflicted(created_a, created_b, winner) -> None:
    result = run([*base_objects(), route(), ca_map(), policy("b", hostname="b.internal", created=created_b),
                  policy("a", hostname="a.internal", created=created_a)])
    loser = "b" if winner == "a" else "a"
    assert the_cluster(result)["httpClient"]["tls"]["serverName"] == f"{winner}.internal"
    assert cond(ancestors(result, winner)[0]["conditions"], "Accepted")["reason"] == "Accepted"
    lost = cond(ancestors(result, loser)[0]["conditions"], "Accepted")
    assert (lost["status"], lost["reason"]) == ("False", "Conflicted")
    assert f"BackendTLSPolicy apps/{winner}" in lost["message"]


@pytest.mark.parametrize(("objects", "resolved", "accepted", "in_message"), [
    ([], "InvalidCACertificateRef", "NoValidCACertificate", "ConfigMap apps/api-ca not found"),
    ([ca_map(pem="")], "InvalidCACertificateRef", "NoValidCACertificate", "has no ca.crt"),
    ([ca_map(pem="-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")], "InvalidCACertificateRef",
     "NoValidCACertificate", "is not PEM certificates"),
])
def test_a_ca_that_does_not_resolve_refuses_the_backend(objects, resolved, accepted, in_message) -> None:
    result = run([*base_objects(), route(), policy(), *objects])
    cluster = the_cluster(result)
    assert cluster["destinations"] == [] and "httpClient" not in cluster  # 503, never plaintext
    conds = ancestors(result)[0]["conditions"]
    assert (cond(conds, "ResolvedRefs")["reason"], cond(conds, "Accepted")["reason"]) == (resolved, accepted)
    assert in_message in cond(conds, "ResolvedRefs")["message"]
    assert result.tls_files.get("backendtls.apps.api-tls.ca.crt") is None


def test_a_configmap_outside_the_read_namespaces_says_so() -> None:
    result = run([*base_objects(), route(), policy()], secret_namespaces=("titanium-system",))
    message = cond(ancestors(result)[0]["conditions"], "ResolvedRefs")["message"]
    assert "cannot be read: the controller reads ConfigMaps in titanium-system only" in message


def test_unreadable_configmaps_refuse_rather_than_trust_a_stale_ca() -> None:
    snap = Snapshot.from_objects([*base_objects(), route(), policy(), ca_map()],
                                 unreadable={"ConfigMap": "403 Forbidden"})
    result = render(snap, RenderOptions())
    assert the_cluster(result)["destinations"] == []
    assert "ConfigMaps cannot be read (403 Forbidden)" in cond(ancestors(result)[0]["conditions"], "ResolvedRefs")["message"]


def test_system_roots_and_subject_alt_names() -> None:
    sans = [{"type": "Hostname", "hostname": "API.example.com"}, {"type": "URI", "uri": "spiffe://td/ns/apps/sa/api"}]
    result = run([*base_objects(), route(), policy(ca=None, wellKnownCACertificates="System", subjectAltNames=sans)])
    assert the_cluster(result)["httpClient"]["tls"] == {
        "serverName": "api.internal", "systemRoots": True,
        "subjectAltNames": [{"type": "Hostname", "value": "api.example.com"},
                            {"type": "URI", "value": "spiffe://td/ns/apps/sa/api"}]}


@pytest.mark.parametrize(("validation", "spec", "in_message"), [
    ({"wellKnownCACertificates": "Mozilla"}, {}, "wellKnownCACertificates 'Mozilla' is not supported"),
    ({"subjectAltNames": [{"type": "IPAddress", "ipAddress": "10.0.0.1"}]}, {}, "type 'IPAddress' is not supported"),
    ({"subjectAltNames": [{"type": "URI", "uri": "not a uri"}]}, {}, "is not an absolute URI"),
    ({"hostname": "*.wild.internal"}, {}, "is not a valid host name"),
    ({}, {"options": {"example.com/min-version": "1.3"}}, "spec.options are not supported"),
    ({"futureField": True}, {}, "spec.validation.futureField is not supported"),
])
def test_what_cannot_be_honoured_is_invalid_and_refused(validation, spec, in_message) -> None:
    pol = policy(**{k: v for k, v in validation.items() if k != "hostname"},
                 **({"hostname": validation["hostname"]} if "hostname" in validation else {}))
    if "wellKnownCACertificates" in validation:
        del pol["spec"]["validation"]["caCertificateRefs"]
    pol["spec"].update(spec)
    result = run([*base_objects(), route(), pol, ca_map()])
    assert the_cluster(result)["destinations"] == []
    accepted = cond(ancestors(result)[0]["conditions"], "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "Invalid")
    assert in_message in accepted["message"]


def test_one_invalid_reference_among_valid_ones_still_refuses() -> None:
    pol = policy()
    pol["spec"]["validation"]["caCertificateRefs"].append({"group": "", "kind": "ConfigMap", "name": "gone"})
    result = run([*base_objects(), route(), pol, ca_map()])
    assert the_cluster(result)["destinations"] == []
    conds = ancestors(result)[0]["conditions"]
    assert cond(conds, "Accepted")["status"] == "True"
    assert cond(conds, "ResolvedRefs")["reason"] == "InvalidCACertificateRef"


def test_ancestors_are_the_gateways_the_service_is_used_through() -> None:
    objs = [*base_objects(), gateway("web2", listeners=[{"name": "http", "port": 80, "protocol": "HTTP",
                                                          "hostname": "b.example.com"}]),
            route(parents=[{"name": "web"}, {"name": "web2"}, {"name": "nowhere"}]), policy(), ca_map(),
            policy("idle", target="idle")]
    result = run(objs)
    assert [a["ancestorRef"]["name"] for a in ancestors(result)] == ["web", "web2"]
    assert not [s for s in result.statuses if s.kind == "BackendTLSPolicy" and s.name == "idle"]


def test_no_churn_and_no_stale_entries() -> None:
    """The status written back renders the same status (transition times kept); a policy no
    longer used by our Gateways loses our entry and keeps the others'."""
    objs = [*base_objects(), route(), policy(), ca_map()]
    first = run(objs, now="2026-01-01T00:00:00Z")
    st = status_of(first, "BackendTLSPolicy", "apps", "api-tls")
    theirs = {"ancestorRef": {"name": "other"}, "controllerName": "example.com/x", "conditions": []}
    written = {**objs[-2], "status": final_status("BackendTLSPolicy", {"status": {"ancestors": [theirs]}}, st.status,
                                                  CONTROLLER)}
    again = run([*objs[:-2], written, objs[-1]], now="2026-02-01T00:00:00Z")
    assert status_of(again, "BackendTLSPolicy", "apps", "api-tls").status == st.status
    unused = run([*base_objects(), route(rules=[]), written, objs[-1]], now="2026-02-01T00:00:00Z")
    (released,) = [r for r in unused.released if r.kind == "BackendTLSPolicy"]
    assert final_status("BackendTLSPolicy", written, released.status, CONTROLLER) == {"ancestors": [theirs]}


def test_a_policy_change_reaches_a_replayed_route() -> None:
    """The route translations replayed from the cache depend on the policies and their ConfigMaps."""
    def versioned(obj: dict[str, Any], rv: str) -> dict[str, Any]:
        return {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv, "uid": obj["metadata"]["name"]}}

    base = [versioned(o, "1") for o in (*base_objects(), route())]
    cache = RenderCache()
    options = RenderOptions()
    render(Snapshot.from_objects(base), options, cache)
    first = render(Snapshot.from_objects([*base, versioned(policy(), "1"), versioned(ca_map(), "1")]), options, cache)
    assert the_cluster(first)["httpClient"]["tls"]["serverName"] == "api.internal"
    other_ca = key_and_cert("Other CA")[0].decode()
    second = render(Snapshot.from_objects([*base, versioned(policy(hostname="new.internal"), "2"),
                                           versioned(ca_map(pem=other_ca), "2")]), options, cache)
    assert the_cluster(second)["httpClient"]["tls"]["serverName"] == "new.internal"
    assert second.tls_files["backendtls.apps.api-tls.ca.crt"] == other_ca.encode()
