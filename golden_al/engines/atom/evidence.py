"""ATOM's check-run evidence: ``[MTP Stats]`` lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from distributions import units
from golden_al import plugin

from . import FLAG_K, PROFILE
from .logs import AtomMtpStatsRecord

ENGINE = PROFILE.name


def read(files: Sequence[str | Path], k: int, *, decode_log_interval: int) -> plugin.RunEvidence:
    """ATOM's evidence from its log files (see :mod:`golden_al.plugin.evidence`): the interval lines,
    or the last cumulative one when there are none."""
    logs, other = plugin.read_logs(files, ENGINE)
    recs = [r for _, scan in logs for r in scan.of(ENGINE) if isinstance(r, AtomMtpStatsRecord)]
    if not recs:
        raise plugin.no_lines(f"ATOM '{PROFILE.log_pattern('mtp-stats').marker} ...]' lines", logs, other)
    for name, scan in logs:
        for r in scan.of(ENGINE):
            if isinstance(r, AtomMtpStatsRecord):
                plugin.check_counts(what="ATOM MTP stats line", accepted=r.accepted_tokens, drafted=r.draft_tokens,
                                    drafts=r.draft_tokens / k, k=k, al=r.avg_tokens_per_forward, path=name, line=r.line_no)
                if r.accepted_tokens and r.avg_tokens_per_forward:  # toks/fwd = 1 + accepted / (drafted / K)
                    lo, hi = ((r.avg_tokens_per_forward - 1 + e) * r.draft_tokens / r.accepted_tokens for e in (-.0051, .0051))
                    plugin.check_observed_k(None if lo <= k <= hi else round((lo + hi) / 2), k, path=name,
                                            what=f"ATOM's toks/fwd and draft tokens (line {r.line_no})")
                above = [(j, pct) for j, pct in r.distribution_pct if j > k and pct > 0]
                if above:  # a step that accepted more than k drafts: the server ran another k
                    raise plugin.InputFileError(
                        f"ATOM's accepted-tokens distribution has steps that accepted more than k={k} drafts "
                        f"({', '.join(f'{j}: {pct:g}%' for j, pct in above)})", path=name, line=r.line_no,
                        hint=f"is --draft-len the server's {FLAG_K}?")
    intervals = [r for r in recs if r.kind == "interval"]
    use = intervals or [recs[-1]]
    accepted = sum(r.accepted_tokens for r in use)
    drafted = sum(r.draft_tokens for r in use)
    if drafted % k:
        raise plugin.InputFileError(f"ATOM charges k draft tokens per step, but {drafted} is not a multiple of k={k}",
                                    path=logs[0][0], hint=f"is --draft-len the server's {FLAG_K}?")
    steps = drafted / k
    if steps <= 0:
        raise plugin.NoVerifyStepsError("the ATOM lines report zero steps: AL is undefined")
    plugin.check_counts(what="ATOM MTP stats lines (totals)", accepted=accepted, drafted=drafted, drafts=steps, k=k,
                        path=logs[0][0])
    note = (f"{len(intervals)} interval line(s)" if intervals else "the last cumulative line (no interval lines)")
    realized = units.al_from_counts(accepted, steps)
    windows = tuple((float(r.accepted_tokens), r.draft_tokens / k) for r in use) if intervals else ()
    notes = (*(n for _, scan in logs for n in scan.notes), f"{note}: accepted {accepted} / draft tokens {drafted}")
    return plugin.RunEvidence(ENGINE, "atom MTP stats log", realized, steps, steps, steps, len(use), notes, windows=windows)
