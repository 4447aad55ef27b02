"""The controller caps glibc's malloc arenas before its threads start (unless the environment does)."""

from __future__ import annotations

import pytest

from titanium_gateway.controller import main


def test_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert main.limit_malloc_arenas() is False


def test_a_missing_mallopt_is_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)

    def no_libc(*_a: object, **_k: object) -> object:
        raise OSError("no C library")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert main.limit_malloc_arenas() is False
