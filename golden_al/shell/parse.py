"""Bash source -> the typed statement model of :mod:`.nodes`, on tree-sitter-bash.

The grammar is tree-sitter-bash (https://github.com/tree-sitter/tree-sitter-bash,
``grammar.js``; PyPI ``tree-sitter-bash`` with the ``tree-sitter`` bindings): this module
only maps its concrete syntax tree onto our nodes (commands with their assignments, words
and here-documents; ``if``/``case``/loops/functions/groups; ``&&``/``||``/``|`` lists).
Words keep their raw source text; values are given by :mod:`.expand`.

Bounded and fail-closed: a parse that takes longer than :data:`MAX_PARSE_SECONDS` is
cancelled, statements nested deeper than :data:`MAX_NESTING` are refused, and a tree with a
syntax error raises :class:`ShellSyntaxError` with the line of the first error (the caller
turns it into an ``unreadable`` finding). The byte cap is applied by the caller's reader
(:mod:`golden_al.safeio`).
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

from golden_al.errors import GoldenALError
from golden_al.shell.nodes import (
    AndOr,
    ArrayAssign,
    Case,
    Cmd,
    FuncDef,
    Group,
    Heredoc,
    If,
    Loop,
    Node,
    Word,
)

__all__ = ["MAX_NESTING", "MAX_PARSE_SECONDS", "ShellSyntaxError", "command_words", "comment_spans", "parse_script"]

#: Wall-clock bound of one tree-sitter parse (a 1,300-line script parses in a few ms).
MAX_PARSE_SECONDS = 5.0
#: Compound statements (and test expressions) nested deeper than this are refused.
MAX_NESTING = 60

_LIST_OPS = ("&&", "||", "|", "|&")
_LOOPS = ("for_statement", "c_style_for_statement", "while_statement", "until_statement", "select_statement")
_TEST_EXPR = ("binary_expression", "unary_expression", "parenthesized_expression")


class ShellSyntaxError(GoldenALError):
    """The script does not parse as bash (or exceeds a bound); ``line`` is 1-based (0: unknown)."""

    def __init__(self, problem: str, line: int = 0) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@lru_cache(maxsize=4)
def _tree(data: bytes) -> Any:
    """tree-sitter's tree of ``data``, cancelled after :data:`MAX_PARSE_SECONDS` (the census and the reader of one
    script share it: a tree is never changed)."""
    deadline = time.monotonic() + MAX_PARSE_SECONDS

    def read(offset: int, _point: Any) -> bytes:
        return data[offset:offset + 65536]

    def too_long(*_state: Any) -> bool:
        return time.monotonic() > deadline

    parser = _parser()
    try:
        tree = parser.parse(read, progress_callback=too_long)
    except ValueError:  # py-tree-sitter 0.26 raises when the callback cancels (0.25 returned None)
        tree = None
    if tree is None:
        parser.reset()  # a cancelled parse would otherwise resume on the next call
        raise ShellSyntaxError(f"tree-sitter-bash did not finish parsing within {MAX_PARSE_SECONDS:g} s")
    return tree


def _first_error(root: Any) -> tuple[int, str]:
    """(line, description) of the first ERROR or MISSING node."""
    node = root
    while True:
        nxt = next((c for c in node.children if c.has_error or c.is_missing), None)
        if nxt is None:
            break
        node = nxt
        if node.type == "ERROR" or node.is_missing:
            break
    line = node.start_point[0] + 1
    if node.is_missing:
        return line, f"missing {node.type!r}"
    return line, "unexpected syntax"


def parse_script(text: str) -> list[Node]:
    """Parse a bash script into statements.

    Raises:
        ShellSyntaxError: the text does not parse (with the line), or a bound was exceeded.
    """
    data = text.encode("utf-8", errors="replace")
    root = _tree(data).root_node
    if root.has_error:
        line, what = _first_error(root)
        lines = text.split("\n")  # tree-sitter counts rows by "\n" only
        shown = lines[line - 1].strip()[:120] if 0 < line <= len(lines) else ""
        raise ShellSyntaxError(f"bash syntax error ({what}): {shown!r}", line)
    return _Builder(data).block(root.children, 0)


def comment_spans(text: str) -> dict[int, list[tuple[int, int]]]:
    """Line -> (start, end) character columns of the script's comments: tree-sitter-bash ``comment`` nodes, never
    a string or a here-document's body (a script that does not parse keeps the comments its tree still shows)."""
    data = text.encode("utf-8", errors="replace")
    rows = data.split(b"\n")
    out: dict[int, list[tuple[int, int]]] = {}
    todo = [_tree(data).root_node]
    while todo:
        node = todo.pop()
        if node.type != "comment":
            todo.extend(node.children)
            continue
        (row, start), (_, end) = node.start_point, node.end_point
        line = rows[row]
        out.setdefault(row + 1, []).append((len(line[:start].decode("utf-8", errors="replace")),
                                            len(line[:end].decode("utf-8", errors="replace"))))
    return out


@lru_cache(maxsize=4096)
def command_words(inner: str) -> tuple[str, ...] | None:
    """The raw words of the one simple command in ``$( inner )``; None when it is anything else
    (a pipeline, a list, a compound statement) or does not parse; ``()`` when it is empty."""
    data = inner.encode("utf-8", errors="replace")
    try:
        root = _tree(data).root_node
    except ShellSyntaxError:
        return None
    if root.has_error:
        return None
    try:
        nodes = _Builder(data).block(root.children, MAX_NESTING - 4)
    except ShellSyntaxError:
        return None
    if not nodes:
        return ()
    if len(nodes) != 1 or not isinstance(nodes[0], Cmd):
        return None
    return tuple(w.raw for w in nodes[0].words)


class _Builder:
    """Maps tree-sitter nodes onto :mod:`.nodes` (recursion bounded by :data:`MAX_NESTING`)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def raw(self, node: Any) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", errors="replace")

    @staticmethod
    def line(node: Any) -> int:
        return int(node.start_point[0]) + 1

    def word(self, node: Any) -> Word:
        return Word(self.raw(node), self.line(node))

    def block(self, children: Any, depth: int) -> list[Node]:
        out: list[Node] = []
        for child in children:
            node = self.stmt(child, depth)
            if node is not None:
                out.append(node)
        return out

    def stmt(self, node: Any, depth: int) -> Node | None:
        if not node.is_named or node.type == "comment":
            return None
        if depth > MAX_NESTING:
            raise ShellSyntaxError(f"statements nested more than {MAX_NESTING} deep", self.line(node))
        kind = node.type
        if kind == "command":
            return self.command(node)
        if kind in ("variable_assignment", "variable_assignments"):
            items = [node] if kind == "variable_assignment" else [c for c in node.children
                                                                   if c.type == "variable_assignment"]
            return Cmd([self.assign(c) for c in items], [], [], self.line(node))
        if kind in ("declaration_command", "unset_command"):
            words = [self.word(c) for c in node.children if c.type != "comment"]
            return Cmd([], words, [], self.line(node))
        if kind == "test_command":
            return Cmd([], self.test_words(node, depth), [], self.line(node))
        if kind == "negated_command":
            inner = self.block([c for c in node.children if c.type != "!"], depth + 1)
            if len(inner) == 1 and isinstance(inner[0], Cmd):
                cmd = inner[0]
                return Cmd(cmd.assigns, [Word("!", self.line(node)), *cmd.words], cmd.heredocs, self.line(node))
            return inner[0] if len(inner) == 1 else Group(inner, self.line(node))
        if kind == "redirected_statement":
            return self.redirected(node, depth)
        if kind in ("list", "pipeline"):
            return self.and_or(node, depth)
        if kind == "if_statement":
            return self.if_stmt(node, depth)
        if kind == "case_statement":
            return self.case(node, depth)
        if kind in _LOOPS:
            body = node.child_by_field_name("body")
            return Loop(self.body_of(body, depth + 1) if body is not None else [], self.line(node))
        if kind == "function_definition":
            name = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            return FuncDef(self.raw(name).split("(")[0] if name is not None else "_",
                           self.body_of(body, depth + 1) if body is not None else [], self.line(node))
        if kind == "compound_statement" and node.children and node.children[0].type == "((":
            return Cmd([], [self.word(node)], [], self.line(node))  # (( arithmetic )): a command of its own
        if kind in ("compound_statement", "subshell", "do_group"):
            return Group(self.body_of(node, depth + 1), self.line(node))
        return Cmd([], [self.word(node)], [], self.line(node))  # any other named node: one opaque word

    def body_of(self, node: Any, depth: int) -> list[Node]:
        """Statements of a ``{ }``/``( )``/``do ... done`` body, or the one statement ``node`` is."""
        if node.type in ("compound_statement", "subshell", "do_group") and not (
                node.children and node.children[0].type == "(("):
            return self.block(node.children, depth)
        one = self.stmt(node, depth)
        return [one] if one is not None else []

    def assign(self, node: Any) -> tuple[str, bool, Word | ArrayAssign]:
        name_node = node.child_by_field_name("name")
        name = self.raw(name_node) if name_node is not None else ""
        append = any(c.type == "+=" for c in node.children)
        value = node.child_by_field_name("value")
        line = self.line(node)
        if value is None:
            return name, append, Word("", line)
        if value.type == "array":
            items = tuple(self.word(c) for c in value.children if c.is_named and c.type != "comment")
            return name, append, ArrayAssign(name, append, items, line)
        return name, append, Word(self.raw(value), line)

    def command(self, node: Any) -> Cmd:
        assigns: list[tuple[str, bool, Word | ArrayAssign]] = []
        words: list[Word] = []
        for i, child in enumerate(node.children):
            field = node.field_name_for_child(i)
            if child.type == "variable_assignment" and not words:
                assigns.append(self.assign(child))
            elif field in ("name", "argument"):
                words.append(self.word(child))
        return Cmd(assigns, words, [], self.line(node))

    def redirected(self, node: Any, depth: int) -> Node | None:
        body = node.child_by_field_name("body")
        heredocs: list[Heredoc] = []
        extra: list[Any] = []  # `cat <<EOF | tee f`: the rest of the pipeline sits inside the redirect
        args: list[Word] = []
        for child in node.children:
            if child.type != "heredoc_redirect":
                continue
            heredocs.append(self.heredoc(child))
            for i, part in enumerate(child.children):
                if child.field_name_for_child(i) == "argument":
                    args.append(self.word(part))  # `cmd <<EOF arg`: words after the delimiter
                elif part.type in ("pipeline", "list"):
                    extra.extend(part.children)
                elif part.type in _LIST_OPS or (part.is_named and part.type not in (
                        "heredoc_start", "heredoc_body", "heredoc_end") and not part.type.endswith("redirect")):
                    extra.append(part)
        inner = self.stmt(body, depth) if body is not None else None
        if inner is None:
            inner = Cmd([], [], [], self.line(node))
        if isinstance(inner, Cmd):
            inner.heredocs.extend(heredocs)
            inner.words.extend(args)
            inner.stdout_redirected = any(self.redirects_stdout(c) for c in node.children)
        if not extra:
            return inner
        items: list[Node] = [inner]
        ops: list[str] = []
        pending = "|"
        for part in extra:
            if part.type in _LIST_OPS:
                pending = part.type
                continue
            nxt = self.stmt(part, depth + 1)
            if nxt is not None:
                items.append(nxt)
                ops.append(pending)
        return AndOr(items, ops, self.line(node)) if len(items) > 1 else inner

    def redirects_stdout(self, node: Any) -> bool:
        """Whether a ``file_redirect`` sends standard output elsewhere (``>f``, ``>>f``, ``>&2``, ``&>f``)."""
        if node.type != "file_redirect":
            return False
        fd = node.child_by_field_name("descriptor")
        ops = [c.type for c in node.children if not c.is_named]
        return any(">" in op for op in ops) and (fd is None or self.raw(fd) == "1")

    def heredoc(self, node: Any) -> Heredoc:
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        end = next((c for c in node.children if c.type == "heredoc_end"), None)
        delim = self.raw(start) if start is not None else ""
        expand = not any(q in delim for q in "'\"\\")
        if body is None:
            return Heredoc("", expand, self.line(end if end is not None else node))
        stop = end.start_byte if end is not None else body.end_byte
        text = self.data[body.start_byte:stop].decode("utf-8", errors="replace")
        cut = text.rfind("\n")
        text = text[:cut] if cut >= 0 and not text[cut + 1:].strip() else text
        return Heredoc(text, expand, self.line(body))

    def and_or(self, node: Any, depth: int) -> Node | None:
        seq: list[Any] = []  # nodes and operator strings, left to right (nested lists flattened)
        todo: list[Any] = [node]
        while todo:
            n = todo.pop()
            if n.type in ("list", "pipeline"):
                todo.extend(reversed([c for c in n.children if c.type != "comment"]))
            elif n.type in _LIST_OPS:
                seq.append(n.type)
            elif n.is_named:
                seq.append(n)
        items: list[Node] = []
        ops: list[str] = []
        pending: str | None = None
        for part in seq:
            if isinstance(part, str):
                pending = part
                continue
            item = self.stmt(part, depth + 1)
            if item is None:
                continue
            if items:
                ops.append(pending or "|")
            items.append(item)
        if not items:
            return None
        return items[0] if len(items) == 1 else AndOr(items, ops, self.line(node))

    def if_stmt(self, node: Any, depth: int) -> If:
        branches: list[tuple[list[Node], list[Node]]] = []
        orelse: list[Node] | None = None
        cond: list[Any] = []
        body: list[Any] = []
        in_body = False
        clauses: list[Any] = []
        for child in node.children:
            if child.type == "then":
                in_body = True
            elif child.type in ("elif_clause", "else_clause"):
                clauses.append(child)
            elif child.type not in ("if", "fi"):
                (body if in_body else cond).append(child)
        branches.append((self.block(cond, depth + 1), self.block(body, depth + 1)))
        for clause in clauses:
            parts = [c for c in clause.children if c.type not in ("elif", "else")]
            if clause.type == "else_clause":
                orelse = self.block(parts, depth + 1)
                continue
            k = next((i for i, c in enumerate(parts) if c.type == "then"), len(parts))
            branches.append((self.block(parts[:k], depth + 1), self.block(parts[k + 1:], depth + 1)))
        return If(branches, orelse, self.line(node))

    def case(self, node: Any, depth: int) -> Case:
        value = node.child_by_field_name("value")
        arms: list[tuple[list[Word], list[Node]]] = []
        for item in node.children:
            if item.type != "case_item":
                continue
            patterns: list[Word] = []
            body: list[Any] = []
            seen_paren = False
            for i, child in enumerate(item.children):
                field = item.field_name_for_child(i)
                if not seen_paren:
                    if child.type == ")":
                        seen_paren = True
                    elif field == "value":
                        patterns.append(self.word(child))
                elif field not in ("termination", "fallthrough"):
                    body.append(child)
            arms.append((patterns, self.block(body, depth + 1)))
        return Case(self.word(value) if value is not None else None, arms, self.line(node))

    def test_words(self, node: Any, depth: int) -> list[Word]:
        """``[ ... ]`` / ``[[ ... ]]`` as the words ``test`` would see (brackets and operators included)."""
        spans: list[list[int]] = []  # [start byte, end byte, line]

        def flat(n: Any, d: int) -> None:
            if d > MAX_NESTING:
                raise ShellSyntaxError(f"test expression nested more than {MAX_NESTING} deep", self.line(n))
            if n.type in _TEST_EXPR:
                for c in n.children:
                    if c.type != "comment":
                        flat(c, d + 1)
            elif spans and spans[-1][1] == n.start_byte:  # `*" on "*`: one word in three nodes
                spans[-1][1] = n.end_byte
            else:
                spans.append([n.start_byte, n.end_byte, self.line(n)])

        for child in node.children:
            if child.type != "comment":
                flat(child, depth)
        return [Word(self.data[a:b].decode("utf-8", errors="replace"), line) for a, b, line in spans]
