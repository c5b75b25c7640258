"""docs/worked-example.md is run, not just read: every command from step 2 on, its outputs compared.

The page marks its blocks with HTML comments (invisible when rendered):

* a ```` ```bash ```` block runs, command by command, in one scratch folder for the whole page
  (``experiments/`` there is this repository's), in page order; every command must exit 0,
  except the last one of a block marked ``<!-- doc-test: exit N -->``, which must exit N;
  ``<!-- doc-test: skip (why) -->`` leaves a block out (downloads, measurements);
* ``<!-- doc-test: output -->`` before a plain block: the combined stdout and stderr of the
  command just run, line for line, where a line ``...`` stands for any lines and ``...`` inside
  a line for any text;
* ``<!-- doc-test: file PATH -->`` before a block: the file's content, compared the same way;
* ``<!-- doc-test: env-table COMMAND -->`` before a table: each row's JSON equals what
  ``COMMAND <engine>`` prints.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "worked-example.md"
_MARK = re.compile(r"^\s*<!-- doc-test: (\S+)\s*(.*?)\s*-->\s*$")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


@dataclass
class Block:
    line: int
    lang: str
    text: str
    mark: str = ""
    arg: str = ""


def parse(doc: str) -> list[Block]:
    """Fenced blocks and marked tables, in order, each with the marker just before it (if any)."""
    lines = doc.splitlines()
    blocks: list[Block] = []
    mark, arg = "", ""
    i = 0
    while i < len(lines):
        line = lines[i]
        m, f = _MARK.match(line), _FENCE.match(line)
        if m:
            mark, arg = m.group(1), m.group(2)
        elif f:
            indent, lang = len(f.group(1)), f.group(2)
            body: list[str] = []
            i += 1
            while not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
                i += 1
            blocks.append(Block(i + 1, lang, "\n".join(body), mark, arg))
            mark, arg = "", ""
        elif line.startswith("|") and mark == "env-table":
            rows: list[str] = []
            start = i + 1
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            blocks.append(Block(start, "table", "\n".join(rows), mark, arg))
            mark, arg = "", ""
            continue
        elif line.strip():
            mark, arg = "", ""  # a marker applies to the very next block only
        i += 1
    return blocks


def commands(script: str) -> list[str]:
    """Shell commands of a block: one per line, backslash continuations joined."""
    out: list[str] = []
    pending = ""
    for raw in script.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _pattern(line: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in line.split("...")), re.DOTALL)


def matches(expected: str, actual: str) -> bool:
    """``actual`` fits ``expected``: ``...`` lines stand for any lines, ``...`` in a line for any text."""
    exp = [line.rstrip() for line in expected.strip("\n").splitlines()]
    act = [line.rstrip() for line in actual.strip("\n").splitlines()]
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(exp):
                memo[i, j] = j == len(act)
            elif exp[i].strip() == "...":
                memo[i, j] = any(go(i + 1, jj) for jj in range(j, len(act) + 1))
            else:
                memo[i, j] = j < len(act) and bool(_pattern(exp[i]).fullmatch(act[j])) and go(i + 1, j + 1)
        return memo[i, j]

    return go(0, 0)


def test_the_matcher_can_fail():
    assert matches("a\n...\nd", "a\nb\nc\nd")
    assert matches("x ... z", "x yyy z")
    assert not matches("a\n...\nd", "a\nb\nc")
    assert not matches("x ... z", "x yyy w")
    assert not matches("a\nb", "a\nb\nc")


def test_the_page_has_runnable_steps_with_outputs():
    blocks = parse(DOC.read_text(encoding="utf-8"))
    runs = [b for b in blocks if b.lang == "bash" and b.mark != "skip"]
    assert len(runs) >= 10
    assert sum(b.mark == "output" for b in blocks) >= 10
    assert all(b.arg for b in blocks if b.mark == "skip"), "every skipped block says why"
    assert any(b.mark == "file" for b in blocks)
    assert any(b.mark == "env-table" for b in blocks)


def test_every_command_of_the_worked_example_runs_and_prints_what_the_page_shows(tmp_path):
    (tmp_path / "experiments").symlink_to(REPO / "experiments", target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLDEN_AL_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["GOLDEN_AL_CACHE"] = str(tmp_path / "cache")  # nothing is fetched: a fetch would fail here
    env["COLUMNS"] = "200"
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr interleave as on a terminal
    env["GOLDEN_AL_PROGRESS"] = "none"  # the page shows results; progress lines depend on time (README: Commands)
    last: dict[str, str] = {}
    ran = 0
    for block in parse(DOC.read_text(encoding="utf-8")):
        where = f"{DOC.name}:{block.line}"
        if block.lang == "bash" and block.mark != "skip":
            cmds = commands(block.text)
            for n, cmd in enumerate(cmds):
                proc = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, timeout=300)  # as a terminal shows them
                want = int(block.arg) if block.mark == "exit" and n == len(cmds) - 1 else 0
                output = proc.stdout
                assert proc.returncode == want, f"{where}: `{cmd}` exited {proc.returncode}, not {want}:\n{output}"
                last = {"cmd": cmd, "out": output}
                ran += 1
        elif block.mark == "output":
            assert last, f"{where}: an output block before any command"
            assert matches(block.text, last["out"]), (
                f"{where}: `{last['cmd']}` printed\n{last['out']}\nwhich does not fit the page's\n{block.text}")
        elif block.mark == "file":
            text = (tmp_path / block.arg).read_text(encoding="utf-8")
            assert matches(block.text, text), f"{where}: {block.arg} holds\n{text}\nnot the page's\n{block.text}"
        elif block.mark == "env-table":
            rows = [r for r in block.text.splitlines()[2:]]
            assert rows, where
            for row in rows:
                engine = row.split("|")[1].strip()
                shown = json.loads(re.search(r"`(\{.*?\})`", row).group(1))
                proc = subprocess.run(["bash", "-c", f"{block.arg} {engine}"], cwd=tmp_path, env=env,
                                      capture_output=True, text=True, timeout=120)
                assert proc.returncode == 0, f"{where}: {engine}: {proc.stderr}"
                assert json.loads(proc.stdout) == shown, f"{where}: {engine} prints {proc.stdout}"
    assert ran >= 10


@pytest.mark.parametrize(("expected", "actual"), [("a", "b"), ("...\nz", "y")])
def test_an_output_that_drifted_fails(expected, actual):
    assert not matches(expected, actual)
