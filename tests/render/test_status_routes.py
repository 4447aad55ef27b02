"""render/status/routes.py: a route's status built from its typed outcome."""

from __future__ import annotations

from titanium_gateway.render.status.routes import RouteParentOutcome, RouteParents, RouteStatusOutcome

NOW = "2026-01-01T00:00:00Z"
REF = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "web"}
OLD = [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "x",
        "lastTransitionTime": "2025-01-01T00:00:00Z"}]
ACCEPTED = ("Accepted", True, "Accepted", "ok")
RESOLVED = ("ResolvedRefs", False, "BackendNotFound", "Service apps/x not found")


def _outcome(name: str, *parents: RouteParentOutcome, generation: int = 3) -> RouteStatusOutcome:
    return RouteStatusOutcome("HTTPRoute", "apps", name, generation, parents)


def test_entries_in_order_with_their_conditions_and_kept_transition_times() -> None:
    built = RouteParents("example.com/ctl", NOW).status(
        _outcome("r", RouteParentOutcome(REF, (ACCEPTED, RESOLVED), OLD),
                 RouteParentOutcome({**REF, "sectionName": "b"}, (("Accepted", False, "NoMatchingParent", "no"),))))
    assert built.key == ("HTTPRoute", "apps", "r")
    assert built.api_version == "gateway.networking.k8s.io/v1"
    first, second = built.status["parents"]
    assert first["parentRef"] is REF and first["controllerName"] == "example.com/ctl"
    assert first["conditions"] == [
        {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "ok", "observedGeneration": 3,
         "lastTransitionTime": "2025-01-01T00:00:00Z"},
        {"type": "ResolvedRefs", "status": "False", "reason": "BackendNotFound",
         "message": "Service apps/x not found", "observedGeneration": 3, "lastTransitionTime": NOW}]
    assert [c["lastTransitionTime"] for c in second["conditions"]] == [NOW]


def test_equal_outcomes_share_one_condition_list_and_note_whether_it_stamped_now() -> None:
    parents = RouteParents("ctl", NOW)
    made: list = []
    one = parents.status(_outcome("a", RouteParentOutcome(REF, (ACCEPTED,), OLD)), made)
    two = parents.status(_outcome("b", RouteParentOutcome(REF, (ACCEPTED,), [dict(OLD[0])])), made)
    other = parents.status(_outcome("c", RouteParentOutcome(REF, (ACCEPTED,), [])), made)
    newer = parents.status(_outcome("d", RouteParentOutcome(REF, (ACCEPTED,), OLD), generation=4))
    conds = [s.status["parents"][0]["conditions"] for s in (one, two, other, newer)]
    assert conds[0] is conds[1] and conds[2] is not conds[0]
    assert conds[2][0]["lastTransitionTime"] == NOW and conds[3][0]["observedGeneration"] == 4
    assert [c.stamped for c in made] == [False, False, True]


def test_a_gateway_class_status_from_its_outcome() -> None:
    from titanium_gateway.render.status.gatewayclass import GatewayClassOutcome, status

    made: list = []
    built = status(GatewayClassOutcome("ours", 2, ("Accepted", True, "Accepted", "ok"), [{"name": "Gateway"}], OLD),
                   NOW, made)
    assert built.key == ("GatewayClass", "", "ours")
    assert built.status == {"conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "ok",
                                            "observedGeneration": 2, "lastTransitionTime": "2025-01-01T00:00:00Z"}],
                            "supportedFeatures": [{"name": "Gateway"}]}
    assert [c.stamped for c in made] == [False]
    assert "supportedFeatures" not in status(GatewayClassOutcome("ours", 1, ("Accepted", True, "Accepted", "ok"),
                                                                 None), NOW).status


def test_a_policy_status_from_its_outcome_has_ancestor_entries() -> None:
    from titanium_gateway.render.status.policies import AncestorOutcome, PolicyStatusOutcome, status

    ref = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "apps", "name": "web"}
    built = status(RouteParents("ctl", NOW), PolicyStatusOutcome(
        "BackendTLSPolicy", "apps", "p", 1, (AncestorOutcome(ref, (ACCEPTED, RESOLVED), OLD),)))
    assert built.key == ("BackendTLSPolicy", "apps", "p")
    (entry,) = built.status["ancestors"]
    assert entry["ancestorRef"] is ref and entry["controllerName"] == "ctl"
    assert [(c["type"], c["status"], c["lastTransitionTime"]) for c in entry["conditions"]] == [
        ("Accepted", "True", "2025-01-01T00:00:00Z"), ("ResolvedRefs", "False", NOW)]


def test_ingress_statuses_from_their_outcomes_share_one_body_per_address_set() -> None:
    from titanium_gateway.render.status.ingress import IngressOutcome, IngressStatuses

    statuses = IngressStatuses()
    addresses = ({"ip": "203.0.113.7"}, {"hostname": "lb.example.com"})
    one = statuses.status(IngressOutcome("apps", "a", addresses))
    two = statuses.status(IngressOutcome("apps", "b", tuple(dict(a) for a in addresses)))
    none = statuses.status(IngressOutcome("apps", "c", ()))
    assert (one.api_version, one.key) == ("networking.k8s.io/v1", ("Ingress", "apps", "a"))
    assert one.status == {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}, {"hostname": "lb.example.com"}]}}
    assert two.status is one.status and none.status == {"loadBalancer": {"ingress": []}}
