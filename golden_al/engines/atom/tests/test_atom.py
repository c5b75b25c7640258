"""ATOM's own tests: they reach ATOM relatively (``from .. import``) and golden-al through its plugin surface and
commands, so that the folder, copied into a package of its own, runs them unchanged
(``tests/unit/test_engine_conformance.py`` does it)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distributions.errors import CounterWentBackwardsError, DistributionError
from golden_al.plugin import registry
from golden_al.plugin.conformance import profile_problems

from .. import PROFILE, counts_from_mtp_stats, mtp_stats_delta, synthetic_settings
from ..logs import parse_atom_mtp_line


def mtp_line(kind: str, dist: dict[int, int], k: int) -> str:
    """``SpecStats._log`` of ATOM ffdf3bb5d (``atom/model_engine/scheduler.py``)."""
    steps = sum(dist.values())
    acc = sum(j * v for j, v in dist.items())
    tag = "[MTP Stats Interval]" if kind == "interval" else "[MTP Stats         ]"
    return (f"{tag} Average toks/fwd: {1 + acc / steps:.2f}, "
            f"Accepted/Total Draft tokens: {acc}/{steps * k}, "
            f"Acceptance rate: {acc / (steps * k):.2%}, "
            f"Accepted tokens distribution: { {j: f'{v / steps:.2%}' for j, v in dist.items()} }")


def test_the_registered_atom_is_this_folder_and_conforms() -> None:
    assert registry.get_profile("atom") is PROFILE
    assert profile_problems(PROFILE, entry_name="atom", builtin=True) == []


def test_the_synthetic_settings_are_the_length_flag() -> None:
    assert synthetic_settings(4.05, 7) == {"--spec-decode-acceptance-length": "4.05"}


def test_the_sampler_realizes_the_length_and_the_rate_form() -> None:
    by_length = registry.get_sampler("atom", "synthetic").pmf(1 + 7 * 0.45, 7)
    by_rate = registry.get_sampler("atom", "synthetic", rate=0.45).pmf(None, 7)  # type: ignore[arg-type]
    assert by_rate.mean() == pytest.approx(by_length.mean()) == pytest.approx(1 + 7 * 0.45)
    with pytest.raises(DistributionError, match="mutually exclusive"):
        registry.get_sampler("atom", "synthetic", rate=0.45).pmf(4.0, 7)
    with pytest.raises(DistributionError, match=r"\[0, 1\]"):
        registry.get_sampler("atom", "synthetic", rate=1.5)


@settings(deadline=None, derandomize=True)  # its own settings: in a package of its own, no conftest sets them
@given(dist=st.dictionaries(st.integers(0, 7), st.integers(0, 500), min_size=1).filter(lambda d: sum(d.values()) > 0),
       kind=st.sampled_from(["interval", "cumulative"]))
def test_a_log_line_reads_back(dist: dict[int, int], kind: str) -> None:
    k = max(max(dist), 1)
    rec = parse_atom_mtp_line("2026-08-22 10:00:00 - atom - INFO - " + mtp_line(kind, dist, k))
    assert rec is not None
    assert rec.kind == kind
    assert rec.accepted_tokens == sum(j * v for j, v in dist.items())
    assert rec.draft_tokens == sum(dist.values()) * k
    assert [j for j, _ in rec.distribution_pct] == list(dist)


def test_atoms_own_ci_regex_finds_what_is_read() -> None:
    """ATOM's CI (``atom_test.sh``) greps the same line."""
    import re

    line = mtp_line("cumulative", {0: 1, 1: 2, 2: 7}, 2)
    m = re.search(r"Average toks/fwd: ([\d.]+).*Acceptance rate: ([\d.]+)%", line)
    rec = parse_atom_mtp_line(line)
    assert m
    assert rec
    assert float(m.group(1)) == rec.avg_tokens_per_forward


def test_check_runs_evidence_from_the_log(tmp_path: Path) -> None:
    """The profile's ``run_evidence`` hook on a log of two intervals: AL = 1 + accepted / steps."""
    log = tmp_path / "atom.log"
    log.write_text("".join("2026-08-22 10:00:00 - atom - INFO - " + mtp_line("interval", d, 3) + "\n"
                           for d in ({1: 2, 3: 8}, {0: 5, 2: 5})))
    ev = registry.load_hook(PROFILE.run_logs.run_evidence)([log], 3, decode_log_interval=40)
    assert ev.engine == "atom"
    assert ev.realized_al == pytest.approx(1 + (2 + 24 + 10) / 20)
    assert ev.request_steps == pytest.approx(20)


class TestMtpStats:
    before: ClassVar[dict] = {"enabled": True, "total_draft_tokens": 18, "total_accepted_tokens": 12,
                              "acceptance_rate": 12 / 18, "average_tokens_per_forward": 3.0,
                              "distribution": {"0": 2, "3": 4}, "distribution_percent": {"0": 1 / 3, "3": 2 / 3}}
    after: ClassVar[dict] = {"enabled": True, "total_draft_tokens": 27, "total_accepted_tokens": 16,
                             "distribution": {"0": 3, "1": 1, "3": 5}}

    def test_string_keys_and_k_inference(self) -> None:
        c = counts_from_mtp_stats(self.before)
        assert c.k == 3
        assert c.histogram == (2, 0, 0, 4)
        assert c.al == pytest.approx(self.before["average_tokens_per_forward"])
        assert c.acceptance_rate == pytest.approx(self.before["acceptance_rate"])

    def test_delta_of_two_snapshots(self) -> None:
        d = mtp_stats_delta(self.before, self.after)
        assert d.histogram == (1, 1, 0, 1)
        assert d.al == pytest.approx(1 + 4 / 3)

    def test_restarted_server_is_an_error_not_a_zero(self) -> None:
        restarted = {"enabled": True, "total_draft_tokens": 6, "total_accepted_tokens": 3,
                     "distribution": {"0": 1, "3": 1}}
        with pytest.raises(CounterWentBackwardsError, match=r"went backwards.*before=2, after=1"):
            mtp_stats_delta(self.before, restarted)

    @pytest.mark.parametrize(
        ("change", "kwargs", "match"),
        [
            ({"enabled": False}, {}, "enabled=false"),
            ({"total_draft_tokens": 20}, {}, "not a whole multiple"),
            ({"total_draft_tokens": 20}, {"k": 3}, r"total_draft_tokens=20 but k\*steps=3\*6"),
            ({"total_accepted_tokens": 11}, {}, r"holds 12 accepted drafts.*total_accepted_tokens=11"),
            ({"distribution": {"x": 1}}, {}, "not an integer"),
        ],
    )
    def test_bad_stats(self, change: dict, kwargs: dict, match: str) -> None:
        with pytest.raises(DistributionError, match=match):
            counts_from_mtp_stats({**self.before, **change}, **kwargs)

    def test_missing_fields(self) -> None:
        with pytest.raises(DistributionError, match="missing"):
            counts_from_mtp_stats({"enabled": True})
