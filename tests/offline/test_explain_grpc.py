"""``titanium-gateway explain grpc://HOST/package.Service/Method``: a gRPC call explained against
the GRPCRoute golden cases' inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from titanium_gateway.cli import main as cli_main
from titanium_gateway.offline.args import UsageError
from titanium_gateway.offline.explain import parse_request

TESTDATA = Path(__file__).parents[2] / "tests" / "render" / "testdata"
MATCHING = str(TESTDATA / "grpcroute-matching" / "in.yaml")


def explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = cli_main(["explain", *argv, "--output", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else {}), err


@pytest.mark.parametrize(("text", "scheme", "host", "port", "target"), [
    ("grpc://grpc.example.com/grpc.testing.TestService/UnaryCall", "http", "grpc.example.com", None,
     "/grpc.testing.TestService/UnaryCall"),
    ("POST grpcs://grpc.example.com:8443/a.B/C", "https", "grpc.example.com", 8443, "/a.B/C"),
    ("GRPC://:8080/a.B/C", "http", None, 8080, "/a.B/C"),
])
def test_grpc_request_syntax(text: str, scheme: str, host: str | None, port: int | None, target: str) -> None:
    spec = parse_request(text)
    assert (spec.method, spec.scheme, spec.host, spec.port, spec.target, spec.grpc) == (
        "POST", scheme, host, port, target, True)
    assert spec.url_scheme == ("grpcs" if scheme == "https" else "grpc")
    assert ("content-type", "application/grpc") in spec.headers and ("te", "trailers") in spec.headers


def test_grpc_headers_given_replace_the_defaults() -> None:
    spec = parse_request("grpc://h/a.B/C", ["Content-Type: application/grpc+proto", "version: two"])
    assert [k.lower() for k, _ in spec.headers] == ["content-type", "version", "te"]
    assert spec.headers[0] == ("Content-Type", "application/grpc+proto")


@pytest.mark.parametrize("text", ["grpc://h/", "grpc://h/a.B", "grpc://h/a.B/C/D", "grpc://h/a.B/C?x=1"])
def test_grpc_path_is_service_and_method(text: str) -> None:
    with pytest.raises(UsageError, match="/package.Service/Method"):
        parse_request(text)


@pytest.mark.parametrize(("call", "headers", "route", "cluster"), [
    ("grpc.testing.TestService/UnaryCall", [], "grpcroute/apps/exact/r0m0", "svc-apps.grpc-v1.9000"),
    ("grpc.testing.TestService/Other", ["version: two"], "grpcroute/apps/headers/r0m0", "svc-apps.grpc-v2.9000"),
    ("grpc.testing.TestService/Other", [], "grpcroute/apps/exact/r1m0", "svc-apps.grpc-v2.9000"),
    ("grpc.testing.Other/StreamingCall", [], "grpcroute/apps/regex/r0m0", "svc-apps.grpc-v3.9000"),
    ("other.Service/EmptyCall", [], "grpcroute/apps/exact/r2m0", "svc-apps.grpc-v3.9000"),
])
def test_a_grpc_call_is_routed_by_method_and_headers(capsys: pytest.CaptureFixture[str], call: str,
                                                     headers: list[str], route: str, cluster: str) -> None:
    argv = ["-f", MATCHING, "--request", f"grpc://grpc.example.com/{call}"]
    for h in headers:
        argv += ["-H", h]
    code, out, _ = explain(capsys, *argv)
    assert code == 0
    assert out["request"]["grpc"] is True and out["request"]["method"] == "POST"
    assert out["request"]["url"] == f"grpc://grpc.example.com/{call}"
    assert out["route"] == route
    assert out["source"]["kind"] == "GRPCRoute"
    assert [b["cluster"] for b in out["backends"]] == [cluster]


def test_a_call_no_method_matches_is_404_and_the_text_says_grpc(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", MATCHING, "--request", "grpc://grpc.example.com/x.Y/Nothing")
    assert out["route"] is None and out["status"] == 404
    code = cli_main(["explain", "-f", MATCHING, "--request", "grpc://all.example.com/x.Y/Anything"])
    text = capsys.readouterr().out
    assert code == 0
    assert "a gRPC call: HTTP/2 (h2c, prior knowledge), forwarded to the backend over HTTP/2" in text
    assert "route:       grpcroute/apps/all-calls/r0m0" in text
