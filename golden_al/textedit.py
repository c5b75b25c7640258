"""Surgical edits of YAML text at positions ruamel reports, so nothing else moves.

ruamel.yaml's round-trip parser gives the line and column of every key and value; a
round-trip *dump* would still re-flow long lines, re-indent and re-quote. So the
injector parses with ruamel and then changes only the characters of the scalars it
replaces and the lines it inserts; comments, quotes, anchors and layout elsewhere
stay byte-for-byte.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from golden_al.errors import InputFileError

__all__ = [
    "Edit",
    "apply_edits",
    "block_indent",
    "flow_mapping_end",
    "format_scalar",
    "quote_style",
    "requote",
    "scalar_span",
]

_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-/+]*$")


@dataclass(frozen=True)
class Edit:
    """Replace text from (line, col) to (end_line, end_col), 0-based; equal ends insert."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


def _offsets(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (any order) to ``text``."""
    starts = _offsets(text)

    def off(line: int, col: int) -> int:
        if line >= len(starts):
            return len(text)
        return min(starts[line] + col, len(text))

    spans = sorted(((off(e.line, e.col), off(e.end_line, e.end_col), e.text) for e in edits), key=lambda s: (s[0], s[1]))
    for (_a0, a1, _), (b0, _, _) in itertools.pairwise(spans):
        if b0 < a1:
            raise ValueError("overlapping text edits")
    out = text
    for start, end, new in reversed(spans):
        out = out[:start] + new + out[end:]
    return out


def scalar_span(lines: list[str], line: int, col: int, *, path: str = "<string>", flow: bool = False) -> int:
    """End column (exclusive) of the one-line scalar starting at ``lines[line][col]``.

    Handles ``'single'`` (``''`` escapes), ``"double"`` (backslash escapes) and plain
    scalars (up to `` #`` or the line end, trailing spaces excluded; in a flow
    collection, ``flow=True``, also up to ``,``, ``]`` or ``}``).

    Raises:
        InputFileError: a block scalar (``|``/``>``) or a quoted scalar spanning lines.
    """
    s = lines[line]
    if col >= len(s):
        raise InputFileError("expected a value here", path=path, line=line + 1)
    ch = s[col]
    if ch == "'":
        i = col + 1
        while i < len(s):
            if s[i] == "'":
                if i + 1 < len(s) and s[i + 1] == "'":
                    i += 2
                    continue
                return i + 1
            i += 1
        raise InputFileError("a quoted value spanning several lines cannot be rewritten in place",
                             path=path, line=line + 1, hint="write it on one line")
    if ch == '"':
        i = col + 1
        while i < len(s):
            if s[i] == "\\":
                i += 2
                continue
            if s[i] == '"':
                return i + 1
            i += 1
        raise InputFileError("a quoted value spanning several lines cannot be rewritten in place",
                             path=path, line=line + 1, hint="write it on one line")
    if ch in "|>":
        raise InputFileError("a block scalar (| or >) cannot be rewritten in place", path=path, line=line + 1,
                             hint="write the value on one line")
    m = re.search(r"\s#", s[col:])
    end = col + m.start() if m else len(s)
    if flow:  # inside a flow collection a plain scalar also ends at , ] }
        f = re.search(r"[,\]}]", s[col:end])
        if f:
            end = col + f.start()
    return len(s[:end].rstrip())


def quote_style(token: str) -> str:
    """``'``, ``"`` or ``""`` (plain) for a scalar token."""
    return token[0] if token[:1] in ("'", '"') else ""


def format_scalar(value: str, style: str) -> str:
    """``value`` as a YAML scalar in ``style`` (``'``, ``"`` or plain when safe)."""
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if style == '"':
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if _PLAIN_SAFE.match(value) and value.lower() not in ("true", "false", "null", "yes", "no", "on", "off", "~"):
        return value
    return "'" + value.replace("'", "''") + "'"


def requote(old_token: str, value: str) -> str:
    """``value`` in the quote style of ``old_token`` (plain only if still safe)."""
    return format_scalar(value, quote_style(old_token))


def block_indent(lines: list[str], header_line: int, header_col: int) -> int:
    """Indentation of the block mapping under the key at ``(header_line, header_col)``.

    The first non-blank, non-comment line after the header gives it when it is deeper
    than the header; otherwise the header column plus two.
    """
    for s in lines[header_line + 1:]:
        stripped = s.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(s) - len(s.lstrip(" "))
        return indent if indent > header_col else header_col + 2
    return header_col + 2


def flow_mapping_end(lines: list[str], line: int, col: int, *, path: str = "<string>") -> int:
    """Column of the ``}`` closing the flow mapping whose ``{`` is at ``(line, col)``.

    Raises:
        InputFileError: the mapping spans several lines.
    """
    s = lines[line]
    depth = 0
    quote: str | None = None
    i = col
    while i < len(s):
        ch = s[i]
        if quote:
            if ch == quote:
                if quote == "'" and i + 1 < len(s) and s[i + 1] == "'":
                    i += 2
                    continue
                quote = None
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch in "'\"":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i
        elif ch == "#" and i > 0 and s[i - 1] == " ":
            break
        i += 1
    raise InputFileError("a flow mapping spanning several lines cannot be extended in place",
                         path=path, line=line + 1, hint="write it as a block mapping")
