"""CI validators: ``golden-al check`` (static) and ``golden-al check-run`` (did the run hit its target).

* :func:`check_paths` -> :class:`CheckReport` of :class:`Finding` (the JSON contract of
  ``golden-al check --format json``), :func:`evaluate` for one
  :class:`~golden_al.checks.findings.Pin`;
* :func:`check_run` -> :class:`RunCheckResult` (a run's evidence is read by
  :func:`golden_al.measure.evidence.evidence_from_files`).

Torch-free; nothing under check ever executes the files it reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from golden_al.checks.findings import FAILING_VERDICTS, VERDICTS, Finding
from golden_al.checks.static import CheckReport, check_paths, evaluate
from golden_al.plugin.pins import Pin

if TYPE_CHECKING:
    from golden_al.checks.run import RunCheckResult, check_run

_RUN_NAMES = frozenset({"RunCheckResult", "check_run"})


def __getattr__(name: str) -> Any:
    """``check-run``'s names load on first use, so ``golden-al check`` does not import them."""
    if name in _RUN_NAMES:
        from golden_al.checks import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "FAILING_VERDICTS",
    "VERDICTS",
    "CheckReport",
    "Finding",
    "Pin",
    "RunCheckResult",
    "check_paths",
    "check_run",
    "evaluate",
]
