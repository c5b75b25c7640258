"""check-run on a run injected by per-position rates: judged with the exact law of those rates.

A spread-out rate profile ([0.9, 0.7, 0.35] at k = 3, AL 2.95) realizes the same AL as the
min-variance schedule a length injection uses, but a far wider spread: judged by the length
law, correct runs fail often; judged by their own law, no more often than the stated bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from golden_al.checks.run import RunEvidence, check_evidence, false_alarm_bound
from golden_al.errors import UsageError
from golden_al.plugin.registry import get_sampler

RATES = [0.9, 0.7, 0.35]
AL = 1 + sum(RATES)
K = 3


def _runs(rng: np.random.Generator, n_steps: int, reps: int) -> np.ndarray:
    """Realized AL of ``reps`` runs of ``n_steps`` request-steps, drawn the way vLLM draws them."""
    sampler = get_sampler("vllm", "synthetic", rates=RATES)
    return np.array([sampler.simulate(None, K, n_steps, rng).mean() for _ in range(reps)])


def _verdicts(realized: np.ndarray, n_steps: int, *, rates: list[float] | None, z: float) -> np.ndarray:
    out = []
    for r in realized:
        ev = RunEvidence("vllm", "vllm SpecDecoding log", float(r), n_steps, n_steps, n_steps, 1)
        out.append(check_evidence(ev, expect_al=AL if rates is None else round(AL, 2), draft_len=K,
                                  tolerance_sigma=z, rates=rates).passed)
    return np.array(out)


def test_the_rates_law_holds_its_false_alarm_bound_where_the_length_law_does_not() -> None:
    rng = np.random.default_rng(7)
    n_steps, reps, z = 200, 1500, 3.0
    realized = _runs(rng, n_steps, reps)
    own = 1 - _verdicts(realized, n_steps, rates=RATES, z=z).mean()
    length = 1 - _verdicts(realized, n_steps, rates=None, z=z).mean()
    bound = false_alarm_bound(z)
    slack = 3 * math.sqrt(bound * (1 - bound) / reps)
    assert own <= bound + slack, (own, bound)
    assert length > bound + slack, (length, bound)  # the wrong law fails correct runs


def test_a_wrong_run_still_fails_under_the_rates_law() -> None:
    rng = np.random.default_rng(11)
    wrong = get_sampler("vllm", "synthetic", rates=[0.9, 0.6, 0.3])  # AL 2.8, not 2.95
    realized = np.array([wrong.simulate(None, K, 2000, rng).mean() for _ in range(50)])
    assert not _verdicts(realized, 2000, rates=RATES, z=4.0).any()


def test_rates_that_do_not_give_the_target_are_refused() -> None:
    ev = RunEvidence("vllm", "vllm SpecDecoding log", 3.0, 100, 100, 100, 1)
    with pytest.raises(UsageError, match=r"give AL 2\.9500, not the expected 3\.2"):
        check_evidence(ev, expect_al=3.2, draft_len=K, rates=RATES)
    with pytest.raises(UsageError, match="non-increasing"):
        check_evidence(ev, expect_al=3.0, draft_len=K, rates=[0.5, 0.9, 0.6])
    sg = RunEvidence("sglang", "sglang decode log", 3.0, 100, 100, 100, 1)
    with pytest.raises(UsageError, match="not injected with per-position rates"):
        check_evidence(sg, expect_al=3.0, draft_len=K, rates=RATES)


def test_the_cli_takes_rates_as_the_target(tmp_path, capsys) -> None:
    from golden_al.cli.main import main

    log = tmp_path / "vllm.log"
    log.write_text("INFO 12-03 10:00:00 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.95, "
                   "Accepted throughput: 10.00 tokens/s, Drafted throughput: 15.00 tokens/s, Accepted: 585 tokens, "
                   "Drafted: 900 tokens, Per-position acceptance rate: 0.900, 0.700, 0.350, Avg Draft acceptance "
                   "rate: 65.0%\n")
    rc = main(["check-run", str(log), "--engine", "vllm", "--rates", "0.9,0.7,0.35"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "injected per-position rates" in out
    assert main(["check-run", str(log), "--engine", "vllm", "--rates", "0.95,x"]) == 2
