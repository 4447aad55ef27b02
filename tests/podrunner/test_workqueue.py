"""The pod runner's key queue: duplicate adds merge, a key is never worked on twice at once,
add_after delays (the earliest wins), shut_down drains."""

from __future__ import annotations

import threading
import time

from tools.podrunner.workqueue import DelayingQueue


def test_duplicates_merge_and_a_key_added_while_processing_comes_back_after_done() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert q.get() == ("a", False)
    q.add("a")  # while "a" is worked on: not handed out again before done
    assert q.get() == ("b", False)
    got: list[tuple[str | None, bool]] = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    t.join(0.2)
    assert not got
    q.done("a")
    t.join(2)
    assert got == [("a", False)]


def test_add_after_waits_and_the_earliest_time_wins() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    start = time.monotonic()
    q.add_after("x", 5.0)
    q.add_after("x", 0.1)
    q.add_after("x", 3.0)  # later than the pending time: ignored
    assert q.get() == ("x", False)
    assert 0.05 <= time.monotonic() - start < 2.0


def test_shut_down_drains_then_answers_done() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add("a")
    q.shut_down()
    q.add("b")  # ignored
    assert q.get() == ("a", False)
    assert q.get() == (None, True)
