"""Fields of Gateway API releases newer than v1.2.1 (and of its experimental channel) are never
silently ignored: a rule field that changes traffic makes the rule answer 500 with
Accepted False / UnsupportedValue naming the field; a Gateway field makes the Gateway or the
listener not accepted (docs/gateway-api.md, "Fields of newer Gateway API releases")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.render.core_fixtures import (
    base_objects,
    cond,
    endpoints,
    gateway,
    gatewayclass,
    listener,
    listener_status,
    parent_cond,
    route,
    run,
    service,
    status_of,
    tls_secret,
)
from titanium_gateway.contract import Request, decide, load_config
from titanium_gateway.contract.routing import ForwardTo, Respond

BACKEND = [{"name": "api", "port": 8080}]
RETRY = {"attempts": 2, "codes": [503], "backoff": "100ms"}
SESSION = {"type": "Cookie", "sessionName": "s", "absoluteTimeout": "1h"}


def answer(result: Any, path: str = "/", host: str = "shop.example.com") -> Any:
    return decide(load_config(result.config, dict(result.parts)), Request(host=host, path=path)).outcome


def render_rules(rules: list[dict[str, Any]]) -> Any:
    return run(base_objects() + [route(rules=rules)], assume_programmed=True)


@pytest.mark.parametrize(("field", "value"), [("retry", RETRY), ("sessionPersistence", SESSION)])
def test_a_rule_field_of_a_newer_release_answers_500_naming_it(field: str, value: Any) -> None:
    result = render_rules([
        {"matches": [{"path": {"type": "PathPrefix", "value": "/plain"}}], "backendRefs": BACKEND},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/new"}}], "backendRefs": BACKEND, field: value},
    ])
    out = answer(result, "/new/x")
    assert isinstance(out, Respond) and out.status == 500
    assert out.body == "UnsupportedValue"  # the why is in status
    assert isinstance(answer(result, "/plain"), ForwardTo)  # the other rule is untouched
    accepted = parent_cond(result, "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "UnsupportedValue")
    assert f"spec.rules[1].{field} is not supported" in accepted["message"]


def test_rule_name_changes_no_traffic_and_is_accepted() -> None:
    plain = render_rules([{"backendRefs": BACKEND}])
    named = render_rules([{"name": "main", "backendRefs": BACKEND}])
    assert named.config == plain.config
    assert parent_cond(named, "Accepted")["status"] == "True"


def test_without_newer_fields_the_output_is_unchanged() -> None:
    """Explicitly absent-looking values are not fields: only keys the rule holds count."""
    result = render_rules([{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": BACKEND,
                            "timeouts": {"request": "10s"}}])
    assert isinstance(answer(result), ForwardTo)
    assert parent_cond(result, "Accepted")["status"] == "True"


def test_new_filter_types_and_redirect_codes_answer_500() -> None:
    cors = {"type": "CORS", "cors": {"allowOrigins": ["https://a.example"]}}
    result = render_rules([{"filters": [cors], "backendRefs": BACKEND}])
    out = answer(result)
    assert isinstance(out, Respond) and (out.status, out.body) == (500, "UnsupportedValue")
    assert "filter type CORS is not supported" in parent_cond(result, "Accepted")["message"]
    redirect = {"type": "RequestRedirect", "requestRedirect": {"hostname": "b.example", "statusCode": 307}}
    result = render_rules([{"filters": [redirect]}])
    out = answer(result)
    assert isinstance(out, Respond) and (out.status, out.body) == (500, "UnsupportedValue")
    assert "statusCode 307" in parent_cond(result, "Accepted")["message"]


def test_a_match_field_of_a_newer_release_degrades_the_match() -> None:
    result = render_rules([{"matches": [{"path": {"type": "PathPrefix", "value": "/m"}, "cookies": [{"name": "a"}]}],
                            "backendRefs": BACKEND}])
    out = answer(result, "/m")
    assert isinstance(out, Respond) and (out.status, out.body) == (500, "UnsupportedValue")
    assert parent_cond(result, "Accepted")["reason"] == "UnsupportedValue"
    assert "match field cookies is not supported" in parent_cond(result, "Accepted")["message"]


def test_a_backend_ref_field_of_a_newer_release_answers_500() -> None:
    result = render_rules([{"backendRefs": [{"name": "api", "port": 8080, "sessionPersistence": SESSION}]}])
    out = answer(result)
    assert isinstance(out, Respond) and out.status == 500
    assert out.body == "UnsupportedValue"
    assert "backendRef field sessionPersistence is not supported" in parent_cond(result, "Accepted")["message"]


# -- Gateways --------------------------------------------------------------------------------
def gateway_status(result: Any) -> dict[str, Any]:
    return status_of(result, "Gateway", "apps", "web").status


def render_gateway(**spec: Any) -> Any:
    gw = gateway(**spec)
    return run([gatewayclass(), gw, service(), endpoints(), route(rules=[{"backendRefs": BACKEND}]),
                tls_secret()], assume_programmed=True)


@pytest.mark.parametrize(("spec", "reason", "words"), [
    ({"allowedListeners": {"namespaces": {"from": "Nearby"}}}, "UnsupportedValue", "spec.allowedListeners"),
    ({"tls": {"backend": {"clientCertificateRef": {"name": "c"}}}}, "UnsupportedValue", "spec.tls.backend"),
    ({"backendTLS": {"clientCertificateRef": {"name": "c"}}}, "UnsupportedValue", "spec.backendTLS"),
    ({"defaultScope": "All"}, "UnsupportedValue", "spec.defaultScope"),
    ({"infrastructure": {"parametersRef": {"group": "x.io", "kind": "P", "name": "p"}}}, "InvalidParameters",
     "spec.infrastructure.parametersRef"),
])
def test_a_gateway_field_that_changes_behaviour_rejects_the_gateway(spec: dict[str, Any], reason: str,
                                                                    words: str) -> None:
    result = render_gateway(**spec)
    accepted = cond(gateway_status(result)["conditions"], "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", reason)
    assert words in accepted["message"] and "not supported" in accepted["message"]
    assert isinstance(answer(render_gateway()), ForwardTo)  # (the baseline forwards)
    assert not isinstance(answer(result), ForwardTo)  # nothing attached: nothing served
    assert parent_cond(result, "Accepted")["status"] == "False"


@pytest.mark.parametrize("spec", [
    {"allowedListeners": {"namespaces": {"from": "None"}}},  # the defaults: no ListenerSet may attach
    {"allowedListeners": {}},
    {"allowedListeners": {"namespaces": {"from": "Same"}}},  # ListenerSets (render/listenerset.py)
    {"allowedListeners": {"namespaces": {"from": "Selector", "selector": {"matchLabels": {"a": "b"}}}}},
    {"defaultScope": "None"},
    {"infrastructure": {"labels": {"a": "b"}, "annotations": {"c": "d"}}},
    {"tls": {"frontend": {"default": {}}}},  # no validation asked for
])
def test_gateway_fields_that_change_nothing_are_accepted(spec: dict[str, Any]) -> None:
    result = render_gateway(**spec)
    baseline = render_gateway()
    assert result.config == baseline.config
    assert cond(gateway_status(result)["conditions"], "Accepted")["status"] == "True"


HTTPS = listener("https", 443, "HTTPS", tls={"certificateRefs": [{"name": "shop-tls"}]})
VALIDATION = {"caCertificateRefs": [{"kind": "ConfigMap", "name": "ca"}]}


def test_frontend_validation_on_the_gateway_rejects_its_https_listeners() -> None:
    result = render_gateway(listeners=[listener(), HTTPS], tls={"frontend": {"default": {"validation": VALIDATION}}})
    https = cond(listener_status(result, "https")["conditions"], "Accepted")
    assert (https["status"], https["reason"]) == ("False", "UnsupportedValue")
    assert "spec.tls.frontend.default.validation" in https["message"]
    assert cond(listener_status(result, "http")["conditions"], "Accepted")["status"] == "True"
    assert cond(gateway_status(result)["conditions"], "Accepted")["reason"] == "ListenersNotValid"
    assert 8443 not in [li.port for li in result.document.listeners]


def test_frontend_validation_per_port_rejects_the_listeners_of_that_port_only() -> None:
    other = listener("https2", 8443, "HTTPS", tls={"certificateRefs": [{"name": "shop-tls"}]})
    result = run([gatewayclass(), gateway(listeners=[HTTPS, other],
                                          tls={"frontend": {"default": {}, "perPort": [
                                              {"port": 443, "tls": {"validation": VALIDATION}}]}}),
                  tls_secret()], assume_programmed=True, port_map={80: 8080, 443: 8443, 8443: 9443},
                 data_plane_ports=(8080, 8443, 9443))
    assert cond(listener_status(result, "https")["conditions"], "Accepted")["reason"] == "UnsupportedValue"
    assert cond(listener_status(result, "https2")["conditions"], "Accepted")["status"] == "True"


def test_listener_fields_of_newer_releases_reject_the_listener() -> None:
    https = listener("https", 443, "HTTPS", tls={"certificateRefs": [{"name": "shop-tls"}],
                                                 "frontendValidation": VALIDATION})
    filtered = listener("http", 80, "HTTP", filters={"requests": [{"type": "ExternalAuth"}]})
    result = render_gateway(listeners=[filtered, https])
    for name, words in (("http", "spec.listeners[0].filters"), ("https", "spec.listeners[1].tls.frontendValidation")):
        accepted = cond(listener_status(result, name)["conditions"], "Accepted")
        assert (accepted["status"], accepted["reason"]) == ("False", "UnsupportedValue"), name
        assert words in accepted["message"]
    assert cond(gateway_status(result)["conditions"], "Accepted")["status"] == "False"
