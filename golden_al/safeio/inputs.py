"""What a result read: the inputs a verdict, a plan or a record depends on.

A verdict that does not know its inputs cannot tell when it went stale: ``check --changed-since`` must fail a
finding when the recipe its master config points to changed, was deleted or renamed, when a curve it was judged
against changed, when the gate's configuration or a submodule moved. Every derivation that reads something adds an
:class:`Input` for it; consumers compare inputs (by path for ``--changed-since``, by digest for baselines).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = ["Input", "InputKind", "digest_of", "merge_inputs", "shown_path", "text_input", "value_input"]

#: ``file``: a file read (a recipe, a master config, a launch script); ``curve``: a golden curve file;
#: ``config``: the gate's configuration; ``env``: an environment variable or identity value the run supplied;
#: ``submodule``: a git submodule whose files were read (digest: its commit).
InputKind = Literal["file", "curve", "config", "env", "submodule"]


@dataclass(frozen=True, order=True)
class Input:
    """One thing a result read. ``digest`` is the SHA-256 of what was read (None: looked for and absent, which is
    itself an input: creating the file changes the result)."""

    kind: InputKind
    name: str  #: a path as the result names it (files, curves, config, submodules) or a variable's name (env)
    digest: str | None

    def to_dict(self) -> dict[str, str | None]:
        return {"kind": self.kind, "name": self.name, "digest": self.digest}


def shown_path(path: str | Path) -> str:
    """A path as results name it: relative to the working directory when under it (stable across checkouts)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def text_input(kind: InputKind, name: str, text: str | bytes | None) -> Input:
    """The input of content already read (``None``: absent)."""
    if text is None:
        return Input(kind, name, None)
    data = text.encode("utf-8") if isinstance(text, str) else text
    return Input(kind, name, hashlib.sha256(data).hexdigest())


def value_input(name: str, value: str | None) -> Input:
    """The input of an environment variable or identity value (``None``: unset)."""
    return text_input("env", name, value)


def merge_inputs(*groups: Iterable[Input]) -> tuple[Input, ...]:
    """The inputs of several groups, each once, in order of first appearance."""
    return tuple(dict.fromkeys(i for group in groups for i in group))


def digest_of(inputs: Iterable[Input]) -> str:
    """One digest for a set of inputs (order-free): what a baseline entry is keyed on."""
    h = hashlib.sha256()
    for item in sorted(set(inputs)):
        h.update(f"{item.kind}\0{item.name}\0{item.digest or '-'}\n".encode())
    return h.hexdigest()
