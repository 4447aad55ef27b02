"""Core threads: long-lived threads the process depends on (reflectors, the reconcile worker,
the status worker, the leader elector), whose death must not go unnoticed.

A ``CoreThread`` runs its target like a daemon ``threading.Thread``; if the target raises
(anything, ``BaseException`` included) the exception is logged through ``logging`` with its
traceback (so the process's JSON handler writes it, never a raw traceback on stderr) and kept in
``error``. ``dead(thread, stopping)`` is the check the health endpoint and the process loop make:
a started thread that is no longer alive although nobody asked it to stop.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def describe(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class CoreThread(threading.Thread):
    def __init__(self, target: Callable[..., Any], name: str, args: tuple[Any, ...] = ()) -> None:
        super().__init__(name=name, daemon=True)
        self._core_target = target
        self._core_args = args
        #: what ended the thread, when its target raised
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._core_target(*self._core_args)
        except BaseException as e:  # noqa: BLE001 - logged and kept: the process notices (``dead``)
            self.error = e
            with contextlib.suppress(Exception):  # a failing log: ``dead`` still tells
                log.critical("thread %s died", self.name, exc_info=True,
                             extra={"thread_name": self.name, "error": describe(e)})


def dead(thread: threading.Thread | None, stopping: bool) -> bool:
    """``thread`` was started and has ended although it was not asked to stop."""
    return thread is not None and thread.ident is not None and not thread.is_alive() and not stopping
