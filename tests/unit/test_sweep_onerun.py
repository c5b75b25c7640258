"""Sweeps: one-run derivation (chain truncation), validation, layout and resume rules."""

from __future__ import annotations

import hashlib
import io
import json
import math

import numpy as np
import pytest

from distributions.acceptance import AcceptanceDistribution
from golden_al.errors import UsageError
from golden_al.httpclient import RetryPolicy
from golden_al.measure.derive import truncate_result
from golden_al.measure.records import load_record
from golden_al.measure.schema import DatasetInfo, ModelInfo, RequestResult, SamplingInfo
from golden_al.measure.server import ChatPrompt
from golden_al.measure.sweep import (
    ModeSpec,
    ServerOptions,
    SweepSpec,
    compare,
    run_sweep,
)
from golden_al.servers.reference_server import ReferenceServer, ServeConfig
from golden_al.servers.served_engine import FakeServedEngine

FAST = RetryPolicy(max_attempts=2, backoff_initial_s=0.01, request_timeout_s=20)


def _mode(n: int, thinking: str = "off", max_tokens: int = 96) -> ModeSpec:
    prompts = [ChatPrompt(i, ({"role": "user", "content": f"p{thinking}{i}"},),
                          hashlib.sha256(f"p{thinking}{i}".encode()).hexdigest()) for i in range(n)]
    return ModeSpec(thinking, prompts, DatasetInfo(name="t", count=n, hash=thinking * 32),  # type: ignore[arg-type]
                    SamplingInfo(temperature=0.0, max_tokens=max_tokens), {"enable_thinking": thinking == "on"})


def _spec(draft_lens, modes, **kw) -> SweepSpec:
    return SweepSpec(draft_lens=draft_lens, modes=modes, target=ModelInfo(name="fake"),
                     draft=ModelInfo(name="fake-draft"), **kw)


@pytest.fixture
def fake_server():
    made = []

    def start(k: int, flavor: str = "sglang", **engine_kw):
        srv = ReferenceServer(FakeServedEngine(k, **engine_kw), ServeConfig(flavor=flavor, port=0), io.StringIO())
        srv.start()
        made.append(srv)
        return srv.url

    yield start
    for s in made:
        s.shutdown()


def _row(hist, k):
    pos = [sum(hist[j + 1:]) for j in range(k)]
    return RequestResult(index=0, request_id="r", draft_len=k, prompt_hash="h", num_output_tokens=10,
                         num_verify_steps=sum(hist), num_accepted_drafts=sum(j * h for j, h in enumerate(hist)),
                         histogram=hist, per_position_accepted=pos)


def test_truncate_result_folds_mass_onto_k():
    r = _row([2, 3, 1, 4], 3)
    one = truncate_result(r, 1)
    assert one.histogram == [2, 8]
    assert one.num_accepted_drafts == 8
    assert one.per_position_accepted == [8]
    two = truncate_result(r, 2)
    assert two.histogram == [2, 3, 5]
    assert two.num_accepted_drafts == 13
    assert two.per_position_accepted == [8, 5]
    assert two.num_verify_steps == r.num_verify_steps
    assert two.extra["derived_from_draft_len"] == 3
    with pytest.raises(UsageError):
        truncate_result(r, 4)


def test_one_run_derives_every_smaller_k(fake_server, tmp_path):
    url = fake_server(5)
    opts = ServerOptions(engine="sglang", url=url, policy=FAST)
    res = run_sweep(opts, _spec([1, 2, 3, 4, 5], [_mode(12), _mode(12, "on")], one_run=True,
                                draft_method="standalone"), tmp_path)
    by = {(r.thinking, r.draft_len): r for r in res.records}
    assert set(by) == {(t, k) for t in ("on", "off") for k in range(1, 6)}
    top = by[("off", 5)]
    assert not top.derived
    assert top.al_source == "sglang-meta-info"
    dist = AcceptanceDistribution.from_accepted_histogram(top.histogram, k=5)
    for k in range(1, 5):
        d = by[("off", k)]
        assert d.derived
        assert d.derived_from_draft_len == 5
        assert d.derivation_exact is False
        assert d.al_source == "sglang-meta-info+truncated-from-k5"
        assert d.num_verify_steps == top.num_verify_steps
        assert d.al == pytest.approx(dist.truncate(k).mean(), abs=1e-12)
        assert d.al <= top.al
        stored = load_record(tmp_path / "thinking_off" / f"k{k}")
        assert stored.al == d.al
        assert (tmp_path / "thinking_off" / f"k{k}" / "requests.jsonl").exists()
    assert not res.validation


@pytest.mark.slow
def test_derived_al_matches_a_real_measurement_at_smaller_k(fake_server, tmp_path):
    """The fake draft accepts each position independently of where steps start: then (and only
    then) truncation is exact in expectation (5 combined standard errors)."""
    n = 40
    big = run_sweep(ServerOptions(engine="vllm", url=fake_server(6, "vllm"), policy=FAST),
                    _spec([2, 6], [_mode(n)], one_run=True), tmp_path / "one")
    derived = next(r for r in big.records if r.draft_len == 2)
    real = run_sweep(ServerOptions(engine="vllm", url=fake_server(2, "vllm"), policy=FAST),
                     _spec([2], [_mode(n)]), tmp_path / "real").records[0]
    row = compare(derived, real)
    se = math.hypot(*((ci[1] - ci[0]) / 3.92 for ci in (derived.al_ci95, real.al_ci95)))
    assert abs(row.difference) < 5 * se
    assert row.chain


def test_one_run_of_a_block_draft_needs_allow_derived():
    with pytest.raises(UsageError, match="dflash is a block draft: its drafts depend on the block size") as info:
        _spec([2, 3], [_mode(4)], one_run=True, draft_method="dflash")
    assert "--allow-derived" in str(info.value)
    assert _spec([2, 3], [_mode(4)], one_run=True, draft_method="eagle3").one_run  # chain drafts derive as before


def test_derived_records_are_never_claimed_exact(fake_server, tmp_path):
    res = run_sweep(ServerOptions(engine="sglang", url=fake_server(3), policy=FAST),
                    _spec([2, 3], [_mode(4)], one_run=True, draft_method="dflash", allow_derived=True), tmp_path)
    d = next(r for r in res.records if r.draft_len == 2)
    assert d.derivation_exact is False
    assert any("NOT exact" in w and "block size" in w for w in d.warnings)
    assert res.warnings
    assert "--validate-k" in res.warnings[0]


def test_compare_within_and_outside():
    class R:
        def __init__(self, al, ci):
            self.al, self.al_ci95, self.thinking, self.draft_len, self.warnings = al, ci, "on", 3, []

    assert compare(R(2.0, (1.9, 2.1)), R(2.05, (1.95, 2.15))).within_ci
    assert not compare(R(2.0, (1.99, 2.01)), R(2.5, (2.49, 2.51))).within_ci


def test_rules(fake_server, tmp_path):
    url = fake_server(3)
    with pytest.raises(UsageError, match="one draft length"):
        run_sweep(ServerOptions(engine="sglang", url=url), _spec([2, 3], [_mode(2)]), tmp_path / "a")
    with pytest.raises(UsageError, match="needs --one-run"):
        _spec([2, 3], [_mode(2)], validate_k=[2])
    with pytest.raises(UsageError, match="below the largest"):
        _spec([2, 3], [_mode(2)], one_run=True, validate_k=[3])
    with pytest.raises(UsageError, match="exactly one of"):
        ServerOptions(engine="sglang")
    from golden_al.errors import ServerError

    with pytest.raises(ServerError, match=r"drafts k=3.*k=2 was asked"):
        run_sweep(ServerOptions(engine="sglang", url=url, policy=FAST), _spec([2], [_mode(2)]), tmp_path / "b")


def test_sweep_resume_skips_finished_cells_and_checks_the_plan(fake_server, tmp_path):
    url = fake_server(3)
    opts = ServerOptions(engine="sglang", url=url, policy=FAST)
    first = run_sweep(opts, _spec([3], [_mode(3), _mode(3, "on")]), tmp_path)
    with pytest.raises(UsageError, match="already holds a sweep"):
        run_sweep(opts, _spec([3], [_mode(3), _mode(3, "on")]), tmp_path)
    notes: list[str] = []
    again = run_sweep(opts, _spec([3], [_mode(3), _mode(3, "on")]), tmp_path, resume=True, note=notes.append)
    assert [r.al for r in again.records] == [r.al for r in first.records]
    assert any("already measured" in n for n in notes)
    with pytest.raises(UsageError, match=r"settings changed.*thinking"):
        run_sweep(opts, _spec([3], [_mode(3)]), tmp_path, resume=True)
    fp = json.loads((tmp_path / "sweep.json").read_text())["fingerprint"]
    assert fp["draft_lens"] == [3]
    assert fp["al_source"] == "sglang-meta-info"


def test_bootstrap_is_reproducible(fake_server, tmp_path):
    url = fake_server(3)
    a = run_sweep(ServerOptions(engine="sglang", url=url, policy=FAST), _spec([3], [_mode(5)]), tmp_path / "a")
    b = run_sweep(ServerOptions(engine="sglang", url=url, policy=FAST), _spec([3], [_mode(5)]), tmp_path / "b")
    assert a.records[0].al_ci95 == b.records[0].al_ci95
    assert np.isfinite(a.records[0].al_ci95).all()
