from __future__ import annotations

from tests.render.core_fixtures import endpoints, service
from titanium_gateway.render.backends import BackendIndex, ClusterSettings, cluster_id, resolve_backend
from titanium_gateway.render.snapshot import Snapshot
from titanium_gateway.twp.emit import cluster_data
from titanium_gateway.twp.model import Backend


def index(*objs):  # type: ignore[no-untyped-def]
    return BackendIndex(Snapshot.from_objects(list(objs)))


def test_cluster_id_plain_and_with_settings() -> None:
    assert cluster_id("apps", "api", 8080) == "svc-apps.api.8080"
    assert cluster_id("apps", "api", 8080, ClusterSettings()) == "svc-apps.api.8080"
    a = cluster_id("apps", "api", 8080, ClusterSettings(request_timeout="00:00:01"))
    b = cluster_id("apps", "api", 8080, ClusterSettings(request_timeout="00:00:02"))
    assert a.startswith("svc-apps.api.8080-") and len(a) == len("svc-apps.api.8080-") + 10
    assert a != b
    assert a == cluster_id("apps", "api", 8080, ClusterSettings(request_timeout="00:00:01"))


def test_cluster_id_unambiguous_with_dashes_and_malformed_names() -> None:
    assert cluster_id("a-b", "c", 80) != cluster_id("a", "b-c", 80)
    odd = cluster_id("a.b", "c", 80)
    assert odd != cluster_id("a", "b.c", 80)
    assert odd.startswith("svc-a.b.c.80-")


def test_ready_endpoints_only_on_named_target_port() -> None:
    idx = index(
        service(target="http", port_name="web"),
        endpoints(addresses=("10.0.0.2", "10.0.0.1"), port=9000, port_name="web"),
        endpoints(addresses=("10.0.0.9",), port=9000, port_name="web", ready=False, slice_name="api-2"),
        endpoints(addresses=("10.0.0.5",), port=9000, port_name="web", ready=None, slice_name="api-3"),
    )
    res = resolve_backend(idx, "apps", "api", 8080)
    assert res.ok and res.cluster is not None
    assert res.cluster.backend == Backend("apps", "api", 8080)  # (provenance: what it was resolved from)
    assert cluster_data(res.cluster) == {"id": "svc-apps.api.8080", "destinations": [
        {"id": "10.0.0.1:9000", "address": "10.0.0.1", "port": 9000, "weight": 1, "useHttps": False},
        {"id": "10.0.0.2:9000", "address": "10.0.0.2", "port": 9000, "weight": 1, "useHttps": False},
        {"id": "10.0.0.5:9000", "address": "10.0.0.5", "port": 9000, "weight": 1, "useHttps": False},
    ]}


def test_port_by_name_and_numeric_target_fallback() -> None:
    idx = index(service(port_name="web", target=9100), endpoints(port=9100, port_name="other"))
    by_name = resolve_backend(idx, "apps", "api", "web")
    assert by_name.ok and by_name.cluster is not None and by_name.cluster.id == "svc-apps.api.web"
    assert [d.port for d in by_name.cluster.destinations] == [9100]


def test_no_ready_endpoints_gives_empty_destinations() -> None:
    idx = index(service(), endpoints(ready=False))
    res = resolve_backend(idx, "apps", "api", 8080)
    assert res.ok and res.cluster is not None and res.cluster.destinations == ()


def test_missing_service_or_port() -> None:
    idx = index(service())
    assert resolve_backend(idx, "apps", "nope", 8080).reason == "BackendNotFound"
    missing_port = resolve_backend(idx, "apps", "api", 1234)
    assert not missing_port.ok and "no port 1234" in missing_port.message


def test_settings_shape_cluster() -> None:
    idx = index(service(), endpoints())
    s = ClusterSettings(request_timeout="00:00:05", algorithm="Random", affinity_cookie="aff", use_https=True,
                        tls=(("caFile", "x.ca.crt"),))
    cluster = resolve_backend(idx, "apps", "api", 8080, s).cluster
    assert cluster is not None and cluster.backend is not None and cluster.backend.settings is s
    c = cluster_data(cluster)
    assert list(c) == ["id", "algorithm", "destinations", "sessionAffinity", "httpClient"]
    assert c["httpClient"] == {"requestTimeout": "00:00:05", "tls": {"caFile": "x.ca.crt"}}
    assert c["destinations"][0]["useHttps"] is True
    assert c["sessionAffinity"] == {"policy": "Cookie", "name": "aff"}


def test_malformed_objects_never_raise() -> None:
    snap = Snapshot(services={"apps/x": {"metadata": {"name": "x", "namespace": "apps"}, "spec": {"ports": "no"}}},
                    endpoint_slices={"apps/e": {"metadata": {"namespace": "apps", "labels": {
                        "kubernetes.io/service-name": "x"}}, "endpoints": [None, {"addresses": [1]}]}})
    idx = BackendIndex(snap)
    assert resolve_backend(idx, "apps", "x", 80).reason == "BackendNotFound"


def test_external_name_service_is_rejected() -> None:
    ext = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext", "namespace": "apps"},
           "spec": {"type": "ExternalName", "externalName": "example.org", "ports": [{"port": 8080}]}}
    res = resolve_backend(index(ext), "apps", "ext", 8080)
    assert not res.ok and res.reason == "UnsupportedValue" and "ExternalName" in res.message


def test_clusters_of_one_service_port_share_their_destinations() -> None:
    """The clusters of one Service port with other settings share one destinations list (read
    only), unless the settings change the destinations (useHttps)."""
    idx = index(service(), endpoints(addresses=("10.0.0.2", "10.0.0.1")))
    plain = resolve_backend(idx, "apps", "api", 8080).cluster
    timed = resolve_backend(idx, "apps", "api", 8080, ClusterSettings(request_timeout="00:00:05")).cluster
    https = resolve_backend(idx, "apps", "api", 8080, ClusterSettings(use_https=True)).cluster
    assert plain is not None and timed is not None and https is not None
    assert plain.id != timed.id
    assert timed.destinations is plain.destinations
    assert https.destinations is not plain.destinations
    assert [d.use_https for d in https.destinations] == [True, True]
    assert [d.id for d in plain.destinations] == ["10.0.0.1:9000", "10.0.0.2:9000"]
