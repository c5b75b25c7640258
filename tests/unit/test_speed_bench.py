"""README's speed figures are the committed results of ``experiments/speed/bench.py`` (issue 52): the line the
benchmark prints from ``results.json`` stands in README as it is. Nothing here times anything."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "experiments" / "speed"


def test_the_readme_states_the_committed_benchmark_results() -> None:
    spec = importlib.util.spec_from_file_location("speed_bench", BENCH / "bench.py")
    assert spec is not None
    assert spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = json.loads((BENCH / "results.json").read_text())
    assert result["check"]["same_findings"]
    assert result["check_cold"]["same_findings"]
    assert bench.readme_line(result) in (REPO / "README.md").read_text(encoding="utf-8")
