"""``golden-al pool``: measurement records of disjoint prompt shards -> one record of the cell.

Shards of one prompt set (``measure --shard I/N`` on several machines, or several
replicas' runs) pool into one cell when every setting agrees and no prompt is held
twice: the counts are summed, the interval is over every cluster of every shard, and
the record's ``dataset.selection`` is their union. ``fit`` pools the same way itself;
``pool`` writes the pooled record for ``report``, ``check`` or archiving.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from golden_al.cli._common import add_format_option, print_json

DESCRIPTION = ("Pool the measurement records of disjoint prompt shards of one cell (one thinking mode, one k, "
               "every setting equal) into one record: summed counts, the interval over all their clusters, the "
               "union of their prompt selections. Overlapping shards and disagreeing settings are refused.")

EXAMPLES = """\
examples:
  golden-al measure --engine vllm --server http://node1:8000 --draft-len 3 --prompts speed-bench:DIR --shard 0/2 --out s0
  golden-al measure --engine vllm --server http://node2:8000 --draft-len 3 --prompts speed-bench:DIR --shard 1/2 --out s1
  golden-al pool s0 s1 --out pooled
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``golden-al pool``."""
    parser.add_argument("records", nargs="+", metavar="RECORD",
                        help="measurement.json files or directories holding them (searched recursively)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the pooled measurement.json")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pooled interval's resampling (default 0)")
    add_format_option(parser, ("text", "json"), "text")


def run(args: argparse.Namespace) -> int:
    """Pool, write, print one line (or the record as JSON)."""
    from golden_al.curvefit.pool import pool_records
    from golden_al.measure.records import load_records

    records = load_records(args.records)
    rec = pool_records(records, Path(args.out), seed=args.seed)
    if args.format == "json":
        print_json(rec.model_dump(mode="json"))
    else:
        sys.stdout.write(f"pooled {len(records)} records: thinking {rec.thinking} k={rec.draft_len}: AL {rec.al:.3f} "
                         f"[{rec.al_ci95[0]:.3f}, {rec.al_ci95[1]:.3f}] over {rec.num_requests} requests, "
                         f"{rec.num_verify_steps} verify steps -> {Path(args.out) / 'measurement.json'}\n")
    return 0
