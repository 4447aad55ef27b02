"""Bounded memory under churn of many distinct objects: event dedupe cache, status cache,
informer stores, certificate conversion cache (the reconcile work queue holds one key by
design). Figures are printed (``pytest -s``)."""

from __future__ import annotations

import sys
import time

import pytest

from tests.integration.conftest import Env, wait_for
from tests.reliability import fuzzlib
from titanium_gateway.render import certificates
from titanium_gateway.render.result import EventRecord
from titanium_gateway.writers.events import MAX_TRACKED, Decision, EventPolicy

pytestmark = pytest.mark.timeout(240)


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t


def test_event_dedupe_cache_is_bounded() -> None:
    clock = FakeClock()
    policy = EventPolicy(clock=clock)  # type: ignore[arg-type]
    n = 3 * MAX_TRACKED
    window: list[EventRecord] = []
    for i in range(n):
        rec = EventRecord("Ingress", "apps", f"ing-{i}", "Warning", "InvalidPath", f"path {i} is not absolute")
        window = [*window[-99:], rec]  # problems come and go: 100 present at a time
        for d in policy.decide(window):
            policy.record(d, f"ev-{i}", "apps")
        clock.t += 0.01
    forgetting = len(policy)
    # every problem present at once (decide never forgets): only the bound limits the cache
    for i in range(n):
        rec = EventRecord("Ingress", "apps", f"ing-{i}", "Warning", "InvalidPath", f"path {i} is not absolute")
        policy.record(Decision("post", rec, 1), f"ev-{i}", "apps")
    print(f"\nevent dedupe cache: {n} distinct problems, 100 present at a time -> {forgetting} tracked; "
          f"{n} present at once -> {len(policy)} tracked (bound {MAX_TRACKED})")
    assert forgetting <= 100
    assert len(policy) <= MAX_TRACKED
    policy.decide([])  # every problem gone: everything is forgotten
    assert len(policy) == 0


def test_certificate_conversion_cache_is_bounded() -> None:
    p = fuzzlib.certs()
    n = certificates._CACHE_SIZE + 200
    for i in range(n):
        secret = {"type": "kubernetes.io/tls", "data": {"tls.crt": fuzzlib.b64(p.cert_pem + b"\n" * (i % 50 + 1)),
                                                        "tls.key": fuzzlib.b64(p.key_pem + b"\n" * (i // 50 + 1))}}
        assert certificates.convert_tls_secret(secret).ok
    size = len(certificates._cache)
    print(f"\ncertificate conversion cache: {n} distinct Secret contents -> {size} entries (bound {certificates._CACHE_SIZE})")
    assert size <= certificates._CACHE_SIZE


def test_controller_caches_stay_bounded_under_churn(env: Env) -> None:
    """Rounds of many distinct HTTPRoutes and rejected Ingresses, created then deleted."""
    s = env.server
    env.service("api")
    env.gateway()
    inst = env.start_controller()
    env.wait_programmed()
    ctrl = inst.ctrl
    rounds, per_round = 3, 120
    peak = {"status": 0, "events": 0, "stores": 0}
    t0 = time.monotonic()
    for rnd in range(rounds):
        names = [f"r{rnd}-{i}" for i in range(per_round)]
        for n in names:
            env.route(name=n, host=f"{n}.example.com")
        for i in range(20):
            s.put_object({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                          "metadata": {"name": f"bad-{rnd}-{i}", "namespace": "apps"},
                          "spec": {"ingressClassName": env.rel.ingress_class, "rules": [{"http": {"paths": [
                              {"path": "relative", "pathType": "Prefix",
                               "backend": {"service": {"name": "api", "port": {"number": 8080}}}}]}}]}})
        wait_for(lambda ns=names: f"{ns[-1]}.example.com" in env.root_config(), timeout=30)
        wait_for(lambda: len(ctrl.event_writer.policy) >= 20, timeout=30, what="events posted")
        peak["status"] = max(peak["status"], len(ctrl.status_writer._written))
        peak["events"] = max(peak["events"], len(ctrl.event_writer.policy))
        peak["stores"] = max(peak["stores"], sum(len(i.store) for _, i in ctrl.informers.items()))
        for n in names:
            s.delete_object("HTTPRoute", "apps", n)
        for i in range(20):
            s.delete_object("Ingress", "apps", f"bad-{rnd}-{i}")
        wait_for(lambda ns=names: f"{ns[-1]}.example.com" not in env.root_config(), timeout=30)
    wait_for(lambda: len(ctrl.event_writer.policy) == 0, timeout=30, what="event cache empties")
    status_after = len(ctrl.status_writer._written)
    stores_after = sum(len(i.store) for _, i in ctrl.informers.items())
    took = time.monotonic() - t0
    print(f"\ncontroller churn: {rounds * per_round} distinct HTTPRoutes + {rounds * 20} rejected Ingresses in {took:.1f}s; "
          f"status cache peak {peak['status']} -> {status_after}; event cache peak {peak['events']} -> "
          f"{len(ctrl.event_writer.policy)}; informer stores peak {peak['stores']} -> {stores_after} objects; "
          f"maxrss {_maxrss_mb():.0f} MB")
    assert status_after <= 10, f"status cache kept {status_after} entries for deleted objects"
    assert peak["status"] <= per_round + 30
    assert stores_after <= 30, f"informer stores kept {stores_after} objects after every churned object was deleted"


def _maxrss_mb() -> float:
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024
