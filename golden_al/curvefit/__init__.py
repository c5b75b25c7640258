"""From measurement records to a committed golden curve: fit, diagnostics, commit.

Public API (what ``golden-al fit``, ``commit`` and ``report`` use):

* records come from :func:`golden_al.measure.records.load_records` (record, file, sha256);
* :func:`.settings.check_agreement` / :data:`.settings.SETTINGS`: the settings records must share
  (:class:`.errors.SettingsMismatchError` otherwise, never an average);
* :func:`.pool.pool_cell` -> :class:`.pool.PooledCell`: records of one (mode, k) pooled by summing counts;
* :func:`fit_records` (:class:`FitOptions`) -> :class:`CurveFit`: the golden curve
  (our schema) and per-mode :class:`.build.ModeFit` (profile, residuals, flags), with
  :meth:`CurveFit.diagnostics` for the ``CURVE.fit.json`` sidecar (:func:`sidecar_path`);
* :func:`plan_commit` -> :class:`.commit.CommitPlan` (the diff) and :func:`apply_commit`.

No torch, no matplotlib.
"""

from __future__ import annotations

from golden_al.curvefit.build import (
    CurveFit,
    FitOptions,
    default_model_key,
    fit_records,
    round_al,
    sidecar_path,
)
from golden_al.curvefit.commit import apply_commit, plan_commit

__all__ = [
    "CurveFit",
    "FitOptions",
    "apply_commit",
    "default_model_key",
    "fit_records",
    "plan_commit",
    "round_al",
    "sidecar_path",
]
