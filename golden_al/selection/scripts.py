"""``select`` for a shell launch script: the environment it must be started with.

A launch script (InferenceX ``benchmarks/single_node/**.sh``) fixes k, the algorithm and the model in its launch
command; the harness passes the synthetic settings in its environment. A probe text of the script (never written or
run) exports each environment engine's settings at its top; ``check``'s shell reader ties them to the launch command
on every path, and each path's golden point is derived as ``check`` derives it
(:func:`golden_al.recipes.derive.derive`). A script that writes its own settings (a vLLM config, ATOM flags) is
refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from golden_al.errors import GoldenALError
from golden_al.plugin import registry
from golden_al.plugin.values import format_value

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
    from golden_al.recipes.derive import derive
    from golden_al.recipes.srtctl import Override
    from golden_al.selection.plan import SelectionError, VariantPlan

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
    found: list[tuple[str, Any, Any]] = []  # (engine, pin, its golden)
    problems: list[str] = []
    for name in registry.engine_names():
        profile = registry.get_profile(name)
        if profile.check.command_line is not None or not any(k.kind == "env" and k.role == "value"
                                                       for k in profile.check.synthetic_knobs):
            continue
        exported = registry.synthetic_settings(name, 2.0, 1)
        probe, first = _probe(text, exported)
        pins, _diags = extract_shell_pins(probe, str(path), census=census_shell(probe))
        for pin in pins:
            if pin.engine != name or not first <= pin.line < first + len(exported):
                continue
            if pin.agentic.agentic is False and identity.agentic is not True:
                return VariantPlan(None, name, None, None, None, None, None, (), "off",
                                   reason=f"not an agentic benchmark ({pin.agentic.reason}): real acceptance")
            if pin.draft.k is None:
                if pin.algorithm:
                    problems.append(f"{profile.display_name}: the draft length is unknown: {pin.draft.problem}")
                continue
            golden = derive(pin, store, identity=identity, what="script")
            if golden.point is None:
                problems.append(f"{profile.display_name}: {golden.reason}")
                continue
            found.append((name, pin, golden))
    if not found:
        why = "; ".join(problems) or ("no launch command of an engine that reads its settings from the "
                                      "environment (SGLang, TensorRT-LLM) takes them on any path")
        raise refuse(f"cannot select: {why}",
                     hint="a script that writes its own speculative config (vLLM, ATOM) must read the value from a "
                          "variable the harness sets; or launch from a recipe")
    values = {(e, g.point.al, g.k, g.thinking) for e, _pin, g in found}
    if len(values) > 1:
        listing = "; ".join(f"{e} k={k} thinking {t}: {format_value(al)}" for e, al, k, t in sorted(values))
        raise refuse(f"its paths need different golden values ({listing}); one environment cannot carry them",
                     hint="split the script, or fix the branch in the launcher")
    engine, _pin, golden = found[0]
    point = golden.point
    try:
        settings = registry.synthetic_settings(engine, point.al, golden.k)
    except GoldenALError as exc:
        raise refuse(exc.message, exc.hint) from None
    overrides = tuple(Override("set", ("env", key), value) for key, value in settings.items())
    return VariantPlan(None, engine, point.method, golden.k, golden.thinking, point.al, point.curve, overrides,
                       "throughput", model=point.model, reason=golden.reason, derivation=golden)
