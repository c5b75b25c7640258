"""Counts across engines: the generic delta and the properties of counts (each engine's readers are tested in its
folder: ``golden_al/engines/<name>/tests/``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distributions.counts import AcceptanceCounts, delta, from_histogram
from distributions.errors import CounterWentBackwardsError, DistributionError


# ---------------------------------------------------------------------------- generic delta
class TestDelta:
    def test_numbers_dicts_lists(self):
        assert delta(3, 5) == 2
        assert delta({"a": 1, "b": [1, 2]}, {"a": 4, "b": [1, 3, 7], "c": 2}) == {"a": 3, "b": [0, 1, 7], "c": 2}
        assert delta(None, None) is None

    def test_decrease_raises(self):
        with pytest.raises(CounterWentBackwardsError, match=r"x\['a'\] went backwards"):
            delta({"a": 5}, {"a": 4}, name="x")

    def test_vanished_series_raises(self):
        with pytest.raises(CounterWentBackwardsError, match="<missing>"):
            delta({"a": 5, "b": 1}, {"a": 6})
        with pytest.raises(CounterWentBackwardsError, match="length"):
            delta([1, 2, 3], [1, 2])
        assert delta({"a": 5, "b": 0}, {"a": 6}) == {"a": 1}

    def test_shape_mismatch(self):
        with pytest.raises(DistributionError, match="cannot subtract"):
            delta({"a": 1}, [1])
        with pytest.raises(DistributionError, match="one snapshot only"):
            delta(None, 3)

    def test_is_a_distribution_error(self):
        assert issubclass(CounterWentBackwardsError, DistributionError)


# ---------------------------------------------------------------------------- properties
histograms = st.integers(1, 8).flatmap(
    lambda k: st.lists(st.integers(0, 10_000), min_size=k + 1, max_size=k + 1).filter(lambda h: sum(h) > 0)
)


@given(histograms, histograms)
def test_counts_add_then_subtract_round_trip(h1, h2):
    k = max(len(h1), len(h2)) - 1
    a = from_histogram(h1, k=k, source="x")
    b = from_histogram(h2, k=k, source="x")
    total = a + b
    assert total.num_verify_steps == a.num_verify_steps + b.num_verify_steps
    back = total - a
    assert back.histogram == b.histogram
    assert back.per_position_accepted == b.per_position_accepted


def test_counts_of_different_k_do_not_mix():
    with pytest.raises(DistributionError, match="k=2 and k=3"):
        _ = from_histogram([1, 1, 1]) + from_histogram([1, 1, 1, 1])


def test_expected_counts_may_be_fractional():
    c = AcceptanceCounts(k=2, num_verify_steps=10.5, num_accepted_drafts=6.75, histogram=(5.5, 3.25, 1.75))
    assert c.per_position_accepted == (5.0, 1.75)
    assert c.al == pytest.approx(1 + 6.75 / 10.5)


def test_tidy_count_makes_integral_sums_ints_and_keeps_expectations():
    from distributions.counts import tidy_count

    assert tidy_count(0.1 + 0.2 + 0.7) == 1
    assert isinstance(tidy_count(0.1 + 0.2 + 0.7), int)
    assert isinstance(tidy_count(3e9 + 1e-3), int)  # float noise relative to a large counter
    assert tidy_count(2.5) == 2.5
    assert isinstance(tidy_count(2.5), float)
    assert tidy_count(7.0001) == 7.0001
