"""Packaging (issue 37): an SPDX license with its file, a wheel with the library, and an sdist from which the
tests run (tests, docs, experiments' committed results, the action and its script included)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir",
                           str(out), str(REPO)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


@pytest.mark.slow
def test_the_license_is_an_spdx_expression_with_its_file(dist: Path) -> None:
    assert (REPO / "LICENSE").read_text().lstrip().startswith("Apache License")
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith("dist-info/METADATA"))).decode()
        names = z.namelist()
    assert "License-Expression: Apache-2.0" in meta
    assert "License-File: LICENSE" in meta
    assert "License ::" not in meta  # the deprecated classifier is gone
    assert any(n.endswith("dist-info/licenses/LICENSE") for n in names)
    assert "golden_al/recipes/plan.py" in names
    assert "distributions/equivalence.py" in names
    assert not any(n.startswith("tests/") for n in names)


@pytest.mark.slow
def test_the_sdist_holds_what_a_packager_needs_and_its_tests_run(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        tar.extractall(tmp_path, filter="data")
    for needed in ("LICENSE", "README.md", "action.yml", ".pre-commit-hooks.yaml", "scripts/github-action-check.sh",
                   "docs/worked-example.md", "tests/conftest.py", "tests/unit/test_select.py",
                   "tests/fixtures/select/sglang_roles_dflash.yaml", "experiments/qwen-coder-curve/humaneval/k4/"
                   "measurement.json"):
        assert needed in names, needed
    assert not any("__pycache__" in n for n in names)
    root = next(tmp_path.glob("golden_al-*"))
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/unit/test_select.py", "tests/unit/test_verify.py"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout
