"""The user docs (README.md and docs/*.md; docs/design/ is for contributors) speak to users: none
of the project's internal words (the requirement documents, review passes, work items), and a
term of art such as "floor" only where the same page defines it.

This covers the words the repository's before-stop hook looks for (the seed, seed doc, render
pass N, spec audit, issue N, pass N figures) and more."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (pattern, why it is internal); case-insensitive, matched against each line.
INTERNAL = [
    (r"\bseeds?\b", "the requirement documents are internal: state the behaviour itself"),
    (r"\bseed doc", "an internal document"),
    (r"\brender pass\b", "an internal review pass"),
    (r"\bpass [0-9]+\b", "an internal review pass"),
    (r"\bspec[ .-]?audit\b", "an internal review"),
    (r"\bruntime[ .-]?audit\b", "an internal review"),
    (r"\baudit [A-Z]?[0-9]+\b", "an internal finding number"),
    (r"\bthe issue\b", "a work item users never saw"),
    (r"\bissues? ?#[0-9]*", "a work item number"),
    (r"\bissue [0-9]+\b", "a work item number"),
    (r"\bstop [0-9]+\b", "an internal milestone"),
    (r"\bgateway api page\b", "an internal name of a requirements page"),
    (r"\bingress page\b", "an internal name of a requirements page"),
    (r"\bproduct pages?\b", "an internal name of the requirements pages"),
    (r"\bthe contract's decisions\b", "an internal document"),
    (r"\btwp-contract\.md\b", "an internal document"),
    (r"\bacceptance (criteria|list)\b", "an internal checklist"),
    (r"\b(worktree|the lead)\b", "the project's own process"),
]

# A term of art used only where its page defines it: `*term*` or `**term**` emphasised once.
DEFINED_TERMS = ["floor"]


def user_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def findings(text: str) -> list[str]:
    found = []
    for line_no, line in enumerate(text.splitlines(), 1):
        for pattern, why in INTERNAL:
            m = re.search(pattern, line, re.IGNORECASE)
            if m:
                found.append(f"line {line_no}: {m.group(0)!r} ({why}): {line.strip()[:120]}")
    for term in DEFINED_TERMS:
        if re.search(rf"\b{term}\b", text, re.IGNORECASE) and not re.search(
                rf"\*{{1,2}}{term}\*{{1,2}}", text, re.IGNORECASE):
            first = next(n for n, line in enumerate(text.splitlines(), 1)
                         if re.search(rf"\b{term}\b", line, re.IGNORECASE))
            found.append(f"line {first}: {term!r} is used but this page does not define it"
                         f" (emphasise it, *{term}*, where it is explained)")
    return found


@pytest.mark.parametrize("doc", [p.relative_to(ROOT).as_posix() for p in user_docs()])
def test_no_internal_vocabulary(doc: str) -> None:
    problems = findings((ROOT / doc).read_text())
    assert not problems, f"{doc} uses internal words:\n" + "\n".join(problems)


def test_the_check_finds_them() -> None:
    bad = ("As the seed says, render pass 5 and spec audit F5 fixed it (issue #12); see the"
           " Gateway API page. Its floor is low.")
    words = " ".join(findings(bad))
    for expected in ("seed", "render pass", "spec audit", "issue #", "Gateway API page", "floor"):
        assert expected in words, expected
    assert not findings("The *floor* is the cost of writing the output; 1.1x its floor.")
    assert not findings("The API server's audit log is seeded like helm install.")
