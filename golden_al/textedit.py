"""Surgical edits of YAML text at the marks of its composed nodes, so nothing else moves.

PyYAML's composer (:func:`golden_al.safeio.load_yaml_documents` with ``construct=False``) gives the start and end
of every key and value; a dump would re-flow long lines, re-indent and re-quote. So ``inject`` and ``inject
--restore-real`` plan their changes at those marks (:class:`YamlEdit`: replace a scalar, delete an entry, insert
keys) and apply them at once; comments, quotes, anchors and layout elsewhere stay byte for byte.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError

__all__ = ["Edit", "YamlEdit", "apply_edits", "format_scalar", "json_separators"]

_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-/+]*$")


@dataclass(frozen=True)
class Edit:
    """Replace text from (line, col) to (end_line, end_col), 0-based; equal ends insert."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (any order) to ``text``."""
    starts = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]

    def off(line: int, col: int) -> int:
        return len(text) if line >= len(starts) else min(starts[line] + col, len(text))

    spans = sorted(((off(e.line, e.col), off(e.end_line, e.end_col), e.text) for e in edits), key=lambda s: (s[0], s[1]))
    for (_a0, a1, _), (b0, _, _) in itertools.pairwise(spans):
        if b0 < a1:
            raise ValueError("overlapping text edits")
    out = text
    for start, end, new in reversed(spans):
        out = out[:start] + new + out[end:]
    return out


def format_scalar(value: Any, style: str) -> str:
    """``value`` as a YAML scalar: a string in ``style`` (``'``, ``"``, or plain when safe), a number or boolean as
    JSON writes it (quoted in a quoted ``style``)."""
    if not isinstance(value, str):
        text = json.dumps(value)
        return format_scalar(text, style) if style in ("'", '"') else text
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if style == '"':
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if _PLAIN_SAFE.match(value) and value.lower() not in ("true", "false", "null", "yes", "no", "on", "off", "~"):
        return value
    return "'" + value.replace("'", "''") + "'"


def json_separators(text: str) -> tuple[str, str]:
    """The item and key separators a JSON text is written with (compact or spaced), to write it back alike."""
    item = ", " if re.search(r',\s+["}\]]', text) or re.search(r',\s+"', text) else ","
    key = ": " if re.search(r'":\s', text) else ":"
    return item, key


def _end_mark(node: Any) -> Any:
    """Where a node's text ends: a block collection's own end mark is the next token's start, so the end of its last
    child instead."""
    import yaml

    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.value and not node.flow_style:
        last = node.value[-1]
        node = last[1] if isinstance(node, yaml.MappingNode) else last
    return node.end_mark


@dataclass
class YamlEdit:
    """The edits of one YAML text, planned at its nodes' marks (:meth:`replace`, :meth:`delete`, :meth:`insert`)."""

    text: str
    path: Path
    lines: list[str] = field(init=False)
    nl: str = field(init=False)
    edits: list[Edit] = field(default_factory=list)
    _done: set[int] = field(default_factory=set)  #: the nodes replaced
    _deleted: set[int] = field(default_factory=set)  #: the lines deleted
    _flow: set[tuple[int, int, int]] = field(default_factory=set)  #: flow entries to delete: (line, start, end)

    def __post_init__(self) -> None:
        self.lines = [s[:-1] if s.endswith("\r") else s for s in self.text.split("\n")]
        self.nl = "\r\n" if "\r\n" in self.text else "\n"

    def result(self) -> str:
        edits = self.edits + self._flow_edits()
        return apply_edits(self.text, edits) if edits else self.text

    def _flow_edits(self) -> list[Edit]:
        """The flow entries to delete, each run of neighbours (entries joined by a comma alone) as one edit with one
        comma: the one after the run, else the one before it (``{A: 1, B: 2}`` -> ``{}``, ``{K: 1, A: 1, B: 2}`` ->
        ``{K: 1}``); a line left empty goes."""
        runs: list[list[int]] = []
        for line, a, b in sorted(self._flow):
            last = runs[-1] if runs else None
            if last and last[0] == line and a < last[2]:  # inside the entry before (a nested flow)
                last[2] = max(last[2], b)
            elif last and last[0] == line and re.fullmatch(r"\s*,\s*", self.lines[line][last[2]:a]):
                last[2] = b
            else:
                runs.append([line, a, b])
        out = []
        for line, a, b in runs:
            text = self.lines[line]
            if after := re.match(r"\s*,\s*", text[b:]):
                b += after.end()
            elif before := re.search(r",\s*$", text[:a]):
                a = before.start()
            whole = not text[:a].strip() and not text[b:].strip() and line + 1 < len(self.lines)
            out.append(Edit(line, 0, line + 1, 0, "") if whole else Edit(line, a, line, b, ""))
        return out

    def replace(self, node: Any, value: Any) -> None:
        """Replace the scalar ``node`` by ``value``, in its own quotes (once per node: an alias is one value).

        Raises:
            InputFileError: a block scalar (``|``/``>``).
        """
        if id(node) in self._done:
            return
        self._done.add(id(node))
        if node.style in ("|", ">"):
            raise InputFileError("a block scalar (| or >) cannot be rewritten in place", path=self.path,
                                 line=node.start_mark.line + 1, hint="write the value on one line")
        start, end = node.start_mark, node.end_mark
        text = format_scalar(value, node.style or "")
        self.edits.append(Edit(start.line, start.column, end.line, end.column,
                               " " + text if (start.line, start.column) == (end.line, end.column) else text))

    def insert(self, mapping: Any, items: Mapping[str, Any], *, key: Any = None) -> None:
        """Add ``items`` (nested mappings become blocks) to ``mapping`` (block or flow), or give ``key``'s empty value
        (``mapping`` its null scalar) a block of them. Strings take the quotes the mapping's values mostly use."""
        import yaml

        style = self._style(mapping)
        if isinstance(mapping, yaml.MappingNode) and mapping.flow_style:
            body = _flow(items, style)
            if mapping.value:
                at = mapping.value[-1][1].end_mark
                self.edits.append(Edit(at.line, at.column, at.line, at.column, ", " + body))
            else:
                at = mapping.end_mark
                self.edits.append(Edit(at.line, at.column - 1, at.line, at.column - 1, body))
            return
        if isinstance(mapping, yaml.MappingNode) and mapping.value:
            indent, line = mapping.value[0][0].start_mark.column, _last_line(mapping.value[-1][1]) + 1
        else:  # an empty value: the null token goes, the block goes under its key
            start, end = mapping.start_mark, mapping.end_mark
            if (start.line, start.column) != (end.line, end.column):
                self.edits.append(Edit(start.line, start.column, end.line, end.column, ""))
            indent, line = key.start_mark.column + 2, key.start_mark.line + 1
        new = _block(items, indent, style)
        if line < len(self.lines):
            self.edits.append(Edit(line, 0, line, 0, "".join(s + self.nl for s in new)))
        else:
            last = len(self.lines) - 1
            self.edits.append(Edit(last, len(self.lines[last]), last, len(self.lines[last]),
                                   "".join(self.nl + s for s in new)))

    def _style(self, mapping: Any) -> str:
        """The quote the mapping's own scalar values mostly use (double where none or as many)."""
        import yaml

        styles = [v.style for _, v in getattr(mapping, "value", None) or () if isinstance(v, yaml.ScalarNode)]
        return "'" if styles.count("'") > styles.count('"') else '"'

    def delete(self, start: Any, last: Any, *, flow: bool, item: bool = False) -> None:
        """Delete a mapping entry (``item`` False) or a sequence item from the mark ``start`` to the end of the node
        ``last`` (its value, or the item itself): its whole lines in a block, the entry and one comma in a flow.

        Raises:
            InputFileError: the entry shares its lines with others, or spans lines inside a flow collection.
        """
        end = _end_mark(last)
        end_line = end.line if end.column > 0 or end.line == start.line else end.line - 1
        end_col = end.column if end_line == end.line else len(self.lines[end_line])
        if not flow:
            head, tail = self.lines[start.line][:start.column], self.lines[end_line][end_col:].strip()
            if head.strip(" -") or (tail and not tail.startswith("#")):
                raise InputFileError("this setting shares its lines with other settings and cannot be removed in "
                                     "place", path=self.path, line=start.line + 1, hint="remove it by hand")
            if "-" in head and not item:
                raise InputFileError("this setting is the first key of a list item; removing its line would change "
                                     "the list", path=self.path, line=start.line + 1, hint="remove it by hand")
            self._delete_lines(start.line, end_line)
            return
        if end_line != start.line:
            raise InputFileError("a setting inside a flow collection that spans lines cannot be removed in place",
                                 path=self.path, line=start.line + 1, hint="put the collection on one line")
        self._flow.add((start.line, start.column, end.column))

    def _delete_lines(self, first: int, last: int) -> None:
        """Delete whole lines ``first..last`` (0-based, inclusive), once."""
        if any(n in self._deleted for n in range(first, last + 1)):
            return
        self._deleted.update(range(first, last + 1))
        if last + 1 < len(self.lines):
            self.edits.append(Edit(first, 0, last + 1, 0, ""))
        elif first > 0:  # the end of the file: take the line break before it instead
            self.edits.append(Edit(first - 1, len(self.lines[first - 1]), last, len(self.lines[last]), ""))
        else:
            self.edits.append(Edit(first, 0, last, len(self.lines[last]), ""))


def _last_line(node: Any) -> int:
    """The last line (0-based) a value's text takes."""
    end = _end_mark(node)
    return end.line if end.column > 0 or end.line == node.start_mark.line else end.line - 1


def _block(items: Mapping[str, Any], indent: int, style: str) -> list[str]:
    out: list[str] = []
    for k, v in items.items():
        pad = " " * indent + format_scalar(str(k), "") + ":"
        out += [pad, *_block(v, indent + 2, style)] if isinstance(v, Mapping) else [f"{pad} {_new(v, style)}"]
    return out


def _flow(items: Mapping[str, Any], style: str) -> str:
    return ", ".join(format_scalar(str(k), "") + ": " + ("{" + _flow(v, style) + "}" if isinstance(v, Mapping)
                                                         else _new(v, style)) for k, v in items.items())


def _new(value: Any, style: str) -> str:
    """A new scalar: a string in ``style``, a number or boolean plain."""
    return format_scalar(value, style if isinstance(value, str) else "")
