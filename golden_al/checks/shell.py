"""A static reader of bash scripts: tokens, statements, and path-sensitive variable values.

``golden-al check`` must find the synthetic-acceptance value a benchmark script pins,
together with the draft length and settings in force on the same code path, *without
running the script*. This module reads a script the way bash would parse it (quotes,
``$(...)``, ``${...}``, arrays, here-documents, ``if``/``case``/loops/functions) and
then walks it symbolically:

* variables hold strings or arrays; a variable never assigned in the file (set by the
  CI workflow, e.g. ``$CONC``) is *unknown*;
* ``if``/``elif`` and ``case`` whose condition can be decided from known values take
  one branch; otherwise the walk forks (each path remembers the assumption it made,
  e.g. ``CONC -le 8``) and a condition ``[ "$X" = lit ]`` assumed true binds ``X``;
* a small set of command substitutions is evaluated without running anything:
  ``printf FORMAT ARGS``, ``echo``, ``awk "BEGIN{print EXPR}"`` and ``$(( EXPR ))``
  with arithmetic on known numbers only;
* ``exit`` ends a path (what it pinned so far is kept); functions run where called.

Nothing is ever executed. The walk is capped (:data:`MAX_STATES` paths); the caller
learns when a cap was hit.
"""

from __future__ import annotations

import ast
import fnmatch
import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

__all__ = [
    "MAX_STATES",
    "ArrayAssign",
    "Case",
    "Cmd",
    "FuncDef",
    "Group",
    "Heredoc",
    "If",
    "Loop",
    "Node",
    "State",
    "Walker",
    "Word",
    "expand_word",
    "parse_script",
    "tokenize",
]

MAX_STATES = 128
_MAX_DEPTH = 60
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?=)")
_KEYWORDS_END = {"then", "fi", "do", "done", "esac", "elif", "else", "}", "in"}


# ------------------------------------------------------------------------ tokens


@dataclass(frozen=True)
class Word:
    """One shell word, raw (quotes and expansions kept), with its line."""

    raw: str
    line: int


@dataclass(frozen=True)
class ArrayAssign:
    """``NAME=( items )`` or ``NAME+=( items )``."""

    name: str
    append: bool
    items: tuple[Word, ...]
    line: int


@dataclass(frozen=True)
class Heredoc:
    """A here-document body attached to a command (``expand`` when the delimiter is unquoted)."""

    body: str
    expand: bool
    line: int  # first body line


@dataclass(frozen=True)
class _Tok:
    kind: str  # "word", "op", "nl", "array", "heredoc", "redir"
    text: str
    line: int
    array: ArrayAssign | None = None
    heredoc: Heredoc | None = None


def _skip_quoted(text: str, i: int, quote: str) -> int:
    """Index just past the closing ``quote`` starting at ``text[i] == quote``."""
    n = len(text)
    j = i + 1
    if quote == "'":
        k = text.find("'", j)
        return n if k < 0 else k + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == quote:
            return j + 1
        if quote == '"' and c == "$" and j + 1 < n and text[j + 1] in "({":
            j = _skip_dollar(text, j)
            continue
        if quote == '"' and c == "`":
            j = _skip_quoted(text, j, "`")
            continue
        j += 1
    return n


def _skip_nested(text: str, i: int) -> int | None:
    """Index just past a quoted string or ``$(...)``/``${...}`` starting at ``text[i]``; None if none does."""
    c = text[i]
    if c in "'\"`":
        return _skip_quoted(text, i, c)
    if c == "$" and i + 1 < len(text) and text[i + 1] in "({":
        return _skip_dollar(text, i)
    return None


def _skip_dollar(text: str, i: int) -> int:
    """Index just past ``$(...)``, ``$((...))`` or ``${...}`` starting at ``text[i] == '$'``."""
    n = len(text)
    open_c = text[i + 1]
    close_c = ")" if open_c == "(" else "}"
    depth = 0
    j = i + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c in "'\"":
            j = _skip_quoted(text, j, c)
            continue
        if c == "`":
            j = _skip_quoted(text, j, "`")
            continue
        if c == "$" and j + 1 < n and text[j + 1] in "({":
            j = _skip_dollar(text, j)
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
        elif c == "#" and open_c == "(" and (j == 0 or text[j - 1] in " \t\n"):
            k = text.find("\n", j)
            j = n if k < 0 else k
            continue
        j += 1
    return n


_OPS = ("&&", "||", ";;", ";&", "|&", ";", "&", "|", "(", ")")


def tokenize(text: str) -> list[_Tok]:
    """Split a script into tokens (never raises; malformed input gives odd tokens)."""
    toks: list[_Tok] = []
    n = len(text)
    i = 0
    line = 1
    pending: list[tuple[str, bool, bool]] = []  # heredoc (delimiter, strip_tabs, expand)
    at_word_start = True
    while i < n:
        c = text[i]
        if c in " \t\r":
            i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            line += 1
            continue
        if c == "\n":
            toks.append(_Tok("nl", "\n", line))
            line += 1
            i += 1
            for delim, strip_tabs, expand in pending:
                body_lines: list[str] = []
                start = line
                while i < n:
                    k = text.find("\n", i)
                    raw_line = text[i:] if k < 0 else text[i:k]
                    i = n if k < 0 else k + 1
                    line += 1
                    check = raw_line.lstrip("\t") if strip_tabs else raw_line
                    if check.rstrip("\r") == delim:
                        break
                    body_lines.append(raw_line)
                toks.append(_Tok("heredoc", "", start, heredoc=Heredoc("\n".join(body_lines), expand, start)))
            pending = []
            continue
        if c == "#":
            k = text.find("\n", i)
            i = n if k < 0 else k
            continue
        if c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            j = i + 2
            strip_tabs = False
            if j < n and text[j] == "-":
                strip_tabs = True
                j += 1
            while j < n and text[j] in " \t":
                j += 1
            k = j
            while k < n and text[k] not in " \t\n;&|<>()":
                if text[k] in "'\"":
                    k = _skip_quoted(text, k, text[k])
                else:
                    k += 1
            raw = text[j:k]
            expand = not any(q in raw for q in "'\"\\")
            delim = raw.replace("'", "").replace('"', "").replace("\\", "")
            if delim:
                pending.append((delim, strip_tabs, expand))
            toks.append(_Tok("redir", text[i:k], line))
            i = k
            continue
        if c in "<>" or (c.isdigit() and i + 1 < n and text[i + 1] in "<>" and at_word_start):
            j = i
            while j < n and text[j] in "0123456789<>&|!":
                j += 1
            while j < n and text[j] in " \t":
                j += 1
            # the redirection target word
            k = j
            while k < n and text[k] not in " \t\n;&|<>()":
                if text[k] in "'\"":
                    k = _skip_quoted(text, k, text[k])
                elif text[k] == "$" and k + 1 < n and text[k + 1] in "({":
                    k = _skip_dollar(text, k)
                else:
                    k += 1
            toks.append(_Tok("redir", text[i:k], line))
            i = max(k, i + 1)
            continue
        op = next((o for o in _OPS if text.startswith(o, i)), None)
        if op is not None:
            toks.append(_Tok("op", op, line))
            i += len(op)
            continue
        # a word
        start = i
        start_line = line
        while i < n:
            c = text[i]
            if c in " \t\r\n;&|<>()":
                break
            if c == "\\":
                if i + 1 < n and text[i + 1] == "\n":
                    line += 1
                i += 2
                continue
            end = _skip_nested(text, i)
            if end is not None:
                line += text.count("\n", i, end)
                i = end
                continue
            i += 1
        raw = text[start:i]
        m = _ASSIGN.match(raw)
        if m and raw == m.group(0) and i < n and text[i] == "(":
            # NAME=( ... ): collect items up to the matching ')'
            depth = 1
            j = i + 1
            items: list[Word] = []
            item_start = None
            item_line = line
            while j < n and depth > 0:
                c = text[j]
                if c == "\\" and j + 1 < n and text[j + 1] == "\n":
                    line += 1
                    j += 2
                    continue
                if item_start is None:
                    if c in " \t\r":
                        j += 1
                        continue
                    if c == "\n":
                        line += 1
                        j += 1
                        continue
                    if c == "#":
                        k = text.find("\n", j)
                        j = n if k < 0 else k
                        continue
                    if c == ")":
                        depth -= 1
                        j += 1
                        continue
                    item_start = j
                    item_line = line
                if c in " \t\r\n)":
                    items.append(Word(text[item_start:j], item_line))
                    item_start = None
                    continue
                end = _skip_nested(text, j)
                if end is not None:
                    line += text.count("\n", j, end)
                    j = end
                    continue
                if c == "\\":
                    j += 2
                    continue
                j += 1
            if item_start is not None:
                items.append(Word(text[item_start:j], item_line))
            arr = ArrayAssign(m.group(1), m.group(2) == "+=", tuple(items), start_line)
            toks.append(_Tok("array", raw, start_line, array=arr))
            i = j
            at_word_start = True
            continue
        if raw:
            toks.append(_Tok("word", raw, start_line))
        else:  # never loop forever on an unexpected character
            i += 1
    return toks


# ------------------------------------------------------------------------ syntax


@dataclass
class Cmd:
    """A simple command: leading assignments, words, here-documents."""

    assigns: list[tuple[str, bool, Word | ArrayAssign]]
    words: list[Word]
    heredocs: list[Heredoc]
    line: int


@dataclass
class If:
    branches: list[tuple[list[Node], list[Node]]]
    orelse: list[Node] | None
    line: int


@dataclass
class Case:
    subject: Word | None
    arms: list[tuple[list[Word], list[Node]]]
    line: int


@dataclass
class Loop:
    body: list[Node]
    line: int


@dataclass
class FuncDef:
    name: str
    body: list[Node]
    line: int


@dataclass
class Group:
    body: list[Node]
    line: int


@dataclass
class AndOr:
    items: list[Node]
    ops: list[str]
    line: int


Node = Cmd | If | Case | Loop | FuncDef | Group | AndOr


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.i = 0
        self.depth = 0

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def skip_seps(self) -> None:
        while (t := self.peek()) is not None and (t.kind == "nl" or (t.kind == "op" and t.text in (";", "&"))):
            self.i += 1

    def at_word(self, *words: str) -> bool:
        t = self.peek()
        return t is not None and t.kind == "word" and t.text in words

    def parse_list(self, stop_words: Sequence[str] = (), stop_ops: Sequence[str] = ()) -> list[Node]:
        nodes: list[Node] = []
        self.depth += 1
        try:
            while True:
                self.skip_seps()
                t = self.peek()
                if t is None:
                    break
                if t.kind == "word" and t.text in stop_words:
                    break
                if t.kind == "op" and t.text in stop_ops:
                    break
                if t.kind == "heredoc":  # stray body
                    self.i += 1
                    continue
                if t.kind == "word" and t.text in _KEYWORDS_END:
                    self.i += 1  # unbalanced keyword: skip it
                    continue
                if t.kind == "op" and t.text in (")", ";;", ";&", "||", "&&", "|", "|&"):
                    self.i += 1
                    continue
                before = self.i
                node = self.parse_and_or()
                if node is not None:
                    nodes.append(node)
                if self.i == before:
                    self.i += 1
        finally:
            self.depth -= 1
        return nodes

    def parse_and_or(self) -> Node | None:
        first = self.parse_command()
        items = [first] if first is not None else []
        ops: list[str] = []
        while (t := self.peek()) is not None and t.kind == "op" and t.text in ("&&", "||", "|", "|&"):
            self.i += 1
            while (t2 := self.peek()) is not None and t2.kind == "nl":
                self.i += 1
            nxt = self.parse_command()
            if nxt is not None:
                items.append(nxt)
                ops.append(t.text)
        if not items:
            return None
        if len(items) == 1:
            return items[0]
        return AndOr(items, ops, _line(items[0]))

    def parse_command(self) -> Node | None:
        t = self.peek()
        if t is None:
            return None
        if self.depth > _MAX_DEPTH:
            self.i += 1
            return None
        if t.kind == "word":
            if t.text == "if":
                return self.parse_if()
            if t.text == "case":
                return self.parse_case()
            if t.text in ("for", "while", "until", "select"):
                return self.parse_loop()
            if t.text == "function":
                self.i += 1
                name_tok = self.peek()
                name = name_tok.text if name_tok is not None and name_tok.kind == "word" else "_"
                if name_tok is not None:
                    self.i += 1
                if self._at_op("("):
                    self.i += 1
                    if self._at_op(")"):
                        self.i += 1
                return self.parse_funcbody(name.split("(")[0], t.line)
            if t.text == "{":
                self.i += 1
                body = self.parse_list(stop_words=("}",))
                if self.at_word("}"):
                    self.i += 1
                return Group(body, t.line)
            # NAME ( ) { ... }
            if (_NAME.fullmatch(t.text) and self.i + 2 < len(self.toks)
                    and self.toks[self.i + 1].kind == "op" and self.toks[self.i + 1].text == "("
                    and self.toks[self.i + 2].kind == "op" and self.toks[self.i + 2].text == ")"):
                self.i += 3
                return self.parse_funcbody(t.text, t.line)
        if t.kind == "op" and t.text == "(":
            self.i += 1
            body = self.parse_list(stop_ops=(")",))
            if self._at_op(")"):
                self.i += 1
            return Group(body, t.line)
        return self.parse_simple()

    def _at_op(self, op: str) -> bool:
        t = self.peek()
        return t is not None and t.kind == "op" and t.text == op

    def parse_funcbody(self, name: str, line: int) -> Node:
        while (t := self.peek()) is not None and t.kind == "nl":
            self.i += 1
        body_node = self.parse_command()
        body = [body_node] if body_node is not None else []
        if len(body) == 1 and isinstance(body[0], Group):
            body = body[0].body
        return FuncDef(name, body, line)

    def parse_simple(self) -> Node | None:
        t0 = self.peek()
        if t0 is None:
            return None
        assigns: list[tuple[str, bool, Word | ArrayAssign]] = []
        words: list[Word] = []
        heredocs: list[Heredoc] = []
        while (t := self.peek()) is not None:
            if t.kind in ("nl",) or (t.kind == "op"):
                break
            self.i += 1
            if t.kind == "heredoc" and t.heredoc is not None:
                heredocs.append(t.heredoc)
            elif t.kind == "redir":
                continue
            elif t.kind == "array" and t.array is not None:
                if not words:
                    assigns.append((t.array.name, t.array.append, t.array))
                else:
                    words.append(Word(t.text + "(" + " ".join(w.raw for w in t.array.items) + ")", t.line))
            elif t.kind == "word":
                m = _ASSIGN.match(t.text)
                if m and not words:
                    assigns.append((m.group(1), m.group(2) == "+=", Word(t.text[m.end():], t.line)))
                else:
                    words.append(Word(t.text, t.line))
        # heredoc bodies arrive after the newline that ends the command
        while (t := self.peek()) is not None and t.kind == "nl" and self.i + 1 < len(self.toks) \
                and self.toks[self.i + 1].kind == "heredoc":
            self.i += 1
            while (t2 := self.peek()) is not None and t2.kind == "heredoc" and t2.heredoc is not None:
                heredocs.append(t2.heredoc)
                self.i += 1
        if not assigns and not words and not heredocs:
            return None
        return Cmd(assigns, words, heredocs, t0.line)

    def parse_if(self) -> Node:
        line = self.take().line
        branches: list[tuple[list[Node], list[Node]]] = []
        orelse: list[Node] | None = None
        cond = self.parse_list(stop_words=("then",))
        if self.at_word("then"):
            self.i += 1
        body = self.parse_list(stop_words=("elif", "else", "fi"))
        branches.append((cond, body))
        while True:
            if self.at_word("elif"):
                self.i += 1
                cond = self.parse_list(stop_words=("then",))
                if self.at_word("then"):
                    self.i += 1
                body = self.parse_list(stop_words=("elif", "else", "fi"))
                branches.append((cond, body))
                continue
            if self.at_word("else"):
                self.i += 1
                orelse = self.parse_list(stop_words=("fi",))
            if self.at_word("fi"):
                self.i += 1
            break
        return If(branches, orelse, line)

    def parse_case(self) -> Node:
        line = self.take().line
        subj_tok = self.peek()
        subject = None
        if subj_tok is not None and subj_tok.kind == "word":
            subject = Word(subj_tok.text, subj_tok.line)
            self.i += 1
        while (t := self.peek()) is not None and t.kind == "nl":
            self.i += 1
        if self.at_word("in"):
            self.i += 1
        arms: list[tuple[list[Word], list[Node]]] = []
        while True:
            self.skip_seps()
            t = self.peek()
            if t is None:
                break
            if t.kind == "word" and t.text == "esac":
                self.i += 1
                break
            if t.kind == "op" and t.text == "(":
                self.i += 1
            patterns: list[Word] = []
            while (t := self.peek()) is not None and not (t.kind == "op" and t.text == ")"):
                if t.kind == "word":
                    patterns.append(Word(t.text, t.line))
                elif t.kind == "nl" or (t.kind == "word" and t.text == "esac"):
                    break
                self.i += 1
            if self._at_op(")"):
                self.i += 1
            body = self.parse_list(stop_words=("esac",), stop_ops=(";;", ";&"))
            if (t := self.peek()) is not None and t.kind == "op" and t.text in (";;", ";&"):
                self.i += 1
            arms.append((patterns, body))
            if not patterns and not body:
                break
        return Case(subject, arms, line)

    def parse_loop(self) -> Node:
        line = self.take().line
        while (t := self.peek()) is not None and not (t.kind == "word" and t.text == "do"):
            if t.kind == "word" and t.text in ("done", "fi", "esac"):
                break
            self.i += 1
        if self.at_word("do"):
            self.i += 1
        body = self.parse_list(stop_words=("done",))
        if self.at_word("done"):
            self.i += 1
        return Loop(body, line)


def _line(node: Node) -> int:
    return node.line


def parse_script(text: str) -> list[Node]:
    """Parse a bash script into statements (tolerant: never raises on odd input)."""
    return _Parser(tokenize(text)).parse_list()


# ------------------------------------------------------------------------ values


Value = str | tuple[str, ...]


@dataclass
class State:
    """One path through the script: variable values and the assumptions that led here."""

    env: dict[str, Value] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    conds: tuple[str, ...] = ()
    done: bool = False
    notes: list[tuple[object, ...]] = field(default_factory=list)  # hashable records of the caller

    def fork(self, cond: str | None = None) -> State:
        return State(dict(self.env), set(self.exported), self.conds + ((cond,) if cond else ()), self.done,
                     list(self.notes))

    def key(self) -> tuple[object, ...]:
        return (tuple(sorted(self.env.items())), self.done, tuple(self.notes))


_UNKNOWN_MARK = "\x00"


def _placeholder(name: str) -> str:
    return f"{_UNKNOWN_MARK}${name}{_UNKNOWN_MARK}"


#: ``${X:-default}`` of a variable the file never sets: bash uses the caller's value
#: when there is one, so the default is only the likely reading. It is kept as a value
#: (between these marks) but makes a condition undecidable.
_SOFT_OPEN = "\x02"
_SOFT_CLOSE = "\x03"


def has_unknown(text: str) -> bool:
    """Whether an expanded text still holds an unknown part."""
    return _UNKNOWN_MARK in text


_SOFT_SEP = "\x01"
_SOFT_RE = re.compile(f"{_SOFT_OPEN}([^{_SOFT_SEP}]*){_SOFT_SEP}([^{_SOFT_CLOSE}]*){_SOFT_CLOSE}")


def _soft(name: str, default: str) -> str:
    return f"{_SOFT_OPEN}{name}{_SOFT_SEP}{harden(default)}{_SOFT_CLOSE}"


def is_soft(text: str) -> bool:
    """Whether an expanded text holds a default of a variable the file never sets."""
    return _SOFT_OPEN in text


def harden(text: str) -> str:
    """The text with soft-default marks removed (the default taken as the value)."""
    return _SOFT_RE.sub(r"\2", text) if _SOFT_OPEN in text else text


def unknown_names(text: str) -> list[str]:
    """The variables (``$NAME``) left unknown in an expanded text."""
    return re.findall(rf"{_UNKNOWN_MARK}\$([^{_UNKNOWN_MARK}]*){_UNKNOWN_MARK}", text)


def show(text: str) -> str:
    """An expanded text for messages (unknown parts as ``$NAME``, defaults as ``${NAME:-x}``)."""
    text = _SOFT_RE.sub(lambda m: "${" + m.group(1) + ":-" + m.group(2) + "}", text)
    return re.sub(rf"{_UNKNOWN_MARK}\$([^{_UNKNOWN_MARK}]*){_UNKNOWN_MARK}", r"$\1", text)


def _strip_glob(pattern: str, value: str, mode: str) -> str:
    """``${v#p}`` ``${v##p}`` ``${v%p}`` ``${v%%p}``."""
    n = len(value)
    if mode in ("#", "##"):
        rng = range(0, n + 1) if mode == "#" else range(n, -1, -1)
        for i in rng:
            if fnmatch.fnmatchcase(value[:i], pattern):
                return value[i:]
        return value
    rng = range(n, -1, -1) if mode == "%" else range(0, n + 1)
    for i in rng:
        if fnmatch.fnmatchcase(value[i:], pattern):
            return value[:i]
    return value


class Expander:
    """Expand words against one :class:`State` (unknown variables become placeholders)."""

    def __init__(self, state: State, functions: dict[str, list[Node]] | None = None) -> None:
        self.state = state
        self.depth = 0

    def var(self, name: str) -> str:
        v = self.state.env.get(name)
        if v is None:
            return _placeholder(name)
        if isinstance(v, tuple):
            return v[0] if v else ""
        return v

    def param(self, inner: str) -> list[str] | str:
        """``${...}`` contents."""
        if inner.startswith("#"):
            name = inner[1:]
            v = self.state.env.get(name.split("[")[0])
            if v is None:
                return _placeholder("#" + name)
            return str(len(v)) if isinstance(v, tuple) and "[" in name else str(len(v if isinstance(v, str) else v[0] if v else ""))
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(\[[^\]]*\])?", inner)
        if not m:
            return _placeholder(inner)
        name, index = m.group(1), m.group(2)
        rest = inner[m.end():]
        raw = self.state.env.get(name)
        if index in ("[@]", "[*]"):
            if raw is None:
                return _placeholder(name + index)
            return list(raw) if isinstance(raw, tuple) else [raw]
        if index:
            if raw is None:
                return _placeholder(name + index)
            try:
                idx = int(index[1:-1])
            except ValueError:
                return _placeholder(name + index)
            seq = raw if isinstance(raw, tuple) else (raw,)
            return seq[idx] if 0 <= idx < len(seq) else ""
        value: str | None
        if raw is None:
            value = None
        elif isinstance(raw, tuple):
            value = raw[0] if raw else ""
        else:
            value = raw
        if not rest:
            return value if value is not None else _placeholder(name)
        for op in (":-", ":=", ":+", ":?", "-", "=", "+", "?"):
            if rest.startswith(op):
                arg = rest[len(op):]
                empty_counts = op.startswith(":")
                is_set = value is not None and (value != "" or not empty_counts)
                if op.endswith("-") or op.endswith("="):
                    if is_set:
                        return value  # type: ignore[return-value]
                    out = self.expand_text(arg, quoted=False)
                    if raw is None and name not in self.state.env:
                        out = _soft(name, out)  # the caller may set it
                    if op.endswith("="):
                        self.state.env[name] = out
                    return out
                if op.endswith("+"):
                    if value is None:
                        return _placeholder(name)
                    return self.expand_text(arg, quoted=False) if is_set else ""
                return value if value is not None else _placeholder(name)
        for op in ("##", "#", "%%", "%"):
            if rest.startswith(op):
                if value is None:
                    return _placeholder(name)
                pat = harden(self.expand_text(rest[len(op):], quoted=False))
                if has_unknown(pat) or has_unknown(value):
                    return _placeholder(name)
                if is_soft(value):  # a default: keep it marked as one
                    return _soft(name, _strip_glob(pat, harden(value), op))
                return _strip_glob(pat, value, op)
        if rest.startswith("/") or rest.startswith(":"):
            return _placeholder(name)
        return _placeholder(name)

    def command(self, inner: str) -> str:
        """``$( ... )``: a few commands are evaluated statically, the rest are unknown."""
        self.depth += 1
        try:
            if self.depth > 8:
                return _placeholder("(...)")
            toks = [t for t in tokenize(inner) if t.kind == "word"]
            if not toks:
                return ""
            words: list[str] = []
            for t in toks:
                words.extend(self.expand_word_list(t.text))
            if not words:
                return ""
            if any(is_soft(w) for w in words):  # computed from defaults: the result is one too
                out = self._command([harden(w) for w in words])
                return out if has_unknown(out) else _soft(words[0], out)
            return self._command(words)
        finally:
            self.depth -= 1

    def _command(self, words: list[str]) -> str:
        cmd = words[0]
        if cmd == "printf" and len(words) >= 2:
            args = words[1:]
            if args and args[0] == "-v":
                return _placeholder("(printf -v)")
            return _printf(args[0], args[1:])
        if cmd == "echo":
            args = [w for w in words[1:] if w not in ("-n", "-e")]
            return " ".join(args)
        if cmd == "awk" and len(words) == 2:
            return _awk_begin_print(words[1])
        if cmd in ("dirname", "basename") and len(words) == 2 and not has_unknown(words[1]):
            p = words[1].rstrip("/") or "/"
            return (p.rsplit("/", 1)[0] or "/") if cmd == "dirname" and "/" in p else (
                "." if cmd == "dirname" else p.rsplit("/", 1)[-1])
        return _placeholder("(" + " ".join(show(w) for w in words)[:60] + ")")

    def arith(self, expr: str) -> str:
        text = self.expand_text(expr, quoted=False, bare_names=True)
        if has_unknown(text):
            return _placeholder("((" + show(text) + "))")
        value = safe_arith(text)
        if value is None:
            return _placeholder("((" + text + "))")
        return str(int(value)) if float(value).is_integer() else str(value)

    def expand_text(self, raw: str, *, quoted: bool, bare_names: bool = False) -> str:
        """Expand ``raw`` into one string (quote removal, parameter and command expansion)."""
        parts = self._expand(raw, quoted=quoted, bare_names=bare_names)
        return "".join(p if isinstance(p, str) else " ".join(p) for p, _ in parts)

    def expand_word_list(self, raw: str) -> list[str]:
        """Expand one word into the words bash would produce (arrays and word splitting)."""
        parts = self._expand(raw, quoted=False)
        words: list[str] = [""]
        started = False
        for piece, quoted in parts:
            if isinstance(piece, list):
                if not piece:
                    started = True
                    continue
                words[-1] += piece[0]
                for extra in piece[1:]:
                    words.append(extra)
                started = True
                continue
            if quoted:
                words[-1] += piece
                started = True
                continue
            chunks = re.split(r"[ \t\n]+", piece)
            for j, ch in enumerate(chunks):
                if j > 0:
                    if words[-1] or started:
                        words.append("")
                        started = False
                words[-1] += ch
                if ch:
                    started = True
        return [w for w in words if w != "" or started] or ([] if not raw else [""] if raw in ('""', "''") else [])

    def _expand(self, raw: str, *, quoted: bool, bare_names: bool = False) -> list[tuple[str | list[str], bool]]:
        out: list[tuple[str | list[str], bool]] = []
        i = 0
        n = len(raw)
        buf: list[str] = []

        def flush(q: bool) -> None:
            if buf:
                out.append(("".join(buf), q))
                buf.clear()

        in_dq = False
        while i < n:
            c = raw[i]
            if c == "'" and not in_dq and not quoted:
                j = raw.find("'", i + 1)
                j = n if j < 0 else j
                flush(in_dq or quoted)
                out.append((raw[i + 1:j], True))
                i = j + 1
                continue
            if c == '"' and not quoted:
                flush(in_dq)
                in_dq = not in_dq
                i += 1
                continue
            if c == "\\":
                if i + 1 < n:
                    nxt = raw[i + 1]
                    if in_dq or quoted:
                        if nxt in '$`"\\\n':
                            buf.append(nxt)
                        else:
                            buf.append(c + nxt)
                    else:
                        buf.append(nxt)
                    i += 2
                else:
                    i += 1
                continue
            if c == "$" and i + 1 < n:
                nxt = raw[i + 1]
                if raw.startswith("$((", i):
                    j = _skip_dollar(raw, i)
                    flush(in_dq or quoted)
                    out.append((self.arith(raw[i + 3:j - 2]), True))
                    i = j
                    continue
                if nxt == "(":
                    j = _skip_dollar(raw, i)
                    flush(in_dq or quoted)
                    out.append((self.command(raw[i + 2:j - 1]), in_dq or quoted))
                    i = j
                    continue
                if nxt == "{":
                    j = _skip_dollar(raw, i)
                    flush(in_dq or quoted)
                    val = self.param(raw[i + 2:j - 1])
                    out.append((val, in_dq or quoted) if isinstance(val, str) else (val, True))
                    i = j
                    continue
                if nxt == "'" and not in_dq:
                    j = raw.find("'", i + 2)
                    j = n if j < 0 else j
                    flush(in_dq or quoted)
                    out.append((raw[i + 2:j].encode().decode("unicode_escape", errors="replace"), True))
                    i = j + 1
                    continue
                m = _NAME.match(raw, i + 1)
                if m:
                    flush(in_dq or quoted)
                    out.append((self.var(m.group(0)), in_dq or quoted))
                    i = m.end()
                    continue
                if nxt in "0123456789@*#?$!-":
                    flush(in_dq or quoted)
                    out.append((_placeholder(nxt), in_dq or quoted))
                    i += 2
                    continue
            if c == "`":
                j = _skip_quoted(raw, i, "`")
                flush(in_dq or quoted)
                out.append((self.command(raw[i + 1:j - 1]), in_dq or quoted))
                i = j
                continue
            if bare_names and (m := _NAME.match(raw, i)) and (i == 0 or not raw[i - 1].isalnum()):
                name = m.group(0)
                v = self.state.env.get(name)
                buf.append(v if isinstance(v, str) else _placeholder(name))
                i = m.end()
                continue
            buf.append(c)
            i += 1
        flush(in_dq or quoted)
        return out


def expand_word(word: str, state: State) -> str:
    """Expand one raw word into a single string against ``state``."""
    return Expander(state).expand_text(word, quoted=False)


# ------------------------------------------------------------------ safe arithmetic

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}


def safe_arith(expr: str, *, integer: bool = True) -> float | None:
    """Evaluate ``+ - * / % ( )`` on number literals only (None if anything else appears)."""
    text = expr.strip()
    if not text or len(text) > 200 or not re.fullmatch(r"[0-9.eE+\-*/%() \t]+", text):
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if integer and isinstance(node.op, ast.Div):
                if b == 0:
                    raise ZeroDivisionError
                return float(int(a / b))
            return _BINOPS[type(node.op)](a, b)
        raise ValueError("not arithmetic")

    try:
        value = ev(tree)
    except (ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    return value if math.isfinite(value) else None


def _awk_begin_print(program: str) -> str:
    """``awk "BEGIN{print EXPR}"`` with numeric EXPR, printed like awk's ``%.6g``."""
    m = re.fullmatch(r"\s*BEGIN\s*\{\s*print\s+(.*?);?\s*\}\s*", program, re.S)
    if not m or has_unknown(m.group(1)):
        return _placeholder("(awk)")
    value = safe_arith(m.group(1), integer=False)
    if value is None:
        return _placeholder("(awk)")
    if float(value).is_integer() and abs(value) < 1e16:
        return str(int(value))
    return f"{value:.6g}"


_PRINTF = re.compile(r"%([-+ 0#]*)(\d+)?(?:\.(\d+))?([sdifgeExXc%])")


def _printf(fmt: str, args: Sequence[str]) -> str:
    """bash ``printf`` for ``%s %d %i %f %g %e %x %c %%`` and ``\\n`` escapes."""
    out: list[str] = []
    args = list(args)
    idx = 0
    pos = 0
    for m in _PRINTF.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group(4)
        if conv == "%":
            out.append("%")
            continue
        arg = args[idx] if idx < len(args) else ""
        idx += 1
        if has_unknown(arg):
            out.append(arg)
            continue
        spec = "%" + m.group(1) + (m.group(2) or "") + ("." + m.group(3) if m.group(3) is not None else "")
        try:
            if conv == "s":
                out.append((spec + "s") % arg)
            elif conv == "c":
                out.append(arg[:1])
            elif conv in "dixX":
                out.append((spec + conv.replace("i", "d")) % int(float(arg or 0)))
            else:
                out.append((spec + conv) % float(arg or 0))
        except (ValueError, TypeError, OverflowError):
            out.append(_placeholder("(printf)"))
    out.append(fmt[pos:])
    return "".join(out).replace("\\n", "\n").replace("\\t", "\t")


# ---------------------------------------------------------------------- conditions


def _test(words: list[str]) -> bool | None:
    """Evaluate ``[ ... ]`` / ``[[ ... ]]`` / ``test ...`` words (None when undecidable)."""
    if not words:
        return None
    if any(is_soft(w) for w in words):
        return None
    # split on -o / || (lowest), then -a / && , then !
    for sep in ("-o", "||"):
        if sep in words:
            i = words.index(sep)
            left, right = _test(words[:i]), _test(words[i + 1:])
            if left is True or right is True:
                return True
            if left is False and right is False:
                return False
            return None
    for sep in ("-a", "&&"):
        if sep in words:
            i = words.index(sep)
            left, right = _test(words[:i]), _test(words[i + 1:])
            if left is False or right is False:
                return False
            if left is True and right is True:
                return True
            return None
    if words[0] == "!":
        r = _test(words[1:])
        return None if r is None else not r
    if words[0] == "(" and words[-1] == ")":
        return _test(words[1:-1])
    if len(words) == 1:
        return None if has_unknown(words[0]) else words[0] != ""
    if len(words) == 2:
        op, a = words
        if has_unknown(a):
            return None
        if op == "-n":
            return a != ""
        if op == "-z":
            return a == ""
        return None
    if len(words) == 3:
        a, op, b = words
        if has_unknown(a) or has_unknown(b):
            return None
        if op in ("=", "=="):
            return fnmatch.fnmatchcase(a, b)
        if op == "!=":
            return not fnmatch.fnmatchcase(a, b)
        if op == "=~":
            try:
                return re.search(b, a) is not None
            except re.error:
                return None
        nums = {"-eq": operator.eq, "-ne": operator.ne, "-gt": operator.gt, "-ge": operator.ge,
                "-lt": operator.lt, "-le": operator.le}
        if op in nums:
            try:
                return nums[op](int(a), int(b))
            except ValueError:
                return None
        if op in ("<", ">"):
            return (a < b) if op == "<" else (a > b)
    return None


def _refinements(words: list[str], raw_words: list[str], truth: bool) -> list[tuple[str, str]]:
    """Variables a condition pins when assumed ``truth``: ``[ "$X" = lit ]`` true binds X."""
    if truth and len(raw_words) == 3 and raw_words[1] in ("=", "==", "-eq"):
        m = re.fullmatch(r'"?\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::?-[^}]*)?\}?"?', raw_words[0])
        lit = harden(words[2])
        if m and not has_unknown(lit) and not any(ch in lit for ch in "*?["):
            return [(m.group(1), lit)]
    if not truth and len(raw_words) == 3 and raw_words[1] == "!=":
        m = re.fullmatch(r'"?\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::?-[^}]*)?\}?"?', raw_words[0])
        lit = harden(words[2])
        if m and not has_unknown(lit) and not any(ch in lit for ch in "*?["):
            return [(m.group(1), lit)]
    return []


# --------------------------------------------------------------------------- walker

Visitor = Callable[[Cmd, State, "Walker"], None]


class Walker:
    """Walk statements over every feasible path, calling ``visit`` on each simple command.

    ``assume`` fixes variables the caller wants decided (e.g. ``EVAL_ONLY=false``)
    without making them known values for messages.
    """

    def __init__(self, nodes: list[Node], visit: Visitor, *, assume: dict[str, str] | None = None,
                 max_states: int = MAX_STATES, relevant: Callable[[Node], bool] | None = None,
                 relevant_vars: set[str] | None = None) -> None:
        self.nodes = nodes
        self.visit = visit
        self.assume = dict(assume or {})
        self.max_states = max_states
        self.relevant = relevant
        self.relevant_vars = relevant_vars
        self.functions: dict[str, list[Node]] = {}
        self.truncated = False
        self.call_depth = 0

    def run(self, initial: State | None = None) -> list[State]:
        state = initial or State()
        for k, v in self.assume.items():
            state.env.setdefault(k, v)
        return self.walk(self.nodes, [state])

    # -- helpers
    def _key(self, s: State) -> tuple[object, ...]:
        if self.relevant_vars is None:
            return s.key()
        env = tuple(sorted((k, v) for k, v in s.env.items() if k in self.relevant_vars))
        return (env, s.done, tuple(s.notes))

    def _cap(self, states: list[State]) -> list[State]:
        seen: dict[tuple[object, ...], State] = {}
        for s in states:
            seen.setdefault(self._key(s), s)
        out = list(seen.values())
        if len(out) > self.max_states:
            self.truncated = True
            out = out[: self.max_states]
        return out

    def walk(self, nodes: Iterable[Node], states: list[State]) -> list[State]:
        for node in nodes:
            live = [s for s in states if not s.done]
            dead = [s for s in states if s.done]
            if not live:
                return states
            live = self.exec(node, live)
            states = self._cap(dead + live)
        return states

    def exec(self, node: Node, states: list[State]) -> list[State]:
        if self.relevant is not None and isinstance(node, (If, Case, Loop, AndOr)) and not self.relevant(node):
            return states  # changes nothing the caller looks at: not worth a fork
        if isinstance(node, Cmd):
            out: list[State] = []
            for s in states:
                out.extend(self.exec_cmd(node, s))
            return out
        if isinstance(node, AndOr):
            return self.exec_andor(node, states)
        if isinstance(node, If):
            return self.exec_if(node, states)
        if isinstance(node, Case):
            return self.exec_case(node, states)
        if isinstance(node, Loop):
            # the body may run (once, for our purposes) or not at all
            ran = self.walk(node.body, [s.fork() for s in states])
            return self._cap(states + ran)
        if isinstance(node, FuncDef):
            self.functions[node.name] = node.body
            return states
        if isinstance(node, Group):
            return self.walk(node.body, states)
        return states

    def exec_andor(self, node: AndOr, states: list[State]) -> list[State]:
        # a && b: b runs when a succeeds; a || b: b runs when a fails. Commands other
        # than tests always "may" succeed, so the assignments of b are one more path.
        result = self.exec(node.items[0], states)
        for op, item in zip(node.ops, node.items[1:], strict=False):
            if op in ("|", "|&"):
                result = self.exec(item, result)
                continue
            truth = _cond_value(node.items[0], result[0]) if len(result) == 1 and not result[0].done else None
            if truth is None or (truth if op == "&&" else not truth):
                ran = self.exec(item, [s.fork() for s in result if not s.done])
                if truth is None and not _is_test(item):
                    result = self._cap(result + ran)
                else:
                    result = self._cap([s for s in result if s.done] + ran)
        return result

    def exec_if(self, node: If, states: list[State]) -> list[State]:
        out: list[State] = []
        for s in states:
            pending = [s]
            for cond, body in node.branches:
                nxt: list[State] = []
                for p in pending:
                    p2 = self.walk(cond, [p])[0] if cond and not _only_tests(cond) else p
                    truth, text, refine_true, refine_false = _decide(cond, p2)
                    if truth is True:
                        out.extend(self.walk(body, [p2]))
                    elif truth is False:
                        nxt.append(p2)
                    else:
                        yes = p2.fork(text)
                        for k, v in refine_true:
                            yes.env[k] = v
                        out.extend(self.walk(body, [yes]))
                        no = p2.fork(f"not ({text})")
                        for k, v in refine_false:
                            no.env[k] = v
                        nxt.append(no)
                pending = nxt
            if node.orelse is not None:
                out.extend(self.walk(node.orelse, pending))
            else:
                out.extend(pending)
        return self._cap(out)

    def exec_case(self, node: Case, states: list[State]) -> list[State]:
        out: list[State] = []
        for s in states:
            subject = Expander(s).expand_text(node.subject.raw, quoted=False) if node.subject else ""
            matched_any = False
            undecided: list[State] = []
            rest = [s]
            for patterns, body in node.arms:
                pats = [Expander(s).expand_text(p.raw, quoted=False) for p in patterns]
                if not has_unknown(subject) and not is_soft(subject) and not any(has_unknown(p) for p in pats):
                    if any(fnmatch.fnmatchcase(subject, p) for p in pats):
                        out.extend(self.walk(body, rest))
                        matched_any = True
                        rest = []
                        break
                    continue
                text = f"{show(subject)} matches {'|'.join(show(p) for p in pats)}"
                for r in rest:
                    arm = r.fork(text)
                    for name, value in _case_bindings(node.subject.raw if node.subject else "", pats):
                        arm.env[name] = value
                    undecided.extend(self.walk(body, [arm]))
                rest = [r.fork(f"not ({text})") for r in rest]
            out.extend(undecided)
            if not matched_any:
                out.extend(rest)
        return self._cap(out)

    def exec_cmd(self, cmd: Cmd, state: State) -> list[State]:
        ex = Expander(state)
        words_raw = [w.raw for w in cmd.words]
        # assignments (before the command name, or the whole statement)
        temp_env = not words_raw or words_raw[0] in ("export", "local", "declare", "typeset", "readonly")
        for name, append, value in cmd.assigns:
            if isinstance(value, ArrayAssign):
                items: list[str] = []
                for w in value.items:
                    items.extend(ex.expand_word_list(w.raw))
                old = state.env.get(name)
                if append and old is not None:
                    base = old if isinstance(old, tuple) else (old,)
                    state.env[name] = tuple(base) + tuple(items)
                else:
                    state.env[name] = tuple(items)
            else:
                text = ex.expand_text(value.raw, quoted=False)
                if append:
                    old = state.env.get(name)
                    if isinstance(old, tuple):
                        state.env[name] = (*old, text)
                    else:
                        state.env[name] = (old if old is not None else _placeholder(name)) + text
                else:
                    state.env[name] = text
            if not temp_env and words_raw:
                state.exported.add(name)
        self.visit(cmd, state, self)
        if not words_raw:
            return [state]
        head = ex.expand_text(words_raw[0], quoted=False)
        if head in ("export", "local", "declare", "typeset", "readonly"):
            for raw in words_raw[1:]:
                if raw.startswith("-"):
                    continue
                m = _ASSIGN.match(raw)
                if m:
                    state.env[m.group(1)] = ex.expand_text(raw[m.end():], quoted=False)
                    if head == "export" or "x" in "".join(words_raw[1:2]):
                        state.exported.add(m.group(1))
                elif _NAME.fullmatch(raw) and head == "export":
                    state.exported.add(raw)
            return [state]
        if head == "unset":
            for raw in words_raw[1:]:
                state.env.pop(raw, None)
            return [state]
        if head == ":" and len(words_raw) > 1:
            for raw in words_raw[1:]:
                ex.expand_text(raw, quoted=False)  # ${X:=default}
            return [state]
        if head in ("exit", "exec") or (head == "return" and self.call_depth == 0):
            if head != "exec" or not words_raw[1:]:
                state.done = True
            return [state]
        if head in self.functions and self.call_depth < 8:
            self.call_depth += 1
            try:
                return self.walk(self.functions[head], [state])
            finally:
                self.call_depth -= 1
        return [state]


def _is_test(node: Node) -> bool:
    return isinstance(node, Cmd) and bool(node.words) and node.words[0].raw in ("[", "[[", "test")


def _only_tests(nodes: list[Node]) -> bool:
    return all(_is_test(n) or (isinstance(n, AndOr) and all(_is_test(i) or isinstance(i, AndOr) for i in n.items))
               for n in nodes)


def _test_words(cmd: Cmd, state: State) -> tuple[list[str], list[str]] | None:
    if not cmd.words or cmd.words[0].raw not in ("[", "[[", "test"):
        return None
    raw = [w.raw for w in cmd.words[1:]]
    if raw and raw[-1] in ("]", "]]"):
        raw = raw[:-1]
    ex = Expander(state)
    return [ex.expand_text(r, quoted=False) for r in raw], raw


def _cond_value(node: Node, state: State) -> bool | None:
    truth, _, _, _ = _decide([node], state)
    return truth


def _decide(cond: list[Node], state: State) -> tuple[bool | None, str, list[tuple[str, str]], list[tuple[str, str]]]:
    """Truth of an if-condition (last command decides), its text, and what it binds."""
    if not cond:
        return None, "?", [], []
    node = cond[-1]
    if isinstance(node, AndOr) and all(op in ("&&", "||") for op in node.ops):
        vals = [_decide([i], state) for i in node.items]
        texts = [v[1] for v in vals]
        text = ""
        for i, v in enumerate(vals):
            text += (f" {node.ops[i - 1]} " if i else "") + v[1]
        # left-to-right evaluation of a && b || c
        acc = vals[0][0]
        for op, v in zip(node.ops, vals[1:], strict=False):
            if op == "&&":
                acc = False if acc is False or v[0] is False else (True if acc is True and v[0] is True else None)
            else:
                acc = True if acc is True or v[0] is True else (False if acc is False and v[0] is False else None)
        bind_true = vals[0][2] if all(op == "&&" for op in node.ops) else []
        if all(op == "&&" for op in node.ops):
            bind_true = [b for v in vals for b in v[2]]
        return acc, text or " ".join(texts), bind_true, []
    if isinstance(node, Cmd):
        negate = False
        cmd = node
        if cmd.words and cmd.words[0].raw == "!":
            negate = True
            cmd = Cmd(cmd.assigns, cmd.words[1:], cmd.heredocs, cmd.line)
        tw = _test_words(cmd, state)
        if tw is None:
            text = " ".join(show(Expander(state).expand_text(w.raw, quoted=False)) for w in cmd.words)[:80]
            return None, ("! " if negate else "") + text, [], []
        words, raw = tw
        truth = _test(words)
        text = " ".join(show(w) for w in words)
        if negate:
            truth = None if truth is None else not truth
            return truth, f"! {text}", _refinements(words, raw, False), _refinements(words, raw, True)
        return truth, text, _refinements(words, raw, True), _refinements(words, raw, False)
    if isinstance(node, Group):
        return _decide(node.body, state)
    return None, "?", [], []


def _case_bindings(subject_raw: str, patterns: list[str]) -> list[tuple[str, str]]:
    """``case "${A}:${B}" in *x*:1)`` binds ``B=1`` (parts without glob characters)."""
    if len(patterns) != 1:
        return []
    subj = subject_raw.strip('"')
    parts = re.split(r"(\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*)", subj)
    seps = [p for i, p in enumerate(parts) if i % 2 == 0]
    names = [re.sub(r"[${}]", "", p) for i, p in enumerate(parts) if i % 2 == 1]
    if not names or any(not s for s in seps[1:-1]):
        return []
    pat = patterns[0]
    if seps[0] and not pat.startswith(seps[0]):
        return []
    body = pat[len(seps[0]):] if seps[0] else pat
    if seps[-1]:
        if not body.endswith(seps[-1]):
            return []
        body = body[: len(body) - len(seps[-1])]
    pieces = [body]
    for sep in seps[1:-1]:
        last = pieces.pop()
        if sep not in last:
            return []
        a, b = last.split(sep, 1)
        pieces += [a, b]
    if len(pieces) != len(names):
        return []
    return [(name, piece) for name, piece in zip(names, pieces, strict=False) if piece and not any(ch in piece for ch in "*?[")]


def iter_cmds(nodes: Iterable[Node]) -> Iterator[Cmd]:
    """Every simple command in a statement tree (including branches and functions)."""
    for node in nodes:
        if isinstance(node, Cmd):
            yield node
        elif isinstance(node, AndOr):
            yield from iter_cmds(node.items)
        elif isinstance(node, If):
            for cond, body in node.branches:
                yield from iter_cmds(cond)
                yield from iter_cmds(body)
            if node.orelse:
                yield from iter_cmds(node.orelse)
        elif isinstance(node, Case):
            for _, body in node.arms:
                yield from iter_cmds(body)
        elif isinstance(node, (Loop, FuncDef, Group)):
            yield from iter_cmds(node.body)
