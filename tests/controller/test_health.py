from __future__ import annotations

import requests
from prometheus_client.parser import text_string_to_metric_families

from titanium_gateway.controller.health import HealthServer, HealthState
from titanium_gateway.metrics import REGISTRY, Registry


def test_endpoints() -> None:
    flags = {"alive": True, "ready": False}
    reg = Registry()
    reg.counter("controller_runtime_reconcile_total", "x", ["result"]).labels(result="success").inc()
    srv = HealthServer(HealthState(alive=lambda: flags["alive"], ready=lambda: flags["ready"]), 0,
                       host="127.0.0.1", registry=reg).start()
    try:
        base = f"http://127.0.0.1:{srv.port}"
        assert requests.get(f"{base}/healthz", timeout=5).status_code == 200
        assert requests.get(f"{base}/readyz", timeout=5).status_code == 503
        flags["ready"] = True
        assert requests.get(f"{base}/readyz", timeout=5).status_code == 200
        flags["alive"] = False
        assert requests.get(f"{base}/healthz", timeout=5).status_code == 503
        m = requests.get(f"{base}/metrics", timeout=5)
        assert m.status_code == 200 and m.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        samples = {(s.name, tuple(s.labels.items())): s.value
                   for fam in text_string_to_metric_families(m.text) for s in fam.samples}
        assert samples == {("controller_runtime_reconcile_total", (("result", "success"),)): 1}
        assert requests.get(f"{base}/nope", timeout=5).status_code == 404
    finally:
        srv.stop()


def test_healthz_503_says_what_is_wrong() -> None:
    why = {"text": ""}
    srv = HealthServer(HealthState(alive=lambda: not why["text"], ready=lambda: True, problem=lambda: why["text"]),
                       0, host="127.0.0.1", registry=Registry()).start()
    try:
        base = f"http://127.0.0.1:{srv.port}"
        assert requests.get(f"{base}/healthz", timeout=5).text == "ok\n"
        why["text"] = "core thread died: leader-elector"
        r = requests.get(f"{base}/healthz", timeout=5)
        assert (r.status_code, r.text) == (503, "core thread died: leader-elector\n")
    finally:
        srv.stop()


def test_a_failed_request_is_a_log_record_not_a_traceback_on_stderr(caplog, capsys) -> None:  # type: ignore[no-untyped-def]
    import logging

    srv = HealthServer(HealthState(), 0, host="127.0.0.1", registry=Registry())
    try:
        with caplog.at_level(logging.DEBUG, logger="titanium_gateway.controller.health"):
            for err in (BrokenPipeError(32, "Broken pipe"), ValueError("bad request line")):
                try:
                    raise err
                except Exception:
                    srv._httpd.handle_error(None, ("127.0.0.1", 1))
        assert [(r.levelname, bool(r.exc_info)) for r in caplog.records] == [("DEBUG", False), ("WARNING", True)]
        assert capsys.readouterr().err == ""
    finally:
        srv._httpd.server_close()


def test_served_metrics_parse_and_include_the_process_collectors() -> None:
    """The registry ``/metrics`` serves by default (the controller's): its families, and the
    process and platform collectors, in text prometheus_client's parser reads."""
    from titanium_gateway.controller.reconciler import Controller  # noqa: F401 - registers nothing by itself
    from titanium_gateway.metrics import leader_election_master_status

    leader_election_master_status().labels(name="health-test").set(0)
    srv = HealthServer(HealthState(), 0, host="127.0.0.1").start()
    try:
        m = requests.get(f"http://127.0.0.1:{srv.port}/metrics", timeout=5)
        assert m.status_code == 200 and m.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        fams = {f.name: f for f in text_string_to_metric_families(m.text)}
        for name in ("process_resident_memory_bytes", "process_cpu_seconds", "process_open_fds",
                     "process_start_time_seconds", "python_info", "leader_election_master_status"):
            assert name in fams, name
        assert fams["process_resident_memory_bytes"].samples[0].value > 0
        assert REGISTRY.value("leader_election_master_status", name="health-test") == 0
    finally:
        srv.stop()
