"""Fixtures of the fake API server's own tests: a started server and official-client APIs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.support.apiserver import FakeApiServer


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_interval=0.2) as s:
        yield s


@pytest.fixture
def api(server: FakeApiServer) -> Iterator[client.ApiClient]:
    ac = server.api_client()
    yield ac
    ac.close()


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def status_of(exc: Any) -> dict[str, Any]:
    """The Status object of an ApiException."""
    import json

    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["code"] == exc.status
    return body


def condition(ctype: str, status: str = "True", reason: str = "Accepted", generation: int = 1) -> dict[str, Any]:
    """A metav1.Condition the Gateway API CRD schemas accept."""
    return {"type": ctype, "status": status, "reason": reason, "message": "", "observedGeneration": generation,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}
