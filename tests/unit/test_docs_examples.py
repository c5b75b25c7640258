"""The documentation is run, not just read: every ``bash`` block of the README and the guides under docs/ (the
worked example, the maintainers', researchers' and engine authors' guides), its outputs compared.

The pages mark their blocks with HTML comments (invisible when rendered):

* a ```` ```bash ```` block runs, command by command, in one scratch folder per page (``experiments/``, ``tests/``
  and ``golden_al/`` there are this repository's), in page order; every command must exit 0,
  except the last one of a block marked ``<!-- doc-test: exit N -->``, which must exit N;
  ``<!-- doc-test: skip (why) -->`` leaves a block out (downloads, measurements, GPUs, servers, clusters);
  ``<!-- readme-test: NAME -->`` leaves it to the test that reads it by that name (``tests/unit/_docs.py``), and
  ``<!-- test-command -->``/``<!-- fast-test-command -->`` mark the suite itself (``.ci/run`` runs the first);
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import PAGES

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "worked-example.md"
_MARK = re.compile(r"^\s*<!-- (?:doc-test: (\S+)\s*(.*?)|(readme-test): (\S+)|((?:fast-)?test-command))\s*-->\s*$")
#: marks whose block this runner leaves to someone else
_NOT_RUN = ("skip", "readme-test", "test-command", "fast-test-command")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
#: pages whose commands take the longest to run (the fast test lane leaves them to the full suite)
_LONG_PAGES = ("worked-example.md", "researchers.md")


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
            mark, arg = m.group(1) or m.group(3) or m.group(5), m.group(2) or m.group(4) or ""
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
    assert any(b.mark == "file" for b in blocks)
    assert any(b.mark == "env-table" for b in blocks)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_block_is_run_or_says_who_runs_it(page: Path) -> None:
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "tests").rglob("test_*.py"))
    for block in parse(page.read_text(encoding="utf-8")):
        where = f"{page.name}:{block.line}"
        if block.mark == "skip":
            assert block.arg, f"{where}: a skipped block says why"
        if block.mark == "readme-test":
            assert f'"{block.arg}"' in tests, f"{where}: no test reads the block marked {block.arg}"


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p.name in _LONG_PAGES else p
                                  for p in PAGES if "```bash" in p.read_text(encoding="utf-8")],
                         ids=lambda p: p.name)
def test_every_command_of_the_page_runs_and_prints_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    for name in ("experiments", "tests", "golden_al"):
        (tmp_path / name).symlink_to(REPO / name, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLDEN_AL_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["GOLDEN_AL_CACHE"] = str(tmp_path / "cache")  # nothing is fetched: a fetch would fail here
    env["COLUMNS"] = "200"
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr interleave as on a terminal
    env["GOLDEN_AL_PROGRESS"] = "none"  # the pages show results; progress lines depend on time
    last: dict[str, str] = {}
    ran = 0
    for block in parse(page.read_text(encoding="utf-8")):
        where = f"{page.name}:{block.line}"
        if block.lang == "bash" and block.mark not in _NOT_RUN:
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
    assert ran >= 1


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_the_readme_is_a_table_of_contents_a_quick_start_and_links_to_a_guide_per_role() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 500
    contents = readme.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    sections = [h for h in re.findall(r"^## (.+)$", readme, re.M) if h != "Contents"]
    assert re.findall(r"\]\(#([\w-]+)\)", contents) == [_anchor(h) for h in sections]
    assert sections[:2] == ["Set up on a fresh machine", "Quick start"]
    for guide in ("maintainers.md", "researchers.md", "engine-authors.md", "worked-example.md"):
        assert f"](docs/{guide})" in readme, guide
    # exactly two set-up commands for a fresh machine: the main job and the tests (.ci/run runs the second)
    setups = [b for b in parse(readme) if b.lang == "bash" and b.text.startswith("python3 -m venv")]
    assert len(setups) == 2
    assert setups[1].mark == "test-command"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_between_the_pages_lands_on_a_file_and_a_heading(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: a link to {target}: no such file"
        if anchor:
            assert anchor in _anchors(dest), f"{page.name}: a link to {target}: no such heading in {dest.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_path_a_page_names_exists(page: Path) -> None:
    """A module or file named in `code` (``golden_al/plugin/profile.py``, ``experiments/x/``) is where the page says:
    modules move, and the pages must follow them."""
    named = re.findall(r"`((?:golden_al|simulators|distributions|experiments|tests|scripts|docs|\.ci)/[^`\s:]*)",
                       page.read_text(encoding="utf-8"))
    missing = sorted({p for p in named if not re.search(r"[<*{]", p) and not (REPO / p).exists()})
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


@pytest.mark.parametrize(("expected", "actual"), [("a", "b"), ("...\nz", "y")])
def test_an_output_that_drifted_fails(expected, actual):
    assert not matches(expected, actual)
