"""Every experiment can be re-run by a reader (issue 37): its README starts from a clean clone, names no path of
one machine, and names the command that regenerates each committed figure."""

from __future__ import annotations

from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
READMES = sorted(EXPERIMENTS.rglob("README.md"))


def test_every_experiment_folder_has_a_readme() -> None:
    folders = {p.parent for p in EXPERIMENTS.rglob("*") if p.is_file() and p.parent != EXPERIMENTS}
    tops = {f.relative_to(EXPERIMENTS).parts[0] for f in folders}
    with_readme = {r.relative_to(EXPERIMENTS).parts[0] for r in READMES}
    assert tops <= with_readme, sorted(tops - with_readme)


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.parent.relative_to(EXPERIMENTS)))
def test_the_readme_starts_from_a_clean_clone(readme: Path) -> None:
    text = readme.read_text()
    assert "## Re-run from a clean clone" in text
    clone = text.index("## Re-run from a clean clone")
    assert "git clone" in text[clone:clone + 800]
    assert "/work/" not in text, "a path on one machine"


@pytest.mark.parametrize("figure", sorted(EXPERIMENTS.rglob("*.png")), ids=lambda p: p.name)
def test_every_committed_figure_names_its_command(figure: Path) -> None:
    folder = figure.parent
    while not (folder / "README.md").exists():
        folder = folder.parent
    text = (folder / "README.md").read_text()
    lines = [line for line in text.splitlines() if figure.name in line]
    assert any(("python " in line or "golden-al " in line) for line in lines), figure
