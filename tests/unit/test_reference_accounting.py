"""The verify-step counting rules (golden_al.reference.accounting); no torch needed."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from golden_al.reference.accounting import (
    counts_from_accept_counts,
    expected_step_counts,
    first_step,
    greedy_accept_counts,
)


def test_greedy_walk_by_hand():
    #          y0 y1 y2 y3 y4 y5 y6 y7
    agree = [1, 1, 1, 0, 1, 1, 1, 1]
    # prefill emits y0; step at 1: run(1)=2 -> n=2 (y1,y2 accepted, y3 corrected); step at 4:
    # run=4 but only N-s=4 tokens remain -> n=min(4,k=3)=3 (y4..y6), y7 bonus; done
    assert greedy_accept_counts([bool(a) for a in agree], 3, start=1) == [2, 3]
    # the request ends on an accepted draft: n = N - s, no bonus after it
    assert greedy_accept_counts([bool(a) for a in agree], 8, start=1) == [2, 4]
    # transformers' convention: the first verify step drafts y0 too
    assert greedy_accept_counts([bool(a) for a in agree], 3, start=0) == [3, 3]


def test_no_agreement_gives_one_step_per_token():
    assert greedy_accept_counts([False] * 5, 4, start=first_step(True)) == [0, 0, 0, 0]
    assert greedy_accept_counts([False] * 5, 4, start=first_step(False)) == [0] * 5
    assert greedy_accept_counts([True], 4, start=1) == []


def test_counts_from_accept_counts():
    c = counts_from_accept_counts([0, 2, 3, 3, 1], 3)
    assert c.num_verify_steps == 5
    assert c.num_accepted_drafts == 9
    assert c.histogram == [1, 1, 1, 2]
    assert c.per_position_accepted == [4, 3, 2]
    assert c.accept_lengths == [1, 3, 4, 4, 2]
    with pytest.raises(ValueError, match="outside"):
        counts_from_accept_counts([4], 3)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_expected_counts_with_certain_outcomes_equal_the_walk(k):
    rng = np.random.default_rng(7)
    for _ in range(50):
        agree = rng.random(rng.integers(1, 30)) < 0.7
        for start in (0, 1):
            walk = counts_from_accept_counts(greedy_accept_counts(list(agree), k, start=start), k)
            exp = expected_step_counts(agree.astype(float), k, start=start)
            assert exp.num_verify_steps == pytest.approx(walk.num_verify_steps)
            assert exp.num_accepted_drafts == pytest.approx(walk.num_accepted_drafts)
            assert exp.histogram == pytest.approx(walk.histogram)
            assert exp.per_position_accepted == pytest.approx(walk.per_position_accepted)


@pytest.mark.parametrize(("k", "start"), [(1, 1), (2, 0), (3, 1), (6, 0)])
def test_expected_counts_equal_brute_force_over_acceptance_patterns(k, start):
    """Independent Bernoulli(beta_j) acceptance: enumerate all 2^N patterns."""
    beta = np.array([0.9, 0.3, 0.7, 0.5, 0.99, 0.1, 0.6])
    N = beta.size
    steps = acc = 0.0
    hist = np.zeros(k + 1)
    pos = np.zeros(k)
    for pattern in itertools.product([False, True], repeat=N):
        w = float(np.prod(np.where(pattern, beta, 1 - beta)))
        c = counts_from_accept_counts(greedy_accept_counts(list(pattern), k, start=start), k)
        steps += w * c.num_verify_steps
        acc += w * c.num_accepted_drafts
        hist += w * np.asarray(c.histogram)
        pos += w * np.asarray(c.per_position_accepted)
    exp = expected_step_counts(beta, k, start=start)
    assert exp.num_verify_steps == pytest.approx(steps, rel=1e-12)
    assert exp.num_accepted_drafts == pytest.approx(acc, rel=1e-12)
    assert exp.histogram == pytest.approx(hist.tolist(), rel=1e-12)
    assert exp.per_position_accepted == pytest.approx(pos.tolist(), rel=1e-12)
