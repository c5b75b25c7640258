"""TensorRT-LLM's check-run evidence: its iteration rows (:mod:`golden_al.engines.trtllm.iteration_stats`).

The files are ``trtllm-bench --iteration_log`` files, logs that hold such rows, or saved
``trtllm-serve`` ``/metrics`` answers (a JSON list). They share one byte budget per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from distributions import units
from golden_al import plugin

from .iteration_stats import most_drafts, read_iteration_source

ENGINE = "trtllm"


def read(files: Sequence[str | Path], k: int, *, decode_log_interval: int) -> plugin.RunEvidence:
    """The run's AL from TensorRT-LLM iteration rows (see :mod:`golden_al.plugin.evidence`).

    Raises:
        InputFileError: no iteration row with spec-decode stats, or rows that show another k (the most drafts a
            request proposed in an iteration) than ``k``.
        NoVerifyStepsError: the rows count no verify step.
        UnreadableInputError: the files together pass the run's byte budget.
    """
    del decode_log_interval  # iteration rows are not sampled: every iteration is a row
    paths = [Path(f) for f in files]
    budget = plugin.run_budget(paths)
    tally = plugin.LineTally()  # one reader policy over the run's files: a row held twice is refused
    scans = [read_iteration_source(p, max_bytes=budget, tally=tally) for p in paths]
    rows = [r for s in scans for r in s.rows]
    if not rows:
        names = ", ".join(map(str, paths))
        raise plugin.InputFileError(f"no TensorRT-LLM iteration row with specDecodingStats in {names}",
                                    hint="pass the file of trtllm-bench --iteration_log, or a saved trtllm-serve /metrics "
                                  "answer, of a run with speculative decoding on")
    for s in scans:
        for r in s.rows:
            plugin.check_counts(what="TensorRT-LLM iteration row", accepted=r.accepted, drafted=r.drafted,
                                drafts=r.requests, k=k, path=s.source, line=r.line)
    plugin.check_observed_k(most_drafts(rows), k, what="the TensorRT-LLM iteration rows", path=paths[0])
    steps = sum(s.steps for s in scans)
    if steps <= 0:
        raise plugin.NoVerifyStepsError("the TensorRT-LLM iteration rows count zero requests with draft tokens: AL is "
                                        "undefined")
    accepted = sum(s.accepted for s in scans)
    drafted = sum(s.drafted for s in scans)
    notes = [*tally.notes, f"{len(rows)} iteration row(s): accepted {accepted} / draft tokens {drafted} over "
             f"{steps} request-steps (numRequestsWithDraftTokens)"]
    idle = sum(s.without_stats for s in scans)
    if idle:
        notes.append(f"{idle} iteration row(s) without specDecodingStats (no generation request drafted)")
    other = sum(s.other_ranks for s in scans)
    if other:
        notes.append(f"{other} row(s) of attention-DP ranks other than 0 left out (they repeat rank 0's counters)")
    if drafted < k * steps:
        notes.append(f"{k * steps - drafted} of {k * steps} draft slots were not proposed (steps near a "
                     "request's end, or a draft length below k)")
    realized = units.al_from_counts(accepted, steps)
    windows = tuple((float(r.accepted), float(r.requests)) for r in rows if r.requests > 0)
    return plugin.RunEvidence(ENGINE, "trtllm iteration stats", realized, steps, steps, steps, len(rows), tuple(notes),
                              windows=windows)
