"""The command table: every subcommand listed on one line, each with --help and examples."""

from __future__ import annotations

import subprocess
import sys

import pytest

from golden_al.cli.main import COMMANDS, main


def test_top_level_help_lists_every_command_on_one_line(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = {}
    for line in out.splitlines():
        words = line.split()
        if line.startswith("    ") and words and words[0] in COMMANDS:
            listed[words[0]] = line
    assert set(listed) == set(COMMANDS)
    for name, (_, help_line) in COMMANDS.items():
        assert help_line in listed[name], f"{name}: help not on its own line"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_with_an_example(name, capsys):
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples" in out.lower()
    assert f"golden-al {name}" in out.split("examples", 1)[-1].lower().replace("\n", " ")


def test_unknown_command_is_one_line_exit_2(capsys):
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "invalid choice" in err


def test_console_script_runs_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "golden_al", "simulate", "--engine", "nope", "--method", "x",
                           "--al", "2", "--draft-len", "3"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_misspelled_command_gets_did_you_mean(capsys):
    from golden_al.cli.main import main

    assert main(["chek", "."]) == 2
    assert "did you mean 'check'?" in capsys.readouterr().err
    assert main(["zzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


@pytest.mark.parametrize("command", ["env", "inject", "curves"])
def test_help_is_plain_text_without_docstring_markup(command, capsys):
    from golden_al.cli.main import main

    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out
    assert ":func:" not in out
    assert ":mod:" not in out


@pytest.mark.parametrize("command", ["measure", "sweep"])
def test_long_helps_are_grouped_so_each_option_has_a_named_home(command, capsys):
    """Every option of measure and sweep sits under a titled group, none in the flat default list."""
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    groups: dict[str, list[str]] = {}
    current = None
    for line in out.splitlines():
        if line and not line.startswith(" ") and line.endswith(":") and not line.startswith("usage"):
            current = line[:-1]
            groups[current] = []
        elif current and line.startswith("  -"):
            groups[current].append(line.split()[0].rstrip(","))
    assert set(groups.get("options", [])) <= {"-h", "--debug", "--progress"}, groups.get("options")
    titles = list(groups)
    if command == "measure":
        assert titles[:5] == ["options", "what to measure", "prompts and sampling", "output",
                              "reference engine (--engine reference, the default)"]
        assert len(out.split("\n\n")[0].splitlines()) == 1  # a one-line usage, not 30 lines of flags
    assert [t for t in titles if t.startswith("server:")] == [
        "server: which one (atom, llamacpp, sglang, trtllm, vllm)", "server: launching one (--launch)",
        "server: requests, bounds and prompts on the wire", "server: where AL comes from"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("where", ["before", "after", "before="])
def test_global_options_work_before_and_after_every_command(name, where, capsys):
    """Issue 54 item 2: ``golden-al --progress none CMD`` is ``golden-al CMD --progress none`` (one parser rule)."""
    from golden_al.cli.main import GLOBAL_OPTIONS

    assert set(GLOBAL_OPTIONS) == {"--debug", "--progress"}
    options = {"before": ["--debug", "--progress", "none"], "after": ["--progress", "none", "--debug"],
               "before=": ["--progress=none", "--debug"]}[where]
    argv = [*options, name, "--help"] if where.startswith("before") else [name, *options, "--help"]
    assert main(argv) == 0
    assert f"usage: golden-al {name}" in capsys.readouterr().out


def test_global_options_before_a_command_reach_it(capsys):
    """The run itself (not only --help) takes an option given before the command's name."""
    import golden_al.cli.progress as common

    assert main(["--progress", "none", "curves", "list"]) == 0
    assert common._mode == "none"
    assert main(["--progress", "plain", "env", "--model", "qwen2.5-coder-1.5b-instruct", "--thinking", "off",
                 "--engine", "sglang", "--draft-len", "3"]) == 0
    assert "SGLANG_SIMULATE_ACC_LEN=" in capsys.readouterr().out


@pytest.mark.parametrize(("name", "off"), [("check", True), ("select", True), ("curves", False)])
def test_batch_commands_run_without_the_cyclic_collector_and_give_it_back(name, off, monkeypatch, capsys):
    """Issue 52: check and select run with the cyclic garbage collector off (its walks over every parsed node were a
    quarter of check's CPU); the caller's collector is on again afterwards, whatever the command returned."""
    import gc
    import importlib

    module = importlib.import_module(COMMANDS[name][0])
    seen = []
    monkeypatch.setattr(module, "run", lambda args: seen.append(gc.isenabled()) or 3)
    args = {"check": ["check", "."], "select": ["select", "r.yaml"], "curves": ["curves", "list"]}[name]
    assert gc.isenabled()
    assert main(args) == 3
    assert seen == [not off]
    assert gc.isenabled()
