"""Which cluster, and which destination of it, takes a request.

* :func:`choose_cluster`: a weighted split over the route's clusters (weight 0 takes no
  traffic; None when every weight is 0).
* :class:`Balancer`: a destination of a cluster by its ``algorithm`` and the destinations'
  relative ``weight`` (None when the cluster has no destinations: 503).
  ``RoundRobin`` (smooth weighted round robin), ``Random`` (weighted),
  ``LeastRequests`` (fewest requests in flight per unit of weight),
  ``LeastTime`` (lowest moving average of the time to response headers, times the requests
  in flight, per unit of weight; a destination without a sample first),
  ``PowerOfTwoChoices`` (two weighted random picks, the one with fewer requests in flight).
  Ties are broken at random, by weight.
* Session affinity by cookie: :func:`affinity_value` is the opaque cookie value of a
  destination (the same in every data-plane process, so any replica honours it);
  :meth:`Balancer.pick` takes the destination it names when it is still in the cluster.

The state (requests in flight, response times, round-robin positions) is keyed by cluster
and destination id, so it survives a reload for the destinations that stay.
"""

from __future__ import annotations

import base64
import hashlib
import random
import threading
from collections.abc import Iterable, Sequence

from titanium_gateway.twp import model as m

#: Weight of a new response time in the moving average of ``LeastTime``.
EWMA_ALPHA = 0.3


def choose_cluster(clusters: Sequence[m.WeightedCluster], rnd: random.Random | None = None) -> str | None:
    live = [c for c in clusters if c.weight > 0]
    if not live:
        return None
    if len(live) == 1:
        return live[0].cluster_id
    rnd = rnd or random
    point = rnd.random() * sum(c.weight for c in live)
    for c in live:
        point -= c.weight
        if point < 0:
            return c.cluster_id
    return live[-1].cluster_id


def affinity_value(destination: m.Destination) -> str:
    digest = hashlib.sha256(b"titanium-affinity\0" + destination.id.encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).decode().rstrip("=")


def _weighted(dests: Sequence[m.Destination], rnd: random.Random) -> m.Destination:
    point = rnd.random() * sum(d.weight for d in dests)
    for d in dests:
        point -= d.weight
        if point < 0:
            return d
    return dests[-1]


class Balancer:
    """Destination choice for every cluster of one data plane (thread-safe)."""

    def __init__(self, rnd: random.Random | None = None) -> None:
        self._rnd = rnd or random.Random()
        self._lock = threading.Lock()
        self._in_flight: dict[tuple[str, str], int] = {}
        self._ewma: dict[tuple[str, str], float] = {}
        self._rr: dict[str, tuple[tuple[m.Destination, ...], dict[str, int]]] = {}

    # -- accounting --------------------------------------------------------------------
    def started(self, cluster: m.Cluster, dest: m.Destination) -> None:
        with self._lock:
            key = (cluster.id, dest.id)
            self._in_flight[key] = self._in_flight.get(key, 0) + 1

    def finished(self, cluster: m.Cluster, dest: m.Destination, seconds: float | None = None) -> None:
        """A request ends; ``seconds`` (time to response headers) feeds ``LeastTime``."""
        with self._lock:
            key = (cluster.id, dest.id)
            left = self._in_flight.get(key, 0) - 1
            if left > 0:
                self._in_flight[key] = left
            else:
                self._in_flight.pop(key, None)
            if seconds is not None:
                old = self._ewma.get(key)
                self._ewma[key] = seconds if old is None else (1 - EWMA_ALPHA) * old + EWMA_ALPHA * seconds

    def retain(self, clusters: Iterable[m.Cluster]) -> None:
        """Forget the response times and round-robin positions of clusters and destinations
        a new config no longer has (requests in flight are forgotten as they finish)."""
        clusters = list(clusters)
        live = {(c.id, d.id) for c in clusters for d in c.destinations}
        ids = {c.id for c in clusters}
        with self._lock:
            self._ewma = {k: v for k, v in self._ewma.items() if k in live}
            self._rr = {k: v for k, v in self._rr.items() if k in ids}

    def in_flight(self, cluster_id: str, dest_id: str) -> int:
        return self._in_flight.get((cluster_id, dest_id), 0)

    # -- choice ------------------------------------------------------------------------
    def pick(self, cluster: m.Cluster, affinity: str | None = None) -> m.Destination | None:
        dests = cluster.destinations
        if not dests:
            return None
        if affinity is not None and cluster.session_affinity is not None:
            for d in dests:
                if affinity_value(d) == affinity:
                    return d
        if len(dests) == 1:
            return dests[0]
        with self._lock:
            algo = cluster.algorithm  # (None: RoundRobin)
            if algo == "Random":
                return _weighted(dests, self._rnd)
            if algo == "LeastRequests":
                return self._least(dests, lambda d: self._in_flight.get((cluster.id, d.id), 0) / d.weight)
            if algo == "LeastTime":
                return self._least(dests, lambda d: self._ewma.get((cluster.id, d.id), 0.0)
                                   * (self._in_flight.get((cluster.id, d.id), 0) + 1) / d.weight)
            if algo == "PowerOfTwoChoices":
                first = _weighted(dests, self._rnd)
                rest = [d for d in dests if d is not first]
                second = _weighted(rest, self._rnd)
                load_first = self._in_flight.get((cluster.id, first.id), 0) / first.weight
                load_second = self._in_flight.get((cluster.id, second.id), 0) / second.weight
                return second if load_second < load_first else first
            return self._round_robin(cluster)

    def _least(self, dests: Sequence[m.Destination], cost) -> m.Destination:
        costs = [(cost(d), d) for d in dests]
        low = min(c for c, _ in costs)
        return _weighted([d for c, d in costs if c == low], self._rnd)

    def _round_robin(self, cluster: m.Cluster) -> m.Destination:
        dests = cluster.destinations
        state = self._rr.get(cluster.id)
        if state is None or state[0] != dests:
            state = (dests, {d.id: 0 for d in dests})
            self._rr[cluster.id] = state
        current = state[1]
        total = 0
        best: m.Destination | None = None
        for d in dests:
            current[d.id] += d.weight
            total += d.weight
            if best is None or current[d.id] > current[best.id]:
                best = d
        assert best is not None
        current[best.id] -= total
        return best
