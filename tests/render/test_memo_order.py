"""The routes' order from the last render's order equals a plain sort (render/memo.py)."""

from __future__ import annotations

import operator
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from titanium_gateway.render.memo import order_from_hint

_ORDER = operator.attrgetter("key", "id")


@dataclass(frozen=True, eq=False)
class _Route:
    plane: str
    id: str
    key: tuple[int, ...]


_route = st.builds(_Route, st.sampled_from(["shared", "apps/web"]), st.sampled_from([f"r{i}" for i in range(40)]),
                   st.tuples(st.integers(0, 3), st.integers(0, 3)))


@settings(max_examples=300, deadline=None)
@given(st.lists(_route, max_size=60), st.lists(_route, max_size=60), st.lists(st.booleans(), max_size=60))
def test_order_from_hint_is_sorted_as_a_plain_sort(before: list[_Route], added: list[_Route],
                                                   keep: list[bool]) -> None:
    previous = {(r.plane, r.id): r for r in before}
    hint = sorted(previous.values(), key=_ORDER)
    current = {k: r for n, (k, r) in enumerate(previous.items()) if n >= len(keep) or keep[n]}
    for r in added:  # new and changed routes (a changed route is a new object under its key)
        current[(r.plane, r.id)] = r
    hint_then_rest = [r for r in hint if current.get((r.plane, r.id)) is r]
    hint_then_rest += [r for r in current.values() if all(r is not h for h in hint_then_rest)]
    expected = sorted(hint_then_rest, key=_ORDER)
    got = order_from_hint(hint, current, _ORDER)
    assert [id(r) for r in got] == [id(r) for r in expected]
    # told which routes the translations made (the others replayed) and the last render's by key
    fresh = [r for r in current.values() if all(r is not h for h in hint)]
    got = order_from_hint(hint, current, _ORDER, fresh, previous)
    assert [id(r) for r in got] == [id(r) for r in expected]


def test_order_from_hint_places_a_few_new_routes_among_many() -> None:
    hint = [_Route("shared", f"r{i:03d}", (i // 3,)) for i in range(200)]
    current = {(r.plane, r.id): r for r in hint}
    # a new id, a changed route, and routes equal in order to kept ones (the same key and id on
    # another data plane): after them, as a plain sort of the hint then the rest puts them
    new = [_Route("shared", "x1", (5,)), _Route("shared", "r010", (0,)), _Route("apps/web", "r015", (5,)),
           _Route("apps/web", "r016", (5,))]
    for r in new:
        current[(r.plane, r.id)] = r
    got = order_from_hint(hint, current, _ORDER)
    assert [id(r) for r in got] == [id(r) for r in sorted(current.values(), key=_ORDER)]
