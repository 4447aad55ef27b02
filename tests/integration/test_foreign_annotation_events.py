"""ForeignAnnotation Warning Events through the real controller and the in-process API server:
one Event per served Ingress, posted once (not once per reconcile); none for another class."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Env, wait_for

P = "nginx.ingress.kubernetes.io/"


def _ingress(env: Env, name: str, cls: str, host: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {
            "name": name, "namespace": "apps",
            "annotations": {P + "auth-type": "basic", P + "auth-secret": "basic-auth", P + "proxy-buffering": "off"}},
        "spec": {"ingressClassName": cls, "rules": [{"host": host, "http": {
            "paths": [{"path": "/", "pathType": "Prefix",
                       "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}}


def _foreign(env: Env) -> list[dict[str, Any]]:
    return [e for e in env.server.list_objects("events.events.k8s.io", "apps") if e.get("reason") == "ForeignAnnotation"]


def test_foreign_annotations_post_one_event_once(env: Env) -> None:
    env.service("api")
    env.ensure_ns("apps")
    env.server.put_object(_ingress(env, "shop", env.rel.ingress_class, "shop.example.com"))
    env.server.put_object(_ingress(env, "theirs", "nginx", "theirs.example.com"))
    inst = env.start_controller()
    (e,) = wait_for(lambda: _foreign(env), timeout=15, what="ForeignAnnotation event")
    assert e["type"] == "Warning" and e["regarding"]["kind"] == "Ingress" and e["regarding"]["name"] == "shop"
    assert e["note"].startswith(f"2 {P} annotations are not enforced here: auth-secret, auth-type. (1) ")
    assert "proxy-buffering" not in e["note"]  # (without effect here)
    inst.reconcile_again(3)
    assert len(_foreign(env)) == 1  # posted once, and never for the Ingress of another class
    assert (_foreign(env)[0].get("series") or {}).get("count", 1) == 1
