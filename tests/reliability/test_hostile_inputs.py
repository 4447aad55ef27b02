"""Hand-picked hostile values, each with the exact behaviour the render owes it.

Every test runs the full campaign oracle (:func:`fuzzlib.check_render`) and then checks that
the rejection names the field. The ``*_BUG`` texts describe the render bugs these tests found
(DISCREPANCIES R1-R9, fixed in 0944b0c and 3b5bc93); the tests now guard against their return.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from tests.reliability import fuzzlib
from titanium_gateway.render.options import RenderOptions
from titanium_gateway.render.result import RenderResult


def world(*routes: dict[str, Any], listeners: list[dict[str, Any]] | None = None,
          extra: tuple[dict[str, Any], ...] = ()) -> list[dict[str, Any]]:
    return [
        *fuzzlib.base_objects(),
        {"apiVersion": fuzzlib.GW_API, "kind": "Gateway",
         "metadata": {"name": "web", "namespace": "apps", "creationTimestamp": "2024-01-01T00:00:00Z"},
         "spec": {"gatewayClassName": "titanium",
                  "listeners": listeners or [{"name": "http", "port": 80, "protocol": "HTTP"}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "apps"},
         "spec": {"ports": [{"port": 8080, "targetPort": 9000}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "api-1", "namespace": "apps", "labels": {"kubernetes.io/service-name": "api"}},
         "ports": [{"port": 9000}], "endpoints": [{"addresses": ["10.0.0.1"]}]},
        *extra, *routes,
    ]


def route(name: str = "shop", rules: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": fuzzlib.GW_API, "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": "apps", "generation": 1,
                         "creationTimestamp": "2024-01-02T00:00:00Z"},
            "spec": {"parentRefs": [{"name": "web"}],
                     "rules": rules if rules is not None else [{"backendRefs": [{"name": "api", "port": 8080}]}],
                     **spec}}


BACKEND = [{"name": "api", "port": 8080}]


def conditions_of(result: RenderResult, kind: str, name: str, ns: str = "apps") -> list[Mapping[str, Any]]:
    for s in result.statuses:
        if s.key == (kind, ns, name):
            return fuzzlib._all_conditions(s.status)
    raise AssertionError(f"no status for {kind} {ns}/{name}")


def false_messages(result: RenderResult, kind: str = "HTTPRoute", name: str = "shop") -> str:
    return " | ".join(c["message"] for c in conditions_of(result, kind, name) if c["status"] == "False")


def run(objects: list[dict[str, Any]], **options: Any) -> RenderResult:
    return fuzzlib.check_render(objects, RenderOptions(**options), test="hostile",
                                secrets=fuzzlib.certs().private_keys())


# -- invalid UTF-8 / lone surrogates -----------------------------------------------------------------
SURROGATE_BUG = ("BUG render/emit: a lone surrogate (e.g. '\\ud800', which the Python JSON decoder yields for an "
                 "escaped surrogate) in a header value, hostname or object name makes emit's str.encode() raise "
                 "UnicodeEncodeError: one bad object stops every reconcile of the whole cluster")


@pytest.mark.parametrize("where", ["header-value", "hostname", "route-name"])
def test_lone_surrogates_never_raise(where: str) -> None:
    if where == "header-value":
        r = route(rules=[{"matches": [{"headers": [{"name": "x-a", "value": "\ud800"}]}], "backendRefs": BACKEND}])
    elif where == "hostname":
        r = route(hostnames=["a\udcff.example.com"])
    else:
        r = route(name="shop\ud800")
    run(world(r))


# O1 (fixed): a namespace holding a lone surrogate (YAML "\udfff" escape in a manifest) made the
# offline loader's name.encode() raise UnicodeEncodeError instead of rendering.
def test_offline_snapshot_with_a_surrogate_namespace_never_raises() -> None:
    from titanium_gateway.offline.snapshot import build_snapshot

    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "a\udfffb"},
           "spec": {"ports": [{"port": 80}]}}
    build_snapshot([*fuzzlib.base_objects(), svc])


def test_non_ascii_and_control_characters_are_escaped_or_rejected() -> None:
    r = route(rules=[{"matches": [{"headers": [{"name": "x-a", "value": "a\x85\u2028b\x00\u202e"}],
                                   "path": {"type": "Exact", "value": "/日本/\ufeff"}}], "backendRefs": BACKEND}])
    run(world(r))


HOSTNAME_BUG = ("BUG render/httproute: route hostnames are not validated: a hostname that is not a DNS name "
                "(NUL, space, non-ASCII, '*', 'a..b', ':port') is emitted as match.host, so twp.yaml fails "
                "twp.schema.json; the route should be rejected (Accepted False naming spec.hostnames)")


@pytest.mark.parametrize("hostname", ["a\x00b.example.com", " ", "bücher.example", "a..b", "host:80"])
def test_invalid_route_hostnames_are_rejected(hostname: str) -> None:
    result = run(world(route(hostnames=[hostname])))
    assert "hostname" in false_messages(result)


# R10 (fixed): a header or query parameter name longer than 1024 characters became a plain YAML
# mapping key, which YAML limits to 1024 characters, so twp.yaml was not loadable. Names must be
# Gateway API HTTPHeaderName tokens of at most 256 characters; others make the match answer 500.
@pytest.mark.parametrize("where", ["headers", "queryParams"])
def test_overlong_match_names_keep_the_config_loadable(where: str) -> None:
    match = {where: [{"name": "x" * 1100, "value": "v"}]}
    result = run(world(route(rules=[{"matches": [match], "backendRefs": BACKEND}])))
    yaml.safe_load(result.config)  # loadable
    assert "name is not" in false_messages(result)


CRLF_BUG = ("BUG render/httproute._header_transforms (and URLRewrite/redirect paths): CR, LF and NUL in header "
            "values (the Gateway API CRD admits them: no pattern on HTTPHeader.value) and in ReplaceFullPath are "
            "emitted as they are; the data plane would write them into requests/responses: header injection and "
            "response splitting. The rule should answer 500 with UnsupportedValue naming the header")


@pytest.mark.parametrize("where", ["request-set", "response-add", "full-path"])
def test_crlf_in_header_values_and_paths_is_rejected(where: str) -> None:
    evil = "a\r\nX-Injected: 1"
    if where == "request-set":
        f = {"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "x-a", "value": evil}]}}
    elif where == "response-add":
        f = {"type": "ResponseHeaderModifier", "responseHeaderModifier": {"add": [{"name": "Set-Cookie", "value": evil}]}}
    else:
        f = {"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplaceFullPath", "replaceFullPath": "/a" + evil}}}
    result = run(world(route(rules=[{"filters": [f], "backendRefs": BACKEND}])))
    doc = yaml.safe_load(result.config)
    for r in doc["routes"]:
        for t in r.get("transforms", []):
            assert not any(c in v for v in t["parameters"].values() for c in "\r\n\x00"), f"{r['id']}: {t}"
    assert "header" in false_messages(result) or "path" in false_messages(result)


# -- huge and deeply nested objects -------------------------------------------------------------------
DEEP_BUG = ("BUG render/httproute._build_match (and every f'{value!r}' message): a malformed field holding a "
            "deeply nested value (5000 levels) is put in the status message with repr(), which raises "
            "RecursionError and aborts the whole render; a huge value is also copied unbounded into the message")


def test_deeply_nested_values_never_raise() -> None:
    r = route(rules=[{"matches": [{"path": {"type": "Exact", "value": fuzzlib.deep(5000)}}], "backendRefs": BACKEND,
                      "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": fuzzlib.deep(3000)}]}])
    result = run(world(r))
    assert "path" in false_messages(result)


def test_thousands_of_valid_matches_render_and_split() -> None:
    matches = [{"path": {"type": "Exact", "value": f"/p/{i:05d}/" + "x" * 200}} for i in range(5000)]
    result = run(world(route(rules=[{"matches": matches, "backendRefs": BACKEND}])), part_limit_bytes=300 * 1024,
                 max_parts=16)
    assert result.parts, "5000 routes of ~300 bytes should need parts at a 300 KiB limit"
    assert not result.delivery_error


def test_too_many_parts_is_a_reported_error_not_a_truncated_config() -> None:
    matches = [{"path": {"type": "Exact", "value": f"/p/{i:05d}/" + "x" * 400}} for i in range(3000)]
    result = run(world(route(rules=[{"matches": matches, "backendRefs": BACKEND}])), part_limit_bytes=64 * 1024,
                 max_parts=2)
    assert result.delivery_error
    gw = conditions_of(result, "Gateway", "web")
    programmed = next(c for c in gw if c["type"] == "Programmed")
    assert programmed["status"] == "False" and "part" in programmed["message"]


def test_one_huge_header_value_is_a_delivery_error() -> None:
    r = route(rules=[{"matches": [{"headers": [{"name": "x-a", "value": "v" * (2 * 1024 * 1024)}]}],
                      "backendRefs": BACKEND}])
    result = run(world(r))
    assert result.delivery_error and "bytes" in result.delivery_error


CONDITION_BUG = ("BUG render/httproute: the Accepted condition message joins every unsupported match "
                 "('; '.join) without a bound: with thousands of distinct invalid matches it exceeds the "
                 "32768 characters metav1.Condition.message allows, so the API server rejects the status write "
                 "(422) and the route never gets any status")


GATEWAY_MESSAGE_BUG = ("BUG render/gateway._certificates (listener messages): the ResolvedRefs message embeds the "
                       "certificateRef name unbounded (the HTTPRoute messages were bounded for R3, these were not): a "
                       "70 kB name gives a 70 kB message, past the API's 32768 characters, so the Gateway status "
                       "write is refused. Needs input past the CRD's 253-character name limit: low severity")


def test_gateway_listener_messages_are_bounded() -> None:
    listeners = [{"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
                  "tls": {"certificateRefs": [{"name": "x" * 70_000}]}}]
    run(world(route(), listeners=listeners))


def _invalid_matches(n: int) -> list[dict[str, Any]]:
    return [{"headers": [{"name": f"x-header-{i}", "type": "RegularExpression", "value": ".*"}]} for i in range(n)]


def test_many_invalid_matches_keep_condition_messages_within_api_limits() -> None:
    run(world(route(rules=[{"matches": _invalid_matches(600), "backendRefs": BACKEND}])))


QUADRATIC_BUG = ("BUG render/httproute._emit_rules: every degraded route of a rule carries the whole rule's "
                 "'; '-joined list of unsupported matches in its directResponse body, so a rule with N invalid "
                 "matches emits N routes of N messages: O(N^2) bytes (3000 matches: a 627 MB config, 10 s render); "
                 "one HTTPRoute can exhaust the controller's memory")


def test_config_size_is_linear_in_the_number_of_invalid_matches() -> None:
    small = fuzzlib.render(fuzzlib.snapshot_of(world(route(rules=[{"matches": _invalid_matches(50), "backendRefs": BACKEND}]))),
                           RenderOptions())
    big = fuzzlib.render(fuzzlib.snapshot_of(world(route(rules=[{"matches": _invalid_matches(500), "backendRefs": BACKEND}]))),
                         RenderOptions())
    size = lambda r: len(r.config) + sum(len(b) for _, b in r.parts)  # noqa: E731
    print(f"50 invalid matches: {size(small)} bytes; 500: {size(big)} bytes")
    assert size(big) < 20 * size(small), "10x the matches should be about 10x the bytes, not 100x"


# -- regular expressions -------------------------------------------------------------------------------
#: Catastrophic in a backtracking engine (.NET's default, like Python's re): exponential or high
#: polynomial time on a short non-matching input such as "a" * 40 + "!".
CATASTROPHIC = ["(a+)+$", "(a*)*b", "([a-zA-Z]+)*$", "(x+x+)+y", "(.*)*", "^(\\w+)*$", "((a{1,10}){1,10}){1,10}"]
CATASTROPHIC_MISSED = ["(a|aa)*$", "(a|a?)+$", "(\\w+\\s?)*$", "(\\d+|\\d+\\.)+$", "(?:a|b|ab)*c", "(.*a){20}"]
REGEX_BUG = ("BUG render/httproute.check_regex: the nested-quantifier heuristic misses catastrophic patterns "
             "built from overlapping alternation or optional parts under a quantifier and from a quantified "
             "group containing .*; the data plane (.NET backtracking regex) would run them with exponential time")


def _regex_world(pattern: str, where: str) -> list[dict[str, Any]]:
    match = ({"path": {"type": "RegularExpression", "value": pattern}} if where == "path"
             else {"queryParams": [{"name": "q", "type": "RegularExpression", "value": pattern}]})
    return world(route(rules=[{"matches": [match], "backendRefs": BACKEND}]))


@pytest.mark.parametrize("where", ["path", "query"])
@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_regexes_are_rejected(pattern: str, where: str) -> None:
    result = run(_regex_world(pattern, where))
    assert "regular expression" in false_messages(result)
    assert "Regex" not in result.config.decode()


@pytest.mark.parametrize("pattern", CATASTROPHIC_MISSED)
def test_catastrophic_regexes_missed_by_the_heuristic(pattern: str) -> None:
    result = run(_regex_world(pattern, "path"))
    assert "regular expression" in false_messages(result)


POLY_BUG = ("BUG render/httproute.check_regex: adjacent unbounded quantifiers over overlapping sets are accepted; "
            "a backtracking engine takes O(n^k) on a non-matching path: '[a-z]*' x7 + '!' takes 5.5 s on a 61-char "
            "path and '.*a.*a.*a.*a.*a.*a.*!' over 10 s on a 102-char path (Python re, measured; .NET backtracks alike)")


@pytest.mark.parametrize("pattern", ["[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*!", ".*a.*a.*a.*a.*a.*a.*!"],
                         ids=["class-star-x7", "dotstar-a-x6"])
def test_polynomial_backtracking_regexes_are_rejected(pattern: str) -> None:
    result = run(_regex_world(pattern, "path"))
    assert "regular expression" in false_messages(result)


@pytest.mark.parametrize("pattern", ["x" * 1025, "(" * 600 + ")" * 600, "[", "(", "*", "a{2,1}", "\\", "(?<!a+)b"])
def test_invalid_or_overlong_regexes_are_rejected_naming_the_field(pattern: str) -> None:
    result = run(_regex_world(pattern, "path"))
    msg = false_messages(result)
    assert "path RegularExpression" in msg and "regular expression" in msg
    assert "pathKind: Regex" not in result.config.decode()


def test_regex_length_bound_is_exact() -> None:
    ok = run(_regex_world("/" + "a" * 1023, "path"))
    assert "Regex" in ok.config.decode()
    bad = run(_regex_world("/" + "a" * 1024, "path"))
    assert "longer than 1024" in false_messages(bad)


# -- ports and weights -----------------------------------------------------------------------------------
@pytest.mark.parametrize("port", [0, -1, 65536, 2**31, 2**64, "80", True, None, 8.5])
def test_listener_ports_past_the_limits(port: Any) -> None:
    result = run(world(route(), listeners=[{"name": "bad", "port": port, "protocol": "HTTP"}]))
    li = conditions_of(result, "Gateway", "web")
    accepted = [c for c in li if c["type"] == "Accepted" and c["reason"] == "PortUnavailable"]
    assert accepted and "port" in accepted[0]["message"]


@pytest.mark.parametrize("port", [1, 65535])
def test_listener_ports_at_the_limits_map_through(port: int) -> None:
    result = run(world(route(), listeners=[{"name": "edge", "port": port, "protocol": "HTTP"}]),
                 data_plane_ports=(port,))
    assert f"port: {port}" in result.config.decode()


@pytest.mark.parametrize("port", [0, -1, 65536, 2**40, "8080", True])
def test_backend_ports_past_the_limits(port: Any) -> None:
    result = run(world(route(rules=[{"backendRefs": [{"name": "api", "port": port}]}])))
    msg = false_messages(result)
    assert "port" in msg and "api" in msg


@pytest.mark.parametrize("port", [0, 65536, -5, 2**33])
def test_redirect_ports_past_the_limits(port: int) -> None:
    r = route(rules=[{"filters": [{"type": "RequestRedirect",
                                    "requestRedirect": {"hostname": "x.example.com", "port": port}}]}])
    assert "RequestRedirect port" in false_messages(run(world(r)))


@pytest.mark.parametrize("weight", [0, 1, 1_000_000])
def test_weights_within_the_limits_are_served(weight: int) -> None:
    r = route(rules=[{"backendRefs": [{"name": "api", "port": 8080, "weight": weight}]}])
    result = run(world(r))
    assert not false_messages(result)


@pytest.mark.parametrize("weight", [-1, -(2**31), "5", 1.5, True])
def test_malformed_weights_are_rejected_naming_the_field(weight: Any) -> None:
    r = route(rules=[{"backendRefs": [{"name": "api", "port": 8080, "weight": weight}]}])
    assert "weight" in false_messages(run(world(r)))


WEIGHT_BUG = ("BUG render/httproute: backendRef weights above the Gateway API maximum (1000000) are emitted "
              "as they are (e.g. 1099511627776), past the int32 the data plane sums weights in; the rule "
              "should answer 500 with UnsupportedValue naming the weight")


@pytest.mark.parametrize("weight", [1_000_001, 2**31, 2**40])
def test_weights_past_the_limit_are_rejected(weight: int) -> None:
    r = route(rules=[{"backendRefs": [{"name": "api", "port": 8080, "weight": weight}]}])
    assert "weight" in false_messages(run(world(r)))


# -- certificate Secrets ---------------------------------------------------------------------------------------
def _https_world(variant: str) -> list[dict[str, Any]]:
    listeners = [{"name": "https", "port": 443, "protocol": "HTTPS", "hostname": "shop.example.com",
                  "tls": {"certificateRefs": [{"name": "cert"}]}}]
    return world(route(), listeners=listeners, extra=(fuzzlib.tls_secret("cert", "apps", variant),))


BAD_SECRETS = {
    "garbage": "tls.", "not-base64": "tls.", "swapped": "tls.", "missing-key": "tls.key",
    "truncated": "tls.", "mismatched": "does not match", "encrypted": "encrypted", "opaque": "kubernetes.io/tls",
}


@pytest.mark.parametrize("variant", sorted(BAD_SECRETS))
def test_bad_certificate_secrets_are_rejected_naming_the_problem(variant: str) -> None:
    result = run(_https_world(variant))
    conds = conditions_of(result, "Gateway", "web")
    refs = [c for c in conds if c["type"] == "ResolvedRefs" and c["status"] == "False"]
    assert refs and refs[0]["reason"] == "InvalidCertificateRef"
    assert BAD_SECRETS[variant] in refs[0]["message"]
    assert not result.tls_files and b"apps.cert.pfx" not in result.config
    assert "PRIVATE" not in refs[0]["message"]


@pytest.mark.parametrize("variant", ["valid", "rsa", "chain", "expired"])
def test_usable_certificate_secrets_are_converted(variant: str) -> None:
    """An expired certificate is served (as upstream implementations do); the data plane decides."""
    result = run(_https_world(variant))
    assert set(result.tls_files) == {"apps.cert.pfx"}
    assert b"file: apps.cert.pfx" in result.config
