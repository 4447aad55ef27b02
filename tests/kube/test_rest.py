from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.apiserver import FakeApiServer
from titanium_gateway.kube.api import CONFIG_MAPS, HTTPROUTES
from titanium_gateway.kube.rest import (
    PATCH_CONTENT_TYPES,
    RestApi,
    StrategicPatchNotSupported,
    api_error_from_response,
    parse_retry_after,
)
from titanium_gateway.metrics import Registry


def test_parse_retry_after() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a past date: at once


def test_api_error_from_status_body_and_header() -> None:
    body = json.dumps({"kind": "Status", "status": "Failure", "reason": "TooManyRequests",
                       "message": "slow down", "code": 429, "details": {"retryAfterSeconds": 4}}).encode()
    e = api_error_from_response(429, body, {"Retry-After": "9"})
    assert (e.status, e.reason, e.message, e.retry_after) == (429, "TooManyRequests", "slow down", 9.0)
    assert e.body["code"] == 429
    e2 = api_error_from_response(429, body, {})
    assert e2.retry_after == 4.0  # from details when the header is absent
    e3 = api_error_from_response(502, b"<html>bad gateway</html>", {})
    assert e3.status == 502 and e3.reason == "" and "bad gateway" in e3.message
    assert api_error_from_response(410, b"", {}).is_gone


def test_patch_content_types() -> None:
    assert PATCH_CONTENT_TYPES == {
        "merge": "application/merge-patch+json",
        "json": "application/json-patch+json",
        "strategic": "application/strategic-merge-patch+json",
        "apply": "application/apply-patch+yaml",
    }


def test_from_kubeconfig_and_local_validation(tmp_path: Path) -> None:
    with FakeApiServer() as server:
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(server.kubeconfig()))
        cfg = server.client_configuration()
        api = RestApi.from_kubeconfig(str(path), registry=Registry(), qps=5, burst=3)
        try:
            assert api.host == f"127.0.0.1:{server.port}"
            assert api.list(CONFIG_MAPS, "default")["items"] == []
            assert api.limiter.tokens < 3  # every request takes a token of the client-side bucket
            with pytest.raises(StrategicPatchNotSupported):
                api.patch(HTTPROUTES, "default", "r", {}, patch_type="strategic")
            with pytest.raises(ValueError):
                api.patch(CONFIG_MAPS, "default", "x", {"not": "a list"}, patch_type="json")
        finally:
            api.close()
        own = RestApi(cfg, registry=Registry())
        assert own.configuration.retries is False  # urllib3 must not sleep on Retry-After itself
        assert cfg.retries is None  # the caller's configuration is not modified
        own.close()


def test_get_metadata_asks_for_partial_object_metadata_and_dry_run_create_stores_nothing() -> None:
    """A Secret's data never travels for get_metadata (the Accept header asks the API server for
    PartialObjectMetadata); create_dry_run sends dryRun=All (checked on the wire)."""
    from kubernetes.client import Configuration

    from titanium_gateway.kube.api import SECRETS

    cfg = Configuration()
    cfg.host = "http://apiserver.invalid"
    api = RestApi(cfg, registry=Registry())
    seen: list[tuple[str, str, dict, list]] = []

    class Raw:
        status = 200
        data = json.dumps({"kind": "PartialObjectMetadata", "metadata": {"name": "s"}}).encode()
        headers: dict = {}

        def release_conn(self) -> None:
            pass

    def fake_request(method, path, query, headers, body, timeout):  # type: ignore[no-untyped-def]
        seen.append((method, path, dict(headers), list(query)))
        return Raw()

    api.transport.request = fake_request  # type: ignore[method-assign]
    try:
        assert api.get_metadata(SECRETS, "apps", "s") == {"kind": "PartialObjectMetadata", "metadata": {"name": "s"}}
        api.create_dry_run(CONFIG_MAPS, "apps", {"metadata": {"name": "probe"}})
    finally:
        api.close()
    (m1, p1, h1, _), (m2, p2, _, q2) = seen
    assert (m1, p1) == ("GET", "/api/v1/namespaces/apps/secrets/s")
    assert h1["Accept"] == "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    assert (m2, p2, q2) == ("POST", "/api/v1/namespaces/apps/configmaps", [("dryRun", "All")])
