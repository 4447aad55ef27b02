"""Every relative link of README.md and docs/**/*.md resolves: the file (or folder) exists in the
repository and, for a link with ``#anchor``, the target Markdown file has a heading whose
GitHub slug is that anchor (or an HTML ``id``/``name`` of that value). Links to other sites are
not fetched."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target "title") and ![alt](target); the text may hold one level of brackets
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ID = re.compile(r"<[^>]+\b(?:id|name)=\"([^\"]+)\"")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: the rendered text lower-cased, every character but
    letters, digits, ``_``, ``-`` and spaces dropped, spaces made hyphens."""
    text = _INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"(\*\*|__|\*|(?<!\w)_|_(?!\w))", "", text)  # emphasis markers
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _lines(path: Path) -> list[tuple[int, str]]:
    """The lines of ``path`` outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, line))
    return out


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file: its headings' slugs (a repeated slug gets ``-1``, ``-2``,
    as on GitHub) and its HTML ids."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in _lines(path):
        found.update(_HTML_ID.findall(line))
        m = _HEADING.match(line)
        if not m:
            continue
        s = slug(m.group(2))
        if s in seen:
            seen[s] += 1
            found.add(f"{s}-{seen[s]}")
        else:
            seen[s] = 0
            found.add(s)
    return frozenset(found)


def links(path: Path) -> list[tuple[int, str]]:
    """The relative link targets of ``path`` with their line numbers (inline code aside)."""
    out = []
    for n, line in _lines(path):
        text = _INLINE_CODE.sub("", line)
        targets = _INLINE_LINK.findall(text)
        m = _REF_DEF.match(text)
        if m:
            targets.append(m.group(1))
        out += [(n, t) for t in targets if t and not _SCHEME.match(t) and not t.startswith("//")]
    return out


def problem(path: Path, target: str) -> str | None:
    """Why the link ``target`` of ``path`` does not resolve, or None."""
    file_part, _, anchor = target.partition("#")
    dest = (path.parent / file_part).resolve() if file_part else path
    if file_part.startswith("/"):
        dest = (ROOT / file_part.lstrip("/")).resolve()
    if not dest.is_relative_to(ROOT):
        return "points outside the repository"
    if not dest.exists():
        return f"{dest.relative_to(ROOT)} does not exist"
    if anchor:
        if dest.is_dir() or dest.suffix != ".md":
            return f"an anchor into {dest.relative_to(ROOT)}, which is not a Markdown file"
        if anchor not in anchors(dest):
            return f"{dest.relative_to(ROOT)} has no heading #{anchor}"
    return None


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    broken = [f"{path.relative_to(ROOT)}:{n}: ({t}) {why}"
              for n, t in links(path) if (why := problem(path, t)) is not None]
    assert not broken, "broken links:\n" + "\n".join(broken)


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Which Secrets the controller can read", "which-secrets-the-controller-can-read"),
    ("`make dev`: the loop", "make-dev-the-loop"),
    ("Set up (once)", "set-up-once"),
    ("HTTP/2 and gRPC", "http2-and-grpc"),
    ("The [chart](charts/x) values", "the-chart-values"),
    ("**Bold** and _this_ or snake_case", "bold-and-this-or-snake_case"),
    ("A.B: c, d!", "ab-c-d"),
    ("Up -- down", "up----down"),
])
def test_slug_follows_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_the_checker_finds_broken_links(tmp_path: Path) -> None:
    doc = ROOT / "docs" / "x.md"
    assert problem(doc, "install.md") is None
    assert problem(doc, "no-such-page.md") == "docs/no-such-page.md does not exist"
    assert problem(doc, "install.md#no-such-heading") == "docs/install.md has no heading #no-such-heading"
    assert problem(doc, "../../outside.md") == "points outside the repository"
    page = tmp_path / "p.md"
    page.write_text("# Top\n\n## Same\n\n## Same\n\n```\n# not a heading\n[x](gone.md)\n```\n"
                    "[a](#same-1) `[b](gone.md)` [c](https://example.com/x.md)\n[r]: gone.md\n",
                    encoding="utf-8")
    assert anchors(page) == {"top", "same", "same-1"}
    assert links(page) == [(11, "#same-1"), (12, "gone.md")]
