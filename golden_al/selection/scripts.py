"""``select`` for a shell launch script: the environment it must be started with.

A launch script (InferenceX ``benchmarks/single_node/**.sh``) fixes k, the algorithm and the model in its launch
command; with no pin in it, the harness passes the synthetic settings in the script's environment. The script is
read by ``check``'s own shell reader (every path, every branch), so the value is the one ``check`` would prove:
a probe copy of the script (same file name, since InferenceX names the model in it) exports each environment
engine's settings at its top, the reader ties them to the launch command on every path, and the golden value of
each path's settings is looked up exactly as ``check`` looks it up. The probe is never run.

An engine whose settings the script writes itself (a vLLM ``--speculative-config`` built in the script, an ATOM
flag) cannot take them from the environment: such a script is refused with that reason.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from golden_al import engines
from golden_al.engines._values import format_value
from golden_al.errors import GoldenALError

__all__ = ["is_script", "plan_script"]

_SHELL_SUFFIXES = (".sh", ".bash", ".slurm")


def is_script(path: Path, text: str) -> bool:
    """Whether ``path`` is a shell script (its suffix, or a shell shebang)."""
    first = text.split("\n", 1)[0]
    return path.suffix.lower() in _SHELL_SUFFIXES or (first.startswith("#!") and ("sh" in first.rsplit("/", 1)[-1]))


def _probe(text: str, settings: dict[str, Any]) -> tuple[str, int]:
    """The script with ``settings`` exported at its top (after a shebang), and the first line they take."""
    lines = text.split("\n")
    head = 1 if lines and lines[0].startswith("#!") else 0
    exports = [f"export {k}={v}" for k, v in settings.items()]
    return "\n".join([*lines[:head], *exports, *lines[head:]]), head + 1


def plan_script(path: Path, text: str, identity: Any, store: Any) -> Any:
    """The plan of one launch script (a single variant, ``selector`` None). Raises SelectionError."""
    from golden_al.checks.census import census_shell, iter_pin_sites
    from golden_al.checks.scripts import extract_shell_pins
    from golden_al.selection.plan import Override, SelectionError, VariantPlan

    def refuse(problem: str, hint: str | None = None) -> SelectionError:
        return SelectionError(f"{path}: {problem}", hint=hint)

    if identity.spec_decoding is not None and identity.spec_decoding.strip().lower() == "none":
        return VariantPlan(None, None, None, None, None, None, None, (), "off", reason="SPEC_DECODING=none")
    if identity.mode == "eval-only":
        return VariantPlan(None, None, None, None, None, None, None, (), "eval-only",
                           reason="eval-only: the script's environment gets no synthetic setting")
    own = [o for o in iter_pin_sites(census_shell(text)) if not o.inert]
    if own:
        lines = ", ".join(sorted({str(o.line) for o in own}))
        raise refuse(f"the script already pins synthetic acceptance (line {lines})",
                     hint="remove the pin: the golden AL is passed in the script's environment at launch")
    found: list[tuple[str, Any, Any]] = []  # (engine, pin, golden point)
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="golden-al-select-") as tmp:
        probe_path = Path(tmp) / path.name
        for name in engines.engine_names():
            profile = engines.get_profile(name)
            if profile.command_line is not None or not any(k.kind == "env" and k.role == "value"
                                                           for k in profile.synthetic_knobs):
                continue
            probe, first = _probe(text, engines.synthetic_settings(name, 2.0, 1))
            probe_path.write_text(probe)
            pins, _diags = extract_shell_pins(probe, str(path), census=census_shell(probe))
            for pin in pins:
                if pin.engine != name or pin.line < first or pin.line >= first + 3:
                    continue
                if pin.agentic.agentic is False and identity.agentic is not True:
                    return VariantPlan(None, name, None, None, None, None, None, (), "off",
                                       reason=f"not an agentic benchmark ({pin.agentic.reason}): real acceptance")
                point, why = _golden_of(pin, identity, store)
                if point is not None:
                    found.append((name, pin, point))
                elif pin.draft.k is not None or pin.algorithm:
                    problems.append(f"{profile.display_name}: {why}")
    if not found:
        why = "; ".join(problems) or ("no launch command of an engine that reads its settings from the "
                                      "environment (SGLang, TensorRT-LLM) takes them on any path")
        raise refuse(f"cannot select: {why}",
                     hint="a script that writes its own speculative config (vLLM, ATOM) must read the value from a "
                          "variable the harness sets; or launch from a recipe")
    values = {(e, p.al, p.k, p.thinking) for e, _pin, p in found}
    if len(values) > 1:
        listing = "; ".join(f"{e} k={k} thinking {t.removeprefix('thinking_')}: {format_value(al)}"
                            for e, al, k, t in sorted(values))
        raise refuse(f"its paths need different golden values ({listing}); one environment cannot carry them",
                     hint="split the script, or fix the branch in the launcher")
    engine, pin, point = found[0]
    k = point.k
    try:
        settings = engines.synthetic_settings(engine, point.al, k)
    except GoldenALError as exc:
        raise refuse(exc.message, exc.hint) from None
    overrides = tuple(Override("set", ("env", key), value) for key, value in settings.items())
    thinking = point.thinking.removeprefix("thinking_")
    return VariantPlan(None, engine, point.method, k, thinking, point.al, point.curve, overrides,
                       "throughput", model=point.model,
                       reason=f"k={k} from {pin.draft.rule}; golden {point.model} {point.thinking} k={k} = "
                              f"{format_value(point.al)} [{point.curve}]")


def _golden_of(pin: Any, identity: Any, store: Any) -> tuple[Any, str]:
    """(the golden point of a probe pin, or None and why), resolved as ``check`` resolves it."""
    from golden_al.checks.findings import ModelName, ThinkingSignal
    from golden_al.checks.resolution import (
        curve_method,
        golden_point,
        methods_of,
        resolve_model,
        resolve_thinking,
    )
    from golden_al.configs.srt_slurm import curve_rejection_method

    if pin.draft.k is None:
        return None, f"the draft length is unknown: {pin.draft.problem}"
    signals = list(pin.thinking)
    if identity.thinking is not None:
        signals.append(ThinkingSignal(identity.thinking, identity.thinking_source, 0))
    thinking, how = resolve_thinking(signals)
    if thinking is None:
        return None, f"thinking mode: {how}"
    if identity.thinking is not None and thinking != identity.thinking:
        return None, f"{identity.thinking_source} says thinking {identity.thinking}, but the script runs {thinking}"
    models = [ModelName(identity.model, identity.model_source)] if identity.model else list(pin.models)
    key, _shown, model_how = resolve_model(models, store, methods_of(pin.engine, pin.algorithm))
    if key is None:
        return None, f"model: {model_how}"
    try:
        method = curve_method(store, pin.engine, pin.algorithm, key)
        point = golden_point(store, model=key, thinking=thinking, k=int(pin.draft.k), method=method,
                             draft_model=pin.draft_model, draft_sample_method=pin.draft_sample_method,
                             rejection_sample_method=curve_rejection_method(pin.rejection_sample_method))
    except GoldenALError as exc:
        return None, str(exc)
    return point, ""
