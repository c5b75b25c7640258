"""``golden-al fit``: grouping, refusals, pooling, rounding, measured/derived marking, diagnostics."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pytest
from _fit_records import make_curve_dir, make_record

from golden_al.cli.main import main
from golden_al.curvefit import default_model_key, round_al, sidecar_path
from golden_al.golden import read_curve_file
from golden_al.measure.records import load_record, load_records


def _expected_al(acc: int, steps: int) -> float:
    return float((Decimal(1) + Decimal(acc) / Decimal(steps)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _fit(argv: list[str]) -> int:
    return main(["fit", *argv])


class TestCurve:
    def test_points_rounded_from_counts_with_ci_and_counts(self, tmp_path: Path, capsys) -> None:
        recs = make_curve_dir(tmp_path / "recs", range(1, 5))
        out = tmp_path / "curve.yaml"
        assert _fit([str(recs), "--out", str(out)]) == 0
        curve = read_curve_file(out)[0].curve
        blk = curve.mode("off")
        assert curve.mode("on") is None
        assert sorted(blk.points) == [1, 2, 3, 4]
        for k, p in blk.points.items():
            rec = load_record(recs / f"k{k}")
            assert p.al == _expected_al(rec.num_accepted_drafts, rec.num_verify_steps)
            assert p.al == round(p.al, 2)
            assert p.num_verify_steps == rec.num_verify_steps
            assert p.num_accepted_drafts == rec.num_accepted_drafts
            assert p.per_position_accepted == rec.per_position_accepted
            assert p.origin == "measured"
            lo, hi = p.ci95
            assert lo <= rec.al_ci95[0] + 1e-12
            assert hi >= rec.al_ci95[1] - 1e-12
            assert lo <= p.al <= hi
        assert curve.model == "qwen2.5-coder-1.5b-instruct"
        assert curve.draft.method == "draft-model"
        assert curve.thinking_off.sampling.temperature == 0.0
        assert curve.thinking_off.output_len == 256
        assert curve.provenance.record_sha256 is not None
        assert "wrote" in capsys.readouterr().out

    def test_sidecar_has_residuals_profile_and_records(self, tmp_path: Path) -> None:
        recs = make_curve_dir(tmp_path / "recs", range(1, 5))
        out = tmp_path / "curve.yaml"
        assert _fit([str(recs), "--out", str(out)]) == 0
        side = json.loads(sidecar_path(out).read_text())
        assert side["kind"] == "golden-al-fit"
        assert {r["sha256"] for r in side["records"]} == {lr.sha256 for lr in load_records([recs])}
        mode = side["modes"]["thinking_off"]
        assert len(mode["profile"]["conditional"]) == 4
        for k in ("1", "2", "3", "4"):
            pt = mode["points"][k]
            assert {"fitted", "residual", "tolerance", "flags", "histogram", "ci95_exact"} <= set(pt)
            assert pt["residual"] == pytest.approx(pt["al_exact"] - pt["fitted"])
        assert "unexplained_ks" in mode
        assert "provenance" in side

    def test_both_thinking_modes_grouped_with_their_own_sampling(self, tmp_path: Path) -> None:
        make_curve_dir(tmp_path / "off", range(1, 4))
        make_curve_dir(tmp_path / "on", range(1, 4), thinking="on", temperature=0.6, top_p=0.95,
                       chat_template_kwargs={"enable_thinking": True}, dataset_hash="e" * 64)
        out = tmp_path / "curve.yaml"
        assert _fit([str(tmp_path / "off"), str(tmp_path / "on"), "--out", str(out)]) == 0
        curve = read_curve_file(out)[0].curve
        assert sorted(curve.thinking_on.points) == sorted(curve.thinking_off.points) == [1, 2, 3]
        assert curve.thinking_on.sampling.temperature == 0.6
        assert curve.thinking_on.sampling.chat_template_kwargs == {"enable_thinking": True}
        assert curve.thinking_off.sampling.chat_template_kwargs is None

    def test_options_model_key_alias_note(self, tmp_path: Path) -> None:
        recs = make_curve_dir(tmp_path / "recs", [1, 2])
        out = tmp_path / "c.yaml"
        assert _fit([str(recs), "--out", str(out), "--model-key", "qwen-coder", "--alias", "my/served-name",
                     "--provenance-note", "Measured for the worked example."]) == 0
        curve = read_curve_file(out)[0].curve
        assert curve.model == "qwen-coder"
        assert "my/served-name" in curve.aliases
        assert "qwen2.5-coder-1.5b-instruct" in curve.aliases
        assert curve.provenance.notes.startswith("Measured for the worked example.")

    def test_json_format(self, tmp_path: Path, capsys) -> None:
        recs = make_curve_dir(tmp_path / "recs", [1, 2])
        assert _fit([str(recs), "--out", str(tmp_path / "c.yaml"), "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["modes"]["thinking_off"]["points"]["2"]["al"] is not None


@pytest.mark.parametrize(
    ("field", "override"),
    [
        ("sampling.temperature", {"temperature": 0.7}),
        ("sampling.top_p", {"top_p": 0.9}),
        ("sampling.max_tokens", {"max_tokens": 512}),
        ("chat_template_kwargs", {"chat_template_kwargs": {"enable_thinking": False}}),
        ("dataset.name", {"dataset_name": "mt-bench"}),
        ("dataset.category", {"dataset_category": "coding"}),
        ("dataset.hash", {"dataset_hash": "f" * 64}),
        ("engine", {"engine": "vllm"}),
        ("engine_version", {"engine_version": "0.2.0"}),
        ("target", {"target_name": "some/other-target"}),
        ("draft", {"draft_name": "some/other-draft"}),
        ("target.dtype", {"target_dtype": "bfloat16"}),
        ("draft.dtype", {"draft_dtype": "bfloat16"}),
        ("draft.shipped_dtype", {"shipped_dtype": "bfloat16"}),
    ],
)
def test_refuses_records_that_disagree(tmp_path: Path, capsys, field: str, override: dict) -> None:
    rng = np.random.default_rng(3)
    a = make_record(tmp_path / "a", 1, rng=rng)
    b = make_record(tmp_path / "b", 2, rng=rng, **override)
    out = tmp_path / "c.yaml"
    assert _fit([str(a), str(b), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"disagree on {field} " in err
    assert str(a) in err
    assert str(b) in err
    assert "Refusing to average" in err
    assert not out.exists()


def test_pools_same_cell_by_summing_counts(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    a = make_record(tmp_path / "a", 3, rng=rng)
    b = make_record(tmp_path / "b", 3, rng=rng, num_requests=8)
    out = tmp_path / "c.yaml"
    assert _fit([str(a), str(b), "--out", str(out)]) == 0
    ra, rb = load_record(a), load_record(b)
    p = read_curve_file(out)[0].curve.thinking_off.points[3]
    assert p.num_verify_steps == ra.num_verify_steps + rb.num_verify_steps
    assert p.num_accepted_drafts == ra.num_accepted_drafts + rb.num_accepted_drafts
    assert p.per_position_accepted == [x + y for x, y in zip(ra.per_position_accepted, rb.per_position_accepted,
                                                             strict=True)]
    assert p.al == _expected_al(p.num_accepted_drafts, p.num_verify_steps)
    side = json.loads(sidecar_path(out).read_text())["modes"]["thinking_off"]["points"]["3"]
    assert side["ci_method"] == "clusters"
    assert side["num_requests"] == 20
    # prompts h0..h7 were measured in both records: one cluster each, 12 in all
    assert side["uncertainty"]["clusters"] == 12
    assert p.uncertainty is not None
    assert p.uncertainty.clusters == 12
    assert p.uncertainty.method == "studentized-cluster-bootstrap+logit-cr2-bm"
    assert side["ci95_exact"][0] < side["al_exact"] < side["ci95_exact"][1]


def test_pooled_ci_without_requests_combines_record_cis(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    a = make_record(tmp_path / "a", 2, rng=rng, with_requests=False)
    b = make_record(tmp_path / "b", 2, rng=rng, with_requests=False)
    out = tmp_path / "c.yaml"
    assert _fit([str(a), str(b), "--out", str(out)]) == 0
    side = json.loads(sidecar_path(out).read_text())["modes"]["thinking_off"]["points"]["2"]
    assert side["ci_method"] == "delta"
    widths = [r.al_ci95[1] - r.al_ci95[0] for r in (load_record(a), load_record(b))]
    assert side["ci95_exact"][1] - side["ci95_exact"][0] < max(widths)  # pooling narrows the CI


def test_fill_derived_marks_profile_points(tmp_path: Path) -> None:
    recs = make_curve_dir(tmp_path / "recs", [1, 2, 4])
    plain, filled = tmp_path / "plain.yaml", tmp_path / "filled.yaml"
    assert _fit([str(recs), "--out", str(plain)]) == 0
    assert _fit([str(recs), "--out", str(filled), "--fill-derived"]) == 0
    assert 3 not in read_curve_file(plain)[0].curve.thinking_off.points
    pts = read_curve_file(filled)[0].curve.thinking_off.points
    assert pts[3].origin == "derived"
    assert "profile" in pts[3].note
    assert pts[3].num_verify_steps is None
    assert pts[3].ci95 is None
    assert pts[2].al <= pts[3].al <= pts[4].al
    assert all(pts[k].origin == "measured" for k in (1, 2, 4))
    side = json.loads(sidecar_path(filled).read_text())
    assert side["modes"]["thinking_off"]["filled_ks"] == [3]


def test_derived_records_marked_and_superseded_by_measured(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    make_record(tmp_path / "m1", 1, rng=rng)
    make_record(tmp_path / "m3", 3, rng=rng)
    make_record(tmp_path / "d2", 2, rng=rng, derived=True, derived_from=3)
    make_record(tmp_path / "d3", 3, rng=rng, derived=True, derived_from=4)
    out = tmp_path / "c.yaml"
    assert _fit([str(tmp_path), "--out", str(out)]) == 0
    pts = read_curve_file(out)[0].curve.thinking_off.points
    assert pts[2].origin == "derived"
    assert "k=3" in pts[2].note
    assert pts[1].origin == pts[3].origin == "measured"
    assert pts[3].num_verify_steps == load_record(tmp_path / "m3").num_verify_steps
    side = json.loads(sidecar_path(out).read_text())["modes"]["thinking_off"]
    (sup,) = side["superseded_derived"]
    assert sup["k"] == 3
    assert sup["difference"] == pytest.approx(sup["derived_al"] - sup["measured_al"])


def test_flags_a_point_the_profile_cannot_explain(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(9)
    low = (0.5, 0.5, 0.5, 0.5)
    make_record(tmp_path / "k1", 1, rng=rng, profile=low, num_requests=30, steps=80)
    make_record(tmp_path / "k2", 2, rng=rng, profile=low, num_requests=30, steps=80)
    make_record(tmp_path / "k3", 3, rng=rng, profile=(0.95, 0.95, 0.95), num_requests=30, steps=80)  # a jump
    out = tmp_path / "c.yaml"
    assert _fit([str(tmp_path), "--out", str(out)]) == 1  # a flagged point exits 1, after writing
    side = json.loads(sidecar_path(out).read_text())["modes"]["thinking_off"]
    assert 3 in side["unexplained_ks"]
    assert any(f["kind"] == "jump" for f in side["points"]["3"]["flags"])
    assert "fit flag" in read_curve_file(out)[0].curve.thinking_off.points[3].note
    assert "flag k=3 jump" in capsys.readouterr().out
    assert _fit([str(tmp_path), "--out", str(out), "--allow-flags"]) == 0
    assert _fit([str(tmp_path), "--out", str(out), "--strict"]) == 1  # the old spelling of the default


def test_round_al_is_half_up_and_exact_from_counts() -> None:
    # 1 + 1/8 = 1.125 exactly: half up gives 1.13 (binary round() gives 1.12)
    assert round_al(1.125, accepted=1, steps=8) == float(Decimal("1.125").quantize(Decimal("0.01"), ROUND_HALF_UP))
    for acc, steps in [(382, 480), (1, 3), (2, 3), (7, 400)]:
        assert round_al(1 + acc / steps, accepted=acc, steps=steps) == _expected_al(acc, steps)


@pytest.mark.parametrize(
    ("name", "key"),
    [("Qwen/Qwen2.5-Coder-1.5B-Instruct", "qwen2.5-coder-1.5b-instruct"),
     ("/models/x/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-1.5b-instruct-q4_k_m"),
     ("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-1.5b-instruct")],
)
def test_default_model_key(name: str, key: str) -> None:
    assert default_model_key(name) == key


def test_missing_record_is_an_input_error(tmp_path: Path, capsys) -> None:
    assert _fit([str(tmp_path / "nope"), "--out", str(tmp_path / "c.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_fit_is_deterministic(tmp_path: Path) -> None:
    recs = make_curve_dir(tmp_path / "recs", range(1, 4))
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    assert _fit([str(recs), "--out", str(a)]) == 0
    assert _fit([str(recs), "--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert str(read_curve_file(a)[0].curve.provenance.date) == "2026-01-01"  # the records' measurement date


def test_the_decaying_profile_flags_a_bent_curve_that_the_free_profile_absorbs(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(11)
    bent = (0.95, 0.5, 0.95, 0.5, 0.95, 0.5)  # a chain draft, but far from a smooth decay
    recs = tmp_path / "recs"
    for k in range(1, 7):
        make_record(recs / f"k{k}", k, rng=rng, profile=bent, num_requests=40, steps=200)
    out = tmp_path / "c.yaml"
    assert _fit([str(recs), "--out", str(out), "--profile", "decaying"]) == 1  # flagged: exit 1, curve and sidecar written
    text = capsys.readouterr().out
    assert "decaying profile, 2 parameters" in text
    assert "a richer profile is needed" in text
    side = json.loads(sidecar_path(out).read_text())["modes"]["thinking_off"]
    assert side["profile"]["family"] == "decaying"
    assert side["profile"]["goodness_of_fit"]["richer_profile_needed"] is True
    assert any(f["kind"] == "shape" for f in side["flags"])
    assert all("residual_se" in p for p in side["points"].values())
    out2 = tmp_path / "free.yaml"
    assert _fit([str(recs), "--out", str(out2), "--profile", "free"]) == 0
    side2 = json.loads(sidecar_path(out2).read_text())["modes"]["thinking_off"]
    assert side2["profile"]["family"] == "free"
    assert not any(f["kind"] == "shape" for f in side2["flags"])
