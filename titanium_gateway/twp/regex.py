"""The document's regular expressions (the data plane's .NET / ECMAScript syntax) as Python patterns.

Python's ``re`` reads the common subset the same way (classes, anchors, groups, lookahead and
lookbehind, lazy quantifiers, inline options, atomic groups). The few .NET spellings it lacks
are rewritten: named groups ``(?<name>...)`` / ``(?'name'...)``, named backreferences
``\\k<name>``, and the anchors ``\\z`` (end of input) and ``\\Z`` (end, or before a final line
feed). Anything else Python cannot compile is an invalid config (:class:`re.error`).
"""

from __future__ import annotations

import functools
import re

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def translate(pattern: str) -> str:
    """The Python spelling of a .NET regular expression (see the module docstring)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if not in_class and nxt == "z":
                out.append(r"\Z")
                i += 2
                continue
            if not in_class and nxt == "Z":
                out.append(r"(?=\n?\Z)")
                i += 2
                continue
            if not in_class and nxt == "k" and i + 2 < n and pattern[i + 2] in "<'":
                close = ">" if pattern[i + 2] == "<" else "'"
                end = pattern.find(close, i + 3)
                name = pattern[i + 3:end] if end > 0 else ""
                if _NAME.fullmatch(name):
                    out.append(f"(?P={name})")
                    i = end + 1
                    continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a leading ] is a literal
                out.append("]")
                i += 1
            continue
        if c == "(" and pattern.startswith("(?", i) and i + 2 < n and pattern[i + 2] in "<'":
            opener = pattern[i + 2]
            if opener == "<" and i + 3 < n and pattern[i + 3] in "=!":  # lookbehind
                out.append(pattern[i:i + 4])
                i += 4
                continue
            close = ">" if opener == "<" else "'"
            end = pattern.find(close, i + 3)
            name = pattern[i + 3:end] if end > 0 else ""
            if _NAME.fullmatch(name):
                out.append(f"(?P<{name}>")
                i = end + 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


def compile_regex(pattern: str) -> re.Pattern[str]:
    """Compile a .NET regular expression; raises :class:`re.error` when it cannot be used."""
    try:
        return re.compile(translate(pattern))
    except (RecursionError, OverflowError) as exc:
        raise re.error(str(exc)) from None


@functools.lru_cache(maxsize=4096)
def compiled(pattern: str) -> re.Pattern[str]:
    """:func:`compile_regex`, once per pattern (the values of a document keep their pattern's
    text; matching reads the compiled form through this)."""
    return compile_regex(pattern)
