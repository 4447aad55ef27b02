"""No private key (PEM body) and no admin token outside the generated TLS Secret.

An integration scenario with HTTPS listeners (a valid key, an encrypted key, a mismatched key),
an Ingress with an upstream client certificate, injected faults (error logs with tracebacks)
and debug logging. Captured: every log line as the production JSON handler writes it, every
object the controller writes (the fake's request log), every file written under the process's
working and temporary directories. Only writes to the TLS Secret may carry key material.
"""

from __future__ import annotations

import io
import logging
import re
import tempfile
from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import Env, wait_for
from tests.reliability import fuzzlib
from tests.reliability.leakscan import Needles, scan, scan_tree
from titanium_gateway.controller.logging import setup_logging

pytestmark = pytest.mark.timeout(180)


def test_scanner_finds_planted_secrets() -> None:
    """The scanner itself must be able to fail: every planted form is found."""
    p = fuzzlib.certs()
    needles = Needles().add_private_key(p.key_pem, "key").add_token("tok-" + "x" * 30, "admin token")
    line = next(ln for ln in p.key_pem.splitlines() if not ln.startswith(b"-"))
    assert scan({"msg": f"oops {line.decode()} here"}, needles)
    assert scan([fuzzlib.b64(p.key_pem)], needles)
    assert scan("Authorization: Bearer tok-" + "x" * 30, needles)
    assert scan(b"-----BEGIN EC PRIVATE KEY-----\nAAAA", Needles())
    assert not scan({"file": "apps.cert.pfx", "msg": "tls.key is encrypted"}, needles)


def test_no_key_or_token_leaves_the_tls_secret(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = fuzzlib.certs()
    needles = Needles()
    for label, key in (("listener key", p.key_pem), ("other key", p.other_key_pem), ("upstream key", p.rsa_key_pem),
                       ("encrypted key", p.encrypted_key_pem)):
        needles.add_private_key(key, label)
    needles.add_token(env.rel.token, "admin token")
    work, tmp = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    buf = io.StringIO()
    handler = setup_logging(verbose=True, stream=buf)
    try:
        s = env.server
        env.service("api")
        s.put_object(fuzzlib.tls_secret("cert", "apps", "valid"))
        s.put_object(fuzzlib.tls_secret("enc", "apps", "encrypted"))
        s.put_object(fuzzlib.tls_secret("mism", "apps", "mismatched"))
        upstream = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                    "metadata": {"name": "upstream", "namespace": "apps"},
                    "data": {"ca.crt": fuzzlib.b64(p.cert_pem), "tls.crt": fuzzlib.b64(p.rsa_cert_pem),
                             "tls.key": fuzzlib.b64(p.rsa_key_pem)}}
        s.put_object(upstream)
        env.gateway(listeners=[
            {"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
             "tls": {"certificateRefs": [{"name": "cert"}]}},
            {"name": "bad", "port": 443, "protocol": "HTTPS", "hostname": "bad.example.com",
             "tls": {"certificateRefs": [{"name": "enc"}, {"name": "mism"}]}},
            {"name": "http", "port": 80, "protocol": "HTTP"}])
        env.route()
        s.put_object({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                      "metadata": {"name": "up", "namespace": "apps", "annotations": {
                          "titanium.io/backend-protocol": "HTTPS", "titanium.io/upstream-tls-secret": "upstream"}},
                      "spec": {"ingressClassName": env.rel.ingress_class, "rules": [{"host": "up.example.com", "http": {
                          "paths": [{"path": "/", "pathType": "Prefix",
                                     "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}})
        s.inject("patch", "secrets", status=500, times=2)
        s.inject("patch", "gateways/status", status=500, times=2)
        env.start_controller("--verbose")
        env.wait_programmed(timeout=30)
        wait_for(lambda: "up.example.com" in env.root_config(), timeout=20, what="the Ingress in the config")
        s.close_watches(abrupt=True)
        s.put_object({**fuzzlib.tls_secret("cert", "apps", "rsa")})  # a key rotation
        wait_for(lambda: any(r.resource == "secrets" and r.name == env.rel.tls_secret and r.status < 300
                             and r.time > 0 for r in env.writes("secrets")), timeout=20)
        env.wait_programmed(timeout=30)
    finally:
        logging.getLogger().removeHandler(handler)

    logs = buf.getvalue()
    assert len(logs.splitlines()) > 20, "the scenario should have logged (debug + errors)"
    hits = scan(logs, needles, "log")
    writes = [r for r in s.requests() if r.method in ("POST", "PUT", "PATCH")]
    tls_writes = [r for r in writes if r.resource == "secrets" and r.name == env.rel.tls_secret]
    other = [r for r in writes if r not in tls_writes]
    for r in other:
        hits += scan(r.body, needles, f"{r.method} {r.resource} {r.namespace}/{r.name}")
    files, file_hits = scan_tree(work, needles)
    tmp_files, tmp_hits = scan_tree(tmp, needles)
    hits += file_hits + tmp_hits
    print(f"\nleak scan: {len(logs.splitlines())} log lines, {len(other)} object writes (+{len(tls_writes)} to the TLS "
          f"Secret), {files + tmp_files} files; hits outside the TLS Secret: {len(hits)}")
    assert not hits, "secret material outside the TLS Secret:\n" + "\n".join(sorted(set(hits))[:20])
    # the scanner is live: the TLS Secret itself carries the upstream client key (PEM, as the contract says)
    assert any(scan(r.body, needles) for r in tls_writes), "expected the upstream key in the TLS Secret"
    # the ConfigMap names certificate files only
    doc = yaml.safe_load(env.root_config())
    files_named = [c["file"] for c in doc["certificates"]["items"]]
    assert files_named and all(re.fullmatch(r"[a-z0-9-]+\.[a-z0-9-]+\.pfx", f) for f in files_named)
    for c in doc.get("clusters") or []:
        for v in ((c.get("httpClient") or {}).get("tls") or {}).values():
            assert re.fullmatch(r"[\w.-]+", v) and "BEGIN" not in v, f"cluster {c['id']}: tls value {v[:40]!r} is not a file name"
