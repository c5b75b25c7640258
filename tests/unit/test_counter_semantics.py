"""The one counter-semantics validator, on every source: rules, file and line, values named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden_al.engines.vllm.responses import parse_vllm_spec_metrics
from golden_al.errors import CounterSemanticsError, SchemaError
from golden_al.formats.logs import read_log_file
from golden_al.formats.validate import check_counts
from golden_al.measure.records import read_request_results


@pytest.mark.parametrize(("kwargs", "rule"), [
    ({"accepted": 5, "drafted": 4}, "accepted <= drafted"),
    ({"drafted": 13, "drafts": 4, "k": 3}, "drafted <= k * drafts"),
    ({"accepted": 13, "drafts": 4, "k": 3}, "accepted <= k * drafts"),
    ({"per_position": [3, 4, 1]}, "non-increasing"),
    ({"per_position": [5, 1], "drafts": 4}, "position 0"),
    ({"per_position": [1, 1, 1, 1], "k": 3}, "at most k positions"),
    ({"al": 4.5, "k": 3}, "AL in [1, k+1]"),
    ({"al": 0.5}, "AL in"),
    ({"accepted": float("nan")}, "finite"),
    ({"drafts": -1}, "finite and >= 0"),
])
def test_each_rule_is_named_with_the_values(kwargs: dict, rule: str) -> None:
    with pytest.raises(CounterSemanticsError) as err:
        check_counts(what="test source", path="f.log", line=7, **kwargs)
    assert rule in str(err.value)
    assert err.value.exit_code == 2
    assert str(err.value).startswith("f.log:7: test source")


def test_consistent_counts_pass() -> None:
    check_counts(what="ok", accepted=30, drafted=30, drafts=10, k=3, per_position=[10, 10, 10], al=4.0)
    check_counts(what="ok", accepted=0, drafted=0, drafts=0, k=3)


def test_log_line_with_accepted_above_drafted_names_its_line(tmp_path: Path) -> None:
    log = tmp_path / "v.log"
    log.write_text("x\ny\nSpecDecoding metrics: Mean acceptance length: 2.00, Accepted throughput: 1.0 tokens/s, "
                   "Drafted throughput: 1.0 tokens/s, Accepted: 50 tokens, Drafted: 30 tokens, Per-position "
                   "acceptance rate: 0.5, 0.3, Avg Draft acceptance rate: 50.0%\n")
    with pytest.raises(CounterSemanticsError, match=r"v\.log:3: .*accepted 50 > drafted 30"):
        read_log_file(log)


def test_vllm_response_reported_al_outside_the_range() -> None:
    spec = {"acceptance_histogram": [2, 3, 5], "num_drafts": 10, "num_draft_tokens": 20, "num_accepted_tokens": 13,
            "mean_acceptance_length": 9.0}
    with pytest.raises(CounterSemanticsError, match="AL in"):
        parse_vllm_spec_metrics(spec, k=2)


def test_records_with_impossible_counts_are_refused_at_their_line(tmp_path: Path) -> None:
    good = {"index": 0, "request_id": "a", "draft_len": 2, "prompt_hash": "h", "num_output_tokens": 9,
            "num_verify_steps": 4, "num_accepted_drafts": 5, "histogram": [0, 3, 1], "per_position_accepted": [4, 1]}
    bad = {**good, "request_id": "b", "per_position_accepted": [1, 4]}
    f = tmp_path / "requests.jsonl"
    f.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(SchemaError) as err:
        read_request_results(f)
    assert err.value.line == 2
    assert "non-increasing" in str(err.value)
