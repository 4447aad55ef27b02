"""Whether a reconcile renders, or reuses the last result.

A reconcile's input has a cheap version (``Controller.versioned_snapshot``): the objects' (every
cache's change count and the Gateway API kinds watched), then what the pods of each data plane
confirmed. Against the version the last result was rendered from:

* ``REUSE``: nothing the render reads changed (e.g. the Programmed poll while a pod has not
  confirmed yet): the last result stands; it is delivered again (the writers write only what
  failed before) and probed;
* ``REPROGRAM``: only the prober's answer changed (the pods confirmed the config, one fell
  behind, a new reason): the objects are the same, so is everything but Programmed, which is
  decided again on the last result (render/status/programmed.py ``reprogram``);
* ``RENDER``: anything else, or the last result cannot be delivered again (its part bytes were
  released after they were written and a writer no longer holds them written: the delivery's
  ``still_written``).
"""

from __future__ import annotations

from typing import Any

RENDER = "render"
REUSE = "reuse"
REPROGRAM = "reprogram"


def decide(version: tuple[Any, ...], rendered_from: tuple[Any, ...] | None, has_result: bool,
           still_written: bool) -> str:
    """``version``: this pass's input; ``rendered_from``: the last result's (None: none, or the
    last pass failed); ``still_written``: the last result can be delivered again."""
    if not has_result or rendered_from is None or not still_written:
        return RENDER
    if version == rendered_from:
        return REUSE
    if version[0] == rendered_from[0]:
        return REPROGRAM
    return RENDER
