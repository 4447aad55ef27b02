"""render/result.py: the fast constructor of ObjectStatus makes the very object the dataclass makes."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from titanium_gateway.render.result import ObjectStatus


@pytest.mark.parametrize("fields", [
    ("gateway.networking.k8s.io/v1", "HTTPRoute", "apps", "web", {"parents": []}),
    ("networking.k8s.io/v1", "Ingress", "", "x", {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}),
])
def test_of_is_the_dataclass(fields: tuple) -> None:
    made, fast = ObjectStatus(*fields), ObjectStatus.of(*fields)
    assert type(fast) is ObjectStatus
    assert fast == made and repr(fast) == repr(made)
    assert fast.__dict__ == made.__dict__ and list(fast.__dict__) == list(made.__dict__)
    assert dataclasses.astuple(fast) == dataclasses.astuple(made)
    assert fast.key == made.key == (fields[1], fields[2], fields[3])
    assert pickle.loads(pickle.dumps(fast)) == made
    assert copy.deepcopy(fast) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.name = "other"  # type: ignore[misc]
