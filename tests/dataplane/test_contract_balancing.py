"""Cluster and destination choice, session affinity, SNI certificate choice (no sockets)."""

from __future__ import annotations

import random
from collections import Counter

from tests.dataplane.docs import cluster, config, dest, route
from tests.dataplane.rules import Row, covers, rows
from titanium_gateway.contract import Balancer, affinity_value, choose_cluster, select_certificate
from titanium_gateway.twp.model import Certificate, WeightedCluster


def _cluster(algorithm: str = "RoundRobin", weights=(1, 1, 1), **kw):
    dests = [dest(f"10.0.0.{i + 1}", 8080, weight=w) for i, w in enumerate(weights)]
    return config([route()], [cluster("be", dests, algorithm=algorithm, **kw)]).clusters["be"]


@covers("action.clusters", "i.canary", "i.canary-weight")
def test_weighted_route_clusters_split_by_weight() -> None:
    rnd = random.Random(7)
    split = (WeightedCluster("primary", 90), WeightedCluster("canary", 10))
    counts = Counter(choose_cluster(split, rnd) for _ in range(20000))
    assert 0.08 < counts["canary"] / 20000 < 0.12


@covers("action.clusters")
def test_weight_zero_takes_no_traffic() -> None:
    rnd = random.Random(1)
    split = (WeightedCluster("a", 0), WeightedCluster("b", 3))
    assert {choose_cluster(split, rnd) for _ in range(1000)} == {"b"}
    assert choose_cluster((WeightedCluster("a", 0),), rnd) is None


@covers("c.empty", "b.invalid-share")
def test_empty_cluster_has_no_destination() -> None:
    c = config([route()], [cluster("be", [])]).clusters["be"]
    assert Balancer().pick(c) is None


ALGORITHM_ROWS = [
    Row("c.algorithm", "RoundRobin cycles", "RoundRobin"),
    Row("c.algorithm", "Random", "Random"),
    Row("c.algorithm", "LeastRequests", "LeastRequests"),
    Row("c.algorithm", "LeastTime", "LeastTime"),
    Row("c.algorithm", "PowerOfTwoChoices", "PowerOfTwoChoices"),
    Row("i.load-balance", "every Ingress load-balance value maps to an algorithm the data plane has", "any"),
]


@rows(*ALGORITHM_ROWS)
def test_algorithms_spread_over_destinations(row: Row) -> None:
    (algorithm,) = row.args
    algorithms = ["RoundRobin", "Random", "LeastRequests", "LeastTime", "PowerOfTwoChoices"] \
        if algorithm == "any" else [algorithm]
    for algo in algorithms:
        c = _cluster(algo)
        b = Balancer(random.Random(3))
        seen = Counter()
        for _ in range(300):
            d = b.pick(c)
            seen[d.id] += 1
        assert set(seen) == {d.id for d in c.destinations}, algo


@covers("c.algorithm", "d.mirror-weight")
def test_round_robin_is_weighted_and_exact() -> None:
    c = _cluster("RoundRobin", (3, 1))
    b = Balancer()
    picks = [b.pick(c).id for _ in range(8)]
    assert Counter(picks) == {"10.0.0.1:8080": 6, "10.0.0.2:8080": 2}
    assert picks[:4].count("10.0.0.2:8080") == 1  # smooth: spread, not in a run


@covers("c.algorithm", "d.mirror-weight")
def test_random_is_weighted() -> None:
    c = _cluster("Random", (1, 9))
    b = Balancer(random.Random(5))
    counts = Counter(b.pick(c).id for _ in range(10000))
    assert 0.08 < counts["10.0.0.1:8080"] / 10000 < 0.12


@covers("c.algorithm")
def test_least_requests_takes_the_idle_destination() -> None:
    c = _cluster("LeastRequests", (1, 1, 1))
    b = Balancer(random.Random(1))
    d1, d2, d3 = c.destinations
    b.started(c, d1)
    b.started(c, d2)
    assert {b.pick(c).id for _ in range(50)} == {d3.id}
    b.finished(c, d1)
    assert {b.pick(c).id for _ in range(50)} <= {d1.id, d3.id}


@covers("c.algorithm")
def test_least_time_prefers_the_fast_destination() -> None:
    c = _cluster("LeastTime", (1, 1))
    b = Balancer(random.Random(1))
    fast, slow = c.destinations
    for d, t in ((fast, 0.01), (slow, 0.5)):
        b.started(c, d)
        b.finished(c, d, t)
    assert {b.pick(c).id for _ in range(50)} == {fast.id}


@covers("c.algorithm")
def test_power_of_two_choices_avoids_the_busy_destination() -> None:
    c = _cluster("PowerOfTwoChoices", (1, 1))
    b = Balancer(random.Random(1))
    busy, idle = c.destinations
    for _ in range(5):
        b.started(c, busy)
    assert {b.pick(c).id for _ in range(50)} == {idle.id}  # of two, the one with fewer in flight


@covers("c.sessionAffinity", "i.affinity")
def test_affinity_cookie_pins_a_destination() -> None:
    c = _cluster("Random", (1, 1, 1), sessionAffinity={"policy": "Cookie", "name": "titanium-affinity"})
    b = Balancer(random.Random(2))
    target = c.destinations[1]
    value = affinity_value(target)
    assert target.id not in value and target.address not in value  # opaque
    assert {b.pick(c, value).id for _ in range(50)} == {target.id}
    assert affinity_value(target) == value  # the same in every process (any replica honours it)
    gone = config([route()], [cluster("be", [dest("10.0.0.9", 8080)],
                                      sessionAffinity={"policy": "Cookie", "name": "x"})]).clusters["be"]
    assert b.pick(gone, value).id == "10.0.0.9:8080"  # a destination that left: chosen anew


@covers("c.sessionAffinity")
def test_affinity_ignored_without_session_affinity() -> None:
    c = _cluster("RoundRobin", (1, 1))
    b = Balancer()
    value = affinity_value(c.destinations[0])
    assert {b.pick(c, value).id for _ in range(4)} == {d.id for d in c.destinations}


# -- SNI ------------------------------------------------------------------------------------
ITEMS = (
    Certificate("apps.wild.pfx", ("*.example.com",)),
    Certificate("apps.shop.pfx", ("shop.example.com",)),
    Certificate("apps.other.pfx", ("other.test", "*.other.test")),
)
WITH_DEFAULT = (*ITEMS, Certificate("apps.default.pfx", ("fallback.test",), default=True))

SNI_ROWS = [
    Row("certs.exact", "exact beats wildcard, whatever the list order", ITEMS, "shop.example.com", "apps.shop.pfx"),
    Row("certs.exact", "case-insensitive", ITEMS, "SHOP.Example.com", "apps.shop.pfx"),
    Row("certs.exact", "exact in a later item", ITEMS, "other.test", "apps.other.pfx"),
    Row("certs.wildcard", "covers one label", ITEMS, "api.example.com", "apps.wild.pfx"),
    Row("certs.wildcard", "not two labels", ITEMS, "a.b.example.com", None),
    Row("certs.wildcard", "not the apex", ITEMS, "example.com", None),
    Row("certs.default", "no match: the default", WITH_DEFAULT, "nothing.test", "apps.default.pfx"),
    Row("certs.default", "no SNI: the default", WITH_DEFAULT, None, "apps.default.pfx"),
    Row("certs.default", "a match beats the default", WITH_DEFAULT, "x.other.test", "apps.other.pfx"),
    Row("certs.fail", "no match, no default", ITEMS, "nothing.test", None),
    Row("certs.fail", "no SNI, no default", ITEMS, None, None),
    Row("d.certificates", "a default item keeps its own hosts", WITH_DEFAULT, "fallback.test", "apps.default.pfx"),
]


@rows(*SNI_ROWS)
def test_sni_selection(row: Row) -> None:
    items, name, expected = row.args
    chosen = select_certificate(items, name)
    assert (chosen.file if chosen else None) == expected


@covers("c.algorithm")
def test_balancer_forgets_what_a_new_config_drops() -> None:
    c = _cluster("LeastTime", (1, 1))
    b = Balancer(random.Random(1))
    for d in c.destinations:
        b.started(c, d)
        b.finished(c, d, 0.1)
    b.pick(_cluster("RoundRobin", (1, 1)))
    b.retain([config([route()], [cluster("be", [dest("10.0.0.1", 8080)])]).clusters["be"]])
    assert list(b._ewma) == [("be", "10.0.0.1:8080")]
