"""The ``trtllm-iteration-stats`` source on drained ``/metrics`` answers written from the documented row format
(``IterationStats`` with ``specDecodingStats``): attention-DP copies, duplicated all-rank rows, rows that
cannot be split into steps, and a stream that opens mid-request."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from golden_al.errors import GoldenALError, MetricMissingError, ServerError

from ..server import TrtllmIterationSource
from ._drained import DrainedClient, unit_delta

K = 3


def _row(it: int, drafted: int, accepted: int, requests: int, *, completed: int = 0, **extra: Any) -> dict[str, Any]:
    al = (accepted + requests) / requests if requests else 0.0
    return {"iter": it, "numCompletedRequests": completed, **extra,
            "specDecodingStats": {"numDraftTokens": drafted, "numAcceptedTokens": accepted,
                                  "numRequestsWithDraftTokens": requests, "acceptanceLength": al}}


def _request(first: int, accepted: Sequence[int], **extra: Any) -> list[dict[str, Any]]:
    """A request's context iteration, then one row per step; the last completes it."""
    rows = [_row(first, 0, 0, 0, **extra)]
    rows += [_row(first + 1 + i, K, n, 1, completed=int(i == len(accepted) - 1), **extra) for i, n in enumerate(accepted)]
    return rows


def _delta(drains: Sequence[list[dict[str, Any]]]) -> Any:
    return unit_delta(TrtllmIterationSource(), "/metrics", drains, K)


def test_one_request_gives_an_exact_histogram_and_its_completion():
    after, counts = _delta([[], _request(0, [3, 1, 0, 2])])
    assert (counts.num_verify_steps, counts.num_accepted_drafts, counts.num_draft_tokens) == (4, 6, 12)
    assert list(counts.histogram) == [1, 1, 1, 1]
    assert after.finished == 1


def test_attention_dp_copies_of_rank_0_are_not_counted_twice():
    rank0 = _request(0, [3, 1, 2], attentionDpRank=0)
    rank1 = _request(0, [3, 1, 2], attentionDpRank=1)
    _, counts = _delta([[], rank0 + rank1])
    assert (counts.num_verify_steps, counts.num_accepted_drafts) == (3, 6)


def test_an_iteration_seen_twice_without_a_rank_is_refused():
    rows = _request(0, [3, 1])
    with pytest.raises(GoldenALError, match="appears twice"):
        _delta([[], rows + rows[1:2]])


def test_rows_of_several_requests_cannot_be_split_into_steps():
    rows = [_row(0, 0, 0, 0), _row(1, 2 * K, 4, 2, completed=2)]
    with pytest.raises(MetricMissingError, match="several requests"):
        _delta([[], rows])


def test_a_stream_that_opens_on_a_drafting_step_lost_rows_before_it():
    """The first rows were dropped by a full queue: what is left starts mid-request."""
    rows = _request(40, [3, 1, 2])[2:]
    with pytest.raises(ServerError, match="iterations before 42"):
        _delta([[], rows])


def test_a_gap_between_two_drains_is_refused():
    first = _request(0, [3])
    later = _request(5, [1, 2])
    source = TrtllmIterationSource()
    client = DrainedClient("/metrics", [first, later])

    async def run() -> None:
        before = await source.snapshot(client)  # type: ignore[arg-type]
        after = await source.snapshot(client)  # type: ignore[arg-type]
        source.delta_counts(before, after, K, "unit")

    with pytest.raises(ServerError, match=r"iterations 2\.\.4"):
        asyncio.run(run())


def test_a_step_accepting_more_than_k_is_refused():
    rows = [_row(0, 0, 0, 0), _row(1, K + 1, K + 1, 1, completed=1)]
    with pytest.raises(ServerError, match=f"more than k = {K}"):
        _delta([[], rows])
