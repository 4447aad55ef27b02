"""The pod runner's work queue of pod keys, with client-go ``util/workqueue`` semantics:

- adding a key that is already waiting does nothing (duplicate adds merge);
- a key is never handed to two workers at once; one added while it is being worked on is
  queued again when ``done`` is called;
- ``add_after`` schedules a key for later (the earliest time wins);
- after ``shut_down`` adds are ignored and ``get`` answers ``(None, True)`` once drained.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class DelayingQueue(Generic[T]):
    def __init__(self, name: str = "") -> None:
        self.name = name
        self._cond = threading.Condition()
        self._ready: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._later: list[tuple[float, int, T]] = []  # (due, sequence, key), a heap
        self._due: dict[T, float] = {}
        self._seq = itertools.count()
        self._closed = False

    def add(self, key: T) -> None:
        with self._cond:
            self._add(key)

    def _add(self, key: T) -> None:
        if self._closed or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.append(key)
            self._cond.notify()

    def add_after(self, key: T, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds (at once when ``delay <= 0``)."""
        with self._cond:
            if self._closed:
                return
            if delay <= 0:
                self._add(key)
                return
            due = time.monotonic() + delay
            if self._due.get(key, due + 1) <= due:
                return
            self._due[key] = due
            heapq.heappush(self._later, (due, next(self._seq), key))
            self._cond.notify_all()

    def _promote(self) -> float | None:
        """Move the keys that are due into the ready queue; the next due time (None: none)."""
        now = time.monotonic()
        while self._later:
            due, _, key = self._later[0]
            if self._due.get(key) != due:  # superseded by an earlier add_after
                heapq.heappop(self._later)
            elif due <= now:
                heapq.heappop(self._later)
                del self._due[key]
                self._add(key)
            else:
                return due
        return None

    def get(self) -> tuple[T | None, bool]:
        """The next key, blocking: ``(key, False)``; ``(None, True)`` once shut down and drained."""
        with self._cond:
            while True:
                next_due = self._promote()
                if self._ready or self._closed:
                    break
                self._cond.wait(None if next_due is None else max(0.0, next_due - time.monotonic()))
            if not self._ready:
                return None, True
            key = self._ready.popleft()
            self._processing.add(key)
            self._dirty.discard(key)
            return key, False

    def done(self, key: T) -> None:
        """``key`` is worked on; if it was added meanwhile, it is queued again."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._ready.append(key)
                self._cond.notify()

    def shut_down(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
