"""The GitHub workflows parse and hold what docs/install.md (Conformance) and the CI need."""

from __future__ import annotations

import re

import pytest
import yaml

from .conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the key `on` as the boolean True
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def steps(doc: dict) -> list[dict]:
    return [s for job in doc["jobs"].values() for s in job["steps"]]


@pytest.mark.parametrize("name", ["ci.yml", "gateway-conformance.yml"])
def test_workflow_structure(name):
    doc = load(name)
    assert {"name", "on", "jobs"} <= set(doc)
    assert doc["permissions"] == {"contents": "read"}
    for job_id, job in doc["jobs"].items():
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", job_id)
        assert str(job["runs-on"]).startswith("ubuntu-"), "Linux runners only"
        assert job["steps"]
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+(\.\d+)*", step["uses"]), step["uses"]
    text = (WORKFLOWS / name).read_text()
    assert text.count("${{") == text.count("}}"), "unbalanced expression"
    assert "\t" not in text


def test_ci_runs_make_lint_and_make_test_on_push_and_pull_request():
    doc = load("ci.yml")
    assert set(doc["on"]) == {"push", "pull_request"}
    runs = [s.get("run", "") for s in steps(doc)]
    assert "make lint" in runs and "make test" in runs
    assert any("pip install -e '.[test]'" in r for r in runs)


def test_conformance_triggers():
    on = load("gateway-conformance.yml")["on"]
    paths = on["pull_request"]["paths"]
    for required in ("titanium_gateway/**", "charts/**", "Dockerfile"):
        assert required in paths
    (schedule,) = on["schedule"]
    fields = schedule["cron"].split()
    assert len(fields) == 5
    minute, hour, dom, month, dow = fields
    assert dom == "*" and month == "*" and re.fullmatch(r"[0-6]", dow), "weekly"
    assert "workflow_dispatch" in on


def test_conformance_runs_the_suite_uploads_the_report_and_is_report_only_until_enforced():
    doc = load("gateway-conformance.yml")
    all_steps = steps(doc)
    (suite,) = [s for s in all_steps if s.get("run", "").strip() == "conformance/run.sh"]
    assert suite["continue-on-error"] == "${{ vars.GATEWAY_CONFORMANCE_ENFORCE != 'true' }}"
    (upload,) = [s for s in all_steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["if"] == "always()"
    assert "artifacts/gateway-conformance-report.yaml" in upload["with"]["path"]
    # the upload and summary come after the suite and run whatever its outcome
    assert all_steps.index(upload) > all_steps.index(suite)
    summary = [s for s in all_steps if "GITHUB_STEP_SUMMARY" in s.get("run", "")]
    assert summary and summary[0]["if"] == "always()"
    assert "steps.suite.outcome" in yaml.safe_dump(summary[0])
