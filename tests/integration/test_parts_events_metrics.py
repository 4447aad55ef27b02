"""Split configs (parts), Ingress events, the metrics the controller exports."""

from __future__ import annotations

import dataclasses
from typing import Any

import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import Env, wait_for
from titanium_gateway.render import render
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.snapshot import Snapshot


def small_parts(snap: Snapshot, opts: RenderOptions) -> Any:
    return render(snap, dataclasses.replace(opts, part_limit_bytes=2048))


def part_data(env: Env, n: int) -> dict[str, str]:
    cm = env.get("ConfigMap", env.rel.namespace, f"{env.rel.config_map}-part-{n}") or {}
    return cm.get("data") or {}


def test_split_config_parts_written_first_loaded_and_emptied_after_shrink(env: Env) -> None:
    env.service("api")
    env.gateway()
    for i in range(40):
        env.route(name=f"r{i}", host=f"host-{i}.example.com", path=f"/p{i}")
    env.start_controller(render_fn=small_parts)
    env.wait_programmed(timeout=20)
    root = yaml.safe_load(env.root_config())
    n = len(root["include"])
    assert n >= 3
    for i in range(1, n + 1):
        assert f"twp.part-{i}.yaml" in part_data(env, i)
    # parts were written before the root that includes them
    cm_writes = [r.name for r in env.writes("configmaps")]
    assert cm_writes.index(env.rel.config_map) > cm_writes.index(f"{env.rel.config_map}-part-{n}")
    doc = env.fleet[0].document
    assert len([r for r in doc["routes"] if "host-" in str(r)]) >= 40
    # shrink: fewer parts; the parts no longer listed are emptied once the new root is confirmed
    for i in range(2, 40):
        env.server.delete_object("HTTPRoute", "apps", f"r{i}")
    wait_for(lambda: len(yaml.safe_load(env.root_config()).get("include") or []) < n, timeout=10)
    env.wait_programmed(timeout=15)
    m = len(yaml.safe_load(env.root_config()).get("include") or [])
    wait_for(lambda: all(part_data(env, i) == {} for i in range(m + 1, n + 1)), timeout=10, what="emptied parts")
    assert env.get("ConfigMap", env.rel.namespace, f"{env.rel.config_map}-part-{n}") is not None


def test_ingress_problem_posts_one_event(env: Env) -> None:
    env.service("api")
    env.ensure_ns("apps")
    env.server.put_object({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {
            "name": "shop", "namespace": "apps", "annotations": {"titanium.io/no-such-annotation": "x"}},
        "spec": {"ingressClassName": env.rel.ingress_class, "rules": [{"host": "shop.example.com", "http": {
            "paths": [{"path": "/", "pathType": "Prefix",
                       "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}})
    inst = env.start_controller()
    ev = wait_for(lambda: [e for e in env.server.list_objects("events.events.k8s.io", "apps")
                           if e.get("reason") == "UnknownAnnotation"], timeout=15, what="UnknownAnnotation event")
    e = ev[0]
    assert e["regarding"]["kind"] == "Ingress" and e["regarding"]["name"] == "shop"
    assert e["reportingController"] == env.rel.controller_name and e["reportingInstance"] == "ctrl-a"
    inst.reconcile_again(3)
    assert len([e for e in env.server.list_objects("events.events.k8s.io", "apps")
                if e.get("reason") == "UnknownAnnotation"]) == 1  # posted once, not per reconcile
    # the Ingress still serves, and its status carries the data-plane address
    wait_for(lambda: ((env.get("Ingress", "apps", "shop") or {}).get("status") or {}).get("loadBalancer"),
             timeout=10, what="Ingress status.loadBalancer")


def test_metrics_and_health_endpoints(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    inst = env.start_controller()
    env.wait_programmed()
    base = f"http://127.0.0.1:{inst.health_port}"
    assert requests.get(f"{base}/healthz", timeout=5).status_code == 200
    assert requests.get(f"{base}/readyz", timeout=5).status_code == 200
    text = wait_for(lambda: (t := requests.get(f"{base}/metrics", timeout=5).text)
                    and "titanium_status_writes_total" in t and t, timeout=5)
    samples = [(s.name, s.labels) for fam in text_string_to_metric_families(text) for s in fam.samples]
    for name, labels in (
            ("controller_runtime_reconcile_total", {"result": "success"}),
            ("controller_runtime_reconcile_time_seconds_count", {}),
            ("titanium_render_duration_seconds_count", {}), ("titanium_config_bytes", {}),
            ("titanium_config_writes_total", {}), ("titanium_status_writes_total", {}),
            ("titanium_probe_results_total", {"result": "confirmed"}), ("leader_election_master_status", {}),
            ("rest_client_requests_total", {}), ("workqueue_depth", {"name": "reconcile"}),
            ("workqueue_adds_total", {"name": "reconcile"}), ("workqueue_queue_duration_seconds_bucket", {"name": "reconcile"}),
            ("workqueue_work_duration_seconds_count", {"name": "reconcile"}),
            ("workqueue_retries_total", {"name": "reconcile"})):
        assert any(n == name and labels.items() <= got.items() for n, got in samples), (name, labels)


def _not_after(secret: dict[str, Any]) -> int:
    import base64

    from cryptography import x509

    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    return int(cert.not_valid_after_utc.timestamp())


def test_certificate_expiry_and_gateway_programmed_metrics(env: Env) -> None:
    """One expiry series per converted certificate (Gateway listener and Ingress tls) with its
    notAfter, one Programmed series per Gateway; both removed when their object is gone."""
    from tests.integration.conftest import make_tls_secret

    env.service("api")
    gw_secret, ing_secret = make_tls_secret("shop-tls", "apps"), make_tls_secret("blog-tls", "apps", cn="blog.example.com")
    env.server.put_object(gw_secret)
    env.server.put_object(ing_secret)
    env.gateway(listeners=[{"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
                            "tls": {"mode": "Terminate", "certificateRefs": [{"name": "shop-tls"}]}}])
    env.gateway("other")  # HTTP only: no certificate
    env.server.put_object({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "blog", "namespace": "apps"},
        "spec": {"ingressClassName": env.rel.ingress_class,
                 "tls": [{"hosts": ["blog.example.com"], "secretName": "blog-tls"}],
                 "rules": [{"host": "blog.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
                            "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}})
    inst = env.start_controller()
    env.wait_programmed(timeout=20)
    expiry = "titanium_certificate_expiry_timestamp_seconds"
    wait_for(lambda: inst.metric("titanium_gateway_programmed", namespace="apps", name="web") == 1, timeout=10,
             what="web Programmed in /metrics")
    assert inst.metric(expiry, namespace="apps", name="shop-tls") == _not_after(gw_secret)
    assert inst.metric(expiry, namespace="apps", name="blog-tls") == _not_after(ing_secret)
    text = requests.get(f"http://127.0.0.1:{inst.health_port}/metrics", timeout=5).text
    series = {(s.name, tuple(sorted(s.labels.items()))) for fam in text_string_to_metric_families(text)
              for s in fam.samples if s.name in (expiry, "titanium_gateway_programmed")}
    assert series == {
        (expiry, (("name", "blog-tls"), ("namespace", "apps"))),
        (expiry, (("name", "shop-tls"), ("namespace", "apps"))),
        ("titanium_gateway_programmed", (("name", "other"), ("namespace", "apps"))),
        ("titanium_gateway_programmed", (("name", "web"), ("namespace", "apps"))),
    }
    env.server.delete_object("Ingress", "apps", "blog")
    env.server.delete_object("Gateway", "apps", "other")
    wait_for(lambda: 'name="blog-tls"' not in inst.registry.render_text()
             and 'name="other"' not in inst.registry.render_text(), timeout=10, what="series of deleted objects removed")
    assert inst.metric(expiry, namespace="apps", name="shop-tls") == _not_after(gw_secret)
