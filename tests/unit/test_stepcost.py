"""The step-cost fit (distributions.stepcost): exact recovery, what one batch size cannot identify, held-out
fits, and 95 % intervals that cover the truth about 95 % of the time under noise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distributions.errors import DistributionError
from distributions.stepcost import StepCell, fit_step_costs, held_out_fits

TRUE = {"fixed_ms": 100.0, "draft_ms_per_token": 20.0, "draft_ms_per_token_per_request": 2.0,
        "verify_ms_per_token": 5.0}


def _step(k: int, b: int) -> float:
    return TRUE["fixed_ms"] + k * (TRUE["draft_ms_per_token"] + TRUE["draft_ms_per_token_per_request"] * b) \
        + TRUE["verify_ms_per_token"] * b * (k + 1)


def _draft(k: int, b: int) -> float:
    return k * (TRUE["draft_ms_per_token"] + TRUE["draft_ms_per_token_per_request"] * b)


def _cells(ks, bs, *, phases: bool, units: int = 50) -> list[StepCell]:
    return [StepCell(k=k, batch=b, units=units, step_ms=_step(k, b), draft_ms=_draft(k, b) if phases else None)
            for k in ks for b in bs]


def test_phases_identify_every_per_token_cost_at_one_batch_size():
    fit = fit_step_costs(_cells([1, 2, 3, 4], [1], phases=True))
    terms = fit.terms()
    # at batch 1 the draft's per-request cost adds to its per-token cost: 20 + 2 * 1
    assert terms["draft_ms_per_token"]["value"] == pytest.approx(22.0)
    assert terms["verify_ms_per_token"]["value"] == pytest.approx(5.0)
    assert terms["fixed_ms"]["value"] == pytest.approx(100.0)
    assert terms["draft_ms_per_token_per_request"] is None
    assert fit.step_ms(0, 1) == pytest.approx(_step(0, 1))  # the no-speculation step, k = 0
    assert fit.step_ms(7, 1) == pytest.approx(_step(7, 1))
    assert "draft_ms_per_token_per_request" in fit.notes[0]
    with pytest.raises(DistributionError, match="batch 4"):
        fit.step_ms(2, 4)


def test_without_phases_one_batch_size_folds_the_verify_cost_in():
    fit = fit_step_costs(_cells([1, 2, 3, 4], [2], phases=False))
    terms = fit.terms()
    # step(k, 2) = (100 + 5*2) + k * (20 + 2*2 + 5*2): the intercept and slope are all one batch size can say
    assert terms["fixed_ms"]["value"] == pytest.approx(110.0)
    assert terms["draft_ms_per_token"]["value"] == pytest.approx(34.0)
    assert terms["verify_ms_per_token"] is None
    assert terms["draft_ms_per_token_per_request"] is None
    assert "folded" in fit.notes[0]
    assert fit.step_ms(6, 2) == pytest.approx(_step(6, 2))


@pytest.mark.parametrize("phases", [True, False])
def test_several_batch_sizes_identify_every_term(phases):
    fit = fit_step_costs(_cells([1, 2, 3, 4], [1, 2, 4], phases=phases))
    for name, value in TRUE.items():
        assert fit.terms()[name]["value"] == pytest.approx(value)  # type: ignore[index]
    assert fit.step_ms(8, 16) == pytest.approx(_step(8, 16))
    assert fit.notes == ()


def test_held_out_fits_predict_the_left_out_k():
    fits = held_out_fits(_cells([1, 2, 3], [1], phases=True))
    for k, fit in fits.items():
        assert fit is not None
        assert fit.step_ms(k, 1) == pytest.approx(_step(k, 1))
    assert held_out_fits(_cells([1, 2], [1], phases=False)) == {1: None, 2: None}


@pytest.mark.parametrize("cells", [[], [StepCell(k=1, batch=1, units=3, step_ms=10.0)] * 2])
def test_too_few_points_are_refused(cells):
    with pytest.raises(DistributionError, match="two draft lengths or batch sizes"):
        fit_step_costs(cells)


@pytest.mark.parametrize("bad", [{"k": -1}, {"units": 0}, {"step_ms": math.nan}, {"draft_ms": -1.0}])
def test_bad_cells_are_refused(bad):
    with pytest.raises(DistributionError):
        StepCell(**{"k": 1, "batch": 1, "units": 3, "step_ms": 10.0, **bad})


def test_intervals_cover_the_truth_about_95_percent_of_the_time():
    """Cells whose medians scatter (normal, sd 3 ms): the 95 % intervals of the predicted step at k = 0 and k = 6
    (both extrapolated) cover the true step in 95 % +- 3.5 sd of 400 fits (not more: no inflating floor)."""
    rng = np.random.default_rng(11)
    n, hits = 400, np.zeros(2)
    for _ in range(n):
        cells = [StepCell(k=k, batch=1, units=1, step_ms=_step(k, 1) + rng.normal(0, 3.0), iqr_ms=3.0 * 1.349,
                          draft_ms=_draft(k, 1) + rng.normal(0, 1.0)) for k in (1, 2, 3, 4, 5)]
        fit = fit_step_costs(cells)
        for i, k in enumerate((0, 6)):
            h = fit.log_half_width(k, 1)
            hits[i] += abs(math.log(fit.step_ms(k, 1) / _step(k, 1))) <= h
    tol = 3.5 * math.sqrt(0.95 * 0.05 / n)
    assert np.all(np.abs(hits / n - 0.95) <= tol), hits / n
