from __future__ import annotations

import pytest

from titanium_gateway.controller.main import main
from titanium_gateway.controller.options import FLAGS, OptionsError, env_name, parse_options

REQ = ["--data-plane-service=titanium"]


def test_defaults() -> None:
    o = parse_options(REQ, {})
    assert o.controller_name == "titaniumproxy.com/gateway-controller"
    assert (o.data_plane_namespace, o.service_namespace, o.service_name) == ("default", "default", "titanium")
    assert (o.config_map, o.tls_secret, o.config_parts) == ("titanium", "titanium-tls", 64)
    assert dict(o.port_map) == {80: 8080, 443: 8443} and o.data_plane_ports == (8080, 8443)
    assert o.secret_namespaces == () and o.data_plane_deployment is None
    assert o.ingress_controller_name == "titanium.io/ingress-controller" and not o.watch_legacy_annotation
    assert (o.admin_port, o.lease_name, o.lease_namespace) == (9901, "titanium-gateway", "default")
    assert o.leader_election and o.min_reconcile_ms == 500 and o.health_port == 8081
    assert (o.kube_api_qps, o.kube_api_burst, o.kubeconfig, o.verbose) == (200.0, 1000, None, False)
    assert (o.lease.lease_duration, o.lease.renew_deadline, o.lease.retry_period) == (15.0, 10.0, 2.0)


def test_pod_env_defaults() -> None:
    o = parse_options(REQ, {"POD_NAMESPACE": "gw", "POD_NAME": "ctrl-0"})
    assert (o.data_plane_namespace, o.lease_namespace, o.identity) == ("gw", "gw", "ctrl-0")


def test_every_flag_has_an_env_var_and_flag_wins() -> None:
    env = {env_name("data-plane-service"): "ns1/svc", env_name("min-reconcile-ms"): "250",
           env_name("verbose"): "true", env_name("no-leader-election"): "1",
           env_name("secret-namespaces"): "b,a", "TITANIUM_ADMIN_TOKEN": "tok"}
    o = parse_options(["--min-reconcile-ms=900"], env)
    assert (o.service_namespace, o.service_name) == ("ns1", "svc")
    assert o.min_reconcile_ms == 900 and o.verbose and not o.leader_election
    assert o.secret_namespaces == ("a", "b") and o.admin_token == "tok"
    assert "tok" not in repr(o)
    for flag in FLAGS:
        assert env_name(flag).startswith("TITANIUM_GATEWAY_") and "-" not in env_name(flag)


def test_boolean_flag_forms() -> None:
    assert parse_options([*REQ, "--verbose"], {}).verbose
    assert not parse_options([*REQ, "--verbose=false"], {}).verbose
    with pytest.raises(OptionsError, match="not a boolean"):
        parse_options(REQ, {env_name("verbose"): "maybe"})


@pytest.mark.parametrize("argv,env,match", [
    ([], {}, "data-plane-service.*required"),
    ([*REQ, "--no-such-flag=1"], {}, "unrecognized arguments"),
    (REQ, {"TITANIUM_GATEWAY_TYPO": "x"}, "unknown environment variable.*TITANIUM_GATEWAY_TYPO"),
    ([*REQ, "--port-map=80:8080"], {}, "port-map.*not PORT=PORT"),
    ([*REQ, "--port-map=80=70000"], {}, "port-map.*outside"),
    ([*REQ, "--data-plane-ports=0"], {}, "data-plane-ports.*outside"),
    ([*REQ, "--admin-port=http"], {}, "admin-port.*not an integer"),
    ([*REQ, "--health-port=65536"], {}, "health-port.*outside"),
    ([*REQ, "--kube-api-qps=-1"], {}, "kube-api-qps"),
    (["--data-plane-service=a/b/c"], {}, "NAME or NAMESPACE/NAME"),
    ([*REQ, "--lease-duration=5", "--renew-deadline=10"], {}, "lease-duration > renew-deadline"),
])
def test_invalid(argv: list[str], env: dict[str, str], match: str) -> None:
    with pytest.raises(OptionsError, match=match):
        parse_options(argv, env)


def test_main_exits_2_with_a_clear_message(capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TITANIUM_GATEWAY_BOGUS", "1")
    assert main(REQ) == 2
    assert "TITANIUM_GATEWAY_BOGUS" in capsys.readouterr().err
    monkeypatch.delenv("TITANIUM_GATEWAY_BOGUS")
    assert main([*REQ, "--bogus"]) == 2
    assert "--bogus" in capsys.readouterr().err


def test_render_options() -> None:
    o = parse_options(["--data-plane-service=gw/tp", "--port-map=8080=9090", "--data-plane-ports=9090",
                       "--config-parts=3", "--watch-legacy-annotation", "--controller-name=x.io/c"], {})
    r = o.to_render_options()
    assert r.data_plane_service == ("gw", "tp") and dict(r.port_map) == {8080: 9090}
    assert r.data_plane_ports == (9090,) and r.max_parts == 3 and r.watch_legacy_annotation
    assert r.controller_name == "x.io/c"


def test_default_client_limiter_lets_a_thousand_status_writes_through_at_once() -> None:
    """The goal: 1000 HTTPRoute statuses (one patch each) in < 2 s. The client-side token bucket
    at the default QPS/burst must add well under that, on top of the startup requests (a list
    and a watch per informer, the Lease, the ConfigMaps, the Secret); 50/100 added ~19 s."""
    from titanium_gateway.kube.clock import FakeClock
    from titanium_gateway.kube.ratelimit import TokenBucket

    o = parse_options(REQ, {})
    bucket = TokenBucket(o.kube_api_qps, o.kube_api_burst, FakeClock())
    startup = 2 * 12 + 20
    waits = [bucket.reserve() for _ in range(startup + 1000)]
    assert max(waits) <= 0.5, f"the client limiter delays the last status write by {max(waits):.2f}s"
