"""The GitHub action is linted as a security reviewer would (issue 37): zizmor, the GitHub Actions schema, every
action pinned by hash, no expression expanded inside a script, and its install constrained by pins in the repo."""

from __future__ import annotations

import importlib.metadata as md
import re
import subprocess
import sys
from pathlib import Path

import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
ACTION = REPO / "action.yml"
BIN = Path(sys.executable).parent


def test_zizmor_finds_nothing() -> None:
    done = subprocess.run([str(BIN / "zizmor"), "--offline", str(ACTION)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_action_validates_against_the_github_actions_schema() -> None:
    done = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(ACTION)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_action_is_pinned_by_hash_and_no_expression_is_expanded_in_a_script() -> None:
    steps = yaml.safe_load(ACTION.read_text())["runs"]["steps"]
    for step in steps:
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
        if "run" in step:
            assert "${{" not in step["run"], step["run"]


def test_the_install_is_constrained_by_pins_that_satisfy_the_requirements() -> None:
    pins = {}
    for line in (REPO / "constraints" / "action.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line}"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    runtime = [Requirement(r) for r in md.requires("golden-al") or [] if "extra ==" not in r]
    for req in runtime:
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"{req.name} is not pinned in constraints/action.txt"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} breaks {req}"
    import tomllib

    backend = Requirement(tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"][0])
    assert backend.specifier.contains(pins["setuptools"])
    assert "--constraint" in ACTION.read_text()
