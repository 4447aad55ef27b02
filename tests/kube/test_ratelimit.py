from __future__ import annotations

import pytest

from titanium_gateway.kube.clock import FakeClock
from titanium_gateway.kube.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)


def test_token_bucket_burst_then_rate() -> None:
    clock = FakeClock()
    b = TokenBucket(qps=10, burst=3, clock=clock)
    assert [b.try_accept() for _ in range(4)] == [True, True, True, False]
    clock.step(0.1)
    assert b.try_accept() is True
    assert b.try_accept() is False
    # reserve borrows from the future: delays grow by 1/qps
    assert b.reserve() == pytest.approx(0.1)
    assert b.reserve() == pytest.approx(0.2)
    clock.step(10)
    assert b.tokens == pytest.approx(3)  # refills up to burst only


def test_token_bucket_unlimited() -> None:
    b = TokenBucket(qps=0, burst=0, clock=FakeClock())
    assert all(b.try_accept() for _ in range(1000))
    assert b.reserve() == 0


def test_item_exponential() -> None:
    rl = ItemExponentialFailureRateLimiter(0.005, 1.0)
    assert [rl.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert rl.when("b") == 0.005
    assert rl.num_requeues("a") == 4
    for _ in range(200):
        last = rl.when("a")
    assert last == 1.0
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.005


def test_max_of_and_default() -> None:
    clock = FakeClock()
    rl = MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.001, 10), BucketRateLimiter(1, 1, clock))
    assert rl.when("a") == pytest.approx(0.001)  # bucket had a token
    assert rl.when("b") == pytest.approx(1.0)  # bucket empty: 1 s > 1 ms
    assert rl.num_requeues("a") == 1
    d = default_controller_rate_limiter(clock)
    delays = [d.when("x") for _ in range(3)]
    assert delays == [pytest.approx(0.005), pytest.approx(0.01), pytest.approx(0.02)]
    # 100 burst then 10 qps overall
    for i in range(97):
        d.when(f"i{i}")
    assert d.when("fresh") == pytest.approx(0.1)
