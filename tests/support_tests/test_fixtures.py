"""The shared fixtures wire the fake server, the seeded release and the stub data plane together."""

from __future__ import annotations

import time

import requests
from kubernetes import client

from tests.support.apiserver import FakeApiServer
from tests.support.dataplane import DataPlaneFleet, sha256_hex
from tests.support.fixtures import data_plane, fake_apiserver, kube_client, release  # noqa: F401
from tests.support.release import Release


def test_data_plane_loads_what_the_controller_would_write(fake_apiserver: FakeApiServer,  # noqa: F811
                                                          kube_client: client.ApiClient,  # noqa: F811
                                                          release: Release,  # noqa: F811
                                                          data_plane: DataPlaneFleet) -> None:  # noqa: F811
    core = client.CoreV1Api(kube_client)
    eps = client.DiscoveryV1Api(kube_client).list_namespaced_endpoint_slice(
        release.namespace, label_selector=f"kubernetes.io/service-name={release.data_plane}")
    assert len(eps.items[0].endpoints) == 2 and not any(e.conditions.ready for e in eps.items[0].endpoints)
    twp = "schemaVersion: '7.1'\nlisteners: []\n"
    core.patch_namespaced_config_map(release.config_map, release.namespace, {"data": {"twp.yaml": twp}})
    pods = core.list_namespaced_pod(release.namespace, label_selector="app.kubernetes.io/component=data-plane")
    for p in pods.items:
        core.patch_namespaced_pod(p.metadata.name, release.namespace, {"metadata": {"annotations": {
            "gateway.titaniumproxy.com/config-poke": sha256_hex(twp)}}})
    deadline = time.monotonic() + 5
    while any(s.config_hash != sha256_hex(twp) for s in data_plane) and time.monotonic() < deadline:
        time.sleep(0.02)
    for s in data_plane:
        v = requests.get(f"http://{s.host}:{data_plane.port}/version",
                         headers={"Authorization": f"Bearer {release.token}"}, timeout=5).json()
        assert v["config_hash"] == sha256_hex(twp)
