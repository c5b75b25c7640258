"""How a config's settings name one golden value: thinking mode, model, curve method, the point itself.

``check`` compares a pin with this value and ``select`` writes it: both resolve through these functions, so
the recipe ``select`` plans is what ``check`` calls a ``match`` (one rule, one home).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from golden_al.checks.findings import ModelName, ThinkingSignal
from golden_al.errors import AmbiguousCurveError, UsageError

__all__ = ["curve_method", "golden_point", "methods_of", "resolve_model", "resolve_thinking"]


def resolve_thinking(signals: Sequence[ThinkingSignal]) -> tuple[str | None, str]:
    if not signals:
        return "on", ("assumed: nothing in the config sets the thinking mode; thinking on assumed "
                      "(InferenceX's THINKING_MODE default and the models' chat-template default)")
    top = max(s.priority for s in signals)
    best = [s for s in signals if s.priority == top]
    modes = {s.mode for s in best}
    sources = "; ".join(dict.fromkeys(s.source for s in best))
    if len(modes) > 1:
        return None, f"conflicting settings: {sources}"
    mode = best[0].mode
    overridden = [s for s in signals if s.priority < top and s.mode != mode]
    if overridden:
        sources += " (overrides " + "; ".join(dict.fromkeys(s.source for s in overridden)) + ")"
    return mode, sources


def resolve_model(models: Sequence[ModelName], store: Any, methods: Sequence[str] = ()) -> tuple[
        str | None, str | None, str]:
    """(store key, display name, how). A name that fits models of several methods is resolved among
    the curves of the pin's own method (``methods``: what its engine and algorithm can mean)."""
    if not models:
        return None, None, "the config names no model"
    if store is None:
        return None, models[0].name, "no golden store"
    tried = []
    for m in models:
        if m.pattern:
            keys = store.models_matching(m.name)
            if len(keys) == 1:
                return keys[0], keys[0], f"model {m.name!r} ({m.source}) -> {keys[0]}"
            if keys:
                return None, m.name, f"ambiguous: {m.name!r} ({m.source}) fits {len(keys)} models: {', '.join(keys)}"
            tried.append(f"{m.name!r} ({m.source})")
            continue
        try:
            key = store.resolve_model(m.name)
        except AmbiguousCurveError as exc:
            scoped = _resolve_by_method(store, m.name, methods)
            if scoped is None:
                return None, m.name, f"ambiguous: {exc}"
            key, method = scoped
            return key, key, f"model {m.name!r} ({m.source}) -> {key} (among the {method} curves)"
        if key:
            return key, key, f"model {m.name!r} ({m.source}) -> {key}"
        tried.append(f"{m.name!r} ({m.source})")
    return None, models[0].name, "no curve for " + ", ".join(tried)


def _resolve_by_method(store: Any, name: str, methods: Sequence[str]) -> tuple[str, str] | None:
    """The one model ``name`` means among the curves of one of ``methods``, with that method."""
    hits = set()
    for method in dict.fromkeys(methods):
        try:
            key = store.resolve_model(name, method=method)
        except AmbiguousCurveError:
            return None
        if key:
            hits.add((key, method))
    return hits.pop() if len(hits) == 1 else None


def methods_of(engine: str, algorithm: str | None) -> list[str]:
    """Every golden-curve method an engine's algorithm can mean (EAGLE/NEXTN: the model's own head, mtp or eagle3)."""
    from golden_al.golden.store import OWN_HEAD_METHODS, curve_method_for

    if not algorithm:
        return []
    if str(algorithm).strip().lower().replace("_", "-") in ("eagle", "nextn"):
        return list(OWN_HEAD_METHODS)
    try:
        return [curve_method_for(engine, algorithm)]
    except UsageError:
        return []


def curve_method(store: Any, engine: str, algorithm: str | None, model: str) -> str | None:
    """The golden-curve method an engine's algorithm spelling runs for ``model`` (None: no algorithm).

    Raises:
        UsageError: a spelling the engine refuses.
    """
    return store.method_for(engine, algorithm, model) if algorithm else None


def golden_point(store: Any, *, model: str, thinking: str, k: int, method: str | None, draft_model: str | None,
                 draft_sample_method: str | None, rejection_sample_method: str | None, engine: str,
                 spec: Mapping[str, Any]) -> Any:
    """The one golden value a config's settings select: ``check`` compares a pin with it and ``select``
    writes it (one rule for both). ``spec``: what the engine's review reads of the settings, from which its
    profile names the curve selectors (:meth:`~golden_al.engines.profile.EngineProfile.selectors`).

    Raises:
        NoGoldenValueError, AmbiguousCurveError, UsageError: as :meth:`GoldenStore.lookup`; UsageError also for
            settings whose selectors cannot be read (naming the setting).
    """
    from golden_al.engines import get_profile

    try:
        selectors = get_profile(engine).selectors(spec, k)
    except UsageError as exc:
        raise UsageError(f"curve selectors: {exc.message}", hint=exc.hint) from None
    return store.lookup(model, thinking, k, method=method, draft_model=draft_model,
                        draft_sample_method=draft_sample_method, rejection_sample_method=rejection_sample_method,
                        selectors=selectors)
