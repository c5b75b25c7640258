"""Issue 35, item 4: settings that change real AL without changing k (vLLM ``draft_lm_head_quantization``,
``dspark_draft_topk``, FLy's parameters; SGLang block verification and DSpark SPS tables) are curve selectors:
two curves that differ only there are told apart by ``env``, ``check``, ``select``, ``check-run`` and ``fit``,
and a recipe is served only by a curve measured with exactly its selectors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.errors import NoGoldenValueError, UsageError
from golden_al.golden import load_store
from golden_al.golden.schema import parse_curve
from golden_al.plugin.registry import get_profile
from golden_al.selection import select_recipe


def _curve(name: str, al_k3: float, selectors: dict | None, *, method: str = "eagle3") -> dict:
    draft: dict = {"method": method}
    if selectors:
        draft["selectors"] = selectors
    return {"schema_version": 1, "model": "toy-qwen", "aliases": ["org/Toy-Qwen"], "draft": draft,
            "thinking_on": {"points": {3: {"al": al_k3}}}, "thinking_off": {"points": {3: {"al": al_k3 - 0.2}}},
            "provenance": {"notes": f"test curve {name}"}}


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    d = tmp_path / "golden"
    d.mkdir()
    for name, al, sel in (("plain", 2.5, None), ("block", 2.9, {"verification": "block"}),
                          ("fp8head", 2.4, {"draft_lm_head_quantization": "fp8"})):
        (d / f"{name}.yaml").write_text(yaml.safe_dump(_curve(name, al, sel)))
    return d


# ------------------------------------------------------------------ schema and store


def test_selector_values_are_stored_in_one_canonical_text() -> None:
    curve = parse_curve(_curve("x", 2.5, {"dspark_draft_topk": 8, "verification": "BLOCK", "fly_entropy_threshold": 0.30}))
    assert curve.draft.selectors == {"dspark_draft_topk": "8", "fly_entropy_threshold": "0.3", "verification": "block"}


@pytest.mark.parametrize("selectors", [{"Verification": "block"}, {"verification": ""}, {"k": [1, 2]}])
def test_malformed_selectors_are_refused_at_load(selectors: dict) -> None:
    with pytest.raises(Exception, match="selectors"):
        parse_curve(_curve("x", 2.5, selectors))


def test_a_recipe_gets_only_the_curve_with_exactly_its_selectors(golden: Path) -> None:
    store = load_store(golden)
    assert store.lookup("toy-qwen", "on", 3).al == 2.5  # the engine's defaults: the curve without selectors
    assert store.lookup("toy-qwen", "on", 3, selectors={"verification": "block"}).al == 2.9
    assert store.lookup("toy-qwen", "on", 3, selectors={"draft_lm_head_quantization": "fp8"}).al == 2.4
    with pytest.raises(NoGoldenValueError) as err:
        store.lookup("toy-qwen", "on", 3, selectors={"verification": "block", "draft_lm_head_quantization": "fp8"})
    assert "was measured with draft_lm_head_quantization=fp8, verification=block" in err.value.message
    assert "block (method eagle3, verification=block)" in err.value.message  # each curve's selectors listed


def test_without_a_default_curve_a_default_recipe_is_refused_not_served_a_selector_curve(tmp_path: Path) -> None:
    (tmp_path / "block.yaml").write_text(yaml.safe_dump(_curve("block", 2.9, {"verification": "block"})))
    with pytest.raises(NoGoldenValueError, match="the engine's defaults"):
        load_store(tmp_path).lookup("toy-qwen", "on", 3)


# ------------------------------------------------------------------ the engines' rules


@pytest.mark.parametrize(("config", "k", "expected"), [
    ({}, 3, {}),
    ({"draft_lm_head_quantization": "FP8"}, 3, {"draft_lm_head_quantization": "fp8"}),
    ({"dspark_draft_topk": "16"}, 3, {"dspark_draft_topk": "16"}),
    # FLy's parameters count only under FLy, and only away from their defaults (window: min(6, k - 1))
    ({"fly_window_size": 2}, 7, {}),
    ({"rejection_sample_method": "fly", "fly_window_size": 6, "fly_entropy_threshold": 0.3,
      "fly_entropy_top_k": 3}, 7, {}),
    ({"rejection_sample_method": "fly", "fly_window_size": 2, "fly_entropy_top_k": 5}, 7,
     {"fly_window_size": "2", "fly_entropy_top_k": "5"}),
])
def test_vllm_selectors_follow_its_config(config: dict, k: int, expected: dict) -> None:
    assert get_profile("vllm").selectors({"config": config}, k) == expected


@pytest.mark.parametrize(("config", "said"), [
    ({"draft_lm_head_quantization": "int4"}, "accepts fp8 or nvfp4"),
    ({"dspark_draft_topk": 0}, "integer >= 1"),
])
def test_vllm_values_it_refuses_are_usage_errors(config: dict, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        get_profile("vllm").selectors({"config": config}, 3)


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, {}),
    ({"block_verification": True}, {"verification": "block"}),
    ({"block_verification": ""}, {"verification": "block"}),  # a bare flag at the end of a command
    ({"block_verification": "--port"}, {"verification": "block"}),  # a bare flag before another flag
    ({"block_verification": "false"}, {}),
    ({"sps_table": "/tables/B200_SPS.json"}, {"dspark_sps_table": "b200_sps.json"}),
    ({"sps_table": "const"}, {}),  # the flat table: verify-all
    ({"sps_table": "/tables/b200.json", "ragged_verify_mode": "static"}, {}),  # static never reads it
])
def test_sglang_selectors_follow_its_flags(spec: dict, expected: dict) -> None:
    assert get_profile("sglang").selectors(spec, 3) == expected


@pytest.mark.parametrize(("spec", "said"), [
    ({"block_verification": "maybe"}, "is not a boolean"),
    ({"sps_table": "${SPS_TABLE}"}, "cannot be read here"),
])
def test_sglang_values_it_cannot_read_are_usage_errors(spec: dict, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        get_profile("sglang").selectors(spec, 3)


# ------------------------------------------------------------------ check and select

SCRIPT = """#!/usr/bin/env bash
export THINKING_MODE=on
export SGLANG_SIMULATE_ACC_LEN={al}
export SGLANG_SIMULATE_ACC_METHOD=match-expected
export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token
python3 -m sglang.launch_server --model-path org/Toy-Qwen --speculative-algorithm EAGLE3 \\
    --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4{extra}
"""


def _check(tmp_path: Path, text: str, golden: Path, name: str = "run.sh") -> list:
    path = tmp_path / "agentic" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return check_paths([path], store=load_store(golden)).findings


@pytest.mark.parametrize(("al", "extra", "verdict", "golden_al"), [
    ("2.9", " --speculative-use-block-verification", "match", 2.9),  # a bare flag that ends the command
    ("2.5", " --speculative-use-block-verification", "mismatch", 2.9),
    ("2.5", "", "match", 2.5),
    ("2.9", "", "mismatch", 2.5),
])
def test_check_compares_an_sglang_pin_with_the_curve_of_its_verification(tmp_path: Path, golden: Path, al: str,
                                                                          extra: str, verdict: str,
                                                                          golden_al: float) -> None:
    (f,) = _check(tmp_path, SCRIPT.format(al=al, extra=extra), golden)
    assert (f.verdict, f.expected_al) == (verdict, golden_al), f.message


def test_check_cannot_resolve_an_sps_table_it_cannot_read(tmp_path: Path, golden: Path) -> None:
    text = SCRIPT.format(al="2.5", extra=" --speculative-dspark-sps-table-path \"$SPS\"")
    (f,) = _check(tmp_path, text, golden)
    assert f.verdict == "undetermined"
    assert "curve selectors: --speculative-dspark-sps-table-path" in f.message


VLLM_RECIPE = """name: toy-vllm
model:
  path: org/Toy-Qwen
backend:
  type: vllm
  vllm_config:
    decode:
      served-model-name: org/Toy-Qwen
      dyn-default-thinking-mode: "enabled"
      speculative-config: '{{"method":"eagle3","model":"org/Toy-Qwen-EAGLE3","num_speculative_tokens":3{extra},"rejection_sample_method":"synthetic","synthetic_acceptance_length":{al}}}'
benchmark:
  type: custom
  command: bash agentic_srt.sh
"""


def test_check_reads_vllm_selectors_from_the_speculative_config(tmp_path: Path, golden: Path) -> None:
    (quant,) = _check(tmp_path / "a", VLLM_RECIPE.format(al=2.4, extra=',"draft_lm_head_quantization":"fp8"'), golden,
                      "r.yaml")
    assert (quant.verdict, quant.expected_al) == ("match", 2.4), quant.message
    (plain,) = _check(tmp_path / "b", VLLM_RECIPE.format(al=2.4, extra=""), golden, "r.yaml")
    assert (plain.verdict, plain.expected_al) == ("mismatch", 2.5), plain.message
    (nvfp4,) = _check(tmp_path / "c", VLLM_RECIPE.format(al=2.4, extra=',"draft_lm_head_quantization":"nvfp4"'),
                      golden, "r.yaml")
    assert nvfp4.verdict == "no-golden"
    assert "draft_lm_head_quantization=nvfp4" in nvfp4.message


SELECT_RECIPE = """name: toy-sglang
model:
  path: org/Toy-Qwen
backend:
  type: sglang
benchmark:
  type: agentic
  command: bash benchmarks/agentic_srt.sh
roles:
  agg:
    args:
      served-model-name: org/Toy-Qwen
      dyn-default-thinking-mode: enabled
      speculative-algorithm: EAGLE3
      speculative-num-steps: 3
      speculative-eagle-topk: 1
      speculative-num-draft-tokens: 4
{extra}"""


@pytest.mark.parametrize(("extra", "al"), [("", 2.5), ("      speculative-use-block-verification: true\n", 2.9)])
def test_select_picks_the_curve_of_the_recipes_verification(tmp_path: Path, golden: Path, extra: str,
                                                            al: float) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(SELECT_RECIPE.format(extra=extra))
    (variant,) = select_recipe(path, store=load_store(golden)).variants
    assert (variant.k, variant.al) == (3, al)


# ------------------------------------------------------------------ env, fit, check-run


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_env_takes_the_recipes_selectors(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["env", "--model", "toy-qwen", "--thinking", "on", "--engine", "sglang", "--algorithm", "eagle3",
            "--num-steps", "3", "--golden-dir", str(golden), "--format", "json"]
    code, out, err = _cli([*base, "--selector", "verification=block"], capsys)
    assert code == 0, err
    assert json.loads(out)["SGLANG_SIMULATE_ACC_LEN"] == "2.9"
    code, out, _ = _cli(base, capsys)
    assert json.loads(out)["SGLANG_SIMULATE_ACC_LEN"] == "2.5"
    code, _, err = _cli([*base, "--selector", "draft_lm_head_quantization=fp8"], capsys)
    assert code == 2
    assert "sglang has no curve selector 'draft_lm_head_quantization' (its selectors: verification, " in err
    code, _, err = _cli([*base, "--selector", "verification"], capsys)
    assert (code, "expected KEY=VALUE" in err) == (2, True)


def test_check_run_reads_block_verification_from_the_sglang_log(tmp_path: Path, golden: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from golden_al.measure.evidence import golden_target

    log = tmp_path / "server.log"
    args = ("server_args=ServerArgs(model_path='org/Toy-Qwen', served_model_name='org/Toy-Qwen', "
            "speculative_algorithm='EAGLE3', speculative_num_steps=3, speculative_eagle_topk=1, "
            "speculative_num_draft_tokens=4, speculative_use_block_verification=True)")
    log.write_text(f"[2026-12-06 03:00:00] {args}\n")
    target = golden_target([log], engine="sglang", store=load_store(golden), thinking="on")
    assert (target.expect_al, target.golden["selectors"]) == (2.9, {"verification": "block"})
    with pytest.raises(UsageError, match=r"the server's arguments .* run verification=block"):
        golden_target([log], engine="sglang", store=load_store(golden), thinking="on",
                      selectors={"verification": "token"})
    plain = tmp_path / "plain.log"
    plain.write_text(log.read_text().replace(", speculative_use_block_verification=True", ""))
    assert golden_target([plain], engine="sglang", store=load_store(golden), thinking="on").expect_al == 2.5


def test_the_conformance_kit_refuses_a_selector_name_curves_cannot_hold() -> None:
    from dataclasses import replace

    from golden_al.plugin.conformance import profile_problems

    bad = replace(get_profile("sglang"), name="toy",
                  check=replace(get_profile("sglang").check, selector_keys={"Block-Verify": "x"}))
    problems = profile_problems(bad, entry_name="toy", resolve_hooks=False)
    assert any("selector_keys: 'Block-Verify' is not a curve selector name" in p for p in problems)
    none = replace(get_profile("sglang"), name="toy", check=replace(get_profile("sglang").check, selector_keys={}))
    assert any("selector_keys: empty, but check.curve_selectors is set" in p
               for p in profile_problems(none, entry_name="toy", resolve_hooks=False))


def test_the_readme_table_lists_every_engines_selectors() -> None:
    from _docs import marked

    from golden_al.plugin import registry

    block = marked("curve-selectors")
    rows = [r.split("|")[1:3] for r in block.splitlines() if r.startswith("|")][2:]
    listed = sorted((e.strip(), key.strip().strip("`")) for e, key in rows)
    declared = sorted((get_profile(n).display_name, key) for n in registry.engine_names()
                      for key in get_profile(n).check.selector_keys)
    assert listed == declared


def test_the_readme_example_refuses_without_a_block_curve(capsys: pytest.CaptureFixture[str]) -> None:
    from _docs import after

    block = after("curve-selectors").split("```bash\n", 1)[1].split("```", 1)[0]
    argv = block.replace("\\\n", " ").split("#", 1)[0].split()
    assert argv[0] == "golden-al"
    code, _, err = _cli(argv[1:], capsys)
    assert code == 2
    assert "was measured with verification=block" in err
    code, _, err = _cli([a for a in argv[1:] if a not in ("--selector", "verification=block")], capsys)
    assert code == 0, err  # the shipped curve serves the engine's defaults


def test_engines_show_lists_an_engines_selectors(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(["engines", "show", "vllm"], capsys)
    assert code == 0, err
    assert "    draft_lm_head_quantization: the draft's copy of the shared lm_head quantized" in out
    code, out, _ = _cli(["engines", "show", "sglang", "--format", "json"], capsys)
    info = json.loads(out)
    assert set(info["curve_selectors"]) == {"verification", "dspark_sps_table"}
    assert info["measurable"] is True
    code, _, err = _cli(["engines", "show", "sglangg"], capsys)
    assert code == 2
    assert "unknown engine 'sglangg'" in err
