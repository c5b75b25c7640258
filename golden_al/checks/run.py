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
import math
from collections.abc import Sequence
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
from golden_al.errors import UsageError
from golden_al.measure.evidence import DEFAULT_DECODE_LOG_INTERVAL, evidence_from_files
from golden_al.plugin.evidence import RunEvidence

__all__ = [
    "DEFAULT_TOLERANCE_SIGMA",
    "SGLANG_ACCEPT_LEN_DECIMALS",
    "RunCheckResult",
    "RunEvidence",
    "check_evidence",
    "check_run",
    "false_alarm_bound",
]

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
