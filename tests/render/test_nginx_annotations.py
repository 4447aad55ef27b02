"""The ingress-nginx annotation classification (titanium_gateway.render.ingress.nginx)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from titanium_gateway.render.ingress import nginx as na
from titanium_gateway.render.ingress.titanium import parse_annotations

ROOT = Path(__file__).parents[2]
P = na.PREFIX
EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "300"))


_CONTEXT = ("namespace", "paths", "has_tls")


def one(name: str, value: str, **kw: object) -> na.Finding:
    anns = {P + name: value, **{P + k: v for k, v in kw.items() if k not in _CONTEXT}}
    extra = {k: v for k, v in kw.items() if k in _CONTEXT}
    (finding,) = [f for f in na.analyze(anns, **extra).findings if f.annotation == P + name]  # type: ignore[arg-type]
    return finding


def test_every_documented_annotation_of_ingress_nginx_is_known() -> None:
    """The names of ingress-nginx's annotation table and parsers (docs/user-guide/nginx-configuration/
    annotations.md and internal/ingress/annotations/*, with the aliases allowlist-source-range and
    limit-whitelist), as of its last release."""
    documented = " ".join("""
    app-root affinity affinity-mode affinity-canary-behavior auth-realm auth-secret auth-secret-type auth-type
    auth-tls-secret auth-tls-verify-depth auth-tls-verify-client auth-tls-error-page auth-tls-pass-certificate-to-upstream
    auth-tls-match-cn auth-url auth-cache-key auth-cache-duration auth-keepalive auth-keepalive-share-vars
    auth-keepalive-requests auth-keepalive-timeout auth-proxy-set-headers auth-snippet enable-global-auth backend-protocol
    canary canary-by-header canary-by-header-value canary-by-header-pattern canary-by-cookie canary-weight
    canary-weight-total client-body-buffer-size configuration-snippet custom-http-errors custom-headers default-backend
    enable-cors cors-allow-origin cors-allow-methods cors-allow-headers cors-expose-headers cors-allow-credentials
    cors-max-age force-ssl-redirect from-to-www-redirect http2-push-preload limit-connections limit-rps permanent-redirect
    permanent-redirect-code temporal-redirect temporal-redirect-code preserve-trailing-slash proxy-body-size
    proxy-cookie-domain proxy-cookie-path proxy-connect-timeout proxy-send-timeout proxy-read-timeout proxy-next-upstream
    proxy-next-upstream-timeout proxy-next-upstream-tries proxy-request-buffering proxy-redirect-from proxy-redirect-to
    proxy-http-version proxy-ssl-secret proxy-ssl-ciphers proxy-ssl-name proxy-ssl-protocols proxy-ssl-verify
    proxy-ssl-verify-depth proxy-ssl-server-name enable-rewrite-log rewrite-target satisfy server-alias server-snippet
    service-upstream session-cookie-change-on-failure session-cookie-conditional-samesite-none session-cookie-domain
    session-cookie-expires session-cookie-max-age session-cookie-name session-cookie-path session-cookie-samesite
    session-cookie-secure ssl-redirect ssl-passthrough stream-snippet upstream-hash-by x-forwarded-prefix load-balance
    upstream-vhost denylist-source-range whitelist-source-range proxy-buffering proxy-buffers-number proxy-buffer-size
    proxy-busy-buffers-size proxy-max-temp-file-size ssl-ciphers ssl-prefer-server-ciphers connection-proxy-header
    enable-access-log enable-opentelemetry opentelemetry-trust-incoming-span use-regex enable-modsecurity
    enable-owasp-core-rules modsecurity-transaction-id modsecurity-snippet mirror-request-body mirror-target mirror-host
    auth-method auth-signin auth-signin-redirect-param auth-response-headers auth-request-redirect auth-always-set-cookie
    upstream-hash-by-subset upstream-hash-by-subset-size limit-rpm limit-burst-multiplier limit-rate-after limit-rate
    limit-whitelist limit-allowlist allowlist-source-range disable-proxy-intercept-errors fastcgi-index
    fastcgi-params-configmap opentelemetry-operation-name use-port-in-redirects relative-redirects
    """.splitlines()).split()
    assert set(P + n for n in documented) == set(na.KNOWN)


def test_the_migration_guide_lists_every_annotation() -> None:
    guide = (ROOT / "docs" / "migrating-from-ingress-nginx.md").read_text()
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", guide, re.M))
    assert {k[len(P):] for k in na.KNOWN} == listed


def test_security_relevant_annotations_named_by_the_issue() -> None:
    for name in ("auth-url", "auth-type", "auth-tls-secret", "auth-signin", "whitelist-source-range", "ssl-redirect",
                 "force-ssl-redirect", "configuration-snippet", "server-snippet", "denylist-source-range"):
        assert one(name, "x").security, name
    for name in ("use-regex", "rewrite-target", "canary", "canary-weight", "canary-by-header", "canary-by-cookie"):
        assert one(name, "true").routing, name


@pytest.mark.parametrize(
    ("name", "value", "kw", "verdict", "titanium", "note"),
    [
        ("limit-rps", "50", {}, na.MAPPED, {"titanium.io/limit-rps": "50"}, "per Ingress"),
        ("limit-rpm", "600", {}, na.MAPPED, {"titanium.io/limit-rps": "10"}, "600 per minute becomes 10 per second"),
        ("limit-rpm", "30", {}, na.UNSUPPORTED, {}, "less than 60 per minute"),
        ("proxy-body-size", "8m", {}, na.MAPPED, {"titanium.io/proxy-body-size": "8m"}, "chunked"),
        ("proxy-read-timeout", "120", {}, na.MAPPED, {"titanium.io/proxy-read-timeout": "120"}, "response headers"),
        ("proxy-read-timeout", "7200", {}, na.UNSUPPORTED, {}, "1-3600"),
        ("whitelist-source-range", "10.0.0.1/8, 192.168.0.1", {}, na.MAPPED,
         {"titanium.io/whitelist-source-range": "10.0.0.0/8,192.168.0.1"}, "peer"),
        ("allowlist-source-range", "10.0.0.0/8", {}, na.MAPPED, {"titanium.io/whitelist-source-range": "10.0.0.0/8"}, ""),
        ("whitelist-source-range", "10.0.0.0/8,nope", {}, na.UNSUPPORTED, {}, "not a comma-separated list"),
        ("denylist-source-range", "10.0.0.0/8", {}, na.UNSUPPORTED, {}, "let through"),
        ("backend-protocol", "HTTPS", {}, na.MAPPED, {"titanium.io/backend-protocol": "HTTPS"}, "validated"),
        ("backend-protocol", "grpc", {}, na.MAPPED, {"titanium.io/backend-protocol": "GRPC"}, "cleartext"),
        ("backend-protocol", "GRPCS", {}, na.UNSUPPORTED, {}, "no equivalent"),
        ("backend-protocol", "HTTP", {}, na.NO_EFFECT, {}, "default"),
        ("affinity", "cookie", {}, na.MAPPED, {"titanium.io/affinity": "cookie"}, "titanium-affinity"),
        ("load-balance", "ewma", {}, na.MAPPED, {"titanium.io/load-balance": "ewma"}, "least-time"),
        ("load-balance", "chash", {}, na.UNSUPPORTED, {}, ""),
        ("canary-weight", "20", {"canary": "true"}, na.MAPPED, {"titanium.io/canary-weight": "20"}, ""),
        ("canary-weight", "50", {"canary": "true", "canary-weight-total": "200"}, na.MAPPED,
         {"titanium.io/canary-weight": "25"}, "25 percent"),
        ("canary-weight", "1", {"canary": "true", "canary-weight-total": "3"}, na.UNSUPPORTED, {}, "whole percent"),
        ("canary-weight", "20", {}, na.NO_EFFECT, {}, "without canary"),
        ("canary-by-header", "X-Canary", {"canary": "true"}, na.MAPPED, {"titanium.io/canary-by-header": "X-Canary"},
         "never is not honoured"),
        ("canary-by-header", "X-Canary", {"canary": "true", "canary-by-header-value": "blue"}, na.UNSUPPORTED, {}, "blue"),
        ("canary-by-cookie", "c", {"canary": "true"}, na.UNSUPPORTED, {}, "cookie"),
        ("rewrite-target", "/new", {}, na.MAPPED, {"titanium.io/rewrite-target": "/new"}, "whole path"),
        ("rewrite-target", "/$1", {}, na.UNSUPPORTED, {}, "capture groups"),
        ("rewrite-target", "/$2", {"paths": ["/api(/|$)(.*)"]}, na.MAPPED, {"titanium.io/rewrite-target": "/"}, "Prefix"),
        ("rewrite-target", "/v2/$1", {"paths": ["/api/(.*)", "/web/(.*)"]}, na.MAPPED,
         {"titanium.io/rewrite-target": "/v2"}, ""),
        ("rewrite-target", "/$2", {"paths": ["/api(/|$)(.*)", "/x/[0-9]+"]}, na.UNSUPPORTED, {}, "capture groups"),
        ("use-regex", "true", {"paths": ["/api"]}, na.NO_EFFECT, {}, "case-sensitive"),
        ("use-regex", "true", {"paths": ["/api/v[0-9]+"]}, na.UNSUPPORTED, {}, "not regular expressions"),
        ("enable-cors", "true", {}, na.MAPPED, {"titanium.io/cors-allow-origin": "*"}, "preflight"),
        ("enable-cors", "true", {"cors-allow-origin": "https://a.example.com, http://b.example.com:8080"}, na.MAPPED,
         {"titanium.io/cors-allow-origin": "https://a.example.com,http://b.example.com:8080"}, ""),
        ("enable-cors", "true", {"cors-allow-origin": "https://*.example.com"}, na.UNSUPPORTED, {}, "wildcard"),
        ("cors-allow-methods", "GET", {"enable-cors": "true"}, na.UNSUPPORTED, {}, ""),
        ("auth-url", "https://auth.example.com/check", {}, na.MAPPED, {"titanium.io/auth-url": "https://auth.example.com/check"},
         "GET subrequest"),
        ("auth-url", "https://$host/oauth2/auth", {}, na.UNSUPPORTED, {}, "variables"),
        ("auth-type", "basic", {}, na.UNSUPPORTED, {}, "basic"),
        ("ssl-redirect", "false", {}, na.NO_EFFECT, {}, "never redirects"),
        ("ssl-redirect", "true", {"has_tls": True}, na.UNSUPPORTED, {}, "clear text"),
        ("ssl-redirect", "true", {}, na.NO_EFFECT, {}, "has none"),
        ("force-ssl-redirect", "true", {}, na.UNSUPPORTED, {}, "clear text"),
        ("proxy-ssl-secret", "ns/client", {"backend-protocol": "HTTPS", "namespace": "ns"}, na.MAPPED,
         {"titanium.io/upstream-tls-secret": "client"}, "kubernetes.io/tls"),
        ("proxy-ssl-secret", "other/client", {"backend-protocol": "HTTPS", "namespace": "ns"}, na.UNSUPPORTED, {}, "own namespace"),
        ("proxy-buffering", "on", {}, na.NO_EFFECT, {}, "buffering"),
        ("configuration-snippet", "more_set_headers 'X: y';", {}, na.UNSUPPORTED, {}, "raw nginx configuration"),
        ("made-up", "1", {}, na.NO_EFFECT, {}, "typo"),
    ],
)
def test_classification(name: str, value: str, kw: dict, verdict: str, titanium: dict, note: str) -> None:
    f = one(name, value, **kw)
    assert (f.verdict, dict(f.titanium)) == (verdict, titanium), f
    assert note in f.note


def test_blocking_and_the_default_https_redirect() -> None:
    anns = {P + "auth-type": "basic", P + "limit-rps": "5", P + "satisfy": "any"}
    a = na.analyze(anns, has_tls=True)
    assert [f.annotation for f in a.blocking] == [P + "auth-type", ""]
    assert "redirect of HTTP to HTTPS" in a.notes[0].effect
    assert na.analyze({P + "ssl-redirect": "false"}, has_tls=True).blocking == ()
    assert na.analyze({}, has_tls=False) == na.Analysis((), {}, ())


def test_foreign_annotations_for_the_render() -> None:
    ing = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
           "metadata": {"name": "i", "namespace": "apps", "annotations": {
               P + "whitelist-source-range": "10.0.0.0/8", P + "auth-type": "basic", P + "proxy-buffering": "off",
               P + "rewrite-target": "/$1", P + "canary": "true", P + "load-balance": "ewma", P + "ssl-redirect": "true",
               "titanium.io/canary": "true"}},
           "spec": {"tls": [{"secretName": "x"}], "rules": [{"http": {"paths": [{"path": "/a(.*)"}]}}]}}
    found = na.ingress_foreign_annotations(ing)
    assert [f.annotation for f in found] == [P + "auth-type", P + "rewrite-target", P + "ssl-redirect",
                                             P + "whitelist-source-range"]
    by = {f.annotation: f for f in found}
    assert by[P + "whitelist-source-range"].message == (
        "nginx.ingress.kubernetes.io/whitelist-source-range '10.0.0.0/8' is not enforced here (a client address "
        "allow-list): only titanium.io/ annotations are read; the equivalent is titanium.io/whitelist-source-range: "
        "'10.0.0.0/8'")
    assert by[P + "auth-type"].security and "anyone reaches the backend" in by[P + "auth-type"].message
    assert not by[P + "rewrite-target"].security and "capture groups" in by[P + "rewrite-target"].message
    # canary is in force (its titanium.io/ equivalent is there); load-balance only tunes; buffering has no effect
    assert na.foreign_annotations({}) == [] and na.foreign_annotations(None) == []
    assert na.FOREIGN_ANNOTATION_REASON == "ForeignAnnotation"
    long = na.foreign_annotations({P + "server-snippet": "location /x {\n  deny all;\n" + "x" * 200})[0].message
    assert "\n" not in long and "..." in long


_values = st.sampled_from(["true", "false", "on", "off", "0", "1", "50", "600", "7200", "8m", "1g", "10.0.0.0/8",
                           "10.0.0.1/8,::1", "nope", "", "/", "/new", "/$1", "/$2", "cookie", "ewma", "round_robin",
                           "HTTPS", "GRPC", "GRPCS", "X-Canary", "always", "https://a.example.com", "https://*.x.com",
                           "https://auth.example.com:8443/check?x=1", "http://a b", "apps/client", "client", "x@y",
                           "https://u:p@h/", "https://h:99999/"])


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(anns=st.dictionaries(st.sampled_from([k[len(P):] for k in na.KNOWN]), _values, max_size=8),
       paths=st.lists(st.sampled_from(["/", "/api", "/api(/|$)(.*)", "/web/(.*)", "/x/[0-9]+", "/a b(/|$)(.*)"]), max_size=3),
       tls=st.booleans())
def test_what_a_conversion_sets_is_valid_titanium(anns: dict[str, str], paths: list[str], tls: bool) -> None:
    """Whatever the nginx annotations, the titanium.io/ annotations of a conversion never make
    the Ingress invalid (InvalidAnnotation: every rule 500) and are all known."""
    a = na.analyze({P + k: v for k, v in anns.items()}, namespace="apps", paths=paths, has_tls=tls)
    parsed = parse_annotations(dict(a.titanium), "apps")
    assert parsed.errors == () and parsed.unknown == (), (a.titanium, parsed.errors)
    for f in a.findings:
        assert f.verdict in na.VERDICTS and f.effect and (f.note or f.verdict == na.MAPPED)
        assert bool(f.titanium) <= (f.verdict == na.MAPPED)
