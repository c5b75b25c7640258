"""``golden-al report``: report.md and every PNG + JSON pair, from records and from curves."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from _fit_records import make_curve_dir

from golden_al.cli.main import main
from golden_al.golden import SHIPPED_CURVES_DIR

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _agg(monkeypatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")


def _pairs(out: Path) -> tuple[set[str], set[str]]:
    return {p.stem for p in out.glob("*.png")}, {p.stem for p in out.glob("*.json")}


def test_report_from_records_writes_every_pair(tmp_path: Path, capsys) -> None:
    recs = make_curve_dir(tmp_path / "recs", range(1, 5))
    out = tmp_path / "report"
    assert main(["report", str(recs), "--out", str(out)]) == 0
    pngs, jsons = _pairs(out)
    assert pngs == jsons == {"al_vs_k", "per_position", "throughput",
                             "histograms_qwen2.5-coder-1.5b-instruct_thinking_off"}
    for stem in pngs:
        assert (out / f"{stem}.png").read_bytes()[:8] == PNG_MAGIC
        doc = json.loads((out / f"{stem}.json").read_text())
        assert doc["provenance"]["tool"] == "golden-al"
        assert len(doc["inputs"]) == 4
        assert all(i["kind"] == "measurement-record" for i in doc["inputs"])
    md = (out / "report.md").read_text()
    for stem in pngs:
        assert f"]({stem}.png)" in md
    assert "## Provenance" in md
    assert '"tool_version"' in md
    hist = json.loads((out / "histograms_qwen2.5-coder-1.5b-instruct_thinking_off.json").read_text())
    assert [p["k"] for p in hist["panels"]] == [1, 2, 3, 4]
    for panel in hist["panels"]:
        assert sum(panel["measured_pmf"]) == pytest.approx(1.0)
        me = panel["samplers"]["SGLang match-expected"]
        assert me["mean"] == pytest.approx(panel["measured_al"], abs=1e-9)  # same mean injected
    al = json.loads((out / "al_vs_k.json").read_text())
    (series,) = al["series"]
    assert all(p["ci95"] and p["origin"] == "measured" for p in series["points"])
    assert "wrote" in capsys.readouterr().out


def test_report_from_curves_without_histograms(tmp_path: Path) -> None:
    out = tmp_path / "report"
    curves = [SHIPPED_CURVES_DIR / "qwen3.5_mtp.yaml", SHIPPED_CURVES_DIR / "dsv4_mtp.yaml"]
    assert main(["report", *map(str, curves), "--out", str(out), "--batch-sizes", "1,8"]) == 0
    pngs, jsons = _pairs(out)
    assert pngs == jsons == {"al_vs_k", "per_position", "throughput"}
    tp = json.loads((out / "throughput.json").read_text())
    assert {r["batch_size"] for r in tp["series"]} == {1, 8}
    al = json.loads((out / "al_vs_k.json").read_text())
    assert {s["thinking"] for s in al["series"]} == {"thinking_on", "thinking_off"}
    md = (out / "report.md").read_text()
    assert "best k" in md
    assert "qwen3.5-397b-a17b-nvfp4" in md


def test_report_of_a_curve_without_sidecar_shows_its_profile_flags(tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert main(["report", str(SHIPPED_CURVES_DIR / "dsv4_mtp.yaml"), "--out", str(out)]) == 0
    on = next(s for s in json.loads((out / "al_vs_k.json").read_text())["series"] if s["thinking"] == "thinking_on")
    assert {(f["k"], f["kind"]) for f in on["flags"]} == {(7, "drop"), (8, "jump")}
    md = (out / "report.md").read_text()
    assert "| 7 | 2.54 | - | measured | 2.558 | drop |" in md  # the 2-parameter decaying profile
    assert "- flag k=8 jump:" in md


def test_report_uses_the_fit_sidecar_of_a_curve(tmp_path: Path) -> None:
    recs = make_curve_dir(tmp_path / "recs", range(1, 4))
    curve = tmp_path / "curve.yaml"
    assert main(["fit", str(recs), "--out", str(curve)]) == 0
    out = tmp_path / "report"
    assert main(["report", str(curve), "--out", str(out)]) == 0
    pngs, _ = _pairs(out)
    assert "histograms_qwen2.5-coder-1.5b-instruct_thinking_off" in pngs
    kinds = {i["kind"] for i in json.loads((out / "al_vs_k.json").read_text())["inputs"]}
    assert kinds == {"golden-curve", "fit-sidecar"}


def test_report_refuses_mismatched_records_like_fit(tmp_path: Path, capsys) -> None:
    make_curve_dir(tmp_path / "a", [1])
    make_curve_dir(tmp_path / "b", [2], temperature=0.8)
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "r")]) == 2
    assert "disagree on sampling.temperature" in capsys.readouterr().err


def test_missing_matplotlib_names_the_extra(tmp_path: Path, monkeypatch, capsys) -> None:
    recs = make_curve_dir(tmp_path / "recs", [1, 2])
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main(["report", str(recs), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "matplotlib" in err
    assert "golden-al[plot]" in err


def test_records_of_two_datasets_are_two_series(tmp_path: Path) -> None:
    make_curve_dir(tmp_path / "he", [1, 2])
    make_curve_dir(tmp_path / "mt", [1, 2], dataset_name="mt-bench", dataset_category="coding", dataset_hash="a" * 64)
    out = tmp_path / "r"
    assert main(["report", str(tmp_path / "he"), str(tmp_path / "mt"), "--out", str(out)]) == 0
    labels = [s["label"] for s in json.loads((out / "al_vs_k.json").read_text())["series"]]
    assert len(labels) == 2
    assert any("[humaneval]" in lab for lab in labels)
    assert any("[mt-bench:coding]" in lab for lab in labels)
    assert len(list(out.glob("histograms_*.png"))) == 2


def test_fit_and_report_print_the_same_intervals(tmp_path: Path, capsys) -> None:
    recs = make_curve_dir(tmp_path / "recs", range(1, 4))
    curve = tmp_path / "curve.yaml"
    assert main(["fit", str(recs), "--out", str(curve)]) == 0
    fit_out = capsys.readouterr().out
    cis = re.findall(r"\[\d\.\d{3}, \d\.\d{3}\]", fit_out)
    assert len(cis) == 3
    for source in (curve, recs):  # the committed curve (with its sidecar) and the records themselves
        out = tmp_path / f"report-{source.name}"
        assert main(["report", str(source), "--out", str(out)]) == 0
        text = (out / "report.md").read_text()
        for ci in cis:
            assert ci in text, (source, ci)
