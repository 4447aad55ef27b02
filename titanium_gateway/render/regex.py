"""Regular expressions the data plane runs: safety checks and escaping (HTTPRoute and Ingress).

The data plane matches with a backtracking .NET/ECMAScript engine, so a pattern from a route
must be safe to run on any path: :func:`check_regex` refuses what could backtrack badly, what
the data plane's dialect would not load and what does not compile. It is a conservative
heuristic: at most 1024 characters, no repeated group holding a quantifier or an alternation,
at most 3 unbounded quantifiers, no backreference, no Python-only syntax.
"""

from __future__ import annotations

import re
from typing import Any

from titanium_gateway.render.fields import writable

MAX_REGEX_LENGTH = 1024
MAX_UNBOUNDED_QUANTIFIERS = 3
# A group that contains a quantifier and is itself quantified: catastrophic backtracking.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:\?)?\)\s*(?:[+*]|\{[0-9,]+\})")
_BACKREFERENCE = re.compile(r"\\[1-9]|\\k<")
# Python-only syntax the data plane's .NET engine would reject (a config it cannot load).
_PYTHON_ONLY = re.compile(r"\(\?P|\(\?[aLu]+[):]|\\N\{")
#: Metacharacters of .NET/ECMAScript regexes outside a character class (nothing else is
#: escaped: ``\-`` or ``\#`` are errors in ECMAScript's unicode mode).
_REGEX_SPECIAL = frozenset("\\.^$|?*+()[]{}")


def _quantifier_at(pattern: str, i: int) -> bool:
    """Is there a repeating quantifier (``*``, ``+``, ``{n}``, ``{n,}``, ``{n,m}``) at ``i``?"""
    if i >= len(pattern):
        return False
    if pattern[i] in "*+":
        return True
    if pattern[i] == "{":
        m = re.match(r"\{([0-9]+)(,([0-9]*))?\}", pattern[i:])
        if m:
            low, comma, high = int(m.group(1)), m.group(2), m.group(3)
            return bool(comma) or low > 1 or (bool(high) and int(high) > 1)
    return False



def _after_class(pattern: str, i: int) -> int:
    """The index just past the character class that opens at ``pattern[i] == "["`` (a leading
    ``^`` and a leading ``]`` belong to the class; escapes are skipped)."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    while j < n and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def unbounded_quantifiers(pattern: str) -> int:
    """How many ``*``, ``+`` and ``{n,}`` the pattern has outside character classes.

    k unbounded quantifiers in sequence over overlapping sets (``.*a.*a.*a``) backtrack in
    O(n^k) on a non-matching path, so more than a few are refused."""
    count, i, n = 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _after_class(pattern, i)
            continue
        lazy_or_repeat = c in "*+" and i > 0 and pattern[i - 1] in "*+?"
        if (c in "*+" and not lazy_or_repeat) or (c == "{" and re.match(r"\{[0-9]+,\}", pattern[i:])):
            count += 1
        i += 1
    return count


def backtracking_risk(pattern: str) -> bool:
    """True when a repeated group contains a quantifier or an alternation.

    ``(a+)+``, ``(a|aa)*``, ``(\\w+\\s?)*``, ``(.*a){20}`` all backtrack exponentially (or
    with a high polynomial) in a backtracking engine such as .NET's. Conservative: some safe
    patterns (``(/[a-z]+)*``) are rejected too.
    """
    stack: list[bool] = [False]  # per open group: does its body hold a quantifier or "|"?
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _after_class(pattern, i)
            continue
        if c == "(":
            stack.append(False)
            i += 1
            if i < n and pattern[i] == "?":  # (?:, (?=, (?!, (?<=, (?<!, (?i) ...
                i += 1
                if i < n and pattern[i] == "<" and i + 1 < n and pattern[i + 1] in "=!":
                    i += 1
                i += 1
            continue
        if c == ")":
            risky = stack.pop() if len(stack) > 1 else False
            repeated = _quantifier_at(pattern, i + 1)
            if risky and repeated:
                return True
            stack[-1] = stack[-1] or risky or repeated
            i += 1
            continue
        if c == "|" or c in "*+?" or (c == "{" and re.match(r"\{[0-9]", pattern[i:])):
            stack[-1] = True
        i += 1
    return False


def check_regex(pattern: Any) -> str:
    """'' when the regex is acceptable, else why not (length, syntax, unsafe constructs)."""
    if not isinstance(pattern, str) or not pattern:
        return "the regular expression is empty"
    if len(pattern) > MAX_REGEX_LENGTH:
        return f"the regular expression is longer than {MAX_REGEX_LENGTH} characters"
    if not writable(pattern):
        return "the regular expression holds a lone UTF-16 surrogate"
    if _NESTED_QUANTIFIER.search(pattern) or backtracking_risk(pattern):
        return ("the regular expression repeats a group that holds a quantifier or an alternation "
                "(catastrophic backtracking)")
    if _BACKREFERENCE.search(pattern):
        return "the regular expression uses a backreference"
    if unbounded_quantifiers(pattern) > MAX_UNBOUNDED_QUANTIFIERS:
        return (f"the regular expression has more than {MAX_UNBOUNDED_QUANTIFIERS} unbounded quantifiers "
                "(polynomial backtracking)")
    if _PYTHON_ONLY.search(pattern):
        return "the regular expression uses syntax the data plane does not support"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"the regular expression does not compile: {exc}"
    return ""


def regex_escape(text: str) -> str:
    """A literal for .NET/ECMAScript regexes (the data plane's dialect)."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)
