"""``titanium-gateway migrate-ingress``: the report, the converted Ingresses, the exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.render.conftest import require_render
from titanium_gateway.cli import main as cli_main
from titanium_gateway.offline.load import load_objects
from titanium_gateway.offline.migrate import main
from titanium_gateway.offline.snapshot import build_snapshot

P = "nginx.ingress.kubernetes.io/"

SHOP = f"""\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: shop
  uid: 1234
  resourceVersion: "99"
  annotations:
    {P}rewrite-target: /$2
    {P}use-regex: "true"
    {P}limit-rps: "50"
    {P}whitelist-source-range: 10.0.0.0/8
    {P}proxy-buffering: "on"
    {P}ssl-redirect: "false"
    kubectl.kubernetes.io/last-applied-configuration: "{{}}"
    team: shop
spec:
  ingressClassName: nginx
  tls: [{{hosts: [shop.example.com], secretName: shop-tls}}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - path: /api(/|$)(.*)
        pathType: ImplementationSpecific
        backend: {{service: {{name: api, port: {{number: 8080}}}}}}
status: {{loadBalancer: {{}}}}
"""

ADMIN = f"""\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: admin
  namespace: shop
  annotations:
    kubernetes.io/ingress.class: nginx
    {P}auth-type: basic
    {P}auth-secret: admin-users
spec:
  rules:
  - host: admin.example.com
    http:
      paths:
      - {{path: /, pathType: Prefix, backend: {{service: {{name: admin, port: {{number: 8080}}}}}}}}
"""

OTHERS = """\
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: public}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: pub, namespace: shop}
spec: {ingressClassName: public, defaultBackend: {service: {name: api, port: {number: 8080}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: t, namespace: other}
spec: {ingressClassName: traefik}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bare, namespace: other}
spec: {defaultBackend: {service: {name: x, port: {number: 80}}}}
"""


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    d = tmp_path / "in"
    d.mkdir()
    (d / "shop.yaml").write_text(SHOP)
    (d / "admin.yaml").write_text(ADMIN)
    (d / "others.yaml").write_text(OTHERS)
    return d


def test_report_exit_code_and_converted_files(inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["-f", str(inputs), "--out", str(out)]) == 1  # auth-type basic has no equivalent
    report = capsys.readouterr().out
    assert f"Ingress shop/web ({inputs / 'shop.yaml'}:1: document 1): class nginx -> titanium" in report
    assert f"  mapped       {P}limit-rps: '50' -> titanium.io/limit-rps: '50' [security]" in report
    assert "per Ingress" in report
    assert f"  no effect    {P}proxy-buffering: 'on'" in report
    assert f"  UNSUPPORTED  {P}auth-type: 'basic' [security]" in report
    assert "path '/api(/|$)(.*)' (ImplementationSpecific) becomes '/api' (Prefix)" in report
    assert "Ingress other/t" in report and "skipped: class traefik is not converted (--treat-class traefik converts it)" in report
    assert "Ingress other/bare" in report and "skipped: it names no class (--treat-unclassed converts it)" in report
    assert "Summary: 3 Ingress(es) converted, 2 skipped" in report
    assert "2 security-relevant setting(s) without an equivalent (exit code 1)" in report
    assert sorted(p.name for p in out.iterdir()) == ["shop_admin.yaml", "shop_pub.yaml", "shop_web.yaml"]
    web = yaml.safe_load((out / "shop_web.yaml").read_text())
    assert web["metadata"] == {"name": "web", "namespace": "shop", "annotations": {
        "team": "shop", "titanium.io/limit-rps": "50", "titanium.io/rewrite-target": "/",
        "titanium.io/whitelist-source-range": "10.0.0.0/8"}}
    assert web["spec"]["ingressClassName"] == "titanium" and "status" not in web
    assert web["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/api"
    assert web["spec"]["rules"][0]["http"]["paths"][0]["pathType"] == "Prefix"
    admin = yaml.safe_load((out / "shop_admin.yaml").read_text())
    # the unsupported nginx annotations stay (the controller keeps warning); the legacy class goes
    assert admin["metadata"]["annotations"] == {f"{P}auth-secret": "admin-users", f"{P}auth-type": "basic"}
    assert admin["spec"]["ingressClassName"] == "titanium"


def test_exit_0_without_security_gaps_and_class_options(inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-f", str(inputs / "shop.yaml")]) == 0
    assert main(["-f", str(inputs / "others.yaml"), "--treat-class", "traefik", "--treat-unclassed", "--class", "edge",
                 "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "Ingress other/t" in out and "class traefik -> edge" in out and "class (none) -> edge" in out
    # --treat-class replaces the default name; IngressClasses of ingress-nginx's controller still count
    assert "Ingress shop/pub" in out and "class public -> edge" in out
    assert yaml.safe_load((tmp_path / "o" / "other_bare.yaml").read_text())["spec"]["ingressClassName"] == "edge"


def test_json_report(inputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["migrate-ingress", "-f", str(inputs), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["blocking"] is True
    web = next(i for i in data["ingresses"] if i["name"] == "web")
    rps = next(f for f in web["findings"] if f["annotation"] == f"{P}limit-rps")
    assert rps["verdict"] == "mapped" and rps["titanium"] == {"titanium.io/limit-rps": "50"} and rps["security"]
    assert next(i for i in data["ingresses"] if i["name"] == "t")["skipped"]


def test_bad_input_and_usage_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: 1\na: 2\n")
    assert main(["-f", str(bad)]) == 2
    assert "duplicate key 'a'" in capsys.readouterr().err
    old = tmp_path / "old.yaml"
    old.write_text("apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: o, annotations: {kubernetes.io/ingress.class: nginx}}\n")
    assert main(["-f", str(old)]) == 0
    assert "apiVersion extensions/v1beta1 is not served any more" in capsys.readouterr().out


def test_converted_ingresses_are_served_as_intended(inputs: Path, tmp_path: Path) -> None:
    """The converted Ingress, rendered with the controller's own render: served, no
    InvalidAnnotation or UnknownAnnotation, the policies and the rewrite as converted."""
    render = require_render()
    from titanium_gateway.render.options import RenderOptions

    out = tmp_path / "out"
    main(["-f", str(inputs / "shop.yaml"), "--out", str(out)])
    backend = """\
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: titanium}
spec: {controller: titanium.io/ingress-controller}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec: {ports: [{name: http, port: 8080}]}
"""
    (tmp_path / "backend.yaml").write_text(backend)
    result = render(build_snapshot(load_objects([out, tmp_path / "backend.yaml"])), RenderOptions())
    assert [s.name for s in result.statuses if s.kind == "Ingress"] == ["web"]
    assert {e.reason for e in result.events} <= {"InvalidTLS"}  # the TLS Secret is not in this input
    twp = yaml.safe_load(result.config)
    routes = [r for d in [twp, *(yaml.safe_load(b) for _, b in result.parts)] for r in d.get("routes") or []]
    (route,) = [r for r in routes if r["id"].startswith("ingress/shop/web/")]
    assert route["match"]["path"] == "/api" and route["match"]["pathKind"] == "Prefix"
    assert {p["kind"] for p in route["policies"]} == {"IpAllowDeny", "RateLimit"}
    assert route["transforms"][0]["kind"] == "PathRegexReplace"


BLOCKED = f"""\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: api
  namespace: shop
  annotations:
    {P}rewrite-target: /$2
spec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - {{path: "/api(/|$)(.*)", pathType: ImplementationSpecific, backend: {{service: {{name: api, port: {{number: 80}}}}}}}}
      - {{path: "/v[0-9]+/(.*)", pathType: ImplementationSpecific, backend: {{service: {{name: api, port: {{number: 80}}}}}}}}
      - {{path: /docs, pathType: Prefix, backend: {{service: {{name: api, port: {{number: 80}}}}}}}}
"""


def test_the_path_that_blocks_a_rewrite_is_named_and_a_never_matching_path_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "api.yaml"
    src.write_text(BLOCKED)
    assert main(["-f", str(src)]) == 1  # no security finding: the never-matching paths fail it
    report = capsys.readouterr().out
    rewrite = report.split(f"{P}rewrite-target: '/$2'", 1)[1].splitlines()[1]
    assert "the paths '/v[0-9]+/(.*)', '/docs' are not one of the prefix-stripping idioms" in rewrite
    assert "'/api(/|$)(.*)'" not in rewrite  # the path that fits is not blamed
    errors = [line for line in report.splitlines() if line.startswith("  ERROR ")]
    assert len(errors) == 2 and "path '/api(/|$)(.*)' (ImplementationSpecific)" in errors[0]
    assert "path '/v[0-9]+/(.*)' (ImplementationSpecific)" in errors[1] and "never" in errors[1]
    assert "2 path(s) that can never match (exit code 1): shop/api path '/api(/|$)(.*)'; shop/api path '/v[0-9]+/(.*)'" \
        in report
    assert main(["-f", str(src), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["neverMatching"] is True and data["blocking"] is False
    assert len(data["ingresses"][0]["pathErrors"]) == 2


@pytest.mark.parametrize(("annotations", "path", "fails"), [
    ({}, "/api/(.*)", False),  # no regex in ingress-nginx either: the same literal prefix
    ({f"{P}use-regex": "true"}, "/api/(.*)", True),
    ({f"{P}use-regex": "true"}, "/file.txt", False),  # '.' alone still matches the same literal paths
    ({f"{P}rewrite-target": "/"}, "/v1$", True),  # a rewrite-target makes ingress-nginx read regexes too
    ({f"{P}rewrite-target": "/$1", f"{P}use-regex": "true"}, "/api/(.*)", False),  # the idiom: converted
])
def test_which_paths_can_never_match(annotations: dict[str, str], path: str, fails: bool, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "a", "namespace": "n", "annotations": annotations},
           "spec": {"ingressClassName": "nginx", "rules": [{"http": {"paths": [
               {"path": path, "pathType": "ImplementationSpecific",
                "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}}
    src = tmp_path / "a.json"
    src.write_text(json.dumps(ing))
    assert main(["-f", str(src)]) == (1 if fails else 0)
    assert ("can never match" in capsys.readouterr().out) is fails
