"""Progress that a log shows (issue 37): plain lines on a simulated clock, and ``measure`` in a CI log."""

from __future__ import annotations

import itertools
import re

import pytest

from golden_al.cli import _common

_ELAPSED = re.compile(r"^golden-al: (?P<task>.*?): .*elapsed (?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d)")


class FakeClock:
    """Simulated seconds: every reading advances it by ``step`` (work reported is time spent)."""

    def __init__(self, step: float) -> None:
        self.t = 0.0
        self.step = step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def _gaps(err: str) -> dict[str, list[float]]:
    """Elapsed seconds of each task's lines, a task running from its [started] line to its [done] line."""
    seen: dict[str, list[float]] = {}
    current = None
    for line in err.splitlines():
        m = _ELAPSED.match(line)
        if not m:
            continue
        if line.endswith("[started]"):
            current = m["task"]
            seen[current] = []
        if current is not None:
            seen[current].append(int(m["h"]) * 3600 + int(m["m"]) * 60 + int(m["s"]))
        if line.endswith("[done]"):
            current = None
    return seen


def test_plain_lines_at_start_every_interval_and_at_the_end(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(_common, "_clock", FakeClock(1.0))
    _common.set_progress_mode("plain")
    try:
        with _common.progress("decode", total=100, unit="tokens") as bar:
            for _ in range(100):
                bar(1, status="k=3")
    finally:
        _common.set_progress_mode("auto")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("golden-al: decode: 0/100 tokens (0%)")
    assert lines[0].endswith("[started]")
    assert lines[-1].startswith("golden-al: decode: 100/100 tokens (100%)")
    assert lines[-1].endswith("[done]")
    times = _gaps("\n".join(lines))["decode"]
    assert all(b - a <= _common.PLAIN_INTERVAL_S + 1 for a, b in itertools.pairwise(times))
    assert any("tokens/s" in line and "ETA" in line and "k=3" in line for line in lines[1:-1])


def test_none_shows_nothing_and_rich_is_chosen_only_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    _common.set_progress_mode("none")
    try:
        with _common.progress("x", total=3) as bar:
            bar(3)
    finally:
        _common.set_progress_mode("auto")
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="progress mode"):
        _common.set_progress_mode("fancy")


def test_a_bad_progress_setting_is_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from golden_al.cli.main import main

    monkeypatch.setenv("GOLDEN_AL_PROGRESS", "fancy")
    assert main(["curves", "list"]) == 2
    assert "GOLDEN_AL_PROGRESS='fancy'" in capsys.readouterr().err
    monkeypatch.delenv("GOLDEN_AL_PROGRESS")
    assert main(["curves", "list", "--progress", "fancy"]) == 2


@pytest.mark.torch
def test_measure_in_a_ci_log_shows_a_line_at_least_every_30_s_of_work(tmp_path, monkeypatch, capsys) -> None:
    """stderr is not a terminal here (captured, as in a CI log): the default shows plain lines, one per task at
    least every 30 simulated seconds of reported work."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import json

    from golden_al.cli.main import main
    from golden_al.reference.tiny import save_tiny_pair

    target, draft = save_tiny_pair(tmp_path / "models")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": f"f{i}(x)"}]})
                               + "\n" for i in range(4)))
    monkeypatch.setattr(_common, "_clock", FakeClock(3.0))
    rc = main(["measure", "--target", str(target), "--draft", str(draft), "--prompts", f"chat-jsonl:{prompts}",
               "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "run"), "--max-tokens", "48",
               "--draft-len", "3"])
    assert rc == 0
    err = capsys.readouterr().err
    tasks = _gaps(err)
    assert any(t.startswith("measuring") for t in tasks), err
    for task, times in tasks.items():
        assert len(times) >= 2, task  # started and done at least
        assert max(b - a for a, b in itertools.pairwise(times)) <= 30, (task, times)
    measuring = next(v for t, v in tasks.items() if t.startswith("measuring"))
    assert measuring[-1] > 30  # the simulated run was long enough for intermediate lines to matter
    assert len(measuring) >= 3


@pytest.mark.torch
def test_measure_model_family_chooses_the_thinking_preset(tmp_path, capsys) -> None:
    """``measure --model-family`` is honoured by the reference engine (issue 37: it was ignored): the tiny target's
    own family (qwen2) has no thinking mode; with a template that has the Qwen3 switch, ``--model-family qwen3``
    renders thinking on through that switch."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import json

    from golden_al.cli.main import main
    from golden_al.measure.records import load_record
    from golden_al.reference.tiny import save_tiny_pair

    target, draft = save_tiny_pair(tmp_path / "models")
    (target / "chat_template.jinja").write_text(
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
        "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}{% endif %}")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": f"f{i}"}]}) + "\n"
                               for i in range(3)))
    base = ["measure", "--target", str(target), "--draft", str(draft), "--prompts", f"chat-jsonl:{prompts}",
            "--cache-dir", str(tmp_path / "cache"), "--max-tokens", "8", "--draft-len", "2", "--thinking", "on",
            "--progress", "none"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 2
    assert "has no thinking mode" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "b"), "--model-family", "qwen3"]) == 0
    assert load_record(tmp_path / "b").chat_template_kwargs == {"enable_thinking": True}
    assert main([*base, "--out", str(tmp_path / "c"), "--model-family", "nope"]) == 2
