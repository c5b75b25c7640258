"""llama-server's check-run evidence: its per-request ``draft acceptance`` lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from distributions import units
from golden_al import plugin

from . import FIXED_K_HINT, FLAG_N_MAX, LOG_DRAFT_ACCEPTANCE_MARKER, PROFILE
from .logs import scan_lines

ENGINE = PROFILE.name


def read(files: Sequence[str | Path], k: int, *, decode_log_interval: int) -> plugin.RunEvidence:
    """llama-server's per-request ``draft acceptance = ...`` lines (:mod:`golden_al.engines.llamacpp.logs`).

    With ``--spec-draft-n-min`` = ``--spec-draft-n-max`` = k every verify step drafts k
    tokens, so a request's verify steps are ``generated / k`` exactly; each request-step
    draws its own L (one mt19937 stream per request).
    """
    tally = plugin.LineTally()
    scans = [scan_lines(plugin.iter_lines(f), source=str(f), tally=tally) for f in files]
    lines = [(scan.source, r) for scan in scans for r in scan.requests]
    if not lines:
        names = ", ".join(str(scan.source) for scan in scans)
        raise plugin.InputFileError(f"no {PROFILE.launch.executable} '{LOG_DRAFT_ACCEPTANCE_MARKER}...' lines in "
                                    f"{names}",
                                    hint="pass the llama-server log of the run (one line per finished request with drafts)")
    accepted = generated = 0
    for name, r in lines:
        if r.generated % k:
            raise plugin.InputFileError(f"line {r.line}: {r.generated} drafted tokens is not a multiple of k={k}: the server "
                                        f"did not draft a fixed length (or --draft-len is not its {FLAG_N_MAX})",
                                        path=name, hint=FIXED_K_HINT)
        accepted += r.accepted
        generated += r.generated
    steps = generated / k
    if steps <= 0:
        raise plugin.NoVerifyStepsError("the llama-server lines report zero drafted tokens: AL is undefined")
    notes = [*tally.notes, f"{len(lines)} request line(s): accepted {accepted} / drafted {generated} tokens; "
             "verify steps = drafted / k"]
    synth = [s for scan in scans for s in scan.synthetic if s.n_max is not None]
    for s in synth:
        if s.n_max != k:
            notes.append(f"the server's synthetic schedule has n_max = {s.n_max}, not k={k}")
        notes.append(f"the server logged its synthetic schedule: mean length {s.mean_len:g} over n_max = {s.n_max}")
    if not any(scan.synthetic for scan in scans):
        notes.append("no synthetic-acceptance startup line in the log(s): was the run injected? (real acceptance "
                     "can pass or fail by chance)")
    realized = units.al_from_counts(accepted, steps)
    windows = tuple((float(r.accepted), r.generated / k) for _name, r in lines)
    return plugin.RunEvidence(ENGINE, "llamacpp request log", realized, steps, steps, steps, len(lines), tuple(notes),
                              windows=windows, window_unit="request")
