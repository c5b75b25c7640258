"""llama.cpp's own tests: they reach the engine relatively (``from .. import``) and golden-al through its commands
and floors, never another engine by name; :func:`fixture` finds a file of this folder's ``fixtures/``, so that the
folder, copied into a package of its own, runs them unchanged."""

from __future__ import annotations

from pathlib import Path


def fixture(*parts: str) -> Path:
    """A path under ``fixtures/`` beside this file."""
    return Path(__file__).resolve().parent.joinpath("fixtures", *parts)
