"""The fast test lane (issue 52): README's ``<!-- fast-test-command -->`` runs the suite less what is marked
``slow``, inside the README's venv, and still reaches every package; the whole suite stays the CI gate
(``<!-- test-command -->``, which ``.ci/run`` runs). How long each lane takes is measured by
``experiments/speed/bench.py``, never here."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _block(mark: str) -> str:
    return README.split(f"<!-- {mark} -->", 1)[1].split("```", 2)[1].split("\n", 1)[1].strip()


def _packages() -> list[str]:
    """Every package of the product: golden_al's, each engine's, distributions and simulators."""
    inner = [p.parent for p in (REPO / "golden_al").glob("*/__init__.py")]
    engines = [p.parent for p in (REPO / "golden_al" / "engines").glob("*/__init__.py")]
    return sorted({".".join(p.relative_to(REPO).parts) for p in (*inner, *engines)} | {"distributions", "simulators"})


def _slow(node: ast.AST) -> bool:
    """Whether a decorator list or a ``pytestmark`` value names ``pytest.mark.slow``."""
    return any(isinstance(n, ast.Attribute) and n.attr == "slow" for n in ast.walk(node))


def _imports(tree: ast.AST) -> set[str]:
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def _fast_imports(path: Path) -> set[str]:
    """The modules a test file imports, when it has a test the fast lane runs (none: an empty set); a command it
    runs (``main(["report", ...])``, ``-m golden_al report``) adds what the command's module imports."""
    from golden_al.cli.main import COMMANDS

    tree = ast.parse(path.read_text(encoding="utf-8"))
    marked = [n for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)]
    tests = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
             and n.name.startswith("test")]
    if any(_slow(n.value) for n in marked) or all(any(_slow(d) for d in t.decorator_list) for t in tests):
        return set()
    runs = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in COMMANDS}
    own = {".".join(path.parent.parent.relative_to(REPO).parts)} if "golden_al" in path.parts else set()  # an engine's
    return own | _imports(tree).union(*(_imports(ast.parse((REPO / (COMMANDS[c][0].replace(".", "/") + ".py")).read_text()))
                                  for c in runs))


def test_the_fast_lane_is_the_suite_less_the_slow_marker_in_the_readme_venv() -> None:
    fast, full = _block("fast-test-command"), _block("test-command")
    assert fast.startswith(". .venv/bin/activate && ")  # the venv the test command made
    words = shlex.split(fast.split("&&")[-1])
    assert words[:3] == ["python", "-m", "pytest"]
    assert words[words.index("-m", 3) + 1] == "not slow"
    assert full.endswith("python -m pytest")  # the gate runs everything, slow included
    assert re.search(r'"slow: [^"]*fast', (REPO / "pyproject.toml").read_text())  # the marker says where it goes


def test_the_fast_lane_reaches_every_package() -> None:
    files = [*(REPO / "tests").rglob("test_*.py"), *(REPO / "golden_al").rglob("tests/test_*.py")]
    reached = set().union(*map(_fast_imports, files))
    missing = [p for p in _packages() if not any(m == p or m.startswith(p + ".") for m in reached)]
    assert not missing, f"no test the fast lane runs imports {missing}"
