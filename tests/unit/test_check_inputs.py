"""Verdicts carry their inputs (issue 49 item 2): every finding of ``check`` names what its verdict read (its own
file, the recipe a master config's CONFIG_FILE points to, the master configs that run a recipe, the curve files it
was judged against, the gate's configuration), and ``--changed-since`` and the baseline re-judge a finding when any
of them changed: git repositories built in tmp dirs, one per input kind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from golden_al.checks.static import check_paths
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
                              ("curve", str(GOLDEN / "deepseek_v4_mtp.yaml"), True)]  # the curve it is judged by
