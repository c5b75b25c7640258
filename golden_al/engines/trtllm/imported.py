"""``trtllm-iteration-log``: TensorRT-LLM iteration rows as a measurement record.

The rows of ``trtllm-bench --iteration_log`` (JSON or Python-literal) or a saved ``trtllm-serve``
``/metrics`` list, read by :mod:`golden_al.engines.trtllm.iteration_stats` (rank 0 only, all-rank
copies refused, every row checked). Consecutive iterations share their running requests, so one
iteration is not an independent draw: the clusters are blocks of :data:`ITERATIONS_PER_WINDOW`
consecutive iterations. TensorRT-LLM's rows give totals, not a per-step histogram.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from distributions.counts import AcceptanceCounts
from golden_al import plugin

from .iteration_stats import most_drafts, read_iteration_source

__all__ = ["ITERATIONS_PER_WINDOW", "import_trtllm_iterations"]

#: consecutive iterations per cluster (a decode batch keeps most of its requests from one to the next)
ITERATIONS_PER_WINDOW = 10


def import_trtllm_iterations(paths: Sequence[Path], opts: plugin.ImportOptions) -> list[plugin.ImportedRun]:
    """One record per file (each a run), k from ``--draft-len`` (the rows do not state it)."""
    if opts.draft_len is None:
        raise plugin.UsageError("TensorRT-LLM iteration rows do not state k: pass --draft-len (max_draft_len)")
    k = opts.draft_len
    out = []
    for p in paths:
        scan = read_iteration_source(p, max_bytes=plugin.MAX_BYTES)
        rows = [r for r in scan.rows if r.requests > 0]
        if not rows:
            raise plugin.InputFileError("no TensorRT-LLM iteration row with specDecodingStats and a drafted request", path=p,
                                        hint="pass the file of trtllm-bench --iteration_log of a run with speculation on")
        plugin.check_observed_k(most_drafts(rows), k, what="the TensorRT-LLM iteration rows", path=p)
        windows = []
        for i in range(0, len(rows), ITERATIONS_PER_WINDOW):
            block = rows[i:i + ITERATIONS_PER_WINDOW]
            windows.append(AcceptanceCounts(k=k, num_verify_steps=sum(r.requests for r in block),
                                            num_accepted_drafts=sum(r.accepted for r in block),
                                            num_draft_tokens=sum(r.drafted for r in block), source="trtllm-iteration",
                                            most_drafts=most_drafts(block)))
        name = opts.dataset or "unknown"
        warnings = [f"imported from TensorRT-LLM iteration rows: totals per iteration, clusters of "
                    f"{ITERATIONS_PER_WINDOW} consecutive iterations (no request is attributed)"]
        warnings += scan.notes
        if scan.other_ranks:
            warnings.append(f"{scan.other_ranks} row(s) of attention-DP ranks other than 0 left out (copies)")
        out.append(plugin.ImportedRun(plugin.ImportedWindows(windows, k, "trtllm-iterations", []), k=k, opts=opts, engine="trtllm",
                                   source="trtllm-iteration-stats", files=[p], model=None, num_requests=0,
                                   dataset=plugin.ImportedDataset(name, 0, f"trtllm-iteration-log:{name}",
                                                        f"imported trtllm-iteration-log: {p.name}"),
                                   warnings=warnings, unit="imported iteration window"))
    return out
