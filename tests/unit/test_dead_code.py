"""No dead code in the library: vulture finds nothing that tests/vulture_whitelist.py does not name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_vulture_finds_no_dead_code_in_the_library() -> None:
    done = subprocess.run([sys.executable, "-m", "vulture", "golden_al", "distributions", "simulators",
                           "tests/vulture_whitelist.py", "--min-confidence", "60"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_vulture_would_see_a_dead_function(tmp_path: Path) -> None:
    """The check can fail: a function nobody calls is reported."""
    (tmp_path / "mod.py").write_text("def used():\n    return 1\n\n\ndef never_called():\n    return 2\n\n\nused()\n")
    done = subprocess.run([sys.executable, "-m", "vulture", str(tmp_path / "mod.py"), "--min-confidence", "60"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "never_called" in done.stdout
