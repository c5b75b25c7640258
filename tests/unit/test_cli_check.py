"""``golden-al check`` through ``main([...])``: exit codes, JSON contract, annotations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from golden_al.checks.findings import SEVERITY
from golden_al.cli.main import main

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "check"
TREE = FIX / "tree"
GOLDEN = str(FIX / "golden")
KEYS = ["file", "line", "use_line", "engine", "algorithm", "model", "thinking", "thinking_source", "draft_len",
        "pinned_value", "implied_al", "expected_al", "verdict", "message", "waived",
        "engine_version", "inputs"]


def test_json_contract_and_exit_1(capsys) -> None:
    rc = main(["check", str(TREE), "--golden-dir", GOLDEN, "--format", "json"])
    out, err = capsys.readouterr()
    assert rc == 1
    data = json.loads(out)
    assert isinstance(data, list)
    assert data
    assert all(list(f) == KEYS for f in data)
    verdicts = {f["verdict"] for f in data}
    assert {"match", "mismatch", "no-golden", "undetermined", "missing-companion", "non-agentic-simulation",
            "unsafe-value", "unreadable"} == verdicts  # the fixture tree exercises every verdict
    trt = next(f for f in data if f["file"].endswith("glm-agentic-al-minus-1.yaml"))
    assert (trt["pinned_value"], trt["implied_al"], trt["expected_al"], trt["draft_len"]) == ("3.06", 4.06, 4.06, 8)
    assert "golden-al check:" in err  # the summary goes to stderr with JSON


def test_text_output_and_exit_0_only_when_every_finding_matches(tmp_path, capsys) -> None:
    clean = tmp_path / "agentic"
    clean.mkdir()
    shutil.copy(TREE / "recipes" / "sglang" / "musespark-dflash.yaml", clean)
    rc = main(["check", str(tmp_path), "--golden-dir", GOLDEN])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.splitlines()[1].endswith("musespark-dflash.yaml: 1 match")  # folded per file
    main(["check", str(tmp_path), "--golden-dir", GOLDEN, "--verbose"])
    assert "musespark-dflash.yaml:8: match: sglang k=7 thinking=on pinned=4.05 expected=4.05: " in (
        capsys.readouterr().out)
    assert out.strip().splitlines()[-1].startswith("golden-al check: 1 finding(s)")
    shutil.copy(TREE / "recipes" / "vllm" / "agentic" / "unknown-model.yaml", clean)  # no-golden: a failure now
    assert main(["check", str(tmp_path), "--golden-dir", GOLDEN]) == 1
    assert "no-golden" in capsys.readouterr().out
    rc = main(["check", str(tmp_path), "--golden-dir", GOLDEN, "--allow", "no-golden"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert rc == 0
    assert last.endswith("allowed by --allow: no-golden 1"), last


def test_text_output_lists_failing_findings_first_by_verdict_one_short_line_each(capsys, monkeypatch) -> None:
    monkeypatch.chdir(TREE)
    rc = main(["check", ".", "--golden-dir", GOLDEN])
    out = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert out[0] == "unreadable (2):"
    heads = [line for line in out if not line.startswith("  ")]
    verdicts = [h.split(" (")[0] for h in heads[:-2]]
    assert verdicts == sorted(verdicts, key=SEVERITY.index)  # grouped, most severe first
    assert heads[-2].startswith("folded: 9 match")  # the matches folded per file, then the summary
    assert heads[-1].startswith("golden-al check: ")
    assert max(len(line) for line in out[:-1]) <= 170  # the long reasoning is under --verbose
    assert "  configs/test-master.yaml:20: mismatch: vllm k=2 pinned 2.49 vs golden 2.27" in out
    assert "  recipes/trtllm/glm-agentic-al-not-minus-1.yaml:8: mismatch: trtllm k=8 pinned 4.06 (AL 5.06) vs golden 4.06" \
        in out  # the pinned value as written, and the AL it means where they differ
    assert "  configs/test-master.yaml: 1 match" in out


def test_allow_takes_only_no_golden_and_undetermined(tmp_path, capsys) -> None:
    rc = main(["check", str(TREE / "recipes"), "--golden-dir", GOLDEN, "--allow", "mismatch"])
    assert rc == 2
    assert "only no-golden, undetermined can be allowed" in capsys.readouterr().err


def test_nothing_to_check_is_a_usage_error(tmp_path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("nothing here\n")
    assert main(["check", str(tmp_path), "--golden-dir", GOLDEN]) == 2
    assert "nothing to check" in capsys.readouterr().err
    (tmp_path / "a.yaml").write_text("x: 1\n")
    assert main(["check", str(tmp_path), "--golden-dir", GOLDEN, "--exclude", "*.yaml"]) == 2
    assert "1 excluded by --exclude" in capsys.readouterr().err
    assert main(["check", str(tmp_path), "--golden-dir", GOLDEN]) == 0
    assert "no synthetic-acceptance knob in 1 file(s)" in capsys.readouterr().out


def test_github_annotations(capsys) -> None:
    rc = main(["check", str(TREE / "recipes" / "trtllm"), "--golden-dir", GOLDEN, "--format", "github"])
    out = capsys.readouterr().out
    assert rc == 1
    lines = out.splitlines()
    errors = [ln for ln in lines if ln.startswith("::error ")]
    assert len(errors) == 2  # AL-not-minus-1 mismatch and the two-model fractional value
    assert any("glm-agentic-al-not-minus-1.yaml,line=8,title=golden-al check%3A mismatch::" in ln for ln in errors)
    assert not any("al-minus-1.yaml,line" in ln and "::error" in ln and "not-minus" not in ln for ln in lines)


def test_a_file_without_knobs_passes(tmp_path, capsys) -> None:
    (tmp_path / "x.yaml").write_text("a: 1\n")
    assert main(["check", str(tmp_path), "--golden-dir", GOLDEN]) == 0
    assert "no synthetic-acceptance knob in 1 file(s)" in capsys.readouterr().out


def test_usage_errors(tmp_path, capsys) -> None:
    assert main(["check"]) == 2
    assert main(["check", str(tmp_path / "missing.yaml"), "--golden-dir", GOLDEN]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["check", str(TREE), "--golden-dir", str(tmp_path / "nogolden")]) == 2
    assert main(["check", str(TREE), "--format", "xml"]) == 2


def test_shipped_store_is_the_default(capsys) -> None:
    rc = main(["check", str(TREE / "recipes" / "sglang" / "musespark-dflash.yaml"), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert data[0]["verdict"] == "match"
    assert data[0]["expected_al"] == 4.05


def test_draft_lengths_warns_on_a_chain_curve_that_falls(capsys) -> None:
    assert main(["draft-lengths", "--curve", "1=1.8,2=1.5", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["warnings"]
    assert "falls from k=1 (1.8) to k=2 (1.5)" in out["warnings"][0]
    assert main(["draft-lengths", "--curve", "1=1.8,2=2.4"]) == 0
    assert "warning" not in capsys.readouterr().out


def test_short_k_flag_everywhere(capsys) -> None:
    assert main(["env", "--model", "qwen2.5-coder-1.5b-instruct", "--thinking", "off", "-k", "3", "--engine",
                 "llamacpp"]) == 0
    assert "3.85" in capsys.readouterr().out
    assert main(["simulate", "--engine", "sglang", "--method", "match-expected", "--al", "2.5", "-k", "3",
                 "--format", "json"]) == 0
