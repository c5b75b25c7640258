"""Helpers shared by the subcommands: common options, env-var defaults, output, progress.

Only the CLI reads environment variables; it resolves them here and passes plain
values down to library code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from golden_al.errors import UsageError

__all__ = [
    "ENV_CACHE",
    "ENV_GOLDEN_DIR",
    "ProgressCallback",
    "add_format_option",
    "add_golden_dir_option",
    "cache_dir",
    "golden_dir",
    "parse_int_list",
    "print_json",
    "progress",
    "stderr_console",
    "thinking_mode",
]

#: Environment variable overriding the model/data cache (default ``~/.cache/golden-al``).
ENV_CACHE = "GOLDEN_AL_CACHE"
#: Environment variable naming a golden directory used instead of the shipped curves.
ENV_GOLDEN_DIR = "GOLDEN_AL_GOLDEN_DIR"


def cache_dir(explicit: str | Path | None = None) -> Path:
    """The cache root: ``explicit``, else ``$GOLDEN_AL_CACHE``, else ``~/.cache/golden-al``."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "golden-al"


def golden_dir(explicit: str | Path | None = None) -> Path | None:
    """A golden directory to use instead of the shipped curves, or None for the shipped ones."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_GOLDEN_DIR)
    return Path(env).expanduser() if env else None


def add_golden_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--golden-dir DIR``: read curves from DIR (ours or InferenceX's format) instead."""
    parser.add_argument(
        "--golden-dir",
        metavar="DIR",
        default=None,
        help="read golden curves from DIR instead of the shipped store (our schema or the "
        f"InferenceX golden_al_distribution shape; default: ${ENV_GOLDEN_DIR} or shipped curves)",
    )


def add_format_option(parser: argparse.ArgumentParser, choices: tuple[str, ...], default: str) -> None:
    """``--format`` with the given choices."""
    parser.add_argument("--format", choices=choices, default=default, help=f"output format (default: {default})")


_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")


def thinking_mode(text: str) -> str:
    """argparse type of ``--thinking``: ``on``, ``off`` or a named level such as ``reasoning_effort_high``."""
    from golden_al.golden.schema import normalize_mode

    try:
        return normalize_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_int_list(text: str, *, name: str = "value") -> list[int]:
    """Parse ``"1-8"``, ``"1,2,5"`` or ``"1-3,7"`` into a sorted list of unique ints."""
    out: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        m = _RANGE.match(part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise UsageError(f"{name}: range {part!r} is empty (expected LO-HI with LO <= HI)")
            out.update(range(lo, hi + 1))
        elif part.isdigit():
            out.add(int(part))
        else:
            raise UsageError(f"{name}: cannot parse {part!r}; expected e.g. '1-8' or '1,3,7'")
    if not out:
        raise UsageError(f"{name}: no values in {text!r}")
    return sorted(out)


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def stderr_console() -> Any:
    """A rich Console on stderr (progress and diagnostics never go to stdout)."""
    from rich.console import Console

    return Console(stderr=True)


class ProgressCallback(Protocol):
    """What library code calls to report progress: ``advance(n)`` and optional ``total``."""

    def __call__(self, advance: int = 1, *, total: int | None = None, description: str | None = None) -> None: ...


@contextmanager
def progress(description: str, total: int | None = None, *, unit: str = "") -> Iterator[ProgressCallback]:
    """A rich progress bar on stderr; yields a :class:`ProgressCallback` for library code."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    with Progress(*columns, console=stderr_console(), transient=False) as bar:
        task = bar.add_task(description, total=total)

        def callback(advance: int = 1, *, total: int | None = None, description: str | None = None) -> None:
            if total is not None:
                bar.update(task, total=total)
            if description is not None:
                bar.update(task, description=description)
            if advance:
                bar.advance(task, advance)

        yield callback
