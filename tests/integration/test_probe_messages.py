"""What Programmed says while a data-plane pod does not confirm the config: a data plane without
the admin API (the public Titanium CLI has no /version with a config_hash), a token mismatch,
nothing on the admin port, a pod still loading the new config. Through the real controller
against the FakeApiServer; the pod is a real HTTP server on loopback."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.integration.conftest import Env, Rollout, condition, wait_for
from tests.support.apiserver import FakeApiServer
from tests.support.release import Release, seed_release

HOST = "127.0.0.2"
BUILD = "it needs a Titanium build with the admin API (/readyz, and /version reporting the config_hash)"
CANNOT = "this data plane cannot confirm which config it runs, so Programmed will not turn True"


class AdminPort:
    """One data-plane pod's admin port: ``answer(path, authorization) -> (status, body)``;
    ``None``: nothing listens on the port (connection refused)."""

    def __init__(self, answer: Callable[[str, str | None], tuple[int, str]] | None) -> None:
        self.httpd: ThreadingHTTPServer | None = None
        if answer is None:
            s = socket.socket()
            s.bind((HOST, 0))
            self.port = int(s.getsockname()[1])
            s.close()
            return

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                status, body = answer(self.path, self.headers.get("Authorization"))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer((HOST, 0), Handler)
        self.port = int(self.httpd.server_address[1])
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()


def _register(server: FakeApiServer, rel: Release) -> str:
    """The data-plane Service, Deployment, one ready Pod on ``HOST`` and its EndpointSlice (a data
    plane from raw manifests: its readiness is not the admin API's /readyz). Returns the pod name."""
    ns, name, labels = rel.namespace, rel.data_plane, {"app": "edge"}
    pod = "edge-0"
    server.put_object({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
                       "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
    server.put_object({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
                       "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                                "template": {"metadata": {"labels": labels},
                                             "spec": {"containers": [{"name": "t", "image": "titanium"}]}}}})
    server.put_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": ns, "labels": labels},
                       "spec": {"containers": [{"name": "t", "image": "titanium"}]},
                       "status": {"phase": "Running", "podIP": HOST, "podIPs": [{"ip": HOST}]}})
    uid = server.get_object("Pod", ns, pod)["metadata"]["uid"]
    server.put_object({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                       "metadata": {"name": f"{name}-x", "namespace": ns,
                                    "labels": {"kubernetes.io/service-name": name}},
                       "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                       "endpoints": [{"addresses": [HOST], "conditions": {"ready": True},
                                      "targetRef": {"kind": "Pod", "name": pod, "namespace": ns, "uid": uid}}]})
    return pod


@pytest.fixture
def edge() -> Iterator[Callable[[Any], Env]]:
    """``edge(answer)``: an Env whose data plane is one pod answering its admin port with ``answer``."""
    server = FakeApiServer(bookmark_interval=0.5).start()
    rel = Release()
    seed_release(server, rel)
    made: list[tuple[Env, AdminPort]] = []

    def make(answer: Callable[[str, str | None], tuple[int, str]] | None) -> Env:
        admin = AdminPort(answer)
        pod = _register(server, rel)
        env = Env(server, rel, admin, rollout=Rollout(server, rel.namespace, rel.data_plane, [pod]))  # type: ignore[arg-type]
        made.append((env, admin))
        env.service("api")
        env.gateway()
        env.route()
        return env

    try:
        yield make
    finally:
        for env, admin in made:
            for inst in env.instances:
                inst.shutdown(5)
            assert env.rollout is not None
            env.rollout.stop()
            admin.stop()
        server.stop()


def _version(body: dict[str, Any] | str, token: str | None = None) -> Callable[[str, str | None], tuple[int, str]]:
    text = body if isinstance(body, str) else json.dumps(body)

    def answer(path: str, auth: str | None) -> tuple[int, str]:
        if path == "/readyz":
            return 200, "ok"
        if path == "/version":
            if token is not None and auth != f"Bearer {token}":
                return 401, '{"error":"unauthorized"}'
            return 200, text
        return 404, "not found"

    return answer


def _not_found(path: str, auth: str | None) -> tuple[int, str]:
    return (200, "ok") if path == "/readyz" else (404, "not found")


def _pending_message(env: Env, match: Callable[[str], bool], what: str) -> str:
    """The Programmed message once ``match`` accepts it (first the listener rollout is awaited)."""
    c = wait_for(lambda: (c := condition(env.get("Gateway", "apps", "web"), "Programmed"))
                 and match(c.get("message", "")) and c, timeout=15, what=f"Programmed message {what}")
    assert c["status"] == "False" and c["reason"] == "Pending"
    return str(c["message"])


@pytest.mark.parametrize(("answer", "expected"), [
    (_not_found, f"pod edge-0 ({HOST}) does not serve /version (404) with a config_hash: {CANNOT}; {BUILD}"),
    (_version({"version": "7.1.0"}), f"pod edge-0 ({HOST}): /version answered 200 without a config_hash field: "
                                     f"{CANNOT}; {BUILD}"),
    (_version("Titanium 7.1.0"), f"pod edge-0 ({HOST}): /version answered 200 but its body is not JSON, so it "
                                 f"reports no config_hash: {CANNOT}; {BUILD}"),
    (None, f"pod edge-0 ({HOST}): connection refused on the admin port PORT: nothing listens there. Either "
           f"--admin-port is not the data plane's admin port, or {CANNOT}; {BUILD}"),
], ids=["version-404", "no-config-hash", "not-json", "connection-refused"])
def test_a_data_plane_that_cannot_confirm_says_so(edge: Callable[[Any], Env], answer: Any, expected: str) -> None:
    env = edge(answer)
    inst = env.start_controller()
    expected = expected.replace("PORT", str(inst.opts.admin_port))
    _pending_message(env, lambda m: m == expected, repr(expected))


def test_a_token_mismatch_names_titanium_admin_token(edge: Callable[[Any], Env]) -> None:
    env = edge(_version({"config_hash": "0" * 64}, token="the-data-planes-own-token"))
    env.start_controller()
    message = _pending_message(env, lambda m: "rejected the admin token" in m, "naming the token")
    assert message == (f"pod edge-0 ({HOST}) rejected the admin token (/version 401): the controller's "
                       "TITANIUM_ADMIN_TOKEN does not match the data plane's (both must come from the same Secret)")
    assert env.rel.token not in message


def test_a_pod_still_loading_says_so_then_confirms(env: Env) -> None:
    env.service("api")
    env.gateway()
    env.route()
    env.start_controller()
    env.wait_programmed()
    old = env.fleet[0].config_hash
    assert old is not None
    env.fleet[0].lag = True  # it holds back the next config until released
    env.route(path="/v2")
    message = _pending_message(env, lambda m: "still loading it" in m, "still loading")
    assert message.startswith(f"pod {env.fleet[0].name} ({env.fleet[0].host}) runs config {old[:12]}, waiting for ")
    env.fleet[0].release()
    env.wait_programmed(timeout=15)
