"""Configs rendered by the project's own render (the offline CLI on examples/) load and route
as the manifests say, in the contract library and in the reference data plane."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.dataplane.rules import covers
from titanium_gateway.contract import ForwardTo, Request, decide, load_directory, select_certificate

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def render(inputs: Path, out: Path, *flags: str) -> Path:
    """The directory of the data plane that serves the example's one Gateway: its own (a data
    plane per Gateway, the default), or the shared one with ``--data-plane-mode shared``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "titanium_gateway", "render", "-f", str(inputs), "--out", str(out),
                           *flags], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    own = sorted(out.glob("gateways/*/*/twp.yaml"))
    return own[0].parent if len(own) == 1 else out


def _documents(folder: Path) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for f in sorted(folder.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(f.read_text()) if d]
    return docs


@covers("files.root", "d.precedence")
def test_rendered_quickstart_routes_in_the_library(tmp_path: Path) -> None:
    cfg, _ = load_directory(render(EXAMPLES / "quickstart", tmp_path / "out"))
    api = decide(cfg, Request.from_target("GET", "/api/items?x=1", [("Host", "shop.example.com")]))
    assert api.route_id == "httproute/apps/shop/r0m0"
    assert isinstance(api.outcome, ForwardTo)
    assert {(c.cluster_id.split(".")[1], c.weight) for c in api.outcome.clusters} == {("api", 9), ("api-canary", 1)}
    assert [r.id for r in api.losers] == ["httproute/apps/shop/r1m0"]
    front = decide(cfg, Request.from_target("GET", "/apix", [("Host", "SHOP.example.com:80")]))
    assert front.route_id == "httproute/apps/shop/r1m0"
    assert decide(cfg, Request.from_target("GET", "/api", [("Host", "other.example.com")])).route is None


@covers("files.pfx", "d.certificates")
def test_rendered_https_example_selects_its_certificate(tmp_path: Path) -> None:
    cfg, _ = load_directory(render(EXAMPLES / "https", tmp_path / "out"))
    assert [listener.decrypt_ssl for listener in cfg.listeners] == [True]
    item = select_certificate(cfg.certificates, "shop.example.com")
    assert item is not None and item.file == "apps.shop-tls.pfx"


def _into(rendered: Path, config_dir: Path) -> None:
    """The rendered data plane's twp.yaml (and parts) in the data plane's config directory."""
    config_dir.mkdir(parents=True, exist_ok=True)
    for f in rendered.glob("twp*.yaml"):
        (config_dir / f.name).write_bytes(f.read_bytes())


def _localize(docs: list[dict[str, Any]], backends) -> dict[str, Any]:
    """Point every EndpointSlice at local echo backends: each endpoint address becomes its own
    127.0.0.N, each slice gets a free port. The backends, by original address."""
    from tests.dataplane.support import free_port

    made: dict[str, Any] = {}
    n = 2
    for d in docs:
        if d.get("kind") != "EndpointSlice":
            continue
        service = d["metadata"]["labels"]["kubernetes.io/service-name"]
        port = free_port()
        for p in d["ports"]:
            p["port"] = port
        for ep in d["endpoints"]:
            hosts = []
            for addr in ep["addresses"]:
                host = f"127.0.0.{n}"
                n += 1
                made[addr] = backends(f"{service}@{addr}", host=host, port=port)
                hosts.append(host)
            ep["addresses"] = hosts
    return made


@covers("files.root", "action.clusters", "c.destinations", "d.mirror-weight")
def test_rendered_quickstart_serves_end_to_end(tmp_path: Path, harness, backends) -> None:
    pytest.importorskip("aiohttp")
    import requests

    from tests.dataplane.support import free_port, wait_for

    docs = _documents(EXAMPLES / "quickstart")
    made = _localize(docs, backends)
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "all.yaml").write_text(yaml.safe_dump_all(docs))
    port = free_port()
    _into(render(inputs, tmp_path / "out", "--port-map", f"80={port}", "--data-plane-ports", str(port)), harness.dir)
    harness.start()
    wait_for(lambda: harness.dp.ready)
    s = requests.Session()
    seen: Counter[str] = Counter()
    for _ in range(100):
        r = s.get(f"http://127.0.0.1:{port}/api/x", headers={"Host": "shop.example.com"}, timeout=5)
        assert r.status_code == 200
        seen[r.json()["backend"].split("@")[0]] += 1
    assert seen["api"] > seen["api-canary"] > 0 and set(seen) == {"api", "api-canary"}  # 9:1
    assert made["10.0.1.7"].requests and made["10.0.1.8"].requests  # both api pods, weight 1 each
    for _ in range(5):
        r = s.get(f"http://127.0.0.1:{port}/", headers={"Host": "shop.example.com"}, timeout=5)
        assert r.json()["backend"] == "frontend@10.0.3.2"
    assert made["10.0.3.3"].requests == []  # the pod that is not ready gets no traffic
    assert s.get(f"http://127.0.0.1:{port}/", headers={"Host": "other.example.com"}, timeout=5).status_code == 404


@covers("files.pfx", "listeners.decryptSsl")
def test_rendered_https_example_serves_end_to_end(tmp_path: Path, harness, backends) -> None:
    pytest.importorskip("aiohttp")
    import socket

    from tests.dataplane.support import free_port, wait_for
    from titanium_gateway.render.certificates import convert_tls_secret

    docs = _documents(EXAMPLES / "https")
    for d in docs:
        if d.get("kind") == "EndpointSlice":
            d["endpoints"] = []  # no traffic leaves: the routes answer 503
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "all.yaml").write_text(yaml.safe_dump_all(docs))
    port = free_port()
    _into(render(inputs, tmp_path / "out", "--port-map", f"443={port}", "--data-plane-ports", str(port)), harness.dir)
    secret = next(d for d in docs if d.get("kind") == "Secret")
    conversion = convert_tls_secret(secret)
    (harness.dir / "apps.shop-tls.pfx").write_bytes(conversion.pfx)
    harness.start()
    wait_for(lambda: harness.dp.ready)
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="shop.example.com") as tls:
        tls.sendall(b"GET /api HTTP/1.1\r\nHost: shop.example.com\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := tls.recv(4096):
            data += chunk
    assert data.startswith(b"HTTP/1.1 503")  # routed (the cluster has no ready endpoint), over TLS


GOLDEN = REPO / "tests" / "render" / "testdata"


@covers("doc.shape", "parts.order")
@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.iterdir() if (p / "twp.yaml").is_file()))
def test_every_golden_config_loads(case: str) -> None:
    """Every config the render's golden cases hold loads in the contract library."""
    from titanium_gateway.contract import load_config

    folder = GOLDEN / case
    parts = {p.name: p.read_bytes() for p in folder.glob("twp.part-*.yaml")}
    cfg = load_config((folder / "twp.yaml").read_bytes(), parts)
    assert cfg.config_hash and len(set(cfg.orders)) == len(cfg.routes)
