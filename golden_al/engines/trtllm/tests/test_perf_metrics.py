"""The ``trtllm-perf-metrics`` source on drained ``/perf_metrics`` answers written from the documented entry format
(``get_perf_metrics`` in ``tensorrt_llm/serve/openai_server.py``): a request's steps are proven by its drafts and
its iteration span together, and an entry that contradicts itself is refused, naming the field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from golden_al.errors import GoldenALError, MetricMissingError, ServerError

from ..server import TrtllmPerfMetricsSource, perf_record
from ._drained import unit_delta

K = 3


def _entry(rid: Any, first: int, steps: int, drafted: int, accepted: int, *, rate: float | None = None) -> dict:
    pm: dict[str, Any] = {"first_iter": first, "last_iter": first + steps, "timing_metrics": {},
                          "kv_cache_metrics": {}}
    if drafted:
        pm["speculative_decoding"] = {"acceptance_rate": accepted / drafted if rate is None else rate,
                                      "total_accepted_draft_tokens": accepted, "total_draft_tokens": drafted}
    return {"request_id": rid, "perf_metrics": pm}


def _delta(drains: Sequence[list[Any]]) -> Any:
    return unit_delta(TrtllmPerfMetricsSource(), "/perf_metrics", drains, K)


def test_requests_sum_to_the_units_counts_and_finished_requests():
    # 5 steps of k=3, the last two drafting 2 and 1 (the tail), then 2 steps of 3
    after, counts = _delta([[], [_entry(7, 10, 5, 12, 6), _entry(8, 20, 2, 6, 1)]])
    assert (counts.num_verify_steps, counts.num_accepted_drafts, counts.num_draft_tokens) == (7, 7, 18)
    assert counts.histogram is None  # the entries do not split steps
    assert after.finished == 2.0


def test_a_request_without_drafts_counts_no_step_but_finishes():
    after, counts = _delta([[], [_entry(1, 0, 3, 9, 3), _entry(2, 5, 0, 0, 0)]])
    assert (counts.num_verify_steps, after.finished) == (3, 2.0)


@pytest.mark.parametrize(("entry", "said"), [
    (_entry(1, 0, 10, 9, 3), "ran 10 iterations after its context iteration but drafted 9 tokens, which take 3 to 9"),
    (_entry(1, 0, 2, 9, 3), "ran 2 iterations after its context iteration but drafted 9 tokens"),  # > k a step
])
def test_steps_the_iterations_do_not_confirm_are_refused(entry: dict, said: str):
    with pytest.raises(ServerError, match=said.replace("(", r"\(").replace(")", r"\)")):
        _delta([[], [entry]])


@pytest.mark.parametrize(("item", "said"), [
    ({"request_id": 1}, "an entry without a perf_metrics object"),
    (_entry(1, 0, 3, 9, 3, rate=0.9), "acceptance_rate 0.9 is not total_accepted_draft_tokens / total_draft_tokens"),
    (_entry(1, 0, 3, 9, 10), "total_accepted_draft_tokens 10 exceeds total_draft_tokens 9"),
    ({"request_id": 1, "perf_metrics": {"first_iter": 5, "last_iter": 2}}, "last_iter 2 is before first_iter 5"),
    ({"request_id": 1, "perf_metrics": {"first_iter": "0", "last_iter": 2}}, "first_iter is '0'"),
    ({"request_id": 1, "perf_metrics": {"first_iter": 0, "last_iter": 3,
                                        "speculative_decoding": {"total_draft_tokens": 9}}},
     "total_accepted_draft_tokens is None"),
])
def test_entries_that_contradict_themselves_are_refused_naming_the_field(item: Any, said: str):
    with pytest.raises(ServerError, match=said.replace("(", r"\(").replace(")", r"\)")):
        perf_record(item, "GET /perf_metrics")


def test_a_request_reported_twice_is_refused():
    with pytest.raises(ServerError, match="request '1' is reported twice"):
        _delta([[_entry(1, 0, 3, 9, 3)], [_entry(1, 0, 3, 9, 3)]])


def test_a_unit_whose_requests_drafted_nothing_says_speculation_is_off():
    with pytest.raises(MetricMissingError, match="speculative decoding is off"):
        _delta([[], [_entry(1, 0, 3, 0, 0)]])


def test_not_a_list_is_refused():
    with pytest.raises(GoldenALError, match="not a list of request entries"):
        _delta([{"error": "x"}])  # type: ignore[list-item]


def test_the_units_decode_time_is_its_entries_timing_metrics_summed():
    """``timing_metrics`` (seconds): last_token_time - first_token_time per request, summed over the unit, in ms;
    an entry without them (or reversed) leaves the unit untimed rather than timed in part."""
    import asyncio

    from ._drained import DrainedClient

    def timed(entry: dict, t0: Any, t1: Any) -> dict:
        entry["perf_metrics"]["timing_metrics"] = {"first_token_time": t0, "last_token_time": t1}
        return entry

    def decode(drained: list[Any]) -> float | None:
        source, client = TrtllmPerfMetricsSource(), DrainedClient("/perf_metrics", [[], drained])
        before = asyncio.run(source.snapshot(client))  # type: ignore[arg-type]
        return source.decode_ms(before, asyncio.run(source.snapshot(client)))  # type: ignore[arg-type]

    assert decode([timed(_entry(1, 0, 3, 9, 3), 100.25, 100.75), timed(_entry(2, 5, 2, 6, 1), 7.0, 7.5)]) \
        == pytest.approx(1000.0)
    assert decode([timed(_entry(1, 0, 3, 9, 3), 100.25, 100.75), _entry(2, 5, 2, 6, 1)]) is None
    assert decode([timed(_entry(1, 0, 3, 9, 3), 2.0, 1.0)]) is None
    assert decode([timed(_entry(1, 0, 3, 9, 3), "1", 2.0)]) is None
