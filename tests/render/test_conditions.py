from __future__ import annotations

from titanium_gateway.render.status.conditions import (
    ConditionList,
    existing_conditions,
    generation,
    make_condition,
)


def test_generation_defaults_to_one() -> None:
    assert generation({}) == 1
    assert generation({"metadata": {"generation": "3"}}) == 1
    assert generation({"metadata": {"generation": True}}) == 1
    assert generation({"metadata": {"generation": 7}}) == 7


def test_last_transition_time_kept_only_when_status_and_reason_unchanged() -> None:
    prev = [{"type": "Accepted", "status": "True", "reason": "Accepted", "lastTransitionTime": "old"}]
    same = make_condition("Accepted", True, "Accepted", "m", observed_generation=2, now="new", previous=prev)
    assert same["lastTransitionTime"] == "old" and same["observedGeneration"] == 2
    other_reason = make_condition("Accepted", True, "ListenersNotValid", "m", observed_generation=2, now="new",
                                  previous=prev)
    assert other_reason["lastTransitionTime"] == "new"
    flipped = make_condition("Accepted", False, "Accepted", "m", observed_generation=2, now="new", previous=prev)
    assert flipped["lastTransitionTime"] == "new"
    fresh = make_condition("Programmed", True, "Programmed", "", observed_generation=1, now="new", previous=prev)
    assert fresh["lastTransitionTime"] == "new"


def test_condition_list_keeps_insertion_order_and_replaces() -> None:
    obj = {"metadata": {"generation": 4}}
    cl = ConditionList(obj, previous=existing_conditions({"conditions": ["junk", {"type": "X"}]}), now="t")
    cl.set("Accepted", True, "Accepted")
    cl.set("Programmed", False, "Invalid", "placeholder")
    cl.set("ResolvedRefs", True, "ResolvedRefs")
    cl.set("Programmed", True, "Programmed")
    assert [c["type"] for c in cl.as_list()] == ["Accepted", "Programmed", "ResolvedRefs"]
    assert cl.get("Programmed") == {"type": "Programmed", "status": "True", "reason": "Programmed", "message": "",
                                    "observedGeneration": 4, "lastTransitionTime": "t"}


def test_existing_conditions_tolerates_garbage() -> None:
    assert existing_conditions(None) == []
    assert existing_conditions({"conditions": "x"}) == []
