"""``golden-al check`` on hand-written fixtures: every engine, every verdict, the awkward cases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from golden_al.checks.static import check_paths
from golden_al.golden import load_store

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "check"
TREE = FIX / "tree"


@pytest.fixture(scope="module")
def store():
    return load_store(FIX / "golden")


@pytest.fixture(scope="module")
def findings(store):
    report = check_paths([TREE], store=store)
    return report


def _find(report, name: str, line: int | None = None, k: int | None = None):
    # ``line``: where the value is written or (``use_line``) where it reaches the engine
    hits = [f for f in report.findings if f.file.endswith(name) and (line is None or line in (f.line, f.use_line))
            and (k is None or f.draft_len == k)]
    assert len(hits) == 1, f"{name}:{line} k={k}: {[(f.line, f.draft_len, f.verdict) for f in hits]}"
    return hits[0]


@dataclass(frozen=True)
class Row:
    name: str
    line: int
    verdict: str
    engine: str
    k: int | None
    thinking: str | None
    implied: float | None
    expected: float | None


ROWS = [
    # SGLang recipe, engine default thinking on, EAGLE num-steps 3
    Row("recipes/sglang/dsv4-agentic-agg.yaml", 9, "match", "sglang", 3, "on", 2.49, 2.49),
    # prefill block: k from the decode worker (prefill has no speculative flags); thinking off
    Row("recipes/sglang/dsv4-disagg-thinking-off.yaml", 11, "match", "sglang", 3, "off", 2.97, 2.97),
    Row("recipes/sglang/dsv4-disagg-thinking-off.yaml", 14, "mismatch", "sglang", 3, "off", 2.49, 2.97),
    # DFLASH: --speculative-num-draft-tokens 8 -> k = 7, the Muse Spark 4.05 point
    Row("recipes/sglang/musespark-dflash.yaml", 8, "match", "sglang", 7, "on", 4.05, 4.05),
    Row("recipes/sglang/glm-missing-companion.yaml", 9, "missing-companion", "sglang", 3, "on", 2.99, 2.99),
    # TensorRT-LLM: AL - 1 matches, AL itself does not
    Row("recipes/trtllm/glm-agentic-al-minus-1.yaml", 8, "match", "trtllm", 8, "on", 4.06, 4.06),
    Row("recipes/trtllm/glm-agentic-al-not-minus-1.yaml", 8, "mismatch", "trtllm", 8, "on", 5.06, 4.06),
    Row("recipes/trtllm/minimax-two-model.yaml", 8, "unsafe-value", "trtllm", 3, "on", 2.78, 2.78),
    Row("recipes/vllm/agentic/minimax-gqa.yaml", 11, "match", "vllm", 3, "on", 2.78, 2.78),
    Row("recipes/vllm/agentic/unknown-model.yaml", 10, "no-golden", "vllm", 2, "on", 2.3, None),
    Row("recipes/vllm/8k1k/dsv4-fixed-seq.yaml", 10, "non-agentic-simulation", "vllm", 2, "on", 2.27, 2.27),
    # master config: the value is set there, k = 2 lives in the recipe it points to
    Row("configs/test-master.yaml", 14, "match", "vllm", 2, "on", 2.27, 2.27),
    Row("configs/test-master.yaml", 20, "mismatch", "vllm", 2, "on", 2.49, 2.27),
    Row("configs/test-master.yaml", 30, "non-agentic-simulation", "vllm", 2, "on", 2.27, 2.27),
    Row("scripts/agentic/glm5.2_fp4_mi355x_atom_mtp.sh", 9, "match", "atom", 3, "on", 2.989999, 2.99),
    Row("scripts/agentic/minimaxm3_fp4_b200_mtp.sh", 7, "match", "vllm", 3, "on", 2.78, 2.78),
    Row("submissions/dsv4-submission.json", 5, "unsafe-value", "sglang", None, "on", 2.49, None),
]


@pytest.mark.parametrize("row", [pytest.param(r, id=f"{Path(r.name).name}:{r.line}") for r in ROWS])
def test_verdicts(findings, row: Row) -> None:
    f = _find(findings, row.name, row.line)
    got = (f.verdict, f.engine, f.draft_len, f.thinking, f.implied_al, f.expected_al)
    want = (row.verdict, row.engine, row.k, row.thinking, row.implied, row.expected)
    assert got[:4] == want[:4], f"expected {want}, got {got}; message: {f.message}"
    for a, b in ((f.implied_al, row.implied), (f.expected_al, row.expected)):
        assert (a is None and b is None) or a == pytest.approx(b, abs=1e-9), f.message


def test_shell_paths_pair_k_with_their_own_value(findings) -> None:
    k6 = _find(findings, "qwen3.5_fp8_h200_mtp.sh", k=6)
    k3 = _find(findings, "qwen3.5_fp8_h200_mtp.sh", k=3)
    assert (k6.verdict, k6.pinned_value) == ("match", "4.80")
    assert (k3.verdict, k3.pinned_value, k3.expected_al) == ("mismatch", "3.40", 3.39)
    assert "CONC -le 8" in k6.message
    assert "not ($CONC -le 8)" in k3.message
    assert "file-name prefix" in k6.message  # model from the InferenceX script naming


def test_thinking_assumption_is_stated(findings) -> None:
    f = _find(findings, "qwen3.5_fp8_h200_mtp.sh", k=6)
    assert f.thinking == "on"
    assert f.thinking_source.startswith("assumed")
    off = _find(findings, "dsv4-disagg-thinking-off.yaml", 14)
    assert "DYN_DEFAULT_THINKING_MODE=disabled" in off.thinking_source


def test_malformed_yaml_is_reported_and_the_rest_checked(findings) -> None:
    bad = [f for f in findings.findings if f.file.endswith("broken/bad-recipe.yaml")]
    assert {f.verdict for f in bad} == {"unreadable"}  # fail closed: a failing verdict
    assert any(f.line == 6 and "not valid YAML" in f.message for f in bad)  # the parse error's line
    pin = next(f for f in bad if f.line == 4)  # the pin's line, found by the text scan
    assert "SGLANG_SIMULATE_ACC_LEN" in pin.message
    assert (pin.engine, pin.pinned_value) == ("sglang", "2.49")
    assert findings.failed
    assert len(findings.findings) > len(bad) + 10


def test_legacy_name_and_unresolved_value(findings) -> None:
    f = _find(findings, "fixed_seq_len_sglang_legacy.sh")
    assert f.verdict == "unsafe-value"
    assert f.pinned_value is None
    assert "legacy SIMULATE_ACC_LEN" in f.message
    assert "$GOLDEN_AL" in f.message


def test_report_counts_and_failure(findings) -> None:
    counts = findings.counts()
    assert sum(counts.values()) == len(findings.findings)
    assert findings.failed


# ----------------------------------------------------------------- small inline cases


def _check_text(tmp_path: Path, store, name: str, text: str):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return check_paths([p], store=store).findings


RECIPE = """\
model:
  path: deepseek-ai/DeepSeek-V4-Pro
backend:
  type: sglang
  aggregated_environment:
{env}
  sglang_config:
    aggregated:
      speculative-algorithm: {algo}
      speculative-num-steps: 3
      speculative-eagle-topk: {topk}
benchmark:
  type: custom
  command: bash agentic_srt.sh
"""


@pytest.mark.parametrize(("env", "algo", "topk", "verdict", "needle"), [
    ({"SGLANG_SIMULATE_ACC_LEN": "2.49", "SGLANG_SIMULATE_ACC_METHOD": "multinomial",
      "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}, "EAGLE", 1, "unsafe-value", "clamped rounded normal"),
    ({"SGLANG_SIMULATE_ACC_LEN": "2.49", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
      "SGLANG_SIMULATE_ACC_TOKEN_MODE": "fixed"}, "EAGLE", 1, "unsafe-value", "token id 100"),
    ({"SGLANG_SIMULATE_ACC_LEN": "4.5", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
      "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}, "EAGLE", 1, "unsafe-value", "clamps it to 4"),
    ({"SGLANG_SIMULATE_ACC_LEN": "2.49", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
      "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}, "EAGLE", 4, "unsafe-value", "topk 1"),
    ({"SGLANG_SIMULATE_ACC_LEN": "2.49", "SGLANG_SIMULATE_ACC_METHOD": "match-expected"}, "EAGLE", 1,
     "missing-companion", "TOKEN_MODE is not set"),
    ({"SGLANG_SIMULATE_ACC_LEN": "2.49", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
      "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token", "SGLANG_DEFAULT_THINKING": "0"}, "EAGLE", 1,
     "mismatch", "thinking_off k=3 = 2.97"),
])
def test_sglang_value_rules(tmp_path, store, env, algo, topk, verdict, needle) -> None:
    text = RECIPE.format(env="\n".join(f"    {k}: '{v}'" for k, v in env.items()), algo=algo, topk=topk)
    (f,) = _check_text(tmp_path, store, "agentic/r.yaml", text)
    assert f.verdict == verdict, f.message
    assert needle in f.message, f.message


VLLM = """\
model: {{path: deepseek-ai/DeepSeek-V4-Pro}}
backend:
  type: vllm
  vllm_config:
    decode:
      speculative-config: '{cfg}'
benchmark: {{type: custom, command: bash agentic_srt.sh}}
"""


@pytest.mark.parametrize(("cfg", "verdict", "implied", "needle"), [
    ('{"method":"mtp","num_speculative_tokens":2,"synthetic_acceptance_length":2.27}', "missing-companion", 2.27,
     "not 'synthetic'"),
    ('{"method":"mtp","num_speculative_tokens":3,"rejection_sample_method":"synthetic"}', "missing-companion", None,
     "neither"),
    ('{"method":"mtp","num_speculative_tokens":2,"rejection_sample_method":"synthetic",'
     '"synthetic_acceptance_length":2.27,"synthetic_acceptance_rates":[1.0,0.27]}', "unsafe-value", 2.27, "exactly one"),
    ('{"method":"mtp","num_speculative_tokens":2,"rejection_sample_method":"synthetic",'
     '"synthetic_acceptance_rates":[1.0,0.27]}', "match", 2.27, "1 + sum(rates)"),
    ('{"method":"mtp","num_speculative_tokens":2,"rejection_sample_method":"synthetic",'
     '"synthetic_acceptance_rates":[0.3,0.9]}', "unsafe-value", None, "not increase"),
    ('{"method":"mtp","num_speculative_tokens":2,"rejection_sample_method":"synthetic",'
     '"synthetic_acceptance_length":3.5}', "unsafe-value", 3.5, "outside [1, k+1]"),
])
def test_vllm_value_rules(tmp_path, store, cfg, verdict, implied, needle) -> None:
    (f,) = _check_text(tmp_path, store, "agentic/v.yaml", VLLM.format(cfg=cfg))
    assert f.verdict == verdict, f.message
    assert needle in f.message, f.message
    assert (f.implied_al is None and implied is None) or f.implied_al == pytest.approx(implied)


@pytest.mark.parametrize(("flags", "verdict", "needle"), [
    ("--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-length 2.49", "match", "matches"),
    # 4-decimal rounding
    ("--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-rate 0.4967", "match", "1 + k*rate"),
    ("--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-rate 0.49", "mismatch", "differs"),
    # AL 2.5, not 2.49
    ("--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-rate 0.5", "mismatch", "differs"),
    ("--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-rate 0.496667", "match", "1 + k*rate"),
    ("--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-length 2.49 "
     "--spec-decode-acceptance-rate 0.5", "unsafe-value", "both"),
    ("--method mtp --num-speculative-tokens 3 --spec-decode-acceptance-length 4.49", "unsafe-value", "ATOM rejects"),
    ("--method mtp --spec-decode-acceptance-length 1.79", "match", "default (1)"),
    ("--num-speculative-tokens 3 --spec-decode-acceptance-length 2.49", "unsafe-value", "ATOM ignores it"),
])
def test_atom_flags(tmp_path, store, flags, verdict, needle) -> None:
    script = f"#!/bin/bash\npython -m atom.entrypoints.openai_server --model deepseek-ai/DeepSeek-V4-Pro \\\n  {flags}\n"
    fs = _check_text(tmp_path, store, "agentic/dsv4_fp4_mi355x_atom_mtp.sh", script)
    assert fs
    assert {f.verdict for f in fs} == {verdict}, [f.message for f in fs]
    assert any(needle in f.message for f in fs), [f.message for f in fs]


@pytest.mark.parametrize(("value", "verdict", "needle"), [
    ("0", "unsafe-value", "disables forcing"),
    ("1.49", "match", "AL = 1.49 + 1"),
    ("abc", "unsafe-value", "not a number"),
    ("3.5", "unsafe-value", "caps it"),
])
def test_trtllm_values(tmp_path, store, value, verdict, needle) -> None:
    text = ("model: {path: deepseek-ai/DeepSeek-V4-Pro}\nbackend:\n  type: trtllm\n  decode_environment:\n"
            f"    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: '{value}'\n  trtllm_config:\n    decode:\n"
            "      speculative_config: {decoding_type: MTP, max_draft_len: 3}\n"
            "benchmark: {type: custom, command: bash agentic_srt.sh}\n")
    (f,) = _check_text(tmp_path, store, "agentic/t.yaml", text)
    assert f.verdict == verdict, f.message
    assert needle in f.message, f.message


def test_conflicting_thinking_is_undetermined(tmp_path, store) -> None:
    text = RECIPE.format(env="    SGLANG_SIMULATE_ACC_LEN: '2.49'\n    SGLANG_SIMULATE_ACC_METHOD: match-expected\n"
                             "    SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token\n    SGLANG_DEFAULT_THINKING: '1'\n"
                             "    SGLANG_ENABLE_THINKING: '0'", algo="EAGLE", topk=1)
    (f,) = _check_text(tmp_path, store, "agentic/c.yaml", text)
    assert (f.verdict, f.thinking) == ("undetermined", None)
    assert f.thinking_source.startswith("conflicting")


def test_client_kwargs_override_server_default(tmp_path, store) -> None:
    text = RECIPE.format(env="    SGLANG_SIMULATE_ACC_LEN: '2.97'\n    SGLANG_SIMULATE_ACC_METHOD: match-expected\n"
                             "    SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token\n    SGLANG_DEFAULT_THINKING: '1'",
                         algo="EAGLE", topk=1) + "  env:\n    AIPERF_EXTRA_INPUTS: 'thinking:false'\n"
    (f,) = _check_text(tmp_path, store, "agentic/o.yaml", text)
    assert (f.verdict, f.thinking) == ("match", "off")
    assert "overrides" in f.thinking_source


def test_no_file_is_executed(tmp_path, store) -> None:
    marker = tmp_path / "executed"
    script = (f"#!/bin/bash\ntouch {marker}\nX=$(touch {marker})\n"
              "export SGLANG_SIMULATE_ACC_LEN=$(touch /tmp/never)\n")
    fs = _check_text(tmp_path, store, "agentic/x_fp8_h200_mtp.sh", script)
    assert not marker.exists()
    assert fs
    assert fs[0].verdict in ("undetermined", "no-golden")


def test_missing_path_is_a_usage_error(tmp_path, store) -> None:
    from golden_al.errors import UsageError

    with pytest.raises(UsageError, match="no such file"):
        check_paths([tmp_path / "nope.yaml"], store=store)


def test_shell_vllm_flag_and_trtllm_heredoc(tmp_path, store) -> None:
    vllm = ("#!/bin/bash\nvllm serve nvidia/MiniMax-M3-NVFP4 --speculative-config "
            "'{\"method\":\"eagle3\",\"model\":\"Inferact/MiniMax-M3-EAGLE3-GQA\",\"num_speculative_tokens\":3,"
            "\"rejection_sample_method\":\"synthetic\",\"synthetic_acceptance_length\":2.78}'\n")
    (f,) = _check_text(tmp_path, store, "agentic/v.sh", vllm)
    assert (f.verdict, f.draft_len, f.model) == ("match", 3, "minimax-m3"), f.message
    trt = ("#!/bin/bash\nDRAFT=Inferact/MiniMax-M3-EAGLE3-GQA\ncat << EOF > ser.yaml\nspeculative_config:\n"
           "    decoding_type: Eagle3\n    max_draft_len: 3\n    speculative_model: $DRAFT\nEOF\n"
           "if [ \"$EVAL_ONLY\" = \"true\" ]; then\n  unset TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS\nelse\n"
           "  export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.78\nfi\ntrtllm-serve \"$MODEL\" --config ser.yaml\n")
    (g,) = _check_text(tmp_path, store, "agentic/minimaxm3_fp4_b200_trt_mtp.sh", trt)
    assert (g.verdict, g.draft_len, g.implied_al, g.expected_al) == ("match", 3, 2.78, 2.78), g.message
    assert "one-model path" in g.message
