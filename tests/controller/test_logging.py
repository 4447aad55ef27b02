from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from titanium_gateway.controller.logging import REDACTED, register_secret, setup_logging

PEM = ("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n"
       "-----END PRIVATE KEY-----\n")
EC_PEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----"


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    buf = io.StringIO()
    handler = setup_logging(verbose=False, stream=buf)
    yield buf
    logging.getLogger().removeHandler(handler)


def lines(buf: io.StringIO) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in buf.getvalue().splitlines()]


def test_stable_keys(out: io.StringIO) -> None:
    logging.getLogger("titanium_gateway.x").info("config written", extra={
        "kind": "Gateway", "namespace": "apps", "object_name": "web", "config_hash": "ab", "duration_ms": 1.5})
    (rec,) = lines(out)
    assert list(rec)[:4] == ["ts", "level", "logger", "msg"]
    assert rec["level"] == "info" and rec["logger"] == "titanium_gateway.x" and rec["msg"] == "config written"
    assert rec["ts"].endswith("Z") and "T" in rec["ts"]
    assert (rec["kind"], rec["namespace"], rec["name"], rec["config_hash"], rec["duration_ms"]) == (
        "Gateway", "apps", "web", "ab", 1.5)


def test_verbose_switches_debug(out: io.StringIO) -> None:
    logging.getLogger("t").debug("hidden")
    assert lines(out) == []
    buf = io.StringIO()
    h = setup_logging(verbose=True, stream=buf)
    try:
        logging.getLogger("t").debug("shown")
        assert lines(buf)[0]["level"] == "debug"
    finally:
        logging.getLogger().removeHandler(h)
        logging.getLogger().setLevel(logging.INFO)


@pytest.mark.parametrize("pem", [PEM, EC_PEM, PEM.replace("\n", "\\n")])
def test_private_keys_never_logged(out: io.StringIO, pem: str) -> None:
    log = logging.getLogger("t")
    log.info("secret %s", pem)
    log.warning("in extra", extra={"body": {"data": pem}, "items": [pem]})
    try:
        raise ValueError(f"bad key {pem}")
    except ValueError:
        log.exception("failed")
    text = out.getvalue()
    assert "MIGHAgEAMBMG" not in text and "MHcCAQEEIB" not in text and "PRIVATE KEY-----\\n" not in text
    assert text.count(REDACTED) >= 4


def test_admin_token_never_logged(out: io.StringIO) -> None:
    register_secret("s3cr3t-admin-token")
    logging.getLogger("t").warning("GET /version with Bearer %s", "s3cr3t-admin-token",
                                   extra={"headers": {"Authorization": "Bearer s3cr3t-admin-token"}})
    text = out.getvalue()
    assert "s3cr3t-admin-token" not in text and REDACTED in text


def test_uncaught_exceptions_of_any_thread_are_json_lines(out: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import threading

    from titanium_gateway.controller.logging import install_exception_hooks

    monkeypatch.setattr(threading, "excepthook", threading.excepthook)  # restored after the test
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    install_exception_hooks()

    def crash() -> None:
        raise OSError("no route to host")

    t = threading.Thread(target=crash, name="some-thread")
    t.start()
    t.join(5)
    try:
        raise ValueError("in main")
    except ValueError:
        sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
    first, second = lines(out)
    assert first["level"] == "critical" and first["msg"] == "uncaught exception in thread some-thread"
    assert first["thread_name"] == "some-thread" and "OSError: no route to host" in first["exc"]
    assert second["msg"] == "uncaught exception" and "ValueError: in main" in second["exc"]
