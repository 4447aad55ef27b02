from __future__ import annotations

from typing import Any

import requests
import responses
from responses import matchers

from titanium_gateway.metrics import Registry
from titanium_gateway.prober.prober import (
    POD_FIELDS_USED,
    Endpoint,
    PodProblem,
    Prober,
    ProbeResult,
    awaiting_rollout,
    ready_endpoints,
)
from titanium_gateway.writers.deployment import LISTENERS_ANNOTATION

TOKEN = "admin-token"
H = "a" * 64
OLD = "b" * 64
AUTH = [matchers.header_matcher({"Authorization": f"Bearer {TOKEN}"})]


def slice_(eps: list[dict[str, Any]], svc: str = "titanium", ns: str = "gw") -> dict[str, Any]:
    return {"metadata": {"name": f"{svc}-x", "namespace": ns, "labels": {"kubernetes.io/service-name": svc}},
            "endpoints": eps}


def ep(addr: str, pod: str, ready: bool | None = True, terminating: bool = False) -> dict[str, Any]:
    cond: dict[str, Any] = {"terminating": terminating}
    if ready is not None:
        cond["ready"] = ready
    return {"addresses": [addr], "conditions": cond, "targetRef": {"kind": "Pod", "name": pod}}


def test_ready_endpoints_from_slices() -> None:
    slices = [slice_([ep("10.0.0.1", "p1"), ep("10.0.0.2", "p2", ready=False), ep("10.0.0.3", "p3", ready=None),
                      ep("10.0.0.4", "p4", terminating=True)]),
              slice_([ep("10.9.9.9", "other")], svc="else"), slice_([ep("10.8.8.8", "x")], ns="elsewhere")]
    assert ready_endpoints(slices, "gw", "titanium") == [Endpoint("p1", "10.0.0.1"), Endpoint("p3", "10.0.0.3")]


def prober(reg: Registry | None = None) -> Prober:
    return Prober(9901, TOKEN, timeout=0.5, attempts=2, retry_wait=0.0, registry=reg or Registry())


def add_pod(rsps: responses.RequestsMock, addr: str, h: str, ready: int = 200) -> None:
    rsps.get(f"http://{addr}:9901/readyz", status=ready)
    rsps.get(f"http://{addr}:9901/version", json={"version": "7.1", "config_hash": h}, match=AUTH)


@responses.activate
def test_confirmed_only_when_every_ready_pod_reports_the_hash() -> None:
    add_pod(responses.mock, "10.0.0.1", H)
    add_pod(responses.mock, "10.0.0.2", H)
    reg = Registry()
    r = prober(reg).probe([Endpoint("p1", "10.0.0.1"), Endpoint("p2", "10.0.0.2")], H)
    assert r.confirmed_hash == H and r.message == ""
    assert reg.value("titanium_probe_results_total", result="confirmed") == 1
    # /version got the bearer token, /readyz did not need it
    v = [c.request for c in responses.calls if str(c.request.url).endswith("/version")]
    assert all(req.headers["Authorization"] == f"Bearer {TOKEN}" for req in v)


@responses.activate
def test_stale_pod_is_named_in_the_message() -> None:
    add_pod(responses.mock, "10.0.0.1", H)
    add_pod(responses.mock, "10.0.0.2", OLD)
    r = prober().probe([Endpoint("p1", "10.0.0.1"), Endpoint("p2", "10.0.0.2")], H)
    assert r.confirmed_hash is None
    assert "p2" in r.message and OLD[:12] in r.message and H[:12] in r.message


@responses.activate
def test_not_ready_and_unauthorized() -> None:
    add_pod(responses.mock, "10.0.0.1", H, ready=503)
    r = prober().probe([Endpoint("p1", "10.0.0.1")], H)
    assert r.confirmed_hash is None and "503" in r.message
    responses.reset()
    responses.get("http://10.0.0.1:9901/readyz", status=200)
    responses.get("http://10.0.0.1:9901/version", status=401)
    assert "401" in prober().probe([Endpoint("p1", "10.0.0.1")], H).message


@responses.activate
def test_connection_errors_are_retried_briefly_then_reported() -> None:
    responses.get("http://10.0.0.1:9901/readyz", body=requests.ConnectionError("refused"))
    responses.get("http://10.0.0.1:9901/readyz", status=200)
    responses.get("http://10.0.0.1:9901/version", json={"config_hash": H})
    assert prober().probe([Endpoint("p1", "10.0.0.1")], H).confirmed_hash == H
    responses.reset()
    responses.get("http://10.0.0.1:9901/readyz", body=requests.ConnectionError("refused"))
    r = prober().probe([Endpoint("p1", "10.0.0.1")], H)
    assert r.confirmed_hash is None and "unreachable" in r.message
    assert len([c for c in responses.calls if str(c.request.url).endswith("/readyz")]) == 2  # attempts=2


def test_no_ready_endpoints_is_pending() -> None:
    r = prober().probe([], H)
    assert r.confirmed_hash is None and "no ready" in r.message


@responses.activate
def test_token_not_in_message() -> None:
    responses.get("http://10.0.0.1:9901/readyz", status=200)
    responses.get("http://10.0.0.1:9901/version", body="not json")
    r = prober().probe([Endpoint("p1", "10.0.0.1")], H)
    assert "not JSON" in r.message and TOKEN not in r.message


def test_pods_are_probed_in_parallel() -> None:
    import threading
    import time

    class SlowProber(Prober):
        def __init__(self) -> None:
            super().__init__(9901, TOKEN, registry=Registry())
            self.active = 0
            self.peak = 0
            self.lock = threading.Lock()

        def examine(self, ep: Endpoint, expected: str, token: str | None = None) -> PodProblem | None:
            with self.lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
            time.sleep(0.2)
            with self.lock:
                self.active -= 1
            return None

    p = SlowProber()
    t0 = time.monotonic()
    assert p.probe([Endpoint(f"p{i}", f"10.0.0.{i}") for i in range(8)], H).confirmed_hash == H
    assert time.monotonic() - t0 < 1.0 and p.peak > 1


def pod(name: str, ip: str | None, stamp: str | None = None, *, ips: tuple[str, ...] = (),
        deleting: bool = False) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": "gw",
                          "annotations": {} if stamp is None else {LISTENERS_ANNOTATION: stamp}}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {}
    if ip:
        status["podIP"] = ip
    if ips:
        status["podIPs"] = [{"ip": i} for i in ips]
    return {"metadata": md, "status": status}


def bare(addr: str) -> dict[str, Any]:
    """An endpoint after an informer transform dropped targetRef and nodeName."""
    return {"addresses": [addr], "conditions": {"ready": True}}


def test_endpoints_map_to_pods_by_address_without_target_ref() -> None:
    slices = [slice_([bare("10.0.0.1"), bare("fd00::2"), bare("10.0.0.3")])]
    pods = [pod("titanium-a", "10.0.0.1", "8080/http"), pod("titanium-b", None, "", ips=("10.0.0.2", "fd00::2")),
            pod("old", "10.0.0.1", "8080/http", deleting=True)]
    eps = ready_endpoints(slices, "gw", "titanium", pods)
    assert [(e.pod, e.address, e.listeners) for e in eps] == [
        ("10.0.0.3", "10.0.0.3", None), ("titanium-a", "10.0.0.1", "8080/http"), ("titanium-b", "fd00::2", "")]
    # with targetRef but no Pod address in the cache: by name
    eps = ready_endpoints([slice_([ep("10.0.0.9", "p9")])], "gw", "titanium", [pod("p9", None, "8080/http")])
    assert [(e.pod, e.listeners) for e in eps] == [("p9", "8080/http")]
    # the Pod fields this relies on are declared for the informer transform
    assert {"status.podIP", "status.podIPs[].ip", "metadata.annotations[gateway.titaniumproxy.com/listeners]"} \
        <= set(POD_FIELDS_USED)


def test_pod_created_before_the_listener_stamp_awaits_the_rollout() -> None:
    slices = [slice_([bare("10.0.0.1"), bare("10.0.0.2")])]
    new = "8080/http,8443/https"
    eps = ready_endpoints(slices, "gw", "titanium", [pod("p-new", "10.0.0.1", new), pod("p-old", "10.0.0.2", "8080/http")])
    msg = awaiting_rollout(eps, new)
    assert "p-old" in msg and "10.0.0.2" in msg and "rollout" in msg and "p-new" not in msg
    assert awaiting_rollout(eps, "8080/http").startswith("pod p-new ")
    eps = ready_endpoints(slices, "gw", "titanium", [pod("p-new", "10.0.0.1", new), pod("p-2", "10.0.0.2", new)])
    assert awaiting_rollout(eps, new) == ""
    # a pod without the stamp was created from the chart's template: the empty listener set
    eps = ready_endpoints(slices, "gw", "titanium", [pod("a", "10.0.0.1"), pod("b", "10.0.0.2")])
    assert awaiting_rollout(eps, "") == ""
    assert "pod a (10.0.0.1) awaits the data-plane rollout" in awaiting_rollout(eps, "8080/http")
    assert "(and 1 more)" in awaiting_rollout(eps, "8080/http")
    # an endpoint whose Pod is not in the cache is not confirmed either
    eps = ready_endpoints(slices, "gw", "titanium", [pod("a", "10.0.0.1", new)])
    assert "10.0.0.2" in awaiting_rollout(eps, new)


# --- the data plane from its Service, whatever its pods' labels -------------------------------

def lpod(name: str, ip: str | None, labels: dict[str, str] | None = None, *, ns: str = "gw",
         uid: str = "", stamp: str | None = None) -> dict[str, Any]:
    p = pod(name, ip, stamp)
    p["metadata"].update({"namespace": ns, "labels": labels or {}})
    if uid:
        p["metadata"]["uid"] = uid
    return p


def svc(selector: dict[str, str] | None, name: str = "titanium", ns: str = "gw") -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def names(pods: Any) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_the_data_plane_is_what_its_service_serves_whatever_the_labels() -> None:
    from titanium_gateway.prober.prober import data_plane

    pods = [lpod("edge-0", "10.0.0.1", {"app": "edge"}), lpod("edge-1", "10.0.0.2", {"app": "edge"}),
            lpod("edge-2", None, {"app": "edge"}),  # no address yet: the selector finds it
            lpod("controller-0", "10.0.0.7", {"app.kubernetes.io/name": "titanium"}),  # not the data plane
            lpod("titanium-x", "10.0.0.8", {"app.kubernetes.io/name": "titanium",
                                            "app.kubernetes.io/component": "data-plane"})]  # chart labels, not served
    slices = [slice_([ep("10.0.0.1", "edge-0"), ep("10.0.0.2", "edge-1", ready=False)]),
              slice_([ep("10.0.0.8", "titanium-x")], svc="other")]
    dp = data_plane(svc({"app": "edge"}), slices, pods, "gw", "titanium", pod_namespace="gw")
    assert names(dp.pods) == ["edge-0", "edge-1", "edge-2"]
    assert [(e.pod, e.address) for e in dp.endpoints] == [("edge-0", "10.0.0.1")]
    assert dp.not_ready == ("pod edge-1",)


def test_endpoints_without_target_ref_and_a_service_without_selector() -> None:
    from titanium_gateway.prober.prober import data_plane

    # raw manifests: a selector-less Service with a hand-made EndpointSlice (addresses only)
    pods = [lpod("dp-a", "10.0.0.1", {"x": "1"}), lpod("dp-b", "10.0.0.2"), lpod("web", "10.0.0.3")]
    dp = data_plane(svc(None), [slice_([bare("10.0.0.1"), bare("10.0.0.2"), bare("10.0.0.9")])], pods, "gw",
                    "titanium", pod_namespace="gw")
    assert names(dp.pods) == ["dp-a", "dp-b"]
    assert [(e.pod, e.listeners, e.unknown) for e in dp.endpoints] == [
        ("10.0.0.9", None, "endpoint 10.0.0.9 has no targetRef and no pod in namespace gw has that address"),
        ("dp-a", "", ""), ("dp-b", "", "")]


def test_a_service_whose_selector_changes_moves_the_data_plane() -> None:
    from titanium_gateway.prober.prober import data_plane

    pods = [lpod("blue-0", None, {"track": "blue"}), lpod("green-0", None, {"track": "green"})]
    assert names(data_plane(svc({"track": "blue"}), [], pods, "gw", "titanium").pods) == ["blue-0"]
    assert names(data_plane(svc({"track": "green"}), [], pods, "gw", "titanium").pods) == ["green-0"]
    # a selector matches in the Service's namespace only; an empty selector selects nothing
    assert names(data_plane(svc({"track": "blue"}, ns="elsewhere"), [], pods, "elsewhere", "titanium").pods) == []
    assert names(data_plane(svc({}), [], pods, "gw", "titanium").pods) == []


def test_target_refs_name_the_pod_by_namespace_name_and_uid() -> None:
    from titanium_gateway.prober.prober import data_plane

    refs = [{"addresses": ["10.0.0.1"], "conditions": {"ready": True},
             "targetRef": {"kind": "Pod", "name": "sts-0", "namespace": "gw", "uid": "old"}},
            {"addresses": ["10.0.0.2"], "conditions": {"ready": True},
             "targetRef": {"kind": "Pod", "name": "far", "namespace": "other"}},
            {"addresses": ["10.0.0.3"], "conditions": {"ready": True}, "targetRef": {"kind": "Node", "name": "n1"}}]
    pods = [lpod("sts-0", "10.0.0.5", uid="new"),  # recreated under the same name: another pod
            lpod("host", "10.0.0.3", stamp="8080/http")]
    dp = data_plane(svc(None), [slice_(refs)], pods, "gw", "titanium", pod_namespace="gw")
    assert names(dp.pods) == ["host"]  # a non-Pod targetRef falls back to the address
    unknown = {e.address: e.unknown for e in dp.endpoints}
    assert unknown["10.0.0.1"] == "pod sts-0 (10.0.0.1) is not in the controller's pod cache yet"
    assert "pod other/far, outside the data-plane namespace gw" in unknown["10.0.0.2"]
    assert "--data-plane-namespace" in unknown["10.0.0.2"]
    assert "outside the data-plane namespace" in awaiting_rollout(
        [e for e in dp.endpoints if e.address == "10.0.0.2"], "8080/http")


def test_no_ready_endpoint_says_why() -> None:
    from titanium_gateway.prober.prober import data_plane

    def msg(service: Any, slices: list[Any], pods: list[Any] | None = None) -> str:
        return data_plane(service, slices, pods or [], "gw", "titanium").no_endpoint_message()

    assert msg(None, []) == ("no ready data-plane endpoint: the data-plane Service gw/titanium does not exist "
                             "(--data-plane-service)")
    assert msg(svc(None), []) == ("no ready data-plane endpoint: the data-plane Service gw/titanium has no "
                                  "selector and no EndpointSlice lists an endpoint for it")
    assert msg(svc({"app": "edge", "tier": "a"}), [slice_([])]) == (
        "no ready data-plane endpoint: the data-plane Service gw/titanium has no endpoints: no running pod "
        "matches its selector app=edge,tier=a")
    eps = [ep(f"10.0.0.{i}", f"p{i}", ready=False) for i in range(1, 6)] + [ep("10.0.0.9", "p9", terminating=True)]
    pods = [lpod(f"p{i}", f"10.0.0.{i}") for i in range(1, 3)]
    m = msg(svc({"app": "edge"}), [slice_(eps)], pods)
    assert m.startswith("no ready data-plane endpoint: none of the 6 endpoints of the data-plane Service "
                        "gw/titanium is ready (pod p1, pod p2, 10.0.0.3 and 3 more)")
    assert "no ready" in prober().probe([], H, no_endpoints=m).message


def test_which_pod_events_concern_the_data_plane() -> None:
    from titanium_gateway.prober.prober import is_data_plane_pod

    slices = [slice_([ep("10.0.0.1", "edge-0"), bare("10.0.0.2")])]
    service = svc({"app": "edge"})
    assert is_data_plane_pod(lpod("edge-0", None), service, slices, "gw", "titanium")  # by targetRef
    assert is_data_plane_pod(lpod("raw", "10.0.0.2"), service, slices, "gw", "titanium")  # by address
    assert is_data_plane_pod(lpod("edge-9", None, {"app": "edge"}), service, slices, "gw", "titanium")  # selector
    assert not is_data_plane_pod(lpod("controller", "10.0.0.7", {"app": "ctl"}), service, slices, "gw", "titanium")
    assert not is_data_plane_pod(lpod("edge-0", None, ns="other"), service, slices, "gw", "titanium")


# --- what a pod that does not confirm says (a real HTTP server on loopback) -------------------

class Admin:
    """An admin port on 127.0.0.1 answering each path as told: ``(status, body)``; a path not
    told answers 404 (a server without that endpoint)."""

    def __init__(self, answers: dict[str, tuple[int, bytes | str]] | None = None) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.answers = dict(answers or {})
        self.auth: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                outer.auth.append(self.headers.get("Authorization"))
                status, body = outer.answers.get(self.path, (404, b"not found"))
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def __enter__(self) -> Admin:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(answers: dict[str, tuple[int, bytes | str]], token: str = TOKEN) -> str:
    with Admin(answers) as a:
        r = Prober(a.port, token, timeout=2, attempts=1, registry=Registry()).probe([Endpoint("dp-0", "127.0.0.1")], H)
    assert r.confirmed_hash is None
    return r.message


READY = {"/readyz": (200, "ok")}
BUILD = "it needs a Titanium build with the admin API"


def test_a_data_plane_without_version_cannot_confirm() -> None:
    for status in (404, 405, 501):
        m = answer({**READY, "/version": (status, "")})
        assert m.startswith(f"pod dp-0 (127.0.0.1) does not serve /version ({status}) with a config_hash: ")
        assert "cannot confirm which config it runs" in m and "Programmed will not turn True" in m and BUILD in m
    m = answer({})  # nothing but 404s: not even /readyz
    assert "does not serve /readyz (404)" in m and BUILD in m


def test_a_version_without_a_config_hash_cannot_confirm() -> None:
    m = answer({**READY, "/version": (200, '{"version": "7.1.0"}')})
    assert "/version answered 200 without a config_hash field" in m and BUILD in m
    m = answer({**READY, "/version": (200, "Titanium 7.1.0")})
    assert "not JSON" in m and BUILD in m
    m = answer({**READY, "/version": (200, '["7.1.0"]')})
    assert "without a config_hash field" in m
    m = answer({**READY, "/version": (200, '{"config_hash": 42}')})
    assert "config_hash 42, which is not a SHA-256 hex digest" in m and BUILD in m


def test_a_token_mismatch_names_titanium_admin_token() -> None:
    m = answer({**READY, "/version": (401, '{"error":"unauthorized"}')})
    assert m == ("pod dp-0 (127.0.0.1) rejected the admin token (/version 401): the controller's "
                 "TITANIUM_ADMIN_TOKEN does not match the data plane's (both must come from the same Secret)")
    assert TOKEN not in m
    m = answer({**READY, "/version": (401, "")}, token="")
    assert "the controller has no TITANIUM_ADMIN_TOKEN" in m


def test_nothing_on_the_admin_port_is_connection_refused() -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r = Prober(port, TOKEN, timeout=2, attempts=2, retry_wait=0, registry=Registry()).probe(
        [Endpoint("dp-0", "127.0.0.1")], H)
    assert r.message.startswith(f"pod dp-0 (127.0.0.1): connection refused on the admin port {port}: nothing "
                                "listens there. Either --admin-port is not the data plane's admin port, or this "
                                "data plane cannot confirm")
    assert BUILD in r.message


def test_a_hash_mismatch_is_still_loading_and_null_is_not_loaded_yet() -> None:
    m = answer({**READY, "/version": (200, f'{{"version": "7.1", "config_hash": "{OLD}"}}')})
    assert m == f"pod dp-0 (127.0.0.1) runs config {OLD[:12]}, waiting for {H[:12]} (still loading it)"
    m = answer({**READY, "/version": (200, '{"version": "7.1", "config_hash": null}')})
    assert m == f"pod dp-0 (127.0.0.1) has not loaded a config yet (/version reports no config_hash), waiting for {H[:12]}"
    with Admin({**READY, "/version": (200, f'{{"config_hash": "{H}"}}')}) as a:
        r = Prober(a.port, TOKEN, registry=Registry()).probe([Endpoint("dp-0", "127.0.0.1")], H)
        assert r == ProbeResult(H, "", True, frozenset({"dp-0"})) and a.auth == [None, f"Bearer {TOKEN}"]


@responses.activate
def test_a_lasting_problem_is_named_before_a_passing_one() -> None:
    add_pod(responses.mock, "10.0.0.1", OLD)  # loading
    responses.get("http://10.0.0.2:9901/readyz", status=200)
    responses.get("http://10.0.0.2:9901/version", status=404)  # never will
    r = prober().probe([Endpoint("p1", "10.0.0.1"), Endpoint("p2", "10.0.0.2")], H)
    assert r.message.startswith("pod p2 (10.0.0.2) does not serve /version (404)") and r.message.endswith(
        "(and 1 more)")


@responses.activate
def test_each_pod_is_told_apart_confirmed_behind_or_lasting() -> None:
    """The controller re-pokes a pod that is behind, never one that confirmed nor one whose
    problem a re-poke cannot cure: the result says which is which."""
    add_pod(responses.mock, "10.0.0.1", OLD)  # loading
    add_pod(responses.mock, "10.0.0.2", H)  # confirmed
    responses.get("http://10.0.0.3:9901/readyz", status=200)
    responses.get("http://10.0.0.3:9901/version", status=404)  # no admin API
    eps = [Endpoint("p1", "10.0.0.1"), Endpoint("p2", "10.0.0.2"), Endpoint("p3", "10.0.0.3")]
    r = prober().probe(eps, H)
    assert (r.confirmed_hash, r.examined, r.confirmed_pods, r.lasting_pods) == (
        None, True, frozenset({"p2"}), frozenset({"p3"}))
    r = prober().probe([], H, no_endpoints="none")
    assert (r.examined, r.confirmed_pods, r.lasting_pods) == (True, frozenset(), frozenset())


def test_a_failing_request_is_the_pods_answer_never_an_exception() -> None:
    import urllib3

    class Broken(requests.Session):
        def __init__(self, error: BaseException) -> None:
            super().__init__()
            self.error = error

        def get(self, *a: Any, **kw: Any) -> Any:  # type: ignore[override]
            raise self.error

    for error, shown in ((urllib3.exceptions.ProtocolError("reset"), "ProtocolError"),
                         (ValueError("bad"), "ValueError"), (OSError("x"), "OSError"),
                         (requests.exceptions.InvalidURL("u"), "InvalidURL")):
        p = Prober(9901, TOKEN, registry=Registry(), session=Broken(error))
        r = p.probe([Endpoint("p1", "10.0.0.1")], H)
        assert r.message == f"pod p1 (10.0.0.1): the probe of /readyz failed: {shown}", r.message
    r = Prober(9901, TOKEN, registry=Registry(), session=Broken(requests.ReadTimeout("slow")), attempts=1).probe(
        [Endpoint("p1", "10.0.0.1")], H)
    assert r.message == "pod p1 (10.0.0.1): /readyz on the admin port 9901 did not answer within 2 s"
