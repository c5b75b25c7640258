"""The census covers the filesystem as the consumer sees it (issue 38, item 3): a directory link inside the checked
path is followed (each folder once), one that leads outside is refused, never skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from golden_al.checks.static import check_paths
from golden_al.golden import load_store

pytestmark = pytest.mark.hostile

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"
STORE = load_store(None)


def test_a_wrong_pin_behind_a_link_that_leaves_the_tree_fails(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(FIX / "sglang_disagg_pinned.yaml", outside / "pinned.yaml")  # a mismatching pin
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "ok.sh").write_text("#!/bin/bash\necho hello\n")
    (tree / "recipes").symlink_to(outside, target_is_directory=True)
    report = check_paths([str(tree)], store=STORE)
    assert report.failed
    (f,) = [x for x in report.findings if x.verdict == "unreadable"]
    assert f.file.endswith("recipes")
    assert "leads outside the checked path" in f.message
    # checked from a folder that holds both, the same files are read through the link and found wrong
    both = check_paths([str(tmp_path)], store=STORE)
    assert {x.verdict for x in both.findings} == {"mismatch"}


def test_a_link_inside_the_tree_is_followed_once_and_a_cycle_ends(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "real").mkdir(parents=True)
    shutil.copy(FIX / "sglang_disagg_pinned.yaml", tree / "real" / "pinned.yaml")
    (tree / "alias").symlink_to(tree / "real", target_is_directory=True)
    (tree / "real" / "loop").symlink_to(tree, target_is_directory=True)
    report = check_paths([str(tree)], store=STORE)
    assert report.files_scanned == 1  # the folder is read once, through whichever path comes first
    assert {x.verdict for x in report.findings} == {"mismatch"}
