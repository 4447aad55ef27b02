"""The render runs with the cyclic GC paused (benchmarks/FINDINGS.md R1): that is only safe
because a render creates no reference cycles, which these tests check on golden inputs."""

from __future__ import annotations

import gc

import pytest

from titanium_gateway.offline.snapshot import build_snapshot
from titanium_gateway.render import render

from .conftest import case_names, case_objects, case_options

CASES = [c for c in ("seed-quickstart", "ingress-annotations", "ingress-canary") if c in case_names()]


@pytest.mark.parametrize("case", CASES)
def test_render_leaves_no_unreachable_cycles(case: str) -> None:
    options, snap_kwargs = case_options(case)
    snap_kwargs.pop("confirmed_config_hash", None)
    snapshot = build_snapshot(case_objects(case), **snap_kwargs)
    render(snapshot, options)  # warm the module-level caches (PFX, scalars)
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        result = render(snapshot, options)
        assert result.config
        del result
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


def test_render_restores_the_collector_state() -> None:
    options, snap_kwargs = case_options("seed-quickstart")
    snapshot = build_snapshot(case_objects("seed-quickstart"), **snap_kwargs)
    was = gc.isenabled()
    try:
        gc.enable()
        render(snapshot, options)
        assert gc.isenabled()
        gc.disable()
        render(snapshot, options)
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_the_collector_is_paused_while_the_render_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import titanium_gateway.render as render_module

    options, snap_kwargs = case_options("seed-quickstart")
    snapshot = build_snapshot(case_objects("seed-quickstart"), **snap_kwargs)
    inner = render_module._render
    seen: list[bool] = []

    def spy(*args: object) -> object:
        seen.append(gc.isenabled())
        return inner(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(render_module, "_render", spy)
    was = gc.isenabled()
    gc.enable()
    try:
        render(snapshot, options)
        assert seen == [False] and gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
