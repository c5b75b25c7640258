"""vLLM's counts: its Prometheus counters and its per-request metrics (moved from tests/unit/test_engines_counts.py)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distributions import units
from distributions.counts import from_histogram
from distributions.errors import CounterWentBackwardsError, DistributionError
from golden_al.errors import MetricMissingError
from golden_al.formats.prometheus import parse_metrics_text

from .. import counts_from_request_metrics as from_vllm_request_metrics
from ..counters import VllmSpecCounters
from ..counters import read as read_vllm_counters


def from_vllm_counters(drafts, draft_tokens, accepted, per_position=None, *, k=None):
    """vLLM's counters (the shape every engine of ``DraftCounters`` shares) as counts."""
    return VllmSpecCounters(drafts, draft_tokens, accepted, per_position or ()).counts(k)


# ---------------------------------------------------------------------------- vLLM counters
class TestVllmCounters:
    def test_closed_form(self):
        c = from_vllm_counters(100, 300, 150, [80, 50, 20])
        assert c.k == 3
        assert c.al == pytest.approx(2.5)
        assert c.acceptance_rate == pytest.approx(0.5)
        # histogram from per-position counts of a chain draft: steps - pos1, pos1 - pos2, ...
        assert c.histogram == (20, 30, 30, 20)
        np.testing.assert_allclose(c.unconditional_rates(), [0.8, 0.5, 0.2])
        np.testing.assert_allclose(c.distribution().probs, [0.2, 0.3, 0.3, 0.2])
        assert c.distribution().mean() == pytest.approx(c.al)

    def test_position_labels_as_dict_and_padding_to_k(self):
        c = from_vllm_counters(10.0, 40.0, 9.0, {"0": 6.0, "1": 3.0}, k=4)
        assert c.per_position_accepted == (6, 3, 0, 0)
        assert c.histogram == (4, 3, 3, 0, 0)
        assert isinstance(c.num_verify_steps, int)

    def test_prometheus_names(self):
        text = "".join(f"vllm:spec_decode_num_{name}_total {v}\n" for name, v in (
            ("drafts", 100), ("draft_tokens", 300), ("accepted_tokens", 150)))
        text += "".join(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{j}"}} {v}\n'
                        for j, v in enumerate((80, 50, 20)))
        assert read_vllm_counters(parse_metrics_text(text)).counts(None).al == pytest.approx(2.5)
        with pytest.raises(MetricMissingError, match="vllm:spec_decode_num_drafts_total"):
            read_vllm_counters(parse_metrics_text("vllm:num_requests_running 0\n"))

    def test_totals_only_give_al_but_no_distribution(self):
        c = from_vllm_counters(100, 300, 150, k=3)
        assert c.al == pytest.approx(2.5)
        assert not c.has_distribution
        with pytest.raises(DistributionError, match="not determined"):
            c.distribution()

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            ((100, 100, 150, [80, 50, 20]), {}, r"num_accepted_tokens=150 exceeds num_draft_tokens=100"),
            ((100, 301, 150, [80, 50, 20]), {}, r"num_draft_tokens=301 exceeds k\*num_drafts=3\*100"),
            ((100, 300, 160, [80, 50, 20]), {}, r"sum to 150 but num_accepted_tokens=160"),
            ((100, 300, 150, [50, 80, 20]), {}, r"non-increasing.*position 2 \(0-based label \"1\"\).*80"),
            ((10, 30, 15, [12, 3, 0]), {}, r"position 1 was accepted 12 times but there were only 10"),
            ((100, 300, 150, [80, 50, 20]), {"k": 2}, r"beyond 2"),
            ((100, 300, 150), {}, r"k is unknown"),
            ((-1, 300, 150, [80, 50, 20]), {}, r"finite count >= 0"),
            (("100", 300, 150, [80, 50, 20]), {}, r"must be a number"),
        ],
    )
    def test_bad_counters_explain_the_violation(self, args, kwargs, match):
        with pytest.raises(DistributionError, match=match):
            from_vllm_counters(*args, **kwargs)

    def test_delta_of_snapshots(self):
        before = from_vllm_counters(100, 300, 150, [80, 50, 20])
        after = from_vllm_counters(300, 900, 450, [240, 150, 60])
        d = after - before
        assert d.num_verify_steps == 200
        assert d.histogram == (40, 60, 60, 40)
        with pytest.raises(CounterWentBackwardsError, match="went backwards"):
            _ = before - after


# ---------------------------------------------------------------------------- vLLM per request
class TestVllmRequestMetrics:
    metrics: ClassVar[dict] = {
        "mean_acceptance_length": 2.2,
        "draft_acceptance_rate": 0.4,
        "acceptance_histogram": [1, 2, 2, 0],
        "num_spec_steps": 5,
        "num_accepted_draft_tokens": 6,
        "num_draft_tokens": 15,
        "num_spec_tokens": 3,
    }

    def test_reads_summary_level(self):
        c = from_vllm_request_metrics(self.metrics)
        assert (c.k, c.num_verify_steps, c.num_accepted_drafts) == (3, 5, 6)
        assert c.al == pytest.approx(self.metrics["mean_acceptance_length"])
        assert c.acceptance_rate == pytest.approx(self.metrics["draft_acceptance_rate"])
        assert c.per_position_accepted == (4, 2, 0)

    def test_outer_metrics_object_and_detailed_level(self):
        detailed = {**self.metrics, "per_step_accepted": [0, 1, 1, 2, 2], "per_step_drafted": [3] * 5}
        c = from_vllm_request_metrics({"speculative_decoding": detailed})
        assert c.al == pytest.approx(2.2)

    @pytest.mark.parametrize(
        ("change", "match"),
        [
            ({"num_spec_steps": 6}, r"num_spec_steps=6 but acceptance_histogram"),
            ({"num_accepted_draft_tokens": 7}, r"num_accepted_draft_tokens=7"),
            ({"per_step_accepted": [0, 1, 1, 2]}, r"per_step_accepted"),
            ({"acceptance_histogram": [1, 2, 2, 0, 1]}, r"beyond 4"),
        ],
    )
    def test_inconsistent_request_metrics(self, change, match):
        with pytest.raises(DistributionError, match=match):
            from_vllm_request_metrics({**self.metrics, **change})

    def test_k_conflict(self):
        with pytest.raises(DistributionError, match="num_spec_tokens=3 but k=4"):
            from_vllm_request_metrics(self.metrics, k=4)

    def test_missing_histogram(self):
        with pytest.raises(DistributionError, match="per-request-spec-decode-metrics"):
            from_vllm_request_metrics({"num_spec_steps": 3})


histograms = st.integers(1, 8).flatmap(
    lambda k: st.lists(st.integers(0, 10_000), min_size=k + 1, max_size=k + 1).filter(lambda h: sum(h) > 0)
)


@settings(deadline=None, derandomize=True)  # its own settings: in a package of its own, no conftest sets them
@given(histograms)
def test_histogram_per_position_round_trip(hist):
    k = len(hist) - 1
    c = from_histogram(hist)
    # the vLLM view of the same steps (every step drafts k tokens)
    v = from_vllm_counters(c.num_verify_steps, k * c.num_verify_steps, c.num_accepted_drafts,
                           list(c.per_position_accepted))
    assert v.histogram == tuple(hist)
    assert v.al == pytest.approx(c.distribution().mean(), rel=1e-12)
    assert 1.0 <= c.al <= k + 1
    p = v.unconditional_rates()
    assert np.all(np.diff(p) <= 1e-12)
    np.testing.assert_allclose(p, np.asarray(c.per_position_accepted) / c.num_verify_steps)
    assert c.al == pytest.approx(units.al_curve_from_unconditional(p, [k])[0])
