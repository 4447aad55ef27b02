"""Unit tests of the titanium.io/ annotation parsers: valid, boundary and invalid values."""

from __future__ import annotations

import pytest

from titanium_gateway.render.ingress import titanium as ia
from titanium_gateway.render.ingress.titanium import AnnotationError, parse_annotations


def _ok(result: object) -> object:
    assert not isinstance(result, AnnotationError), result
    return result


def _bad(result: object, annotation: str) -> AnnotationError:
    assert isinstance(result, AnnotationError), result
    assert result.annotation == annotation
    assert annotation in result.message
    return result


def test_ssl_redirect() -> None:
    assert _ok(ia.parse_ssl_redirect("false")) is False
    assert "loop" in _bad(ia.parse_ssl_redirect("true"), ia.SSL_REDIRECT).message
    for value in ("True", "yes", "", "1"):
        _bad(ia.parse_ssl_redirect(value), ia.SSL_REDIRECT)


def test_rewrite_target() -> None:
    assert _ok(ia.parse_rewrite_target("/")) == "/"
    assert _ok(ia.parse_rewrite_target("/new/base")) == "/new/base"
    for value in ("new", "", "/a/$1", "/a/${1}", "/a b", "/a?x=1", "/a#f", "http://x/"):
        _bad(ia.parse_rewrite_target(value), ia.REWRITE_TARGET)


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("30", 30), ("3600", 3600)])
def test_proxy_read_timeout_valid(value: str, expected: int) -> None:
    assert _ok(ia.parse_proxy_read_timeout(value)) == expected


@pytest.mark.parametrize("value", ["0", "3601", "-1", "1.5", "30s", "", " 30", "99999999999999999999999"])
def test_proxy_read_timeout_invalid(value: str) -> None:
    _bad(ia.parse_proxy_read_timeout(value), ia.PROXY_READ_TIMEOUT)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0),
        ("1", 1),
        ("512k", 512 * 1024),
        ("8m", 8388608),
        ("8M", 8388608),
        ("1g", 1024**3),
        ("1048576", 1048576),
    ],
)
def test_proxy_body_size_valid(value: str, expected: int) -> None:
    assert _ok(ia.parse_proxy_body_size(value)) == expected


@pytest.mark.parametrize("value", ["", "8mb", "1.5m", "-1", "m", "8 m", "1t", "99999999999g"])
def test_proxy_body_size_invalid(value: str) -> None:
    _bad(ia.parse_proxy_body_size(value), ia.PROXY_BODY_SIZE)


def test_backend_protocol() -> None:
    for value in ("HTTP", "HTTPS", "H2C", "GRPC"):
        assert _ok(ia.parse_backend_protocol(value)) == value
    for value in ("https", "GRPCS", "FCGI", "AJP", ""):
        _bad(ia.parse_backend_protocol(value), ia.BACKEND_PROTOCOL)


def test_affinity() -> None:
    assert _ok(ia.parse_affinity("cookie")) == "cookie"
    for value in ("Cookie", "ip", ""):
        _bad(ia.parse_affinity(value), ia.AFFINITY)


def test_load_balance() -> None:
    assert _ok(ia.parse_load_balance("round_robin")) == "RoundRobin"
    assert _ok(ia.parse_load_balance("random")) == "Random"
    assert _ok(ia.parse_load_balance("least_conn")) == "LeastRequests"
    assert _ok(ia.parse_load_balance("ewma")) == "LeastTime"
    assert _ok(ia.parse_load_balance("p2c")) == "PowerOfTwoChoices"
    for value in ("roundrobin", "ROUND_ROBIN", "ip_hash", ""):
        _bad(ia.parse_load_balance(value), ia.LOAD_BALANCE)


def test_whitelist_source_range() -> None:
    assert _ok(ia.parse_whitelist_source_range("10.0.0.0/8, 192.168.1.7")) == (
        "10.0.0.0/8",
        "192.168.1.7/32",
    )
    assert _ok(ia.parse_whitelist_source_range("2001:db8::/32,::1")) == ("2001:db8::/32", "::1/128")
    assert _ok(ia.parse_whitelist_source_range("0.0.0.0/0,0.0.0.0/0")) == ("0.0.0.0/0",)
    for value in ("", "10.0.0.0/8,", "10.0.0.1/8", "10.0.0.0/33", "example.com", "10.0.0.256"):
        _bad(ia.parse_whitelist_source_range(value), ia.WHITELIST_SOURCE_RANGE)


def test_limit_rps() -> None:
    assert _ok(ia.parse_limit_rps("1")) == 1
    assert _ok(ia.parse_limit_rps("1000000")) == 1_000_000
    for value in ("0", "1000001", "-5", "5.0", "", "ten"):
        _bad(ia.parse_limit_rps(value), ia.LIMIT_RPS)


def test_cors_allow_origin() -> None:
    assert _ok(ia.parse_cors_allow_origin("*")) == ("*",)
    assert _ok(ia.parse_cors_allow_origin("https://app.example.com, http://localhost:3000")) == (
        "https://app.example.com",
        "http://localhost:3000",
    )
    for value in (
        "",
        "*,https://a.example.com",
        "app.example.com",
        "https://app.example.com/",
        "https://app.example.com/path",
        "ftp://x.example.com",
        "https://user@x.example.com",
        "https://x.example.com:99999",
        "https://a.example.com,,https://b.example.com",
    ):
        _bad(ia.parse_cors_allow_origin(value), ia.CORS_ALLOW_ORIGIN)


def test_auth_url() -> None:
    assert _ok(ia.parse_auth_url("http://auth.default.svc:8080/check?x=1")) == (
        "http://auth.default.svc:8080/check?x=1"
    )
    assert _ok(ia.parse_auth_url("https://auth.example.com")) == "https://auth.example.com"
    for value in (
        "",
        "/check",
        "auth.example.com/check",
        "ftp://auth.example.com",
        "https://user:pw@auth.example.com/",
        "https://user@auth.example.com/",
        "https://auth.example.com/a b",
        "https://auth.example.com/#frag",
        "https://auth.example.com:0/",
        "http://[::1/",
    ):
        _bad(ia.parse_auth_url(value), ia.AUTH_URL)


def test_canary_values() -> None:
    assert _ok(ia.parse_canary("true")) is True
    assert _ok(ia.parse_canary("false")) is False
    _bad(ia.parse_canary("yes"), ia.CANARY)
    assert _ok(ia.parse_canary_weight("0")) == 0
    assert _ok(ia.parse_canary_weight("100")) == 100
    for value in ("101", "-1", "50%", ""):
        _bad(ia.parse_canary_weight(value), ia.CANARY_WEIGHT)
    assert _ok(ia.parse_canary_by_header("X-Canary")) == "x-canary"
    for value in ("", "X Canary", "X-Canary:", "ä"):
        _bad(ia.parse_canary_by_header(value), ia.CANARY_BY_HEADER)


def test_upstream_tls_secret_values() -> None:
    assert _ok(ia.parse_upstream_tls_secret("backend-ca")) == (None, "backend-ca")
    assert _ok(ia.parse_upstream_tls_secret("apps/backend-ca")) == ("apps", "backend-ca")
    for value in ("", "Apps/x", "apps/", "/x", "a/b/c", "UPPER"):
        _bad(ia.parse_upstream_tls_secret(value), ia.UPSTREAM_TLS_SECRET)


def test_parse_annotations_collects_values_unknown_and_ignores_foreign() -> None:
    parsed = parse_annotations(
        {
            "titanium.io/limit-rps": "50",
            "titanium.io/proxy-read-timeout": "30",
            "titanium.io/made-up": "1",
            "nginx.ingress.kubernetes.io/rewrite-target": "/$1",
            "kubernetes.io/ingress.class": "nginx",
        },
        "apps",
    )
    assert parsed.valid
    assert parsed.limit_rps == 50
    assert parsed.proxy_read_timeout == 30
    assert parsed.unknown == ("titanium.io/made-up",)
    assert parsed.rewrite_target is None


def test_parse_annotations_defaults() -> None:
    parsed = parse_annotations(None, "apps")
    assert parsed.valid and not parsed.unknown
    assert parsed.backend_protocol == "HTTP" and not parsed.backend_protocol_set
    assert parsed.canary is False and parsed.canary_weight == 0


def test_parse_annotations_non_string_value_is_invalid() -> None:
    parsed = parse_annotations({"titanium.io/limit-rps": 50}, "apps")
    assert [e.annotation for e in parsed.errors] == ["titanium.io/limit-rps"]


def test_combination_canary_weight_and_header_need_canary() -> None:
    parsed = parse_annotations(
        {"titanium.io/canary-weight": "10", "titanium.io/canary-by-header": "X-Canary"}, "apps"
    )
    assert sorted(e.annotation for e in parsed.errors) == [ia.CANARY_BY_HEADER, ia.CANARY_WEIGHT]
    parsed = parse_annotations(
        {"titanium.io/canary": "false", "titanium.io/canary-weight": "10"}, "apps"
    )
    assert [e.annotation for e in parsed.errors] == [ia.CANARY_WEIGHT]
    parsed = parse_annotations(
        {
            "titanium.io/canary": "true",
            "titanium.io/canary-weight": "10",
            "titanium.io/canary-by-header": "X-Canary",
        },
        "apps",
    )
    assert parsed.valid and parsed.canary and parsed.canary_weight == 10
    assert parsed.canary_by_header == "x-canary"


def test_combination_upstream_tls_needs_https_and_own_namespace() -> None:
    parsed = parse_annotations({"titanium.io/upstream-tls-secret": "ca"}, "apps")
    assert [e.annotation for e in parsed.errors] == [ia.UPSTREAM_TLS_SECRET]
    assert "HTTPS" in parsed.errors[0].message
    parsed = parse_annotations(
        {"titanium.io/upstream-tls-secret": "other/ca", "titanium.io/backend-protocol": "HTTPS"}, "apps"
    )
    assert [e.annotation for e in parsed.errors] == [ia.UPSTREAM_TLS_SECRET]
    assert "namespace" in parsed.errors[0].message
    parsed = parse_annotations(
        {"titanium.io/upstream-tls-secret": "apps/ca", "titanium.io/backend-protocol": "HTTPS"}, "apps"
    )
    assert parsed.valid
    assert parsed.upstream_tls_secret == ia.UpstreamTLSRef("apps", "ca")


def test_every_table_annotation_has_a_parser() -> None:
    names = {
        "ssl-redirect",
        "rewrite-target",
        "proxy-read-timeout",
        "proxy-body-size",
        "backend-protocol",
        "affinity",
        "load-balance",
        "whitelist-source-range",
        "limit-rps",
        "cors-allow-origin",
        "auth-url",
        "canary",
        "canary-weight",
        "canary-by-header",
        "upstream-tls-secret",
    }
    assert {"titanium.io/" + n for n in names} == ia.KNOWN


# -- properties -----------------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(ia.KNOWN)), value=st.text(max_size=40))
def test_every_parser_returns_a_value_or_an_error_naming_it(name: str, value: str) -> None:
    result = ia.PARSERS[name](value)
    if isinstance(result, AnnotationError):
        assert result.annotation == name and name in result.message


@settings(max_examples=200, deadline=None)
@given(
    annotations=st.dictionaries(
        st.one_of(st.sampled_from(sorted(ia.KNOWN)), st.text(max_size=20).map(lambda s: "titanium.io/" + s)),
        st.one_of(st.text(max_size=20), st.integers(), st.none()),
        max_size=6,
    )
)
def test_parse_annotations_never_raises_and_partitions(annotations: dict[str, object]) -> None:
    parsed = parse_annotations(annotations, "apps")
    assert set(parsed.unknown) == {k for k in annotations if k not in ia.KNOWN}
    assert {e.annotation for e in parsed.errors} <= set(annotations) | {ia.UPSTREAM_TLS_SECRET}


@given(st.integers(min_value=1, max_value=3600))
def test_proxy_read_timeout_whole_range(n: int) -> None:
    assert ia.parse_proxy_read_timeout(str(n)) == n


@given(st.integers(min_value=0, max_value=100))
def test_canary_weight_whole_range(n: int) -> None:
    assert ia.parse_canary_weight(str(n)) == n


@given(st.integers(min_value=0, max_value=2**40), st.sampled_from(["", "k", "m", "g", "K", "M", "G"]))
def test_proxy_body_size_units(n: int, unit: str) -> None:
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit.lower()]
    size = n * factor
    result = ia.parse_proxy_body_size(f"{n}{unit}")
    if size <= ia.MAX_BODY_SIZE:
        assert result == size
    else:
        assert isinstance(result, AnnotationError)
