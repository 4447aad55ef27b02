"""conformance/summary.py: the summary of a run and its check of the expected failures, on a
synthetic report, test list and `go test -v` log in the suite's format."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("conformance_summary", os.path.join(ROOT, "conformance", "summary.py"))
summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summary)

JOIN = ("    http.go:240: 2026-12-01T19:57:42Z: Response expectation failed for request: {URL: ...}  not ready yet: "
        "expected X-Header-Add header to be set to a,b, got a, b (after 1.2s)")
OTHER = ("    http.go:240: 2026-12-01T19:57:42Z: Response expectation failed for request: {URL: ...}  not ready yet: "
         "expected status code to be 200, got 503 (after 1.2s)")


def _log(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body)
    return str(path)


def _inputs(tmp_path, failed_reason):
    report = {"gatewayAPIVersion": "v1.2.1", "gatewayAPIChannel": "standard",
              "implementation": {"project": "titanium-gateway", "version": "dev"},
              "profiles": [{"name": "GATEWAY-HTTP",
                            "core": {"result": "failure", "statistics": {"Passed": 1, "Failed": 1, "Skipped": 0}},
                            "extended": {"result": "success", "statistics": {"Passed": 1, "Failed": 0, "Skipped": 0}}}]}
    tests = {"tests": [{"name": "HTTPRouteSimpleSameNamespace", "features": ["Gateway", "HTTPRoute"]},
                       {"name": "HTTPRouteRequestHeaderModifier", "features": ["Gateway", "HTTPRoute"]},
                       {"name": "HTTPRouteMethodMatching", "features": ["Gateway", "HTTPRoute", "HTTPRouteMethodMatching"]},
                       {"name": "HTTPRouteRequestMultipleMirrors",
                        "features": ["Gateway", "HTTPRoute", "HTTPRouteRequestMirror", "HTTPRouteRequestMultipleMirrors"]}],
             "profiles": {"GATEWAY-HTTP": {"core": ["Gateway", "HTTPRoute", "ReferenceGrant"],
                                           "extended": ["HTTPRouteMethodMatching", "HTTPRouteRequestMirror",
                                                        "HTTPRouteRequestMultipleMirrors"]}}}
    log = "\n".join([
        "=== RUN   TestConformance/HTTPRouteRequestHeaderModifier",
        "=== RUN   TestConformance/HTTPRouteRequestHeaderModifier/0_request_to_'/set'",
        "=== RUN   TestConformance/HTTPRouteRequestHeaderModifier/3_request_to_'/add'",
        "=== NAME  TestConformance/HTTPRouteRequestHeaderModifier/0_request_to_'/set'",
        OTHER.replace("200, got 503", "200, got 404"),  # a case that later passed: not a reason
        "=== NAME  TestConformance/HTTPRouteRequestHeaderModifier/3_request_to_'/add'",
        failed_reason,
        "    http.go:221: 2026-12-01T19:57:49Z: timeout while waiting after 20 attempts, 0/3 successes",
        "--- FAIL: TestConformance (10.00s)",
        "    --- PASS: TestConformance/HTTPRouteSimpleSameNamespace (1.00s)",
        "    --- FAIL: TestConformance/HTTPRouteRequestHeaderModifier (6.00s)",
        "        --- PASS: TestConformance/HTTPRouteRequestHeaderModifier/0_request_to_'/set' (0.04s)",
        "        --- FAIL: TestConformance/HTTPRouteRequestHeaderModifier/3_request_to_'/add' (20.00s)",
        "    --- PASS: TestConformance/HTTPRouteMethodMatching (1.00s)",
        "    --- SKIP: TestConformance/HTTPRouteRequestMultipleMirrors (0.00s)",
        ""])
    (tmp_path / "report.yaml").write_text(yaml.safe_dump(report))
    (tmp_path / "tests.json").write_text(json.dumps(tests))
    (tmp_path / "features.txt").write_text("# claimed\nGateway\nHTTPRoute\nReferenceGrant\nHTTPRouteMethodMatching\n"
                                           "HTTPRouteRequestMirror\nListenerSet\nGRPCRoute\n")
    (tmp_path / "expected.txt").write_text("HTTPRouteRequestHeaderModifier  header-join  # the join\n")
    args = ["--report", str(tmp_path / "report.yaml"), "--log", _log(tmp_path, "run.log", log),
            "--tests", str(tmp_path / "tests.json"), "--features", str(tmp_path / "features.txt"),
            "--expected", str(tmp_path / "expected.txt")]
    return args


def test_header_join_only():
    assert summary.header_join_only("expected X-Header-Add header to be set to a,b, got a, b")
    assert summary.header_join_only("expected X-H header to be set to a,b,c, got a, b, c")
    assert not summary.header_join_only("expected X-H header to be set to a,b, got a,b")
    assert not summary.header_join_only("expected X-H header to be set to a,b, got a, c")
    assert not summary.header_join_only("expected status code to be 200, got 503")


def test_expected_failure_for_its_reason_only(tmp_path, capsys):
    assert summary.main(_inputs(tmp_path, JOIN)) == 0
    out = capsys.readouterr().out
    assert "core:     1/2 passed" in out
    assert "HTTPRouteMethodMatching              1/1" in out
    # A test needing an unclaimed feature does not count for the claimed one.
    assert "HTTPRouteRequestMirror               0/0" in out
    assert "HTTPRouteRequestHeaderModifier: expected X-Header-Add header to be set to a,b, got a, b" in out
    assert "404" not in out  # the reason of a case that passed in the end is not shown
    assert "every failure is an expected one" in out


def test_expected_failure_for_another_reason_fails(tmp_path, capsys):
    assert summary.main(_inputs(tmp_path, OTHER)) == 1
    assert "is expected to fail only for header-join, but failed for: expected status code" in capsys.readouterr().out


@pytest.mark.parametrize("result, rc", [("PASS", 0), ("FAIL", 1)])
def test_the_diagnosis_run_must_pass(tmp_path, capsys, result, rc):
    args = _inputs(tmp_path, JOIN)
    norm = _log(tmp_path, "norm.log", f"    --- {result}: TestConformance/HTTPRouteRequestHeaderModifier (6.00s)\n")
    assert summary.main([*args, "--normalized-log", norm]) == rc
    out = capsys.readouterr().out
    assert f"{1 if result == 'PASS' else 0}/1 of the header-join failures pass" in out


def test_a_diagnosis_run_that_ran_nothing_is_inconclusive_and_says_why(tmp_path, capsys):
    args = _inputs(tmp_path, JOIN)
    norm = _log(tmp_path, "norm.log", "=== RUN   TestConformance\n"
                "    suite.go:365: 2026-12-02T01:29:03Z: Test Setup: Ensuring Gateways and Pods from base manifests are ready\n"
                "        \tError:      \tgateways not ready after 60s\n"
                "--- FAIL: TestConformance (60.02s)\nFAIL\n")
    # The main run's reasons were checked; the diagnosis adds nothing, so it does not fail the run.
    assert summary.main([*args, "--normalized-log", norm]) == 0
    out = capsys.readouterr().out
    assert "0/1 of the header-join failures pass" in out
    assert "the diagnosis run did not run HTTPRouteRequestHeaderModifier; it is inconclusive" in out
    assert "|         \tError:      \tgateways not ready after 60s" in out
    assert "| --- FAIL: TestConformance (60.02s)" in out


def test_an_unexpected_failure_fails(tmp_path, capsys):
    args = _inputs(tmp_path, JOIN)
    (tmp_path / "expected.txt").write_text("")
    assert summary.main(args) == 1
    assert "HTTPRouteRequestHeaderModifier failed and is not an expected failure" in capsys.readouterr().out


def test_a_report_with_both_profiles_shows_each_profiles_figures(tmp_path, capsys):
    """make conformance-local runs GATEWAY-HTTP and GATEWAY-GRPC into one report: the summary shows
    each profile's core and extended figures, its claimed extended features' tests, and the
    failures of both profiles checked against the expected ones."""
    args = _inputs(tmp_path, JOIN)
    report = yaml.safe_load((tmp_path / "report.yaml").read_text())
    report["profiles"].insert(0, {"name": "GATEWAY-GRPC",  # (the suite writes its profiles in map order)
                               "core": {"result": "failure", "failedTests": ["GRPCRouteWeight"],
                                        "statistics": {"Passed": 3, "Failed": 1, "Skipped": 0}},
                               "extended": {"result": "success", "statistics": {"Passed": 0, "Failed": 0, "Skipped": 0}}})
    (tmp_path / "report.yaml").write_text(yaml.safe_dump(report))
    tests = json.loads((tmp_path / "tests.json").read_text())
    tests["tests"] += [{"name": "GRPCExactMethodMatching", "features": ["Gateway", "GRPCRoute"]},
                       {"name": "GRPCRouteWeight", "features": ["Gateway", "GRPCRoute"]},
                       {"name": "ListenerSetGRPC", "features": ["Gateway", "GRPCRoute", "ListenerSet"]},
                       {"name": "ListenerSetHTTP", "features": ["Gateway", "HTTPRoute", "ListenerSet"]}]
    tests["profiles"]["GATEWAY-HTTP"]["extended"].append("ListenerSet")
    tests["profiles"]["GATEWAY-GRPC"] = {"core": ["Gateway", "GRPCRoute", "ReferenceGrant"],
                                         "extended": ["GatewayPort8080", "ListenerSet"]}
    (tmp_path / "tests.json").write_text(json.dumps(tests))
    log = (tmp_path / "run.log").read_text().replace(
        "--- FAIL: TestConformance (10.00s)",
        "--- FAIL: TestConformance (10.00s)\n"
        "    --- PASS: TestConformance/GRPCExactMethodMatching (1.00s)\n"
        "    --- FAIL: TestConformance/GRPCRouteWeight (1.00s)")
    (tmp_path / "run.log").write_text(log.replace(
        "=== RUN   TestConformance/HTTPRouteRequestHeaderModifier\n",
        "=== RUN   TestConformance/GRPCRouteWeight\n"
        "        \tMessages:   \texpected all backends to receive traffic\n"
        "=== RUN   TestConformance/HTTPRouteRequestHeaderModifier\n", 1))
    assert summary.main(args) == 1
    out = capsys.readouterr().out
    assert "profiles GATEWAY-HTTP, GATEWAY-GRPC" in out  # GATEWAY-HTTP first
    http, grpc = out.split("  GATEWAY-GRPC\n")
    assert "  GATEWAY-HTTP\n    core:     1/2 passed" in http and "HTTPRouteMethodMatching              1/1" in http
    assert grpc.startswith("    core:     3/4 passed, 0 skipped (result: failure)\n      failed: GRPCRouteWeight\n")
    assert "not claimed: GatewayPort8080" in grpc and "HTTPRouteMethodMatching" not in grpc.split("failures")[0]
    # a test counts in a profile only when every feature it needs is one of the profile's
    assert "ListenerSet                          0/1" in http and "ListenerSet                          0/1" in grpc
    assert "GRPCRouteWeight: expected all backends to receive traffic" in out
    assert "GRPCRouteWeight failed and is not an expected failure" in out
    # one profile on request
    assert summary.main([*args, "--profile", "GATEWAY-GRPC"]) == 1
    assert "GATEWAY-HTTP\n" not in capsys.readouterr().out
