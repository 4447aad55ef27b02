"""Which ``certificates.items`` entry serves a TLS handshake.

The item whose ``hosts`` match the SNI name (case-insensitive): an exact name beats a
wildcard, and a wildcard ``*.example.com`` covers exactly one label (``a.example.com``, not
``a.b.example.com`` nor ``example.com``); among equals the first item in list order. With no
match (or no SNI at all) the ``default: true`` item; otherwise None: the handshake fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from titanium_gateway.twp import model as m


def wildcard_covers(pattern: str, name: str) -> bool:
    if not pattern.startswith("*."):
        return False
    label, dot, rest = name.partition(".")
    return bool(label) and bool(dot) and rest == pattern[2:]


def select_certificate(items: Sequence[m.Certificate], server_name: str | None) -> m.Certificate | None:
    name = (server_name or "").strip().lower().rstrip(".")
    if name:
        for item in items:
            if name in item.hosts:
                return item
        for item in items:
            if any(wildcard_covers(h, name) for h in item.hosts):
                return item
    for item in items:
        if item.default:
            return item
    return None
