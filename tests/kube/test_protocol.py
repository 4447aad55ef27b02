"""RestApi and the fake implement exactly the KubeApi protocol's signatures."""

from __future__ import annotations

import inspect

import pytest

from titanium_gateway.kube.api import KubeApi
from titanium_gateway.kube.rest import RestApi

from .fakeapi import FakeKubeApi

METHODS = ["list", "watch", "get", "get_metadata", "create", "replace", "patch", "delete"]


def params(cls: type, name: str) -> list[tuple[str, object, object]]:
    sig = inspect.signature(getattr(cls, name))
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


@pytest.mark.parametrize("impl", [RestApi, FakeKubeApi])
@pytest.mark.parametrize("method", METHODS)
def test_signature_matches_protocol(impl: type, method: str) -> None:
    assert params(impl, method) == params(KubeApi, method)
