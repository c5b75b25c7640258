"""``golden-al select``: the golden AL a launch recipe or script must run with (launch-time selection).

A recipe is planned on the recipes floor (:func:`golden_al.recipes.plan.plan_document`: srtctl overrides for every
variant); a shell launch script here, by the script reader ``check`` uses (:mod:`golden_al.knobs.scripts`).

    >>> from golden_al.selection import select_recipe
    >>> from golden_al.recipes.derive import Identity, derive
    >>> plan = select_recipe("recipe.yaml", identity=Identity(thinking="on"))   # doctest: +SKIP
    >>> [o.srtctl_args() for o in plan.variants[0].overrides]                    # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from golden_al.errors import GoldenALError
from golden_al.plugin import registry
from golden_al.plugin.values import format_value
from golden_al.recipes.derive import Identity, derive
from golden_al.recipes.plan import SelectionError, SelectionPlan, VariantPlan, plan_document
from golden_al.recipes.srt_slurm import recipe_document
from golden_al.recipes.srtctl import Override

__all__ = ["select_recipe"]


def select_recipe(path: str | Path, *, selector: str | None = None, identity: Identity | None = None,
                  store: Any = None, golden_dir: str | Path | None = None,
                  caller: Sequence[Override] = ()) -> SelectionPlan:
    """The launch overrides of every variant of the recipe at ``path`` (the Python form of ``golden-al select``).

    ``store``: a loaded :class:`~golden_al.golden.store.GoldenStore` (else ``golden_dir``, else the shipped
    curves). Raises :class:`SelectionError` (or another exit-2 error) when any variant cannot be selected.
    """
    from golden_al import __version__, safeio
    from golden_al.golden import load_store
    from golden_al.safeio.inputs import text_input

    identity = identity or Identity()
    p = Path(path)
    text = safeio.read_text(p)
    if store is None:
        store = load_store(golden_dir)
    provenance = {"golden_al_version": __version__, "golden_dir": str(store.root) if store.root else None,
                  "selector": selector, "mode": identity.mode, "caller_overrides": [c.to_dict() for c in caller]}

    identity = Identity(**{**identity.__dict__, "inputs": (*identity.inputs, text_input("file", str(p), text))})
    if is_script(p, text):
        if selector is not None or caller:
            raise SelectionError(f"{p}: a launch script has no variants or srtctl overrides (selector {selector!r}, "
                                 f"{len(caller)} caller override(s))", hint="pass the script alone")
        return SelectionPlan(str(p), (plan_script(p, text, identity, store),), {**provenance, "kind": "script"})
    data, _node = recipe_document(text, p)
    plans = plan_document(data, path=str(p), selector=selector, identity=identity, store=store, caller=caller)
    return SelectionPlan(str(p), plans, {**provenance, "kind": "recipe"})


# ------------------------------------------------------------------ a shell launch script
# ``select`` for a shell launch script: the environment it must be started with.
#
# A launch script (InferenceX ``benchmarks/single_node/**.sh``) fixes k, the algorithm and the model in its launch
# command; the harness passes the synthetic settings in its environment. A probe text of the script (never written or
# run) exports each environment engine's settings at its top; ``check``'s shell reader ties them to the launch command
# on every path, and each path's golden point is derived as ``check`` derives it
# (:func:`golden_al.recipes.derive.derive`). A script that writes its own settings (a vLLM config, ATOM flags) is
# refused.

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
    from golden_al.knobs.census import census_shell, iter_pin_sites
    from golden_al.knobs.scripts import extract_shell_pins

    def refuse(problem: str, hint: str | None = None) -> SelectionError:
        return SelectionError(f"{path}: {problem}", hint=hint)

    own = [o for o in iter_pin_sites(census_shell(text)) if not o.inert]  # in force in every mode: refused
    if own:
        lines = ", ".join(sorted({str(o.line) for o in own}))
        raise refuse(f"the script already pins synthetic acceptance (line {lines})",
                     hint="remove the pin: the golden AL is passed in the script's environment at launch")
    if identity.spec_decoding is not None and identity.spec_decoding.strip().lower() == "none":
        return VariantPlan(None, None, None, None, None, None, None, (), "off", reason="SPEC_DECODING=none")
    if identity.mode == "eval-only":
        return VariantPlan(None, None, None, None, None, None, None, (), "eval-only",
                           reason="eval-only: the script's environment gets no synthetic setting")
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
