"""Errors of ``fit`` and ``commit`` (subclasses of :class:`golden_al.errors.GoldenALError`)."""

from __future__ import annotations

from golden_al.errors import GoldenALError

__all__ = ["CommitRefusedError", "SettingsMismatchError"]


class SettingsMismatchError(GoldenALError):
    """Records disagree on a setting (sampling, template, dataset, engine, models): never averaged.

    ``field`` names the setting; ``groups`` maps each value seen (as text) to the
    record files that carry it.
    """

    def __init__(self, message: str, *, field: str, groups: dict[str, list[str]], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.field = field
        self.groups = groups


class CommitRefusedError(GoldenALError):
    """``commit`` would change or remove committed values (or settings) without ``--force``."""

    exit_code = 1
