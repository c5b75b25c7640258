"""``golden-al inject`` on hand-written srt-slurm recipe fixtures."""

from __future__ import annotations

import difflib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from golden_al.cli.main import main
from golden_al.injection import analyze_recipe

RECIPES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"
INJECTED = re.compile(r"SGLANG_SIMULATE_ACC_|TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS|speculative-config:|"
                      r"^\s*(aggregated|prefill|decode)_environment:")
SGLANG_VARS = ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE")


def copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copy(RECIPES / name, target)
    return target


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["inject", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_only_injected_lines_changed(old: str, new: str) -> None:
    a, b = old.splitlines(), new.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for line in a[i1:i2] + b[j1:j2]:
            assert INJECTED.search(line), f"unexpected change: {line!r}"
    assert [s for s in a if s.lstrip().startswith("#")] == [s for s in b if s.lstrip().startswith("#")]
    assert new.endswith("\n") == old.endswith("\n")


def env_blocks(data: Any) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []

    def walk(node: Any, loc: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and k.endswith("_environment"):
                    out.append((f"{loc}.{k}", v))
                walk(v, f"{loc}.{k}")

    walk(data, "")
    return out


SGLANG_CASES = [
    # fixture, model, thinking, AL written, environment blocks expected to carry it
    ("sglang_agg_mtp.yaml", "nvidia/Qwen3.5-397B-A17B-NVFP4", "on", "3.39",
     [".backend.aggregated_environment"]),
    ("sglang_disagg_mtp.yaml", "deepseek-ai/DeepSeek-V4-Pro", "on", "2.49",
     [".backend.prefill_environment", ".backend.decode_environment"]),
    ("sglang_dflash.yaml", "Muse-Spark-Open-816B-A42B-NVFP4", "on", "4.05", [".backend.aggregated_environment"]),
    ("sglang_override_format.yaml", "nvidia/GLM-5.2-NVFP4", "on", "2.5",
     [".base.backend.prefill_environment", ".base.backend.decode_environment"]),
]


@pytest.mark.parametrize(("name", "model", "thinking", "al", "blocks"), SGLANG_CASES, ids=[c[0] for c in SGLANG_CASES])
def test_sglang_injection(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, model: str, thinking: str,
                          al: str, blocks: list[str]) -> None:
    path = copy(tmp_path, name)
    old = path.read_text()
    rc, out, err = run(capsys, str(path), "--model", model, "--thinking", thinking)
    assert rc == 0, err
    new = path.read_text()
    assert out.startswith(f"--- {path}\n+++ {path}\n")
    assert f"AL {al} " in err
    assert_only_injected_lines_changed(old, new)
    found = dict(env_blocks(yaml.safe_load(new)))
    assert sorted(found) == sorted(blocks)
    for where in blocks:
        env = found[where]
        assert (env["SGLANG_SIMULATE_ACC_LEN"], env["SGLANG_SIMULATE_ACC_METHOD"],
                env["SGLANG_SIMULATE_ACC_TOKEN_MODE"]) == (al, "match-expected", "real-draft-token"), where
    # idempotent: a second run changes nothing and exits 0
    rc, out, err = run(capsys, str(path), "--model", model, "--thinking", thinking)
    assert (rc, out) == (0, "")
    assert "already holds the golden values" in err
    assert path.read_text() == new


def test_dflash_draft_length_from_num_draft_tokens(tmp_path: Path) -> None:
    a = analyze_recipe((RECIPES / "sglang_dflash.yaml").read_text(), path="sglang_dflash.yaml")
    assert (a.engine, a.engine_source, a.k, a.target.role, a.target.settings.algorithm) == \
        ("sglang", "backend.type", 7, "aggregated", "DFLASH")
    assert a.target.draft_len.rule.startswith("SGLang DFLASH num-draft-tokens - 1")
    assert "Muse-Spark-Open-816B-A42B-NVFP4" in a.model_names


def test_disagg_anchor_is_written_once_and_merged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "sglang_disagg_mtp.yaml")
    rc, _, _ = run(capsys, str(path), "--model", "deepseek-v4-pro", "--thinking", "on")
    text = path.read_text()
    assert rc == 0
    assert text.count("SGLANG_SIMULATE_ACC_LEN") == 1
    a = analyze_recipe(text, path=path)
    assert a.k == 3
    assert a.target.role == "decode"
    assert {r.role: r.draft_len.k for r in a.roles} == {"prefill": 1,
                                                                                                  "decode": 3}
    assert '    SGLANG_SIMULATE_ACC_LEN: "2.49"\n' in text  # the block's double quotes


def test_conflict_exits_1_and_force_replaces(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "sglang_disagg_pinned.yaml")
    old = path.read_text()
    rc, out, err = run(capsys, str(path), "--model", "dsv4", "--thinking", "on")
    assert rc == 1
    assert out == ""
    assert path.read_text() == old
    assert f"{path}:12: backend.decode_environment.SGLANG_SIMULATE_ACC_LEN is 2.47, the golden value is 2.49" in err
    rc, out, err = run(capsys, str(path), "--model", "dsv4", "--thinking", "on", "--dry-run")
    assert rc == 1
    assert path.read_text() == old
    rc, out, err = run(capsys, str(path), "--model", "dsv4", "--thinking", "on", "--force")
    assert rc == 0
    assert "1 conflicting replaced" in err
    new = path.read_text()
    assert "    SGLANG_SIMULATE_ACC_LEN: '2.49'   # pinned by hand, now stale\n" in new
    assert '    SGLANG_SIMULATE_ACC_TOKEN_MODE: "real-draft-token"\n' in new  # untouched, already right
    assert_only_injected_lines_changed(old, new)
    assert run(capsys, str(path), "--model", "dsv4", "--thinking", "on")[:2] == (0, "")


def test_conflicting_method_is_a_conflict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "sglang_disagg_pinned.yaml")
    path.write_text(path.read_text().replace("'2.47'", "'2.49'").replace("match-expected", "multinomial"))
    rc, _, err = run(capsys, str(path), "--model", "dsv4", "--thinking", "on")
    assert rc == 1
    assert "SGLANG_SIMULATE_ACC_METHOD is multinomial, the golden value is match-expected" in err


def test_equal_value_written_differently_is_left_alone(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "sglang_disagg_pinned.yaml")
    path.write_text(path.read_text().replace("'2.47'", "2.490"))
    rc, out, _ = run(capsys, str(path), "--model", "dsv4", "--thinking", "on")
    assert rc == 0
    assert "2.490" in path.read_text()
    assert "-    SGLANG_SIMULATE_ACC_LEN" not in out


def test_dry_run_writes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "sglang_agg_mtp.yaml")
    old = path.read_text()
    rc, out, err = run(capsys, str(path), "--model", "qwen3.5", "--thinking", "off", "--dry-run")
    assert rc == 0
    assert path.read_text() == old
    assert "+    SGLANG_SIMULATE_ACC_LEN: '3.33'\n" in out
    assert "would write 3 values" in err


def test_vllm_speculative_config_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "vllm_disagg_spec_config.yaml")
    old = path.read_text()
    rc, _out, err = run(capsys, str(path), "--model", "deepseek-ai/DeepSeek-V4-Pro", "--thinking", "off")
    assert rc == 0, err
    new = path.read_text()
    assert_only_injected_lines_changed(old, new)
    cfg = yaml.safe_load(new)["backend"]["vllm_config"]
    for role in ("prefill", "decode"):
        spec = json.loads(cfg[role]["speculative-config"])
        assert spec["rejection_sample_method"] == "synthetic"
        assert spec["synthetic_acceptance_length"] == 2.97
        assert spec["method"] == "mtp"
        assert spec["num_speculative_tokens"] == 3
    # each JSON keeps its own style: compact stays compact, spaced stays spaced, key order kept
    assert ("""speculative-config: '{"method":"mtp","num_speculative_tokens":3,"rejection_sample_method":"synthetic",""" 
            """"synthetic_acceptance_length":2.97}'\n""") in new
    assert ("""speculative-config: '{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": """
            """"synthetic", "synthetic_acceptance_length": 2.97}'  # keep\n""") in new
    assert run(capsys, str(path), "--model", "dsv4", "--thinking", "off")[:2] == (0, "")
    # a different pinned length is a conflict; --force replaces it
    rc, _, err = run(capsys, str(path), "--model", "dsv4", "--thinking", "on")
    assert rc == 1
    assert "synthetic_acceptance_length is 2.97, the golden value is 2.49" in err
    rc, _, _ = run(capsys, str(path), "--model", "dsv4", "--thinking", "on", "--force")
    assert rc == 0
    assert json.loads(yaml.safe_load(path.read_text())["backend"]["vllm_config"]["decode"][
        "speculative-config"])["synthetic_acceptance_length"] == 2.49


def test_vllm_each_config_gets_the_value_of_its_own_k(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "vllm_disagg_spec_config.yaml")
    path.write_text(path.read_text().replace('"num_speculative_tokens":3', '"num_speculative_tokens":1'))
    rc, _, err = run(capsys, str(path), "--model", "dsv4", "--thinking", "off")
    assert rc == 0, err
    cfg = yaml.safe_load(path.read_text())["backend"]["vllm_config"]
    lengths = {role: json.loads(cfg[role]["speculative-config"])["synthetic_acceptance_length"]
               for role in ("prefill", "decode")}
    assert lengths == {"prefill": 1.92, "decode": 2.97}  # golden k=1 and k=3 (vLLM checks AL <= k + 1)


def test_trtllm_env_is_al_minus_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "trtllm_agg_mtp.yaml")
    old = path.read_text()
    rc, _, err = run(capsys, str(path), "--model", "nvidia/GLM-5.2-NVFP4", "--thinking", "on")
    assert rc == 0, err
    new = path.read_text()
    assert_only_injected_lines_changed(old, new)
    env = yaml.safe_load(new)["backend"]["aggregated_environment"]
    assert env["TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"] == "1.99"  # golden 2.99 at k=3
    assert "SGLANG_SIMULATE_ACC_LEN" not in new


def test_trtllm_two_model_fraction_is_unsafe(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "trtllm_agg_mtp.yaml")
    path.write_text(path.read_text().replace("decoding_type: MTP", "decoding_type: Eagle3\n        eagle3_one_model: false")
                    .replace("nvidia/GLM-5.2-NVFP4", "moonshotai/Kimi-K2.5"))  # the model the run names
    rc, _, err = run(capsys, str(path), "--model", "kimik2.5", "--thinking", "on")
    assert rc == 2
    assert "is fractional on TensorRT-LLM's two-model path, where int() fails and forcing silently turns off" in err


def test_override_that_changes_draft_length_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "sglang_override_format.yaml")
    path.write_text(path.read_text().replace("        max-running-requests: [4, 8]",
                                             "        max-running-requests: [4, 8]\n        speculative-num-steps: 3"))
    rc, _, err = run(capsys, str(path), "--model", "glm5.2", "--thinking", "on")
    assert rc == 2
    assert "zip_override_lowlat changes the decode draft length (k=3 vs base k=2)" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--engine", "vllm"], "--engine vllm but the recipe's backend.type is sglang"),
        (["--engine", "atom"], "--engine atom but the recipe's backend.type is sglang"),
        (["--thinking", "off"], "has no thinking_off values"),
    ],
)
def test_usage_and_no_golden_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str],
                                    message: str) -> None:
    path = copy(tmp_path, "sglang_override_format.yaml")
    old = path.read_text()
    args = ["--model", "glm5.2", "--thinking", "on", *argv]
    rc, out, err = run(capsys, str(path), *args)
    assert rc == 2
    assert out == ""
    assert message in err
    assert path.read_text() == old


def test_recipe_without_speculative_decoding(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text("backend:\n  type: sglang\n  sglang_config:\n    aggregated:\n      tp-size: 8\n")
    rc, _, err = run(capsys, str(path), "--model", "glm5.2", "--thinking", "on")
    assert rc == 2
    assert "no worker role of sglang_config uses speculative decoding" in err


def test_eagle_without_num_steps_is_undetermined(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "auto.yaml"
    path.write_text("backend:\n  type: sglang\n  sglang_config:\n    decode:\n      speculative-algorithm: EAGLE\n")
    rc, _, err = run(capsys, str(path), "--model", "glm5.2", "--thinking", "on")
    assert rc == 2
    assert f"{path}:4: backend.sglang_config.decode: SGLang EAGLE without --speculative-num-steps" in err


def test_malformed_yaml_names_file_and_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("backend:\n  type: sglang\n  sglang_config: [unclosed\n")
    rc, _, err = run(capsys, str(path), "--model", "glm5.2", "--thinking", "on")
    assert rc == 2
    assert f"{path}:" in err
    assert "invalid YAML" in err


def test_crlf_recipe_keeps_its_line_endings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "crlf.yaml"
    path.write_bytes((RECIPES / "sglang_agg_mtp.yaml").read_bytes().replace(b"\n", b"\r\n"))
    rc, _, err = run(capsys, str(path), "--model", "qwen3.5", "--thinking", "on")
    assert rc == 0, err
    raw = path.read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n")
    assert b"SGLANG_SIMULATE_ACC_LEN: '3.39'\r\n" in raw
