"""The plain-YAML install (generated from the chart) starts the controller: every env var and arg
it sets is an option the controller knows, and the values parse."""

from __future__ import annotations

from pathlib import Path

import yaml

from titanium_gateway.controller.options import parse_options

MANIFEST = Path(__file__).resolve().parents[2] / "manifests" / "titanium-gateway.yaml"


def test_manifest_controller_env_parses() -> None:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    dep = next(d for d in docs if d["kind"] == "Deployment" and "controller" in d["metadata"]["name"])
    (c,) = [c for c in dep["spec"]["template"]["spec"]["containers"]]
    env = {}
    for e in c.get("env") or []:
        if "value" in e:
            env[e["name"]] = str(e["value"])
        else:  # fieldRef / secretKeyRef: a stand-in value
            env[e["name"]] = "from-the-pod"
    opts = parse_options(list(c.get("args") or []), env)
    assert opts.data_plane_service and opts.config_map and opts.tls_secret
    assert opts.admin_token == "from-the-pod"
    assert opts.identity == "from-the-pod"
    names = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
    assert opts.health_port in names.values()
