from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Any]:
    """A config directory and a reference data plane for it (started by the test)."""
    from tests.dataplane.support import Harness

    h = Harness(tmp_path / "config")
    yield h
    h.stop()


@pytest.fixture
def backends() -> Iterator[Any]:
    """A factory of echo backends, all stopped at the end of the test."""
    from tests.dataplane.support import EchoBackend

    made: list[Any] = []

    def make(name: str = "be", **kw: Any) -> Any:
        b = EchoBackend(name, **kw)
        made.append(b)
        return b

    yield make
    for b in made:
        b.stop()
