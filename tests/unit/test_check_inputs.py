"""Verdicts carry their inputs (issue 49 item 2): every finding of ``check`` names what its verdict read (its own
file, the recipe a master config's CONFIG_FILE points to, the master configs that run a recipe, the curve files it
was judged against, the gate's configuration), and ``--changed-since`` and the baseline re-judge a finding when any
of them changed: git repositories built in tmp dirs, one per input kind."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.golden import load_store

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "check"
GOLDEN = FIX / "golden"
MASTER = FIX / "tree" / "configs" / "test-master.yaml"
RECIPE = FIX / "tree" / "recipes" / "vllm" / "agentic" / "dsv4-master-target.yaml"


def _master_tree(root: Path) -> Path:
    """A master config whose pins take their k from the recipe CONFIG_FILE names."""
    (root / "configs").mkdir(parents=True)
    (root / "recipes" / "vllm" / "agentic").mkdir(parents=True)
    shutil.copy(MASTER, root / "configs" / "master.yaml")
    shutil.copy(RECIPE, root / "recipes" / "vllm" / "agentic" / RECIPE.name)
    return root


pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
GIT = ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "-c", "protocol.file.allow=always"]
SHIPPED_OTHER = Path(__file__).resolve().parents[2] / "golden_al" / "golden" / "curves" / "kimik2.5_eagle3.yaml"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *GIT, *args], check=True, capture_output=True)


def _commit(root: Path) -> None:
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")


def _repo(tmp_path: Path) -> Path:
    """A git repository: a master config, the recipe it points to, the golden curves, a configuration naming them."""
    root = _master_tree(tmp_path / "repo")
    shutil.copytree(GOLDEN, root / "golden")
    (root / ".golden-al.toml").write_text('golden-dir = "golden"\n')
    _git(root, "init", "-q")
    _commit(root)
    return root


def _check(root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
           ) -> tuple[int, list[dict]]:
    monkeypatch.chdir(root)
    rc = main(["check", ".", "--format", "json", *args])
    out, err = capsys.readouterr()
    assert rc in (0, 1), err
    return rc, json.loads(out)


def _failing(rows: list[dict]) -> list[tuple[str, int, str]]:
    return [(r["file"], r["line"], r["verdict"]) for r in rows if r["verdict"] != "match" and r["waived"] is None]


def _recipe_k3(root: Path) -> None:
    recipe = root / "recipes" / "vllm" / "agentic" / RECIPE.name
    recipe.write_text(recipe.read_text().replace('"num_speculative_tokens":2', '"num_speculative_tokens":3'))


def _recipe_deleted(root: Path) -> None:
    _git(root, "rm", "-q", f"recipes/vllm/agentic/{RECIPE.name}")


def _recipe_renamed(root: Path) -> None:
    _git(root, "mv", f"recipes/vllm/agentic/{RECIPE.name}", "recipes/vllm/agentic/renamed.yaml")


def _recipe_shadowed(root: Path) -> None:
    """A recipe with k = 3 where CONFIG_FILE is looked for first (beside the master config): it is now the one run,
    and the re-judged finding names it."""
    first = root / "configs" / "recipes" / "vllm" / "agentic" / RECIPE.name
    first.parent.mkdir(parents=True)
    first.write_text(RECIPE.read_text().replace('"num_speculative_tokens":2', '"num_speculative_tokens":3'))


def _curve_edited(root: Path) -> None:
    curve = root / "golden" / "deepseek_v4_mtp.yaml"
    curve.write_text(curve.read_text().replace("2: {al: 2.27}", "2: {al: 2.31}"))


def _curve_added(root: Path) -> None:
    shutil.copy(SHIPPED_OTHER, root / "golden")


def _config_changed(root: Path) -> None:
    (root / ".golden-al.toml").write_text('golden-dir = "golden"\npolicy = "no-pins"\n')


@pytest.mark.parametrize("change", [_recipe_k3, _recipe_deleted, _recipe_renamed, _recipe_shadowed, _curve_edited,
                                    _curve_added, _config_changed], ids=lambda c: c.__name__.strip("_"))
def test_changed_since_fails_a_finding_when_an_input_of_its_verdict_changed(
        change: Callable[[Path], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _repo(tmp_path)
    rc, rows = _check(root, monkeypatch, capsys, "--changed-since", "HEAD")
    assert (rc, _failing(rows)) == (0, [])  # the master config's known mismatch is waived: nothing it read changed
    change(root)
    rc, rows = _check(root, monkeypatch, capsys, "--changed-since", "HEAD")
    assert rc == 1  # the master config did not change; what its verdicts read did
    assert {f for f, _, _ in _failing(rows)} == {"configs/master.yaml"}
    if change is not _config_changed:
        assert any("changed since HEAD: " in r["message"] for r in rows if r["waived"] is None)


SUBMODULE_RECIPE = f"benchmarks/multi_node/srt-slurm-recipes/vllm/agentic/{RECIPE.name}"


def _submodule_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose master config's recipe lives in a submodule (InferenceX's srt-slurm-recipes), and the
    submodule's own repository."""
    sub = tmp_path / "recipes-repo"
    (sub / "vllm" / "agentic").mkdir(parents=True)
    shutil.copy(RECIPE, sub / "vllm" / "agentic" / RECIPE.name)
    _git(sub, "init", "-q")
    _commit(sub)
    root = tmp_path / "repo"
    (root / "configs").mkdir(parents=True)
    shutil.copy(MASTER, root / "configs" / "master.yaml")
    shutil.copytree(GOLDEN, root / "golden")
    _git(root, "init", "-q")
    _git(root, "submodule", "add", "-q", str(sub), "benchmarks/multi_node/srt-slurm-recipes")
    _commit(root)
    return root, sub


def _bump_submodule(root: Path, sub: Path) -> None:
    """The submodule's recipe takes k = 3 upstream, and the repository pulls it."""
    recipe = sub / "vllm" / "agentic" / RECIPE.name
    recipe.write_text(recipe.read_text().replace('"num_speculative_tokens":2', '"num_speculative_tokens":3'))
    _commit(sub)
    _git(root / "benchmarks" / "multi_node" / "srt-slurm-recipes", "pull", "-q", "origin", "HEAD")


def test_changed_since_fails_a_finding_when_the_submodule_holding_its_recipe_was_bumped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    root, sub = _submodule_repo(tmp_path)
    rc, rows = _check(root, monkeypatch, capsys, "--golden-dir", "golden", "--changed-since", "HEAD")
    assert rc == 0
    assert SUBMODULE_RECIPE in {i["name"] for i in rows[0]["inputs"]}
    _bump_submodule(root, sub)
    rc, rows = _check(root, monkeypatch, capsys, "--golden-dir", "golden", "--changed-since", "HEAD")
    assert rc == 1
    assert {f for f, _, _ in _failing(rows)} == {"configs/master.yaml"}


def _thinking_off(root: Path) -> None:
    master = root / "configs" / "master.yaml"
    master.write_text(master.read_text().replace('"SYNTHETIC_ACCEPTANCE_LENGTH=2.49"\n',
                                                 '"SYNTHETIC_ACCEPTANCE_LENGTH=2.49"\n          - "THINKING_MODE=off"\n'))


def _recipe_touched(root: Path) -> None:
    recipe = root / "recipes" / "vllm" / "agentic" / RECIPE.name
    recipe.write_text(recipe.read_text() + "# reviewed\n")


#: What each change of the baseline test changes: the input a failing finding must name.
CHANGED_INPUT: dict[Callable[[Path], None], str] = {
    _recipe_k3: f"recipes/vllm/agentic/{RECIPE.name}", _recipe_touched: f"recipes/vllm/agentic/{RECIPE.name}",
    _recipe_deleted: f"recipes/vllm/agentic/{RECIPE.name}", _recipe_renamed: f"recipes/vllm/agentic/{RECIPE.name}",
    _recipe_shadowed: f"configs/recipes/vllm/agentic/{RECIPE.name}",
    _curve_edited: "golden/deepseek_v4_mtp.yaml", _curve_added: "golden/", _thinking_off: "configs/master.yaml",
    _config_changed: ".golden-al.toml"}


def _failing_with_input(rows: list[dict], name: str) -> list[tuple[str, int, str]]:
    """The failing, unwaived findings whose verdict read ``name``."""
    return [(r["file"], r["line"], r["verdict"]) for r in rows
            if r["verdict"] != "match" and r["waived"] is None and name in {i["name"] for i in r["inputs"]}]


@pytest.mark.parametrize("change", list(CHANGED_INPUT), ids=lambda c: c.__name__.strip("_"))
def test_a_baseline_entry_stops_waiving_when_anything_its_verdict_read_changed(
        change: Callable[[Path], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _repo(tmp_path)
    monkeypatch.chdir(root)
    assert main(["check", ".", "--write-baseline", "known.json"]) == 0
    rc, rows = _check(root, monkeypatch, capsys, "--baseline", "known.json")
    assert (rc, _failing(rows)) == (0, [])
    change(root)
    rc, rows = _check(root, monkeypatch, capsys, "--baseline", "known.json")
    assert rc == 1  # the known findings keep their file; what they were judged against moved
    assert _failing_with_input(rows, CHANGED_INPUT[change]), rows


def test_a_baseline_entry_stops_waiving_when_the_submodule_holding_its_recipe_was_bumped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    root, sub = _submodule_repo(tmp_path)
    monkeypatch.chdir(root)
    assert main(["check", ".", "--golden-dir", "golden", "--write-baseline", "known.json"]) == 0
    rc, rows = _check(root, monkeypatch, capsys, "--golden-dir", "golden", "--baseline", "known.json")
    assert (rc, _failing(rows)) == (0, [])
    _bump_submodule(root, sub)
    rc, rows = _check(root, monkeypatch, capsys, "--golden-dir", "golden", "--baseline", "known.json")
    assert rc == 1
    assert _failing_with_input(rows, SUBMODULE_RECIPE), rows


def _names(f: object) -> list[tuple[str, str, bool]]:
    return [(i.kind, i.name, i.digest is not None) for i in f.inputs]  # type: ignore[attr-defined]


def test_a_master_config_pin_carries_the_recipe_its_config_file_names(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = _master_tree(tmp_path / "t")
    monkeypatch.chdir(root)
    report = check_paths(["configs"], store=load_store(GOLDEN))
    f = report.findings[0]
    assert _names(f)[:2] == [("file", "configs/master.yaml", True),
                             ("file", "recipes/vllm/agentic/dsv4-master-target.yaml", True)]
    assert f.to_dict()["inputs"][1]["name"] == "recipes/vllm/agentic/dsv4-master-target.yaml"
    (root / "recipes" / "vllm" / "agentic" / RECIPE.name).unlink()
    gone = check_paths(["configs"], store=load_store(GOLDEN)).findings[0]
    absent = [i.name for i in gone.inputs if i.digest is None]
    assert "recipes/vllm/agentic/dsv4-master-target.yaml" in absent  # looked for there: its absence is an input


def test_a_recipe_finding_carries_the_master_configs_that_run_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = _master_tree(tmp_path / "t")
    recipe = root / "recipes" / "vllm" / "agentic" / RECIPE.name
    recipe.write_text(recipe.read_text().replace(
        '"num_speculative_tokens":2}', '"num_speculative_tokens":2,"rejection_sample_method":"synthetic",'
                                       '"synthetic_acceptance_length":2.27}'))
    monkeypatch.chdir(root)
    report = check_paths(["."], store=load_store(GOLDEN))
    own = [f for f in report.findings if f.file.endswith(RECIPE.name)]
    assert own
    assert _names(own[0]) == [("file", f"recipes/vllm/agentic/{RECIPE.name}", True),
                              ("file", "configs/master.yaml", True),  # its model and scenario come from there
                              ("curve", str(GOLDEN / "deepseek_v4_mtp.yaml"), True),  # the curves of its model
                              ("curve", f"{GOLDEN}/", True)]  # and the store's listing (a curve added or removed)
