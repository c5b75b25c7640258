"""``golden-al check-run``: did a run with injected acceptance actually achieve its target AL?

The evidence is what the engine itself reported (:mod:`golden_al.formats`): SGLang
``Decode batch`` log lines, vLLM ``SpecDecoding metrics`` lines, ATOM ``[MTP Stats]``
lines, or two Prometheus snapshots (before/after, told apart by their monotone
counters). The realized AL is compared with the injected one in units of the standard
error the engine's *sampler* implies (:mod:`simulators`: the exact pmf of ``L`` for
that engine and method at (AL, k)) over the number of independent draws:

* vLLM, ATOM (and TensorRT-LLM) draw ``L`` independently **per request-step**: the
  draws are the verify request-steps (vLLM ``Drafted / k`` per log line, or
  ``Δnum_drafts``; ATOM ``draft tokens / k``, or the step distribution).
* SGLang draws **one L per verify step for the whole batch**
  (``sample_simulated_acc_len`` has ``size=(1,)``), so a decode line at
  ``#running-req: 32`` rests on its ``--decode-log-interval`` (40) batch steps, not on
  1280 draws. Each line is weighted by its request-steps (interval x batch size) for the
  mean, as SGLang's own ``accept len`` is; the variance of that weighted mean is
  ``var(L) * sum(w_l^2 / I) / (sum w_l)^2``, i.e. the batch steps with Kish's effective
  count when batch sizes differ between lines, plus the rounding of the printed
  two-decimal value.

The decision rule holds its false-alarm rate at every log length. Its units are
independent: SGLang decode lines (each the mean of its interval's batch draws, then
printed to two decimals), or the request-steps / batch steps of the other sources,
whose counts are integers. For SGLang the law of one line's printed value is computed
exactly (the interval's batch draws convolved, then rounded with Python's formatting, as
SGLang prints it: :func:`distributions.uncertainty.printed_interval_law`). With a
constant batch over an interval that law's mean sits a little off the sampler's (+0.0021
at AL 4.05 over 40 steps); when the batch changes inside an interval the grid blurs and
the offset vanishes, so the expected realized AL is taken as the whole range between
the two. The run passes when the realized AL lies within that range widened by Chernoff
thresholds (:func:`distributions.uncertainty.chernoff_half_width`) at the one-sided tail
``exp(-Z^2/2)``, ``Z`` = ``--tolerance-sigma``: on long logs this is ``Z`` standard
errors, and at any length (one line of a skewed sampler included) a correctly injected
run fails with probability at most ``2 exp(-Z^2/2)`` (6.7e-4 at the default 4; about
``2(1 - Phi(Z))`` = 6.3e-5 on long logs). Calibrated by simulation with each engine's
sampler in ``experiments/check-run-calibration``. A sampler whose own mean differs from
the target (SGLang's ``multinomial`` near the bounds) is reported: such a run cannot
meet its target.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distributions import units
from distributions.uncertainty import (
    LatticeLaw,
    chernoff_half_width,
    gaussian_tail_for_sigma,
    printed_interval_law,
)
from golden_al.errors import (
    CounterSemanticsError,
    InputFileError,
    NoVerifyStepsError,
    UnreadableInputError,
    UsageError,
)
from golden_al.formats.counters import (
    SpecCounters,
    counters_delta,
    detect_engine,
    order_snapshots,
    spec_counters,
    validate_counters,
)
from golden_al.formats.prometheus import MetricsSnapshot, check_same_lifetime, read_metrics_file
from golden_al.plugin.evidence import RunEvidence

__all__ = [
    "DEFAULT_DECODE_LOG_INTERVAL",
    "DEFAULT_TOLERANCE_SIGMA",
    "SGLANG_ACCEPT_LEN_DECIMALS",
    "RunCheckResult",
    "RunEvidence",
    "check_evidence",
    "check_run",
    "evidence_from_files",
    "false_alarm_bound",
]

#: SGLang ``--decode-log-interval`` default (``arg_groups/fields/observability.py``, 0.5.23).
DEFAULT_DECODE_LOG_INTERVAL = 40
#: Default tolerance in standard errors on long logs; false-alarm rate <= 2 exp(-Z^2/2) = 6.7e-4 at any length.
DEFAULT_TOLERANCE_SIGMA = 4.0
#: SGLang prints ``accept len`` with ``{:.2f}``.
SGLANG_ACCEPT_LEN_DECIMALS = 2


def false_alarm_bound(tolerance_sigma: float) -> float:
    """The most often a correctly injected run fails at ``--tolerance-sigma``: ``2 exp(-Z^2/2)``."""
    return 2.0 * gaussian_tail_for_sigma(tolerance_sigma)


@dataclass(frozen=True)
class RunCheckResult:
    """The verdict of ``check-run``."""

    engine: str
    method: str
    draft_len: int
    expected_al: float
    realized_al: float
    request_steps: float
    independent_draws: float
    effective_draws: float
    sampler_mean: float
    sampler_var: float
    std_error: float
    z_score: float
    tolerance_sigma: float
    tolerance: float
    accept_low: float
    accept_high: float
    false_alarm_bound: float
    passed: bool
    verdict: str
    source: str
    lines_used: int
    files: tuple[str, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: the golden value the target came from (``check-run --model --thinking``), or None (``--expect-al``)
    golden: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        d = asdict(self)
        d["files"] = list(self.files)
        d["warnings"] = list(self.warnings)
        for key in ("z_score", "std_error", "tolerance", "accept_low", "accept_high"):
            if isinstance(d[key], float) and not math.isfinite(d[key]):
                d[key] = str(d[key])
        return d


# ----------------------------------------------------------------------- the target


@dataclass(frozen=True)
class RunTarget:
    """The golden AL a run had to realize, looked up in the store, and where each input came from."""

    expect_al: float
    draft_len: int
    golden: dict[str, Any]
    point: Any = None  #: the :class:`~golden_al.golden.store.GoldenPoint` itself (its interval, for ``verify``)


def server_settings(files: Sequence[str | Path], engine: str) -> dict[str, Any]:
    """What the server logged about itself at start-up (model, speculative algorithm, k), for engines
    whose profile declares a ``server-args`` log line (SGLang's ``server_args=ServerArgs(...)``):
    ``{"model", "algorithm", "k", "line", "file"}``, each only when the log says it.

    Raises:
        InputFileError: two starts with different settings in the files (one run, one configuration).
    """
    from golden_al import safeio
    from golden_al.plugin.registry import get_profile, load_hook

    profile = get_profile(engine)
    if profile.run_logs.log_reader is None or profile.run_logs.log_reader.server_args is None:
        return {}
    parse = load_hook(profile.run_logs.log_reader.server_args)
    fields = profile.server.server_info_fields
    found: list[tuple[str, Any]] = []
    for f in files:
        if _looks_like_metrics(_head(f)):
            continue
        for n, line in safeio.iter_lines(f):
            rec = parse(line, n)
            if rec is not None:
                found.append((str(f), rec))
    if not found:
        return {}
    keys = [fields[x] for x in ("algorithm", "num_steps", "eagle_topk", "num_draft_tokens", "dflash_block_size",
                                "dspark_block_size", "model_path", "served_model_name") if x in fields]
    seen = {json.dumps([rec.args.get(key) for key in keys], default=str) for _, rec in found}
    if len(seen) > 1:
        raise InputFileError(f"{len(found)} server starts with different settings ("
                             + ", ".join(f"{f} line {rec.line_no}" for f, rec in found) + ")",
                             hint="check each run's log on its own")
    file, rec = found[0]
    args = rec.args
    out: dict[str, Any] = {"file": file, "line": rec.line_no}
    name = args.get(fields.get("served_model_name", "")) or args.get(fields.get("model_path", ""))
    if name:
        out["model"] = str(name)
    if args.get(fields.get("algorithm", "")):
        out["algorithm"] = str(args[fields["algorithm"]])
        try:
            out["k"] = profile_draft_len(engine, args)
        except UsageError:
            pass
    # the settings the engine's curve selectors read, by its server-info names (one spelling with /server_info)
    out["selector_spec"] = {short: args[key] for short, key in fields.items() if key in args}
    return out


def profile_draft_len(engine: str, server_info: Mapping[str, Any]) -> int:
    """k from what a server reports of itself (``/server_info`` or its start-up arguments), read by the
    engine's profile (:attr:`~golden_al.plugin.profile.ServerSupport.draft_len_from_server_info`).

    Raises:
        UsageError: the engine does not say how, or the settings do not fix k.
    """
    from golden_al.plugin.registry import get_profile

    profile = get_profile(engine)
    if profile.server.draft_len_from_server_info is None:
        raise UsageError(f"{profile.display_name} reports no draft length about itself")
    return int(profile.server.draft_len_from_server_info(server_info).k)


def logged_draft_len(files: Sequence[str | Path], engine: str, draft_len: int | None) -> tuple[int | None,
                                                                                             dict[str, Any]]:
    """(k of the run, what the server logged about itself): the log's k where it logs one, which a ``--draft-len``
    must agree with; else the flag (None: neither says).

    Raises:
        UsageError: a flag that contradicts the log. InputFileError: two starts with different settings.
    """
    logged = server_settings(files, engine)
    if draft_len is not None and logged.get("k") is not None and draft_len != logged["k"]:
        raise UsageError(f"--draft-len {draft_len} but the server's arguments ({logged.get('file')} line "
                         f"{logged.get('line')}) give k={logged['k']}",
                         hint="drop --draft-len, or check the log of the run you mean")
    return (draft_len if draft_len is not None else logged.get("k")), logged


def golden_target(files: Sequence[str | Path], *, engine: str, store: Any, thinking: str, model: str | None = None,
                  draft_len: int | None = None, algorithm: str | None = None,
                  selectors: Mapping[str, str] | None = None) -> RunTarget:
    """The golden AL the run had to realize: its (model, thinking mode, k, algorithm, selectors) derived as ``check``
    derives a recipe's (:func:`golden_al.recipes.derive.derive`, the same refusals).

    Model, algorithm and k come from the arguments or, where the engine logs them at start-up
    (:func:`server_settings`), from the files; given both, they must agree (a model by the derivation's rule).

    Raises:
        UsageError: no model or k, an argument that contradicts the log, or the derivation's refusal.
        NoGoldenValueError: no committed value (no curve, method or point).
    """
    k, logged = logged_draft_len(files, engine, draft_len)
    where = f"{logged.get('file')} line {logged.get('line')}" if logged else ""
    if algorithm is not None and logged.get("algorithm") is not None and \
            algorithm.strip().lower() != str(logged["algorithm"]).strip().lower():
        raise UsageError(f"--algorithm {algorithm} but the server's arguments ({where}) say {logged['algorithm']}")
    name = model or logged.get("model")
    algo = algorithm or logged.get("algorithm")
    if name is None:
        raise UsageError("check-run needs the model (--model) to look the golden AL up; the files do not name it",
                         hint="pass --model M, or --expect-al AL")
    if k is None:
        raise UsageError("check-run needs the draft length (--draft-len); the files do not give it",
                         hint="pass --draft-len K")
    from golden_al.prompts.thinking import REQUEST
    from golden_al.recipes.derive import Identity, derive, run_settings
    from golden_al.recipes.srt_slurm import ModelName

    chosen = _run_selectors(engine, logged, int(k), selectors, where)
    settings = run_settings(engine, int(k), f"the server's arguments ({where})" if "k" in logged and draft_len is None
                            else "--draft-len", algorithm=algo,
                            models=[ModelName(logged["model"], f"the server's arguments ({where})")]
                            if logged.get("model") else [])
    identity = Identity(model=model, thinking=thinking, thinking_priority=REQUEST)
    point = derive(settings, store, identity=identity, what="run", selectors=chosen).require(
        ", ".join(map(str, files)))
    golden = {"model": point.model, "thinking": point.thinking, "k": point.k, "al": point.al, "curve": point.curve,
              "method": point.method, "source": str(point.source),
              "from_log": {key: logged[key] for key in ("model", "algorithm", "k") if key in logged
                           and {"model": model, "algorithm": algorithm, "k": draft_len}[key] is None},
              "log": where or None, "selectors": chosen or None}
    return RunTarget(point.al, int(k), golden, point)


def _run_selectors(engine: str, logged: Mapping[str, Any], k: int, given: Mapping[str, str] | None,
                   where: str) -> dict[str, str]:
    """The curve selectors of the run: what its logged start-up settings say (the engine's profile reads them),
    which ``--selector`` must agree with; ``--selector`` alone where the log does not say.

    Raises:
        UsageError: a ``--selector`` that contradicts the log, naming both values.
    """
    from golden_al.plugin.registry import get_profile

    given = dict(given or {})
    if "selector_spec" not in logged:
        return given
    seen = get_profile(engine).selectors(logged["selector_spec"], k)
    if given and given != seen:
        shown = ", ".join(f"{key}={v}" for key, v in sorted(seen.items())) or "the engine's defaults"
        raise UsageError(f"--selector {', '.join(f'{key}={v}' for key, v in sorted(given.items()))} but the "
                         f"server's arguments ({where}) run {shown}", hint="drop --selector: the log says it")
    return seen


# ----------------------------------------------------------------------- reading


def _looks_like_metrics(text: str) -> bool:
    head = text[:4096]
    return "# TYPE " in head or "# HELP " in head or any(
        line and not line.startswith("#") and ("_total" in line.split(" ")[0] or "{" in line.split(" ")[0])
        and len(line.split(" ")) == 2 for line in head.splitlines()[:5])


def _head(path: str | Path) -> str:
    """The first lines of a file (regular files only: a FIFO or device is refused unopened)."""
    from golden_al import safeio

    lines = []
    for n, line in safeio.iter_lines(path):
        lines.append(line)
        if n >= 5:
            break
    return "\n".join(lines)


def evidence_from_files(files: Sequence[str | Path], engine: str, k: int, *,
                        decode_log_interval: int = DEFAULT_DECODE_LOG_INTERVAL,
                        batch_size: float | None = None,
                        labels: dict[str, str] | None = None) -> RunEvidence:
    """Realized AL and its sample size from two Prometheus snapshots, or from the engine's logs read
    by the reader its profile names (``run_evidence``, :mod:`golden_al.plugin.evidence`).

    Raises:
        UsageError: a single snapshot, snapshots mixed with other files, SGLang counters without
            ``batch_size``, or an engine whose profile names no log reader.
        InputFileError: no usable line in the files.
        CounterResetError: a counter went backwards between the snapshots.
        NoVerifyStepsError: the window holds no verify step.
    """
    from golden_al.plugin.registry import engine_names, get_profile, load_hook

    if not files:
        raise UsageError("no input files")
    snapshots: list[tuple[MetricsSnapshot, SpecCounters]] = []
    others: list[str | Path] = []
    for f in files:
        if _looks_like_metrics(_head(f)):
            try:
                snap = read_metrics_file(f)
            except (CounterSemanticsError, UnreadableInputError):
                raise
            except InputFileError:
                snap = None
            if snap is not None and detect_engine(snap) is not None:
                snapshots.append((snap, spec_counters(snap, engine if detect_engine(snap) == engine else None,
                                                      labels)))
                continue
        others.append(f)
    if snapshots:
        if others:
            raise UsageError(f"mix of Prometheus snapshots and other files ({', '.join(map(str, others))} "
                             "holds no speculative-decoding counters)", hint="pass either two snapshots or logs")
        if len(snapshots) != 2:
            raise UsageError(f"{len(snapshots)} Prometheus snapshot(s) given; check-run needs exactly two "
                             "(before and after the run)")
        return _from_snapshots(snapshots, engine, batch_size, k)
    profile = get_profile(engine)
    if profile.run_logs.run_evidence is None:
        readers = [p.display_name for p in map(get_profile, engine_names()) if p.run_logs.run_evidence]
        raise UsageError(f"golden-al reads no log of {profile.display_name} (its profile names no run_evidence)",
                         hint=f"pass two Prometheus snapshots, or use the logs of {', '.join(readers)}")
    reader = load_hook(profile.run_logs.run_evidence)
    evidence: RunEvidence = reader(others, k, decode_log_interval=decode_log_interval)
    return evidence


def _from_snapshots(snapshots: list[tuple[MetricsSnapshot, SpecCounters]], engine: str,
                    batch_size: float | None, k: int | None = None) -> RunEvidence:
    engines = {c.engine for _, c in snapshots}
    if engines != {engine}:
        raise UsageError(f"the snapshots hold {', '.join(sorted(engines))} counters, but --engine is {engine}")
    # Never order across server lifetimes: a restart makes "by their counters" meaningless.
    check_same_lifetime(snapshots[0][0], snapshots[1][0])
    (snap_a, before), (snap_b, after) = order_snapshots(snapshots)
    d = counters_delta(before, after)
    validate_counters(d, k)
    steps = d.num_verify_steps
    if steps <= 0:
        raise NoVerifyStepsError(f"{snap_a.source} -> {snap_b.source}: zero verify steps between the snapshots",
                                 hint="was the run sent between the two scrapes?")
    notes = [f"before: {snap_a.source}; after: {snap_b.source} (ordered by their counters)"]
    draws, how = d.independent_draws(batch_size)
    notes.extend(how)
    return RunEvidence(engine, "prometheus delta", d.al, steps, draws, draws, 2, tuple(notes))


# ------------------------------------------------------------------------ checking


def check_run(files: Sequence[str | Path], *, expect_al: float, draft_len: int, engine: str,
              method: str | None = None, tolerance_sigma: float = DEFAULT_TOLERANCE_SIGMA,
              decode_log_interval: int = DEFAULT_DECODE_LOG_INTERVAL, batch_size: float | None = None,
              labels: dict[str, str] | None = None, golden: dict[str, Any] | None = None,
              rates: Sequence[float] | None = None) -> RunCheckResult:
    """Compare a run's realized AL with ``expect_al`` (see the module docstring).

    ``rates``: the per-position (unconditional) rates the run was injected with (vLLM
    ``synthetic_acceptance_rates``, llama.cpp ``--spec-synth-rates``): the run is then judged
    with the exact law those rates give, not the law of a length injection.

    Raises:
        UsageError / DistributionError: bad arguments (unknown engine or method, AL
            outside [1, k+1], a non-positive tolerance).
        InputFileError / NoVerifyStepsError / CounterResetError: unusable input.
    """
    from golden_al.plugin.registry import profile_or_usage

    profile_or_usage(engine)
    k = units.check_draft_len(draft_len)
    units.check_al(expect_al, k)
    ev = evidence_from_files(files, engine, k, decode_log_interval=decode_log_interval, batch_size=batch_size,
                             labels=labels)
    result = check_evidence(ev, expect_al=expect_al, draft_len=k, method=method, tolerance_sigma=tolerance_sigma,
                            files=tuple(str(f) for f in files), rates=rates)
    return dataclasses.replace(result, golden=golden) if golden is not None else result


def rates_sampler(engine: str, method: str, rates: Sequence[float], k: int, expect_al: float | None) -> Any:
    """The ``(engine, method)`` sampler injected with per-position unconditional ``rates``.

    Raises:
        UsageError: the sampler takes no rates, the rates are invalid for k (the engine's own
            validation and message), or they do not give ``expect_al`` (to half a unit of its
            second decimal, the precision of a golden AL).
    """
    from golden_al.plugin.registry import get_sampler
    from simulators.base import SamplerError

    try:
        sampler = get_sampler(engine, method, rates=list(rates))
    except TypeError:
        raise UsageError(f"{engine}/{method} is not injected with per-position rates",
                         hint="drop --rates, or name the method that takes them (--method)") from None
    try:
        implied = float(sampler.pmf(None, k).mean())  # type: ignore[arg-type]  # a rates sampler: no AL
    except SamplerError as exc:
        raise UsageError(f"--rates {', '.join(f'{r:g}' for r in rates)} at k={k}: {exc.message}",
                         hint=exc.hint) from None
    if expect_al is not None and abs(implied - expect_al) > 0.005 + 1e-9:
        raise UsageError(f"the rates {', '.join(f'{r:g}' for r in rates)} give AL {implied:.4f}, not the expected "
                         f"{expect_al:g}: the run was injected with another target",
                         hint="inject rates whose 1 + sum is the golden AL")
    return sampler


def check_evidence(ev: RunEvidence, *, expect_al: float, draft_len: int, method: str | None = None,
                   tolerance_sigma: float = DEFAULT_TOLERANCE_SIGMA, files: tuple[str, ...] = (),
                   rates: Sequence[float] | None = None) -> RunCheckResult:
    """The decision rule of :func:`check_run` on evidence already read (see the module docstring).

    With ``rates`` the law is the one those rates give (:func:`rates_sampler`) and the expected
    AL is theirs, ``1 + sum(rates)``, which must round to ``expect_al``.
    """
    from golden_al.plugin.registry import get_profile, get_sampler

    engine = ev.engine
    k = units.check_draft_len(draft_len)
    al = units.check_al(expect_al, k)
    if not (tolerance_sigma > 0 and math.isfinite(tolerance_sigma)):
        raise UsageError(f"--tolerance-sigma must be > 0, got {tolerance_sigma!r}")
    if method is None:
        method = get_profile(engine).simulate.default_sampler
        if method is None:
            raise UsageError(f"{engine} names no default sampler for its synthetic knob", hint="pass --method")
    if rates is not None:
        sampler = rates_sampler(engine, method, rates, k, al)
        pmf = sampler.pmf(None, k)
        al = float(pmf.mean())
    else:
        sampler = get_sampler(engine, method)
        pmf = sampler.pmf(al, k)
    s_mean, s_var = float(pmf.mean()), float(pmf.var())
    if ev.steps_per_line is not None:
        # SGLang decode lines: the exact law of one printed line (constant batch over the interval)
        law = printed_interval_law(pmf.probs, ev.steps_per_line, SGLANG_ACCEPT_LEN_DECIMALS)
        groups = [(law, w, float(n)) for w, n in ev.line_weights]
        offset = law.mean() - s_mean
    else:
        law = LatticeLaw(values=pmf.support.astype(np.float64), probs=pmf.probs)
        groups = [(law, 1.0 / ev.effective_draws, float(ev.effective_draws))]
        offset = 0.0
    se = math.sqrt(math.fsum(w * w * n * law.var() for law, w, n in groups))
    t_low, t_high = chernoff_half_width(groups, gaussian_tail_for_sigma(tolerance_sigma))
    accept_low = al + min(offset, 0.0) - t_low
    accept_high = al + max(offset, 0.0) + t_high
    expected_line_mean = al + offset
    if se > 0:
        z = (ev.realized_al - expected_line_mean) / se
    else:
        z = 0.0 if abs(ev.realized_al - expected_line_mean) <= 1e-9 else math.copysign(
            math.inf, ev.realized_al - expected_line_mean)
    slack = 1e-9 * max(1.0, al)
    passed = accept_low - slack <= ev.realized_al <= accept_high + slack
    tol = max(al - accept_low, accept_high - al)
    warnings = list(ev.notes)
    if abs(s_mean - al) > 1e-9:
        warnings.append(f"the {engine}/{method} sampler's own mean at AL {al:g}, k={k} is {s_mean:.4f}, not {al:g}: "
                        "this configuration cannot realize its target")
    warnings += sampler.warnings(al, k)
    if rates is not None:
        warnings.append(f"judged with the law of the injected per-position rates [{', '.join(f'{r:g}' for r in rates)}] "
                        f"(AL {al:.4f}, variance {s_var:.4f}), not that of a length injection")
    if ev.realized_al > k + 1 + 1e-9:
        warnings.append(f"realized AL {ev.realized_al:.4f} exceeds k+1 = {k + 1}: is --draft-len right?")
    return RunCheckResult(
        engine=engine, method=method, draft_len=k, expected_al=al, realized_al=ev.realized_al,
        request_steps=ev.request_steps, independent_draws=ev.independent_draws, effective_draws=ev.effective_draws,
        sampler_mean=s_mean, sampler_var=s_var, std_error=se, z_score=z, tolerance_sigma=tolerance_sigma,
        tolerance=tol, accept_low=accept_low, accept_high=accept_high,
        false_alarm_bound=false_alarm_bound(tolerance_sigma), passed=passed, verdict="pass" if passed else "fail", source=ev.source,
        lines_used=ev.lines_used, files=files, warnings=tuple(warnings),
    )
