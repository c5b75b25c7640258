"""Progress that a log shows (issue 37, issue 54 item 7): plain lines on a simulated clock, one estimate of the time
left per line and none before a few units are timed, counts that say what they count, and ``measure`` in a CI log."""

from __future__ import annotations

import itertools
import re

import pytest

from golden_al.cli import progress as prog

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
    monkeypatch.setattr(prog, "clock", FakeClock(1.0))
    prog.set_progress_mode("plain")
    try:
        with prog.progress("decode", total=100, unit="tokens") as bar:
            for _ in range(100):
                bar(1, status="k=3")
    finally:
        prog.set_progress_mode("auto")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("golden-al: decode: 0/100 tokens (0%)")
    assert lines[0].endswith("[started]")
    assert lines[-1].startswith("golden-al: decode: 100/100 tokens (100%)")
    assert lines[-1].endswith("[done]")
    times = _gaps("\n".join(lines))["decode"]
    assert all(b - a <= prog.PLAIN_INTERVAL_S + 1 for a, b in itertools.pairwise(times))
    assert any("tokens/s" in line and "ETA" in line and "k=3" in line for line in lines[1:-1])


class Clock:
    """A clock that moves only when told."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_no_estimate_until_a_few_units_are_timed_and_none_from_the_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait before the first unit (a model load, a first forward call) is not a unit's time: 100 units at 1 s
    each after a 600 s setup leave an estimate of the units left at 1 s each, not at 7 s (the first estimates were
    absurd, issue 54 item 7); and there is none until MIN_TIMED units after the first are timed."""
    clock = Clock()
    monkeypatch.setattr(prog, "clock", clock)
    task = prog.TaskProgress("decode", total=100, unit="requests", start=0.0)
    clock.t = 600.0
    task.update(1)
    for _ in range(prog.MIN_TIMED):
        assert task.eta() is None
        assert "ETA ?" in task.line()
        clock.t += 1.0
        task.update(1)
    assert task.eta() == pytest.approx(100 - 1 - prog.MIN_TIMED)
    assert "4/100 requests (4%)" in task.line()


def test_one_estimate_per_line_the_librarys_when_it_gives_one(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(prog, "clock", clock)
    task = prog.TaskProgress("measuring", total=1000, unit="tokens", start=0.0)
    for _ in range(prog.MIN_TIMED + 1):
        clock.t += 1.0
        task.update(10, eta_s=500.0)  # the engine's own estimate (queued requests and all)
    assert task.eta() == pytest.approx(500.0)
    clock.t += 100.0
    assert task.eta() == pytest.approx(400.0)  # counting down
    assert task.line().count("ETA") == 1


def test_a_unit_starts_a_phase_whose_count_says_what_it_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library that names a unit starts a phase: the first run's download in wheels, then the tensors of a load,
    each counted from zero with its own estimate (a counter no longer sits frozen at 58/58 while tensors load)."""
    clock = Clock()
    monkeypatch.setattr(prog, "clock", clock)
    task = prog.TaskProgress("loading models", start=0.0)
    task.update(0, total=22, unit="wheels", description="first run: downloading qwen2.5-coder-1.5b-instruct")
    for _ in range(22):
        clock.t += 5.0
        task.update(1)
    assert task.line().startswith("golden-al: first run: downloading qwen2.5-coder-1.5b-instruct: 22/22 wheels (100%)")
    task.update(0, total=339, unit="tensors", description="dequantizing target qwen2.5-coder-1.5b-instruct")
    assert (task.done, task.total, task.eta()) == (0, 339, None)
    for _ in range(10):
        clock.t += 0.5
        task.update(1)
    assert "10/339 tensors" in task.line()
    assert task.eta() == pytest.approx((339 - 10) * 0.5)


def test_none_shows_nothing_and_rich_is_chosen_only_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    prog.set_progress_mode("none")
    try:
        with prog.progress("x", total=3) as bar:
            bar(3)
    finally:
        prog.set_progress_mode("auto")
    assert capsys.readouterr().err == ""
    with pytest.raises(ValueError, match="progress mode"):
        prog.set_progress_mode("fancy")


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
    monkeypatch.setattr(prog, "clock", FakeClock(3.0))
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
