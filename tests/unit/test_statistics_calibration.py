"""Issue 39's done-when checker (experiments/statistics-calibration/check.py): it judges the committed results as
summary.md says, and a result below goal fails it."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "experiments" / "statistics-calibration"


def _check():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("statistics_check", HERE / "check.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_results_meet_the_goals_as_summary_md_says(tmp_path: Path) -> None:
    check = _check()
    assert check.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "summary.md").read_text() == (HERE / "summary.md").read_text()


@pytest.mark.parametrize("breach", ["false-flags", "coverage"])
def test_a_result_below_goal_fails(breach: str) -> None:
    from distributions.uncertainty import AL_INTERVAL_RULE

    check = _check()
    fit = json.loads((ROOT / "experiments" / "fit-calibration" / "fit_calibration.json").read_text())
    cov = json.loads((ROOT / "experiments" / "interval-calibration" / "interval_choice.json").read_text())
    fit, cov = copy.deepcopy(fit), copy.deepcopy(cov)
    if breach == "false-flags":
        fit["rows"][3]["false_flag_rate"]["mixture"] = 0.02
    else:
        row = next(r for r in cov["rows"] if r["method"] == AL_INTERVAL_RULE and r["clusters"] == 16
                   and r["scenario"].startswith("control"))
        row["coverage"] = row["coverage_informed"] = 0.91
    fit_rows, interval_rows = check.fit_rows(fit), check.interval_rows(cov, AL_INTERVAL_RULE)
    assert not (all(r["ok"] for r in fit_rows) and all(r["ok"] for r in interval_rows))
    assert "**NOT met.**" in check.summary(fit_rows, interval_rows, AL_INTERVAL_RULE, 800)
