"""TensorRT-LLM iteration rows (issue 35): ``--iteration_log`` (JSON and Python-literal rows),
``/metrics`` lists, attention-DP copies, and check-run on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden_al.checks.run import check_run
from golden_al.cli.main import main
from golden_al.errors import CounterSemanticsError, InputFileError

from ..iteration_stats import read_iteration_file, rows_from_json
from ._iteration_rows import write

CAP = 1 << 24


@pytest.fixture(scope="module")
def fix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The iteration rows of :mod:`._iteration_rows`, written once for the module."""
    out = tmp_path_factory.mktemp("trtllm-iteration-log")
    write(out)
    return out


def _truth(fix: Path) -> tuple[int, int, int]:
    """(steps, accepted, drafted) summed straight from the JSON rows, independently of the reader."""
    rows = [json.loads(line)["specDecodingStats"] for line in (fix / "iteration_log.json.txt").read_text().splitlines()]
    return (sum(r["numRequestsWithDraftTokens"] for r in rows), sum(r["numAcceptedTokens"] for r in rows),
            sum(r["numDraftTokens"] for r in rows))


@pytest.mark.parametrize("name", ["iteration_log.json.txt", "iteration_log.pyliteral.txt",
                                  "iteration_log.attention-dp.txt"])
def test_both_row_syntaxes_and_attention_dp_parse_exactly(fix: Path, name: str) -> None:
    scan = read_iteration_file(fix / name, max_bytes=CAP)
    assert (scan.steps, scan.accepted, scan.drafted) == _truth(fix)
    assert len(scan.rows) == 61
    assert scan.other_ranks == (183 if "attention-dp" in name else 0)  # ranks 1..3 of 61 iterations


def test_a_metrics_answer_parses_exactly(fix: Path) -> None:
    scan = rows_from_json(json.loads((fix / "metrics.json").read_text()), "metrics.json")
    assert (scan.steps, scan.accepted, scan.drafted) == _truth(fix)


def test_all_rank_copies_without_a_rank_are_refused_not_summed(fix: Path) -> None:
    with pytest.raises(InputFileError, match=r"iteration -1 appears twice \(lines 1 and 2\)") as info:
        read_iteration_file(fix / "iteration_log.all-ranks.txt", max_bytes=CAP)
    assert info.value.line == 2


def _one(tmp_path: Path, stats: dict, as_literal: bool = False) -> Path:
    row = {"iter": 7, "specDecodingStats": stats}
    (tmp_path / "it.log").write_text((str(row) if as_literal else json.dumps(row)) + "\n")
    return tmp_path / "it.log"


@pytest.mark.parametrize(("stats", "error", "said"), [
    ({"numDraftTokens": 24, "numAcceptedTokens": 12, "numRequestsWithDraftTokens": 8, "acceptanceLength": 3.5},
     CounterSemanticsError, r"acceptanceLength 3.5 but the counts give \(12 \+ 8\) / 8 = 2.5"),
    ({"numDraftTokens": 24, "numAcceptedTokens": 30, "numRequestsWithDraftTokens": 8},
     CounterSemanticsError, "numAcceptedTokens 30 > numDraftTokens 24"),
    ({"numDraftTokens": 24, "numAcceptedTokens": "12", "numRequestsWithDraftTokens": 8},
     CounterSemanticsError, "numAcceptedTokens is '12', not a whole non-negative count"),
    ({"numDraftTokens": 24, "numAcceptedTokens": 12}, InputFileError, "has no numRequestsWithDraftTokens"),
    ({"numDraftTokens": 3, "numAcceptedTokens": 0, "numRequestsWithDraftTokens": 0},
     CounterSemanticsError, "3 draft tokens but numRequestsWithDraftTokens = 0"),
])
def test_a_row_that_contradicts_itself_is_refused_with_its_line(tmp_path: Path, stats: dict,
                                                                 error: type[InputFileError], said: str) -> None:
    with pytest.raises(error, match=said) as info:
        read_iteration_file(_one(tmp_path, stats), max_bytes=CAP)
    assert info.value.line == 1


def test_check_run_passes_the_golden_fails_another_and_refuses_a_wrong_k(fix: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = fix / "iteration_log.pyliteral.txt"
    steps, accepted, _ = _truth(fix)
    r = check_run([log], expect_al=3.1, draft_len=3, engine="trtllm")
    assert r.passed
    assert r.realized_al == pytest.approx(1 + accepted / steps)
    base = ["check-run", str(log), "--engine", "trtllm", "--draft-len", "3"]
    assert main([*base, "--expect-al", "3.1"]) == 0
    assert main([*base, "--expect-al", "3.5"]) == 1  # the run does not reproduce another golden
    assert main(["check-run", str(log), "--engine", "trtllm", "--draft-len", "2", "--expect-al", "2.9"]) == 2
    assert "drafted <= k * drafts" in capsys.readouterr().err


def test_a_file_without_iteration_rows_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.log").write_text("[TensorRT-LLM][INFO] nothing here\n")
    with pytest.raises(InputFileError, match="no TensorRT-LLM iteration row with specDecodingStats"):
        check_run([tmp_path / "x.log"], expect_al=3.1, draft_len=3, engine="trtllm")


def test_import_makes_a_record_from_the_rows(fix: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["import", "trtllm-iteration-log", str(fix / "metrics.json"), "--thinking", "off", "--temperature", "0",
            "--max-tokens", "1024", "--model", "m"]
    assert main([*base, "--out", str(tmp_path / "imp"), "--draft-len", "3"]) == 0
    rec = json.loads((tmp_path / "imp" / "measurement.json").read_text())
    steps, accepted, _ = _truth(fix)
    assert (rec["engine"], rec["mode"], rec["num_verify_steps"]) == ("trtllm", "imported", steps)
    assert rec["al"] == pytest.approx(1 + accepted / steps)
    assert len((tmp_path / "imp" / "requests.jsonl").read_text().splitlines()) == 6  # 60 iterations / 10
    capsys.readouterr()
    assert main([*base, "--out", str(tmp_path / "b")]) == 2  # the rows do not state k
    assert "pass --draft-len" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "c"), "--draft-len", "2"]) == 2  # 24 drafts for 8 requests: k=3
    assert "propose at most 3 drafts per verify step: the engine ran k = 3, not the claimed k = 2" in \
        capsys.readouterr().err
    assert rec["draft_len_observed"] == 3  # issue 51: the record stores the k its rows show
