"""The interval of a cell over its clusters: order-free, turns and repeated prompts merged."""

from __future__ import annotations

import numpy as np
import pytest

from distributions.uncertainty import al_interval_result
from golden_al.measure.schema import RequestResult
from golden_al.measure.totals import clusters_from_requests, interval_from_requests


def _row(i: int, acc: int, steps: int, *, k: int = 3, turn: int | None = None, prompt: str | None = None,
         extra: dict | None = None) -> RequestResult:
    hist = [0] * (k + 1)
    return RequestResult(index=i, request_id=f"r{i}-{turn}", draft_len=k, prompt_hash=prompt or f"h{i}",
                         num_output_tokens=acc + steps, num_verify_steps=steps, num_accepted_drafts=acc,
                         histogram=hist, per_position_accepted=[0] * k, turn=turn, extra=extra)


def _rows(n: int, seed: int = 0) -> list[RequestResult]:
    rng = np.random.default_rng(seed)
    steps = rng.integers(10, 80, n)
    return [_row(i, int(rng.binomial(3 * s, 0.6)), int(s)) for i, s in enumerate(steps)]


def test_completion_order_does_not_change_the_interval():
    rows = _rows(24)
    a, unit = interval_from_requests(rows, 3)
    shuffled = [rows[i] for i in np.random.default_rng(1).permutation(len(rows))]
    b, _ = interval_from_requests(shuffled, 3)
    assert unit == "request"
    assert a.ci == b.ci
    assert a.clusters == 24


def test_other_draft_lengths_are_ignored_and_match_the_library():
    rows = _rows(12)
    other = [_row(99, 5, 5, k=2)]
    iv, _ = interval_from_requests(rows + other, 3, seed=4)
    ref = al_interval_result([float(r.num_accepted_drafts) for r in rows], [float(r.num_verify_steps) for r in rows],
                             seed=4, draft_len=3)
    assert iv.ci == pytest.approx(ref.ci, abs=1e-12)


def test_turns_of_one_conversation_are_one_cluster():
    rows = [_row(0, 10, 10, turn=0), _row(0, 20, 10, turn=1), _row(1, 5, 10, turn=0)]
    acc, steps, unit = clusters_from_requests(rows, 3)
    assert unit == "conversation"
    assert sorted(zip(acc, steps, strict=True)) == [(5.0, 10.0), (30.0, 20.0)]


def test_pooling_merges_the_same_prompt_measured_twice():
    rows = [_row(0, 10, 10), _row(1, 5, 10), _row(0, 12, 10)]
    assert len(clusters_from_requests(rows, 3)[0]) == 3
    acc, steps, _ = clusters_from_requests(rows, 3, merge_same_prompt=True)
    assert sorted(zip(acc, steps, strict=True)) == [(5.0, 10.0), (22.0, 20.0)]


def test_counter_batches_are_clusters_even_with_a_shared_index():
    rows = [_row(0, 10 + i, 10, extra={"batch": i, "windows": 2}) for i in range(3)]
    acc, _, unit = clusters_from_requests(rows, 3)
    assert unit == "counter window batch"
    assert len(acc) == 3


def test_one_builder_counts_prompts_and_refuses_zero_steps_the_same_way():
    """cell_totals is what the reference engine's and the servers' records are built from."""
    from golden_al.errors import NoVerifyStepsError
    from golden_al.measure.totals import cell_totals

    rows = [*_rows(6), _row(6, 0, 0)]
    totals = cell_totals(rows, 3)
    assert totals.num_requests == 7
    assert totals.unit == "request"
    assert any("1 request(s) had no verify step" in n for n in totals.notes)
    windows = [_row(0, 30, 20, extra={"batch": 0, "windows": 2, "unit": [0, 1, 2]}),
               _row(3, 40, 25, extra={"batch": 1, "windows": 2, "unit": [3, 4]})]
    w = cell_totals(windows, 3)
    assert (w.num_requests, w.unit) == (5, "counter window batch")  # prompts, not lines
    assert not any("no verify step" in n for n in w.notes)
    with pytest.raises(NoVerifyStepsError, match=r"the 2 requests at k=3 \(thinking on\) produced zero verify steps"):
        cell_totals([_row(0, 0, 0), _row(1, 0, 0)], 3, what=" (thinking on)")


def test_the_reference_and_server_records_share_the_builder():
    """One record builder (issue 24): only ``measure/records.py`` constructs a MeasurementRecord; the
    reference engine, servers, imports and derivations call it, and none of them sums counts or raises on
    zero steps by itself."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "golden_al"
    builders = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                      if "MeasurementRecord(" in p.read_text() and p.name != "schema.py")
    assert builders == ["measure/records.py"]
    for rel in ("measure/reference.py", "measure/cell_rows.py", "measure/imported/common.py", "measure/derive.py"):
        text = (root / rel).read_text()
        assert "build_record(" in text, rel
        assert "NoVerifyStepsError(" not in text, rel


def test_one_totals_only_line_makes_the_records_histogram_unknown():
    """The builder, not each producer, decides: a line without a per-step histogram makes the record's
    histogram unknown (zeros), never a partial sum of the lines that have one."""
    from golden_al.measure.records import build_record
    from golden_al.measure.schema import DatasetInfo, ModelInfo, SamplingInfo

    known = RequestResult(index=0, request_id="a", draft_len=3, prompt_hash="h0", num_output_tokens=12,
                          num_verify_steps=4, num_accepted_drafts=6, histogram=[1, 0, 1, 2],
                          per_position_accepted=[3, 2, 1])
    totals_only = _row(1, 5, 4).model_copy(update={"histogram_known": False})

    def record(rows: list[RequestResult]):
        return build_record(results=rows, draft_len=3, engine="vllm", engine_version=None, mode="imported",
                            estimate=False, target=ModelInfo(name="t", source="server"),
                            draft=ModelInfo(name="d", source="server"), draft_method="mtp", thinking="off",
                            chat_template_kwargs={}, sampling=SamplingInfo(temperature=0.0, top_p=1.0, top_k=None,
                                                                           max_tokens=8),
                            dataset=DatasetInfo(name="x", count=2, hash="0", source_hash="0", source="x"),
                            al_source="test", provenance={}, seed=0)

    assert (record([known]).histogram_known, record([known]).histogram) == (True, [1, 0, 1, 2])
    mixed = record([known, totals_only])
    assert (mixed.histogram_known, mixed.histogram, mixed.per_position_accepted) == (False, [0] * 4, [0] * 3)
    assert (mixed.num_verify_steps, mixed.num_accepted_drafts) == (8, 11)
