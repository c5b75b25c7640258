"""The golden curve store: load curves, resolve model names, look up golden AL values.

:func:`load_store` reads every ``*.yaml``/``*.yml`` file of a directory (default: the
curves shipped in ``golden_al/golden/curves/``). Each file is detected on its own: a
mapping with ``schema_version`` is our schema (:mod:`golden_al.golden.schema`), anything
else the InferenceX legacy shape (:mod:`golden_al.golden.legacy`). A file that fails
to parse fails the whole load (a broken golden file is never skipped silently).

**Model names** (:meth:`GoldenStore.resolve_model`) resolve to a curve's ``model`` key
by these rules, first match wins, never by similarity:

1. the exact key or an exact alias;
2. the same, case-insensitively, after stripping surrounding quotes, an ``hf:``
   prefix and trailing ``/``;
3. for a repo id or path (``org/Name``, ``/data/models/Name``): its last component,
   matched against keys and aliases, then against the last component of aliases that
   are repo ids (so ``Name`` finds alias ``org/Name`` and ``other-org/Name`` finds it too);
4. for a bare name: the last component of aliases that are repo ids.

A step that matches two different models raises :class:`AmbiguousCurveError`; no
match returns None. Quantization suffixes are never stripped: a checkpoint maps to a
curve only through a listed alias.

**Curves** of one model are told apart by method (``mtp``, ``eagle3``, ``dspark``...)
and variant. :func:`curve_method_for` maps an engine's algorithm spelling to the curve
method (InferenceX's rule). When several curves remain, the recipe's draft model,
``draft_sample_method`` and ``rejection_sample_method`` choose among them (a curve that
declares a matching value wins over one that declares none); if that still leaves
several, lookups raise :class:`AmbiguousCurveError` listing them. A curve's ``selectors``
(engine settings that change real AL: a quantized draft head, block verification) must equal
the recipe's exactly, with no fallback: a recipe on the defaults never gets a selector curve.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from golden_al.errors import AmbiguousCurveError, NoGoldenValueError, SchemaError, UsageError
from golden_al.golden.schema import (
    GoldenCurve,
    load_yaml_roundtrip,
    parse_curve,
    to_plain,
)
from golden_al.plugin.profile import Record
from golden_al.plugin.values import format_value
from golden_al.prompts.thinking import mode_key
from golden_al.safeio.inputs import Input, shown_path, text_input

__all__ = [
    "OWN_HEAD_METHODS",
    "SHIPPED_CURVES_DIR",
    "GoldenPoint",
    "GoldenStore",
    "StoredCurve",
    "curve_method_for",
    "format_k_list",
    "load_store",
    "parse_al_pairs",
    "read_al_table",
    "read_curve_file",
]

#: The curves shipped with golden-al (package data).
SHIPPED_CURVES_DIR = Path(__file__).resolve().parent / "curves"

CurveFormat = Literal["golden-al", "inferencex-legacy"]


@dataclass(frozen=True, eq=False, repr=False)
class StoredCurve(Record):
    """A curve in the store, with the file it came from."""

    name: str  #: file stem (``<stem>:<model>`` for a legacy file holding several models)
    path: Path
    format: CurveFormat
    curve: GoldenCurve
    digest: str  #: SHA-256 of the file's bytes (an input of every verdict judged against the curve)

    @property
    def model(self) -> str:
        return self.curve.model

    @property
    def method(self) -> str:
        return self.curve.draft.method

    @property
    def variant(self) -> str | None:
        return self.curve.draft.variant

    def label(self) -> str:
        """``name (method mtp, variant gqa, draft X, draft_sample_method Y)`` for messages."""
        d = self.curve.draft
        bits = [f"method {d.method}"]
        bits += [f"variant {d.variant}"] if d.variant else []
        bits += [f"draft {d.model}"] if d.model else []
        bits += [f"draft_sample_method {d.draft_sample_method}"] if d.draft_sample_method else []
        bits += [f"rejection_sample_method {d.rejection_sample_method}"] if d.rejection_sample_method else []
        bits += [f"{key}={value}" for key, value in (d.selectors or {}).items()]
        return f"{self.name} ({', '.join(bits)})"


@dataclass(frozen=True, eq=False, repr=False)
class GoldenPoint(Record):
    """One committed golden value and where it comes from."""

    model: str
    thinking: str  #: ``thinking_on``, ``thinking_off`` or a level name
    k: int
    al: float
    ci95: tuple[float, float] | None
    num_verify_steps: int | None
    num_accepted_drafts: int | None
    per_position_accepted: tuple[int, ...] | None
    origin: str  #: ``measured`` or ``derived``
    method: str
    variant: str | None
    curve: str  #: the StoredCurve name
    source: Path  #: the file it was read from


def format_k_list(ks: Iterable[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3,5"``."""
    ks = sorted(set(ks))
    out: list[str] = []
    i = 0
    while i < len(ks):
        j = i
        while j + 1 < len(ks) and ks[j + 1] == ks[j] + 1:
            j += 1
        out.append(str(ks[i]) if i == j else f"{ks[i]}-{ks[j]}")
        i = j + 1
    return ",".join(out)


# -------------------------------------------------------------- engine -> curve method
#: The curve methods a model's own head can be served as by SGLang ``EAGLE``/``NEXTN`` (and vLLM ``eagle``): an MTP
#: head or an EAGLE-3 head. Which one a model has is read off its committed curves (their ``draft.method``), never
#: off a list of model names (:meth:`GoldenStore.method_for`).
OWN_HEAD_METHODS: tuple[str, ...] = ("mtp", "eagle3")


def curve_method_for(engine: str, algorithm: str, model: str | None = None) -> str:
    """The golden-curve method for an engine's speculative algorithm (InferenceX's rule).

    * SGLang ``--speculative-algorithm``: ``EAGLE``/``NEXTN`` are how SGLang serves a
      model's own head: ``mtp`` here, ``mtp`` or ``eagle3`` by the model's curves in
      :meth:`GoldenStore.method_for` (:data:`OWN_HEAD_METHODS`); ``EAGLE3`` -> ``eagle3``;
      ``DFLASH`` -> ``dflash``; ``DSPARK`` -> ``dspark``; ``NGRAM`` -> ``ngram``;
      ``STANDALONE`` -> ``draft-model``; ``FROZEN_KV_MTP`` -> ``mtp``.
    * vLLM ``speculative-config.method``: ``mtp`` and every ``*_mtp`` (``deepseek_mtp``,
      ``qwen3_next_mtp``, ...) -> ``mtp``; ``eagle``/``nextn`` as for SGLang; ``eagle3``,
      ``dflash``, ``dspark``, ``ngram``, ``draft_model`` -> themselves.
    * TensorRT-LLM ``speculative_config.decoding_type``: ``MTP``, ``Eagle3``, ``DFlash``,
      ``DSpark``, ``NGram``, ``DraftTarget`` (-> ``draft-model``); ``Eagle`` as above.
    * ATOM ``--method``: ``mtp``, ``eagle3``, ``dspark``.

    Without a store, ``EAGLE``/``NEXTN`` read as ``mtp``; :meth:`GoldenStore.method_for` decides between ``mtp``
    and ``eagle3`` from the model's committed curves. ``model`` is accepted for compatibility and not read.

    Raises:
        UsageError: an unknown engine or algorithm.
    """
    from golden_al.plugin import registry

    eng = engine.strip().lower()
    raw = str(algorithm).strip()
    low = raw.lower().replace("_", "-")
    profile = registry.profile_or_usage(eng)
    if low in ("eagle", "nextn"):
        return OWN_HEAD_METHODS[0]
    if profile.curve_method_of is not None:  # the engine's own reading (it may refuse the spelling)
        found = profile.curve_method_of(raw)
        if found is not None:
            return found
    elif low in profile.curve_methods:
        return profile.curve_methods[low]
    known = ", ".join(dict.fromkeys(profile.curve_methods))
    raise UsageError(f"unknown {profile.display_name} speculative method {algorithm!r}", hint=f"one of {known}")


# ---------------------------------------------------------------------------- names
def _name_tokens(name: str) -> set[str]:
    """Lower-case tokens of the last path part of a model name (``Org/M-EAGLE3-GQA`` -> m, eagle3, gqa)."""
    return {t for t in re.split(r"[^a-z0-9.]+", name.lower().rsplit("/", 1)[-1]) if t}


def _variant_named_by(variant: str | None, draft_model: str) -> bool:
    """Whether every token of ``variant`` is a token of the draft model's name."""
    if not variant:
        return False
    return set(variant.lower().replace("_", "-").split("-")) <= _name_tokens(draft_model)


def _norm(name: str) -> str:
    s = str(name).strip().strip("'\"").strip()
    if s.lower().startswith("hf:"):
        s = s[3:]
    return s.rstrip("/").casefold()


def _last(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _name_maps(curves: Sequence[StoredCurve]) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set[str]]]:
    """(exact name, normalised name, repo-name tail) -> model keys, over ``curves``."""
    exact: dict[str, set[str]] = {}
    full: dict[str, set[str]] = {}
    tail: dict[str, set[str]] = {}
    for sc in curves:
        for name in (sc.model, *sc.curve.aliases):
            exact.setdefault(name, set()).add(sc.model)
            n = _norm(name)
            full.setdefault(n, set()).add(sc.model)
            if "/" in n:
                tail.setdefault(_last(n), set()).add(sc.model)
    return exact, full, tail


class GoldenStore:
    """The curves of one golden directory, with name resolution and lookups."""

    def __init__(self, curves: Sequence[StoredCurve], *, root: Path | None = None) -> None:
        self.curves: tuple[StoredCurve, ...] = tuple(curves)
        self.root = root
        self._exact, self._full, self._tail = _name_maps(self.curves)
        self._by_method: dict[str, tuple[dict[str, set[str]], ...]] = {}
        self._inputs: dict[tuple[str | None, str], tuple[Input, ...]] = {}

    # -- listing
    def models(self) -> list[str]:
        """Every model key, sorted."""
        return sorted({sc.model for sc in self.curves})

    def describe(self) -> str:
        """One line: every curve with its modes and draft lengths (for error messages)."""
        if not self.curves:
            return "the store has no curves"
        parts = []
        for sc in self.curves:
            modes = "; ".join(f"{m} k={format_k_list(b.points)}" for m, b in sc.curve.modes().items())
            parts.append(f"{sc.model} [{sc.label()}: {modes}]")
        return "known curves: " + ", ".join(parts)

    def inputs(self, model: str | None = None) -> tuple[Input, ...]:
        """What a lookup of ``model`` (a store key) reads, as verdicts name it: the files of its curves (every method
        and variant: which one applies depends on them all), then the store's listing (``<dir>/``: adding or
        removing a file can change the answer); with no model (none resolved), every file."""
        key = (model, os.getcwd())  # names are relative to the working directory
        if key not in self._inputs:
            def name(p: Path) -> str:
                return f"<shipped>/{p.name}" if p.parent == SHIPPED_CURVES_DIR else shown_path(p)

            files = dict.fromkeys((sc.path, sc.digest) for sc in self.curves if model in (None, sc.model))
            listing = "\n".join(sorted({sc.path.name for sc in self.curves}))
            root = "<shipped>" if self.root in (None, SHIPPED_CURVES_DIR) else shown_path(self.root)
            self._inputs[key] = (*(Input("curve", name(p), d) for p, d in files),
                                 text_input("curve", root + "/", listing))
        return self._inputs[key]

    # -- names
    def _one(self, hits: set[str], name: str, rule: str) -> str | None:
        if len(hits) == 1:
            return next(iter(hits))
        if len(hits) > 1:
            raise AmbiguousCurveError(
                f"model name {name!r} matches several models by {rule}: {', '.join(sorted(hits))}",
                hint="pass the model key exactly",
            )
        return None

    def resolve_model(self, name: str, *, method: str | None = None) -> str | None:
        """The curve model key that ``name`` means, or None (rules in the module docstring).

        ``method``: resolve among the curves of that draft method only (a name such as
        InferenceX's ``dsv4`` prefix may be an alias of one model's MTP curve and of another
        model's DSpark curve; the pin's method says which it means).

        Raises:
            AmbiguousCurveError: when one rule matches two different models.
        """
        if not str(name).strip():
            return None
        exact, full, tail = self._maps(method)
        hit = self._one(exact.get(str(name), set()), name, "exact name")
        if hit:
            return hit
        n = _norm(name)
        hit = self._one(full.get(n, set()), name, "case-insensitive name")
        if hit:
            return hit
        if "/" in n:
            base = _last(n)
            hit = self._one(full.get(base, set()), name, f"last path component {base!r}")
            if hit:
                return hit
            return self._one(tail.get(base, set()), name, f"repo name {base!r}")
        return self._one(tail.get(n, set()), name, "repo name")

    def _maps(self, method: str | None) -> tuple[dict[str, set[str]], ...]:
        if method is None:
            return self._exact, self._full, self._tail
        if method not in self._by_method:
            self._by_method[method] = _name_maps([sc for sc in self.curves if sc.method == method])
        return self._by_method[method]

    def models_matching(self, pattern: str) -> list[str]:
        """Model keys with a name (key or alias) that the shell glob ``pattern`` matches, case-insensitively."""
        pat = _norm(pattern)
        return sorted({m for name, models in self._full.items() if fnmatch.fnmatchcase(name, pat) for m in models})

    def _require_model(self, model: str, method: str | None = None) -> str:
        try:
            key = self.resolve_model(model)
        except AmbiguousCurveError:
            if method is None:
                raise
            key = self.resolve_model(model, method=method)  # the name is ambiguous only across methods
        if key is None:
            where = f" in {self.root}" if self.root else ""
            raise NoGoldenValueError(
                f"no golden curve for model {model!r}{where} (models: {', '.join(self.models()) or 'none'})",
                hint="'golden-al curves list' shows every model and its aliases; a checkpoint maps to a "
                     "curve only through a listed alias",
            )
        return key

    # -- curves
    def curves_for(self, model: str, method: str | None = None, variant: str | None = None) -> list[StoredCurve]:
        """Curves of ``model`` (any name form), optionally of one method and variant."""
        key = self._require_model(model, method)
        out = [sc for sc in self.curves if sc.model == key]
        if method is not None:
            out = [sc for sc in out if sc.method == method]
        if variant is not None:
            out = [sc for sc in out if variant in (sc.variant, sc.name)]
        return out

    def _narrow(self, model: str, method: str | None, variant: str | None, draft_model: str | None,
                draft_sample_method: str | None, rejection_sample_method: str | None,
                selectors: Mapping[str, str] | None) -> list[StoredCurve]:
        """The curves of ``model`` left after method, variant, selectors and draft settings (at least one).

        Raises:
            NoGoldenValueError: no such model, no curve of that method/variant, or none whose selectors
                equal ``selectors`` (None: the engine's defaults, i.e. a curve without selectors).
        """
        key = self._require_model(model, method)
        all_curves = [sc for sc in self.curves if sc.model == key]
        cands = self.curves_for(key, method, variant)
        if not cands:
            want = " ".join(x for x in (f"method {method!r}" if method else "",
                                        f"variant {variant!r}" if variant else "") if x)
            raise NoGoldenValueError(
                f"model {key!r} has no curve with {want} (curves: {'; '.join(sc.label() for sc in all_curves)})",
                hint="pass --method/--variant of one of these",
            )
        cands = _select(cands, dict(selectors or {}))
        if len(cands) > 1:
            cands = _choose(cands, "draft model", draft_model, lambda sc: sc.curve.draft.model, _same_model)
        if len(cands) > 1:
            cands = _choose(cands, "draft_sample_method", draft_sample_method,
                            lambda sc: sc.curve.draft.draft_sample_method, lambda a, b: a == b)
        if len(cands) > 1:
            cands = _choose(cands, "rejection_sample_method", rejection_sample_method,
                            lambda sc: sc.curve.draft.rejection_sample_method, lambda a, b: a == b)
        if len(cands) > 1 and draft_model:
            named = [sc for sc in cands if _variant_named_by(sc.variant, draft_model)]
            if len(named) == 1:  # the draft's own name carries the variant (...-EAGLE3-GQA -> gqa)
                cands = named
        return cands

    @staticmethod
    def _ambiguous(cands: list[StoredCurve], method: str | None) -> AmbiguousCurveError:
        return AmbiguousCurveError(
            f"model {cands[0].model!r} has {len(cands)} curves{' for method ' + repr(method) if method else ''}: "
            + "; ".join(sc.label() for sc in cands),
            hint="name the draft model (a recipe's speculative draft, or env/lookup --draft-model), "
            "its draft_sample_method, or the variant (env --variant)",
        )

    def curve(
        self,
        model: str,
        method: str | None = None,
        variant: str | None = None,
        *,
        draft_model: str | None = None,
        draft_sample_method: str | None = None,
        rejection_sample_method: str | None = None,
        selectors: Mapping[str, str] | None = None,
    ) -> StoredCurve:
        """The one curve of ``model`` selected by method, variant and draft settings.

        Raises:
            NoGoldenValueError: no such model or no curve of that method/variant
                (listing the curves that exist).
            AmbiguousCurveError: several curves remain (listing them); :meth:`lookup` merges
                the files of one curve split by k instead.
        """
        cands = self._narrow(model, method, variant, draft_model, draft_sample_method, rejection_sample_method,
                             selectors)
        if len(cands) > 1:
            raise self._ambiguous(cands, method)
        return cands[0]

    def lookup(
        self,
        model: str,
        thinking: str,
        k: int,
        *,
        method: str | None = None,
        variant: str | None = None,
        draft_model: str | None = None,
        draft_sample_method: str | None = None,
        rejection_sample_method: str | None = None,
        selectors: Mapping[str, str] | None = None,
    ) -> GoldenPoint:
        """The committed golden value for (model, thinking mode, draft length k).

        ``thinking`` is ``on``/``off`` (or ``thinking_on``/``thinking_off``) or a named
        level (``reasoning_effort_high``). A mode the curve lacks is answered by a mode
        the model family's thinking preset defines identically (DeepSeek-V4's ``on`` is
        ``reasoning_effort_high``); the point's ``thinking`` says which one was used.

        Several files of one curve (the same model, method, variant and draft settings, e.g.
        one per draft length measured) are merged by k: the value comes from the file that
        has this (mode, k); files that both have it must agree, or the lookup names both.

        Raises:
            NoGoldenValueError: the model, curve, mode or k has no committed value; the
                message lists what exists. Never interpolates or guesses.
            AmbiguousCurveError: several curves match (see :meth:`curve`), or files of one
                curve give (mode, k) different values.
        """
        try:
            mode = mode_key(thinking)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise UsageError(f"draft length k must be an integer >= 1, got {k!r}")
        cands = self._narrow(model, method, variant, draft_model, draft_sample_method, rejection_sample_method,
                             selectors)
        if len({_identity(sc) for sc in cands}) > 1:
            raise self._ambiguous(cands, method)
        found: list[GoldenPoint] = []
        missing: list[NoGoldenValueError] = []
        for sc in cands:
            try:
                found.append(_point(sc, mode, k))
            except NoGoldenValueError as exc:
                missing.append(exc)
        if not found:
            if len(missing) == 1:
                raise missing[0]
            have = "; ".join(f"{sc.name}: " + ", ".join(f"{m} k={format_k_list(b.points)}"
                                                        for m, b in sc.curve.modes().items()) for sc in cands)
            raise NoGoldenValueError(f"{cands[0].model} {mode}: none of its {len(cands)} curve files has k={k} "
                                     f"({have})", hint="pick a committed draft length; golden-al never interpolates")
        if len({p.al for p in found}) > 1:
            raise AmbiguousCurveError(
                f"{found[0].model} {found[0].thinking} k={k}: the curve files disagree: "
                + ", ".join(f"{p.curve}={format_value(p.al)}" for p in found),
                hint="keep one value per (model, method, mode, k) in the golden directory")
        return found[0]

    def method_for(self, engine: str, algorithm: str, model: str) -> str:
        """:func:`curve_method_for`, with a model's own head (SGLang ``EAGLE``/``NEXTN``) read off its curves:
        ``eagle3`` when the model's curves are EAGLE-3 curves, ``mtp`` when they are MTP curves (curve metadata,
        never a list of names).

        Raises:
            UsageError: an unknown algorithm, or a model with both MTP and EAGLE-3 curves, where the spelling
                does not say which head runs.
        """
        method = curve_method_for(engine, algorithm, model)
        if str(algorithm).strip().lower().replace("_", "-") not in ("eagle", "nextn"):
            return method
        try:
            key = self.resolve_model(model)
        except AmbiguousCurveError:
            key = None
        if key is None:
            return method
        have = [m for m in OWN_HEAD_METHODS if self.curves_for(key, m)]
        if len(have) > 1:
            raise UsageError(f"{key} has both {' and '.join(have)} curves, and {algorithm} serves the model's own "
                             "head without saying which", hint="spell the algorithm EAGLE3 (an EAGLE-3 head) or "
                                                               "MTP/NEXTN with a model that has one head's curves")
        return have[0] if have else method


def _identity(sc: StoredCurve) -> tuple[object, ...]:
    """What tells two curves of one model and method apart; files that share it are one curve."""
    d = sc.curve.draft
    return (sc.model, d.method, d.variant, d.model, d.draft_sample_method, d.rejection_sample_method,
            tuple(sorted((d.selectors or {}).items())))


def _point(sc: StoredCurve, mode: str, k: int) -> GoldenPoint:
    """The value of curve ``sc`` at (mode, k), a mode its family defines identically standing in.

    Raises:
        NoGoldenValueError: the curve has no such mode or k.
    """
    blk = sc.curve.mode(mode)
    if blk is None:  # a level the family's preset defines as on/off (or the reverse) is the same mode
        for alt in _equivalent_modes(sc.model, mode):
            if (blk := sc.curve.mode(alt)) is not None:
                mode = mode_key(alt)
                break
    if blk is None:
        have = ", ".join(f"{m} k={format_k_list(b.points)}" for m, b in sc.curve.modes().items())
        raise NoGoldenValueError(
            f"{sc.model}: curve {sc.name} has no {mode} values (it has {have})",
            hint="measure and commit that mode; golden-al never substitutes the other mode",
        )
    p = blk.points.get(k)
    if p is None:
        raise NoGoldenValueError(
            f"{sc.model} {mode}: curve {sc.name} has no value at k={k} (k = {format_k_list(blk.points)})",
            hint="pick a committed draft length; golden-al never interpolates",
        )
    return GoldenPoint(
        model=sc.model, thinking=mode, k=k, al=p.al, ci95=p.ci95,
        num_verify_steps=p.num_verify_steps, num_accepted_drafts=p.num_accepted_drafts,
        per_position_accepted=tuple(p.per_position_accepted) if p.per_position_accepted else None,
        origin=p.origin, method=sc.method, variant=sc.variant, curve=sc.name, source=sc.path,
    )


def _equivalent_modes(model: str, mode: str) -> list[str]:
    """Modes the thinking preset of ``model``'s family defines exactly like ``mode``."""
    from golden_al.prompts.thinking import preset_for

    return preset_for(model).equivalents(mode)


def _same_model(declared: str, given: str) -> bool:
    a, b = _norm(declared), _norm(given)
    return a == b or _last(a) == _last(b)


def _select(cands: list[StoredCurve], selectors: dict[str, str]) -> list[StoredCurve]:
    """The curves whose selectors equal the recipe's (both empty: the engine's defaults). A curve measured with
    block verification or a quantized draft head is another draft's AL, so there is no fallback.

    Raises:
        NoGoldenValueError: no curve has exactly these selectors (the message lists each curve's).
    """
    kept = [sc for sc in cands if dict(sc.curve.draft.selectors or {}) == selectors]
    if kept:
        return kept
    want = ", ".join(f"{k}={v}" for k, v in sorted(selectors.items())) or "the engine's defaults (no selector)"
    raise NoGoldenValueError(
        f"no curve of {cands[0].model!r} was measured with {want} (curves: {'; '.join(sc.label() for sc in cands)})",
        hint="these settings change the real AL: measure a curve with them (golden-al fit writes the record's "
             "selectors, or pass --selector KEY=VALUE), or run with the settings a committed curve was measured with")


def _choose(cands: list[StoredCurve], what: str, given: str | None, attr, same) -> list[StoredCurve]:  # type: ignore[no-untyped-def]
    """Narrow ``cands`` by one attribute: declared matches win, then undeclared ones."""
    if given is None or not str(given).strip():
        return cands
    declared_match = [sc for sc in cands if attr(sc) is not None and same(attr(sc), str(given))]
    if declared_match:
        return declared_match
    undeclared = [sc for sc in cands if attr(sc) is None]
    if undeclared:
        return undeclared
    raise NoGoldenValueError(
        f"no curve of {cands[0].model!r} matches {what} {given!r} (curves: {'; '.join(sc.label() for sc in cands)})",
    )


# ---------------------------------------------------------------------------- loading
def read_curve_file(path: str | Path) -> list[StoredCurve]:
    """The one reader of a golden curve file (the store, ``commit``, ``report``, ``draft-lengths`` and the legacy
    import all call it): read within :data:`~golden_al.safeio.ROUNDTRIP_MAX_BYTES`, parsed with line numbers, our
    schema checked; InferenceX's legacy shape (no ``schema_version``) converted, one curve per model key.

    Raises:
        SchemaError: naming the file, the line, the key and the value seen; UnreadableInputError: not read in full.
    """
    from golden_al import safeio

    p = Path(path)
    data = safeio.read_bytes(p, max_bytes=safeio.ROUNDTRIP_MAX_BYTES)
    digest = hashlib.sha256(data).hexdigest()
    text = safeio.decode_text(data, path=p)
    plain = safeio.load_yaml_as_roundtrip(text, path=p)  # libyaml, where it reads as ruamel does (issue 52)
    if plain is not None:
        try:
            return _stored_curves(p, text, plain, None, digest)
        except SchemaError:
            pass  # refused: read again with line numbers, for the message
    doc = load_yaml_roundtrip(text, path=p)
    return _stored_curves(p, text, to_plain(doc), doc, digest)


#: One ``K=AL`` entry (``7=3.71``, also ``7:3.71``): a line of a plain curve file, an entry of ``draft-lengths --curve``.
_AL_PAIR = re.compile(r"^\s*(\d+)\s*[=:]\s*([^\s=:;]+)\s*$")


def read_al_table(path: str | Path, *, model: str | None = None, thinking: str | None = None) -> dict[int, float]:
    """AL per k from a file: ``K=AL`` lines, a YAML ``{K: AL}`` mapping (read as a legacy flat block), or a golden
    curve file (:func:`read_curve_file`; ``model``/``thinking`` pick).

    Raises:
        InputFileError: the file cannot be read; SchemaError: it holds no usable curve (file, line);
        AmbiguousCurveError / NoGoldenValueError: ``model``/``thinking`` pick several curves or modes, or none.
    """
    from golden_al import safeio
    from golden_al.golden.legacy import flat_values

    p = Path(path)
    text = safeio.read_text(p)
    lines = [ln.split("#", 1)[0] for ln in text.splitlines()]
    if any("=" in ln for ln in lines):
        return parse_al_pairs(lines, p)
    data = safeio.safe_load_yaml(text, path=p)
    if isinstance(data, dict) and data and all(not isinstance(v, dict) for v in data.values()):
        if not (curve := flat_values({int(k) if isinstance(k, str) and k.strip().isdigit() else k: v
                                      for k, v in data.items()}, p)):
            raise SchemaError("no draft lengths found", path=p)
        return curve
    curves = [sc.curve for sc in read_curve_file(p)]
    picked = [c for c in curves if model in (None, c.model, *c.aliases)]
    if len(picked) != 1:
        raise (AmbiguousCurveError if picked else NoGoldenValueError)(
            f"{p}: {'holds several models; pick one with --model' if picked else f'no model {model!r}'}"
            f" (models: {', '.join(c.model for c in curves)})")
    modes = picked[0].modes()
    if thinking is None and len(modes) != 1:
        raise AmbiguousCurveError(f"{p}: has {', '.join(modes)}; pick one with --thinking on|off")
    key = next(iter(modes)) if thinking is None else f"thinking_{thinking}"
    if key not in modes:
        raise NoGoldenValueError(f"{p}: {picked[0].model} has no {key} (has: {', '.join(modes)})")
    return {k: point.al for k, point in modes[key].points.items()}


def parse_al_pairs(entries: Sequence[str], path: Path | None = None) -> dict[int, float]:
    """AL per k of ``K=AL`` entries: a file's lines (numbered from 1, comments removed) or ``draft-lengths --curve``'s
    comma-separated pairs; blank entries are skipped.

    Raises:
        SchemaError: a malformed entry, an AL that is not a finite number, a repeated k, or no entry (with the line
            where ``path`` is a file).
    """
    curve: dict[int, float] = {}
    for number, entry in enumerate(entries, start=1):
        if not entry.strip():
            continue
        if not (m := _AL_PAIR.match(entry)):
            raise SchemaError(f"malformed entry {entry.strip()!r}; expected K=AL pairs such as '1=1.83,2=2.43'",
                              path=path, line=number)
        k, al = int(m.group(1)), m.group(2)
        if k in curve:
            raise SchemaError(f"draft length {k} appears twice", path=path, line=number)
        try:
            curve[k] = float(al)
        except ValueError:
            raise SchemaError(f"AL {al!r} is not a number; expected K=AL pairs such as '1=1.83,2=2.43'", path=path,
                              line=number) from None
        if not math.isfinite(curve[k]):
            raise SchemaError(f"AL {al!r} is not a finite number", path=path, line=number)
    if not curve:
        raise SchemaError("empty: no K=AL pairs such as '1=1.83,2=2.43'", path=path)
    return curve


def _stored_curves(p: Path, text: str, plain: Any, doc: Any, digest: str) -> list[StoredCurve]:
    """The curves of a curve file's data (``doc``: its round-trip tree, for line numbers, or None)."""
    from golden_al.golden.legacy import is_legacy_document, read_legacy_text

    if plain is None:
        raise SchemaError("empty golden file", path=p, line=1)
    if is_legacy_document(plain):
        curves = read_legacy_text(text, path=p, doc=doc, data=plain)
        many = len(curves) > 1
        return [StoredCurve(f"{p.stem}:{c.model}" if many else p.stem, p, "inferencex-legacy", c, digest)
                for c in curves]
    return [StoredCurve(p.stem, p, "golden-al", parse_curve(plain, path=p, doc=doc), digest)]


def _signature(p: Path) -> tuple[str, int, int]:
    try:
        st = p.stat()
    except OSError:
        return (p.name, -1, -1)  # read (and refused with a named reason) by read_curve_file
    return (p.name, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=16)
def _load_cached(root: str, signature: tuple[tuple[str, int, int], ...]) -> GoldenStore:
    curves: list[StoredCurve] = []
    for name, _, _ in signature:
        curves.extend(read_curve_file(Path(root) / name))
    names = [sc.name for sc in curves]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SchemaError(f"several golden files have the same name: {', '.join(dup)}", path=root)
    if Path(root) != SHIPPED_CURVES_DIR.resolve() and any(sc.format == "inferencex-legacy" for sc in curves):
        curves = _with_shipped_aliases(curves)
    return GoldenStore(curves, root=Path(root))


def _with_shipped_aliases(curves: list[StoredCurve]) -> list[StoredCurve]:
    """InferenceX's own files name a model by one key (``glm-5.2-fp8``) and the file's prefix; their
    recipes name it by checkpoint (``nvidia/GLM-5.2-NVFP4``). A legacy file whose model key is one of
    the shipped curves' (imported from the same files) gets that curve's aliases, so recipe model ids
    resolve in an InferenceX-format folder as they do in ours. Values are never borrowed."""
    shipped = load_store(None)
    known: dict[str, list[str]] = {}
    for sc in shipped.curves:
        known.setdefault(sc.model, []).extend(a for a in (sc.model, *sc.curve.aliases) if a not in known.get(sc.model, []))
    out = []
    for sc in curves:
        extra = [a for a in known.get(sc.model, []) if a != sc.model] if sc.format == "inferencex-legacy" else []
        have = {a.casefold() for a in sc.curve.aliases}
        add = [a for a in extra if a.casefold() not in have]
        if add:
            curve = sc.curve.model_copy(update={"aliases": [*sc.curve.aliases, *add]})
            sc = StoredCurve(sc.name, sc.path, sc.format, curve, sc.digest)
        out.append(sc)
    return out


def load_store(golden_dir: str | Path | None = None) -> GoldenStore:
    """Load the golden store: ``golden_dir`` (ours or InferenceX's format, per file) or,
    when None, the curves shipped as package data.

    Raises:
        UsageError: the directory does not exist or holds no ``*.yaml``/``*.yml`` file.
        SchemaError: a file is malformed (file and line in the message).
    """
    root = Path(golden_dir).expanduser() if golden_dir is not None else SHIPPED_CURVES_DIR
    if not root.is_dir():
        raise UsageError(f"golden directory {str(root)!r} does not exist or is not a directory")
    # Fail closed: a *.yaml that is not a regular file (FIFO, device, dangling link) is read, and refused,
    # by golden_al.safeio rather than skipped.
    files = sorted(p for p in root.iterdir() if p.suffix in (".yaml", ".yml") and not p.is_dir())
    if not files:
        raise UsageError(f"golden directory {str(root)!r} has no *.yaml golden curve files")
    signature = tuple(_signature(p) for p in files)
    return _load_cached(str(root.resolve()), signature)

