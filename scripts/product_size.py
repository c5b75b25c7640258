"""Lines of product code: ``golden_al/``, ``simulators/``, ``distributions/`` (``*.py``), tests excluded.

Tests are any file under a ``tests`` folder (engine folders carry their own ``tests/``). Used by the size rule
of issue 49 ("a house no larger than today"): ``python scripts/product_size.py [--by-package] [--max N]``
prints the total (and per package); ``--max`` exits 1 above the budget.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("golden_al", "simulators", "distributions")


def product_lines(root: Path = ROOT) -> Counter[str]:
    """Lines per top-level folder of each product package (tests excluded)."""
    out: Counter[str] = Counter()
    for pkg in PACKAGES:
        for path in (root / pkg).rglob("*.py"):
            rel = path.relative_to(root)
            if "tests" in rel.parts:
                continue
            key = "/".join(rel.parts[:2]) if len(rel.parts) > 2 else pkg
            out[key] += len(path.read_text(encoding="utf-8").splitlines())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-package", action="store_true", help="print the lines of each folder too")
    parser.add_argument("--max", type=int, default=None, help="exit 1 when the total exceeds this")
    args = parser.parse_args(argv)
    counts = product_lines()
    if args.by_package:
        for key, n in sorted(counts.items()):
            print(f"{n:7d}  {key}")
    total = sum(counts.values())
    print(f"{total:7d}  total")
    return 1 if args.max is not None and total > args.max else 0


if __name__ == "__main__":
    sys.exit(main())
