"""What the writers send must fit the API server's limits, whatever the render produced."""

from __future__ import annotations

import pytest

from titanium_gateway.render.result import EventRecord
from titanium_gateway.writers.base import LeaderGuard
from titanium_gateway.writers.events import EventWriter

NOTE_BYTES = 1024  # events.k8s.io/v1 Event.note: at most 1 KiB (bytes, as Go measures strings)


def _note(message: str) -> str:
    w = EventWriter(None, controller_name="c", identity="i", guard=LeaderGuard(lambda: True))  # type: ignore[arg-type]
    return str(w.body(EventRecord("Ingress", "apps", "x", "Warning", "InvalidAnnotation", message), "n", "apps")["note"])


@pytest.mark.parametrize("message", ["x" * 70_000, "x" * 1024], ids=["70k", "1k"])
def test_ascii_event_notes_are_truncated_to_the_limit(message: str) -> None:
    assert len(_note(message).encode()) <= NOTE_BYTES


# B8 (fixed): the note was cut to 1024 characters; the API server limits it to 1024 bytes, so a
# non-ASCII message was refused with 422 and the Event never posted.
@pytest.mark.parametrize("message", ["日" * 2000, "é" * 700, "🙂" * 300], ids=["cjk", "latin", "emoji"])
def test_non_ascii_event_notes_fit_1024_bytes(message: str) -> None:
    note = _note(message)
    assert len(note.encode("utf-8")) <= NOTE_BYTES
    assert message.startswith(note) and len(note) > 0  # cut on a character boundary, never mangled
