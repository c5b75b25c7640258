"""vLLM's check-run evidence: ``SpecDecoding metrics`` lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from distributions import units
from golden_al import plugin

from . import PROFILE
from .logs import VllmSpecDecodingRecord

ENGINE = PROFILE.name


def read(files: Sequence[str | Path], k: int, *, decode_log_interval: int) -> plugin.RunEvidence:
    """vLLM's evidence from its log files (see :mod:`golden_al.plugin.evidence`)."""
    logs, other = plugin.read_logs(files, ENGINE)
    recs = [r for _, scan in logs for r in scan.of(ENGINE) if isinstance(r, VllmSpecDecodingRecord)]
    if not recs:
        raise plugin.no_lines(f"vLLM '{PROFILE.log_pattern('spec-head').marker}' lines", logs, other)
    for name, scan in logs:  # now that k is known: AL <= k+1, at most k positions, drafted <= k*drafts
        for r in scan.of(ENGINE):
            if isinstance(r, VllmSpecDecodingRecord):
                plugin.check_counts(what="vLLM SpecDecoding line", accepted=r.accepted_tokens, drafted=r.drafted_tokens,
                                    k=k, al=r.mean_acceptance_length, per_position=r.per_position_rates or None,
                                    path=name, line=r.line_no)
    plugin.check_observed_k(max(len(r.per_position_rates) for r in recs) or None, k, path=logs[0][0],
                            what="the vLLM SpecDecoding lines (a per-position rate for each draft position)")
    accepted = sum(r.accepted_tokens for r in recs)
    drafted = sum(r.drafted_tokens for r in recs)
    notes = [n for _, scan in logs for n in scan.notes]
    notes.append(f"{len(recs)} SpecDecoding line(s): Accepted {accepted} / Drafted {drafted} tokens; "
                 f"request-steps = Drafted / k")
    if drafted % k:
        notes.append(f"Drafted {drafted} is not a multiple of k={k} (grammar-invalidated drafts, or a wrong "
                     "--draft-len)")
    steps = drafted / k
    if steps <= 0:
        raise plugin.NoVerifyStepsError("the vLLM lines report zero drafted tokens: AL is undefined")
    plugin.check_counts(what="vLLM SpecDecoding lines (totals)", accepted=accepted, drafted=drafted, path=logs[0][0])
    notes.append("vLLM never logs the last partial interval; stop the server >= 11 s after the last request "
                 "for complete totals")
    realized = units.al_from_counts(accepted, steps)
    windows = tuple((float(r.accepted_tokens), r.drafted_tokens / k) for r in recs)
    return plugin.RunEvidence(ENGINE, "vllm SpecDecoding log", realized, steps, steps, steps, len(recs), tuple(notes),
                              windows=windows)
