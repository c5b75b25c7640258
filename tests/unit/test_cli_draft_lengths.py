"""``golden-al draft-lengths``: the JSON contract, curve files and one-line exit-2 errors."""

from __future__ import annotations

import json

import pytest

from golden_al.cli.main import main
from golden_al.golden import SHIPPED_CURVES_DIR, read_curve_file

KIMI = "1=1.83,2=2.43,3=2.88,4=3.24,5=3.46,6=3.62,7=3.71,8=3.77"


def _json(capsys, *argv: str) -> dict:
    rc = main(["draft-lengths", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_json_contract(capsys):
    r = _json(capsys, "--curve", KIMI)
    assert [row["k"] for row in r["draft_lengths"]] == list(range(1, 9))
    for row in r["draft_lengths"]:
        assert {"k", "al", "tokens_per_s_measured", "tokens_per_s_predicted", "speedup"} <= set(row)
    best = max(r["draft_lengths"], key=lambda row: row["speedup"])
    assert r["best_k"] == best["k"]
    assert r["overlaps_best"] == [best["k"]]  # assumed costs and a bare curve carry no interval
    assert r["baseline"]["speedup"] == 1.0


def test_cost_options_change_the_answer(capsys):
    cheap = _json(capsys, "--curve", KIMI, "--draft-cost", "0.1")
    dear = _json(capsys, "--curve", KIMI, "--draft-cost", "3", "--fixed-cost", "8.5",
                 "--verify-cost-per-token", "0.01", "--batch", "2")
    assert dear["cost_model"]["terms"]["draft_ms_per_token"]["value"] == 3.0
    assert dear["cost_model"]["terms"]["fixed_ms"]["value"] == 8.5
    assert dear["cost_model"]["batch_size"] == 2
    assert dear["baseline"]["step_ms"] == pytest.approx(8.5 + 0.01 * 2)
    assert dear["best_k"] < cheap["best_k"]


def test_output_tokens_adds_latency(capsys):
    r = _json(capsys, "--curve", KIMI, "--output-tokens", "256")
    lat = r["draft_lengths"][6]["latency"]
    assert lat["output_tokens"] == 256
    assert lat["shaped"]["steps"]["p99"] > lat["two_point"]["steps"]["p99"]


def test_curve_files(capsys, tmp_path):
    flat = tmp_path / "curve.txt"
    flat.write_text("# k=AL\n1=1.83\n2=2.43\n")
    assert [row["al"] for row in _json(capsys, "--curve-file", str(flat))["draft_lengths"]] == [1.83, 2.43]
    golden = tmp_path / "kimi_eagle3.yaml"  # InferenceX's shape, read by the one curve reader (method from the name)
    golden.write_text("kimi:\n  thinking_on:\n    1: 1.83\n    2: 2.43\n  thinking_off:\n    1: 1.80\n    2: 2.33\n")
    r = _json(capsys, "--curve-file", str(golden), "--thinking", "off")
    assert [row["al"] for row in r["draft_lengths"]] == [1.80, 2.33]
    ours = SHIPPED_CURVES_DIR / "kimik2.5_eagle3.yaml"  # golden-al's own curve schema
    r = _json(capsys, "--curve-file", str(ours), "--thinking", "on")
    assert r["draft_lengths"][0]["al"] == read_curve_file(ours)[0].curve.thinking_on.points[1].al  # type: ignore[union-attr]
    loose = tmp_path / "loose.yaml"  # a golden-al-shaped file that breaks the schema is refused, naming the key
    loose.write_text("schema_version: 1\nmodel: kimi\nthinking_on:\n  points:\n    1: {al: 1.83}\n")
    assert main(["draft-lengths", "--curve-file", str(loose)]) == 2
    assert "draft" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--curve", "1=1.83,2:2.43x"], "not a number; expected K=AL pairs"),
        (["--curve", "1=1.83;2=2.43"], "malformed entry"),
        (["--curve", "1=abc"], "not a number"),
        (["--curve", "1=1.5,1=1.6"], "appears twice"),
        (["--curve", "7=9"], "outside [1, 8]"),
        (["--curve", ""], "empty"),
        (["--curve", KIMI, "--fixed-cost", "-1"], "--fixed-cost"),
        (["--curve", KIMI, "--fixed-cost", "0", "--verify-cost-per-token", "0"], "a step must take some time"),
        (["--curve", KIMI, "--batch", "0"], "--batch"),
        (["--curve-file", "/nonexistent/curve.yaml"], "cannot read"),
        (["--curve", KIMI, "--thinking", "on"], "only to --curve-file"),
        ([], "one of the arguments --curve --measured --curve-file is required"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    rc = main(["draft-lengths", *argv])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err


def test_curve_file_errors_name_file_and_line(capsys, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1=1.8\n2=abc\n")
    assert main(["draft-lengths", "--curve-file", str(bad)]) == 2
    _, err = capsys.readouterr()
    assert f"{bad}:2:" in err
    assert "not a number" in err
    both = tmp_path / "m_mtp.yaml"
    both.write_text("m:\n  thinking_on: {1: 1.8}\n  thinking_off: {1: 1.7}\n")
    assert main(["draft-lengths", "--curve-file", str(both)]) == 2
    _, err = capsys.readouterr()
    assert "--thinking" in err


def test_text_output_and_help(capsys):
    assert main(["draft-lengths", "--curve", KIMI, "--output-tokens", "128"]) == 0
    out, _ = capsys.readouterr()
    assert "<- best" in out
    assert "two-point" in out
    assert main(["draft-lengths", "--help"]) == 0
    out, _ = capsys.readouterr()
    assert "examples:" in out
    assert "golden-al draft-lengths --curve 1=1.83" in out


# ------------------------------------------------------------------------------------------- --measured
FIXED, DRAFT, VERIFY = 100.0, 22.0, 5.0  # ms: the step-cost model the synthetic timings follow at batch 1


def _step_ms(k: int) -> float:
    return FIXED + DRAFT * k + VERIFY * (k + 1)


def _timed_run(root, ks=(1, 2, 3), *, engine: str = "reference", timed: bool = True):
    """Records at each k whose 5 timed steps (batch 1, 3 tokens each) scatter around the model's step time."""
    import numpy as np

    from golden_al.measure.totals import timing_block
    from golden_al.plugin.imported import TimedUnit
    from tests.unit._fit_records import make_record

    rng = np.random.default_rng(3)
    for k in ks:
        units = [TimedUnit(batch=1, steps=1, tokens=3, wall_ms=_step_ms(k) + d, draft_ms=DRAFT * k, load1=0.5,
                           cpu_ms=None if engine != "reference" else 1.5 * _step_ms(k)) for d in (-2.0, -1.0, 0.0, 1.0, 2.0)]
        make_record(root / f"k{k}", k, rng=rng, engine=engine,
                    timing=timing_block(units, source="reference-steps", unit="step") if timed else None)
    return root


def test_measured_json_contract_and_hand_computed_values(capsys, tmp_path):
    from golden_al.measure.records import load_record

    run = _timed_run(tmp_path / "run")
    r = _json(capsys, "--measured", str(run))
    assert r["source"] == "measured"
    assert "fitted" in r["note"]
    assert [row["k"] for row in r["draft_lengths"]] == [1, 2, 3]
    terms = r["cost_model"]["terms"]
    # the draft phase separates the per-drafted from the per-verified cost at one batch size
    assert terms["fixed_ms"]["value"] == pytest.approx(FIXED)
    assert terms["draft_ms_per_token"]["value"] == pytest.approx(DRAFT)
    assert terms["verify_ms_per_token"]["value"] == pytest.approx(VERIFY)
    assert terms["draft_ms_per_token_per_request"] is None
    assert r["baseline"]["step_ms"] == pytest.approx(FIXED + VERIFY)
    tps = {}
    for row in r["draft_lengths"]:
        k, rec = row["k"], load_record(run / f"k{row['k']}")
        assert {"k", "al", "tokens_per_s_measured", "tokens_per_s_predicted", "speedup"} <= set(row)
        assert row["al"] == pytest.approx(rec.al)
        assert row["tokens_per_s_measured"] == pytest.approx(1000 * 15 / (5 * _step_ms(k)))  # 15 tokens, 5 medians
        assert row["tokens_per_s_predicted"] == pytest.approx(1000 * rec.al / _step_ms(k))
        assert row["speedup"] == pytest.approx(rec.al * (FIXED + VERIFY) / _step_ms(k))
        lo, hi = rec.al_ci95  # an exact fit: the interval is AL's alone
        assert row["tokens_per_s_predicted_ci95"] == pytest.approx([1000 * lo / _step_ms(k), 1000 * hi / _step_ms(k)])
        assert row["prediction_error"] == pytest.approx(rec.al / 3 - 1, abs=1e-4)
        assert row["held_out_error"] == pytest.approx(row["prediction_error"], abs=1e-4)  # a line predicts its k
        tps[k] = (row["tokens_per_s_predicted"], *row["tokens_per_s_predicted_ci95"])
    best = max(tps, key=lambda k: tps[k][0])
    assert r["best_k"] == best
    assert r["overlaps_best"] == [k for k in tps if tps[k][2] >= tps[best][1]]


def test_cpu_clock_fits_the_cpu_time_per_step(capsys, tmp_path):
    """--clock cpu: the steps' CPU time (1.5 x the wall time here), the draft phase (wall) left out, so at one batch
    size the verify cost folds into the other two terms."""
    r = _json(capsys, "--measured", str(_timed_run(tmp_path / "run")), "--clock", "cpu")
    terms = r["cost_model"]["terms"]
    assert r["cost_model"]["clock"] == "cpu"
    assert terms["fixed_ms"]["value"] == pytest.approx(1.5 * (FIXED + VERIFY))
    assert terms["draft_ms_per_token"]["value"] == pytest.approx(1.5 * (DRAFT + VERIFY))
    assert terms["verify_ms_per_token"] is None
    for row in r["draft_lengths"]:
        assert row["tokens_per_s_measured"] == pytest.approx(1000 * 15 / (5 * 1.5 * _step_ms(row["k"])))
        assert row["prediction_error"] == pytest.approx(row["al"] / 3 - 1, abs=1e-4)


def test_measured_text_says_measured_and_names_the_neighbours(capsys, tmp_path):
    run = _timed_run(tmp_path / "run")
    assert main(["draft-lengths", "--measured", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("source: measured:")
    assert "verify_ms_per_token 5" in out
    assert "held out" in out
    assert "best draft length:" in out


def test_assumed_costs_say_so_in_words_and_json(capsys):
    r = _json(capsys, "--curve", KIMI)
    assert r["source"] == "assumed"
    assert "assumed" in r["note"]
    assert "--measured" in r["note"]
    assert all(row["tokens_per_s_measured"] is None for row in r["draft_lengths"])
    assert main(["draft-lengths", "--curve", KIMI]) == 0
    assert capsys.readouterr().out.startswith("source: assumed: the step costs are assumed")


@pytest.mark.parametrize(("how", "needle"), [
    ("untimed", "holds no timing block"),
    ("engines", "setups"),
    ("cost-flag", "--draft-cost sets an assumed cost"),
    ("one-k", "two draft lengths or batch sizes"),
    ("batch", "batch 4"),
    ("no-cpu", "holds no CPU time"),
    ("clock-assumed", "--clock applies to --measured only"),
])
def test_measured_bad_input_exits_2_with_one_line(capsys, tmp_path, how, needle):
    run = tmp_path / "run"
    extra: list[str] = []
    if how == "untimed":
        _timed_run(run, (1,), timed=False)
        _timed_run(run, (2,))
    elif how == "engines":
        _timed_run(run / "a", (1, 2))
        _timed_run(run / "b", (3,), engine="vllm")
    elif how == "no-cpu":
        _timed_run(run, (1, 2), engine="llamacpp")
        extra = ["--clock", "cpu"]
    else:
        _timed_run(run, (1,) if how == "one-k" else (1, 2))
        extra = {"cost-flag": ["--draft-cost", "1"], "batch": ["--batch", "4"]}.get(how, [])
    argv = ["--curve", KIMI, "--clock", "cpu"] if how == "clock-assumed" else ["--measured", str(run), *extra]
    rc = main(["draft-lengths", *argv])
    _, err = capsys.readouterr()
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err
    if how == "untimed":
        assert str(run / "k1" / "measurement.json") in err
