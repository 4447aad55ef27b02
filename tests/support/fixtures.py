"""Ready-made pytest fixtures over the fakes. Import the ones you need in a conftest.py::

    from tests.support.fixtures import data_plane, fake_apiserver, kube_client, release  # noqa: F401

(``pytest_plugins`` is only allowed in the root conftest, so import them instead.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.apiserver import FakeApiServer
from tests.support.dataplane import DataPlaneFleet
from tests.support.release import Release, seed_release


@pytest.fixture
def fake_apiserver() -> Iterator[FakeApiServer]:
    """A started FakeApiServer (bookmarks every 0.5 s)."""
    with FakeApiServer(bookmark_interval=0.5) as server:
        yield server


@pytest.fixture
def kube_client(fake_apiserver: FakeApiServer) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` for the fake server."""
    api = fake_apiserver.api_client()
    yield api
    api.close()


@pytest.fixture
def release(fake_apiserver: FakeApiServer) -> Release:
    """The chart's release seeded in the fake server, with the chart's RBAC enforced."""
    return seed_release(fake_apiserver)


@pytest.fixture
def data_plane(fake_apiserver: FakeApiServer, release: Release) -> Iterator[DataPlaneFleet]:
    """Two stub data-plane pods registered as the release's data plane (Service, Pods,
    EndpointSlice, Deployment), loading the root ConfigMap like kubelet-mounted volumes."""
    with DataPlaneFleet.start(2, release.token) as fleet:
        fleet.register(fake_apiserver, release.namespace, release.data_plane, deployment=release.data_plane,
                       labels=release.data_plane_labels)
        fleet.follow(fake_apiserver, release.namespace, release.config_map)
        yield fleet
