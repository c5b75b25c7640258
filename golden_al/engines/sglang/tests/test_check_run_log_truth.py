"""check-run believes the log (issue 38, item 4): the k the server logged beats a flag that disagrees (refused,
naming both), it supplies k when the flag is absent, a log of two starts with different settings is refused, and
decode lines cut short are refused past a small tolerance, never read as if complete."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from golden_al.cli.main import main
from golden_al.plugin.registry import get_sampler

from .. import LOG_SERVER_ARGS_FORMAT

pytestmark = pytest.mark.hostile

MODEL = "deepseek-ai/DeepSeek-V4-Pro"


def _lines(al: float, k: int, n: int, seed: int = 3) -> list[str]:
    rng = np.random.default_rng(seed)
    sampler = get_sampler("sglang", "match-expected")
    return [f"[2026-01-01 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode batch, #running-req: 8, #token: 1, token usage: 0.00, "
            f"accept len: {float(np.mean(sampler.sample(al, k, 40, rng))):.2f}, accept rate: 0.50, cuda graph: True, "
            "gen throughput (token/s): 1.00, #queue-req: 0" for i in range(n)]


def _start(k: int) -> str:
    return LOG_SERVER_ARGS_FORMAT.format(time="2026-01-01 00:00:00", model=MODEL, algorithm="EAGLE", steps=k,
                                                draft_tokens=k + 1)


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_logged_k_beats_a_flag_that_disagrees(tmp_path: Path, capsys) -> None:
    log = _write(tmp_path / "k5.log", [_start(5), *_lines(3.0, 5, 60)])
    assert main(["check-run", log, "--engine", "sglang", "--expect-al", "3.0", "--draft-len", "3"]) == 2
    err = capsys.readouterr().err
    assert "--draft-len 3 but the server's arguments" in err
    assert "give k=5" in err
    # without the flag, the log supplies k (the help promised it; it used to fail)
    assert main(["check-run", log, "--engine", "sglang", "--expect-al", "3.0"]) == 0
    assert "k=5" in capsys.readouterr().out


def test_two_starts_with_different_k_are_refused(tmp_path: Path, capsys) -> None:
    log = _write(tmp_path / "two.log", [_start(3), *_lines(2.5, 3, 30), _start(5), *_lines(2.5, 5, 30)])
    for extra in ([], ["--draft-len", "3"], ["--draft-len", "5"]):
        assert main(["check-run", log, "--engine", "sglang", "--expect-al", "2.5", *extra]) == 2
        assert "server starts with different settings" in capsys.readouterr().err


def test_lines_cut_short_are_refused_not_read(tmp_path: Path, capsys) -> None:
    good = _lines(2.5, 3, 40)
    cut = [line.split("accept len: ")[0] + "accept len: 2" for line in _lines(2.5, 3, 5, seed=9)]
    log = _write(tmp_path / "cut.log", [*good, *cut])
    assert main(["check-run", log, "--engine", "sglang", "--expect-al", "2.5", "--draft-len", "3"]) == 2
    assert "cut.log:41: 5 SGLang line(s) name its fields but do not parse" in capsys.readouterr().err
    # the last line a crash cut is left out, and said; one cut anywhere else is refused (issue 51)
    one = _write(tmp_path / "one.log", [*good, cut[0]])
    assert main(["check-run", one, "--engine", "sglang", "--expect-al", "2.5", "--draft-len", "3",
                 "--format", "json"]) == 0
    assert "its last line (SGLang, line 41) is cut short and was left out" in capsys.readouterr().out
    inside = _write(tmp_path / "inside.log", [*good[:20], cut[0], *good[20:]])
    assert main(["check-run", inside, "--engine", "sglang", "--expect-al", "2.5", "--draft-len", "3"]) == 2
    assert "inside.log:21: 1 SGLang line(s) name its fields but do not parse" in capsys.readouterr().err


def test_a_cut_line_is_marked_by_the_parser() -> None:
    from ..logs import parse_sglang_decode_line

    full = _lines(2.5, 3, 1)[0]
    assert parse_sglang_decode_line(full).complete  # type: ignore[union-attr]
    assert not parse_sglang_decode_line(full.split(", accept rate")[0]).complete  # type: ignore[union-attr]
    assert not parse_sglang_decode_line(full.split("accept len: ")[0] + "accept len: 2.4").complete  # type: ignore[union-attr]
