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
from golden_al.golden import load_store
from golden_al.injection import plan_injection
from golden_al.recipes.derive import Identity
from golden_al.selection import select_recipe

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
    (v,) = select_recipe(RECIPES / "sglang_dflash.yaml", identity=Identity(thinking="on")).variants
    assert (v.engine, v.k, v.role, v.method) == ("sglang", 7, "aggregated", "dflash")
    assert v.reason.startswith("k=7 from SGLang DFLASH num-draft-tokens - 1")
    assert "(aggregated served-model-name) -> muse-spark-open-816b-a42b-nvfp4" in v.reason


def test_disagg_anchor_is_written_once_and_merged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = copy(tmp_path, "sglang_disagg_mtp.yaml")
    rc, _, _ = run(capsys, str(path), "--model", "deepseek-v4-pro", "--thinking", "on")
    text = path.read_text()
    assert rc == 0
    assert text.count("SGLANG_SIMULATE_ACC_LEN") == 1  # in the anchor; the decode block merges it
    again = plan_injection(text, path=path, store=load_store(None), model="deepseek-v4-pro", thinking="on")
    assert (again.k, again.changed) == (3, False)  # the decode role's k; nothing left to write
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


def test_variants_of_different_draft_lengths_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """One file carries one golden AL: variants that run different k need different values (select's refusal)."""
    path = copy(tmp_path, "sglang_override_format.yaml")
    path.write_text(path.read_text().replace("        max-running-requests: [4, 8]",
                                             "        max-running-requests: [4, 8]\n        speculative-num-steps: [2, 3]"))
    rc, _, err = run(capsys, str(path), "--model", "glm5.2", "--thinking", "on")
    assert rc == 2
    assert "its variants need different overrides (zip_override_lowlat[0]: k=2 al=2.5, zip_override_lowlat[1]: k=3" in err


def test_the_k_every_variant_runs_sets_the_value_not_the_bases(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    """srtctl runs the variants, never the base alone: a zip group that sets k=3 for every variant over a base of k=2
    gets the k=3 golden (inject used to refuse), the value select passes srtctl, and check calls every variant a
    match."""
    from golden_al.checks.static import check_paths

    path = copy(tmp_path, "sglang_override_format.yaml")
    path.write_text(path.read_text().replace("        max-running-requests: [4, 8]",
                                             "        max-running-requests: [4, 8]\n        speculative-num-steps: 3"))
    rc, _, err = run(capsys, str(path), "--model", "glm5.2", "--thinking", "on")
    assert rc == 0, err
    assert "k=3 AL 2.99" in err
    findings = check_paths([path], store=load_store(None)).findings
    assert findings
    assert {f.verdict for f in findings} == {"match"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--engine", "vllm"], "--engine says vllm but the recipe's backend.type says sglang"),
        (["--engine", "atom"], "--engine says atom but the recipe's backend.type says sglang"),
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
    assert "no role of the recipe speculates; nothing to inject" in err


def test_eagle_without_num_steps_is_undetermined(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "auto.yaml"
    path.write_text("backend:\n  type: sglang\n  sglang_config:\n    decode:\n      speculative-algorithm: EAGLE\n")
    rc, _, err = run(capsys, str(path), "--model", "glm5.2", "--thinking", "on")
    assert rc == 2
    assert f"{path} [the recipe]: the draft length is unknown: SGLang EAGLE without --speculative-num-steps" in err
    assert "(decode arguments)" in err


def test_malformed_yaml_names_file_and_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("backend:\n  type: sglang\n  sglang_config: [unclosed\n")
    rc, _, err = run(capsys, str(path), "--model", "glm5.2", "--thinking", "on")
    assert rc == 2
    assert f"{path}:" in err
    assert "not valid YAML" in err


def test_crlf_recipe_keeps_its_line_endings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "crlf.yaml"
    path.write_bytes((RECIPES / "sglang_agg_mtp.yaml").read_bytes().replace(b"\n", b"\r\n"))
    rc, _, err = run(capsys, str(path), "--model", "qwen3.5", "--thinking", "on")
    assert rc == 0, err
    raw = path.read_bytes()
    assert raw.count(b"\n") == raw.count(b"\r\n")
    assert b"SGLANG_SIMULATE_ACC_LEN: '3.39'\r\n" in raw


# ------------------------------------------------------------------ inject is select's overrides, written


FIX = RECIPES.parent


def _norm(x: Any) -> Any:
    """Plain data compared by value (JSON text as its object, numbers as floats): the text's form is inject's own."""
    if isinstance(x, dict):
        return {str(k): _norm(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_norm(v) for v in x]
    if isinstance(x, str) and x.lstrip().startswith("{"):
        return _norm(json.loads(x))
    if isinstance(x, (int, float, str)) and not isinstance(x, bool) and re.fullmatch(r"-?\d+(\.\d*)?", str(x)):
        return float(x)
    return x


def test_inject_writes_what_select_passes_srtctl() -> None:
    """Over every recipe fixture select plans (both schemas, InferenceX's real recipes included): the recipe inject
    writes is, variant by variant, the recipe with select's srtctl overrides applied. inject used to write every
    environment block (a prefill that does not speculate included) and crashed on schema-2 roles recipes."""
    from golden_al.errors import GoldenALError
    from golden_al.prompts.thinking import REQUEST
    from golden_al.recipes.srtctl import apply_overrides, expand_variants

    shipped, infx = load_store(None), load_store(FIX / "inferencex" / "golden_al_distribution")
    corpus = [(p, shipped) for d in ("recipes", "select", "select/runtime-k") for p in sorted((FIX / d).glob("*.yaml"))]
    corpus += [(p, infx) for d in ("inferencex", "inferencex-roles") for p in sorted((FIX / "select" / d).glob("*.yaml"))]
    identity = Identity(thinking="on", thinking_priority=REQUEST + 1, agentic=True)
    written = 0
    for path, store in corpus:
        try:
            plan = select_recipe(path, identity=identity, store=store)
        except GoldenALError:  # refused (or pinned): inject refuses it for the same reason, or corrects the pin
            continue
        v = plan.variants[0]
        if v.mode != "throughput" or len({o.overrides for o in plan.variants}) > 1:
            continue
        res = plan_injection(path.read_text(), path=path, store=store, model=v.model, thinking=v.thinking)
        want = expand_variants(apply_overrides(yaml.safe_load(path.read_text()), plan.common_overrides()))
        got = expand_variants(yaml.safe_load(res.new_text))
        assert [_norm(x.data) for x in got] == [_norm(x.data) for x in want], path
        written += res.changed
    assert written >= 30


def test_a_pin_shared_through_a_merge_key_is_refused_not_taken_from_both(capsys: pytest.CaptureFixture[str],
                                                                          tmp_path: Path) -> None:
    """The prefill (which does not speculate) defines the pin and the decode merges it: taking it out of the prefill,
    as select's overrides do, would take it from the decode too. Refused, naming both; the file is left alone."""
    path = tmp_path / "anchored.yaml"
    path.write_text("model: {path: deepseek-v4-pro}\nbackend:\n  type: sglang\n  prefill_environment: &env\n"
                    '    SGLANG_SIMULATE_ACC_LEN: "2.49"\n    SGLANG_SIMULATE_ACC_METHOD: match-expected\n'
                    "    SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token\n  decode_environment:\n    <<: *env\n"
                    "  sglang_config:\n    prefill: {disaggregation-mode: prefill}\n    decode: {speculative-algorithm: "
                    "EAGLE, speculative-num-steps: 3, speculative-eagle-topk: 1, speculative-num-draft-tokens: 4}\n")
    old = path.read_text()
    rc, out, err = run(capsys, str(path), "--model", "dsv4", "--thinking", "on", "--force")
    assert (rc, out) == (2, "")
    assert (f"{path}:5: backend.prefill_environment.SGLANG_SIMULATE_ACC_LEN is shared through a merge key (<<) with "
            "backend.decode_environment") in err
    assert path.read_text() == old
