"""Curve resolution in real InferenceX trees: the method filters before a model alias resolves,
files of one curve split by k merge, and InferenceX-format folders resolve recipe model ids.

Fixtures: ``tests/fixtures/inferencex/golden_al_distribution`` (InferenceX main at 843c6254f) and
``tests/fixtures/inferencex/unmerged`` (curves from open pull requests, README there).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.errors import AmbiguousCurveError
from golden_al.golden import load_store

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "inferencex"


def _golden(tmp_path: Path, *unmerged: str) -> Path:
    out = tmp_path / "golden_al_distribution"
    out.mkdir()
    for f in (FIX / "golden_al_distribution").glob("*.yaml"):
        shutil.copy(f, out)
    for name in unmerged:
        shutil.copy(FIX / "unmerged" / name, out)
    return out


DSV4_MTP_RECIPE = """\
name: dsv4-agentic
model: {path: dsv4}
backend:
  type: sglang
  decode_environment:
    SGLANG_SIMULATE_ACC_LEN: "2.49"
    SGLANG_SIMULATE_ACC_METHOD: match-expected
    SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token
  sglang_config:
    decode:
      speculative-algorithm: EAGLE
      speculative-num-steps: 3
      speculative-eagle-topk: 1
      speculative-num-draft-tokens: 4
benchmark:
  type: custom
  command: bash agentic_srt.sh
"""


def test_an_alias_two_methods_share_resolves_within_the_pins_method(tmp_path: Path) -> None:
    """``dsv4`` names deepseek-v4-pro (dsv4_mtp.yaml) and deepseek-v4-pro-0813 (the unmerged
    dsv4_dspark_probabilistic.yaml): an MTP pin means the MTP curve's model."""
    golden = _golden(tmp_path, "dsv4_dspark_probabilistic.yaml")
    store = load_store(golden)
    with pytest.raises(AmbiguousCurveError):
        store.resolve_model("dsv4")
    assert store.resolve_model("dsv4", method="mtp") == "deepseek-v4-pro"
    assert store.resolve_model("dsv4", method="dspark") == "deepseek-v4-pro-0813"
    recipe = tmp_path / "agentic" / "dsv4.yaml"
    recipe.parent.mkdir()
    recipe.write_text(DSV4_MTP_RECIPE)
    (f,) = check_paths([recipe], store=store).findings
    assert (f.verdict, f.model, f.expected_al) == ("match", "deepseek-v4-pro", 2.49), f.message
    assert "among the mtp curves" in f.message


def test_files_of_one_curve_merge_by_k(tmp_path: Path, capsys) -> None:
    """qwen3.8_mtp.yaml holds k=7, qwen3.827b_bf16_mtp.yaml k=3, both qwen3.8-27b MTP: each k resolves."""
    golden = _golden(tmp_path, "qwen3.8_mtp.yaml", "qwen3.827b_bf16_mtp.yaml", "qwen3.827b_fp8_mtp.yaml")
    store = load_store(golden)
    assert store.lookup("qwen3.8-27b", "on", 7, method="mtp").al == 3.67
    assert store.lookup("qwen3.8-27b", "on", 3, method="mtp").curve == "qwen3.827b_bf16_mtp"
    assert store.lookup("qwen3.8-27b-fp8", "on", 3, method="mtp").al == 2.51
    for k, al in ((7, "3.67"), (3, "2.52")):
        rc = main(["env", "--golden-dir", str(golden), "--model", "qwen3.8-27b", "--thinking", "on",
                   "--draft-len", str(k), "--engine", "sglang", "--format", "json"])
        assert rc == 0
        assert f'"SGLANG_SIMULATE_ACC_LEN": "{al}"' in capsys.readouterr().out
    assert main(["env", "--golden-dir", str(golden), "--model", "qwen3.8-27b", "--thinking", "on",
                 "--draft-len", "5", "--engine", "sglang"]) == 2
    assert "none of its 2 curve files has k=5" in capsys.readouterr().err


def test_files_of_one_curve_that_disagree_at_a_k_are_named(tmp_path: Path) -> None:
    golden = _golden(tmp_path, "qwen3.8_mtp.yaml")
    (golden / "qwen3.827b_x_mtp.yaml").write_text("qwen3.8-27b:\n  thinking_on:\n    7: 3.70\n")
    store = load_store(golden)
    with pytest.raises(AmbiguousCurveError, match=r"disagree: qwen3.827b_x_mtp=3.7, qwen3.8_mtp=3.67"):
        store.lookup("qwen3.8-27b", "on", 7, method="mtp")


def test_recipe_model_ids_resolve_in_an_inferencex_format_folder(tmp_path: Path, capsys) -> None:
    """InferenceX's files key GLM-5.2 as glm-5.2-fp8; its recipes say nvidia/GLM-5.2-NVFP4."""
    golden = _golden(tmp_path)
    assert load_store(golden).resolve_model("nvidia/GLM-5.2-NVFP4") == "glm-5.2-fp8"
    assert main(["env", "--golden-dir", str(golden), "--model", "nvidia/GLM-5.2-NVFP4", "--thinking", "on",
                 "--draft-len", "3", "--engine", "sglang", "--format", "json"]) == 0
    assert '"SGLANG_SIMULATE_ACC_LEN": "2.99"' in capsys.readouterr().out


def test_a_pin_of_another_method_is_wrong_method(tmp_path: Path) -> None:
    """An EAGLE-3 pin where the store has only an MTP curve for the model: a review bot's catch, now a
    failing verdict that names both methods."""
    golden = _golden(tmp_path)
    recipe = tmp_path / "agentic" / "glm.yaml"
    recipe.parent.mkdir()
    recipe.write_text(DSV4_MTP_RECIPE.replace("dsv4}", "zai-org/GLM-5.2-FP8}").replace(
        "speculative-algorithm: EAGLE", "speculative-algorithm: EAGLE3"))
    report = check_paths([recipe], store=load_store(golden))
    (f,) = report.findings
    assert f.verdict == "wrong-method", f.message
    assert "'eagle3'" in f.message
    assert "'mtp'" in f.message
    assert report.failed
