"""TensorRT-LLM's own tests: they reach the engine relatively (``from .. import``) and golden-al through its commands
and floors, never another engine by name; :func:`fixture` finds a file of the repository's ``tests/fixtures/``."""

from __future__ import annotations

from pathlib import Path


def fixture(*parts: str) -> Path:
    """A path under the repository's ``tests/fixtures/`` (this folder is ``golden_al/engines/<name>/tests``)."""
    return Path(__file__).resolve().parents[4].joinpath("tests", "fixtures", *parts)
