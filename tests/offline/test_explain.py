"""``titanium-gateway explain``: real inputs (the examples, the golden cases' inputs) through the
real command, and a differential test against the reference data plane on loopback."""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from titanium_gateway.cli import main as cli_main
from titanium_gateway.offline.args import UsageError
from titanium_gateway.offline.explain import parse_request

ROOT = Path(__file__).parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"
HTTPS = ROOT / "examples" / "https"
TESTDATA = ROOT / "tests" / "render" / "testdata"

#: Every key of the JSON output, in order (documented in docs/render-cli.md).
JSON_KEYS = ["request", "listener", "certificate", "route", "order", "source", "action", "status", "location", "body", "why",
             "backends", "mirror", "transforms", "upstream", "policies", "timeout", "answeredBy", "match", "losing", "losingRoutes",
             "note", "hints", "dataPlane"]


def case(name: str) -> str:
    return str(TESTDATA / name / "in.yaml")


def explain(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = cli_main(["explain", *argv, "--output", "json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else {}), err


def explain_text(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli_main(["explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- the request syntax ---------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "scheme", "host", "port", "target"), [
    ("GET https://shop.example.com/api?x=1", "https", "shop.example.com", None, "/api?x=1"),
    ("GET http://SHOP.example.com:8000", "http", "shop.example.com", 8000, "/"),
    ("POST http://[2001:db8::1]:81/a#frag", "http", "[2001:db8::1]", 81, "/a"),
    ("GET /x?y", "http", None, None, "/x?y"),
    ("GET https:///x", "https", None, None, "/x"),
    ("GET http://:8080/x", "http", None, 8080, "/x"),
    ("GET http://bücher.example/", "http", "xn--bcher-kva.example", None, "/"),
])
def test_request_syntax(text: str, scheme: str, host: str | None, port: int | None, target: str) -> None:
    spec = parse_request(text)
    assert (spec.scheme, spec.host, spec.port, spec.target) == (scheme, host, port, target)


@pytest.mark.parametrize(("text", "headers", "needle"), [
    ("GET", (), "expected 'METHOD URL'"),
    ("GET ftp://x/", (), "http:// or https://"),
    ("GET shop.example.com/x", (), "http:// or https://"),
    ("GET //shop.example.com/x", (), "without a scheme"),
    ("GET http://x:99999/", (), "invalid port"),
    ("GET http://u@x/", (), "user information"),
    ("G(T http://x/", (), "not a valid method"),
    ("GET http://x/", ("novalue",), "expected 'Name: value'"),
    ("GET http://x/", ("Host: a", "host: b"), "more than one Host"),
])
def test_request_syntax_errors(text: str, headers: tuple[str, ...], needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        parse_request(text, headers)


# -- the table: real inputs through the real command ------------------------------------------------
def test_forward_with_weights_and_losing_route(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", str(QUICKSTART), "--request", "GET http://shop.example.com/api/items?x=1")
    assert code == 0
    assert list(out) == JSON_KEYS
    assert out["route"] == "httproute/apps/shop/r0m0"
    assert out["source"] == {"kind": "HTTPRoute", "namespace": "apps", "name": "shop", "rule": 0, "match": 0}
    assert (out["action"], out["status"], out["location"]) == ("forward", 200, None)
    assert [(b["namespace"], b["service"], b["port"], b["weight"], b["percent"], b["destinations"])
            for b in out["backends"]] == [("apps", "api", 8080, 9, 90.0, 2), ("apps", "api-canary", 8080, 1, 10.0, 1)]
    assert out["losing"] == ["httproute/apps/shop/r1m0"]
    assert out["losingRoutes"][0]["source"]["rule"] == 1
    assert out["listener"] == {"port": 80, "dataPlanePort": 8080, "tls": False}
    assert out["upstream"]["path"] == "/api/items" and out["upstream"]["query"] == "x=1"
    assert {c["field"] for c in out["match"]} == {"host", "path"} and all(c["ok"] for c in out["match"])


def test_text_output_names_everything(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain_text(capsys, "-f", str(QUICKSTART), "--request", "GET http://shop.example.com/api/x")
    assert code == 0
    assert "route:       httproute/apps/shop/r0m0 (order 1)" in out
    assert "from:        HTTPRoute apps/shop, rule 0, match 0" in out
    assert "90% (weight 9) svc-apps.api.8080 -> Service apps/api port 8080, 2 destinations" in out
    assert "httproute/apps/shop/r1m0 (order 2; HTTPRoute apps/shop, rule 1, match 0)" in out


def test_redirect_location_for_this_request(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", case("seed-httproute-redirects"), "--request",
                           "GET http://a.example.com/secure/x?q=1")
    assert code == 0
    assert (out["action"], out["status"]) == ("redirect", 301)
    assert out["location"] == "https://a.example.com/secure/x?q=1"
    assert out["backends"] == [] and out["upstream"] is None
    code, out, _ = explain(capsys, "-f", case("seed-httproute-redirects"), "--request", "GET http://b.example.com/moved/y")
    assert (out["route"], out["status"], out["location"]) == (
        "httproute/apps/redir/r1m0/b.example.com", 302, "http://new.example.com/new")
    code, text, _ = explain_text(capsys, "-f", case("seed-httproute-redirects"), "--request",
                                 "GET http://b.example.com/moved/y")
    assert "action:      redirect, Location: http://new.example.com/new (302)" in text


def test_direct_response(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", case("seed-httproute-redirects"), "--request", "GET http://a.example.com/prefix/1")
    assert code == 0
    assert (out["action"], out["status"]) == ("direct", 500)
    assert out["body"] == "UnsupportedValue"  # any client reads the body: the reason code only
    assert any(w.startswith("UnsupportedValue: ") and "RequestRedirect with ReplacePrefixMatch is not supported" in w
               for w in out["why"])
    assert out["source"]["rule"] == 2
    code, text, _ = explain_text(capsys, "-f", case("ingress-backend-and-path-errors"), "--request",
                                 "GET http://shop.example.com/missing-service")
    assert "action:      direct response: 'BackendNotFound' (500)" in text
    why = text.split("(500)\n", 1)[1].splitlines()[0]
    assert why.startswith("  why: BackendNotFound: ") and "Service apps/nope not found" in why


def test_no_route_is_404_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", str(QUICKSTART), "--request", "GET http://other.example.com/api")
    assert code == 3
    assert (out["route"], out["source"], out["action"], out["status"]) == (None, None, "none", 404)
    assert out["losing"] == [] and out["backends"] == []
    assert out["hints"][0]["route"] == "httproute/apps/shop/r0m0"
    assert out["hints"][0]["failed"] == [{"field": "host", "expected": "shop.example.com",
                                          "actual": "other.example.com", "ok": False}]
    code, text, _ = explain_text(capsys, "-f", str(QUICKSTART), "--request", "GET http://other.example.com/api")
    assert code == 3 and "no route matches" in text and "nearest routes:" in text


@pytest.mark.parametrize(("headers", "route", "losing"), [
    (["version: one"], "r0m0", []),
    (["Version: TWO"], "r1m0", []),  # names and values case-insensitive
    (["version: two", "color: orange"], "r2m0", ["r1m0"]),
    (["color: green"], "r3m1", []),
    ([], None, []),
])
def test_header_match_decided_by_H(capsys: pytest.CaptureFixture[str], headers: list[str], route: str | None,
                                   losing: list[str]) -> None:
    argv = ["-f", case("conf-httproute-header-matching"), "--request", "GET http://any.example/"]
    for h in headers:
        argv += ["-H", h]
    code, out, _ = explain(capsys, *argv)
    prefix = "httproute/gateway-conformance-infra/header-matching/"
    assert out["route"] == (prefix + route if route else None)
    assert out["losing"] == [prefix + x for x in losing]
    assert code == (0 if route else 3)


def test_https_over_the_tls_listener_names_the_certificate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", str(HTTPS), "--request", "GET https://shop.example.com/api/v1")
    assert code == 0
    assert out["listener"] == {"port": 443, "dataPlanePort": 8443, "tls": True}
    assert out["certificate"]["file"] == "apps.shop-tls.pfx"
    assert out["certificate"]["secret"] == "apps/shop-tls"
    assert out["certificate"]["sni"] == "shop.example.com"
    assert out["route"] == "httproute/apps/shop/r0m0"
    code, text, _ = explain_text(capsys, "-f", str(HTTPS), "--request", "GET https://shop.example.com/api/v1")
    assert "certificate: apps.shop-tls.pfx (Secret apps/shop-tls) for SNI shop.example.com" in text


@pytest.mark.parametrize(("request_text", "needle"), [
    ("GET http://shop.example.com/", "no listener on port 80"),  # the https example has no HTTP listener
    ("GET https://shop.example.com:8000/", "no listener on port 8000"),
    ("GET https:///", "no SNI name and there is no default certificate"),  # an address sends no SNI
])
def test_no_listener_or_no_handshake_is_action_none(capsys: pytest.CaptureFixture[str], request_text: str,
                                                    needle: str) -> None:
    code, out, _ = explain(capsys, "-f", str(HTTPS), "--request", request_text)
    assert code == 3
    assert (out["route"], out["action"], out["status"]) == (None, "none", None)
    assert needle in out["note"]


def test_http_to_a_tls_listener(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", str(HTTPS), "--port-map", "80=8443,443=8443", "--request",
                           "GET http://shop.example.com/")
    assert code == 3
    assert out["listener"]["tls"] is True and "is a TLS listener" in out["note"]


def test_request_without_host_uses_the_gateway_address(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", case("conf-httproute-header-matching"), "--data-plane-service", "titanium",
                           "--data-plane-mode", "shared", "--request", "GET /", "-H", "version: one")
    assert out["request"]["host"] == "192.0.2.10"  # the data-plane Service's load balancer address
    assert out["request"]["headers"][0] == {"name": "Host", "value": "192.0.2.10"}
    assert out["route"] == "httproute/gateway-conformance-infra/header-matching/r0m0" and code == 0
    code, out, _ = explain(capsys, "-f", str(QUICKSTART), "--data-plane-mode", "shared", "--request", "GET http://:80/api")
    assert out["request"]["host"] == "203.0.113.10" and out["route"] is None  # the routes want shop.example.com
    # a data plane per Gateway (the default): the Gateway's own Service's address
    code, out, _ = explain(capsys, "-f", str(QUICKSTART), "--request", "GET http://:80/api")
    assert out["request"]["host"] == "203.0.113.20" and out["dataPlane"] == "apps/web"


def test_request_without_host_and_no_address_asks_for_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = explain(capsys, "-f", case("conf-httproute-header-matching"), "--request", "GET /")
    assert code == 2 and out == {}
    assert "has no address" in err and "give the host" in err


def test_host_header_sets_the_host(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", str(QUICKSTART), "--request", "GET http://203.0.113.10/api",
                           "-H", "host: Shop.Example.com")
    assert code == 0 and out["route"] == "httproute/apps/shop/r0m0"
    assert out["upstream"]["host"] == "Shop.Example.com"  # forwarded as sent


def test_ingress_source_and_policies(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", case("ingress-quickstart"), "--request", "GET http://shop.example.com/cart")
    assert code == 0
    assert out["source"] == {"kind": "Ingress", "namespace": "apps", "name": "shop", "rule": 0, "match": 0}
    assert [p["kind"] for p in out["policies"]] == ["RateLimit"]
    assert out["policies"][0]["verdict"].startswith("lets it through")
    code, text, _ = explain_text(capsys, "-f", case("ingress-quickstart"), "--request", "GET http://shop.example.com/")
    assert "from:        Ingress apps/shop, rule 0, path 0" in text


def test_ingress_canary_by_header(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", case("ingress-canary"), "--request", "GET http://shop.example.com/",
                           "-H", "X-Canary: always")
    assert out["source"]["kind"] == "Ingress" and out["source"]["name"] == "shop-canary"
    assert out["losing"] and out["losingRoutes"][0]["source"]["name"] == "shop"
    code, out, _ = explain(capsys, "-f", case("ingress-canary"), "--request", "GET http://shop.example.com/")
    assert sorted(b["weight"] for b in out["backends"]) == [20, 80]


def test_path_rewrite_and_header_transforms(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", case("conf-httproute-rewrite-path"), "--request",
                           "GET http://x.example/prefix/rewrite-path-and-modify-headers/one", "-H", "X-Header-Remove: a",
                           "-H", "X-Header-Add-Append: a")
    assert out["upstream"]["path"] == "/prefix/one"
    upstream = {h["name"].lower(): h["value"] for h in out["upstream"]["headers"]}
    assert "x-header-remove" not in upstream
    assert upstream["x-header-set"] == "set-overwrites-values"
    assert upstream["x-header-add-append"] == "a, header-val-2"
    assert [t["kind"] for t in out["transforms"]][0] == "PathRegexReplace"


def test_mirror(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", case("conf-httproute-request-mirror"), "--request", "GET http://x/mirror")
    assert out["mirror"]["service"] == "infra-backend-v2" and out["mirror"]["percent"] == 100.0


def test_a_share_without_endpoints_answers_503(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", case("seed-httproute-backends"), "--request", "GET http://x/mixed")
    assert code == 0 and out["action"] == "forward" and out["status"] == 200
    invalid = next(b for b in out["backends"] if b["cluster"] == "invalid-backend")
    assert invalid["service"] is None and invalid["destinations"] == 0
    assert "25% of the requests" in out["note"] and "503" in out["note"]


def test_no_ready_endpoint_at_all_is_503(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = [d for f in sorted(QUICKSTART.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    for d in docs:
        if d["kind"] == "EndpointSlice":
            d["endpoints"] = []
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs))
    code, out, _ = explain(capsys, "-f", str(tmp_path / "in.yaml"), "--request", "GET http://shop.example.com/")
    assert out["action"] == "forward" and out["status"] == 503 and "no backend has a ready endpoint" in out["note"]


def test_ip_allow_list_policy_needs_the_client_address(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = [d for f in sorted((TESTDATA / "ingress-quickstart").glob("in.yaml")) for d in yaml.safe_load_all(f.read_text())
            if d]
    for d in docs:
        if d["kind"] == "Ingress":
            d["metadata"].setdefault("annotations", {})["titanium.io/whitelist-source-range"] = "10.0.0.0/8"
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs))
    base = ["-f", str(tmp_path / "in.yaml"), "--request", "GET http://shop.example.com/"]
    code, out, _ = explain(capsys, *base)
    allow = next(p for p in out["policies"] if p["kind"] == "IpAllowDeny")
    assert "give --client-address" in allow["verdict"] and out["status"] == 200 and out["answeredBy"] is None
    code, out, _ = explain(capsys, *base, "--client-address", "192.0.2.1")
    assert out["status"] == 403 and "IpAllowDeny policy answers 403" in out["note"] and code == 0
    assert out["answeredBy"] == "IpAllowDeny" and out["action"] == "forward"
    code, text, _ = explain_text(capsys, *base, "--client-address", "192.0.2.1")
    assert "action:      forward (the IpAllowDeny policy answers 403 first)" in text
    code, out, _ = explain(capsys, *base, "--client-address", "10.1.2.3")
    assert out["status"] == 200


def test_render_options_apply(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = explain(capsys, "-f", str(QUICKSTART), "--port-map", "80=9080", "--data-plane-ports", "9080",
                           "--request", "GET http://shop.example.com/")
    assert out["listener"] == {"port": 80, "dataPlanePort": 9080, "tls": False} and code == 0


def test_input_errors_are_exit_2_like_render(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: ok}\n---\nfoo: [unclosed\n")
    code = cli_main(["explain", "-f", str(bad), "--request", "GET http://x/"])
    err = capsys.readouterr().err
    assert code == 2 and "bad.yaml" in err and "document 2" in err
    code = cli_main(["explain", "-f", str(QUICKSTART), "--request", "GET nothing"])
    assert code == 2 and "http:// or https://" in capsys.readouterr().err
    code = cli_main(["explain", "-f", str(QUICKSTART)])
    assert code == 2 and "--request" in capsys.readouterr().err


def test_not_taking_part_is_on_stderr(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
             "metadata": {"name": "lost", "namespace": "apps"},
             "spec": {"parentRefs": [{"name": "nowhere"}], "rulez": []}}
    (tmp_path / "lost.yaml").write_text(yaml.safe_dump(route))
    code, out, err = explain(capsys, "-f", str(QUICKSTART), "-f", str(tmp_path / "lost.yaml"), "--request",
                             "GET http://shop.example.com/")
    assert code == 0
    assert "HTTPRoute apps/lost" in err and "parent Gateway apps/nowhere is not in the input" in err
    assert "unknown field 'spec.rulez'" in err


def test_subprocess_exit_codes_and_stdin() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-m", "titanium_gateway", "explain"]
    ok = subprocess.run([*run, "-f", str(QUICKSTART), "--request", "GET http://shop.example.com/api", "-o", "json"],
                        env=env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["route"] == "httproute/apps/shop/r0m0"
    text = "".join(f.read_text() + "\n---\n" for f in sorted(QUICKSTART.glob("*.yaml")))
    none = subprocess.run([*run, "-f", "-", "--request", "GET http://nobody.example/"], input=text, env=env,
                          capture_output=True, text=True, timeout=120)
    assert none.returncode == 3 and "no route matches" in none.stdout
    missing = subprocess.run([*run, "-f", "missing.yaml", "--request", "GET /"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode == 2 and "missing.yaml" in missing.stderr
    usage = subprocess.run([sys.executable, "-m", "titanium_gateway"], env=env, capture_output=True, text=True,
                           timeout=60)
    assert "explain" in usage.stdout


# -- differential: explain's answer is the reference data plane's ---------------------------------
@dataclass(frozen=True)
class Probe:
    method: str
    url: str
    headers: tuple[str, ...] = ()


DIFFERENTIAL: dict[str, tuple[Probe, ...]] = {
    str(QUICKSTART): (
        Probe("GET", "http://shop.example.com/api/x?y=1"), Probe("GET", "http://SHOP.example.com/apix"),
        Probe("POST", "http://shop.example.com/"), Probe("GET", "http://other.example.com/"),
    ),
    str(HTTPS): (
        Probe("GET", "https://shop.example.com/api"), Probe("GET", "https://shop.example.com/"),
        Probe("GET", "https://other.example.com/api"),
    ),
    case("seed-httproute-redirects"): (
        Probe("GET", "http://a.example.com/secure/x?q=1"), Probe("GET", "http://b.example.com/moved/1"),
        Probe("GET", "http://a.example.com/prefix/1"), Probe("GET", "http://c.example.com/nohost"),
        Probe("GET", "http://b.example.com/status"), Probe("GET", "http://a.example.com/other"),
    ),
    case("conf-httproute-header-matching"): (
        Probe("GET", "http://x.example/", ("version: one",)), Probe("GET", "http://x.example/", ("Version: Two",)),
        Probe("GET", "http://x.example/", ("version: two", "color: orange")),
        Probe("GET", "http://x.example/", ("color: yellow",)), Probe("GET", "http://x.example/"),
    ),
    case("seed-httproute-path-kinds"): tuple(Probe("GET", f"http://paths.example.com{p}") for p in (
        "/", "/docs", "/docs/", "/docsx", "/docs/v2/a", "/docs/vx/a", "/?id=12", "/?id=1x")),
    case("conf-httproute-matching-across-routes"): tuple(Probe("GET", f"http://{h}{p}", hs) for h, p, hs in (
        ("example.com", "/", ()), ("example.com", "/v2/x", ()), ("example.com", "/", ("version: one",)),
        ("example.net", "/", ("version: one",)), ("example.com", "/", ("version: two",)), ("bar.com", "/", ()))),
    case("ingress-canary"): (
        Probe("GET", "http://shop.example.com/", ("X-Canary: always",)), Probe("GET", "http://shop.example.com/api"),
        Probe("GET", "http://nothing.example.com/"),
    ),
}


def _localize(docs: list[dict[str, Any]], port: int, start: int) -> list[str]:
    """Every endpoint address becomes its own 127.0.0.N and every slice port ``port``: no request
    leaves loopback. The new addresses."""
    hosts: list[str] = []
    for d in docs:
        if d.get("kind") != "EndpointSlice":
            continue
        for p in d.get("ports") or []:
            p["port"] = port
        for ep in d.get("endpoints") or []:
            new = []
            for _ in ep.get("addresses") or []:
                new.append(f"127.0.{(start + len(hosts)) // 250}.{(start + len(hosts)) % 250 + 2}")
                hosts.append(new[-1])
            ep["addresses"] = new
        d["addressType"] = "IPv4"
    for d in docs:
        if d.get("kind") == "Service" and (d.get("spec") or {}).get("type") == "ExternalName":
            d["spec"]["externalName"] = "localhost"
    return hosts


def _send(port: int, probe: Probe, scheme: str, host: str) -> tuple[int, dict[str, str]]:
    """One HTTP/1.1 request to 127.0.0.1:port (over TLS with ``host`` as SNI for https): the
    status and the response headers."""
    from urllib.parse import urlsplit

    split = urlsplit(probe.url)
    target = (split.path or "/") + (f"?{split.query}" if split.query else "")
    lines = [f"{probe.method} {target} HTTP/1.1", f"Host: {host}", *probe.headers, "Connection: close",
             "Content-Length: 0", "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        sock: socket.socket = raw
        if scheme == "https":
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            sock = ctx.wrap_socket(raw, server_hostname=host)
        sock.sendall("\r\n".join(lines).encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    headers = {}
    for line in head[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(head[0].split()[1]), headers


@pytest.mark.parametrize("source", sorted(DIFFERENTIAL), ids=lambda s: Path(s).parent.name if s.endswith("in.yaml")
                         else Path(s).name)
def test_explain_answers_what_the_reference_data_plane_answers(source: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("aiohttp")
    from tests.dataplane.support import EchoBackend, Harness, free_port, wait_for
    from titanium_gateway.offline.args import add_render_arguments, options_from_args
    from titanium_gateway.offline.load import load_manifests
    from titanium_gateway.offline.snapshot import prepare
    from titanium_gateway.render import render

    path = Path(source)
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]
    backend_port = free_port()
    backends = [EchoBackend(h, host=h, port=backend_port) for h in _localize(docs, backend_port, 0)]
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs))
    http_port, https_port = free_port(), free_port()
    flags = ["--port-map", f"80={http_port},443={https_port}", "--data-plane-ports", f"{http_port},{https_port}"]
    parser = argparse.ArgumentParser()
    add_render_arguments(parser)
    options = options_from_args(parser.parse_args(flags))
    result = render(prepare([m.obj for m in load_manifests([tmp_path / "in.yaml"])], defaulted=True).snapshot, options)
    # (each input has one Gateway, or only Ingresses: the data plane explain picks)
    (plane,) = result.gateway_planes() or (result.plane(""),)
    harness = Harness(tmp_path / "config")
    log = io.StringIO()
    try:
        harness.write(plane.config, {**dict(plane.parts), **dict(plane.tls_files)})
        harness.start(access_log=True, out=log)
        wait_for(lambda: harness.dp.ready, timeout=10)
        for n, probe in enumerate(DIFFERENTIAL[source], start=1):
            argv = ["explain", "-f", str(tmp_path / "in.yaml"), *flags, "--request", f"{probe.method} {probe.url}",
                    "--output", "json"]
            for h in probe.headers:
                argv += ["-H", h]
            code = cli_main(argv)
            said = json.loads(capsys.readouterr().out)
            scheme = probe.url.split(":", 1)[0]
            status, headers = _send(http_port if scheme == "http" else https_port, probe, scheme,
                                    said["request"]["host"])
            wait_for(lambda n=n: log.getvalue().count("\n") >= n, timeout=10)
            line = log.getvalue().splitlines()[n - 1]
            served = line.split(" route=", 1)[1].split()[0]
            assert (said["route"] or "-") == served, (probe, line)
            assert said["status"] == status, (probe, line)
            assert said["location"] == headers.get("location"), probe
            assert code == (0 if said["route"] else 3)
    finally:
        harness.stop()
        for b in backends:
            b.stop()


def test_a_named_rule_is_named_beside_its_index(capsys: pytest.CaptureFixture[str]) -> None:
    """Rule names (Gateway API v1.4) are shown; the route ids keep the index."""
    code, out, _ = explain(capsys, "-f", case("httproute-rule-names"), "--request", "GET http://shop.example.com/cart")
    assert code == 0
    assert out["route"] == "httproute/apps/catalog/r0m0"
    assert out["source"] == {"kind": "HTTPRoute", "namespace": "apps", "name": "catalog", "rule": 0, "match": 0,
                             "ruleName": "everything"}
    assert out["losingRoutes"][0]["source"]["ruleName"] == "cart"
    code, text, _ = explain_text(capsys, "-f", case("httproute-rule-names"), "--request", "GET http://shop.example.com/headers")
    assert "from:        HTTPRoute apps/checkout, rule 3, match 0" in text  # (no name: the index only)


def test_with_a_data_plane_per_gateway_the_request_reaches_the_gateway_it_names(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Two Gateways with a route each for "/": the one whose data plane the request reaches
    answers; the other Gateway's route is not there (a 404 on the public address)."""
    iso = case("pergateway-isolation")
    code, out, _ = explain(capsys, "-f", iso, "--gateway", "infra/internal", "--request", "GET http://any.example/x")
    assert (code, out["route"], out["dataPlane"]) == (0, "httproute/infra/billing/r0m0", "infra/internal")
    code, out, _ = explain(capsys, "-f", iso, "--gateway", "infra/public", "--request", "GET http://any.example/x")
    assert (code, out["route"]) == (0, "httproute/infra/www/r0m0")
    # by the Gateway's address
    code, out, _ = explain(capsys, "-f", iso, "--request", "GET http://192.0.2.21/x")
    assert (out["dataPlane"], out["route"]) == ("infra/internal", "httproute/infra/billing/r0m0")
    code, out, _ = explain(capsys, "-f", iso, "--request", "GET /x", "--gateway", "infra/public")
    assert out["request"]["host"] == "192.0.2.22" and out["route"] == "httproute/infra/www/r0m0"
    # the shared data plane: the Ingress
    code, out, _ = explain(capsys, "-f", iso, "--gateway", "shared", "--request", "GET http://legacy.example.com/")
    assert (out["dataPlane"], out["route"]) == (None, "ingress/infra/legacy/r0p0")
    # not clear which one: a usage error naming them
    code, out, err = explain(capsys, "-f", iso, "--request", "GET http://any.example/x")
    assert code == 2 and "--gateway" in err and "(shared, infra/internal, infra/public)" in err
    code, out, err = explain(capsys, "-f", iso, "--gateway", "infra/nope", "--request", "GET http://any.example/x")
    assert code == 2 and "infra/nope" in err


def test_the_https_redirect_answers_per_listener(capsys: pytest.CaptureFixture[str]) -> None:
    """The HTTP-to-HTTPS redirect (match.ports): http redirects, https forwards."""
    red = case("pergateway-https-redirect")
    code, out, _ = explain(capsys, "-f", red, "--request", "GET http://redirect.example.com/a")
    assert (out["action"], out["location"]) == ("redirect", "https://redirect.example.com/a")
    assert out["match"][0] == {"field": "port", "expected": "8080", "actual": "8080", "ok": True}
    assert out["losing"] == []
    code, out, _ = explain(capsys, "-f", red, "--request", "GET https://redirect.example.com/a")
    assert (out["action"], out["route"]) == ("forward", "httproute/apps/https-route/r0m0")
    # one data plane for both: routes are global there, the older one answers on both ports
    code, out, _ = explain(capsys, "-f", red, "--data-plane-mode", "shared", "--request",
                           "GET https://redirect.example.com/a")
    assert out["action"] == "redirect"


def test_a_gateways_own_data_plane_listener_ports(capsys: pytest.CaptureFixture[str]) -> None:
    """Listeners on 80, 8080 and 8090 of one Gateway: each port its own container port (80 on
    8081, beside 8080), and each route answers on the ports of the listeners it attached to."""
    gw = "gateway-conformance-infra/httproute-listener-port-matching"
    for url, dp_port, route in [("http://foo.com/", 8081, "backend-v1"), ("http://foo.com:8080/", 8080, "backend-v2"),
                                ("http://bar.com:8080/", 8080, "backend-v2"), ("http://foo.com:8090/", 8090, "backend-v3")]:
        code, out, _ = explain(capsys, "-f", case("conf-httproute-listener-port-matching"), "--gateway", gw,
                               "--request", f"GET {url}")
        assert code == 0, out
        assert out["listener"]["dataPlanePort"] == dp_port, url
        assert out["source"]["name"] == route, url
