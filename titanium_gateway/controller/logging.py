"""Structured JSON logs with stable keys and redaction of secrets.

Every line is one JSON object: ``ts`` (RFC 3339 UTC, milliseconds), ``level``, ``logger``,
``msg``, plus the ``extra`` fields a call passes (``kind``, ``namespace``, ``name``,
``config_hash``, ``duration_ms``, ...). ``name`` is reserved by ``logging.LogRecord``, so
callers pass ``object_name`` and the line shows it as ``name``. ``RedactionFilter`` rewrites any PEM private key block
and any registered secret (the admin token) in the message, the arguments, the extra fields and
the formatted traceback, so neither ever reaches a log line.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from datetime import datetime, timezone
from typing import Any, TextIO

from pythonjsonlogger.json import JsonFormatter

REDACTED = "[REDACTED]"
_PEM_KEY = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)", re.DOTALL)
# A base64 body of a PEM key that lost its armour (e.g. inside a repr with "\n" escapes).
_PEM_KEY_ESCAPED = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[^\"']*")

_STD_ATTRS = set(vars(logging.LogRecord("x", 0, "x", 0, "x", None, None))) | {"message", "asctime", "taskName"}


class _Secrets:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: tuple[str, ...] = ()

    def add(self, value: str) -> None:
        if value and len(value) >= 4:
            with self._lock:
                if value not in self._values:
                    self._values = (*self._values, value)

    def values(self) -> tuple[str, ...]:
        return self._values


SECRETS = _Secrets()


def register_secret(value: str) -> None:
    """Never log ``value`` (e.g. the admin token)."""
    SECRETS.add(value)


def redact(text: str) -> str:
    if "PRIVATE KEY" in text:
        text = _PEM_KEY.sub(REDACTED, text)
        text = _PEM_KEY_ESCAPED.sub(REDACTED, text)
    for s in SECRETS.values():
        if s in text:
            text = text.replace(s, REDACTED)
    return text


def _redact_value(v: Any) -> Any:
    if isinstance(v, str):
        return redact(v)
    if isinstance(v, bytes):
        return redact(v.decode("utf-8", "replace"))
    if isinstance(v, (int, float, bool)) or v is None:
        return v
    if isinstance(v, dict):
        return {k: _redact_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_redact_value(x) for x in v]
    return redact(str(v))


class RedactionFilter(logging.Filter):
    """Redacts private keys and registered secrets from every part of a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a bad format string must not lose the line
            msg = f"{record.msg!r} {record.args!r}"
        record.msg = redact(msg)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
            record.exc_info = None
        for k, v in list(vars(record).items()):
            if k not in _STD_ATTRS:
                setattr(record, k, _redact_value(v))
        return True


class _Formatter(JsonFormatter):
    def add_fields(self, log_record: dict[str, Any], record: logging.LogRecord,
                   message_dict: dict[str, Any]) -> None:
        super().add_fields(log_record, record, message_dict)
        ts = datetime.fromtimestamp(record.created, timezone.utc)
        log_record["ts"] = ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"
        log_record["level"] = record.levelname.lower()
        log_record["logger"] = record.name
        log_record["msg"] = log_record.pop("message", record.getMessage())
        if "object_name" in log_record:  # "name" is a LogRecord attribute: callers pass object_name
            log_record["name"] = log_record.pop("object_name")
        if record.exc_text:
            log_record["exc"] = redact(record.exc_text)
        log_record.pop("exc_info", None)
        rest = {k: log_record.pop(k) for k in list(log_record) if k not in ("ts", "level", "logger", "msg")}
        head = {k: log_record.pop(k) for k in ("ts", "level", "logger", "msg")}
        log_record.update(head)
        log_record.update(rest)


def make_formatter() -> logging.Formatter:
    fmt = _Formatter(reserved_attrs=[*_STD_ATTRS], json_ensure_ascii=False)
    return fmt


_HANDLER_NAME = "titanium-json"


def setup_logging(verbose: bool = False, stream: TextIO | None = None) -> logging.Handler:
    """Route the root logger to one JSON handler (idempotent); ``verbose`` -> debug."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if h.get_name() == _HANDLER_NAME:
            root.removeHandler(h)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(make_formatter())
    handler.addFilter(RedactionFilter())
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    # urllib3/kubernetes debug lines can carry request bodies (Secret data): keep them quiet.
    for noisy in ("urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # A Python warning raised from here on (a dependency's deprecation) is a "warning" line of
    # this handler (logger py.warnings), not a raw two-line text on stderr.
    logging.captureWarnings(True)
    return handler


def install_exception_hooks() -> None:
    """Uncaught exceptions, in the main thread or any other, go through the JSON logging (a
    ``critical`` line with the redacted traceback) instead of a raw traceback on stderr."""
    log = logging.getLogger("titanium_gateway")

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "?"
        log.critical("uncaught exception in thread %s", name, extra={"thread_name": name},
                     exc_info=(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback))

    def main_hook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        log.critical("uncaught exception", exc_info=(exc_type, exc, tb))

    threading.excepthook = thread_hook
    sys.excepthook = main_hook
