"""The reference data plane's Prometheus metrics (one registry per data plane)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["DataPlaneMetrics", "CONTENT_TYPE_LATEST"]


class DataPlaneMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("titanium_requests", "Requests answered, by listener port and status code.",
                                ["port", "code"], registry=r)
        self.request_seconds = Histogram("titanium_request_duration_seconds",
                                         "Time from request to the end of the response.", ["port"], registry=r)
        self.upstream = Counter("titanium_upstream_requests", "Requests forwarded to a destination, by cluster "
                                "and outcome (response, timeout, error).", ["cluster", "outcome"], registry=r)
        self.mirrors = Counter("titanium_mirror_requests", "Mirrored copies, by outcome (sent, failed, dropped).",
                               ["outcome"], registry=r)
        self.policy_answers = Counter("titanium_policy_answers", "Requests a policy answered itself, by policy "
                                      "kind and status.", ["policy", "code"], registry=r)
        self.reloads = Counter("titanium_config_reloads", "Config load attempts, by result (loaded, rejected).",
                               ["result"], registry=r)
        self.config_loaded = Gauge("titanium_config_loaded", "1 once a config is loaded.", registry=r)
        self.config_info = Gauge("titanium_config_info", "The loaded config (value 1).", ["config_hash"],
                                 registry=r)
        self.last_reload = Gauge("titanium_config_last_reload_success_timestamp_seconds",
                                 "When the loaded config was loaded.", registry=r)
        self.routes = Gauge("titanium_config_routes", "Routes in the loaded config.", registry=r)
        self.clusters = Gauge("titanium_config_clusters", "Clusters in the loaded config.", registry=r)
        self.tls_rejected = Counter("titanium_tls_handshakes_rejected", "TLS handshakes no certificate serves.",
                                    registry=r)

    def loaded(self, config_hash: str, routes: int, clusters: int, when: float) -> None:
        self.reloads.labels("loaded").inc()
        self.config_loaded.set(1)
        self.config_info.clear()
        self.config_info.labels(config_hash).set(1)
        self.last_reload.set(when)
        self.routes.set(routes)
        self.clusters.set(clusters)

    def render(self) -> bytes:
        return generate_latest(self.registry)
