"""Measuring a cell over real HTTP (in-process serve-reference, fake engine): sources, resume, faults.

"Nothing lost, nothing counted twice": after any failure and a resume, the cell's
counts equal those of an undisturbed run (the fake engine is deterministic).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path

import pytest
from _inproc import InProcessServer, server_factory

from golden_al.engines.vllm.server import VllmPrometheusSource
from golden_al.errors import CounterResetError, NoVerifyStepsError, ServerError, UsageError
from golden_al.httpclient import RequestFailedError, RetryPolicy, ServerClient
from golden_al.measure.records import read_request_results, repair_jsonl_tail
from golden_al.measure.schema import REQUESTS_FILE, DatasetInfo, ModelInfo, SamplingInfo
from golden_al.measure.server import CellPlan, ChatPrompt, measure_cell
from golden_al.plugin.sources import Snapshot, make_source
from golden_al.servers.reference_server import FaultPlan, parse_fault

K = 3
N = 8
FAST = RetryPolicy(max_attempts=3, backoff_initial_s=0.01, backoff_max_s=0.05, request_timeout_s=10)


def _prompts(n: int = N) -> list[ChatPrompt]:
    return [ChatPrompt(i, ({"role": "user", "content": f"question {i}"},),
                       hashlib.sha256(f"question {i}".encode()).hexdigest()) for i in range(n)]


def _plan(engine: str, *, concurrency: int = 1, max_tokens: int = 64, n: int = N) -> CellPlan:
    prompts = _prompts(n)
    return CellPlan(engine=engine, draft_len=K, thinking="off",
                    sampling=SamplingInfo(temperature=0.0, max_tokens=max_tokens), chat_template_kwargs={},
                    prompts=prompts, dataset=DatasetInfo(name="t", count=n, hash="h" * 64),
                    target=ModelInfo(name="fake"), draft=ModelInfo(name="fake-draft"), draft_method="standalone",
                    served_model="fake-target", concurrency=concurrency)


def _Server(flavor: str, faults: FaultPlan | None = None, **cfg) -> InProcessServer:
    return InProcessServer(flavor, k=K, faults=faults, **cfg)


@pytest.fixture
def servers():
    factory = server_factory()
    made = next(factory)

    def make(flavor: str, faults: FaultPlan | None = None, **cfg) -> InProcessServer:
        return made(flavor, k=K, faults=faults, **cfg)

    yield make
    next(factory, None)


def _measure(url, plan, out, source, *, resume=False, policy=FAST):
    async def main():
        async with ServerClient(url, policy=policy) as client:
            return await measure_cell(client, plan, make_source(source, plan.engine), out, resume=resume)

    return asyncio.run(main())


def _counts(record):
    return (record.num_requests, record.num_verify_steps, record.num_accepted_drafts, tuple(record.histogram),
            tuple(record.per_position_accepted))


@pytest.fixture(scope="module")
def clean():
    """The undisturbed truth, per source."""
    out = {}
    import tempfile

    for flavor, source in (("sglang", "sglang-meta-info"), ("vllm", "vllm-prometheus"),
                           ("vllm", "vllm-per-request")):
        s = _Server(flavor, per_request_metrics="summary" if source == "vllm-per-request" else None)
        try:
            rec = _measure(s.url, _plan(flavor), Path(tempfile.mkdtemp()), source)
        finally:
            s.close()
        out[source] = rec
    return out


def test_sources_agree_and_match_the_server(clean):
    counts = {_counts(r) for r in clean.values()}
    assert len(counts) == 1, "the same fake engine must give the same counts through every source"
    rec = clean["sglang-meta-info"]
    assert rec.al == pytest.approx(1 + rec.num_accepted_drafts / rec.num_verify_steps)
    assert rec.num_requests == N
    assert rec.mode == "server"
    assert rec.al_source == "sglang-meta-info"
    assert sum(rec.histogram) == rec.num_verify_steps
    assert rec.al_ci95[0] <= rec.al <= rec.al_ci95[1]
    assert rec.uncertainty is not None
    assert rec.uncertainty.clusters == N
    assert rec.uncertainty.method == "studentized-cluster-bootstrap+logit-cr2-bm"
    # the same clusters give the same interval, whatever the source
    assert len({r.al_ci95 for r in clean.values()}) == 1


@pytest.mark.parametrize("source", ["sglang-meta-info", "vllm-prometheus"])
def test_failure_then_resume_loses_nothing_counts_nothing_twice(servers, tmp_path, clean, source):
    flavor = source.split("-")[0]
    # request 5 (the sixth received) fails on every attempt
    s = servers(flavor, FaultPlan([parse_fault("500@6+")]))
    with pytest.raises(RequestFailedError, match=r"request 5 .*failed after 3 attempts.*HTTP 500"):
        _measure(s.url, _plan(flavor), tmp_path, source)
    done = read_request_results(tmp_path / "requests.jsonl")
    assert sorted(r.index for r in done) == [0, 1, 2, 3, 4]
    assert not (tmp_path / "measurement.json").exists()
    with pytest.raises(UsageError, match="--resume"):
        _measure(s.url, _plan(flavor), tmp_path, source)
    fresh = servers(flavor)  # e.g. the server was restarted
    rec = _measure(fresh.url, _plan(flavor), tmp_path, source, resume=True)
    assert _counts(rec) == _counts(clean[source])
    assert sorted(r.index for r in read_request_results(tmp_path / REQUESTS_FILE)) == list(range(N))


def test_transient_5xx_is_retried(servers, tmp_path, clean):
    s = servers("vllm", FaultPlan([parse_fault("502@3-4")]))
    rec = _measure(s.url, _plan("vllm"), tmp_path, "vllm-prometheus")
    assert _counts(rec) == _counts(clean["vllm-prometheus"])
    attempts = [r.extra["attempts"] for r in read_request_results(tmp_path / REQUESTS_FILE)]
    assert attempts.count(3) == 1


def test_timeout_attempt_does_not_leak_into_counter_deltas(servers, tmp_path, clean):
    """Request 2's first attempt times out but the server still runs it; its counts must not leak."""
    s = servers("vllm", FaultPlan([parse_fault("sleep@3")]), fault_sleep_s=1.5)
    policy = RetryPolicy(max_attempts=3, backoff_initial_s=0.01, request_timeout_s=0.7)
    rec = _measure(s.url, _plan("vllm"), tmp_path, "vllm-prometheus", policy=policy)
    assert _counts(rec) == _counts(clean["vllm-prometheus"])


def test_counter_reset_mid_run_is_detected_then_resumed(servers, tmp_path, clean):
    s = servers("vllm", FaultPlan([parse_fault("reset@4")]))
    with pytest.raises(CounterResetError, match="request 3"):
        _measure(s.url, _plan("vllm"), tmp_path, "vllm-prometheus")
    assert sorted(r.index for r in read_request_results(tmp_path / REQUESTS_FILE)) == [0, 1, 2]
    rec = _measure(s.url, _plan("vllm"), tmp_path, "vllm-prometheus", resume=True)
    assert _counts(rec) == _counts(clean["vllm-prometheus"])


def test_response_without_spec_fields_is_a_named_failure(servers, tmp_path):
    s = servers("sglang", FaultPlan([parse_fault("nospec@2")]))
    from golden_al.errors import MetricMissingError

    with pytest.raises(MetricMissingError, match=r"request 1 \(k=3"):
        _measure(s.url, _plan("sglang"), tmp_path, "sglang-meta-info")


def test_waves_at_concurrency(servers, tmp_path, clean):
    s = servers("vllm")
    plan = _plan("vllm", concurrency=3)
    plan.waves = True
    rec = _measure(s.url, plan, tmp_path, "vllm-prometheus")
    assert _counts(rec) == _counts(clean["vllm-prometheus"])
    rows = read_request_results(tmp_path / REQUESTS_FILE)
    assert [r.extra["unit"] for r in rows] == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert any("window" in w for w in rec.warnings)


def test_timed_windows_at_concurrency_count_everything_once(servers, tmp_path, clean):
    s = servers("vllm")
    rec = _measure(s.url, _plan("vllm", concurrency=3), tmp_path, "vllm-prometheus")
    assert _counts(rec) == _counts(clean["vllm-prometheus"])
    rows = read_request_results(tmp_path / REQUESTS_FILE)
    assert all("batch" in r.extra for r in rows)
    assert sorted(i for r in rows for i in r.extra["unit"]) == list(range(N))
    assert any("batch means" in w for w in rec.warnings)
    assert not (tmp_path / "windows.session.jsonl").exists()


def test_per_request_concurrency(servers, tmp_path, clean):
    s = servers("sglang")
    rec = _measure(s.url, _plan("sglang", concurrency=4), tmp_path, "sglang-meta-info")
    assert _counts(rec) == _counts(clean["sglang-meta-info"])


def test_torn_tail_is_cut_and_redone(servers, tmp_path, clean):
    s = servers("sglang")
    _measure(s.url, _plan("sglang"), tmp_path, "sglang-meta-info")
    req = tmp_path / "requests.jsonl"
    lines = req.read_text().splitlines(keepends=True)
    req.write_text("".join(lines[:4]) + lines[4][: len(lines[4]) // 2])  # crash mid-write of line 5
    (tmp_path / "measurement.json").unlink()
    rec = _measure(s.url, _plan("sglang"), tmp_path, "sglang-meta-info", resume=True)
    assert _counts(rec) == _counts(clean["sglang-meta-info"])
    assert repair_jsonl_tail(req) is False


def test_resume_with_other_settings_is_refused(servers, tmp_path):
    s = servers("sglang")
    _measure(s.url, _plan("sglang", n=3), tmp_path, "sglang-meta-info")
    other = _plan("sglang", n=3)
    other.sampling = SamplingInfo(temperature=0.7, max_tokens=64)
    with pytest.raises(UsageError, match=r"settings changed.*sampling"):
        _measure(s.url, other, tmp_path, "sglang-meta-info", resume=True)


def test_two_lines_for_one_prompt_is_an_error(servers, tmp_path):
    s = servers("sglang")
    _measure(s.url, _plan("sglang", n=3), tmp_path, "sglang-meta-info")
    req = tmp_path / "requests.jsonl"
    first = req.read_text().splitlines()[0]
    req.write_text(req.read_text() + first + "\n")
    from golden_al.errors import SchemaError

    with pytest.raises(SchemaError, match="prompt 0 has two results"):
        _measure(s.url, _plan("sglang", n=3), tmp_path, "sglang-meta-info", resume=True)


def test_zero_verify_steps_is_undefined_not_zero(servers, tmp_path):
    s = servers("sglang")
    with pytest.raises(NoVerifyStepsError, match="zero verify steps"):
        _measure(s.url, _plan("sglang", max_tokens=1), tmp_path, "sglang-meta-info")


def test_foreign_traffic_is_detected():
    src = VllmPrometheusSource()

    from golden_al.engines.vllm.counters import VllmSpecCounters

    before = Snapshot(VllmSpecCounters(10, 30, 20, (8, 7, 5)), 10.0, 0.0, 1.0, 3)
    after = Snapshot(VllmSpecCounters(14, 42, 26, (10, 9, 7)), 12.0, 0.0, 1.0, 3)

    async def run():
        async def snapshot(client):
            return after

        src.snapshot = snapshot  # type: ignore[method-assign]
        return await src.after_unit(None, before, 1, "request 4")  # type: ignore[arg-type]

    with pytest.raises(ServerError, match=r"2 requests finished.*expected 1.*other traffic"):
        asyncio.run(run())


def test_lock_prevents_two_writers(tmp_path, monkeypatch):
    import fcntl

    from golden_al import locks
    from golden_al.errors import LockedError
    from golden_al.measure.server import cell_lock

    monkeypatch.setattr(locks, "LOCK_TIMEOUT_S", 0.2)
    with cell_lock(tmp_path):
        fh = (tmp_path / locks.LOCK_NAME).open("a")
        with pytest.raises(BlockingIOError):
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        fh.close()
        with pytest.raises(LockedError, match=rf"locked by pid {os.getpid()} on .* \(measure: "):
            with cell_lock(tmp_path):
                pass


def test_record_is_valid_json_with_server_fields(clean, tmp_path):
    rec = clean["vllm-prometheus"]
    assert rec.engine == "vllm"
    assert rec.engine_version is None
    data = json.loads(rec.model_dump_json())
    assert data["per_request_file"] == "requests.jsonl"
