"""The reconcile loop's own metric families: reconciles and their time, the render's time and
bytes, the translation memo, certificate expiry (every data plane's), Gateways' Programmed."""

from __future__ import annotations

from typing import Any

from titanium_gateway import kinds
from titanium_gateway.metrics import Registry
from titanium_gateway.render.result import RenderResult


class ReconcileMetrics:
    """The reconcile loop's own metric families, in ``registry``."""

    def __init__(self, registry: Registry) -> None:
        self.total = registry.counter("controller_runtime_reconcile_total", "Reconciles by result.", ["result"])
        self.time = registry.histogram("controller_runtime_reconcile_time_seconds", "Time of one reconcile.")
        self.render = registry.histogram("titanium_render_duration_seconds", "Time of the pure render.")
        self.bytes = registry.gauge("titanium_config_bytes", "Bytes of the rendered config (root + parts).")
        self.memo = registry.counter(
            "titanium_render_memo_total",
            "HTTPRoute translations by outcome: replayed from the last render or translated.", ["outcome"])
        self.cert_expiry = registry.gauge(
            "titanium_certificate_expiry_timestamp_seconds",
            "notAfter (Unix seconds) of each kubernetes.io/tls Secret converted for the data plane "
            "(Gateway listener certificateRefs and Ingress tls).", ["namespace", "name"])
        self.programmed = registry.gauge(
            "titanium_gateway_programmed",
            "1 while the Programmed condition this controller writes on a Gateway is True, else 0.",
            ["namespace", "name"])
        self._cert_series: set[tuple[str, str]] = set()
        self._gateway_series: set[tuple[str, str]] = set()
        self._memo_seen = (0, 0)

    def rendered(self, result: RenderResult, seconds: float, memo: Any) -> None:
        """After a render: its time, its bytes, the memo's replays and translations since the last
        one (``memo``: the RenderCache, None without), the certificates' expiry."""
        self.render.observe(seconds)
        self.bytes.set(sum(len(p.config) + sum(len(b) for _, b in p.parts) for p in result.planes))
        if memo is not None:
            self.memo.labels("replayed").inc(memo.hits - self._memo_seen[0])
            self.memo.labels("translated").inc(memo.misses - self._memo_seen[1])
            self._memo_seen = (memo.hits, memo.misses)
        self.certificates(result)

    def certificates(self, result: RenderResult) -> None:
        """One expiry series per certificate converted for any data plane (the shared one's and
        each Gateway's own); those of certificates gone are removed."""
        seen: set[tuple[str, str]] = set()
        for plane in result.planes:
            for cert in plane.certificates:
                if cert.not_after is None:
                    continue
                ns, _, name = cert.source.partition("/")
                self.cert_expiry.labels(ns, name).set(cert.not_after)
                seen.add((ns, name))
        for key in self._cert_series - seen:
            self.cert_expiry.remove(*key)
        self._cert_series = seen

    def gateways(self, result: RenderResult) -> None:
        """One Programmed series per Gateway this controller owns (the statuses it submits)."""
        seen: set[tuple[str, str]] = set()
        gateway = kinds.GATEWAY.kind
        for st in result.statuses:
            if st.kind != gateway:
                continue
            conditions = st.status.get("conditions") or ()
            programmed = any(c.get("type") == "Programmed" and c.get("status") == "True" for c in conditions)
            self.programmed.labels(st.namespace, st.name).set(1 if programmed else 0)
            seen.add((st.namespace, st.name))
        for key in self._gateway_series - seen:
            self.programmed.remove(*key)
        self._gateway_series = seen
