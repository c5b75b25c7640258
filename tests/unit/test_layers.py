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


#: Modules of an engine folder (``golden_al/engines/<name>/``) that implement what the engine does on top of the
#: general layers (its server probe and sources, stand-in, check-run evidence, counters, imports, log readers,
#: build); the profile names them as ``lazy("module:function")`` hooks and never imports them.
ENGINE_IMPLEMENTATIONS = ("server", "reference", "evidence", "counters", "imported", "inferencex", "logs", "responses", "pins",
                          "inject",
                          "build")


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
        if package == "golden_al/engines" and (path.stem in ENGINE_IMPLEMENTATIONS or "tests" in path.parts):
            continue  # an engine folder's server side (named by its profile as hooks, never imported by it), its tests
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []


def test_the_check_would_see_a_wrong_import(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    from golden_al.checks.context import parse_number\n")
    assert "golden_al.checks.context" in _imports(tmp_path / "m.py")


def _import_graph() -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for path in (ROOT / "golden_al").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            graph[m].update(n for n in names if n in mods and n != m)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_circle_crosses_a_package() -> None:
    """A circle of imports may tie a command to its helper inside one package, never two rooms."""
    crossing = [c for c in _cycles(_import_graph())
                if len({m.rsplit(".", 1)[0] if m.count(".") > 1 else m for m in c}) > 1]
    assert crossing == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _cycles({"a.x": {"b.y"}, "b.y": {"a.x"}, "c.z": set()}) == [["a.x", "b.y"]]


#: Longest library function without a reason (issue 24: "no library function over 80 lines without a
#: reason in its docstring"); the reason is a sentence starting with this marker.
MAX_FUNCTION_LINES = 80
KEPT_WHOLE = "Kept whole:"


def _long_functions(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES and KEPT_WHOLE not in (ast.get_docstring(node) or ""):
                out.append(f"{path.name}:{node.lineno} {node.name} ({length} lines)")
    return out


def test_no_long_library_function_without_a_reason() -> None:
    """The CLI's parser builders (``add_arguments``) are lists of options, not logic, and are left out."""
    long = [hit for path in sorted((ROOT / "golden_al").rglob("*.py")) if "cli" not in path.relative_to(ROOT).parts
            for hit in _long_functions(path)]
    assert long == []


def test_the_length_rule_would_see_a_long_function(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "m.py").write_text(f"def f():\n{body}\n\ndef g():\n    '''{KEPT_WHOLE} a reason.'''\n{body}")
    assert [h.split()[1] for h in _long_functions(tmp_path / "m.py")] == ["f"]


def test_an_engine_profile_does_not_import_its_server_side() -> None:
    """Loading every profile (what ``env``, ``check`` and ``simulate`` do) leaves the server layer unloaded."""
    import subprocess
    import sys

    code = ("import sys; from golden_al.plugin import registry\n"
            "[registry.get_profile(n) for n in registry.engine_names()]\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('golden_al.servers') or "
            "m.split('.')[-1] in ('server', 'reference') and m.startswith('golden_al.engines'))\n"
            "print(loaded)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
