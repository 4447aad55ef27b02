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


def _factory(kind: Any) -> Iterator[Any]:
    made: list[Any] = []

    def make(name: str = "be", **kw: Any) -> Any:
        b = kind(name, **kw)
        made.append(b)
        return b

    yield make
    for b in made:
        b.stop()


@pytest.fixture
def backends() -> Iterator[Any]:
    """A factory of echo backends, all stopped at the end of the test."""
    from tests.dataplane.support import EchoBackend

    yield from _factory(EchoBackend)


@pytest.fixture
def h2backends() -> Iterator[Any]:
    """A factory of HTTP/2 echo backends (tests/dataplane/h2support.py), all stopped at the end."""
    pytest.importorskip("h2")
    from tests.dataplane.h2support import H2EchoBackend

    yield from _factory(H2EchoBackend)
