"""Whether a reconcile renders, reuses the last result or decides Programmed again (controller/reuse.py)."""

from __future__ import annotations

from titanium_gateway.controller import reuse

OBJECTS = (("Gateway", 3), ("HTTPRoute", 7))
PENDING = (OBJECTS, None, "waiting", ())
CONFIRMED = (OBJECTS, "h1", "", ())


def test_nothing_changed_reuses_the_last_result() -> None:
    assert reuse.decide(PENDING, PENDING, True, True) == reuse.REUSE


def test_only_what_the_pods_confirmed_changed_decides_programmed_again() -> None:
    assert reuse.decide(CONFIRMED, PENDING, True, True) == reuse.REPROGRAM


def test_a_changed_object_renders_again() -> None:
    assert reuse.decide(((("Gateway", 4), ("HTTPRoute", 7)), None, "waiting", ()), PENDING, True, True) == reuse.RENDER


def test_no_result_a_failed_pass_or_a_result_no_longer_written_renders_again() -> None:
    assert reuse.decide(PENDING, PENDING, False, True) == reuse.RENDER
    assert reuse.decide(PENDING, None, True, True) == reuse.RENDER
    assert reuse.decide(PENDING, PENDING, True, False) == reuse.RENDER
