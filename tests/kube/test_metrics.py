from __future__ import annotations

import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

from titanium_gateway.metrics import (
    CONTENT_TYPE,
    REGISTRY,
    NoopWorkqueueMetrics,
    PrometheusWorkqueueMetrics,
    Registry,
    exponential_buckets,
    leader_election_master_status,
    rest_client_requests,
)


def families(text: str) -> dict[str, tuple[str, str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]]:
    """name -> (type, help, {(sample name, sorted labels): value}), parsed by prometheus_client."""
    out = {}
    for fam in text_string_to_metric_families(text):
        out[fam.name] = (fam.type, fam.documentation,
                         {(s.name, tuple(sorted(s.labels.items()))): s.value for s in fam.samples})
    return out


def test_counter_gauge_text_parses_with_escaped_help_and_labels() -> None:
    r = Registry()
    c = r.counter("requests_total", "Requests.\nSecond line \\ here", ["code", "path"])
    c.labels(code="200", path='/a"b\\c\nd').inc()
    c.labels("200", '/a"b\\c\nd').inc(2)
    g = r.gauge("temperature", "Temp.")
    g.set(1.5)
    g.dec(0.25)
    text = r.render_text()
    got = families(text)
    assert got == {
        "requests": ("counter", "Requests.\nSecond line \\ here",
                     {("requests_total", (("code", "200"), ("path", '/a"b\\c\nd'))): 3.0}),
        "temperature": ("gauge", "Temp.", {("temperature", ()): 1.25}),
    }
    assert "_created" not in text  # not part of the 0.0.4 text the controller writes
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_histogram_buckets_are_cumulative_with_inf_sum_count() -> None:
    r = Registry()
    h = r.histogram("lat_seconds", "Latency.", ["name"], buckets=[0.1, 1])
    child = h.labels(name="q")
    for v in (0.05, 0.5, 0.5, 7):
        child.observe(v)
    _, _, samples = families(r.render_text())["lat_seconds"]
    assert samples == {
        ("lat_seconds_bucket", (("le", "0.1"), ("name", "q"))): 1,
        ("lat_seconds_bucket", (("le", "1.0"), ("name", "q"))): 3,
        ("lat_seconds_bucket", (("le", "+Inf"), ("name", "q"))): 4,
        ("lat_seconds_sum", (("name", "q"),)): 8.05,
        ("lat_seconds_count", (("name", "q"),)): 4,
    }
    assert r.value("lat_seconds_count", name="q") == 4


def test_get_or_create_and_conflicts() -> None:
    r = Registry()
    a = r.counter("x_total", "X.", ["a"])
    assert r.counter("x_total", "X.", ["a"]) is a
    with pytest.raises(ValueError):
        r.gauge("x_total", "X.", ["a"])
    with pytest.raises(ValueError):
        r.counter("x_total", "X.", ["b"])
    with pytest.raises(ValueError):
        r.counter("bad-name", "bad")
    with pytest.raises(ValueError):
        a.labels(b="1")
    with pytest.raises(ValueError):
        a.inc()  # labelled family needs labels
    with pytest.raises(ValueError):
        a.labels(a="1").inc(-1)


def test_gauge_function_and_remove() -> None:
    r = Registry()
    g = r.gauge("g", "G.", ["k"])
    box = [3.0]
    g.labels(k="v").set_function(lambda: box[0])
    box[0] = 4.0
    assert r.value("g", k="v") == 4
    g.remove("v")
    assert 'g{k="v"}' not in r.render_text()


def test_value_sums_the_samples_whose_labels_match() -> None:
    r = Registry()
    c = r.counter("n_total", "N.", ["a", "b"])
    c.labels(a="1", b="x").inc()
    c.labels(a="1", b="y").inc(2)
    c.labels(a="2", b="x").inc(4)
    assert r.value("n_total") == 7
    assert r.value("n_total", a="1") == 3
    assert r.value("n_total", a="1", b="y") == 2
    assert r.value("n_total", a="3") == 0
    assert r.value("missing_total") == 0
    assert exponential_buckets(1, 10, 3) == (1, 10, 100)


def test_thread_safe_counting() -> None:
    r = Registry()
    c = r.counter("n_total", "N.", ["t"])

    def work() -> None:
        for _ in range(2000):
            c.labels(t="x").inc()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert r.value("n_total", t="x") == 16000


def test_served_registry_has_the_process_collectors_and_parses() -> None:
    got = families(REGISTRY.render_text())
    for name in ("process_resident_memory_bytes", "process_virtual_memory_bytes", "process_cpu_seconds",
                 "process_open_fds", "process_start_time_seconds", "python_info", "python_gc_collections"):
        assert name in got, name
    assert got["process_resident_memory_bytes"][2][("process_resident_memory_bytes", ())] > 1_000_000
    assert "process_resident_memory_bytes" not in Registry().render_text()  # a controller's own: none


def test_workqueue_provider_names_and_standard_metrics() -> None:
    r = Registry()
    p = PrometheusWorkqueueMetrics(r)
    p.new_depth_metric("reconcile").inc()
    p.new_adds_metric("reconcile").inc()
    p.new_latency_metric("reconcile").observe(0.001)
    p.new_work_duration_metric("reconcile").observe(0.2)
    p.new_retries_metric("reconcile").inc()
    p.new_unfinished_work_seconds_metric("reconcile").set(1.5)
    p.new_longest_running_processor_seconds_metric("reconcile").set(0.5)
    rest_client_requests(r).labels(code="200", method="GET", host="h:443").inc()
    leader_election_master_status(r).labels(name="titanium-gateway").set(1)
    got = families(r.render_text())
    for family, kind, sample, labels, value in (
        ("workqueue_depth", "gauge", "workqueue_depth", {"name": "reconcile"}, 1),
        ("workqueue_adds", "counter", "workqueue_adds_total", {"name": "reconcile"}, 1),
        ("workqueue_queue_duration_seconds", "histogram", "workqueue_queue_duration_seconds_count",
         {"name": "reconcile"}, 1),
        ("workqueue_work_duration_seconds", "histogram", "workqueue_work_duration_seconds_count",
         {"name": "reconcile"}, 1),
        ("workqueue_retries", "counter", "workqueue_retries_total", {"name": "reconcile"}, 1),
        ("workqueue_unfinished_work_seconds", "gauge", "workqueue_unfinished_work_seconds",
         {"name": "reconcile"}, 1.5),
        ("workqueue_longest_running_processor_seconds", "gauge", "workqueue_longest_running_processor_seconds",
         {"name": "reconcile"}, 0.5),
        ("rest_client_requests", "counter", "rest_client_requests_total",
         {"code": "200", "method": "GET", "host": "h:443"}, 1),
        ("leader_election_master_status", "gauge", "leader_election_master_status",
         {"name": "titanium-gateway"}, 1),
    ):
        assert got[family][0] == kind, family
        assert got[family][2][(sample, tuple(sorted(labels.items())))] == value, sample
    # client-go's buckets: 10 ns .. 10 s
    buckets = [dict(k[1])["le"] for k in got["workqueue_queue_duration_seconds"][2] if k[0].endswith("_bucket")]
    assert buckets[0] == "1e-08" and buckets[-2:] == ["10.0", "+Inf"] and len(buckets) == 11
    # a second provider on the same registry shares the families
    PrometheusWorkqueueMetrics(r).new_depth_metric("reconcile").inc()
    assert r.value("workqueue_depth", name="reconcile") == 2
    n = NoopWorkqueueMetrics()
    n.new_depth_metric("x").inc()
    n.new_latency_metric("x").observe(1)
