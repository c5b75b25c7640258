"""``golden-al draft-lengths``: the JSON contract, curve files and one-line exit-2 errors."""

from __future__ import annotations

import json

import pytest

from golden_al.cli.main import main

KIMI = "1=1.83,2=2.43,3=2.88,4=3.24,5=3.46,6=3.62,7=3.71,8=3.77"


def _json(capsys, *argv: str) -> dict:
    rc = main(["draft-lengths", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_json_contract(capsys):
    r = _json(capsys, "--curve", KIMI)
    assert [row["draft_len"] for row in r["rows"]] == list(range(1, 9))
    for row in r["rows"]:
        assert {"draft_len", "al", "tokens_per_step", "speedup"} <= set(row)
        assert row["tokens_per_step"] == row["al"]
    best = max(r["rows"], key=lambda row: row["speedup"])
    assert r["best_draft_len"] == best["draft_len"]
    assert r["baseline"]["speedup"] == 1.0


def test_cost_options_change_the_answer(capsys):
    cheap = _json(capsys, "--curve", KIMI, "--draft-cost", "0.1")
    dear = _json(capsys, "--curve", KIMI, "--draft-cost", "3", "--overhead", "0.5", "--verify-cost", "8",
                 "--verify-cost-per-token", "0.01", "--batch", "2")
    assert dear["cost_model"]["draft_ms_per_token"] == 3.0
    assert dear["cost_model"]["batch_size"] == 2
    assert dear["best_draft_len"] < cheap["best_draft_len"]


def test_output_tokens_adds_latency(capsys):
    r = _json(capsys, "--curve", KIMI, "--output-tokens", "256")
    lat = r["rows"][6]["latency"]
    assert lat["output_tokens"] == 256
    assert lat["shaped"]["steps"]["p99"] > lat["two_point"]["steps"]["p99"]


def test_curve_files(capsys, tmp_path):
    flat = tmp_path / "curve.txt"
    flat.write_text("# k=AL\n1=1.83\n2=2.43\n")
    assert [row["al"] for row in _json(capsys, "--curve-file", str(flat))["rows"]] == [1.83, 2.43]
    golden = tmp_path / "kimi.yaml"
    golden.write_text("kimi:\n  thinking_on:\n    1: 1.83\n    2: 2.43\n  thinking_off:\n    1: 1.80\n    2: 2.33\n")
    r = _json(capsys, "--curve-file", str(golden), "--thinking", "off")
    assert [row["al"] for row in r["rows"]] == [1.80, 2.33]
    ours = tmp_path / "ours.yaml"  # golden-al's own curve schema
    ours.write_text("schema_version: 1\nmodel: kimi\nthinking_on:\n  points:\n    1: {al: 1.83}\n    2: {al: 2.43}\n")
    r = _json(capsys, "--curve-file", str(ours))
    assert [row["al"] for row in r["rows"]] == [1.83, 2.43]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--curve", "1=1.83,2:2.43x"], "not a number; expected K=AL pairs"),
        (["--curve", "1=1.83;2=2.43"], "malformed entry"),
        (["--curve", "1=abc"], "not a number"),
        (["--curve", "1=1.5,1=1.6"], "appears twice"),
        (["--curve", "7=9"], "outside [1, 8]"),
        (["--curve", ""], "empty"),
        (["--curve", KIMI, "--overhead", "-1"], "--overhead"),
        (["--curve", KIMI, "--batch", "0"], "--batch"),
        (["--curve-file", "/nonexistent/curve.yaml"], "cannot read"),
        (["--curve", KIMI, "--thinking", "on"], "only to --curve-file"),
        ([], "one of the arguments --curve --curve-file is required"),
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
    both = tmp_path / "both.yaml"
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
