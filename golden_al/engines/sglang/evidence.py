"""SGLang's check-run evidence: ``Decode batch`` lines (``scheduler_metrics_mixin.py``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from golden_al import plugin

from . import PROFILE, decode_window
from .logs import SglangDecodeRecord

ENGINE = PROFILE.name


def read(files: Sequence[str | Path], k: int, *, decode_log_interval: int) -> plugin.RunEvidence:
    """SGLang's evidence from its log files (see :mod:`golden_al.plugin.evidence`): each decode line
    weighted by its request-steps, on its ``decode_log_interval`` batch steps."""
    interval = decode_log_interval
    if interval < 1:
        raise plugin.UsageError(f"--decode-log-interval must be >= 1, got {interval}")
    logs, other = plugin.read_logs(files, ENGINE)
    for name, scan in logs:
        for r in scan.of(ENGINE):
            if isinstance(r, SglangDecodeRecord) and r.accept_len is not None and r.running_req > 0:
                plugin.check_counts(what="SGLang decode line", al=r.accept_len, k=k, path=name, line=r.line_no)
    recs = [r for _, scan in logs for r in scan.of(ENGINE) if isinstance(r, SglangDecodeRecord)]
    usable = [r for r in recs if r.accept_len is not None and math.isfinite(r.accept_len) and r.running_req > 0]
    if not usable:
        if recs:
            raise plugin.InputFileError(f"{len(recs)} SGLang decode line(s) but none carries 'accept len' with a running "
                                        "batch (speculative decoding off?)", path=logs[0][0])
        raise plugin.no_lines(f"SGLang '{PROFILE.log_pattern('decode-head').marker}' lines", logs, other)
    weights = [decode_window(r.accept_len, r.running_req, interval)[0] for r in usable]  # type: ignore[arg-type]
    total = math.fsum(weights)
    realized = math.fsum(w * r.accept_len for w, r in zip(weights, usable, strict=False)) / total  # type: ignore[operator]
    sum_sq = math.fsum(w * w / interval for w in weights)
    n_eff = total * total / sum_sq
    per_batch: dict[int, int] = {}
    for r in usable:
        per_batch[r.running_req] = per_batch.get(r.running_req, 0) + 1
    line_weights = tuple((interval * b / total, n) for b, n in sorted(per_batch.items()))
    notes = [n for _, scan in logs for n in scan.notes]
    notes += [f"{len(usable)} decode line(s) x {interval} batch steps; #running-req "
             f"{min(r.running_req for r in usable)}..{max(r.running_req for r in usable)}"]
    if len(usable) < len(recs):
        notes.append(f"{len(recs) - len(usable)} decode line(s) without accept len skipped")
    if any(r.dp_rank is not None for r in usable) and len({r.dp_rank for r in usable}) > 1:
        notes.append("lines from several DP ranks are counted as independent batches (each rank draws its own L)")
    notes.append("#running-req is the batch size when the line was written; the interval's own batch sizes "
                 "are not logged")
    windows = tuple((acc, steps) for steps, acc in (decode_window(r.accept_len, r.running_req, interval)  # type: ignore[arg-type]
                                                       for r in usable))
    return plugin.RunEvidence(ENGINE, "sglang decode log", realized, total, float(interval * len(usable)), n_eff,
                              len(usable), tuple(notes), steps_per_line=interval, line_weights=line_weights,
                              windows=windows)
