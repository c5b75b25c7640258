"""``golden-al verify``: does a real run still reproduce its golden AL?

A golden curve claims what a real target and draft accept; images, drafts and kernels change under it. ``verify``
reads a real (not synthetic) run's acceptance from the evidence golden-al reads, with its interval over the
independent units it rests on, and compares it with the golden value at that k *and the golden's own interval*
(:func:`distributions.equivalence.equivalence_test`): ``consistent`` (equivalent within the band), ``drifted``
(outside it with confidence, direction and size named), or ``inconclusive`` (with the number of units that would
decide it).

Evidence:

* a measurement directory (``measurement.json`` and its ``requests.jsonl``): the interval over its clusters
  (requests), recomputed at 90 % and 95 % by the one AL interval (:func:`distributions.uncertainty.al_interval_result`);
* a sweep directory (every measurement under it): one verdict per (k, thinking mode);
* engine logs, read by each engine's own reader (its profile's ``run_evidence``): per-request lines are independent
  units; log lines of one server are consecutive windows, correlated, so they are grouped into at most
  :data:`MAX_BLOCKS` contiguous blocks (batch means) before the interval;
* two Prometheus snapshots hold one window: no interval can be built from them, and the verdict says so.

The run's provenance (prompt set, sampler, sizes) is compared with the golden's (:func:`provenance_differences`):
another prompt set or sampler is another population, and the verdict is ``inconclusive`` whatever the numbers say.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distributions.equivalence import EquivalenceResult, equivalence_test
from distributions.uncertainty import al_interval_result, al_intervals_batch
from golden_al.errors import UsageError

__all__ = [
    "MAX_BLOCKS",
    "GoldenRef",
    "RunAL",
    "VerifyResult",
    "blocks",
    "correlation_time",
    "curve_provenance",
    "provenance_differences",
    "run_from_evidence",
    "run_from_record",
    "run_from_windows",
    "verify_run",
]

#: the provenance verify compares, and whether a difference is decisive: another prompt set or sampler measures
#: another population, so it makes the verdict inconclusive; another size (prompts, output budget) samples the same
#: population and is only said (AL moves along a response, so a different budget is named).
PROVENANCE_FIELDS = (("dataset", True), ("temperature", True), ("top_p", True), ("top_k", True),
                     ("prompts", False), ("max_tokens", False))

#: consecutive log windows are grouped into at most this many contiguous blocks (batch means)
MAX_BLOCKS = 20
EXIT_CODES = {"consistent": 0, "drifted": 1, "inconclusive": 3}


@dataclass(frozen=True)
class RunAL:
    """A real run's AL and its intervals, with what they rest on."""

    source: str  #: ``measurement``, or the engine evidence's source (``sglang decode log``, ...)
    path: str
    al: float
    ci90: tuple[float, float] | None  #: None: the evidence holds one window, no interval can be built
    ci95: tuple[float, float] | None
    units: int
    unit: str  #: ``request``, ``block of log lines``, ``counter window``
    k: int
    thinking: str | None = None
    model: str | None = None
    method: str | None = None
    engine: str | None = None
    notes: tuple[str, ...] = ()
    remeasure: str | None = None  #: the command that would measure this cell again
    #: the curve selectors the server reported (``server.curve_selectors``): which curve of the model it realizes
    selectors: tuple[tuple[str, str], ...] = ()
    #: what it measured (:data:`PROVENANCE_FIELDS`); empty for logs, which do not say
    provenance: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GoldenRef:
    """The golden value a run is compared with."""

    al: float
    ci95: tuple[float, float] | None
    what: str  #: ``golden M thinking_on k=3 = 2.49 [curve]`` or ``--expect-al 2.49``
    curve: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)  #: the curve's (:func:`curve_provenance`)


@dataclass(frozen=True)
class VerifyResult:
    """One verdict (the JSON of ``verify --format json``)."""

    run: RunAL
    golden: GoldenRef
    test: EquivalenceResult | None  #: None when the run holds no interval
    verdict: str
    reason: str
    notes: tuple[str, ...] = field(default=())

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        t = self.test
        return {
            "verdict": self.verdict, "reason": self.reason, "path": self.run.path, "source": self.run.source,
            "k": self.run.k, "thinking": self.run.thinking, "model": self.run.model, "engine": self.run.engine,
            "measured_al": round(self.run.al, 6),
            "measured_ci95": None if self.run.ci95 is None else [round(x, 6) for x in self.run.ci95],
            "units": self.run.units, "unit": self.run.unit,
            "golden_al": self.golden.al,
            "golden_ci95": None if self.golden.ci95 is None else list(self.golden.ci95),
            "golden": self.golden.what, "curve": self.golden.curve,
            "band": None if t is None else t.band,
            "relative_diff": None if t is None else round(t.relative_diff, 6),
            "diff_ci90": None if t is None else [round(x, 6) for x in t.diff_ci90],
            "diff_ci95": None if t is None else [round(x, 6) for x in t.diff_ci95],
            "direction": None if t is None else t.direction,
            "needed_units": None if t is None else t.needed_units,
            "remeasure": self.run.remeasure if self.verdict == "drifted" else None,
            "provenance": {"run": self.run.provenance, "golden": self.golden.provenance, "differences": [
                {"field": f, "run": a, "golden": b, "decisive": d}
                for f, a, b, d in provenance_differences(self.run.provenance, self.golden.provenance)]},
            "notes": [*self.run.notes, *self.notes],
        }


def correlation_time(windows: Sequence[tuple[float, float]]) -> float:
    """The integrated autocorrelation time of a run's window residuals ``a_i - r s_i`` (``r`` the run's ratio):
    ``1 + 2 sum rho_l`` over the initial run of positive autocorrelations (Geyer's initial positive sequence), in
    windows. 1.0: no correlation seen; a request that spans many windows makes it large."""
    a = np.asarray([w[0] for w in windows], dtype=float)
    s = np.asarray([w[1] for w in windows], dtype=float)
    if a.size < 4 or s.sum() <= 0:
        return 1.0
    e = a - (a.sum() / s.sum()) * s
    e = e - e.mean()
    var = float(np.dot(e, e))
    if var <= 0:
        return 1.0
    tau = 1.0
    for lag in range(1, a.size // 2):
        rho = float(np.dot(e[:-lag], e[lag:])) / var
        if rho <= 0:
            break
        tau += 2.0 * rho
    return tau


def blocks(windows: Sequence[tuple[float, float]], *, independent: bool) -> tuple[list[float], list[float]]:
    """Independent units of a run: the windows themselves when independent (requests); else contiguous blocks of
    consecutive windows, each at least three correlation times long (:func:`correlation_time`), at most
    :data:`MAX_BLOCKS` and at least 2 (a short, strongly correlated log gives few blocks, so a wide interval)."""
    if independent:
        return [a for a, _ in windows], [s for _, s in windows]
    n = len(windows)
    count = max(2, min(MAX_BLOCKS, int(n // math.ceil(3.0 * correlation_time(windows)))))
    acc, st = [], []
    for b in range(count):
        part = windows[b * n // count:(b + 1) * n // count]
        acc.append(math.fsum(a for a, _ in part))
        st.append(math.fsum(s for _, s in part))
    return acc, st


def _intervals(acc: Sequence[float], steps: Sequence[float], k: int) -> tuple[float, tuple[float, float],
                                                                               tuple[float, float], int]:
    """(AL, 90 % and 95 % intervals, units): at each level the union of the one AL interval (the hull of a
    studentized cluster bootstrap and CR2 on the logit scale) and the delta-method t interval on n - 1 degrees of freedom, the wider at each end. With few units the
    bootstrap alone undercovers (``experiments/verify-calibration``), and a verdict must not rest on that."""
    keep = [(a, s) for a, s in zip(acc, steps, strict=True) if s > 0]
    a_arr = np.asarray([[a for a, _ in keep]])
    s_arr = np.asarray([[s for _, s in keep]])
    out = []
    for confidence in (0.90, 0.95):
        boot = al_interval_result(acc, steps, confidence=confidence, draft_len=k)
        lo_t, hi_t = al_intervals_batch(a_arr, s_arr, method="delta-t", confidence=confidence)
        cap = float(k + 1)
        out.append((boot.al, (min(boot.low, float(lo_t[0])), min(cap, max(boot.high, float(hi_t[0])))), boot.clusters))
    (al, ci90, n), (_, ci95, _) = out
    return al, ci90, ci95, n


def run_from_record(directory: Path) -> RunAL:
    """A measurement directory's AL, with intervals at 90 % and 95 % over its clusters.

    Raises:
        InputFileError: no readable ``measurement.json``; UsageError: a derived (not measured) record.
    """
    from golden_al.measure.records import load_record, read_request_results
    from golden_al.measure.schema import MEASUREMENT_FILE
    from golden_al.measure.totals import clusters_from_requests

    rec = load_record(directory / MEASUREMENT_FILE)
    if rec.derived:
        raise UsageError(f"{directory}: a derived record (from k={rec.derived_from_draft_len}) is not a measurement "
                         "of the run", hint="verify the measured record it was derived from")
    notes: list[str] = []
    per_request = directory / rec.per_request_file if rec.per_request_file else None
    if per_request is not None and per_request.is_file():
        acc, steps, unit = clusters_from_requests(read_request_results(per_request), rec.draft_len)
        al, ci90, ci95, n = _intervals(acc, steps, rec.draft_len)
    else:
        al, n, unit = rec.al, rec.uncertainty.clusters if rec.uncertainty else 0, "cluster"
        ci95 = (float(rec.al_ci95[0]), float(rec.al_ci95[1]))
        from statistics import NormalDist

        scale = NormalDist().inv_cdf(0.95) / NormalDist().inv_cdf(0.975)
        ci90 = (al - (al - ci95[0]) * scale, al + (ci95[1] - al) * scale)
        notes.append("no requests.jsonl beside the record: its 95% interval is scaled to 90%")
    if rec.estimate:
        notes.append("the record's counts are expectations (sampled replay), not a real run")
    selectors = dict(rec.server.curve_selectors or {}) if rec.server is not None else {}
    ds, sm = rec.dataset, rec.sampling
    provenance = {"dataset": ds.name + (f":{ds.category}" if ds.category else ""), "prompts": ds.count,
                  "temperature": sm.temperature, "top_p": sm.top_p, "top_k": sm.top_k, "max_tokens": sm.max_tokens}
    return RunAL("measurement", str(directory), al, tuple(ci90), tuple(ci95), n, unit, rec.draft_len,  # type: ignore[arg-type]
                 thinking=rec.thinking, model=rec.target.name, method=rec.draft_method, engine=rec.engine,
                 notes=tuple(notes), remeasure=_remeasure(rec), selectors=tuple(sorted(selectors.items())),
                 provenance=provenance)


def _remeasure(rec: Any) -> str:
    """The command that measures a record's cell again: its models (or engine and server), k, thinking mode, and its
    own prompts, sizes and sampler, so that it measures what the record measured."""
    from shlex import quote

    ds, sm = rec.dataset, rec.sampling
    where = (f"--target {quote(rec.target.name)} --draft {quote(rec.draft.name)}" if rec.engine == "reference" else
             f"--engine {rec.engine}" + (f" --server {quote(rec.server.url)}" if rec.server and rec.server.url else ""))
    first_n = ds.selection is None or ds.selection == list(range(ds.count))  # else a shard: the whole set holds it
    return (f"golden-al measure {where} --draft-len {rec.draft_len} --thinking {rec.thinking} "
            f"--prompts {quote(ds.source or ds.name)}" + (f" --num-prompts {ds.count}" if first_n else "")
            + f" --max-tokens {sm.max_tokens} --temperature {sm.temperature:g} --top-p {sm.top_p:g}"
            + (f" --seed {sm.seed}" if sm.seed is not None else ""))


def curve_provenance(curve: Any, thinking: str) -> dict[str, Any]:
    """What a golden curve says it measured in ``thinking`` mode (:data:`PROVENANCE_FIELDS`; None: not said)."""
    ds, blk = curve.dataset, curve.mode(thinking)
    sm = blk.sampling if blk is not None else None
    return {"dataset": None if ds is None else ds.name + (f":{ds.category}" if ds.category else ""),
            "prompts": None if ds is None else ds.num_prompts,
            **{f: None if sm is None else getattr(sm, f) for f in ("temperature", "top_p", "top_k")},
            "max_tokens": None if blk is None else blk.output_len}


def provenance_differences(run: dict[str, Any], golden: dict[str, Any]) -> list[tuple[str, Any, Any, bool]]:
    """``(field, run's, golden's, decisive)`` for each :data:`PROVENANCE_FIELDS` entry both name and that differs
    (dataset names compared without case or punctuation; top_p and top_k not at all when both decode greedily)."""
    greedy = run.get("temperature") == 0 and golden.get("temperature") == 0

    def norm(v: Any) -> Any:
        return "".join(c for c in v.casefold() if c.isalnum() or c == ":") if isinstance(v, str) else float(v)

    return [(f, run[f], golden[f], decisive) for f, decisive in PROVENANCE_FIELDS
            if run.get(f) is not None and golden.get(f) is not None and not (greedy and f in ("top_p", "top_k"))
            and norm(run[f]) != norm(golden[f])]


def run_from_evidence(files: Sequence[str | Path], *, engine: str, k: int, decode_log_interval: int,
                      batch_size: float | None = None) -> RunAL:
    """A real run's AL from an engine's logs (or two snapshots), with its intervals over independent units."""
    from golden_al.measure.evidence import evidence_from_files

    ev = evidence_from_files(files, engine, k, decode_log_interval=decode_log_interval, batch_size=batch_size)
    path = ", ".join(map(str, files))
    if len(ev.windows) < 2:
        return RunAL(ev.source, path, ev.realized_al, None, None, 1, "counter window", k, engine=engine,
                     notes=(*ev.notes, "the evidence is one window: no interval can be built from it"))
    run = run_from_windows(ev.windows, unit=ev.window_unit, k=k, source=ev.source, path=path)
    return dataclasses.replace(run, engine=engine, notes=(*ev.notes, *run.notes))


def run_from_windows(windows: Sequence[tuple[float, float]], *, unit: str, k: int, source: str = "windows",
                     path: str = "") -> RunAL:
    """A run's AL from its windows ``(accepted drafts, verify steps)`` in order: ``request`` windows are independent
    units; any other unit (log lines) is consecutive and correlated, so the interval rests on :func:`blocks` of them.
    The sample-size projection counts windows: a longer run adds windows (the blocks grow, their number stays)."""
    independent = unit == "request"
    acc, steps = blocks(windows, independent=independent)
    al, ci90, ci95, n = _intervals(acc, steps, k)
    notes = () if independent else (f"{len(windows)} consecutive {unit}s of one server are correlated: the interval "
                                    f"rests on {n} contiguous blocks of them (batch means)",)
    return RunAL(source, path, al, ci90, ci95, len(windows), unit, k, notes=notes)


def verify_run(run: RunAL, golden: GoldenRef, *, band: float) -> VerifyResult:
    """The verdict of one run against its golden value."""
    if run.ci90 is None or run.ci95 is None:
        return VerifyResult(run, golden, None, "inconclusive",
                            "the evidence holds no interval (one counter window): pass the server's log lines, or a "
                            "measurement directory with per-request counts")
    test = equivalence_test(run.al, run.ci90, run.ci95, golden.al, golden.ci95, units=run.units, band=band)
    reason = test.reason.replace(" units ", f" {run.unit}s " if not run.unit.endswith("s") else f" {run.unit} ")
    diffs = provenance_differences(run.provenance, golden.provenance)
    notes = tuple(f"{f}: the run {a}, the golden {b}" for f, a, b, decisive in diffs if not decisive)
    said = ", ".join(f"{f} {v:g}" if isinstance(v, float) else f"{f} {v}" for f, v in golden.provenance.items()
                     if v is not None)
    if said and not run.provenance:
        notes += (f"the evidence does not say which prompts or sampler the run used; the golden's: {said}",)
    if decisive := [(f, a, b) for f, a, b, d in diffs if d]:
        return VerifyResult(run, golden, test, "inconclusive", (
            "not the golden's population: the run measured " + ", ".join(f"{f} {a}" for f, a, _ in decisive)
            + ", the golden " + ", ".join(f"{f} {b}" for f, _, b in decisive) + f"; AL depends on the prompts and "
            f"the sampler, so its {test.relative_diff:+.1%} says nothing of drift (at face value: {test.verdict}); "
            f"verify a run of the golden's own ({said})"), notes)
    return VerifyResult(run, golden, test, test.verdict, reason, notes)
