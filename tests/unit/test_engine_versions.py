"""Issue 35: engine facts follow the engine's version. A recipe that names an image or a pip pin is judged by
that version's facts, else by the newest known, and every finding says which version it assumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from golden_al.checks.static import check_paths
from golden_al.golden import load_store
from golden_al.plugin.registry import get_profile

GOLDEN = str(Path(__file__).resolve().parents[1] / "fixtures" / "check" / "golden")

VLLM = """# {comment}
name: minimax-vllm
model:
  path: nvidia/MiniMax-M3-NVFP4
backend:
  type: vllm
  vllm_config:
    decode:
      served-model-name: nvidia/MiniMax-M3-NVFP4
      dyn-default-thinking-mode: "enabled"
      speculative-config: '{{"method":"{method}","model":"Inferact/MiniMax-M3-EAGLE3-GQA","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.78}}'
benchmark:
  type: custom
  command: bash agentic_srt.sh
"""

TRT = """# {comment}
name: glm-trt
model:
  path: nvidia/GLM-5.2-NVFP4
backend:
  type: trtllm
  aggregated_environment:
    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "{value}"
  trtllm_config:
    aggregated:
      speculative_config:
        decoding_type: {decoding}
        max_draft_len: 8
        speculative_model: nvidia/GLM-5.2-draft
{extra}benchmark:
  type: custom
  command: bash agentic_srt.sh
  env:
    MODEL_PREFIX: glm5.2
"""


def _findings(tmp_path: Path, text: str) -> list:
    path = tmp_path / "agentic" / "recipe.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return check_paths([path], store=load_store(GOLDEN)).findings


def test_a_file_without_a_version_is_judged_by_the_newest_and_says_so(tmp_path: Path) -> None:
    (f,) = _findings(tmp_path, VLLM.format(comment="no version", method="eagle3"))
    assert f.engine_version == "0.34.0"
    assert "judged by vLLM 0.34.0 facts (the file names no vLLM version: the newest known, 0.34.0)" in f.message
    assert f.to_dict()["engine_version"] == "0.34.0"


@pytest.mark.parametrize("method", ["medusa", "mlp_speculator", "pard"])
def test_vllm_034_refuses_methods_033_accepted(tmp_path: Path, method: str) -> None:
    (newest,) = _findings(tmp_path / "a", VLLM.format(comment="no version", method=method))
    assert newest.verdict == "unsafe-value"
    assert f"vLLM 0.34.0 refuses '{method}'" in newest.message
    (older,) = _findings(tmp_path / "b", VLLM.format(comment="image: vllm/vllm-openai:v0.33.0", method=method))
    assert older.engine_version == "0.33.0"
    assert "refuses" not in older.message
    assert "vLLM 0.33.0 named at line 1" in older.message


def test_a_pip_pin_names_the_version_and_a_later_patch_takes_the_release_before_it(tmp_path: Path) -> None:
    choice = get_profile("vllm").version_facts("RUN pip install vllm==0.33.4\n")
    assert choice.name == "0.33.0"
    assert choice.stated == "0.33.4"
    assert "the newest known not after 0.33.4" in choice.how


def test_trtllm_draft_target_is_one_model_in_the_newest_tree_so_a_fraction_is_valid(tmp_path: Path) -> None:
    (f,) = _findings(tmp_path, TRT.format(comment="no version", value="3.06", decoding="DraftTarget", extra=""))
    assert f.engine_version == "tree fcd3f3168280"
    assert "int() fails" not in f.message
    assert f.verdict != "unsafe-value"


def test_trtllm_image_tag_is_shown_and_the_newest_tree_judges(tmp_path: Path) -> None:
    (f,) = _findings(tmp_path, TRT.format(comment="image nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6",
                                          value="3.06", decoding="MTP", extra=""))
    assert "TensorRT-LLM 1.2.0rc6 named at line 1 is not a version golden-al maps to its facts" in f.message
    assert f.engine_version == "tree fcd3f3168280"


def test_trtllm_pearl_adaptive_draft_length_beside_a_pin_is_unsafe(tmp_path: Path) -> None:
    (adaptive,) = _findings(tmp_path / "a", TRT.format(comment="pearl", value="3.06", decoding="PEARL", extra=""))
    assert adaptive.verdict == "unsafe-value"
    assert "pearl_adaptive_gamma" in adaptive.message
    fixed = TRT.format(comment="pearl", value="3.06", decoding="PEARL",
                       extra="        pearl_adaptive_gamma: false\n")
    (f,) = _findings(tmp_path / "b", fixed)
    assert "pearl_adaptive_gamma" not in f.message


def test_trtllm_acceptance_settings_forcing_overrides_are_left_alone_on_one_model(tmp_path: Path) -> None:
    extra = "        use_relaxed_acceptance_for_thinking: true\n"
    (f,) = _findings(tmp_path, TRT.format(comment="mtp", value="3.06", decoding="MTP", extra=extra))
    assert f.verdict == "match"
    assert "use_relaxed_acceptance_for_thinking left alone" in f.message
    assert "_apply_force_accepted_tokens" in f.message


def test_trtllm_dynamic_tree_on_the_two_model_path_runs_real_acceptance(tmp_path: Path) -> None:
    extra = "        use_dynamic_tree: true\n"
    (f,) = _findings(tmp_path, TRT.format(comment="ngram", value="3", decoding="NGram", extra=extra))
    assert f.verdict == "unsafe-value"
    assert "use_dynamic_tree on the two-model path" in f.message


def test_sa_and_pearl_are_known_modes_with_curve_methods() -> None:
    profile = get_profile("trtllm")
    assert {"SA", "PEARL"} <= set(profile.algorithms)
    assert profile.curve_methods["sa"] == "suffix"
    assert profile.curve_methods["pearl"] == "draft-model"


def test_every_engine_with_versions_lists_them_oldest_first_with_sources() -> None:
    from golden_al.plugin import registry

    for name in registry.engine_names():
        for v in get_profile(name).versions:
            assert v.source.repo
            assert v.source.version in v.version or v.version in v.source.version


# ------------------------------------------------------------------ SGLang UNO (issue 35: wrong k or method)

def test_sglang_linear_uno_drafts_num_draft_tokens_minus_one() -> None:
    from golden_al.engines import sglang
    from golden_al.errors import UsageError

    d = sglang.draft_len("UNO", num_steps=1, eagle_topk=1, num_draft_tokens=4)
    assert (d.k, d.chain) == (3, True)
    assert "num-draft-tokens - 1" in d.rule
    assert sglang.draft_len("uno", num_steps=5, num_draft_tokens=4).k == 3  # num-steps is forced to 1
    with pytest.raises(UsageError, match="UNO requires it"):
        sglang.draft_len("UNO", num_steps=3)
    assert sglang.curve_method_of("uno") == "uno"
    assert sglang.spec_flags("uno", 3)[-2:] == ["--speculative-num-draft-tokens", "4"]


def test_env_and_simulate_agree_on_uno(capsys: pytest.CaptureFixture[str]) -> None:
    from golden_al.cli.main import main

    assert main(["simulate", "--engine", "sglang", "--method", "match-expected", "--algorithm", "uno", "--al", "2.5",
                 "-k", "3", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert '"--speculative-num-draft-tokens": "4"' in out or "--speculative-num-draft-tokens=4" in out
    code = main(["env", "--engine", "sglang", "--algorithm", "uno", "--model", "qwen2.5-coder-1.5b-instruct",
                 "--thinking", "off", "-k", "3"])
    err = capsys.readouterr().err
    assert code == 2
    assert "no curve with method 'uno'" in err  # UNO is its own curve method, not an unknown algorithm


def test_the_readme_version_table_lists_what_the_profiles_know() -> None:
    import re

    from _docs import marked

    from golden_al.plugin import registry

    block = marked("engine-versions")
    lines = [line for line in block.splitlines() if line.startswith("|")][2:]
    rows = {r.split("|")[1].strip(): r.split("|")[2].strip() for r in lines}
    listed = {name: get_profile(name) for name in registry.engine_names() if get_profile(name).versions}
    for name, profile in listed.items():
        assert rows[profile.display_name] == ", ".join(v.version for v in profile.versions), name
    unversioned = [get_profile(n).display_name for n in registry.engine_names() if not get_profile(n).versions]
    (row,) = [r for r in rows if "none listed" in rows[r]]
    assert sorted(re.split(r",\s*", row)) == sorted(unversioned)
