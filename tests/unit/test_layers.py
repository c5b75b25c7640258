"""Dependencies point one way: distributions <- simulators <- golden_al, and inside golden_al the
engine profiles sit below everything that uses them (no import back up the floors)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


@pytest.mark.parametrize(("package", "forbidden"), [
    ("distributions", ("golden_al", "simulators", "torch", "transformers")),
    ("simulators", ("golden_al", "torch", "transformers")),
    ("golden_al/engines", ("golden_al.checks", "golden_al.cli", "golden_al.servers", "golden_al.measure",
                           "golden_al.curvefit", "golden_al.reporting", "golden_al.injection")),
])
def test_no_import_back_up_the_floors(package: str, forbidden: tuple[str, ...]) -> None:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        if "offline_reference" in path.parts:  # the reference engine is an engine *implementation*, above profiles
            continue
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_the_check_would_see_a_wrong_import(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    from golden_al.checks.context import parse_number\n")
    assert "golden_al.checks.context" in _imports(tmp_path / "m.py")
