"""Find secret material (private keys, tokens) in text, objects and files.

``Needles`` is built from the secrets a scenario uses: for each private key its PEM body lines
(32+ characters), the base64 of the whole PEM (as a Secret's ``data`` holds it) and the first
48 characters of that base64; plus any token. Any PEM ``PRIVATE KEY`` header is a hit too, key
known or not. ``scan`` walks str/bytes/dicts/lists iteratively and reports where it found what.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PEM_PRIVATE = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----")


@dataclass
class Needles:
    items: dict[bytes, str] = field(default_factory=dict)

    def add_private_key(self, pem: bytes, label: str) -> Needles:
        for n, line in enumerate(pem.splitlines()):
            if len(line) >= 32 and not line.startswith(b"-----"):
                self.items[line] = f"{label}: PEM line {n}"
        b64 = base64.b64encode(pem)
        self.items[b64[:48]] = f"{label}: base64 of the PEM"
        return self

    def add_token(self, token: str, label: str) -> Needles:
        if len(token) >= 8:
            self.items[token.encode()] = label
        return self


def _texts(value: Any, where: str) -> Iterable[tuple[str, bytes]]:
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        w, v = stack.pop()
        if isinstance(v, bytes):
            yield w, v
        elif isinstance(v, str):
            yield w, v.encode("utf-8", "surrogatepass")
        elif isinstance(v, Mapping):
            stack += [(f"{w}.{k}", x) for k, x in v.items()]
            yield w, json.dumps(list(map(str, v.keys()))).encode()
        elif isinstance(v, (list, tuple)):
            stack += [(f"{w}[{i}]", x) for i, x in enumerate(v)]
        elif v is not None:
            yield w, str(v).encode()


def scan(value: Any, needles: Needles, where: str = "") -> list[str]:
    """Every ``"<where>: <what>"`` hit of secret material in ``value``."""
    hits: list[str] = []
    for w, blob in _texts(value, where):
        if PEM_PRIVATE.search(blob):
            hits.append(f"{w}: a PEM PRIVATE KEY block")
        for needle, label in needles.items.items():
            if needle in blob:
                hits.append(f"{w}: {label}")
    return hits


def scan_tree(root: str | Path, needles: Needles) -> tuple[int, list[str]]:
    """(files scanned, hits) of every regular file under ``root``."""
    count, hits = 0, []
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            try:
                data = p.read_bytes()
            except OSError:
                continue
            count += 1
            hits += scan(data, needles, str(p))
    return count, hits
