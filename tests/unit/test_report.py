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
    assert pngs == jsons == {"al_vs_k", "per_position", "acceptance",
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
    assert main(["report", *map(str, curves), "--out", str(out)]) == 0
    pngs, jsons = _pairs(out)
    assert pngs == jsons == {"al_vs_k", "per_position", "acceptance"}
    al = json.loads((out / "al_vs_k.json").read_text())
    assert {s["thinking"] for s in al["series"]} == {"thinking_on", "thinking_off"}
    cells = json.loads((out / "acceptance.json").read_text())["cells"]
    assert all(c["al_per_request_mean"] is None and c["histogram"] is None for c in cells)
    assert cells[0]["unavailable"]["al_per_request_mean"] == "a golden curve holds no per-request rows"
    md = (out / "report.md").read_text()
    assert "no al_per_request_mean (a golden curve holds no per-request rows)" in md
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


@pytest.mark.slow
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


def _rows(k: int, requests: list[list[int]], **extra) -> list:
    """One row per request from its accepted drafts per verify step."""
    from golden_al.measure.schema import RequestResult

    rows = []
    for i, accepted in enumerate(requests):
        rows.append(RequestResult(
            index=i, request_id=f"r{i}", draft_len=k, prompt_hash=f"h{i}", num_output_tokens=len(accepted) + sum(accepted),
            num_verify_steps=len(accepted), num_accepted_drafts=sum(accepted),
            histogram=[accepted.count(j) for j in range(k + 1)],
            per_position_accepted=[sum(a >= j for a in accepted) for j in range(1, k + 1)], **extra))
    return rows


def _write(out: Path, k: int, rows: list, **record) -> None:
    from golden_al.measure.records import append_request_result, build_record, write_record
    from golden_al.measure.schema import DatasetInfo, ModelInfo, SamplingInfo

    out.mkdir(parents=True)
    for r in rows:
        append_request_result(out / "requests.jsonl", r)
    rec = build_record(results=rows, draft_len=k, engine=record.get("engine", "reference"), engine_version=None,
                       mode="live", estimate=False, target=ModelInfo(name="t"), draft=ModelInfo(name="d"),
                       draft_method="draft-model", thinking="off", chat_template_kwargs={},
                       sampling=SamplingInfo(temperature=0.0, max_tokens=64), al_source=record.get("source", "x"),
                       dataset=DatasetInfo(name="he", count=len(rows), hash="d" * 64), provenance={}, seed=0)
    write_record(rec, out)


def test_acceptance_quantities_against_hand_computed_values(tmp_path: Path) -> None:
    """Two requests per k. k=2: A accepts 1,1,2,2 (AL 2.5), B accepts 0,0 (AL 1): steps 6, accepted 6, so AL 2.0
    weighted by steps but 1.75 as the mean of the two requests; histogram [2, 2, 2]; positions 4/6, 2/6.
    k=1: A accepts 0,1,1 (AL 5/3), B accepts 1 (AL 2): AL 1.75 weighted, 11/6 as the mean; histogram [1, 3]; 3/4."""
    _write(tmp_path / "run" / "k1", 1, _rows(1, [[0, 1, 1], [1]]))
    _write(tmp_path / "run" / "k2", 2, _rows(2, [[1, 1, 2, 2], [0, 0]]))
    out = tmp_path / "report"
    assert main(["report", str(tmp_path / "run"), "--out", str(out)]) == 0
    cells = {c["k"]: c for c in json.loads((out / "acceptance.json").read_text())["cells"]}
    assert cells[2]["al"] == pytest.approx(2.0)
    assert cells[2]["al_per_request_mean"] == pytest.approx(1.75)
    assert cells[2]["histogram"] == [2, 2, 2]
    assert cells[2]["per_position_acceptance"] == pytest.approx([4 / 6, 2 / 6])
    assert cells[1]["al"] == pytest.approx(1.75)
    assert cells[1]["al_per_request_mean"] == pytest.approx(11 / 6)
    assert cells[1]["histogram"] == [1, 3]
    assert cells[1]["per_position_acceptance"] == pytest.approx([0.75])
    assert cells[1]["unavailable"] == {}
    assert sorted(cells[2]["request_als"]) == pytest.approx([1.0, 2.5])
    md = (out / "report.md").read_text()
    assert "| 2 | 2.000 | 1.750 | 2 2 2 | 0.667 0.333 |" in md


def test_acceptance_says_which_sources_cannot_give_what(tmp_path: Path) -> None:
    """Counter windows attribute nothing to a request; a source of totals has no histogram."""
    from golden_al.measure.schema import RequestResult

    windows = [r.model_copy(update={"extra": {"unit": [i], "batch": i, "windows": 1}})
               for i, r in enumerate(_rows(2, [[1, 2], [0, 2, 1]]))]
    _write(tmp_path / "win" / "k2", 2, windows, engine="vllm", source="vllm-prometheus-windows")
    totals = [RequestResult(index=i, request_id=f"r{i}", draft_len=2, prompt_hash=f"h{i}", num_output_tokens=9,
                            num_verify_steps=4, num_accepted_drafts=5, histogram=[0, 0, 0], per_position_accepted=[0, 0],
                            histogram_known=False) for i in range(3)]
    _write(tmp_path / "tot" / "k2", 2, totals, engine="trtllm", source="trtllm-perf-metrics")
    out = tmp_path / "report"
    assert main(["report", str(tmp_path / "win"), str(tmp_path / "tot"), "--out", str(out)]) == 0
    cells = json.loads((out / "acceptance.json").read_text())["cells"]
    (win,) = [c for c in cells if c["source"].startswith(str(tmp_path / "win"))]
    (tot,) = [c for c in cells if c["source"].startswith(str(tmp_path / "tot"))]
    assert win["al_per_request_mean"] is None
    assert "counter windows" in win["unavailable"]["al_per_request_mean"]
    assert win["histogram"] == [1, 2, 2]
    assert tot["al_per_request_mean"] == pytest.approx(2.25)
    assert tot["histogram"] is None
    assert tot["per_position_acceptance"] is None
    assert "totals only" in tot["unavailable"]["histogram"]
