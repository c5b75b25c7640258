"""Issue 49 item 6: product code (golden_al/, simulators/, distributions/, tests excluded) stays within 52,500 lines."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 52_500


def _size_module():
    spec = importlib.util.spec_from_file_location("product_size", ROOT / "scripts" / "product_size.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_product_code_is_within_the_budget():
    counts = _size_module().product_lines(ROOT)
    total = sum(counts.values())
    assert total <= BUDGET, f"product code is {total} lines, over the {BUDGET} budget: delete before adding"


def test_engine_tests_are_not_counted_and_product_files_are(tmp_path):
    mod = _size_module()
    (tmp_path / "golden_al" / "engines" / "toy" / "tests").mkdir(parents=True)
    (tmp_path / "golden_al" / "engines" / "toy" / "tests" / "test_x.py").write_text("a = 1\n" * 7)
    (tmp_path / "golden_al" / "engines" / "toy" / "profile.py").write_text("a = 1\n" * 3)
    (tmp_path / "golden_al" / "cli.py").write_text("a = 1\n" * 2)
    (tmp_path / "distributions").mkdir()
    (tmp_path / "distributions" / "units.py").write_text("a = 1\n")
    (tmp_path / "simulators").mkdir()
    counts = mod.product_lines(tmp_path)
    assert dict(counts) == {"golden_al/engines": 3, "golden_al": 2, "distributions": 1}
    assert mod.main(["--max", str(sum(mod.product_lines().values()))]) == 0
