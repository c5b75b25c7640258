"""The documentation's marked examples: README.md and the guides under docs/ (issue 54: their examples run in tests).

``<!-- readme-test: NAME -->`` before a fenced block or a table marks what the test named NAME holds equal to what the
tool does; the mark may sit on any page (the README or a guide), so a page can move it without touching the test."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: every page whose examples the tests hold
PAGES = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))


def after(name: str) -> str:
    """The text of the one page marked ``NAME``, from just after the marker's line."""
    mark = f"<!-- readme-test: {name} -->"
    hits = [(page, text) for page in PAGES if mark in (text := page.read_text(encoding="utf-8"))]
    assert len(hits) == 1, f"{mark} must be on exactly one page, found on {[str(p) for p, _ in hits]}"
    return hits[0][1].split(mark, 1)[1].split("\n", 1)[1]


def marked(name: str) -> str:
    """What follows the marker up to the next blank line: a table, or a fenced block without blank lines."""
    return after(name).split("\n\n", 1)[0]


def code(name: str) -> str:
    """The body of the fenced block right after the marker (dedented where the block sits in a list)."""
    m = re.match(r"(\s*)```\w*\n(.*?)\n\s*```", after(name), re.S)
    assert m is not None, f"readme-test {name}: no fenced block right after the marker"
    return textwrap.dedent(m.group(2))
