"""toyserve: a made-up serving engine, registered with golden-al by an entry point.

It exists to prove that an engine is a plugin: golden-al's commands and its CI gate cover it
without a line of golden-al changing. Its facts are deliberately unlike any built-in engine's:

* the synthetic knob is an environment variable counting *draft tokens only* (AL - 1), like
  TensorRT-LLM's, so a pin of 6.24 means AL 7.24;
* the draft length is ``--toy-draft-len K``, the served model ``--toy-model NAME``;
* the server is the executable ``toy-serve``;
* its log prints one line per interval, ``toyserve stats: steps=S accepted=A`` (verify
  request-steps and accepted draft tokens), which :func:`read_run_log` reads for ``check-run``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from golden_al.plugin import (
    CheckSupport,
    CommandLine,
    CommandLineReading,
    DraftLen,
    DraftLenRule,
    EngineProfile,
    LaunchSupport,
    RunLogSupport,
    ServerSupport,
    SimulateOption,
    SimulateSupport,
    Source,
    SyntheticKnob,
    UsageError,
    lazy,
)

KNOB = "TOYSERVE_FORCE_ACCEPTED"
FLAG_K = "--toy-draft-len"
FLAG_MODEL = "--toy-model"
_SRC = Source("example/toyserve", "toyserve/spec.py", "0.1.0")


def synthetic_settings(al: float, k: int, **_: Any) -> dict[str, Any]:
    """What toyserve reads to force acceptance length ``al`` at draft length ``k``."""
    if not 1.0 <= al <= k + 1:
        raise UsageError(f"toyserve cannot force AL {al} at k={k}", hint=f"an AL in [1, {k + 1}]")
    return {KNOB: f"{al - 1:.2f}"}


def _flag(args: Sequence[str], flag: str) -> str | None:
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def read(args: Sequence[str], env: Mapping[str, str]) -> CommandLineReading:
    """toyserve's reading of a launch line: k from ``--toy-draft-len``, the model from ``--toy-model``."""
    raw = _flag(args, FLAG_K)
    model = _flag(args, FLAG_MODEL)
    models = (model,) if model else ()
    if raw is None:
        return CommandLineReading(draft_problem=f"no {FLAG_K} on the toy-serve command line", models=models)
    try:
        k = int(raw)
    except ValueError:
        return CommandLineReading(draft_problem=f"{FLAG_K} {raw!r} is not an integer", models=models)
    return CommandLineReading(draft=DraftLen(k, f"k = {FLAG_K}"), algorithm="draft", models=models)


LOG_RE = re.compile(r"toyserve stats: steps=(\d+) accepted=(\d+)\s*$")


def read_run_log(files: Sequence[Any], k: int, *, decode_log_interval: int) -> Any:
    """check-run's evidence from toyserve logs: the ``stats`` lines summed, each count checked
    against k (at most k accepted drafts per step) before it is believed."""
    from golden_al.plugin import InputFileError, NoVerifyStepsError, RunEvidence, iter_lines

    steps = accepted = lines = 0
    for f in files:
        for n, line in iter_lines(f):
            m = LOG_RE.search(line)
            if m is None:
                continue
            s, a = int(m.group(1)), int(m.group(2))
            if a > k * s:
                raise InputFileError(f"line {n}: accepted={a} > k x steps = {k} x {s}", path=str(f))
            steps, accepted, lines = steps + s, accepted + a, lines + 1
    if not lines:
        raise InputFileError(f"no 'toyserve stats:' lines in {', '.join(map(str, files))}")
    if steps == 0:
        raise NoVerifyStepsError("the toyserve lines count zero steps: AL is undefined")
    return RunEvidence("toyserve", "toyserve stats log", 1 + accepted / steps, steps, steps, steps, lines,
                       (f"{lines} stats line(s): accepted {accepted} over {steps} steps",))


PROFILE = EngineProfile(
    name="toyserve",
    display_name="toyserve",
    algorithms=("draft",),
    draft_len_rules=(DraftLenRule("draft", f"k = {FLAG_K}", source=_SRC),),
    curve_methods={"draft": "draft-model"},
    sources=(_SRC,),
    check=CheckSupport(
        synthetic_knobs=(SyntheticKnob(KNOB, "env", "al-1", source=_SRC),),
        synthetic_settings=synthetic_settings,
        command_line=CommandLine(value_knobs={KNOB: KNOB}, read=read),
    ),
    server=ServerSupport(
        server_probe=lazy("golden_al_toy_engine.server:probe"),
        al_sources=("toyserve-per-request",),
        source_impls={"toyserve-per-request": lazy("golden_al_toy_engine.server:PER_REQUEST")},
    ),
    launch=LaunchSupport(
        executable="toy-serve",
    ),
    simulate=SimulateSupport(
        default_sampler="force",
        samplers={"force": lazy("golden_al_toy_engine:ToyForce")},
        simulate_options=(SimulateOption("--toy-mix", "mix", choices=("mixed", "floor"),
                                         help="mixed (floor and ceil, mean AL; default) or floor (always floor(AL))"),),
        simulate_report=lambda sampler, al, k, settings: {"toy_mix": sampler.mix},
    ),
    run_logs=RunLogSupport(
        run_evidence=lazy("golden_al_toy_engine:read_run_log"),
    ),
)


# ------------------------------------------------------------------ its sampler, named by the profile like a built-in's

import math  # noqa: E402

import numpy as np  # noqa: E402

from distributions.acceptance import AcceptanceDistribution  # noqa: E402
from golden_al.plugin import EngineSampler  # noqa: E402


class ToyForce(EngineSampler):
    """toyserve forces floor(AL) or ceil(AL) tokens per request-step, mixed to the mean."""

    engine = "toyserve"
    method = "force"
    draw_unit = "request-step"
    guarantees_mean = True
    upstream = "example/toyserve toyserve/spec.py 0.1.0"
    summary = "per request-step: L = floor(AL) or ceil(AL), mixed so that the mean is AL"

    def __init__(self, mix: str = "mixed") -> None:
        self.mix = mix

    def pmf(self, al: float, k: int) -> AcceptanceDistribution:
        al, k = self.check(al, k)
        probs = np.zeros(k + 1)
        lo = math.floor(al)
        frac = al - lo if self.mix == "mixed" else 0.0
        probs[lo - 1] += 1.0 - frac
        if frac > 0:
            probs[lo] += frac
        return AcceptanceDistribution.from_pmf(probs)

    def simulate(self, al: float, k: int, size: int, rng: np.random.Generator) -> np.ndarray:
        return self.sample(al, k, size, rng)
