"""The typed statement model the bash reader walks (built from tree-sitter-bash's tree by :mod:`.parse`).

Words keep their raw source text (quotes and expansions as written) and their line; the
expander (:mod:`.expand`) gives them values. Compound statements keep only what the walk
needs: branches, arms, bodies, and the operators between the commands of a list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["AndOr", "ArrayAssign", "Case", "Cmd", "FuncDef", "Group", "Heredoc", "If", "Loop", "Node", "Word",
           "iter_cmds"]


@dataclass(frozen=True)
class Word:
    """One shell word, raw (quotes and expansions kept), with its (first) line."""

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


@dataclass
class Cmd:
    """A simple command: leading assignments, words, here-documents."""

    assigns: list[tuple[str, bool, Word | ArrayAssign]]
    words: list[Word]
    heredocs: list[Heredoc]
    line: int
    stdout_redirected: bool = False  # ``> file``, ``>&2``: its output is not what ``$( )`` captures


@dataclass
class If:
    """``if``/``elif`` branches as (condition, body) and the ``else`` body."""

    branches: list[tuple[list[Node], list[Node]]]
    orelse: list[Node] | None
    line: int


@dataclass
class Case:
    """``case SUBJECT in PATTERN|PATTERN) body ;; ... esac``."""

    subject: Word | None
    arms: list[tuple[list[Word], list[Node]]]
    line: int


@dataclass
class Loop:
    """``for``/``while``/``until``/``select``: only the body matters to the walk."""

    body: list[Node]
    line: int


@dataclass
class FuncDef:
    """``name() { body }`` / ``function name { body }``."""

    name: str
    body: list[Node]
    line: int


@dataclass
class Group:
    """``{ ...; }`` or ``( ... )``."""

    body: list[Node]
    line: int


@dataclass
class AndOr:
    """Commands joined by ``&&``, ``||``, ``|`` or ``|&`` (``ops[i]`` sits between ``items[i]`` and ``items[i+1]``)."""

    items: list[Node]
    ops: list[str]
    line: int


Node = Cmd | If | Case | Loop | FuncDef | Group | AndOr


def iter_cmds(nodes: Iterable[Node]) -> Iterator[Cmd]:
    """Every simple command in a statement tree (including branches and functions)."""
    stack: list[Node] = list(reversed(list(nodes)))
    while stack:
        node = stack.pop()
        if isinstance(node, Cmd):
            yield node
            continue
        children: list[Node] = []
        if isinstance(node, AndOr):
            children = list(node.items)
        elif isinstance(node, If):
            for cond, body in node.branches:
                children += cond + body
            children += node.orelse or []
        elif isinstance(node, Case):
            children = [n for _, body in node.arms for n in body]
        elif isinstance(node, (Loop, FuncDef, Group)):
            children = list(node.body)
        stack.extend(reversed(children))
