"""ATOM's ``/debug/mtp_stats`` as spec counts (moved from tests/unit/test_formats_responses.py)."""

from __future__ import annotations

import pytest

from golden_al.errors import InputFileError, MetricMissingError

from ..responses import parse_atom_mtp_stats

MTP_STATS = {
    "enabled": True,
    "total_draft_tokens": 3000,
    "total_accepted_tokens": 1780,
    "acceptance_rate": 1780 / 3000,
    "average_tokens_per_forward": 2.78,
    "distribution": {"0": 0, "1": 220, "2": 780, "3": 0},
    "distribution_percent": {"0": 0.0, "1": 0.22, "2": 0.78, "3": 0.0},
}


def test_atom_mtp_stats() -> None:
    r = parse_atom_mtp_stats(MTP_STATS)
    assert r.verify_steps == 1000
    assert r.counts.histogram == (0, 220, 780, 0)
    assert r.counts.k == 3
    assert r.al == pytest.approx(MTP_STATS["average_tokens_per_forward"])
    with pytest.raises(MetricMissingError, match="disabled"):
        parse_atom_mtp_stats({"enabled": False, "total_draft_tokens": 0})
    with pytest.raises(InputFileError, match="total_draft_tokens"):
        parse_atom_mtp_stats({**MTP_STATS, "total_draft_tokens": 2999})  # not K per step
    with pytest.raises(MetricMissingError, match="distribution"):
        parse_atom_mtp_stats({"enabled": True, "total_draft_tokens": 1, "total_accepted_tokens": 1})
