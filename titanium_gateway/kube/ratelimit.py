"""Rate limiters (client-go util/workqueue and util/flowcontrol): small composable values.

- ``TokenBucket(qps, burst)``: the shared primitive; ``reserve()`` takes a token now and says
  how long the caller must wait for it, ``try_accept()`` never waits, ``accept()`` sleeps.
- ``ItemExponentialFailureRateLimiter(base, max)``: per-item back-off base * 2^failures.
- ``BucketRateLimiter(qps, burst)``: overall rate, the same delay for every item.
- ``MaxOfRateLimiter(*limiters)``: the longest delay of several.
- ``default_controller_rate_limiter()``: max(exponential 5 ms..1000 s, bucket 10 qps / 100 burst).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Protocol

from titanium_gateway.kube.clock import REAL_CLOCK, Clock


class TokenBucket:
    """A token bucket refilled at ``qps`` tokens per second, holding at most ``burst``.

    It starts full. ``qps <= 0`` means unlimited.
    """

    def __init__(self, qps: float, burst: int, clock: Clock = REAL_CLOCK) -> None:
        if burst < 1 and qps > 0:
            raise ValueError("burst must be at least 1")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock.now()

    def _advance(self, now: float) -> None:
        if now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now

    def reserve(self) -> float:
        """Take one token (possibly borrowed from the future); return seconds to wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            self._advance(self._clock.now())
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_accept(self) -> bool:
        """Take a token only when one is available right now."""
        if self.qps <= 0:
            return True
        with self._lock:
            self._advance(self._clock.now())
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False

    def accept(self) -> float:
        """Block until a token is available; returns the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._clock.sleep(delay)
        return delay

    @property
    def tokens(self) -> float:
        with self._lock:
            self._advance(self._clock.now())
            return self._tokens


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds to wait before ``item`` may be processed again (counts a failure)."""

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded)."""

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay <= 0 or max_delay < base_delay:
            raise ValueError("need 0 < base_delay <= max_delay")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            n = self._failures.get(item, 0)
            self._failures[item] = n + 1
        if n >= 64:  # 2**64 * base overflows any sane cap
            return self.max_delay
        return min(self.base_delay * (2 ** n), self.max_delay)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """Overall rate limit: every ``when`` takes a token, whatever the item."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock = REAL_CLOCK) -> None:
        self.bucket = TokenBucket(qps, burst, clock)

    def when(self, item: Hashable) -> float:
        return self.bucket.reserve()

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(lim.when(item) for lim in self.limiters)

    def forget(self, item: Hashable) -> None:
        for lim in self.limiters:
            lim.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(lim.num_requeues(item) for lim in self.limiters)


def default_controller_rate_limiter(clock: Clock = REAL_CLOCK, *, base_delay: float = 0.005,
                                    max_delay: float = 1000.0, qps: float = 10.0,
                                    burst: int = 100) -> MaxOfRateLimiter:
    """client-go's DefaultControllerRateLimiter: per-item 5 ms..1000 s, overall 10 qps / burst 100
    (each overridable: e.g. a whole-world reconcile backs off from 0.5 s, capped at 60 s)."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(base_delay, max_delay),
                            BucketRateLimiter(qps, burst, clock))
