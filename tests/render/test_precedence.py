from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from titanium_gateway.render.precedence import (
    TIER_DEFAULT_BACKEND,
    TIER_DEGRADED,
    creation_timestamp,
    key_from_match,
    route_key,
)


def k(**kw):  # type: ignore[no-untyped-def]
    base = dict(hostname=None, path_type="PathPrefix", path="/", method=False, headers=0, query=0,
                created="2024-01-01T00:00:00Z", namespace="a", name="r", rule=0, match=0, route_id="x")
    base.update(kw)
    return route_key(**base)


def test_exact_host_beats_wildcard_beats_none() -> None:
    keys = [k(hostname=None, route_id="1"), k(hostname="*.example.com", route_id="2"),
            k(hostname="a.example.com", route_id="3")]
    assert [key[-1] for key in sorted(keys)] == ["3", "2", "1"]  # (keys end with the route id)


def test_longer_exact_host_and_longer_wildcard_win() -> None:
    assert k(hostname="aa.example.com") < k(hostname="a.example.com")
    assert k(hostname="*.a.example.com") < k(hostname="*.example.com")
    # any exact host beats any wildcard, whatever the length
    assert k(hostname="a.io") < k(hostname="*.very.long.example.com")


def test_path_type_then_length() -> None:
    assert k(path_type="Exact", path="/a") < k(path_type="RegularExpression", path="/aaaaaa.*")
    assert k(path_type="RegularExpression", path="/a") < k(path_type="PathPrefix", path="/aaaaaaaa")
    assert k(path="/foo/bar") < k(path="/foo")
    assert k(path="/foo") < k(path_type=None, path=None)


def test_method_headers_query_in_that_order() -> None:
    assert k(method=True) < k(headers=5, query=5)
    assert k(headers=2) < k(headers=1, query=9)
    assert k(query=2) < k(query=1)


def test_ties_oldest_then_namespace_name_rule_match() -> None:
    assert k(created="2023-01-01T00:00:00Z", namespace="z") < k(created="2024-01-01T00:00:00Z", namespace="a")
    assert k(namespace="a", name="z") < k(namespace="b", name="a")
    assert k(name="a", rule=5) < k(name="b", rule=0)
    assert k(rule=0, match=5) < k(rule=1, match=0)
    assert k(match=0) < k(match=1)


def test_tiers_after_everything() -> None:
    assert k(path_type=None, path=None, created="~") < k(tier=TIER_DEGRADED, hostname="a.b", path_type="Exact", path="/x")
    assert k(tier=TIER_DEGRADED) < k(tier=TIER_DEFAULT_BACKEND)


def test_missing_creation_timestamp_sorts_last() -> None:
    assert creation_timestamp({"metadata": {}}) > "2999-01-01T00:00:00Z"
    assert creation_timestamp({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}}) == "2024-01-01T00:00:00Z"
    assert creation_timestamp({"metadata": "garbage"}) == "~"


def test_key_from_match_maps_data_plane_fields() -> None:
    common = dict(created="t", namespace="n", name="r", rule=0, match_index=0, route_id="i")
    a = key_from_match({"host": "a.com", "path": "/x", "pathKind": "Exact", "method": "GET",
                        "headers": {"a": "1"}, "query": {"q": "1"}, "queryRegex": {"r": "x"}}, **common)
    assert a == route_key(hostname="a.com", path_type="Exact", path="/x", method=True, headers=1, query=2,
                          created="t", namespace="n", name="r", rule=0, match=0, route_id="i")
    regex = key_from_match({"path": "/a", "pathKind": "Regex"}, **common)
    assert key_from_match({"path": "/a", "pathKind": "Exact"}, **common) < regex
    assert regex < key_from_match({"path": "/a", "pathKind": "Prefix"}, **common)


_match_values = st.fixed_dictionaries({}, optional={
    "host": st.sampled_from(["a.com", "*.a.com", "", "x" * 300, "*"]),
    "path": st.sampled_from(["/", "/abc", "/" + "p" * 300]),
    "pathKind": st.sampled_from(["Exact", "Regex", "Prefix", "Other"]),
    "method": st.just("GET"),
    "headers": st.dictionaries(st.sampled_from("abc"), st.just("v")),
    "query": st.dictionaries(st.sampled_from("abc"), st.just("v")),
    "queryRegex": st.dictionaries(st.sampled_from("de"), st.just("v")),
})


@given(_match_values, st.integers(0, 2))
def test_key_from_match_is_route_key_of_its_fields(match: dict[str, Any], tier: int) -> None:
    kind = match.get("pathKind")
    path_type = {"Exact": "Exact", "Regex": "RegularExpression", "Prefix": "PathPrefix"}.get(str(kind))
    common = {"created": "2024-01-01T00:00:00Z", "namespace": "n", "name": "r", "route_id": "id"}
    expected = route_key(hostname=match.get("host"), path_type=path_type if "path" in match else None,
                         path=match.get("path"), method="method" in match, headers=len(match.get("headers") or {}),
                         query=len(match.get("query") or {}) + len(match.get("queryRegex") or {}),
                         rule=1, match=2, tier=tier, **common)
    assert key_from_match(match, rule=1, match_index=2, tier=tier, **common) == expected


def _tuple_key(kw: dict[str, Any]) -> tuple[Any, ...]:
    """The precedence order written as a plain tuple (what the string keys must sort like)."""
    host = kw["hostname"] or ""
    if kw["path_type"] is None or kw["path"] is None:
        rank, plen = 2, 1
    else:
        rank, plen = {"Exact": 0, "RegularExpression": 1}.get(kw["path_type"], 2), len(kw["path"])
    return (kw["tier"], -(len(host) if host and not host.startswith("*") else 0), -len(host), rank, -plen,
            0 if kw["method"] else 1, -kw["headers"], -kw["query"], kw["created"], kw["namespace"], kw["name"],
            kw["rule"], kw["match"], kw["route_id"])


_key_fields = st.fixed_dictionaries({
    "hostname": st.sampled_from([None, "", "a.io", "b.io", "*.a.io", "*.io", "*", "x" * 300, "y" * 253]),
    "path_type": st.sampled_from([None, "Exact", "RegularExpression", "PathPrefix"]),
    "path": st.sampled_from([None, "/", "/a", "/ab", "/" + "p" * 5000]),
    "method": st.booleans(),
    "headers": st.integers(0, 20),
    "query": st.integers(0, 20),
    "created": st.sampled_from(["2024-01-01T00:00:00Z", "2024-01-01T00:00:01Z", "2023-12-31T23:59:59Z", "~"]),
    "namespace": st.sampled_from(["a", "ab", "b", "a-b", "a.b"]),
    "name": st.sampled_from(["r", "r1", "r-1", "s", "route-00001"]),
    "rule": st.integers(0, 300),
    "match": st.integers(0, 70),
    "route_id": st.sampled_from(["x", "y", "httproute/a/r/r0m0", "httproute/a/r/r0m0/a.io"]),
    "tier": st.integers(0, 2),
})


@given(st.lists(_key_fields, min_size=2, max_size=12))
def test_string_keys_sort_as_the_tuple_of_their_fields(fields: list[dict[str, Any]]) -> None:
    keyed = [(route_key(**kw), _tuple_key(kw)) for kw in fields]
    by_string = sorted(keyed, key=lambda x: x[0])
    by_tuple = sorted(keyed, key=lambda x: x[1])
    assert [t for _, t in by_string] == [t for _, t in by_tuple]
