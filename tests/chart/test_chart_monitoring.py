"""The chart's optional Prometheus Operator objects (metrics.serviceMonitor, metrics.prometheusRule):
nothing by default; with each value, objects valid against the Prometheus Operator's CRDs
(tests/chart/testdata/prometheus-operator, see its README), alerts that read metrics the
controller exposes, and PromQL promtool accepts and whose alerts fire as intended
(hack/promtool.sh builds promtool; the promtool tests skip without it)."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.support.crdschema import prune

from .conftest import NAMESPACE, ROOT, by_kind, one

CRD_DIR = Path(__file__).parent / "testdata" / "prometheus-operator"
KUBE_VERSION = "1.31"
MONITORING = "monitoring.coreos.com"
SM = {"metrics": {"serviceMonitor": {"enabled": True}}}
PR = {"metrics": {"prometheusRule": {"enabled": True}}}
BOTH = {"metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}}}
JOB = "titanium-gateway-controller-metrics"
ALERTS = {"TitaniumGatewayNotProgrammed", "TitaniumGatewayReconcileErrors", "TitaniumGatewayNoLeader",
          "TitaniumGatewayCertificateExpiringSoon"}


@cache
def monitoring_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            out[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = \
                version["schema"]["openAPIV3Schema"]
    return out


def validate(obj: dict[str, Any]) -> None:
    if obj["apiVersion"].split("/")[0] == MONITORING:
        schema = monitoring_schemas()[(obj["apiVersion"], obj["kind"])]
        jsonschema.Draft7Validator(schema).validate(obj)
        bad = prune(copy.deepcopy(obj), schema)  # what the API server would drop
        if bad:
            raise jsonschema.ValidationError(f"unknown fields: {bad}")
    else:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


def monitoring_objects(docs: list[dict]) -> list[tuple[str, str]]:
    return sorted((d["kind"], d["metadata"]["name"]) for d in docs
                  if d["apiVersion"].startswith(MONITORING) or d["metadata"]["name"] == JOB)


def rules(docs: list[dict]) -> list[dict[str, Any]]:
    return [r for g in one(docs, "PrometheusRule")["spec"]["groups"] for r in g["rules"]]


def test_the_crds_are_the_prometheus_operators_unmodified() -> None:
    readme = (CRD_DIR / "README.md").read_text()
    assert "v0.85.0" in readme and "example/prometheus-operator-crd/" in readme
    for name in ("monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"):
        assert name in readme
        crd = yaml.safe_load((CRD_DIR / name).read_text())
        assert crd["metadata"]["annotations"]["operator.prometheus.io/version"] == "0.85.0"
    assert set(monitoring_schemas()) == {(f"{MONITORING}/v1", "ServiceMonitor"), (f"{MONITORING}/v1", "PrometheusRule")}


def test_nothing_by_default(helm) -> None:
    assert monitoring_objects(helm.template()) == []


@pytest.mark.parametrize(("values", "expected"), [
    (SM, [("Service", JOB), ("ServiceMonitor", "titanium-gateway-controller")]),
    (PR, [("PrometheusRule", "titanium-gateway-controller")]),
    (BOTH, [("PrometheusRule", "titanium-gateway-controller"), ("Service", JOB),
            ("ServiceMonitor", "titanium-gateway-controller")]),
])
def test_each_value_renders_its_valid_objects(helm, values, expected) -> None:
    docs = helm.template(values)
    assert monitoring_objects(docs) == expected
    for obj in docs:
        if (obj["kind"], obj["metadata"]["name"]) in expected:
            validate(obj)
            assert obj["metadata"]["namespace"] == NAMESPACE
    proc = helm.run("lint", "--strict", str(ROOT / "charts" / "titanium-gateway"), "--values", helm.values_file(values))
    assert "0 chart(s) failed" in proc.stdout


def test_the_validation_rejects_bad_objects(helm) -> None:
    """Negative control: a misspelt field, a wrong type and a bad enum value are caught."""
    docs = helm.template(BOTH)
    sm = copy.deepcopy(one(docs, "ServiceMonitor"))
    sm["spec"]["endpoints"][0]["honourLabels"] = True
    with pytest.raises(jsonschema.ValidationError, match="honourLabels"):
        validate(sm)
    sm = copy.deepcopy(one(docs, "ServiceMonitor"))
    sm["spec"]["endpoints"][0]["scheme"] = "gopher"
    with pytest.raises(jsonschema.ValidationError):
        validate(sm)
    pr = copy.deepcopy(one(docs, "PrometheusRule"))
    pr["spec"]["groups"][0]["rules"][0]["for"] = "ten minutes"
    with pytest.raises(jsonschema.ValidationError):
        validate(pr)
    pr = copy.deepcopy(one(docs, "PrometheusRule"))
    pr["spec"]["groups"][0]["rules"][0]["expresion"] = "up"
    with pytest.raises(jsonschema.ValidationError, match="expresion"):
        validate(pr)


def test_the_service_monitor_scrapes_every_controller_replica(helm) -> None:
    docs = helm.template(BOTH)
    sm, svc = one(docs, "ServiceMonitor"), one(docs, "Service", JOB)
    dep = one(docs, "Deployment", "titanium-gateway-controller")
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    container = dep["spec"]["template"]["spec"]["containers"][0]
    # the Service selects the controller pods, headless (each replica a target), on its health port
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    port = svc["spec"]["ports"][0]
    assert port["targetPort"] == "health" and {"name": "health", "containerPort": 8081, "protocol": "TCP"} in container["ports"]
    # the ServiceMonitor selects that Service alone, and scrapes /metrics keeping the metrics' namespace labels
    matching = [s["metadata"]["name"] for s in by_kind(docs, "Service")
                if sm["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()]
    assert matching == [JOB]
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert sm["spec"]["endpoints"] == [{"port": port["name"], "path": "/metrics", "scheme": "http",
                                        "honorLabels": True, "interval": "30s"}]


def test_values_reach_the_objects(helm) -> None:
    docs = helm.template({"metrics": {
        "serviceMonitor": {"enabled": True, "interval": "15s", "scrapeTimeout": "5s", "labels": {"release": "prom"},
                           "metricRelabelings": [{"action": "drop", "sourceLabels": ["__name__"], "regex": "python_.*"}]},
        "prometheusRule": {"enabled": True, "labels": {"role": "alerts"}, "alertLabels": {"team": "edge"},
                           "selector": 'job="custom"',
                           "alerts": {"gatewayNotProgrammed": {"for": "20m", "severity": "critical"},
                                      "reconcileErrors": {"window": "30m", "for": "1h"},
                                      "certificateExpiry": {"days": 30, "for": "1h"},
                                      "noLeader": {"enabled": False}}}}})
    sm = one(docs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "prom"
    ep = sm["spec"]["endpoints"][0]
    assert (ep["interval"], ep["scrapeTimeout"]) == ("15s", "5s")
    assert ep["metricRelabelings"] == [{"action": "drop", "sourceLabels": ["__name__"], "regex": "python_.*"}]
    pr = one(docs, "PrometheusRule")
    assert pr["metadata"]["labels"]["role"] == "alerts"
    got = {r["alert"]: r for r in rules(docs)}
    assert set(got) == ALERTS - {"TitaniumGatewayNoLeader"}
    assert got["TitaniumGatewayNotProgrammed"]["for"] == "20m"
    assert got["TitaniumGatewayNotProgrammed"]["labels"] == {"severity": "critical", "team": "edge"}
    assert "[30m]" in got["TitaniumGatewayReconcileErrors"]["expr"] and got["TitaniumGatewayReconcileErrors"]["for"] == "1h"
    assert "< 30 * 86400" in got["TitaniumGatewayCertificateExpiringSoon"]["expr"]
    for r in got.values():
        assert 'job="custom"' in r["expr"] and JOB not in r["expr"], r["expr"]
        validate(pr)


def test_default_alerts_as_the_issue_asks(helm) -> None:
    got = {r["alert"]: r for r in rules(helm.template(PR))}
    assert set(got) == ALERTS
    assert got["TitaniumGatewayNotProgrammed"]["for"] == "10m"
    assert "< 14 * 86400" in got["TitaniumGatewayCertificateExpiringSoon"]["expr"]
    assert "absent(leader_election_master_status" in got["TitaniumGatewayNoLeader"]["expr"]
    for r in got.values():
        assert f'job="{JOB}"' in r["expr"] and r["labels"]["severity"] in ("warning", "critical")
        assert r["annotations"]["summary"] and r["annotations"]["description"]
    # without leader election no replica reports a Lease: no such alert
    docs = helm.template({**PR, "controller": {"replicas": 1, "leaderElection": {"enabled": False}}})
    assert "TitaniumGatewayNoLeader" not in {r["alert"] for r in rules(docs)}


def test_bad_values_fail_the_render(helm) -> None:
    for bad in ({"metrics": {"prometheusRule": {"alerts": {"certificateExpiry": {"days": 0}}}}},
                {"metrics": {"prometheusRule": {"alerts": {"gatewayNotProgrammed": {"for": "10 minutes"}}}}},
                {"metrics": {"serviceMonitor": {"enabled": "yes"}}},
                {"metrics": {"serviceMonitr": {"enabled": True}}}):
        helm.template_fails(bad)


# -- the alerts' metrics are the controller's ---------------------------------------------------

_PROMQL_WORDS = {"max", "min", "sum", "by", "without", "increase", "rate", "absent", "time", "or", "and", "unless",
                 "humanizeDuration", "on", "ignoring", "group_left", "group_right", "bool", "count", "avg"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (words followed by a selector, outside of it)."""
    no_selectors = re.sub(r"\{[^}]*\}", "{}", expr)
    no_ranges = re.sub(r"\[[^\]]*\]", "", no_selectors)
    return {w for w in re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{\}", no_ranges) if w not in _PROMQL_WORDS}


def exposed_names() -> set[str]:
    """The sample names of every family a running controller registers (with leader election)."""
    from tests.writers.fakes import RecordingApi
    from titanium_gateway.controller.options import parse_options
    from titanium_gateway.controller.wiring import build_controller
    from titanium_gateway.kube.leaderelection import LeaderElectionConfig, LeaderElector
    from titanium_gateway.metrics import Registry

    reg, api = Registry(), RecordingApi()
    opts = parse_options(["--data-plane-service=gs/tp", "--data-plane-namespace=gs", "--identity=me"], {})
    build_controller(opts, api, registry=reg)
    LeaderElector(api, LeaderElectionConfig("tg", "gs", "me"), registry=reg)
    names: set[str] = set()
    for fam in reg.collect():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}.get(fam.type, [""])
        names.update(fam.name + s for s in suffixes)
    return names


def test_every_metric_an_alert_reads_is_one_the_controller_exposes(helm) -> None:
    exposed = exposed_names()
    assert {"titanium_gateway_programmed", "titanium_certificate_expiry_timestamp_seconds",
            "controller_runtime_reconcile_total", "leader_election_master_status"} <= exposed
    read = set()
    for r in rules(helm.template(PR)):
        names = metric_names(r["expr"])
        assert names, r["expr"]
        read |= names
    assert read <= exposed, read - exposed
    assert read == {"titanium_gateway_programmed", "titanium_certificate_expiry_timestamp_seconds",
                    "controller_runtime_reconcile_total", "leader_election_master_status"}


def test_metric_names_reads_selectors_not_label_values() -> None:
    assert metric_names('max(a_b{job="x",c="d"}) < 1 or absent(a_b{job="x"})') == {"a_b"}
    assert metric_names('sum by (pod) (increase(c_total{result="error"}[10m])) > 0') == {"c_total"}


# -- promtool: the PromQL parses and the alerts fire as intended -------------------------------

@cache
def promtool() -> str | None:
    built = ROOT / ".cache" / "promtool" / "bin" / "promtool"
    if built.exists():
        return str(built)
    return shutil.which("promtool")


def needs_promtool() -> str:
    tool = promtool()
    if tool is None:
        pytest.skip("promtool is not built: run hack/promtool.sh (Go and the Go module proxy; a few minutes once)")
    return tool


def rule_file(helm, tmp_path: Path, values: dict[str, Any]) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(one(helm.template(values), "PrometheusRule")["spec"]))
    return path


def promtool_run(tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("values", [PR, {"metrics": {"prometheusRule": {
    "enabled": True, "selector": 'job="other",namespace="x"', "alertLabels": {"team": "edge"},
    "alerts": {"certificateExpiry": {"days": 3}, "reconcileErrors": {"window": "1h", "for": "0m"}}}}}])
def test_promtool_checks_the_rules(helm, tmp_path: Path, values: dict[str, Any]) -> None:
    tool = needs_promtool()
    path = rule_file(helm, tmp_path, values)
    proc = promtool_run(tool, "check", "rules", str(path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 4 rules found" in proc.stdout + proc.stderr


UNIT_TESTS = """
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  # web stays not programmed; shop becomes programmed after 5 minutes. A failover at 6m (new pod)
  # keeps web's alert going. Two replicas, the leader changes at 6m: a leader all along.
  - interval: 1m
    input_series:
      - series: 'titanium_gateway_programmed{job="JOB",pod="a",namespace="apps",name="web"}'
        values: '0x5 _x20'
      - series: 'titanium_gateway_programmed{job="JOB",pod="b",namespace="apps",name="web"}'
        values: '_x5 0x20'
      - series: 'titanium_gateway_programmed{job="JOB",pod="a",namespace="apps",name="shop"}'
        values: '0x4 1x20'
      - series: 'leader_election_master_status{job="JOB",pod="a",name="tg"}'
        values: '1x5 0x20'
      - series: 'leader_election_master_status{job="JOB",pod="b",name="tg"}'
        values: '0x5 1x20'
    alert_rule_test:
      - eval_time: 9m
        alertname: TitaniumGatewayNotProgrammed
        exp_alerts: []
      - eval_time: 12m
        alertname: TitaniumGatewayNotProgrammed
        exp_alerts:
          - exp_labels: {severity: warning, namespace: apps, name: web}
            exp_annotations:
              summary: Gateway apps/web is not programmed
              description: >-
                The Programmed condition of Gateway apps/web has not been True for 10m: the data plane does
                not serve its current config (see the condition's reason and message: kubectl describe gateway).
      - eval_time: 20m
        alertname: TitaniumGatewayNoLeader
        exp_alerts: []
  # both replicas followers for 10 minutes, then nothing scraped at all
  - interval: 1m
    input_series:
      - series: 'leader_election_master_status{job="JOB",pod="a",name="tg"}'
        values: '0x10'
      - series: 'leader_election_master_status{job="JOB",pod="b",name="tg"}'
        values: '0x10'
      - series: 'leader_election_master_status{job="other",pod="c",name="tg"}'
        values: '1x30'
    alert_rule_test:
      - eval_time: 4m
        alertname: TitaniumGatewayNoLeader
        exp_alerts: []
      - eval_time: 7m
        alertname: TitaniumGatewayNoLeader
        exp_alerts:
          - exp_labels: {severity: critical}
            exp_annotations:
              summary: No titanium-gateway controller replica is the leader
              description: >-
                No replica has held the Lease titanium-gateway for 5m (or no replica is scraped): nothing writes
                the data plane's config, statuses or Events.
      - eval_time: 25m
        alertname: TitaniumGatewayNoLeader
        exp_alerts:
          - exp_labels: {severity: critical, job: JOB}
            exp_annotations:
              summary: No titanium-gateway controller replica is the leader
              description: >-
                No replica has held the Lease titanium-gateway for 5m (or no replica is scraped): nothing writes
                the data plane's config, statuses or Events.
  # errors for 25 minutes on pod a, then none; pod b never fails
  - interval: 1m
    input_series:
      - series: 'controller_runtime_reconcile_total{job="JOB",namespace="gs",pod="a",result="error"}'
        values: '0+2x25 50x30'
      - series: 'controller_runtime_reconcile_total{job="JOB",namespace="gs",pod="b",result="error"}'
        values: '0x55'
      - series: 'controller_runtime_reconcile_total{job="JOB",namespace="gs",pod="b",result="success"}'
        values: '0+5x55'
    alert_rule_test:
      - eval_time: 8m
        alertname: TitaniumGatewayReconcileErrors
        exp_alerts: []
      - eval_time: 15m
        alertname: TitaniumGatewayReconcileErrors
        exp_alerts:
          - exp_labels: {severity: warning, namespace: gs, pod: a}
            exp_annotations:
              summary: titanium-gateway reconciles are failing
              description: >-
                Reconciles of controller a have kept failing for 10m (20 failures in the last 10m): the data
                plane's config and the statuses are not being updated. See the controller's log.
      - eval_time: 50m
        alertname: TitaniumGatewayReconcileErrors
        exp_alerts: []
  # a certificate expiring at 20 days, one at 10 days (from the test's time 0), one long valid
  - interval: 1m
    input_series:
      - series: 'titanium_certificate_expiry_timestamp_seconds{job="JOB",pod="a",namespace="apps",name="soon"}'
        values: '864000x30'
      - series: 'titanium_certificate_expiry_timestamp_seconds{job="JOB",pod="a",namespace="apps",name="later"}'
        values: '1728000x30'
      - series: 'titanium_certificate_expiry_timestamp_seconds{job="JOB",pod="a",namespace="apps",name="long"}'
        values: '31536000x30'
    alert_rule_test:
      - eval_time: 5m
        alertname: TitaniumGatewayCertificateExpiringSoon
        exp_alerts: []
      - eval_time: 15m
        alertname: TitaniumGatewayCertificateExpiringSoon
        exp_alerts:
          - exp_labels: {severity: warning, namespace: apps, name: soon}
            exp_annotations:
              summary: Certificate apps/soon expires within 14 days
              description: >-
                The kubernetes.io/tls Secret apps/soon the data plane serves expires in 9d 23h 45m 0s. Renew it
                (the data plane picks up the new one by itself).
"""


def test_promtool_unit_tests_the_alerts(helm, tmp_path: Path) -> None:
    tool = needs_promtool()
    rule_file(helm, tmp_path, PR)
    (tmp_path / "tests.yaml").write_text(UNIT_TESTS.replace("JOB", JOB))
    proc = promtool_run(tool, "test", "rules", "tests.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr
