"""titanium_gateway/sequences.py: the ends two sequences agree on, against a plain scan."""

from __future__ import annotations

import random

import pytest

from titanium_gateway.sequences import common_ends, same_objects


def _scan(a: list[object], b: list[object], same: bool) -> tuple[int, int]:
    def agree(x: object, y: object) -> bool:
        return x is y if same else x == y

    n = min(len(a), len(b))
    p = 0
    while p < n and agree(a[p], b[p]):
        p += 1
    s = 0
    while s < n - p and agree(a[-1 - s], b[-1 - s]):
        s += 1
    return p, s


@pytest.mark.parametrize("same", [True, False])
def test_common_ends_answer_as_a_scan_does(same: bool) -> None:
    rng = random.Random(11)
    for _ in range(2000):
        a: list[object] = [object() if same else rng.randint(0, 3) for _ in range(rng.randint(0, 12))]
        b = list(a)
        for _ in range(rng.randint(0, 3)):
            new: object = object() if same else rng.randint(0, 3)
            op = rng.choice(("insert", "delete", "replace"))
            if op == "insert":
                b.insert(rng.randint(0, len(b)), new)
            elif b and op == "delete":
                del b[rng.randrange(len(b))]
            elif b:
                b[rng.randrange(len(b))] = new
        got = common_ends(a, b, same_objects) if same else common_ends(a, b)
        assert got == _scan(a, b, same), (a, b)
