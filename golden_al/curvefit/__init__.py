"""From measurement records to a committed golden curve: fit, diagnostics, commit.

Public API (what ``golden-al fit``, ``commit`` and ``report`` use):

* records come from :func:`golden_al.measure.records.load_records` (record, file, sha256);
* :func:`check_agreement` / :data:`SETTINGS`: the settings records must share
  (:class:`SettingsMismatchError` otherwise, never an average);
* :func:`pool_cell` -> :class:`PooledCell`: records of one (mode, k) pooled by summing counts;
* :func:`fit_records` (:class:`FitOptions`) -> :class:`CurveFit`: the golden curve
  (our schema) and per-mode :class:`ModeFit` (profile, residuals, flags), with
  :meth:`CurveFit.diagnostics` for the ``CURVE.fit.json`` sidecar (:func:`sidecar_path`);
* :func:`plan_commit` -> :class:`CommitPlan` (the diff) and :func:`apply_commit`.

No torch, no matplotlib.
"""

from __future__ import annotations

from golden_al.curvefit.build import (
    SIDECAR_SUFFIX,
    CurveFit,
    FitOptions,
    ModeFit,
    default_model_key,
    draft_precision,
    fit_records,
    round_al,
    sidecar_path,
)
from golden_al.curvefit.commit import (
    CommitPlan,
    CommitResult,
    FieldChange,
    PointChange,
    apply_commit,
    curve_file_name,
    plan_commit,
)
from golden_al.curvefit.errors import CommitRefusedError, SettingsMismatchError
from golden_al.curvefit.pool import PooledCell, pool_cell
from golden_al.curvefit.settings import SETTINGS, Setting, check_agreement, settings_of

__all__ = [
    "SETTINGS",
    "SIDECAR_SUFFIX",
    "CommitPlan",
    "CommitRefusedError",
    "CommitResult",
    "CurveFit",
    "FieldChange",
    "FitOptions",
    "ModeFit",
    "PointChange",
    "PooledCell",
    "Setting",
    "SettingsMismatchError",
    "apply_commit",
    "check_agreement",
    "curve_file_name",
    "default_model_key",
    "draft_precision",
    "fit_records",
    "plan_commit",
    "pool_cell",
    "round_al",
    "settings_of",
    "sidecar_path",
]
