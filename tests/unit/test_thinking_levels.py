"""Named thinking modes: ``thinking_on``, ``thinking_off`` or a level such as ``reasoning_effort_high``.

Through the presets, the curve schema, records, ``measure``/``sweep --thinking``, ``env``,
``inject``, ``check`` (chat_template_kwargs and ``reasoning_effort`` settings) and the
legacy export (which refuses levels).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from golden_al.cli.main import main
from golden_al.errors import SchemaError, UsageError
from golden_al.golden import dump_curve, parse_curve, read_curve_file
from golden_al.golden.store import load_store
from golden_al.prompts import thinking as presets
from golden_al.prompts.thinking import mode_key, normalize_mode

RECIPES = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"

CURVE = """\
schema_version: 1
model: gpt-oss-120b
aliases: [openai/gpt-oss-120b]
draft: {method: eagle3, model: org/gpt-oss-120b-EAGLE3}
engine: {name: sglang}
thinking_on:
  sampling: {temperature: 1.0, top_p: 1.0, chat_template_kwargs: {reasoning_effort: high}}
  points:
    3: {al: 2.9}
levels:
  reasoning_effort_medium:
    sampling: {temperature: 1.0, top_p: 1.0, chat_template_kwargs: {reasoning_effort: medium}}
    points:
      2: {al: 2.41}
      3: {al: 2.71}
provenance: {notes: test curve}
"""


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    d = tmp_path / "golden"
    d.mkdir()
    (d / "gpt-oss-120b_eagle3.yaml").write_text(CURVE)
    return d


def test_mode_names():
    assert [normalize_mode(v) for v in ("on", "thinking_off", True, "Reasoning-Effort-High")] == [
        "on", "off", "on", "reasoning_effort_high"]
    assert [mode_key(v) for v in ("on", "off", "reasoning_effort_low")] == [
        "thinking_on", "thinking_off", "reasoning_effort_low"]
    for bad in ("high", "thinking_max", "reasoning effort", ""):
        with pytest.raises(ValueError, match="named level"):
            normalize_mode(bad)


def test_curve_levels_load_dump_and_reject_bad_names(golden: Path):
    curve = read_curve_file(golden / "gpt-oss-120b_eagle3.yaml")[0].curve
    assert list(curve.modes()) == ["thinking_on", "reasoning_effort_medium"]
    assert curve.mode("reasoning_effort_medium").points[3].al == 2.71  # type: ignore[union-attr]
    assert curve.mode("off") is None
    again = parse_curve(__import__("yaml").safe_load(dump_curve(curve)))
    assert again == curve
    for bad in ("thinking_on", "High", "effort"):
        text = CURVE.replace("  reasoning_effort_medium:", f"  {bad}:")
        with pytest.raises(SchemaError, match="level name"):
            parse_curve(__import__("yaml").safe_load(text))


def test_existing_curves_still_load_and_have_no_levels():
    store = load_store(None)
    assert store.curves
    assert all(not sc.curve.levels for sc in store.curves)


def test_presets_levels_and_equivalents():
    dsv4 = presets.preset_for("deepseek-ai/DeepSeek-V4-Pro")
    assert dsv4.kwargs_for("reasoning_effort_high") == {"thinking": True, "reasoning_effort": "high"}
    assert dsv4.equivalents("reasoning_effort_high") == ["on"]
    gpt = presets.preset_for("openai/gpt-oss-120b")
    assert gpt.kwargs_for("reasoning_effort_medium") == {"reasoning_effort": "medium"}
    with pytest.raises(UsageError, match="no thinking level 'reasoning_effort_max'"):
        gpt.mode("reasoning_effort_max")


def test_records_at_a_level_fit_into_a_curve_level(tmp_path: Path, capsys):
    """A record's thinking may be a level (canonical spelling only); fit puts it under levels:."""
    import numpy as np
    from _fit_records import make_curve_dir

    from golden_al.measure.records import load_record
    from golden_al.measure.schema import MeasurementRecord

    make_curve_dir(tmp_path / "high", [1, 2, 3], thinking="reasoning_effort_high")
    make_curve_dir(tmp_path / "on", [1, 2, 3], thinking="on", seed=8)
    base = load_record(tmp_path / "high" / "k1").model_dump(mode="json")
    for bad in ("thinking_on", "High", "reasoning-effort-high"):
        with pytest.raises(ValueError, match="thinking"):
            MeasurementRecord.model_validate({**base, "thinking": bad})
    out = tmp_path / "curve.yaml"
    rc = main(["fit", str(tmp_path / "high"), str(tmp_path / "on"), "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    curve = read_curve_file(out)[0].curve
    assert list(curve.modes()) == ["thinking_on", "reasoning_effort_high"]
    assert sorted(curve.levels["reasoning_effort_high"].points) == [1, 2, 3]
    assert np.isfinite(curve.levels["reasoning_effort_high"].points[3].al)


def test_env_with_a_level_and_with_a_preset_equivalent(golden: Path, capsys):
    rc = main(["env", "--model", "openai/gpt-oss-120b", "--thinking", "reasoning_effort_medium", "--engine", "sglang",
               "--algorithm", "eagle3", "--num-steps", "2", "--format", "json", "--golden-dir", str(golden)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(out)["SGLANG_SIMULATE_ACC_LEN"] == "2.41"
    # a level the curve does not have is no golden value, never the neighbouring mode
    rc = main(["env", "--model", "openai/gpt-oss-120b", "--thinking", "reasoning_effort_low", "--engine", "sglang",
               "--algorithm", "eagle3", "--num-steps", "2", "--golden-dir", str(golden)])
    err = capsys.readouterr().err
    assert rc != 0
    assert "no reasoning_effort_low values" in err
    # DeepSeek-V4's thinking_on *is* reasoning_effort_high (its preset says so): the shipped curve answers
    rc = main(["env", "--model", "deepseek-ai/DeepSeek-V4-Pro", "--thinking", "reasoning_effort_high",
               "--engine", "sglang", "--algorithm", "eagle", "--num-steps", "3", "--format", "json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(out)["SGLANG_SIMULATE_ACC_LEN"] == "2.49"
    rc = main(["env", "--model", "x", "--thinking", "high", "--engine", "sglang", "--draft-len", "3"])
    assert rc == 2
    assert "named level" in capsys.readouterr().err


def test_inject_with_a_level(tmp_path: Path, capsys):
    recipe = tmp_path / "r.yaml"
    shutil.copy(RECIPES / "sglang_disagg_mtp.yaml", recipe)
    rc = main(["inject", str(recipe), "--model", "deepseek-ai/DeepSeek-V4-Pro", "--thinking", "reasoning_effort_high"])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "AL 2.49 " in err
    assert 'SGLANG_SIMULATE_ACC_LEN: "2.49"' in recipe.read_text() or "SGLANG_SIMULATE_ACC_LEN: '2.49'" in \
        recipe.read_text()


def _script(tmp_path: Path, al: str, kwargs: str | None = None, effort: str | None = None) -> Path:
    d = tmp_path / "agentic"
    d.mkdir(exist_ok=True)
    extra = f" --default-chat-template-kwargs '{kwargs}'" if kwargs else ""
    extra += f" --reasoning-effort {effort}" if effort else ""
    p = d / "serve.sh"
    p.write_text("#!/bin/bash\n"
                 f"export SGLANG_SIMULATE_ACC_LEN={al}\n"
                 "export SGLANG_SIMULATE_ACC_METHOD=match-expected\n"
                 "export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token\n"
                 "python3 -m sglang.launch_server --model-path openai/gpt-oss-120b --speculative-algorithm EAGLE3 "
                 f"--speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 3{extra}\n")
    return p


@pytest.mark.parametrize(("al", "kwargs", "effort", "code", "verdict"), [
    ("2.41", '{"reasoning_effort": "medium"}', None, 0, "match"),
    ("2.9", '{"reasoning_effort": "medium"}', None, 1, "mismatch"),
    ("2.41", None, "medium", 0, "match"),
    ("2.41", '{"reasoning_effort": "low"}', None, 1, "no-golden"),  # no-golden fails: pass means proven
])
def test_check_reads_reasoning_effort(tmp_path: Path, golden: Path, capsys, al, kwargs, effort, code, verdict):
    path = _script(tmp_path, al, kwargs, effort)
    rc = main(["check", str(path), "--golden-dir", str(golden), "--format", "json"])
    out, err = capsys.readouterr()
    findings = json.loads(out)["findings"] if out.strip().startswith("{") else json.loads(out)
    (f,) = [f for f in findings if f["file"].endswith("serve.sh")]
    assert (f["verdict"], f["thinking"]) == (verdict, "reasoning_effort_" + (effort or json.loads(kwargs)["reasoning_effort"])), f
    assert rc == code, err


def test_legacy_export_refuses_levels_and_writes_nothing(golden: Path, tmp_path: Path, capsys):
    store = tmp_path / "store"
    export = tmp_path / "export"
    rc = main(["commit", str(golden / "gpt-oss-120b_eagle3.yaml"), "--golden-dir", str(store),
               "--export", "inferencex", "--export-dir", str(export)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "holds only thinking_on and thinking_off" in err
    assert "reasoning_effort_medium" in err
    assert not export.exists() or not any(export.iterdir())
    assert not store.exists() or not any(store.glob("*.yaml"))
    # without the export the curve commits
    rc = main(["commit", str(golden / "gpt-oss-120b_eagle3.yaml"), "--golden-dir", str(store)])
    assert rc == 0, capsys.readouterr().err


def test_sweep_and_measure_parse_levels():
    import argparse

    from golden_al.cli import measure
    from golden_al.cli.sweep import parse_thinking

    assert parse_thinking("on,reasoning_effort_high,on") == ["on", "reasoning_effort_high"]
    with pytest.raises(UsageError, match="named level"):
        parse_thinking("on,max")
    parser = argparse.ArgumentParser()
    measure.add_arguments(parser)
    assert parser.parse_args(["--draft-len", "3", "--thinking", "reasoning_effort_high"]).thinking == \
        "reasoning_effort_high"
    from golden_al.measure.sweep import cell_dir

    assert cell_dir(Path("o"), "reasoning_effort_high", 3) == Path("o/reasoning_effort_high/k3")
    assert cell_dir(Path("o"), "on", 3) == Path("o/thinking_on/k3")


def test_curves_list_and_show_name_the_levels(golden: Path, capsys):
    assert main(["curves", "list", "--golden-dir", str(golden)]) == 0
    out = capsys.readouterr().out
    assert "LEVELS k" in out
    assert "reasoning_effort_medium 2-3" in out
    assert main(["curves", "show", "openai/gpt-oss-120b", "--golden-dir", str(golden)]) == 0
    assert "reasoning_effort_medium" in capsys.readouterr().out
    assert main(["curves", "list"]) == 0
    assert "LEVELS k" not in capsys.readouterr().out  # the shipped curves have none: the table is unchanged
