from __future__ import annotations

import threading

import pytest

from titanium_gateway.metrics import (
    CONTENT_TYPE,
    NoopWorkqueueMetrics,
    PrometheusWorkqueueMetrics,
    Registry,
    exponential_buckets,
    format_value,
    leader_election_master_status,
    rest_client_requests,
)


def test_counter_gauge_render_text_format() -> None:
    r = Registry()
    c = r.counter("requests_total", "Requests.\nSecond line \\ here", ["code", "path"])
    c.labels(code="200", path='/a"b\\c\nd').inc()
    c.labels("200", '/a"b\\c\nd').inc(2)
    g = r.gauge("temperature", "Temp.")
    g.set(1.5)
    g.dec(0.25)
    text = r.render_text()
    assert text == (
        "# HELP requests_total Requests.\\nSecond line \\\\ here\n"
        "# TYPE requests_total counter\n"
        'requests_total{code="200",path="/a\\"b\\\\c\\nd"} 3\n'
        "# HELP temperature Temp.\n"
        "# TYPE temperature gauge\n"
        "temperature 1.25\n"
    )
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_histogram_buckets_are_cumulative_with_inf_sum_count() -> None:
    r = Registry()
    h = r.histogram("lat_seconds", "Latency.", ["name"], buckets=[1, 0.1])
    child = h.labels(name="q")
    for v in (0.05, 0.5, 0.5, 7):
        child.observe(v)
    lines = r.render_text().splitlines()
    assert lines[2:] == [
        'lat_seconds_bucket{name="q",le="0.1"} 1',
        'lat_seconds_bucket{name="q",le="1"} 3',
        'lat_seconds_bucket{name="q",le="+Inf"} 4',
        'lat_seconds_sum{name="q"} 8.05',
        'lat_seconds_count{name="q"} 4',
    ]


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
    assert 'g{k="v"} 4' in r.render_text()
    g.remove(k="v")
    assert 'g{k="v"}' not in r.render_text()


def test_format_value_special() -> None:
    assert format_value(float("inf")) == "+Inf"
    assert format_value(float("-inf")) == "-Inf"
    assert format_value(float("nan")) == "NaN"
    assert format_value(2.0) == "2"
    assert format_value(1e-08) == "1e-08"
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
    assert c.value(t="x") == 16000


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
    text = r.render_text()
    for line in (
        'workqueue_depth{name="reconcile"} 1',
        'workqueue_adds_total{name="reconcile"} 1',
        'workqueue_queue_duration_seconds_count{name="reconcile"} 1',
        'workqueue_work_duration_seconds_count{name="reconcile"} 1',
        'workqueue_retries_total{name="reconcile"} 1',
        'workqueue_unfinished_work_seconds{name="reconcile"} 1.5',
        'workqueue_longest_running_processor_seconds{name="reconcile"} 0.5',
        'rest_client_requests_total{code="200",method="GET",host="h:443"} 1',
        'leader_election_master_status{name="titanium-gateway"} 1',
    ):
        assert line in text.splitlines(), line
    # a second provider on the same registry shares the families
    PrometheusWorkqueueMetrics(r).new_depth_metric("reconcile").inc()
    assert 'workqueue_depth{name="reconcile"} 2' in r.render_text()
    n = NoopWorkqueueMetrics()
    n.new_depth_metric("x").inc()
    n.new_latency_metric("x").observe(1)
