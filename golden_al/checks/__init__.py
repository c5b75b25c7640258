"""CI validators: ``golden-al check`` (static) and ``golden-al check-run`` (did the run hit its target).

* :func:`check_paths` -> :class:`CheckReport` of :class:`Finding` (the JSON contract of
  ``golden-al check --format json``), :func:`evaluate` for one
  :class:`~golden_al.checks.findings.Pin`;
* :func:`golden_al.checks.run.check_run` -> :class:`~golden_al.checks.run.RunCheckResult` (loaded on its own, so
  that ``golden-al check`` does not import it; a run's evidence is read by
  :func:`golden_al.measure.evidence.evidence_from_files`).

Torch-free; nothing under check ever executes the files it reads.
"""

from __future__ import annotations

from golden_al.checks.findings import FAILING_VERDICTS, VERDICTS, Finding
from golden_al.checks.static import CheckReport, check_paths, evaluate
from golden_al.plugin.pins import Pin

__all__ = ["FAILING_VERDICTS", "VERDICTS", "CheckReport", "Finding", "Pin", "check_paths", "evaluate"]
