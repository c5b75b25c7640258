"""golden-al import sglang-bench | sglang-log: SGLang bench_serving output, saved responses, server logs.

Fixtures are generated here, small, with upstream's field names:

* bench run objects as ``benchmark()`` in sgl-project/sglang ``python/sglang/benchmark/serving.py``
  (commit 00f9ec47) appends them to ``--output-file`` (``server_info`` is ``GET /server_info``:
  the server's arguments, ``version`` and ``internal_states[i].avg_spec_accept_length``);
* responses with ``meta_info`` as ``tokenizer_manager.py`` ``_calculate_spec_decoding_metrics``
  fills it (0.5.23), and OpenAI responses with ``sglext.spec_tokens_details``;
* ``Decode batch`` lines in the f-string of ``scheduler_components/metrics_reporter.py`` and the
  ``server_args=ServerArgs(...)`` line of ``entrypoints/engine.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from golden_al.cli.main import main

K = 3
def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["import", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _rec(d: Path) -> dict:
    return json.loads((d / "measurement.json").read_text())


SETTINGS = ["--thinking", "off", "--temperature", "0", "--max-tokens", "256"]


def _requests(n: int = 12, seed: int = 7) -> list[list[int]]:
    """Per request, the accepted drafts of each verify step."""
    rng = np.random.default_rng(seed)
    return [[int(a) for a in rng.binomial(K, 0.6, size=int(rng.integers(5, 40)))] for _ in range(n)]


def _meta(steps: list[int]) -> dict:
    hist = [0] * (max(steps) + 1)  # SGLang grows the histogram only as far as the largest value seen
    for a in steps:
        hist[a] += 1
    completion = 1 + sum(a + 1 for a in steps)  # the first token comes from prefill
    return {"id": "r", "finish_reason": {"type": "length", "length": completion}, "prompt_tokens": 20,
            "completion_tokens": completion, "cached_tokens": 0,
            "spec_verify_ct": len(steps), "spec_accept_length": completion / len(steps),
            "spec_accept_rate": sum(steps) / (len(steps) * K), "spec_num_correct_drafts": sum(steps),
            "spec_num_proposed_drafts": len(steps) * K, "spec_correct_drafts_histogram": hist,
            "e2e_latency": 0.5}


def _server_info(**over) -> dict:
    info = {"model_path": "Qwen/Qwen3-8B", "served_model_name": "qwen3-8b", "tp_size": 1, "dp_size": 1,
            "speculative_algorithm": "EAGLE3", "speculative_draft_model_path": "org/eagle3",
            "speculative_num_steps": K, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": K + 1,
            "speculative_adaptive": False, "decode_log_interval": 40, "version": "0.5.23",
            "internal_states": [{"avg_spec_accept_length": None, "last_gen_throughput": 812.3}]}
    info.update(over)
    return info


def _bench_run(reqs: list[list[int]], *, details: bool = True, **info_over) -> dict:
    lens = [1 + sum(a + 1 for a in steps) for steps in reqs]
    al = sum(a + 1 for steps in reqs for a in steps) / sum(len(s) for s in reqs)
    info = _server_info(**info_over)
    info["internal_states"][0]["avg_spec_accept_length"] = al
    run: dict[str, Any] = {"tag": None, "backend": "sglang", "dataset_name": "random", "request_rate": float("inf"),
           "max_concurrency": 8, "sharegpt_output_len": None, "random_input_len": 1024, "random_output_len": 256,
           "random_range_ratio": 0.0, "server_info": info, "duration": 12.5, "completed": len(reqs),
           "total_input_tokens": 20 * len(reqs), "total_output_tokens": sum(lens),
           "total_output_tokens_retokenized": sum(lens), "request_throughput": 1.0, "output_throughput": 100.0,
           "mean_ttft_ms": 20.0, "median_ttft_ms": 20.0, "mean_itl_ms": 5.0, "concurrency": 7.9,
           "accept_length": al, "max_output_tokens_per_s": 120.0, "max_concurrent_requests": 8}
    if details:
        run |= {"input_lens": [20] * len(reqs), "output_lens": lens, "ttfts": [0.02] * len(reqs),
                "itls": [[0.005]] * len(reqs), "generated_texts": ["x"] * len(reqs), "errors": [""] * len(reqs)}
    return run


def _jsonl(path: Path, objs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


def _truth(reqs: list[list[int]]) -> float:
    return 1 + sum(map(sum, reqs)) / sum(map(len, reqs))


def test_bench_run_alone_is_one_honestly_labelled_aggregate(tmp_path, capsys):
    reqs = _requests()
    f = _jsonl(tmp_path / "bench.jsonl", [_bench_run(reqs)])
    code, out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 0, err
    r = _rec(tmp_path / "o")
    assert r["engine"] == "sglang"
    assert r["mode"] == "imported"
    assert r["engine_version"] == "0.5.23"
    assert r["draft_len"] == K  # from server_info's speculative_num_steps
    assert r["target"]["name"] == "qwen3-8b"
    assert r["al"] == pytest.approx(_truth(reqs))
    assert r["al_source"] == "sglang-bench-aggregate"
    assert r["al_ci95"] == [1.0, K + 1.0]
    assert r["uncertainty"]["clusters"] == 1
    assert r["histogram_known"] is False
    assert r["histogram"] == [0] * (K + 1)
    # the step estimate (output tokens - requests) / accept_length is exact when nothing else ran on the server
    assert r["num_verify_steps"] == pytest.approx(sum(map(len, reqs)))
    assert r["num_requests"] == len(reqs)
    assert r["provenance"]["imported_tool"] == "sglang.bench_serving"
    assert r["provenance"]["server_version"] == "0.5.23"
    assert r["provenance"]["imported_from"][0]["path"] == str(f)
    assert any("estimated" in w for w in r["warnings"])
    assert any("aggregate" in w for w in r["warnings"])
    assert "no interval" in err
    assert "over 1 windows" in out


def test_bench_run_with_saved_responses_counts_requests(tmp_path, capsys):
    reqs = _requests()
    bench = _jsonl(tmp_path / "bench.jsonl", [_bench_run(reqs)])
    resp = _jsonl(tmp_path / "responses.jsonl", [{"text": "x", "meta_info": _meta(s)} for s in reqs])
    code, out, err = _run(capsys, "sglang-bench", str(bench), str(resp), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 0, err
    r = _rec(tmp_path / "o")
    assert r["al_source"] == "sglang-meta-info"
    assert r["al"] == pytest.approx(_truth(reqs))
    assert r["uncertainty"]["unit"] == "request"
    assert r["uncertainty"]["clusters"] == len(reqs)
    assert r["histogram_known"] is True
    assert sum(r["histogram"]) == sum(map(len, reqs))
    assert r["num_accepted_drafts"] == sum(map(sum, reqs))
    lo, hi = r["al_ci95"]
    assert lo < r["al"] < hi < K + 1
    rows = (tmp_path / "o" / "requests.jsonl").read_text().splitlines()
    assert len(rows) == len(reqs)
    assert json.loads(rows[0])["num_output_tokens"] == 1 + sum(a + 1 for a in reqs[0])
    assert len(r["provenance"]["imported_from"]) == 2
    assert f"over {len(reqs)} requests" in out


def test_openai_responses_with_spec_tokens_details_alone(tmp_path, capsys):
    reqs = _requests(n=6)
    objs = [{"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": "x"}}],
             "sglext": {"spec_tokens_details": {k: v for k, v in _meta(s).items()
                                                if k.startswith("spec_")}}} for s in reqs]
    f = _jsonl(tmp_path / "r.jsonl", objs)
    code, _out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 0, err
    r = _rec(tmp_path / "o")
    assert r["draft_len"] == K  # inferred: proposed / verify steps
    assert r["al"] == pytest.approx(_truth(reqs))
    assert r["uncertainty"]["clusters"] == len(reqs)


def test_adaptive_speculation_is_refused(tmp_path, capsys):
    f = _jsonl(tmp_path / "bench.jsonl", [_bench_run(_requests(), speculative_adaptive=True)])
    code, _out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert "adaptive" in err
    assert "per-step draft length" in err
    assert not (tmp_path / "o" / "measurement.json").exists()


def test_a_lossy_run_is_refused(tmp_path, capsys):
    """A run of a server with --speculative-accept-threshold-single below 1: its AL is inflated (issue 35)."""
    f = _jsonl(tmp_path / "bench.jsonl", [_bench_run(_requests(), speculative_accept_threshold_single=0.6)])
    code, _out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert "speculative_accept_threshold_single=0.6" in err
    assert not (tmp_path / "o" / "measurement.json").exists()


def test_draft_len_that_disagrees_with_the_server_is_refused(tmp_path, capsys):
    f = _jsonl(tmp_path / "bench.jsonl", [_bench_run(_requests())])
    code, _out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--draft-len", "5", "--out", str(tmp_path / "o"))
    assert code == 2
    assert "k=3" in err


def test_each_appended_run_is_its_own_record(tmp_path, capsys):
    a, b = _requests(seed=1), _requests(seed=2)
    f = _jsonl(tmp_path / "bench.jsonl", [_bench_run(a), _bench_run(b, details=False)])
    code, out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 0, err
    first = _rec(tmp_path / "o" / "thinking_off" / "k3")
    second = _rec(tmp_path / "o" / "thinking_off" / "k3-run2")
    assert first["al"] == pytest.approx(_truth(a))
    assert second["al"] == pytest.approx(_truth(b))  # total_output_tokens when output_lens are absent
    assert second["provenance"]["run_line"] == 2
    assert out.count("imported") == 2


def test_run_without_accept_length_says_why(tmp_path, capsys):
    run = _bench_run(_requests())
    run["accept_length"] = None
    run["server_info"]["internal_states"] = [{"avg_spec_accept_length": None}]
    f = _jsonl(tmp_path / "bench.jsonl", [run])
    code, _out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert "accept_length" in err
    assert "speculative decoding" in err


def test_a_line_that_is_not_json_names_file_and_line(tmp_path, capsys):
    f = tmp_path / "bench.jsonl"
    f.write_text(json.dumps(_bench_run(_requests())) + "\n{not json\n")
    code, _out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert f"{f}:2" in err


def test_response_whose_histogram_contradicts_its_verify_count_is_refused(tmp_path, capsys):
    meta = _meta([1, 2, 3])
    meta["spec_verify_ct"] = 4
    f = _jsonl(tmp_path / "r.jsonl", [{"meta_info": meta}])
    code, _out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert "cannot infer k" in err
    code, _out, err = _run(capsys, "sglang-bench", str(f), *SETTINGS, "--draft-len", "3", "--out", str(tmp_path / "o"))
    assert code == 2
    assert "spec_verify_ct=4" in err
    assert f"{f}:1" in err


# ------------------------------------------------------------------------------ sglang-log
_ARGS = ("[2026-12-01 10:00:00] INFO engine.py:177: server_args=ServerArgs(model_path='Qwen/Qwen3-8B', "
         "tokenizer_path='Qwen/Qwen3-8B', tokenizer_mode='auto', served_model_name='qwen3-8b', tp_size=1, "
         "decode_log_interval={interval}, chat_template=None, speculative_algorithm='EAGLE3', "
         "speculative_draft_model_path='org/eagle3', speculative_num_steps=3, speculative_eagle_topk=1, "
         "speculative_num_draft_tokens=4, speculative_adaptive={adaptive}, load_format='auto', "
         "json_model_override_args='{{}}', cuda_graph_bs=[1, 2, 4, 8])")
_DECODE = ("[2026-12-01 10:00:{s:02d} DP0 TP0] Decode batch, #running-req: {n}, #token: 4121, token usage: 0.02, "
           "accept len: {al:.2f}, accept rate: {rate:.2f}, cuda graph: True, gen throughput (token/s): 812.34, "
           "#queue-req: 0")


def _log(tmp_path: Path, lines: list[tuple[int, float]], *, interval: int = 20, adaptive: bool = False,
         args: bool = True, name: str = "server.log") -> Path:
    text = [_ARGS.format(interval=interval, adaptive=adaptive)] if args else []
    text.append("[2026-12-01 10:00:01 TP0] Prefill batch, #new-seq: 1, #new-token: 20, #cached-token: 0")
    text += [_DECODE.format(s=i % 60, n=n, al=al, rate=(al - 1) / K) for i, (n, al) in enumerate(lines)]
    p = tmp_path / name
    p.write_text("\n".join(text) + "\n")
    return p


def test_sglang_log_windows_are_the_clusters(tmp_path, capsys):
    lines = [(8, 2.73), (8, 2.51), (6, 2.90), (4, 2.12), (8, 2.66)]
    log = _log(tmp_path, lines)
    code, out, err = _run(capsys, "sglang-log", str(log), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 0, err
    r = _rec(tmp_path / "o")
    assert r["engine"] == "sglang"
    assert r["al_source"] == "sglang-log-intervals"
    assert r["draft_len"] == K
    assert r["target"]["name"] == "qwen3-8b"
    steps = [20 * n for n, _ in lines]  # decode_log_interval from the server_args line, times #running-req
    assert r["num_verify_steps"] == sum(steps)
    assert r["al"] == pytest.approx(sum(s * al for s, (_, al) in zip(steps, lines, strict=True)) / sum(steps))
    assert r["uncertainty"]["clusters"] == len(lines)
    assert r["histogram_known"] is False
    lo, hi = r["al_ci95"]
    assert lo < r["al"] < hi
    assert r["provenance"]["decode_log_interval"] == 20
    assert r["provenance"]["server_args_line"] == 1
    assert any("estimated" in w and "2 decimals" in w for w in r["warnings"])
    assert "over 5 windows" in out


def test_sglang_log_without_server_args_needs_the_draft_length(tmp_path, capsys):
    log = _log(tmp_path, [(8, 2.5), (8, 2.7)], args=False)
    code, _out, err = _run(capsys, "sglang-log", str(log), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert "--draft-len" in err
    code, _out, err = _run(capsys, "sglang-log", str(log), *SETTINGS, "--draft-len", "3", "--out", str(tmp_path / "o"))
    assert code == 0, err
    r = _rec(tmp_path / "o")
    assert r["num_verify_steps"] == 40 * 16  # SGLang's default interval, said so
    assert any("default 40" in w for w in r["warnings"])


def test_sglang_log_adaptive_and_restarts_are_refused(tmp_path, capsys):
    log = _log(tmp_path, [(8, 2.5)], adaptive=True)
    code, _out, err = _run(capsys, "sglang-log", str(log), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert "adaptive" in err
    a = _log(tmp_path, [(8, 2.5)], name="a.log").read_text()
    b = a.replace("speculative_num_steps=3", "speculative_num_steps=5").replace("num_draft_tokens=4",
                                                                                 "num_draft_tokens=6")
    both = tmp_path / "both.log"
    both.write_text(a + b)
    code, _out, err = _run(capsys, "sglang-log", str(both), *SETTINGS, "--out", str(tmp_path / "o2"))
    assert code == 2
    assert "split the log" in err


def test_sglang_log_accept_len_above_k_plus_one_is_refused(tmp_path, capsys):
    log = _log(tmp_path, [(8, 2.5), (8, 4.5)])
    code, _out, err = _run(capsys, "sglang-log", str(log), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert f"{log}:4" in err


def test_sglang_log_without_decode_lines_says_what_to_bring(tmp_path, capsys):
    log = _log(tmp_path, [])
    code, _out, err = _run(capsys, "sglang-log", str(log), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert "accept len" in err


def test_server_args_line_parses_literals_and_keeps_the_rest_raw():
    from ..logs import parse_sglang_server_args_line

    rec = parse_sglang_server_args_line(_ARGS.format(interval=40, adaptive=False).replace(
        "load_format='auto'", "load_format=LoadFormat.AUTO"), 9)
    assert rec is not None
    assert rec.line_no == 9
    a = rec.args
    assert a["speculative_num_steps"] == 3
    assert a["speculative_adaptive"] is False
    assert a["chat_template"] is None
    assert a["cuda_graph_bs"] == [1, 2, 4, 8]
    assert a["json_model_override_args"] == "{}"
    assert a["load_format"] == "LoadFormat.AUTO"
    assert parse_sglang_server_args_line("no args here") is None


def test_a_record_without_histogram_must_hold_zeros():
    from golden_al.measure.schema import RequestResult

    with pytest.raises(ValueError, match="histogram_known"):
        RequestResult(index=0, request_id="x", draft_len=2, prompt_hash="", num_output_tokens=0, num_verify_steps=4,
                      num_accepted_drafts=3, histogram=[1, 2, 1], per_position_accepted=[3, 0],
                      histogram_known=False)
    ok = RequestResult(index=0, request_id="x", draft_len=2, prompt_hash="", num_output_tokens=0, num_verify_steps=4,
                       num_accepted_drafts=3.5, histogram=[0, 0, 0], per_position_accepted=[0, 0],
                       histogram_known=False)
    assert ok.histogram_known is False


def test_pooling_totals_only_records_keeps_the_flag(tmp_path, capsys):
    """Two disjoint log imports pool; the pooled record still says it has no histogram."""
    for i, lines in enumerate(([(8, 2.5), (8, 2.7), (6, 2.4)], [(8, 2.6), (4, 2.9), (8, 2.3)])):
        log = _log(tmp_path, lines, name=f"s{i}.log")
        code, _out, err = _run(capsys, "sglang-log", str(log), *SETTINGS, "--dataset", f"shard{i}",
                               "--out", str(tmp_path / f"r{i}"))
        assert code == 0, err
    from golden_al.curvefit.pool import pool_cell
    from golden_al.measure.records import load_records

    cell = pool_cell(load_records([tmp_path / "r0" / "measurement.json", tmp_path / "r1" / "measurement.json"]))
    assert cell.histogram_known is False
    assert cell.integral is False
