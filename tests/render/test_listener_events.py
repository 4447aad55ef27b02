"""An invalid listener of a Gateway (or of a ListenerSet) gets one Warning Event, reason
``InvalidListener``, naming the listener and why; a sound one gets none. Each render gives the
same Event while the problem remains, so the event writer posts it once and posts it again only
when the listener breaks again after being fixed."""

from __future__ import annotations

from typing import Any

from tests.render.core_fixtures import base_objects, gateway, gatewayclass, listener, run, tls_secret
from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.render.listenerevents import INVALID_LISTENER
from titanium_gateway.writers.events import EventPolicy

HTTPS = listener("https", 443, "HTTPS", tls={"certificateRefs": [{"name": "shop-tls"}]})


def _world(*extra: Any) -> list[Any]:
    gw = gateway(listeners=[listener(), HTTPS])
    gw["metadata"]["uid"] = "gw-uid"
    return [gatewayclass(), gw, *extra]


def listener_events(result: Any) -> list[Any]:
    return [e for e in result.events if e.reason == INVALID_LISTENER]


def test_a_listener_whose_secret_is_missing_gets_one_warning_event() -> None:
    (e,) = listener_events(run(_world()))
    assert (e.kind, e.namespace, e.name, e.type, e.uid) == ("Gateway", "apps", "web", "Warning", "gw-uid")
    assert e.api_version == "gateway.networking.k8s.io/v1"
    assert e.message.startswith('listener "https" cannot serve: ResolvedRefs=False (InvalidCertificateRef): ')
    assert "apps/shop-tls" in e.message and '"http"' not in e.message


def test_sound_listeners_get_none() -> None:
    assert listener_events(run(_world(tls_secret()))) == []
    assert listener_events(run(base_objects())) == []


def test_a_conflicted_listener_names_each_condition() -> None:
    gw = gateway(listeners=[listener("a", 80, "HTTP", hostname="x.example.com"),
                            listener("b", 80, "HTTPS", hostname="x.example.com",
                                     tls={"certificateRefs": [{"name": "shop-tls"}]})])
    events = listener_events(run([gatewayclass(), gw, tls_secret()]))
    assert events and all(e.kind == "Gateway" for e in events)
    assert any("Conflicted=True" in e.message for e in events)


def test_posted_once_while_it_remains_and_again_when_it_returns() -> None:
    policy = EventPolicy(clock=FakeClock())
    broken, fixed = run(_world()).events, run(_world(tls_secret())).events

    def posted(events: Any) -> list[str]:
        decisions = policy.decide(e for e in events if e.reason == INVALID_LISTENER)
        for d in decisions:
            policy.record(d)
        return [d.action for d in decisions]

    assert posted(broken) == ["post"]
    assert posted(run(_world()).events) == []  # the next reconcile: the same Event, not posted again
    assert posted(fixed) == []
    assert posted(broken) == ["post"]  # broken again after the fix: a new Event at once
