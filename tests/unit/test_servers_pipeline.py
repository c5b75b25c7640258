"""The request pipeline: exactly C in flight, seeded Poisson arrivals, warmup, timed counter windows, refusals."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time

import numpy as np
import pytest
from _inproc import InProcessServer

from distributions.counts import AcceptanceCounts
from golden_al.errors import MixedDraftLengthsError, ServerError, UsageError
from golden_al.httpclient import RetryPolicy, ServerClient
from golden_al.measure.schema import DatasetInfo, ModelInfo, SamplingInfo
from golden_al.measure.server import (
    SESSION_FILE,
    CellPlan,
    ChatPrompt,
    batch_count,
    batch_windows,
    measure_cell,
)
from golden_al.plugin.sources import MixedDraftLengths, make_source
from golden_al.servers.pipeline import PipelineStats, Schedule, arrival_offsets, run_pipeline, run_waves
from golden_al.servers.probe import probe_server

K = 3
FAST = RetryPolicy(max_attempts=2, backoff_initial_s=0.01, backoff_max_s=0.02, request_timeout_s=20)


# ---------------------------------------------------------------------------- the scheduler alone
def _timeline(durations, schedule, *, waves=False):
    events: list[tuple[float, int]] = []  # (time, in flight after the event)
    inflight = [0]
    starts: dict[int, float] = {}

    async def send(i: int) -> None:
        inflight[0] += 1
        starts[i] = time.monotonic()
        events.append((starts[i], inflight[0]))
        await asyncio.sleep(durations[i])
        inflight[0] -= 1

    async def main() -> float:
        t0 = time.monotonic()
        starts[-1] = t0  # the moment the pipeline was started
        if waves:
            await run_waves(list(range(len(durations))), send, concurrency=schedule.concurrency)
        else:
            await run_pipeline(list(range(len(durations))), send, schedule=schedule)
        return time.monotonic() - t0

    wall = asyncio.run(main())
    t0 = starts.pop(-1)
    return wall, events, {i: t - t0 for i, t in starts.items()}


def test_exactly_c_in_flight_until_the_prompts_run_out():
    rng = np.random.default_rng(3)
    durations = list(rng.uniform(0.005, 0.05, size=40))
    _wall, events, _ = _timeline(durations, Schedule(concurrency=4))
    levels = [n for _, n in events]
    assert max(levels) == 4
    assert levels[:4] == [1, 2, 3, 4]
    # every later start refills the slot a finished request left: the server sees 4 again at once
    assert all(n == 4 for n in levels[4:])


def test_pipeline_beats_waves_when_lengths_differ():
    durations = [0.2, 0.02, 0.02, 0.02] * 4  # one long answer per wave
    wall_pipe, _, _ = _timeline(durations, Schedule(concurrency=4))
    wall_waves, _, _ = _timeline(durations, Schedule(concurrency=4), waves=True)
    assert wall_waves >= 4 * 0.2
    assert wall_pipe < 0.75 * wall_waves


def test_poisson_arrivals_are_seeded_and_have_the_asked_rate():
    a = arrival_offsets(4000, 50.0, np.random.default_rng(7))
    b = arrival_offsets(4000, 50.0, np.random.default_rng(7))
    assert np.array_equal(a, b)
    assert a[0] == 0.0
    assert np.all(np.diff(a) >= 0)
    gaps = np.diff(a)
    # mean gap 1/rate; exponential gaps have sd = mean, so 4 standard errors of the mean
    assert abs(gaps.mean() - 1 / 50.0) < 4 * (1 / 50.0) / math.sqrt(gaps.size)
    assert not np.array_equal(a, arrival_offsets(4000, 50.0, np.random.default_rng(8)))
    assert np.array_equal(arrival_offsets(5, None, np.random.default_rng(0)), np.zeros(5))


def test_requests_never_start_before_they_arrive():
    schedule = Schedule(concurrency=64, request_rate=200.0, seed=11)
    offsets = arrival_offsets(30, 200.0, np.random.default_rng(11))
    _, _events, starts = _timeline([0.001] * 30, schedule)
    for i, t in starts.items():  # seconds after the pipeline was started
        assert t >= offsets[i]


def test_first_failure_stops_new_starts_and_names_the_others():
    started: list[int] = []

    async def send(i: int) -> None:
        started.append(i)
        await asyncio.sleep(0.01)
        if i in (1, 2):
            raise ServerError(f"request {i} broke")

    with pytest.raises(ServerError, match=r"request \d broke \(and 1 more failed"):
        asyncio.run(run_pipeline(list(range(50)), send, schedule=Schedule(concurrency=4)))
    assert len(started) < 10


@pytest.mark.parametrize("kwargs", [{"concurrency": 0}, {"request_rate": 0.0}, {"request_rate": float("inf")},
                                    {"warmup": -1}])
def test_bad_schedules_are_usage_errors(kwargs):
    with pytest.raises(UsageError):
        Schedule(**kwargs)


def test_status_line():
    s = PipelineStats(total=10, started=0.0)
    s.add(requests=2, output_tokens=200, accepted=30.0, steps=10.0)
    assert s.line(now=4.0) == "2/10 requests, 50.0 output tok/s, AL 4.000, ETA 0m16s"
    assert "AL -" in PipelineStats(total=1, started=0.0).line(now=1.0)


# ---------------------------------------------------------------------------- over HTTP
def _prompts(n: int) -> list[ChatPrompt]:
    return [ChatPrompt(i, ({"role": "user", "content": f"question {i}"},),
                       hashlib.sha256(f"question {i}".encode()).hexdigest()) for i in range(n)]


def _plan(engine: str, n: int, **kw) -> CellPlan:
    return CellPlan(engine=engine, draft_len=K, thinking="off", sampling=SamplingInfo(temperature=0.0, max_tokens=64),
                    chat_template_kwargs={}, prompts=_prompts(n), dataset=DatasetInfo(name="t", count=n, hash="h" * 64),
                    target=ModelInfo(name="fake"), draft=ModelInfo(name="fake-draft"), draft_method="standalone",
                    served_model="fake-target", **kw)


def _measure(url, plan, out, source, *, resume=False, progress=None):
    async def main():
        async with ServerClient(url, policy=FAST) as client:
            return await measure_cell(client, plan, make_source(source, plan.engine), out, resume=resume,
                                      progress=progress)

    return asyncio.run(main())


def _counts(r):
    return (r.num_requests, r.num_verify_steps, r.num_accepted_drafts, tuple(r.histogram))


def test_warmup_requests_are_sent_but_not_recorded(tmp_path):
    with InProcessServer("sglang") as s:
        clean = _measure(s.url, _plan("sglang", 6), tmp_path / "a", "sglang-meta-info")
        seen_before = s.srv.next_request_number()
        warm = _measure(s.url, _plan("sglang", 6, warmup=3, concurrency=2), tmp_path / "b", "sglang-meta-info")
        sent = s.srv.next_request_number() - seen_before
    assert sent == 6 + 3 + 1  # the +1 is next_request_number's own count
    assert _counts(warm) == _counts(clean)


def test_progress_reports_a_status_line(tmp_path):
    lines: list[str] = []

    def progress(advance=0, *, total=None, description=None, status=None):
        if status:
            lines.append(status)

    with InProcessServer("sglang") as s:
        _measure(s.url, _plan("sglang", 4, concurrency=2), tmp_path, "sglang-meta-info", progress=progress)
    assert lines[-1].startswith("4/4 requests,")
    assert "output tok/s" in lines[-1]
    assert "AL " in lines[-1]


def test_windows_group_into_contiguous_batches():
    ws = list(range(100))
    groups = batch_windows(ws, 24)  # type: ignore[arg-type]
    assert len(groups) == 24
    assert [x for g in groups for x in g] == ws
    assert {len(g) for g in groups} <= {4, 5}
    assert batch_windows(ws[:7], 24) == [[x] for x in ws[:7]]  # type: ignore[arg-type]


@pytest.mark.parametrize(("session_s", "longest_s", "count"), [
    (100.0, 10.0, 10),   # ten spans of the longest request
    (100.0, 1.0, 24),    # capped at 24
    (100.0, 60.0, 2),    # never fewer than 2
    (100.0, 0.0, 24),    # nothing known about the requests: the cap
])
def test_counter_batches_are_as_long_as_the_longest_request(session_s, longest_s, count):
    """Batches shorter than a request share it with their neighbours and undercover
    (experiments/interval-calibration/counter_windows.md): one batch per span of the longest request."""
    assert batch_count(session_s, longest_s) == count


@pytest.mark.slow
def test_timed_counter_windows_count_every_step_once(tmp_path):
    # serve-reference advances its counters when a request finishes, so a window needs a finished request
    n = 24
    with InProcessServer("vllm") as s:
        clean = _measure(s.url, _plan("vllm", n), tmp_path / "clean", "vllm-prometheus")
    with InProcessServer("vllm", step_delay_s=0.002) as s:
        plan = _plan("vllm", n, concurrency=4, scrape_interval_s=0.01)
        rec = _measure(s.url, plan, tmp_path / "w", "vllm-prometheus")
    assert _counts(rec) == _counts(clean)
    rows = [json.loads(x) for x in (tmp_path / "w" / "requests.jsonl").read_text().splitlines()]
    windows = sum(r["extra"]["windows"] for r in rows)
    assert windows > 1
    assert min(2, windows) <= len(rows) <= min(windows, 24)  # one batch per span of the longest request
    assert any("as long as the longest request" in w for w in rec.warnings)
    assert sorted(i for r in rows for i in r["extra"]["unit"]) == list(range(n))
    assert any(f"{windows} windows" in w for w in rec.warnings)
    assert rec.uncertainty is not None
    assert rec.uncertainty.windows == windows
    assert rec.uncertainty.clusters == sum(1 for r in rows if r["num_verify_steps"] > 0)  # zero-step batches weigh nothing
    assert rec.uncertainty.unit == "counter window batch"
    assert any("fewer than 20" in w for w in rec.warnings) == (windows < 20)


def test_a_dead_counter_session_is_set_aside_and_redone(tmp_path):
    with InProcessServer("vllm") as s:
        clean = _measure(s.url, _plan("vllm", 8), tmp_path / "clean", "vllm-prometheus")
        d = tmp_path / "cell"
        d.mkdir()
        (d / SESSION_FILE).write_text('{"window": 0}\n')
        rec = _measure(s.url, _plan("vllm", 8, concurrency=3), d, "vllm-prometheus")
    assert _counts(rec) == _counts(clean)
    assert any("set aside" in w for w in rec.warnings)
    assert list(d.glob("windows.discarded-*.jsonl"))


def test_foreign_traffic_during_a_windowed_session_is_refused(tmp_path):
    with InProcessServer("vllm", step_delay_s=0.01) as s:
        async def main():
            async with ServerClient(s.url, policy=FAST) as client:
                plan = _plan("vllm", 6, concurrency=2, scrape_interval_s=0.05)
                task = asyncio.create_task(measure_cell(client, plan, make_source("vllm-prometheus", "vllm"),
                                                        tmp_path))
                await asyncio.sleep(0.3)
                async with ServerClient(s.url, policy=FAST) as other:  # someone else's request
                    await other.post_json("/v1/chat/completions", {"model": "fake-target", "max_tokens": 8,
                                          "messages": [{"role": "user", "content": "hi"}]}, label="foreign")
                return await task

        with pytest.raises(ServerError, match="other traffic"):
            asyncio.run(main())


# ---------------------------------------------------------------------------- one draft length only
def test_adaptive_sglang_server_is_refused():
    with InProcessServer("sglang", speculative_adaptive=True) as s:
        async def main():
            async with ServerClient(s.url, policy=FAST) as client:
                return await probe_server(client, "sglang")

        with pytest.raises(MixedDraftLengthsError, match="adaptive"):
            asyncio.run(main())


@pytest.mark.parametrize(("threshold", "refused"), [(0.7, True), (1.0, False)])
def test_a_lossy_sglang_server_is_refused(threshold: float, refused: bool) -> None:
    """--speculative-accept-threshold-single below 1 accepts drafts the target would reject (issue 35)."""
    from golden_al.errors import LossyAcceptanceError

    with InProcessServer("sglang", accept_threshold_single=threshold) as s:
        async def main():
            async with ServerClient(s.url, policy=FAST) as client:
                return await probe_server(client, "sglang")

        if refused:
            with pytest.raises(LossyAcceptanceError, match=r"speculative_accept_threshold_single=0\.7") as info:
                asyncio.run(main())
            assert info.value.exit_code == 2
        else:
            assert asyncio.run(main()).draft_len == 3


def test_lossy_thresholds_are_read_and_mistyped_ones_refused() -> None:
    from golden_al.engines import sglang
    from golden_al.errors import LossyAcceptanceError, UsageError

    sglang.require_lossless({}, "x")  # versions before the flags: lossless
    with pytest.raises(LossyAcceptanceError, match=r"\(speculative_accept_threshold_acc=0\.5, below 1\.0\)"):
        sglang.require_lossless({"speculative_accept_threshold_single": 1.0,
                                 "speculative_accept_threshold_acc": 0.5}, "x")
    with pytest.raises(UsageError, match=r"speculative_accept_threshold_single is '0\.5', not a number"):
        sglang.require_lossless({"speculative_accept_threshold_single": "0.5"}, "x")


def _c(steps: int, proposed: int | None) -> AcceptanceCounts:
    return AcceptanceCounts(k=K, num_verify_steps=steps, num_accepted_drafts=steps, num_draft_tokens=proposed)


def test_mixed_draft_lengths_in_responses_are_refused():
    m = MixedDraftLengths()
    m.check(_c(10, 30), "request 0")
    m.check(_c(7, 21), "request 1")
    m.check(_c(5, None), "request 2")  # no proposed count: nothing to check
    with pytest.raises(MixedDraftLengthsError, match=r"request 3: 2 drafts proposed per verify step, but request 0"):
        m.check(_c(10, 20), "request 3")
    with pytest.raises(MixedDraftLengthsError, match=r"2.500 per step"):
        MixedDraftLengths().check(_c(10, 25), "request 9")
