"""Loading and reloading the config directory, listeners bound at start, the command line."""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

import requests  # noqa: E402

from tests.dataplane.docs import cluster, document, dump, listener, route  # noqa: E402
from tests.dataplane.rules import covers  # noqa: E402
from tests.dataplane.support import TOKEN, Issuer, free_port, wait_for  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _doc(port: int, body: str, **kw) -> dict:
    return document([route("r", 1, directResponse={"status": 200, "body": body})], [cluster("be", [])],
                    listeners=[listener(port)], **kw)


def _get(port: int, path: str = "/") -> requests.Response:
    return requests.get(f"http://127.0.0.1:{port}{path}", timeout=5)


@covers("files.reload", "admin.version", "listeners.bound-at-start", "admin.readyz")
def test_listeners_bind_when_the_first_config_loads_then_reload_in_place(harness) -> None:
    port = free_port()
    harness.start()
    assert requests.get(f"{harness.admin}/readyz", timeout=5).status_code == 503
    with pytest.raises(requests.ConnectionError):
        _get(port)  # no listener before a config
    h1 = harness.write(_doc(port, "one"))
    harness.wait_hash(h1)
    assert _get(port).text == "one"
    h2 = harness.write(_doc(port, "two"))
    harness.wait_hash(h2)
    assert _get(port).text == "two"


@covers("doc.shape")
def test_an_invalid_document_keeps_the_previous_config(harness, caplog) -> None:
    port = free_port()
    h1 = harness.write(_doc(port, "good"))
    harness.start()
    harness.wait_hash(h1)
    with caplog.at_level(logging.WARNING, logger="titanium.reference_dataplane.config"):
        harness.write(b"schemaVersion: '7.1'\nroutes: [{id: x}]\n")
        wait_for(lambda: harness.dp.source.last_error)
    assert "keeping the previous one" in caplog.text and "routes[0]" in caplog.text
    assert harness.version()["config_hash"] == h1 and _get(port).text == "good"
    assert requests.get(f"{harness.admin}/readyz", timeout=5).status_code == 200
    metrics = requests.get(f"{harness.admin}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5).text
    assert 'titanium_config_reloads_total{result="rejected"}' in metrics
    h3 = harness.write(_doc(port, "fixed"))  # and it retries on the next change
    harness.wait_hash(h3)
    assert _get(port).text == "fixed"


@covers("parts.order", "parts.sha256", "parts.missing", "parts.hash-covers")
def test_parts_load_and_a_part_not_ready_keeps_the_previous_config(harness) -> None:
    port = free_port()
    h1 = harness.write(_doc(port, "unsplit"))
    harness.start()
    harness.wait_hash(h1)

    part1 = dump({"routes": [route("a", 2, {"path": "/a", "pathKind": "Prefix"},
                                   directResponse={"status": 200, "body": "from part 1"})], "clusters": []})
    part2 = dump({"routes": [route("b", 1, {"path": "/b", "pathKind": "Prefix"},
                                   directResponse={"status": 200, "body": "from part 2"})], "clusters": [cluster("be", [])]})
    root = dump({"schemaVersion": "7.1", "listeners": [listener(port)], "certificates": {"items": []},
                 "include": [{"file": "twp.part-1.yaml", "sha256": hashlib.sha256(part1).hexdigest()},
                             {"file": "twp.part-2.yaml", "sha256": hashlib.sha256(part2).hexdigest()}]})
    # the root arrives before part 2: not loaded yet
    h2 = harness.write(root, {"twp.part-1.yaml": part1})
    wait_for(lambda: "missing" in harness.dp.source.last_error)
    assert harness.version()["config_hash"] == h1
    # part 2 arrives, but with other bytes: still not loaded
    (harness.dir / "twp.part-2.yaml").write_bytes(part2 + b"# stale\n")
    wait_for(lambda: "differs" in harness.dp.source.last_error)
    assert harness.version()["config_hash"] == h1 and _get(port, "/a").text == "unsplit"
    # the right bytes: loaded, the root's hash reported
    (harness.dir / "twp.part-2.yaml").write_bytes(part2)
    harness.wait_hash(h2)
    assert _get(port, "/a").text == "from part 1" and _get(port, "/b").text == "from part 2"


@covers("files.relative")
def test_a_missing_pfx_keeps_the_previous_config(harness) -> None:
    port = free_port()
    h1 = harness.write(_doc(port, "plain"))
    harness.start()
    harness.wait_hash(h1)
    doc = _doc(port, "with cert", certificates=[{"file": "apps.x.pfx", "hosts": ["x.test"]}])
    h2 = harness.write(doc)
    wait_for(lambda: "apps.x.pfx" in harness.dp.source.last_error)
    assert harness.version()["config_hash"] == h1
    (harness.dir / "apps.x.pfx").write_bytes(Issuer().pfx("x", ["x.test"]))
    harness.wait_hash(h2)
    assert _get(port).text == "with cert"


def _projected(directory: Path, stamp: str, files: dict[str, bytes]) -> None:
    """What the kubelet does: a new timestamped directory, a new ..data symlink renamed over
    the old one; every visible name is a symlink into ..data."""
    target = directory / f"..{stamp}"
    target.mkdir()
    for name, data in files.items():
        (target / name).write_bytes(data)
    tmp = directory / "..data_tmp"
    os.symlink(target.name, tmp)
    os.rename(tmp, directory / "..data")
    for name in files:
        link = directory / name
        if not link.is_symlink():
            os.symlink(f"..data/{name}", link)


@covers("files.reload")
def test_the_kubelet_data_symlink_swap_reloads(harness) -> None:
    port = free_port()
    first = dump(_doc(port, "first"))
    _projected(harness.dir, "2026_12_01_10_00_00.000000001", {"twp.yaml": first})
    harness.start()
    harness.wait_hash(hashlib.sha256(first).hexdigest())
    assert _get(port).text == "first"
    second = dump(_doc(port, "second"))
    _projected(harness.dir, "2026_12_01_10_01_00.000000002", {"twp.yaml": second})
    harness.wait_hash(hashlib.sha256(second).hexdigest())
    assert _get(port).text == "second"


@covers("listeners.bound-at-start")
def test_a_listener_change_is_logged_not_applied(harness, caplog) -> None:
    port, other = free_port(), free_port()
    h1 = harness.write(_doc(port, "a"))
    harness.start()
    harness.wait_hash(h1)
    with caplog.at_level(logging.WARNING, logger="titanium.reference_dataplane"):
        h2 = harness.write(document([route("r", 1, directResponse={"status": 200, "body": "b"})], [cluster("be", [])],
                                    listeners=[listener(other)]))
        harness.wait_hash(h2)
    assert "listener set changed" in caplog.text
    assert _get(port).text == "b"  # the routes are reloaded, on the listener bound at start
    with pytest.raises(requests.ConnectionError):
        _get(other)


@covers("listeners.host")
def test_listener_host_is_the_configs_without_bind_address(harness) -> None:
    port = free_port()
    doc = _doc(port, "loopback")
    doc["listeners"][0]["host"] = "127.0.0.1"
    harness.write(doc)
    harness.start(bind_address=None, admin_address="127.0.0.1")
    wait_for(lambda: harness.dp.ready)
    assert harness.dp.bound[port][0] == "127.0.0.1"
    assert _get(port).text == "loopback"


@covers("listeners.host", "admin.version", "admin.readyz")
def test_command_line(tmp_path: Path) -> None:
    port, admin = free_port(), free_port()
    (tmp_path / "twp.yaml").write_bytes(dump(_doc(port, "cli")))
    env = {**os.environ, "PYTHONPATH": str(REPO), "TITANIUM_ADMIN_TOKEN": "cli-token"}
    proc = subprocess.Popen([sys.executable, "-m", "titanium_gateway.reference_dataplane", "--config-dir", str(tmp_path),
                             "--admin-port", str(admin), "--bind-address", "127.0.0.1", "--access-log"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path))
    try:
        def ready() -> bool:
            try:
                return requests.get(f"http://127.0.0.1:{admin}/readyz", timeout=1).status_code == 200
            except requests.ConnectionError:
                return False

        wait_for(ready, timeout=20, interval=0.1)
        assert _get(port, "/x?y=1").text == "cli"
        v = requests.get(f"http://127.0.0.1:{admin}/version", headers={"Authorization": "Bearer cli-token"}, timeout=5)
        assert v.json()["config_hash"] == hashlib.sha256((tmp_path / "twp.yaml").read_bytes()).hexdigest()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err.decode()
    assert f"GET 127.0.0.1:{port} /x?y=1 route=r status=200" in out.decode()


def test_command_line_exits_1_when_a_listener_cannot_bind(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        (tmp_path / "twp.yaml").write_bytes(dump(_doc(port, "x")))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "titanium_gateway.reference_dataplane", "--config-dir",
                               str(tmp_path), "--admin-port", str(free_port()), "--bind-address", "127.0.0.1"],
                              env=env, capture_output=True, timeout=30)
    assert proc.returncode == 1 and b"cannot bind listener" in proc.stderr
    assert time.monotonic() - start < 30


@covers("files.reload")
def test_same_bytes_rewritten_reload_nothing(harness) -> None:
    port = free_port()
    h1 = harness.write(_doc(port, "same"))
    harness.start()
    harness.wait_hash(h1)
    generation = harness.dp.state.generation
    attempts = harness.dp.source.attempts
    harness.write((harness.dir / "twp.yaml").read_bytes())  # a new inode, the same content
    wait_for(lambda: harness.dp.source.attempts > attempts)
    time.sleep(0.2)
    assert harness.dp.state.generation == generation and harness.dp.source.last_error == ""


def test_stop_drains_the_requests_in_flight_and_takes_no_new_ones(harness, backends) -> None:
    import threading

    be = backends("be")
    port = free_port()
    h = harness.write(document([route("r", 1)], [cluster("be", [be.destination()])], listeners=[listener(port)]))
    dp = harness.start()
    harness.wait_hash(h)
    answers: list[requests.Response] = []
    slow = threading.Thread(target=lambda: answers.append(
        requests.get(f"http://127.0.0.1:{port}/slow", headers={"x-echo-delay": "1.5"}, timeout=10)))
    slow.start()
    be.wait_requests(1)
    stopping = threading.Thread(target=harness.thread.call, args=(dp.stop,), kwargs={"timeout": 20})
    stopping.start()
    wait_for(lambda: dp.draining)
    ready = requests.get(f"{harness.admin}/readyz", timeout=5)
    assert ready.status_code == 503 and "draining" in ready.text
    with pytest.raises(requests.ConnectionError):
        wait_for(lambda: _get(port) is None, timeout=1)  # the listener no longer accepts
    slow.join(10)
    stopping.join(20)
    assert [a.status_code for a in answers] == [200]  # the request in flight was answered
