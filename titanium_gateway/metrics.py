"""The controller's Prometheus metrics, on ``prometheus_client``.

Usage::

    from titanium_gateway.metrics import REGISTRY
    reconciles = REGISTRY.counter("titanium_reconcile_total", "Reconciles run.", ["result"])
    reconciles.labels(result="ok").inc()
    body = REGISTRY.render_text()          # serve with CONTENT_TYPE

``Registry`` is a ``prometheus_client.CollectorRegistry`` whose ``counter``, ``gauge`` and
``histogram`` are get-or-create: asking twice for the same name with the same type and label
names returns the same ``prometheus_client`` metric (so several instances of a component share
one family); a different type or label set raises ``ValueError``. Each controller gets a
registry of its own (tests run many in one process); ``REGISTRY``, the one the controller
serves on ``/metrics``, also holds the ``process_*`` and ``python_*`` collectors.

Counters and histograms are written without the ``<name>_created`` samples of the
OpenMetrics model: the 0.0.4 text format has no place for them (Prometheus would store them as
separate gauges) and client-go does not write them.

The module also holds ``WorkqueueMetricsProvider`` (client-go's ``workqueue.MetricsProvider``)
and its Prometheus implementation ``PrometheusWorkqueueMetrics``, plus the metrics other parts
of the controller share (``rest_client_requests_total``, ``leader_election_master_status``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

__all__ = [
    "CONTENT_TYPE", "DEFAULT_BUCKETS", "REGISTRY", "Counter", "Gauge", "Histogram", "Registry",
    "exponential_buckets", "leader_election_master_status", "reflector_malformed_objects",
    "rest_client_requests", "NoopWorkqueueMetrics", "PrometheusWorkqueueMetrics", "WorkqueueMetricsProvider",
]

#: The text exposition format 0.0.4: what ``generate_latest`` writes for names of the classic
#: character set, which every name here is (``Registry`` refuses others).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

disable_created_metrics()  # no <name>_created samples (see the module's docstring)

_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

DEFAULT_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_M = TypeVar("_M", Counter, Gauge, Histogram)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """``count`` upper bounds: start, start*factor, ... (client-go's ExponentialBuckets)."""
    if start <= 0 or factor <= 1 or count < 1:
        raise ValueError("exponential_buckets needs start > 0, factor > 1, count >= 1")
    return tuple(start * factor**i for i in range(count))


class Registry(CollectorRegistry):
    """A ``CollectorRegistry`` with get-or-create metric families (``process_collectors``: also
    the process, platform and garbage-collector collectors of ``prometheus_client``)."""

    def __init__(self, *, process_collectors: bool = False) -> None:
        super().__init__(auto_describe=True)
        self._families: dict[str, tuple[type, tuple[str, ...], Counter | Gauge | Histogram]] = {}
        self._families_lock = threading.Lock()
        if process_collectors:
            for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
                self.register(collector)

    def _get_or_create(self, cls: type[_M], name: str, help_text: str, labelnames: Sequence[str],
                       **kwargs: object) -> _M:
        labels = tuple(labelnames)
        if not _NAME_RE.match(name) or not all(_LABEL_RE.match(n) for n in labels):
            raise ValueError(f"metric {name} {list(labels)}: a name or label name outside [a-zA-Z0-9_:]")
        with self._families_lock:
            known = self._families.get(name)
            if known is not None:
                kind, known_labels, metric = known
                if kind is not cls or known_labels != labels:
                    raise ValueError(f"metric {name} already registered as {kind.__name__.lower()} "
                                     f"with labels {list(known_labels)}")
                assert isinstance(metric, cls)
                return metric
            made = cls(name, help_text, labels, registry=self, **kwargs)  # type: ignore[arg-type]
            self._families[name] = (cls, labels, made)
            return made

    def counter(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> Counter:
        return self._get_or_create(Counter, name, help_text, labelnames)

    def gauge(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> Gauge:
        return self._get_or_create(Gauge, name, help_text, labelnames)

    def histogram(self, name: str, help_text: str, labelnames: Sequence[str] = (),
                  buckets: Iterable[float] = DEFAULT_BUCKETS) -> Histogram:
        return self._get_or_create(Histogram, name, help_text, labelnames, buckets=tuple(buckets))

    def render_text(self) -> str:
        """All families in the text exposition format 0.0.4."""
        return generate_latest(self).decode()

    def value(self, sample: str, /, **labels: str) -> float:
        """The sum of the samples named ``sample`` (e.g. ``x_total``, ``h_count``) whose labels
        include ``labels`` (0 when there is none: a child never touched)."""
        total = 0.0
        for metric in self.collect():
            for s in metric.samples:
                if s.name == sample and all(s.labels.get(k) == str(v) for k, v in labels.items()):
                    total += s.value
        return total


REGISTRY = Registry(process_collectors=True)
"""The process-wide registry the controller serves on ``/metrics``."""


# --- standard metrics -----------------------------------------------------------------------------

def rest_client_requests(registry: Registry | None = None) -> Counter:
    """``rest_client_requests_total{code,method,host}`` (client-go's name)."""
    return (registry or REGISTRY).counter(
        "rest_client_requests_total",
        "Number of HTTP requests to the Kubernetes API, partitioned by status code, method, and host.",
        ["code", "method", "host"])


def reflector_malformed_objects(registry: Registry | None = None) -> Counter:
    """``titanium_reflector_malformed_objects_total{reflector}``: watch events and list items
    skipped because they are not an object with ``metadata.name``."""
    return (registry or REGISTRY).counter(
        "titanium_reflector_malformed_objects_total",
        "Watch events and list items skipped because they carry no object with metadata.name.", ["reflector"])


def leader_election_master_status(registry: Registry | None = None) -> Gauge:
    """``leader_election_master_status{name}``: 1 while this replica leads, else 0."""
    return (registry or REGISTRY).gauge(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
        "1 indicates master. 'name' is the string used to identify the lease.",
        ["name"])


# --- workqueue metrics provider (client-go util/workqueue MetricsProvider) ------------------------

class GaugeMetric(Protocol):
    def inc(self, amount: float = 1.0) -> None: ...

    def dec(self, amount: float = 1.0) -> None: ...


class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    def inc(self, amount: float = 1.0) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, value: float) -> None: ...


class WorkqueueMetricsProvider(Protocol):
    """What a work queue needs to report; one set of metrics per queue ``name``."""

    def new_depth_metric(self, name: str) -> GaugeMetric: ...

    def new_adds_metric(self, name: str) -> CounterMetric: ...

    def new_latency_metric(self, name: str) -> HistogramMetric: ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric: ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric: ...

    def new_retries_metric(self, name: str) -> CounterMetric: ...


class _Noop:
    def inc(self, amount: float = 1.0) -> None:
        pass

    def dec(self, amount: float = 1.0) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


class NoopWorkqueueMetrics:
    """The provider used when none is given: every metric discards its values."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _Noop()

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _Noop()

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _Noop()

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _Noop()

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _Noop()

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _Noop()

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _Noop()


_WQ_BUCKETS = exponential_buckets(10e-9, 10, 10)  # 10 ns .. 10 s, as client-go


class PrometheusWorkqueueMetrics:
    """client-go's workqueue metric names, registered in ``registry`` with label ``name``."""

    def __init__(self, registry: Registry | None = None) -> None:
        r = registry or REGISTRY
        self.depth = r.gauge("workqueue_depth", "Current depth of workqueue", ["name"])
        self.adds = r.counter("workqueue_adds_total", "Total number of adds handled by workqueue", ["name"])
        self.latency = r.histogram("workqueue_queue_duration_seconds",
                                   "How long in seconds an item stays in workqueue before being requested.",
                                   ["name"], _WQ_BUCKETS)
        self.work_duration = r.histogram("workqueue_work_duration_seconds",
                                         "How long in seconds processing an item from workqueue takes.",
                                         ["name"], _WQ_BUCKETS)
        self.unfinished = r.gauge("workqueue_unfinished_work_seconds",
                                  "How many seconds of work has done that is in progress and hasn't been "
                                  "observed by work_duration. Large values indicate stuck threads. One can "
                                  "deduce the number of stuck threads by observing the rate at which this "
                                  "increases.", ["name"])
        self.longest = r.gauge("workqueue_longest_running_processor_seconds",
                               "How many seconds has the longest running processor for workqueue been running.",
                               ["name"])
        self.retries = r.counter("workqueue_retries_total", "Total number of retries handled by workqueue",
                                 ["name"])

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self.depth.labels(name=name)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self.adds.labels(name=name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self.latency.labels(name=name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self.work_duration.labels(name=name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self.unfinished.labels(name=name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self.longest.labels(name=name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self.retries.labels(name=name)
