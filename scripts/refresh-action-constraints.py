"""Write constraints/action.txt: the exact versions the GitHub action installs golden-al with.

The action's verdicts must not move with a numpy, pydantic or ruamel release: it installs golden-al under these
pins, which are refreshed deliberately (in a reviewed pull request) by running this in a fresh environment that
has just installed golden-al without extras:

    python3 -m venv /tmp/gal && /tmp/gal/bin/pip install . && /tmp/gal/bin/python scripts/refresh-action-constraints.py

It writes the runtime closure of golden-al's core dependencies as that environment resolved it, plus the build
backend the action builds golden-al with, and tomli for Python 3.10.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import sys
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

OUT = Path(__file__).resolve().parents[1] / "constraints" / "action.txt"
#: pins that the running environment may not hold: the build backend, and tomli for Python 3.10
EXTRA_PINS = {"setuptools": "84.2.1", "tomli": "2.5.0"}


def closure() -> dict[str, str]:
    env = {**default_environment(), "extra": ""}
    todo = [Requirement(r) for r in md.requires("golden-al") or [] if "extra ==" not in r]
    seen: dict[str, str] = {}
    while todo:
        req = todo.pop()
        if req.marker and not req.marker.evaluate(env):
            continue
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name in seen:
            continue
        dist = md.distribution(req.name)
        seen[name] = dist.version
        todo.extend(Requirement(r) for r in dist.requires or [])
    return seen


def main() -> int:
    pins = {**EXTRA_PINS, **closure()}
    lines = ["# Exact versions the GitHub action installs golden-al with (scripts/refresh-action-constraints.py).",
             f"# Python {sys.version.split()[0]}; refresh deliberately, in a reviewed pull request.",
             *(f"{n}=={v}" for n, v in sorted(pins.items()))]
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    sys.stdout.write(f"wrote {len(pins)} pins to {OUT}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
