"""A tiny thread-safe Prometheus registry: counters, gauges and histograms with labels,
rendered in the text exposition format 0.0.4.

Usage::

    from titanium_gateway.metrics import REGISTRY
    reconciles = REGISTRY.counter("titanium_reconcile_total", "Reconciles run.", ["result"])
    reconciles.labels(result="ok").inc()
    body = REGISTRY.render_text()          # serve with CONTENT_TYPE

``Registry.counter/gauge/histogram`` are get-or-create: asking twice for the same name with the
same type and label names returns the same family (so several instances of a component can
share one metric); a different type or label set raises ``ValueError``.

The module also holds ``WorkqueueMetricsProvider`` (client-go's ``workqueue.MetricsProvider``)
and its Prometheus implementation ``PrometheusWorkqueueMetrics``, plus helpers for the standard
metric names other parts of the controller use (``rest_client_requests_total``,
``leader_election_master_status``).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

DEFAULT_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """``count`` upper bounds: start, start*factor, ... (client-go's ExponentialBuckets)."""
    if start <= 0 or factor <= 1 or count < 1:
        raise ValueError("exponential_buckets needs start > 0, factor > 1, count >= 1")
    return tuple(start * factor**i for i in range(count))


def format_value(v: float) -> str:
    """A sample value as the text format writes it (``+Inf``, ``-Inf``, ``NaN``, integers bare)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(float(v))


def _escape_help(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label_value(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _label_str(names: Sequence[str], values: Sequence[str], extra: tuple[str, str] | None = None) -> str:
    pairs = [f'{n}="{_escape_label_value(v)}"' for n, v in zip(names, values, strict=True)]
    if extra is not None:
        pairs.append(f'{extra[0]}="{_escape_label_value(extra[1])}"')
    return "{" + ",".join(pairs) + "}" if pairs else ""


class _Family:
    """A metric name with its label names and one child per label-value tuple."""

    type_name = ""

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str]) -> None:
        if not _NAME_RE.match(name):
            raise ValueError(f"invalid metric name {name!r}")
        for ln in labelnames:
            if not _LABEL_RE.match(ln) or ln.startswith("__") or ln == "le":
                raise ValueError(f"invalid label name {ln!r} for {name}")
        if len(set(labelnames)) != len(labelnames):
            raise ValueError(f"duplicate label names for {name}")
        self.name = name
        self.help = help_text
        self.labelnames: tuple[str, ...] = tuple(labelnames)
        self._lock = threading.Lock()
        self._children: dict[tuple[str, ...], object] = {}

    def _key(self, args: tuple[str, ...], kwargs: dict[str, str]) -> tuple[str, ...]:
        if args and kwargs:
            raise ValueError("pass label values either positionally or by name, not both")
        if kwargs:
            if set(kwargs) != set(self.labelnames):
                raise ValueError(f"{self.name} takes labels {list(self.labelnames)}, got {sorted(kwargs)}")
            return tuple(str(kwargs[n]) for n in self.labelnames)
        if len(args) != len(self.labelnames):
            raise ValueError(f"{self.name} takes {len(self.labelnames)} label values, got {len(args)}")
        return tuple(str(a) for a in args)

    def _new_child(self) -> object:
        raise NotImplementedError

    def _child(self, key: tuple[str, ...]) -> object:
        with self._lock:
            c = self._children.get(key)
            if c is None:
                c = self._new_child()
                self._children[key] = c
            return c

    def _unlabelled(self) -> object:
        if self.labelnames:
            raise ValueError(f"{self.name} has labels {list(self.labelnames)}: call .labels(...) first")
        return self._child(())

    def remove(self, *args: str, **kwargs: str) -> None:
        """Drop the child with these label values (no error when absent)."""
        key = self._key(args, kwargs)
        with self._lock:
            self._children.pop(key, None)

    def _items(self) -> list[tuple[tuple[str, ...], object]]:
        with self._lock:
            return sorted(self._children.items())

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.type_name}"]
        for key, child in self._items():
            lines.extend(self._render_child(key, child))
        return lines

    def _render_child(self, key: tuple[str, ...], child: object) -> list[str]:
        raise NotImplementedError


class CounterChild:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        with self._lock:
            self._value += amount

    @property
    def value(self) -> float:
        with self._lock:
            return self._value


class GaugeChild:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0.0
        self._fn: Callable[[], float] | None = None

    def set(self, value: float) -> None:
        with self._lock:
            self._value = float(value)

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            self._value += amount

    def dec(self, amount: float = 1.0) -> None:
        with self._lock:
            self._value -= amount

    def set_function(self, fn: Callable[[], float]) -> None:
        """Compute the value when read (render time) instead of storing it."""
        with self._lock:
            self._fn = fn

    @property
    def value(self) -> float:
        with self._lock:
            fn = self._fn
            if fn is None:
                return self._value
        return float(fn())


class HistogramChild:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self._lock = threading.Lock()
        self._bounds = buckets
        self._counts = [0] * len(buckets)
        self._sum = 0.0
        self._count = 0

    def observe(self, value: float) -> None:
        with self._lock:
            self._sum += value
            self._count += 1
            for i, b in enumerate(self._bounds):
                if value <= b:
                    self._counts[i] += 1
                    break

    def snapshot(self) -> tuple[list[tuple[float, int]], float, int]:
        """Cumulative (upper bound, count) pairs without +Inf, the sum and the count."""
        with self._lock:
            cum, out = 0, []
            for b, c in zip(self._bounds, self._counts, strict=True):
                cum += c
                out.append((b, cum))
            return out, self._sum, self._count

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    @property
    def sum(self) -> float:
        with self._lock:
            return self._sum


class Counter(_Family):
    type_name = "counter"

    def _new_child(self) -> CounterChild:
        return CounterChild()

    def labels(self, *args: str, **kwargs: str) -> CounterChild:
        return self._child(self._key(args, kwargs))  # type: ignore[return-value]

    def inc(self, amount: float = 1.0) -> None:
        self._unlabelled().inc(amount)  # type: ignore[attr-defined]

    def value(self, *args: str, **kwargs: str) -> float:
        """The current value of one child (0 when it was never touched)."""
        with self._lock:
            c = self._children.get(self._key(args, kwargs))
        return c.value if isinstance(c, CounterChild) else 0.0

    def _render_child(self, key: tuple[str, ...], child: object) -> list[str]:
        assert isinstance(child, CounterChild)
        return [f"{self.name}{_label_str(self.labelnames, key)} {format_value(child.value)}"]


class Gauge(_Family):
    type_name = "gauge"

    def _new_child(self) -> GaugeChild:
        return GaugeChild()

    def labels(self, *args: str, **kwargs: str) -> GaugeChild:
        return self._child(self._key(args, kwargs))  # type: ignore[return-value]

    def set(self, value: float) -> None:
        self._unlabelled().set(value)  # type: ignore[attr-defined]

    def inc(self, amount: float = 1.0) -> None:
        self._unlabelled().inc(amount)  # type: ignore[attr-defined]

    def dec(self, amount: float = 1.0) -> None:
        self._unlabelled().dec(amount)  # type: ignore[attr-defined]

    def set_function(self, fn: Callable[[], float]) -> None:
        self._unlabelled().set_function(fn)  # type: ignore[attr-defined]

    def value(self, *args: str, **kwargs: str) -> float:
        with self._lock:
            c = self._children.get(self._key(args, kwargs))
        return c.value if isinstance(c, GaugeChild) else 0.0

    def _render_child(self, key: tuple[str, ...], child: object) -> list[str]:
        assert isinstance(child, GaugeChild)
        return [f"{self.name}{_label_str(self.labelnames, key)} {format_value(child.value)}"]


class Histogram(_Family):
    type_name = "histogram"

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str],
                 buckets: Iterable[float] = DEFAULT_BUCKETS) -> None:
        super().__init__(name, help_text, labelnames)
        bounds = sorted(float(b) for b in buckets if not math.isinf(b))
        if not bounds or len(set(bounds)) != len(bounds):
            raise ValueError(f"{name}: buckets must be non-empty and distinct")
        self.buckets: tuple[float, ...] = tuple(bounds)

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self.buckets)

    def labels(self, *args: str, **kwargs: str) -> HistogramChild:
        return self._child(self._key(args, kwargs))  # type: ignore[return-value]

    def observe(self, value: float) -> None:
        self._unlabelled().observe(value)  # type: ignore[attr-defined]

    def _render_child(self, key: tuple[str, ...], child: object) -> list[str]:
        assert isinstance(child, HistogramChild)
        cum, total, count = child.snapshot()
        lines = []
        for bound, c in cum:
            lines.append(f"{self.name}_bucket{_label_str(self.labelnames, key, ('le', format_value(bound)))} {c}")
        lines.append(f"{self.name}_bucket{_label_str(self.labelnames, key, ('le', '+Inf'))} {count}")
        lines.append(f"{self.name}_sum{_label_str(self.labelnames, key)} {format_value(total)}")
        lines.append(f"{self.name}_count{_label_str(self.labelnames, key)} {count}")
        return lines


class Registry:
    """Holds metric families by name; ``render_text()`` writes them all (sorted by name)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._families: dict[str, _Family] = {}

    def _get_or_create(self, cls: type[_Family], name: str, help_text: str, labelnames: Sequence[str],
                       factory: Callable[[], _Family]) -> _Family:
        with self._lock:
            fam = self._families.get(name)
            if fam is not None:
                if type(fam) is not cls or fam.labelnames != tuple(labelnames):
                    raise ValueError(f"metric {name} already registered as {fam.type_name} "
                                     f"with labels {list(fam.labelnames)}")
                return fam
            fam = factory()
            self._families[name] = fam
            return fam

    def counter(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> Counter:
        fam = self._get_or_create(Counter, name, help_text, labelnames,
                                  lambda: Counter(name, help_text, labelnames))
        assert isinstance(fam, Counter)
        return fam

    def gauge(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> Gauge:
        fam = self._get_or_create(Gauge, name, help_text, labelnames,
                                  lambda: Gauge(name, help_text, labelnames))
        assert isinstance(fam, Gauge)
        return fam

    def histogram(self, name: str, help_text: str, labelnames: Sequence[str] = (),
                  buckets: Iterable[float] = DEFAULT_BUCKETS) -> Histogram:
        bl = tuple(buckets)
        fam = self._get_or_create(Histogram, name, help_text, labelnames,
                                  lambda: Histogram(name, help_text, labelnames, bl))
        assert isinstance(fam, Histogram)
        return fam

    def get(self, name: str) -> _Family | None:
        with self._lock:
            return self._families.get(name)

    def unregister(self, name: str) -> None:
        with self._lock:
            self._families.pop(name, None)

    def render_text(self) -> str:
        """All families in the text exposition format 0.0.4 (ends with a newline)."""
        with self._lock:
            fams = sorted(self._families.items())
        lines: list[str] = []
        for _, fam in fams:
            lines.extend(fam.render())
        return "\n".join(lines) + "\n" if lines else ""


REGISTRY = Registry()
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
