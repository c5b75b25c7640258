"""The floors (``docs/architecture.md``): each module sits on one floor and imports only from its own floor or
below; no import cycle; an engine folder imports the plugin surface, :mod:`distributions` and itself only."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The floors, bottom to top: a module prefix -> its floor (the longest prefix wins; the ``golden_al`` row holds the
#: package's ``__init__`` alone, :data:`ITSELF_ONLY`). docs/architecture.md shows the same table
#: (:func:`test_the_architecture_page_shows_the_floors_of_the_code`).
FLOORS: dict[str, tuple[int, str]] = {
    "distributions": (1, "math"),
    "simulators": (2, "samplers"),
    "golden_al": (3, "plumbing"),
    "golden_al.errors": (3, "plumbing"),
    "golden_al.safeio": (3, "plumbing"),
    "golden_al.locks": (3, "plumbing"),
    "golden_al.provenance": (3, "plumbing"),
    "golden_al.shell": (3, "plumbing"),
    "golden_al.httpclient": (3, "plumbing"),
    "golden_al.textedit": (3, "plumbing"),
    "golden_al.plugin": (4, "plugin"),
    "golden_al.formats": (4, "plugin"),
    "golden_al.golden": (5, "domain"),
    "golden_al.prompts": (5, "domain"),
    "golden_al.models": (5, "domain"),
    "golden_al.recipes": (5, "domain"),
    "golden_al.measure": (5, "domain"),
    "golden_al.reference": (5, "domain"),
    "golden_al.curvefit": (5, "domain"),
    "golden_al.schedulers": (5, "domain"),
    "golden_al.servers": (5, "domain"),
    "golden_al.knobs": (5, "domain"),
    "golden_al.checks": (6, "consumers"),
    "golden_al.selection": (6, "consumers"),
    "golden_al.injection": (6, "consumers"),
    "golden_al.verification": (6, "consumers"),
    "golden_al.reporting": (6, "consumers"),
    "golden_al.cli": (7, "cli"),
    "golden_al.__main__": (7, "cli"),
    "golden_al.engines": (8, "engines"),
}
#: Floors whose packages (:func:`_package`) never import one another: each calls the floors below, and what two need
#: moves down. docs/architecture.md's table says it in its last column.
APART = frozenset({"consumers", "engines"})
PACKAGES = ("distributions", "simulators", "golden_al")
#: Rows that hold only the module they name, not what lies under it: a new golden_al package or top-level module
#: has no floor until it gets a row of its own.
ITSELF_ONLY = frozenset({"golden_al"})


def _row(module: str) -> str | None:
    """The row of :data:`FLOORS` that holds ``module`` (the longest prefix; None: no row)."""
    return max((p for p in FLOORS if module == p or (module.startswith(p + ".") and p not in ITSELF_ONLY)),
               key=len, default=None)


def floor_of(module: str) -> tuple[int, str] | None:
    """The floor of ``module`` (None: no prefix of the table holds it)."""
    row = _row(module)
    return None if row is None else FLOORS[row]


def _package(module: str) -> str | None:
    """The package of ``module`` for :data:`APART`: its row of :data:`FLOORS`; on the engines floor, its engine."""
    row = _row(module)
    return ".".join(module.split(".")[:3]) if row == "golden_al.engines" else row


def _across(module: str, name: str) -> bool:
    """Whether ``module`` importing ``name`` runs between two packages of one floor in :data:`APART`."""
    mine = floor_of(module)
    return mine is not None and mine[1] in APART and floor_of(name) == mine and _package(module) != _package(name)


def _modules(root: Path = ROOT) -> dict[str, Path]:
    """Every product module (engines' ``tests/`` folders are tests, not product)."""
    out = {}
    for pkg in PACKAGES:
        for path in (root / pkg).rglob("*.py"):
            rel = path.relative_to(root)
            if "tests" not in rel.parts:
                out[".".join(rel.with_suffix("").parts).removesuffix(".__init__")] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(module: str, path: Path, known: set[str], *, typing: bool = True) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every import in the file, anywhere (functions included): ``from a import b`` is ``a.b``
    where that is a module, else ``a``; relative imports resolved. ``typing=False`` leaves out ``if TYPE_CHECKING:``
    blocks (nothing runs them)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]

    def walk(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if not typing and _type_checking(child):
                continue
            yield child
            yield from walk(child)

    for node in walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join([*package[:len(package) - node.level + 1], *([node.module] if node.module else [])]) \
                if node.level else (node.module or "")
            for a in node.names:
                yield node.lineno, f"{base}.{a.name}" if f"{base}.{a.name}" in known else base


def _import_graph(*, typing: bool) -> dict[str, set[str]]:
    mods = _modules()
    return {m: {n for _, n in _imports(m, path, set(mods), typing=typing) if n in mods and n != m}
            for m, path in mods.items()}


def test_every_module_sits_on_a_floor() -> None:
    unplaced = [m for m in _modules() if floor_of(m) is None]
    assert unplaced == [], ("add a row for each to FLOORS (tests/unit/test_layers.py) and to docs/architecture.md's "
                            "floor table: the floor it sits on says what it may import")


def test_a_new_package_has_no_floor_until_it_gets_a_row() -> None:
    assert floor_of("golden_al") == (3, "plumbing")
    assert floor_of("golden_al.errors") == (3, "plumbing")
    assert floor_of("golden_al.newthing") is None
    assert floor_of("golden_al.newthing.part") is None


def test_no_import_runs_up_the_floors() -> None:
    """Imports anywhere in a file count (a function's, a ``TYPE_CHECKING`` one): none from a lower floor to a
    higher one. No file is exempt."""
    mods = _modules()
    up = []
    for m, path in mods.items():
        mine = floor_of(m)
        for line, name in _imports(m, path, set(mods)):
            theirs = floor_of(name)
            if mine and theirs and theirs[0] > mine[0] and name.split(".")[0] in PACKAGES:
                up.append(f"{path.relative_to(ROOT)}:{line} ({mine[1]}) imports {name} ({theirs[1]})")
    assert up == []


def test_no_consumer_imports_another() -> None:
    """check, select, inject, verify and report call the floors below, never one another, and no engine imports
    another (:data:`APART`); no file is exempt."""
    mods = _modules()
    across = [f"{path.relative_to(ROOT)}:{line} ({_package(m)}) imports {name} ({_package(name)})"
              for m, path in mods.items() for line, name in _imports(m, path, set(mods)) if _across(m, name)]
    assert across == []


def test_the_consumer_rule_sees_a_consumer_import_another(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    from golden_al.selection import select_recipe\n"
                                   "from golden_al.recipes.plan import plan_document\nfrom . import findings\n")
    known = {"golden_al.recipes.plan", "golden_al.checks.findings"}
    got = [n for _, n in _imports("golden_al.checks.m", tmp_path / "m.py", known)]
    assert got == ["golden_al.selection", "golden_al.recipes.plan", "golden_al.checks.findings"]
    assert [n for n in got if _across("golden_al.checks.m", n)] == ["golden_al.selection"]
    assert _across("golden_al.engines.vllm.server", "golden_al.engines.sglang.logs")
    assert not _across("golden_al.engines.vllm.server", "golden_al.engines.vllm.logs")


def test_no_package_holds_a_module_of_a_lower_floor() -> None:
    """Importing a module runs its packages' ``__init__`` first: a domain module inside a consumer package would load
    the consumer with it, so no row of the table sits on a lower floor than the row that holds its package."""
    assert [r for r in FLOORS if (up := floor_of(r.rpartition(".")[0])) and up[0] > FLOORS[r][0]] == []


def test_the_floor_rule_sees_an_upward_import(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    from golden_al.knobs.names import FLAG_KNOBS\n"
                                   "from . import sibling\n")
    got = [n for _, n in _imports("golden_al.plugin.m", tmp_path / "m.py", {"golden_al.plugin.sibling"})]
    assert got == ["golden_al.knobs.names", "golden_al.plugin.sibling"]
    assert floor_of(got[0])[0] > floor_of("golden_al.plugin.m")[0]


def test_the_architecture_page_shows_the_floors_of_the_code() -> None:
    """docs/architecture.md's floor table is :data:`FLOORS`, row for row, and says which floors are :data:`APART`."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = page.split("<!-- floors-table -->")[1].split("<!-- /floors-table -->")[0]
    shown: dict[str, tuple[int, str]] = {}
    apart = set()
    for row in table.strip().splitlines()[2:]:
        number, name, modules, each_other = (cell.strip() for cell in row.strip("|").split("|"))
        shown.update({m: (int(number), name) for m in re.findall(r"`([\w.]+)`", modules)})
        apart |= {name} if each_other == "no" else set()
        assert each_other in ("yes", "no")
    assert shown == FLOORS
    assert apart == APART


def test_no_import_cycle() -> None:
    """No two modules import each other, directly or around a circle, when the code runs (imports under
    ``TYPE_CHECKING`` never run; a package's ``__init__`` that only names its submodules lazily is no cycle)."""
    assert _cycles(_import_graph(typing=False)) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _cycles({"a.x": {"b.y"}, "b.y": {"a.x"}, "c.z": set()}) == [["a.x", "b.y"]]


#: What an engine folder may import besides itself (relative imports), the standard library and third-party packages.
ENGINE_MAY_IMPORT = ("golden_al.plugin", "distributions")


#: Calls whose string argument names a module to load: ``importlib.import_module("a.b")``, ``lazy("a.b:attr")``.
LOADERS = ("import_module", "__import__", "lazy")


def _resolve(level: int, name: str | None, package: list[str]) -> str:
    """The absolute module of a relative import ``level`` dots up from ``package``."""
    return ".".join([*package[:len(package) - level + 1], *([name] if name else [])])


def _loaded(node: ast.AST, package: list[str]) -> tuple[str, bool] | None:
    """``(module, relative)`` that a call of :data:`LOADERS` with a string constant loads (``"a.b:attr"`` -> ``a.b``;
    ``".server"`` resolved against ``package``); None for any other node, and for ``f"{__name__}..."``, which names
    the calling module or one under it."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(arg := node.args[0], ast.Constant)
            and isinstance(arg.value, str) and (node.func.id if isinstance(node.func, ast.Name) else
                                                getattr(node.func, "attr", None)) in LOADERS):
        return None
    name = arg.value.split(":")[0]
    level = len(name) - len(name.lstrip("."))
    return (_resolve(level, name[level:] or None, package), True) if level else (name, False)


def _engine_imports(folder: Path, own: str | None = None) -> list[str]:
    """Every import of an engine folder that reaches golden-al, simulators or distributions other than through the
    plugin surface, or names what the surface does not list; its tests may use golden-al as a user does, but reach
    their engine relatively (``from .. import PROFILE``) and no engine by name, so that the folder moves whole.
    ``own``: the folder's package (``golden_al.engines.<folder>``). Relative imports are resolved against it (one
    that leaves the folder is flagged), and a string constant passed to ``import_module`` or ``lazy`` is an import."""
    import golden_al.plugin as surface

    own = own or f"golden_al.engines.{folder.name}"
    bad = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder)
        where, in_tests = str(rel), "tests" in rel.parts
        package = [*own.split("."), *rel.parts[:-1]]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            relative: str | None = None
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level:
                relative = _resolve(node.level, node.module, package)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "golden_al" else [node.module]
                if node.module == "golden_al.plugin" and not in_tests:
                    bad += [f"{where}:{node.lineno} {a.name} is not in golden_al.plugin.__all__"
                            for a in node.names if a.name not in surface.__all__]
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "plugin"
                  and node.attr not in surface.__all__ and not in_tests):
                bad.append(f"{where}:{node.lineno} plugin.{node.attr} is not in golden_al.plugin.__all__")
            elif (loaded := _loaded(node, package)) is not None:
                relative, names = (loaded[0], []) if loaded[1] else (None, [loaded[0]])
            if relative is not None and not (relative == own or relative.startswith(own + ".")):
                bad.append(f"{where}:{node.lineno} imports {relative} (relatively, out of the folder)")
            for name in names:
                top = name.split(".")[0]
                if in_tests:  # its tests drive golden-al as users do
                    if name.startswith("golden_al.engines"):
                        bad.append(f"{where}:{node.lineno} imports {name}")
                elif top in PACKAGES and not any(name == p or (name.startswith(p + ".") and p == "distributions")
                                                 for p in ENGINE_MAY_IMPORT):
                    bad.append(f"{where}:{node.lineno} imports {name}")
    return bad


def _engine_folders() -> list[Path]:
    return sorted(p for p in (ROOT / "golden_al" / "engines").iterdir() if (p / "__init__.py").is_file())


@pytest.mark.parametrize("folder", _engine_folders(), ids=lambda p: p.name)
def test_an_engine_folder_imports_the_plugin_surface_distributions_and_itself_only(folder: Path) -> None:
    assert _engine_imports(folder) == []


def test_the_engine_rule_sees_each_way_out(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text(
        "from golden_al.plugin import EngineProfile, get_profile\nfrom golden_al.plugin.profile import lazy\n"
        "from golden_al import plugin, cli\nplugin.registry\nplugin.Pin\n"
        "from golden_al.engines import vllm\nimport simulators.base\nfrom distributions import units\n"
        "from . import logs\nimport numpy\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("from golden_al.cli.main import main\nfrom .. import PROFILE\n"
                                                  "from golden_al.engines.vllm import PROFILE as V\n")
    assert [b.split(" ", 1)[1] for b in _engine_imports(tmp_path)] == [
        "get_profile is not in golden_al.plugin.__all__", "imports golden_al.plugin.profile", "imports golden_al.cli",
        "imports golden_al.engines", "imports simulators.base", "plugin.registry is not in golden_al.plugin.__all__",
        "imports golden_al.engines.vllm"]


def test_the_engine_rule_sees_relative_and_string_imports(tmp_path: Path) -> None:
    """A relative import out of the folder, ``import_module`` and ``lazy`` with a string constant are imports; hooks
    named ``lazy(f"{__name__}.server:probe")`` and relative imports inside the folder are the folder's own."""
    (tmp_path / "__init__.py").write_text(
        "import importlib\nfrom golden_al import plugin\nfrom golden_al.plugin import lazy\n"
        "from ...servers import probe\nimportlib.import_module('golden_al.checks')\n"
        "lazy('golden_al.servers.probe:probe')\nplugin.lazy('simulators.base:Sampler')\n"
        "from . import logs\nfrom .server import x\nlazy(f'{__name__}.server:probe')\nlazy('.server:probe')\n"
        "importlib.import_module('..sglang', __package__)\nlazy('distributions.units:check_al')\n")
    assert [b.split(" ", 1)[1] for b in _engine_imports(tmp_path, "golden_al.engines.toy")] == [
        "imports golden_al.servers (relatively, out of the folder)", "imports golden_al.checks",
        "imports golden_al.servers.probe", "imports simulators.base",
        "imports golden_al.engines.sglang (relatively, out of the folder)"]


def test_the_plugin_surface_lists_what_it_imports() -> None:
    """``__all__`` is the surface: each name has one home (the ``TYPE_CHECKING`` imports), loads from it, and the
    surface names no engine."""
    import golden_al.plugin as surface

    homes = surface._homes()
    assert sorted(homes) == sorted(surface.__all__)
    assert not [h for h in homes.values() if h.startswith("golden_al.engines")]
    assert all(getattr(surface, name) is not None for name in surface.__all__)
    with pytest.raises(AttributeError, match="the plugin surface is its __all__"):
        surface.get_profile  # noqa: B018  (the registry's lookups are for commands, not engines)


def test_importing_the_surface_loads_nothing_else() -> None:
    """A profile imports the surface; that alone must not load the server side or the formats."""
    import subprocess

    code = ("import sys\nimport golden_al.plugin\nprint(sorted(m for m in sys.modules if m.startswith('golden_al')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['golden_al', 'golden_al.plugin']"


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


#: The CLI's parser builders (``add_arguments``, ``add_server_arguments``...): lists of options, not logic.
PARSER_BUILDER = re.compile(r"_?add_\w*arguments")


def _long_library_functions(root: Path = ROOT) -> list[str]:
    """Long functions of :data:`PACKAGES` without a reason, but for ``golden_al/cli/``'s parser builders."""
    out = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            cli = path.relative_to(root).parts[:2] == ("golden_al", "cli")
            out += [f"{path.parent.relative_to(root)}/{hit}" for hit in _long_functions(path)
                    if not (cli and PARSER_BUILDER.fullmatch(hit.split()[1]))]
    return out


def test_no_long_library_function_without_a_reason() -> None:
    """Every module of golden_al, simulators and distributions; in ``golden_al/cli/`` the parser builders (functions
    named ``add_*arguments``, :data:`PARSER_BUILDER`) are lists of options, not logic, and are left out."""
    assert _long_library_functions() == []


def test_the_length_rule_exempts_only_the_parsers_builders(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    for pkg, name in (("golden_al/cli", "add_arguments"), ("golden_al/cli", "run"), ("golden_al", "add_arguments"),
                      ("distributions", "fit"), ("simulators", "sample")):
        (tmp_path / pkg).mkdir(parents=True, exist_ok=True)
        (tmp_path / pkg / f"m_{name}.py").write_text(f"def {name}():\n{body}")
    assert [h.split()[0] for h in _long_library_functions(tmp_path)] == [
        "distributions/m_fit.py:1", "simulators/m_sample.py:1", "golden_al/cli/m_run.py:1",
        "golden_al/m_add_arguments.py:1"]


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
