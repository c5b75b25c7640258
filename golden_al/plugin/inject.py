"""What ``inject`` hands an engine whose synthetic settings sit inside a speculative config of a recipe (the
profile's :attr:`~golden_al.plugin.profile.RecipeFormat.config_writer`, vLLM's): :class:`RecipePlanner`, the edits
of one recipe being planned (:class:`golden_al.injection.inject.Planner` is the one ``inject`` passes). A writer
finds the configs, reads them, and asks the planner to edit; the planner keeps the recipe's comments, quotes and
layout, and the list of changes ``inject`` reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

__all__ = ["RecipePlanner"]


class RecipePlanner(Protocol):
    """The edits of one recipe being planned (a YAML document read with its layout)."""

    path: Path

    def occurrences(self, match: Callable[[Any, tuple[Any, ...]], bool]) -> list[tuple[Any, Any, Any, tuple[Any, ...]]]:
        """Every ``(parent, key, value, loc)`` whose ``match(key, loc)`` holds, in document order."""
        ...

    def value_pos(self, mapping: Any, key: Any) -> tuple[int, int]:
        """0-based (line, column) of ``mapping[key]``'s value."""
        ...

    def where(self, loc: tuple[Any, ...]) -> str:
        """A key path as people read it (``backend.vllm_config.decode.speculative-config``)."""
        ...

    def own_items(self, mapping: Any) -> list[tuple[Any, Any]]:
        """A mapping's own items (merged ``<<`` keys excluded), in document order."""
        ...

    def equal(self, var: str, old: Any, new: str) -> bool:
        """Whether a recipe's value of ``var`` already equals the one to write (numbers as numbers)."""
        ...

    def replace_scalar(self, mapping: Any, key: str, new: str, loc: tuple[Any, ...], old: Any, conflict: bool,
                       *, typed: bool = False) -> None:
        """Replace ``mapping[key]`` (``old``) by ``new``; ``conflict``: a different value ``inject`` needs
        ``--force`` to replace; ``typed``: write a number as a number."""
        ...

    def insert_keys(self, mapping: Any, items: list[tuple[str, str]], loc: tuple[Any, ...], *,
                    typed: bool = False, after: list[str] | None = None) -> None:
        """Add ``items`` (key, value) to ``mapping``, after the keys ``after`` where present."""
        ...

    def rewrite_json(self, parent: Any, key: Any, loc: tuple[Any, ...], raw: str, new: Mapping[str, Any],
                     changes: list[tuple[tuple[Any, ...], str | None, str, bool]]) -> None:
        """Replace the JSON text ``raw`` at ``parent[key]`` by ``new`` (its separators and quotes kept) and record
        ``changes``, ``(loc, old, new, conflict)`` each."""
        ...
