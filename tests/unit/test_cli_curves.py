"""``golden-al curves list`` and ``golden-al curves show``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from golden_al.cli.main import main
from golden_al.golden import load_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inferencex" / "golden_al_distribution"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["curves", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_list_text(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "list")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].split() == ["CURVE", "MODEL", "METHOD", "VARIANT", "THINKING_ON", "k", "THINKING_OFF", "k", "SOURCE"]
    rows = {line.split()[0]: line.split() for line in lines[1:-1]}
    store = load_store()
    assert len(rows) == len(store.curves)
    assert rows["dsv4_mtp"][1:6] == ["deepseek-v4-pro", "mtp", "-", "1-8", "1-8"]
    assert rows["musespark_dflash"][1:6] == ["muse-spark-open-816b-a42b-nvfp4", "dflash", "-", "7", "-"]
    assert rows["minimaxm3_eagle3_gqa"][3] == "gqa"
    assert lines[-1].startswith(f"{len(store.curves)} curves, {len(store.models())} models")


def test_list_json_and_their_directory(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "list", "--format", "json", "--golden-dir", str(FIXTURES))
    assert rc == 0
    data = json.loads(out)
    assert len(data) == 9
    assert {d["format"] for d in data} == {"inferencex-legacy"}
    dsv4 = next(d for d in data if d["name"] == "dsv4_mtp")
    assert dsv4["thinking_off"]["points"]["8"]["al"] == 3.11


def test_show_text(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "show", "deepseek-ai/DeepSeek-V4-Pro")
    assert rc == 0
    assert out.startswith("dsv4_mtp  (golden-al: ")
    table = [line.split() for line in out.splitlines() if line.startswith("    ")]
    assert table[0] == ["k", "thinking_on", "thinking_off"]
    assert table[3] == ["3", "2.49", "2.97"]
    assert table[8] == ["8", "2.58", "3.11"]
    assert "source:     https://github.com/SemiAnalysisAI/InferenceX/actions/runs/27180633016" in out
    assert 'chat_template_kwargs={"thinking": true, "reasoning_effort": "high"}' in out


def test_show_several_curves_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "show", "kimik3", "--format", "json")
    data = json.loads(out)
    assert rc == 0
    assert [d["name"] for d in data] == [
        "kimik3_dspark", "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method"]
    assert data[1]["draft"]["variant"] == "probabilistic-block"
    assert data[1]["thinking_on"]["points"]["7"]["al"] == 3.84


def test_show_legacy_is_their_shape(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "show", "minimax-m3", "--variant", "gqa", "--format", "legacy")
    assert rc == 0
    data = yaml.safe_load(out)
    ref = yaml.safe_load((FIXTURES / "minimaxm3_eagle3_gqa.yaml").read_text())
    assert data == ref


def test_show_unknown_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "show", "llama-5")
    assert rc == 2
    assert out == ""
    assert "no golden curve for model 'llama-5'" in err
    rc, out, err = run(capsys, "show", "dsv4", "--method", "dspark")
    assert rc == 2
    assert "dsv4_mtp (method mtp)" in err
