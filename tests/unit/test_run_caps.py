"""Per-run bounds of the commands that read a run's files (issue 38, item 2): ``import``'s files share one byte
budget, checked before any is parsed, and ``import`` and ``check-run`` stop at ``--max-seconds``, writing
nothing. The time tests stop a reader that would never finish; none depends on how fast this machine is."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from golden_al.cli.main import main

pytestmark = pytest.mark.hostile

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "trtllm-iteration-log"
BASE = ["import", "trtllm-iteration-log", "--thinking", "off", "--temperature", "0", "--max-tokens", "1024",
        "--model", "m", "--draft-len", "3"]


def test_the_fixtures_are_what_their_generator_writes(tmp_path: Path) -> None:
    """The repository's rows are TensorRT-LLM's folder's generator output (the folder's tests write their own)."""
    from golden_al.engines.trtllm.tests._iteration_rows import SHARED, write

    write(tmp_path, copies=False)
    assert sorted(f.name for f in FIX.iterdir()) == sorted(SHARED)
    for name in SHARED:
        assert (tmp_path / name).read_bytes() == (FIX / name).read_bytes(), name


def test_the_files_of_one_import_share_one_budget(tmp_path: Path, monkeypatch, capsys) -> None:
    files = [str(FIX / "iteration_log.json.txt"), str(FIX / "iteration_log.pyliteral.txt")]
    total = sum(Path(f).stat().st_size for f in files)
    assert main([*BASE, *files, "--out", str(tmp_path / "ok")]) == 0  # under the budget: two records
    import golden_al.measure.imported as imported

    monkeypatch.setattr(imported, "MAX_RUN_BYTES", total - 1)  # each file alone is under it, together over
    capsys.readouterr()
    assert main([*BASE, *files, "--out", str(tmp_path / "over")]) == 2
    err = capsys.readouterr().err
    assert f"the run's 2 imported files hold {total:,} bytes together" in err
    assert not (tmp_path / "over").exists()


def test_check_run_logs_share_one_budget(tmp_path: Path, capsys) -> None:
    log = FIX / "iteration_log.json.txt"
    size = log.stat().st_size
    from golden_al.errors import UnreadableInputError
    from golden_al.plugin.evidence import run_budget

    assert run_budget([log, log], 2 * size) == 2 * size
    with pytest.raises(UnreadableInputError, match="log files hold"):
        run_budget([log, log], 2 * size - 1)


def _forever(*_args, **_kwargs):
    time.sleep(3600)  # a reader that never finishes (a hostile file that parses slowly)


def test_import_stops_at_max_seconds_and_writes_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    import golden_al.engines.trtllm.imported as imported  # the hook the profile names (load_hook reads it each call)

    monkeypatch.setattr(imported, "import_trtllm_iterations", _forever)
    assert main([*BASE, str(FIX / "metrics.json"), "--out", str(tmp_path / "imp"), "--max-seconds", "0.2"]) == 2
    assert "importing 1 file(s) took longer than 0.2 s" in capsys.readouterr().err
    assert not (tmp_path / "imp").exists()


def test_check_run_stops_at_max_seconds(tmp_path: Path, monkeypatch, capsys) -> None:
    import golden_al.checks.run as run

    monkeypatch.setattr(run, "check_run", _forever)
    code = main(["check-run", str(FIX / "iteration_log.json.txt"), "--engine", "trtllm", "--draft-len", "3",
                 "--expect-al", "3.1", "--max-seconds", "0.2"])
    assert code == 2
    assert "took longer than 0.2 s" in capsys.readouterr().err


def test_max_seconds_must_be_positive(capsys) -> None:
    assert main(["check-run", str(FIX / "iteration_log.json.txt"), "--engine", "trtllm", "--draft-len", "3",
                 "--expect-al", "3.1", "--max-seconds", "0"]) == 2
    assert "--max-seconds must be > 0" in capsys.readouterr().err
