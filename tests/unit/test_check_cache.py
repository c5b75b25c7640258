"""``check``'s results cache (issue 52 item 1): a re-run takes a file's result from the last run only when its text,
path, the curve store, the run's settings and golden-al's code are the same, and never for a master config or a
file one runs. Whatever changed between two runs, the cached run reports byte for byte what a run without the cache
reports."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from golden_al.checks import static
from golden_al.cli.main import main

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "check"
SCRIPT = FIX / "tree" / "scripts" / "agentic" / "glm5.2_fp4_mi355x_atom_mtp.sh"
RECIPE = FIX / "tree" / "recipes" / "vllm" / "agentic" / "dsv4-master-target.yaml"


def _tree(root: Path) -> Path:
    """A script with pins, a recipe a master config runs, the master config, the golden curves."""
    for src, rel in ((SCRIPT, "scripts/run.sh"), (RECIPE, f"recipes/vllm/agentic/{RECIPE.name}"),
                     (FIX / "tree" / "configs" / "test-master.yaml", "configs/master.yaml")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, root / rel)
    shutil.copytree(FIX / "golden", root / "golden")
    return root


def _run(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["check", str(root / "scripts"), str(root / "recipes"), str(root / "configs"), "--golden-dir",
               str(root / "golden"), "--format", "json", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _script_value(root: Path) -> None:
    _edit(root / "scripts" / "run.sh", "SIMULATE_ACC_LEN=2.99", "SIMULATE_ACC_LEN=2.9")


def _script_moved(root: Path) -> None:
    (root / "scripts" / "run.sh").rename(root / "scripts" / "moved.sh")


def _curve_edited(root: Path) -> None:
    _edit(root / "golden" / "glm52_mtp.yaml", "3: {al: 2.99}", "3: {al: 2.93}")


def _curve_removed(root: Path) -> None:
    (root / "golden" / "glm52_mtp.yaml").unlink()


def _recipe_k(root: Path) -> None:
    _edit(root / "recipes" / "vllm" / "agentic" / RECIPE.name, '"num_speculative_tokens":2',
          '"num_speculative_tokens":3')


def _recipe_shadowed(root: Path) -> None:  # where the master config looks first: now the recipe it runs
    first = root / "configs" / "recipes" / "vllm" / "agentic" / RECIPE.name
    first.parent.mkdir(parents=True)
    first.write_text(RECIPE.read_text().replace('"num_speculative_tokens":2', '"num_speculative_tokens":3'))


def _master_removed(root: Path) -> None:
    (root / "configs" / "master.yaml").write_text("# no master config any more\n")


@pytest.mark.parametrize("change", [_script_value, _script_moved, _curve_edited, _curve_removed, _recipe_k,
                                    _recipe_shadowed, _master_removed], ids=lambda c: c.__name__.strip("_"))
def test_a_cached_run_reports_what_an_uncached_run_reports_whatever_changed(
        change: Callable[[Path], None], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, cache = _tree(tmp_path / "t"), tmp_path / "cache"
    first = _run(root, capsys, "--cache-dir", str(cache))
    assert first == _run(root, capsys, "--no-cache")
    assert first == _run(root, capsys, "--cache-dir", str(cache))  # from the cache
    change(root)
    fresh = _run(root, capsys, "--no-cache")
    assert fresh != first  # the change shows in the report
    assert _run(root, capsys, "--cache-dir", str(cache)) == fresh


PINNED = """name: dsv4-agentic-pinned
model: {path: deepseek-ai/DeepSeek-V4-Pro}
backend:
  type: vllm
  vllm_config:
    aggregated:
      speculative-config: '{"method":"mtp","num_speculative_tokens":2,"rejection_sample_method":"synthetic","synthetic_acceptance_length":2.27}'
benchmark: {type: custom, command: bash agentic_srt.sh}
"""
RUNS = """dsv4-vllm:
  image: vllm/vllm-openai:v0.20.1
  model: deepseek-ai/DeepSeek-V4-Pro
  framework: dynamo-vllm
  scenarios:
    agentic-coding:
    - search-space:
      - conc-list: [1]
        prefill:
          additional-settings: ["CONFIG_FILE=recipes/vllm/agentic/pinned.yaml"]
"""


def _runs_edited(root: Path) -> None:
    _edit(root / "configs" / "runs.yaml", "conc-list: [1]", "conc-list: [1, 2]")


def _runs_removed(root: Path) -> None:
    (root / "configs" / "runs.yaml").unlink()


def _runs_added(root: Path) -> None:
    (root / "configs" / "more.yaml").write_text(RUNS.replace("dsv4-vllm:", "dsv4-more:"))


@pytest.mark.parametrize("change", [_runs_edited, _runs_removed, _runs_added], ids=lambda c: c.__name__.strip("_"))
def test_a_recipe_a_master_config_runs_is_kept_with_the_entries_that_run_it(
        change: Callable[[Path], None], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A recipe's verdicts name the master configs that run it: their entries and digests are part of its key."""
    root, cache = _tree(tmp_path / "t"), tmp_path / "cache"
    (root / "recipes" / "vllm" / "agentic" / "pinned.yaml").write_text(PINNED)
    (root / "configs" / "runs.yaml").write_text(RUNS)
    first = _run(root, capsys, "--cache-dir", str(cache))
    assert any(i["name"].endswith("configs/runs.yaml") for f in json.loads(first[1]) if f["file"].endswith("pinned.yaml")
               for i in f["inputs"])  # the recipe's verdict names the master config that runs it
    assert _run(root, capsys, "--cache-dir", str(cache)) == first
    change(root)
    fresh = _run(root, capsys, "--no-cache")
    assert fresh != first
    assert _run(root, capsys, "--cache-dir", str(cache)) == fresh


def test_a_rerun_analyses_only_files_whose_verdicts_read_other_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    root, cache = _tree(tmp_path / "t"), tmp_path / "cache"
    seen: list[str] = []
    analyse = static._Checker._check_file
    monkeypatch.setattr(static._Checker, "_check_file", lambda self, p, k: (seen.append(p.name), analyse(self, p, k)))
    first = _run(root, capsys, "--cache-dir", str(cache))
    assert sorted(seen) == sorted(["run.sh", RECIPE.name, "master.yaml"])
    seen.clear()
    assert _run(root, capsys, "--cache-dir", str(cache)) == first
    assert seen == ["master.yaml"]  # its verdicts read the recipes it runs: never kept
    doc = json.loads((cache / "results.json").read_text())
    assert len(doc["entries"]) == 2


@pytest.mark.hostile
@pytest.mark.parametrize("content", ["not json", '{"format": "golden-al check cache 1", "entries": {"x": 1}}', "[]",
                                     '{"format": "golden-al check cache 1", "entries": []}'])
def test_a_foreign_or_broken_cache_file_is_ignored_and_rewritten(content: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    root, cache = _tree(tmp_path / "t"), tmp_path / "cache"
    expected = _run(root, capsys, "--no-cache")
    cache.mkdir()
    (cache / "results.json").write_text(content)
    assert _run(root, capsys, "--cache-dir", str(cache)) == expected
    assert json.loads((cache / "results.json").read_text())["format"] == "golden-al check cache 1"
    # an entry under a key this run computes, but not in our shape, is computed again
    doc = json.loads((cache / "results.json").read_text())
    (cache / "results.json").write_text(json.dumps({**doc, "entries": {k: {"findings": 3} for k in doc["entries"]}}))
    assert _run(root, capsys, "--cache-dir", str(cache)) == expected


def test_no_cache_and_the_environment_switch_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "t")
    monkeypatch.setenv("GOLDEN_AL_CACHE", str(tmp_path / "home"))
    monkeypatch.setenv("GOLDEN_AL_CHECK_CACHE", "off")
    _run(root, capsys)
    monkeypatch.delenv("GOLDEN_AL_CHECK_CACHE")
    _run(root, capsys, "--no-cache")
    assert not (tmp_path / "home").exists()
    _run(root, capsys)
    assert (tmp_path / "home" / "check" / "results.json").is_file()


@pytest.mark.parametrize("args", [("--policy", "no-pins"), ("--format", "text", "--verbose"), ("--format", "github")])
def test_every_policy_and_format_reads_the_same_from_the_cache(args: tuple[str, ...], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    root, cache = _tree(tmp_path / "t"), tmp_path / "cache"
    expected = _run(root, capsys, "--no-cache", *args)
    assert _run(root, capsys, "--cache-dir", str(cache), *args) == expected
    assert _run(root, capsys, "--cache-dir", str(cache), *args) == expected
