"""One histogram per draft length where the server reports each step's length (vLLM ``per_step_drafted``).

The in-process serve-reference (fake engine) stands for a server that changes its draft length step
by step (``draft_lens``) and reports it at vLLM's detailed level.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from _inproc import InProcessServer

from distributions.counts import split_steps_by_draft_len
from distributions.errors import DistributionError
from golden_al.httpclient import RetryPolicy, ServerClient
from golden_al.measure.records import read_request_results
from golden_al.measure.schema import DatasetInfo, ModelInfo, SamplingInfo
from golden_al.measure.server import CellPlan, ChatPrompt, measure_cell
from golden_al.plugin.sources import make_source

K = 3
FAST = RetryPolicy(max_attempts=2, backoff_initial_s=0.01, backoff_max_s=0.05, request_timeout_s=10)


def test_steps_split_by_length_and_budget_capped_steps_stay_at_k():
    # positions: 1, 3, 4, 7, 9; budget 12 caps nothing below k until position 9 (12 - 9 = 3)
    split = split_steps_by_draft_len([1, 0, 2, 1, 0], [3, 1, 3, 2, 1], k=3, max_tokens=12)
    assert sorted(split) == [1, 2, 3]
    assert split[3].histogram == (0, 1, 1, 0)
    assert split[2].histogram == (0, 1, 0)
    assert split[1].histogram == (2, 0)
    # the last step of a request near its budget proposes max_tokens - s drafts: a step of k
    capped = split_steps_by_draft_len([3, 2, 1], [3, 3, 2], k=3, max_tokens=10)  # s = 1, 5, 8: 10 - 8 = 2
    assert list(capped) == [3]
    assert capped[3].num_verify_steps == 3
    # an engine that stops at the answer's end: output_tokens caps it the same way
    assert list(split_steps_by_draft_len([1, 0], [3, 1], k=3, output_tokens=4)) == [3]  # s = 1, 3: 4 - 3 = 1
    assert split_steps_by_draft_len([0, 2], [0, 3], k=3) == {3: split_steps_by_draft_len([2], [3], k=3)[3]}


@pytest.mark.parametrize(("acc", "dra"), [([1, 2], [3]), ([3], [2]), ([1], [4])])
def test_impossible_steps_are_refused(acc, dra):
    with pytest.raises(DistributionError):
        split_steps_by_draft_len(acc, dra, k=3)


def _plan(n: int = 6, max_tokens: int = 64) -> CellPlan:
    prompts = [ChatPrompt(i, ({"role": "user", "content": f"q {i}"},), hashlib.sha256(f"q {i}".encode()).hexdigest())
               for i in range(n)]
    return CellPlan(engine="vllm", draft_len=K, thinking="off", sampling=SamplingInfo(temperature=0.0,
                    max_tokens=max_tokens), chat_template_kwargs={}, prompts=prompts,
                    dataset=DatasetInfo(name="t", count=n, hash="h" * 64), target=ModelInfo(name="fake"),
                    draft=ModelInfo(name="fake-draft"), draft_method="standalone", served_model="fake-target")


def _measure(url: str, out: Path):
    async def main():
        async with ServerClient(url, policy=FAST) as client:
            return await measure_cell(client, _plan(), make_source("vllm-per-request", "vllm"), out)

    return asyncio.run(main())


def _server_steps(out: Path) -> tuple[int, int]:
    """Every step the detailed responses reported, from the rows of the main record and its splits."""
    rows = read_request_results(out / "requests.jsonl")
    for sub in sorted((out / "by_draft_len").glob("k*")) if (out / "by_draft_len").exists() else []:
        rows += read_request_results(sub / "requests.jsonl")
    return sum(int(r.num_verify_steps) for r in rows), sum(int(r.num_accepted_drafts) for r in rows)


def test_a_server_that_changes_its_draft_length_gets_one_record_per_length(tmp_path):
    with InProcessServer("vllm", k=K, draft_lens=(3, 2, 3, 1), per_request_metrics="detailed") as s:
        rec = _measure(s.url, tmp_path / "cell")
    main = tmp_path / "cell"
    assert rec.draft_len == K
    assert any("other lengths" in w and "by_draft_len/k2" in w for w in rec.warnings)
    subs = {int(p.name[1:]): json.loads((p / "measurement.json").read_text())
            for p in (main / "by_draft_len").glob("k*")}
    assert set(subs) == {1, 2}
    for d, r in subs.items():
        assert r["draft_len"] == d
        assert len(r["histogram"]) == d + 1
        assert r["al"] <= d + 1
        assert r["al_source"] == "vllm-per-request-split"
        assert any("one histogram per draft length" in w for w in r["warnings"])
        assert r["num_requests"] > 0
    # nothing lost, nothing counted twice: the three records hold every reported step once
    steps, acc = _server_steps(main)
    assert steps == rec.num_verify_steps + sum(r["num_verify_steps"] for r in subs.values())
    assert acc == rec.num_accepted_drafts + sum(r["num_accepted_drafts"] for r in subs.values())
    # the k=3 record holds steps drafted at 3 only (the fake drafts 3 on every other step)
    assert rec.num_verify_steps >= subs[2]["num_verify_steps"]
    # a searched directory yields the cell's own record; a split record is used only when named
    from golden_al.measure.records import expand_record_paths

    assert expand_record_paths([tmp_path]) == [main / "measurement.json"]
    named = main / "by_draft_len" / "k2" / "measurement.json"
    assert expand_record_paths([named]) == [named]
    assert any("conditioned on that choice" in w for w in subs[2]["warnings"])


def test_a_fixed_length_server_is_not_split(tmp_path):
    with InProcessServer("vllm", k=K, per_request_metrics="detailed") as s:
        detailed = _measure(s.url, tmp_path / "d")
    with InProcessServer("vllm", k=K, per_request_metrics="summary") as s:
        summary = _measure(s.url, tmp_path / "s")
    assert not (tmp_path / "d" / "by_draft_len").exists()
    assert (detailed.num_verify_steps, detailed.histogram) == (summary.num_verify_steps, summary.histogram)
    assert not any("other lengths" in w for w in detailed.warnings)
