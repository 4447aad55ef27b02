"""make dev's image map (hack/kube/dev-images.yaml) runs every image its pods name, and the echo
backends' stand-in (tools/podrunner/shims/echo.py) answers as the echo-basic image does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

from tests.support.ports import free_port
from tools.podrunner.images import ImageMap

ROOT = Path(__file__).resolve().parents[2]
DEV_IMAGES = ROOT / "hack" / "kube" / "dev-images.yaml"


def images_of_dev_pods() -> dict[str, dict]:
    """image -> container, for every container make dev runs: the chart's two (with the dev
    values) and the quick start's backends."""
    values = yaml.safe_load((ROOT / "hack" / "kube" / "dev-values.yaml").read_text())
    out = {}
    for part, container in (("controller", {"command": ["titanium-gateway", "controller"]}),
                            ("dataPlane", {"command": ["titanium", "run", "--config", "/etc/titanium/twp.yaml",
                                                       "--watch"]})):
        image = values[part]["image"]
        out[f"{image['repository']}:{image['tag']}"] = container
    for doc in yaml.safe_load_all((ROOT / "examples" / "quickstart-backends" / "backends.yaml").read_text()):
        if doc and doc["kind"] == "Deployment":
            for c in doc["spec"]["template"]["spec"]["containers"]:
                out[c["image"]] = c
    return out


def test_every_image_of_make_dev_is_mapped_to_a_program_of_this_tree() -> None:
    images = ImageMap.load(str(DEV_IMAGES))
    seen = images_of_dev_pods()
    assert len(seen) == 3
    for image, container in seen.items():
        argv = images.find(image).argv({**container, "image": image})
        assert argv[0] == sys.executable and argv[1] == "-m", (image, argv)
        assert argv[2] in ("titanium_gateway", "tools.podrunner.shims.titanium", "tools.podrunner.shims.echo")


def test_the_echo_stand_in_answers_like_echo_basic(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HTTP_PORT": str(port), "PODRUNNER_BIND_ADDRESS": "127.0.0.1",
           "POD_NAME": "api-abc12", "NAMESPACE": "apps"}
    proc = subprocess.Popen([sys.executable, "-m", "tools.podrunner.shims.echo"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        body = None
        end = time.monotonic() + 20
        while body is None:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/items?x=1", method="POST", data=b"{}",
                                         headers={"Host": "shop.example.com", "X-Test": "1"})
            try:
                with urllib.request.urlopen(req, timeout=2) as r:
                    assert r.status == 200 and r.headers["Content-Type"] == "application/json"
                    body = json.loads(r.read())
            except OSError:
                assert time.monotonic() < end and proc.poll() is None, "the echo stand-in did not start"
                time.sleep(0.1)
        assert body["path"] == "/api/items?x=1" and body["host"] == "shop.example.com"
        assert body["method"] == "POST" and body["proto"] == "HTTP/1.1"
        assert body["headers"]["X-Test"] == ["1"]
        assert (body["pod"], body["namespace"]) == ("api-abc12", "apps")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0, out
    assert b"POST /api/items?x=1" in out  # a log line per request, as the kubelet's log API shows it


def test_the_echo_stand_in_in_grpc_mode_answers_like_echo_basic() -> None:
    """With GRPC_ECHO_SERVER (make dev's grpc-echo) the stand-in serves echo-basic's GrpcEcho over
    h2c: the method, the call's metadata and the pod in the answer; an unknown method is
    UNIMPLEMENTED."""
    from tools.podrunner.shims import grpcecho

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HTTP_PORT": str(port), "PODRUNNER_BIND_ADDRESS": "127.0.0.1",
           "POD_NAME": "grpc-echo-abc12", "NAMESPACE": "apps", "GRPC_ECHO_SERVER": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "tools.podrunner.shims.echo"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 20
        while (out := grpcecho.call(f"127.0.0.1:{port}", "grpc.example.com", "EchoTwo", (("x-test", "1"),),
                                    timeout=2))["code"] == "UNAVAILABLE":
            assert time.monotonic() < end and proc.poll() is None, "the gRPC stand-in did not start"
            time.sleep(0.1)
        assert out["code"] == "OK", out
        a = out["answer"]["assertions"]
        assert a["fullyQualifiedMethod"] == "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/EchoTwo"
        assert {"key": "x-test", "value": "1"} in a["headers"]
        assert a["context"] == {"namespace": "apps", "pod": "grpc-echo-abc12"}
        missing = grpcecho.call(f"127.0.0.1:{port}", "grpc.example.com", "Nope", timeout=2)
        assert (missing["code"], missing["answer"]) == ("UNIMPLEMENTED", None)
    finally:
        proc.send_signal(signal.SIGTERM)
        log, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0, log
    assert b"GrpcEcho/EchoTwo" in log
