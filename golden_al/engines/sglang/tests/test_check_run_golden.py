"""``check-run --model --thinking``: the target comes from the golden store, and an SGLang log's
start-up ``server_args`` line names the model, the algorithm and k itself; the verdict names the curve."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from golden_al.cli.main import main
from golden_al.plugin.registry import get_sampler

from .. import LOG_SERVER_ARGS_FORMAT

# the shipped DeepSeek-V4-Pro MTP curve: thinking_on k=3 -> 2.49
MODEL, AL, K = "deepseek-ai/DeepSeek-V4-Pro", 2.49, 3


def _log(path: Path, *, al: float, with_args: bool = True, steps: int = 3, seed: int = 5) -> Path:
    rng = np.random.default_rng(seed)
    sampler = get_sampler("sglang", "match-expected")
    lines = []
    if with_args:
        lines.append(LOG_SERVER_ARGS_FORMAT.format(time="2026-01-01 00:00:00", model=MODEL, algorithm="EAGLE",
                                                          steps=steps, draft_tokens=steps + 1))
    for i in range(40):
        draws = sampler.sample(al, K, 40, rng)
        lines.append(f"[2026-01-01 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode batch, #running-req: 8, #token: 1, token usage: "
                     f"0.00, accept len: {float(np.mean(draws)):.2f}, accept rate: 0.50, cuda graph: True, "
                     "gen throughput (token/s): 1.00, #queue-req: 0")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_log_names_model_algorithm_and_k(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path / "server.log", al=AL)
    assert main(["check-run", str(log), "--engine", "sglang", "--thinking", "on"]) == 0
    out = capsys.readouterr().out
    assert "target          golden deepseek-v4-pro thinking_on k=3 = 2.49 [curve dsv4_mtp]" in out
    assert "from the log: model deepseek-ai/DeepSeek-V4-Pro, algorithm EAGLE, k 3" in out
    assert "verdict: PASS" in out
    assert "(golden, curve dsv4_mtp)" in out


def test_json_names_the_curve_and_a_wrong_injection_fails(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path / "server.log", al=2.27)  # the k=2 value injected at k=3
    assert main(["check-run", str(log), "--engine", "sglang", "--thinking", "on", "--format", "json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["golden"]["curve"] == "dsv4_mtp"
    assert (d["expected_al"], d["draft_len"], d["verdict"]) == (2.49, 3, "fail")


def test_model_and_k_given_without_server_args(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path / "server.log", al=AL, with_args=False)
    assert main(["check-run", str(log), "--engine", "sglang", "--thinking", "on"]) == 2
    assert "needs the model" in capsys.readouterr().err
    assert main(["check-run", str(log), "--engine", "sglang", "--thinking", "on", "--model", MODEL,
                 "--draft-len", "3", "--algorithm", "EAGLE"]) == 0
    assert "[curve dsv4_mtp]" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "said"), [
    (["--draft-len", "2"], "--draft-len 2 but the server's arguments"),
    (["--expect-al", "2.49", "--model", MODEL], "not both"),
    (["--expect-al", "2.49", "--draft-len", "2"], "--draft-len 2 but the server's arguments"),
    ([], "needs --expect-al AL, or --thinking"),
])
def test_usage(tmp_path: Path, capsys, argv: list[str], said: str) -> None:
    log = _log(tmp_path / "server.log", al=AL)
    extra = ["--thinking", "on"] if "--expect-al" not in argv and argv else []
    assert main(["check-run", str(log), "--engine", "sglang", *extra, *argv]) == 2
    assert said in capsys.readouterr().err


def test_expect_al_takes_k_from_the_log_and_needs_the_flag_only_without_it(tmp_path: Path, capsys) -> None:
    assert main(["check-run", str(_log(tmp_path / "a.log", al=AL)), "--engine", "sglang", "--expect-al", "2.49"]) == 0
    capsys.readouterr()
    bare = _log(tmp_path / "b.log", al=AL, with_args=False)
    assert main(["check-run", str(bare), "--engine", "sglang", "--expect-al", "2.49"]) == 2
    assert "--expect-al needs --draft-len K" in capsys.readouterr().err
