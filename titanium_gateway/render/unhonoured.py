"""The answer of a rule this controller cannot honour: ``directResponse`` 500 whose body is the
reason code only (``BackendNotFound``, ``UnsupportedValue``, ...). Any client can read the body,
so it names no namespace, Service, Secret, annotation value or regex compiler message; the why
is in the object's status or Events, where only those who may read them see it
(``explain`` prints it next to the answer)."""

from __future__ import annotations

from titanium_gateway.twp.model import DirectResponse

__all__ = ["unhonoured"]


def unhonoured(reason: str) -> DirectResponse:
    """``DirectResponse(500, reason)``: ``reason`` is a reason code, never a message."""
    return DirectResponse(500, reason)
