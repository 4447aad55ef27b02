"""How two versions of a long sequence agree at their ends, found by bisection (the render's
memo and the emit's cache take the unchanged routes before and after a change as they were)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

#: (a slice of one sequence, the same slice of the other) -> whether they agree
Agree = Callable[[Sequence[Any], Sequence[Any]], bool]


def same_objects(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Two slices of equal length hold the very same objects."""
    return all(map(operator.is_, a, b))


def common_ends(a: Sequence[Any], b: Sequence[Any], agree: Agree = operator.eq) -> tuple[int, int]:
    """``(p, s)``: ``a`` and ``b`` begin with ``p`` items and then end with ``s`` more (never
    overlapping those) on which ``agree`` holds (equal values by default)."""
    na, nb = len(a), len(b)
    p = _longest(min(na, nb), lambda i, j: agree(a[i:j], b[i:j]))
    s = _longest(min(na, nb) - p, lambda i, j: agree(a[na - j:na - i], b[nb - j:nb - i]))
    return p, s


def _longest(limit: int, agree: Callable[[int, int], bool]) -> int:
    """The largest n <= ``limit`` with items 0..n-1 agreeing, given ``agree(i, j)`` for items i..j-1
    (asked only for a run just after one known to agree)."""
    if agree(0, limit):
        return limit
    lo, hi = 0, limit
    while hi - lo > 1:  # items [0, lo) agree, [0, hi) do not
        mid = (lo + hi) // 2
        if agree(lo, mid):
            lo = mid
        else:
            hi = mid
    return lo
