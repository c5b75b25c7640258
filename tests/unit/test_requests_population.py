"""experiments/interval-calibration/populations.py: position-dependent acceptance, heavy-tailed lengths, one run at
every k."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from distributions import units
from distributions.errors import DistributionError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments" / "interval-calibration"))
from populations import Component, RequestPopulation


def test_a_position_decay_gives_the_al_its_conditional_profile_implies() -> None:
    """Homogeneous p with decay r: AL is exactly the chain formula of c_j = p r^(j-1) (long outputs)."""
    p, r, k = 0.9, 0.8, 6
    pop = RequestPopulation(k, (Component(1.0, 9e4, 1e4, decay=r),), 4096, 4096)  # p ~ 0.9 (sd 0.001)
    acc, steps = pop.sample(np.random.default_rng(3), (400,))
    al = 1 + acc.sum() / steps.sum()
    expected = float(units.al_curve_from_conditional([p * r**j for j in range(k)], [k])[0])
    se = (k / 2) / math.sqrt(steps.sum())  # accepted drafts per step lie in [0, k]: variance <= k^2 / 4
    assert abs(al - expected) < 4 * se + 2e-3, (al, expected)


def test_lognormal_lengths_are_heavy_tailed_and_capped() -> None:
    pop = RequestPopulation(3, (Component(1.0, 8, 2),), 128, 8192, lengths="lognormal", length_sigma=1.5)
    acc, steps = pop.sample(np.random.default_rng(5), (20_000,))
    tokens = acc + steps
    assert np.median(tokens) == pytest.approx(128, rel=0.1)
    assert tokens.max() <= 8192
    assert np.quantile(tokens, 0.99) > 20 * np.median(tokens)  # the tail


def test_one_run_at_every_k_keeps_each_requests_acceptance() -> None:
    pop = RequestPopulation(4, (Component(0.5, 40, 2), Component(0.5, 2, 8)), 64, 512)
    acc, steps = pop.sample_ks(np.random.default_rng(9), 400, (1, 2, 4))
    al = 1 + acc / steps
    assert acc.shape == steps.shape == (400, 3)
    assert np.corrcoef(al[:, 0], al[:, 2])[0, 1] > 0.8  # a request good at k=1 is good at k=4
    assert np.all((acc + steps)[:, 0] >= (acc + steps)[:, 2] - 4)  # the same output length at each k
    with pytest.raises(DistributionError):
        pop.sample_ks(np.random.default_rng(0), 4, (5,))
