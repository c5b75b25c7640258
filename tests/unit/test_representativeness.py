"""A record says when its requests are too few or too uneven to hold the population's rare kinds, and how many
would (issue 54 item 9); the thresholds are those experiments/interval-calibration/representativeness.py measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distributions import uncertainty
from distributions.uncertainty import representation_warning
from golden_al.measure.schema import RequestResult
from golden_al.measure.totals import cell_totals

EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "interval-calibration" / "representativeness.json"


def test_the_thresholds_are_the_experiments() -> None:
    measured = json.loads(EXPERIMENT.read_text())["thresholds"]
    assert uncertainty.REPRESENTATIVE_REQUESTS == measured["requests"]
    assert uncertainty.HEAVY_RATIO == measured["heavy_ratio"]
    assert uncertainty.HEAVY_HELD == pytest.approx(measured["heavy_held"])


def test_too_few_says_how_many_would_do() -> None:
    warning = representation_warning([20.0] * 16)
    assert warning is not None
    assert warning.startswith("too few to hold rare kinds: 16 requests miss a kind making up 10% of the population "
                              "in 19% of samples")
    assert "32 requests (16 more)" in warning
    assert representation_warning([20.0] * 40) is None


def test_too_uneven_says_how_many_would_hold_the_heavy_kind_as_often() -> None:
    steps = [20.0] * 78 + [400.0, 300.0]  # two requests hold 31 % of the steps
    warning = representation_warning(steps)
    assert warning is not None
    assert warning.startswith("too uneven to hold its rare kinds: 2 of the 80 requests hold 31% of the verify steps")
    assert "about 128 requests (48 more)" in warning  # 80 x 3.2 / 2
    assert representation_warning([20.0] * 74 + [400.0] * 6) is None  # its heavy kind held 6 times


def _row(i: int, steps: int, **extra: object) -> RequestResult:
    return RequestResult(index=i, request_id=f"r{i}", draft_len=3, prompt_hash=f"h{i}", num_output_tokens=steps * 2,
                         num_verify_steps=steps, num_accepted_drafts=steps, histogram=[0, steps, 0, 0],
                         per_position_accepted=[steps, 0, 0], extra=extra or None)


def test_a_cell_of_requests_carries_it_and_counter_windows_do_not() -> None:
    requests = cell_totals([_row(i, 20) for i in range(16)], 3)
    assert any(n.startswith("too few to hold rare kinds") for n in requests.notes)
    windows = cell_totals([_row(i, 20, batch=i, windows=1, unit=[i]) for i in range(16)], 3)
    assert windows.unit == "counter window batch"
    assert not any("rare kinds" in n for n in windows.notes)
