"""Fit measurement records into one golden curve (our schema) with its diagnostics.

:func:`fit_records` is what ``golden-al fit`` runs:

1. every record must share the curve-scope settings, and the records of each thinking
   mode the mode-scope settings (:mod:`golden_al.curvefit.settings`); otherwise
   :class:`~golden_al.curvefit.errors.SettingsMismatchError`, never an average;
2. records of one (mode, k) are pooled by summing counts (:mod:`golden_al.curvefit.pool`);
   a measured cell supersedes one-run derived records at the same k (the difference
   is kept in the diagnostics);
3. per mode, one conditional profile ``c_1..c_K`` is fitted to every point
   (:func:`distributions.fit.fit_profile`, weighted by the CIs, or by verify steps
   when a CI has zero width) and its residuals and flags (drop, jump, residual) are
   recorded; a flagged point carries a short ``note`` in the curve;
4. with ``fill_derived`` every missing ``k <= K`` gets the profile's AL, marked
   ``origin: derived``;
5. the provenance date is the date of the latest measurement (so the same records give the
   same curve on any day), ``record_sha256`` the hash of the records' hashes;
6. the golden AL of a measured or record-derived point is the pooled value rounded to
   two decimals, as the harnesses read it (exactly from the integer counts, half up);
   its CI is rounded outwards to three decimals and always contains the rounded AL.

The diagnostics (every record and its hash, pooled counts and histograms, the fitted
profile, fitted values, residuals, tolerances and flags) have no place in the curve
schema, so they go to a sidecar ``CURVE.fit.json`` (:func:`sidecar_path`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from distributions.fit import FitResult, fit_profile
from distributions.uncertainty import JointAL
from golden_al.curvefit.errors import SettingsMismatchError
from golden_al.curvefit.pool import PooledCell, joint_of, pool_cell, selection_of
from golden_al.curvefit.settings import check_agreement, settings_of
from golden_al.errors import UsageError
from golden_al.golden.schema import GoldenCurve, parse_curve
from golden_al.measure.records import LoadedRecord
from golden_al.measure.schema import MeasurementRecord
from golden_al.prompts.thinking import THINKING_MODES
from golden_al.provenance import collect, tool_version

__all__ = [
    "SIDECAR_SUFFIX",
    "CurveFit",
    "FitOptions",
    "ModeFit",
    "default_model_key",
    "draft_precision",
    "fit_records",
    "round_al",
    "sidecar_path",
]

SIDECAR_SUFFIX = ".fit.json"
_KEY_OK = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
#: dtype spellings (records, GGUF types) -> the schema's draft precisions.
_PRECISIONS: dict[str, str] = {
    "bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16",
    "float32": "fp32", "fp32": "fp32", "float": "fp32", "fp8": "fp8", "float8_e4m3fn": "fp8",
    "mxfp8": "mxfp8", "fp4": "fp4", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "int8": "int8", "int4": "int4",
    "q8_0": "int8", "q4_0": "int4", "q4_1": "int4", "q4_k_m": "int4", "q4_k_s": "int4", "q4_k": "int4",
}


def sidecar_path(curve_path: str | Path) -> Path:
    """``CURVE.fit.json`` beside ``CURVE.yaml``."""
    p = Path(curve_path)
    return p.with_name(p.stem + SIDECAR_SUFFIX) if p.suffix in (".yaml", ".yml") else p.with_name(p.name + SIDECAR_SUFFIX)


def round_al(value: float, *, accepted: int | None = None, steps: int | None = None) -> float:
    """AL rounded to two decimals, half up; exact from integer counts when given."""
    if accepted is not None and steps is not None:
        exact = 1 + Fraction(accepted, steps)
        return float((exact * 100 + Fraction(1, 2)).__floor__() / 100)
    return float(Decimal(repr(float(value))).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _ci_out(ci: tuple[float, float], al_rounded: float, k: int) -> tuple[float, float]:
    lo = math.floor(ci[0] * 1000 + 1e-9) / 1000
    hi = math.ceil(ci[1] * 1000 - 1e-9) / 1000
    return (max(1.0, min(lo, al_rounded)), min(k + 1.0, max(hi, al_rounded)))


def default_model_key(target_name: str) -> str:
    """A curve model key from a target name: last path component, no extension, lower case.

    ``Qwen/Qwen2.5-Coder-1.5B-Instruct`` -> ``qwen2.5-coder-1.5b-instruct``;
    ``/models/x-q4_k_m.gguf`` -> ``x-q4_k_m``.
    """
    base = str(target_name).strip().rstrip("/").rsplit("/", 1)[-1]
    for ext in (".gguf", ".safetensors", ".bin"):
        if base.lower().endswith(ext):
            base = base[: -len(ext)]
    key = re.sub(r"[^a-z0-9._-]+", "-", base.lower()).strip("-._")
    if not key or not _KEY_OK.match(key):
        raise UsageError(f"cannot make a curve model key from target name {target_name!r}",
                         hint="pass --model-key (lower case letters, digits, '.', '_', '-')")
    return key


def draft_precision(shipped_dtype: str | None) -> str | None:
    """The schema's draft precision for a shipped dtype (``bfloat16`` -> ``bf16``, ``Q4_K_M`` -> ``int4``)."""
    if not shipped_dtype:
        return None
    return _PRECISIONS.get(shipped_dtype.strip().lower().replace("torch.", ""))


@dataclass(frozen=True)
class FitOptions:
    """Options of :func:`fit_records` (the ``golden-al fit`` flags)."""

    model_key: str | None = None
    aliases: Sequence[str] = ()
    method: str | None = None
    monotone_conditional: bool = False
    profile: str = "mixture"
    fill_derived: bool = False
    provenance_note: str | None = None
    tolerance: float | None = None
    seed: int = 0
    #: curve selectors to write (``fit --selector``); they must agree with what the records' servers reported
    selectors: Mapping[str, str] | None = None


@dataclass(frozen=True)
class ModeFit:
    """One thinking mode: the cells used, the profile fit and what was filled or superseded."""

    mode: str
    cells: dict[int, PooledCell]
    fit: FitResult
    filled: tuple[int, ...]
    superseded: tuple[PooledCell, ...]
    settings: dict[str, Any]
    weighting_note: str | None = None
    joint: JointAL | None = None
    """The joint law of the points (one run's shared prompts), when the records allow it."""

    def point_flags(self, k: int) -> list[Any]:
        return [f for f in self.fit.flags if f.k == k]


@dataclass(frozen=True)
class CurveFit:
    """What :func:`fit_records` returns: the curve, the per-mode fits and the records used."""

    curve: GoldenCurve
    modes: dict[str, ModeFit]
    records: tuple[LoadedRecord, ...]
    options: FitOptions
    warnings: tuple[str, ...] = field(default=())

    @property
    def flags(self) -> list[tuple[str, Any]]:
        """``(mode, CurveFlag)`` for every point a profile cannot explain."""
        return [(m, f) for m, mf in self.modes.items() for f in mf.fit.flags]

    def diagnostics(self, *, curve_file: str | None = None, curve_sha256: str | None = None,
                    provenance: dict[str, Any] | None = None) -> dict[str, Any]:
        """The sidecar document (plain JSON types).

        Kept whole: one JSON document assembled field by field, in the order the document shows.
        """
        modes: dict[str, Any] = {}
        for mode, mf in self.modes.items():
            fr = mf.fit
            fitted = {int(k): (float(f), float(r), float(t)) for k, f, r, t in
                      zip(fr.ks, fr.fitted, fr.residuals, fr.tolerance, strict=True)}
            points: dict[str, Any] = {}
            blk = self.curve.mode(mode)
            for k in sorted(set(mf.cells) | set(mf.filled)):
                p = blk.points[k] if blk is not None else None
                entry: dict[str, Any] = {"al": p.al if p else None, "origin": p.origin if p else None}
                cell = mf.cells.get(k)
                if cell is not None:
                    entry.update({
                        "al_exact": cell.al, "ci95_exact": list(cell.ci95), "ci_method": cell.ci_method,
                        "uncertainty": cell.uncertainty.model_dump() if cell.uncertainty else None,
                        "records": [str(lr.path) for lr in cell.records], "num_requests": cell.num_requests,
                        "num_verify_steps": cell.num_verify_steps, "num_accepted_drafts": cell.num_accepted_drafts,
                        "histogram": list(cell.histogram), "per_position_accepted": list(cell.per_position_accepted),
                        "histogram_known": cell.histogram_known,
                        "derived_from_draft_len": list(cell.derived_from) or None,
                        "derivation_exact": cell.derivation_exact, "estimate": cell.estimate,
                    })
                if k in fitted:
                    f, r, t = fitted[k]
                    entry.update({"fitted": f, "residual": r, "tolerance": t})
                    zs = fr.standardized_residuals
                    if zs is not None:
                        entry["residual_se"] = float(zs[list(fr.ks).index(k)])
                else:
                    entry["fitted"] = fr.curve([k])[k]
                entry["flags"] = [f.as_dict() for f in mf.point_flags(k)]
                points[str(k)] = entry
            modes[mode] = {
                "settings": mf.settings,
                "points": points,
                "profile": {
                    "family": fr.profile,
                    "mixture": None if fr.mixture is None else {
                        "summary": fr.mixture.summary(),
                        "components": [{"p": p, "r": r, "token_share": w} for p, r, w in fr.mixture.components()]},
                    "num_params": fr.num_params,
                    "goodness_of_fit": None if fr.p_value is None else {
                        "chi2": fr.chi2, "dof": fr.dof, "p_value": fr.p_value,
                        "richer_profile_needed": fr.richer_profile_needed},
                    "conditional": [float(x) for x in fr.conditional],
                    "unconditional": [float(x) for x in fr.unconditional],
                    "weighting": fr.weighting,
                    "weighting_note": mf.weighting_note,
                    "joint": mf.joint.as_dict() if mf.joint is not None else None,
                    "monotone_conditional": fr.monotone_conditional,
                    "success": fr.success,
                    "message": fr.message,
                    "cost": fr.cost,
                    "max_abs_residual": fr.max_abs_residual,
                    "explained": fr.explained,
                },
                "flags": [f.as_dict() for f in fr.flags],
                "unexplained_ks": sorted({f.k for f in fr.flags}),
                "filled_ks": list(mf.filled),
                "superseded_derived": [
                    {"k": c.k, "derived_al": c.al, "measured_al": mf.cells[c.k].al,
                     "difference": c.al - mf.cells[c.k].al, "records": [str(lr.path) for lr in c.records]}
                    for c in mf.superseded
                ],
            }
        opts = self.options
        return {
            "kind": "golden-al-fit",
            "schema_version": 1,
            "curve_file": curve_file,
            "curve_sha256": curve_sha256,
            "model": self.curve.model,
            "method": self.curve.draft.method,
            "options": {
                "model_key": opts.model_key, "aliases": list(opts.aliases), "method": opts.method,
                "monotone_conditional": opts.monotone_conditional, "profile": opts.profile,
                "fill_derived": opts.fill_derived,
                "tolerance": opts.tolerance, "seed": opts.seed,
            },
            "records": [
                {"path": str(lr.path), "sha256": lr.sha256, "thinking": lr.record.thinking, "k": lr.k,
                 "derived": lr.record.derived, "engine": lr.record.engine, "mode": lr.record.mode,
                 "al": lr.record.al, "al_ci95": list(lr.record.al_ci95), "num_requests": lr.record.num_requests,
                 "num_verify_steps": lr.record.num_verify_steps,
                 "measured_with": {key: lr.record.provenance.get(key)
                                   for key in ("tool_version", "git", "started", "ended", "host")}}
                for lr in self.records
            ],
            "modes": modes,
            "flags": [{"mode": m, **f.as_dict()} for m, f in self.flags],
            "warnings": list(self.warnings),
            "provenance": provenance if provenance is not None else collect(),
        }


def _measured_on(records: Sequence[LoadedRecord]) -> str:
    """The date of the latest measurement (its provenance ``ended``/``started``), else today (UTC).

    Using the measurement's date keeps ``fit`` deterministic: the same records give the
    same curve, byte for byte, on any day.
    """
    dates = []
    for lr in records:
        stamp = lr.record.provenance.get("ended") or lr.record.provenance.get("started")
        if isinstance(stamp, str):
            try:
                dates.append(_dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).date())
            except ValueError:
                continue
    return (max(dates) if dates else _dt.datetime.now(_dt.timezone.utc).date()).isoformat()


def _manifest_sha256(records: Sequence[LoadedRecord]) -> str:
    text = "".join(f"{h}\n" for h in sorted(lr.sha256 for lr in records))
    return hashlib.sha256(text.encode()).hexdigest()


def _fit_mode(mode: str, cells: dict[int, PooledCell], options: FitOptions,
              joint: JointAL | None = None) -> tuple[FitResult, str | None]:
    ks = sorted(cells)
    als = [cells[k].al for k in ks]
    cis = [cells[k].ci95 for k in ks]
    note = None
    if joint is not None and len(ks) >= 2:
        return fit_profile(ks, als, cov=joint.cov, clusters=joint.clusters,
                           monotone_conditional=options.monotone_conditional,
                           tolerance=options.tolerance, profile=options.profile), None  # type: ignore[arg-type]
    if all(hi - lo > 0 for lo, hi in cis):
        return fit_profile(ks, als, ci95=cis, monotone_conditional=options.monotone_conditional,
                           tolerance=options.tolerance, profile=options.profile), None  # type: ignore[arg-type]
    zero = [k for k in ks if cells[k].ci_width <= 0]
    note = (f"weighted by verify steps: the CI at k={','.join(map(str, zero))} has zero width "
            "(fewer than two requests, or identical requests)")
    steps = [float(cells[k].num_verify_steps) for k in ks]
    return fit_profile(ks, als, steps=steps, monotone_conditional=options.monotone_conditional,
                       tolerance=options.tolerance, profile=options.profile), note  # type: ignore[arg-type]


def _point(cell: PooledCell, flags: list[Any]) -> dict[str, Any]:
    if cell.integral:
        al = round_al(cell.al, accepted=int(cell.num_accepted_drafts), steps=int(cell.num_verify_steps))
    else:
        al = round_al(cell.al)
    lo, hi = _ci_out(cell.ci95, al, cell.k)
    out: dict[str, Any] = {"al": al, "ci95": [lo, hi]}
    if cell.uncertainty is not None:
        u = cell.uncertainty
        out["uncertainty"] = {"method": u.method, "clusters": u.clusters, "confidence": u.confidence}
    if cell.integral and int(cell.num_verify_steps) >= 1:
        out["num_verify_steps"] = int(cell.num_verify_steps)
        out["num_accepted_drafts"] = int(cell.num_accepted_drafts)
        out["per_position_accepted"] = [int(v) for v in cell.per_position_accepted]
    notes = []
    if cell.derived:
        src = ",".join(map(str, cell.derived_from)) or "a larger k"
        exact = ("exact: acceptance independent of the step start" if cell.derivation_exact is True
                 else "approximate: real drafts accept in bursts and block drafts depend on the block "
                      "size; validate with a measured k")
        notes.append(f"derived from the k={src} run by truncation ({exact})")
        out["origin"] = "derived"
    if cell.estimate:
        notes.append("expected counts (sampled replay estimate); counts in the fit sidecar")
    if flags:
        notes.append("fit flag: " + ", ".join(sorted({f.kind for f in flags})) + " (see the .fit.json sidecar)")
    if notes:
        out["note"] = "; ".join(notes)
    return out


def fit_records(records: Sequence[LoadedRecord], options: FitOptions | None = None) -> CurveFit:
    """Fit ``records`` (one target, one draft, one engine, one dataset) into a golden curve.

    Raises:
        UsageError: no records, or no usable model key / method.
        SettingsMismatchError: records disagree on a setting (the field and files named).
        SchemaError: the resulting curve violates the schema (e.g. an engine name the
            schema does not know).

    Kept whole: the steps (agreement checks, each mode's fit, the filled points, the schema check) are calls
    already; what stays here is their order and the warnings and blocks they share.
    """
    options = options or FitOptions()
    if not records:
        raise UsageError("no measurement records given", hint="pass measurement.json files or directories")
    check_agreement(records, "curve", context="every record of one curve")
    by_mode: dict[str, list[LoadedRecord]] = {}
    for lr in records:
        by_mode.setdefault(lr.mode_key, []).append(lr)
    for mode, recs in by_mode.items():
        check_agreement(recs, "mode", context=mode)
    first = records[0].record
    warnings: list[str] = []
    mode_fits: dict[str, ModeFit] = {}
    mode_blocks: dict[str, Any] = {}
    for mode in [*THINKING_MODES, *sorted(m for m in by_mode if m not in THINKING_MODES)]:
        if not by_mode.get(mode):
            continue
        recs = by_mode[mode]
        measured: dict[int, list[LoadedRecord]] = {}
        derived: dict[int, list[LoadedRecord]] = {}
        for lr in recs:
            (derived if lr.record.derived else measured).setdefault(lr.k, []).append(lr)
        for lr in recs:
            r = lr.record
            if float(r.num_verify_steps) > 0 and abs(r.al - (1.0 + float(r.num_accepted_drafts) / float(r.num_verify_steps))) > 1e-6:
                warnings.append(f"{lr.path}: al {r.al} differs from 1 + accepted/steps of its counts; the counts are used")
        cells: dict[int, PooledCell] = {}
        superseded: list[PooledCell] = []
        for k in sorted(set(measured) | set(derived)):
            if k in measured:
                cells[k] = pool_cell(measured[k], seed=options.seed)
                if k in derived:
                    superseded.append(pool_cell(derived[k], seed=options.seed))
            else:
                cells[k] = pool_cell(derived[k], seed=options.seed)
        held = {k: sel for k, cell in cells.items() if (sel := selection_of(cell.records)) is not None}
        if len(set(held.values())) > 1:
            ks = sorted(held)
            raise SettingsMismatchError(
                f"{mode}: the draft lengths hold different prompts of the set (pooled shards): "
                + "; ".join(f"k={k} {len(held[k])} prompts" for k in ks)
                + ", so the points would not be of one prompt set",
                field="dataset.selection", groups={f"k={k}": [str(lr.path) for lr in cells[k].records] for k in ks},
                hint="measure the same shards at every k, or fit the k of one selection")
        for k, cell in cells.items():
            if float(cell.num_verify_steps) <= 0:
                raise UsageError(f"{mode} k={k}: the records hold zero verify steps, so AL is undefined",
                                 hint="drop those records or re-measure")
        joint = joint_of(cells, seed=options.seed)
        fr, note = _fit_mode(mode, cells, options, joint)
        filled: list[int] = []
        points = {k: _point(cell, [f for f in fr.flags if f.k == k]) for k, cell in cells.items()}
        if options.fill_derived:
            profile = fr.through_data()
            for k in range(1, max(cells) + 1):
                if k not in points:
                    points[k] = {"al": round_al(profile[k]), "origin": "derived",
                                 "note": f"filled from the fitted {fr.profile} profile, anchored to the measured "
                                         "neighbours (golden-al fit --fill-derived)"}
                    filled.append(k)
        rec = recs[0].record
        sampling = {
            "temperature": float(rec.sampling.temperature),
            "top_p": float(rec.sampling.top_p),
            "top_k": rec.sampling.top_k,
            "chat_template_kwargs": dict(rec.chat_template_kwargs) or None,
        }
        mode_blocks[mode] = {"sampling": sampling, "output_len": rec.sampling.max_tokens,
                             "points": dict(sorted(points.items()))}
        mode_fits[mode] = ModeFit(mode=mode, cells=cells, fit=fr, filled=tuple(filled), superseded=tuple(superseded),
                                  settings=settings_of(rec), weighting_note=note, joint=joint)
    model_key = options.model_key or default_model_key(first.target.name)
    aliases = list(dict.fromkeys(a.strip() for a in options.aliases if a.strip()))
    extra_aliases = [first.target.name]
    try:  # the registry's hub id of a known model is a useful alias
        from golden_al.models.registry import get_model

        extra_aliases.append(get_model(first.target.name).hf_id)
    except Exception:
        pass
    for a in extra_aliases:
        if not a or a.startswith(("/", ".", "~")):  # a local path is no alias
            continue
        if a.casefold() != model_key.casefold() and a.casefold() not in {x.casefold() for x in aliases}:
            aliases.append(a)
    method = options.method or _curve_method(first)
    counts = {lr.record.dataset.count for lr in records}
    num_prompts = counts.pop() if len(counts) == 1 else None
    if num_prompts is None:
        warnings.append("the thinking modes used different prompt counts; dataset.num_prompts is left out")
    precision = draft_precision(first.draft.shipped_dtype)
    run_modes = sorted({lr.record.mode for lr in records})
    notes = [f"Fitted by golden-al fit from {len(records)} measurement record(s) "
             f"(engine {first.engine}, mode {'/'.join(run_modes)}); record_sha256 is the sha256 of their sorted "
             f"sha256 list (one per line), itemised in the .fit.json sidecar."]
    if first.draft.shipped_dtype and precision != (first.draft.shipped_dtype or "").lower():
        notes.append(f"Draft ships as {first.draft.shipped_dtype}" + (f", loaded as {first.draft.dtype}" if first.draft.dtype else "")
                     + (f"; schema precision {precision}" if precision else "; no schema precision for it") + ".")
    if options.provenance_note:
        notes.insert(0, options.provenance_note.strip())
    data: dict[str, Any] = {
        "schema_version": 1,
        "model": model_key,
        "aliases": aliases,
        "draft": {"method": method, "model": first.draft.name, "precision": precision,
                  "selectors": _selectors(records, options.selectors, warnings)},
        "engine": {"name": first.engine, "version": first.engine_version,
                   "image": first.server.image if first.server else None},
        "dataset": {"name": first.dataset.name, "category": first.dataset.category,
                    "num_prompts": num_prompts or None},
        **{m: b for m, b in mode_blocks.items() if m in THINKING_MODES},
        "levels": {m: b for m, b in mode_blocks.items() if m not in THINKING_MODES} or None,
        "provenance": {
            "record_sha256": _manifest_sha256(records),
            "tool": f"golden-al {tool_version()} (golden-al fit)",
            "date": _measured_on(records),
            "collector": "golden-al fit",
            "notes": " ".join(notes),
        },
    }
    curve = parse_curve(_drop_none(data), path="<golden-al fit>")
    return CurveFit(curve=curve, modes=mode_fits, records=tuple(records), options=options, warnings=tuple(warnings))


def _curve_method(record: MeasurementRecord) -> str:
    """The curve method of a record's ``draft_method``, which is the engine's own spelling (vLLM ``draft_model``,
    SGLang ``standalone``): the engine's rule where it has one, else the spelling as it is (the schema judges)."""
    from golden_al.golden.store import curve_method_for
    from golden_al.plugin.registry import engine_names

    if record.engine in engine_names():
        try:
            return curve_method_for(record.engine, record.draft_method)
        except UsageError:
            pass
    return record.draft_method


def _selectors(records: Sequence[LoadedRecord], given: Mapping[str, str] | None,
               warnings: list[str]) -> dict[str, str] | None:
    """The curve's selectors: what the records' servers reported (the settings check made them agree on), and
    ``--selector`` values, which must equal any the records report.

    Raises:
        SettingsMismatchError: a ``--selector`` that contradicts the records (naming the key and both values).
    """
    reported = records[0].record.server.curve_selectors if records[0].record.server else None
    given = dict(given or {})
    if reported is None:
        if records[0].record.server is not None:
            warnings.append("the records do not say which curve selectors the server ran with (e.g. vLLM attached "
                            "without --server-log): the curve is written for "
                            + (", ".join(f"{k}={v}" for k, v in sorted(given.items())) or "the engine's defaults")
                            + "; pass --selector KEY=VALUE if it ran otherwise")
        return given or None
    for key in sorted(set(given) | set(reported)):
        if key in given and given.get(key) != reported.get(key):
            raise SettingsMismatchError(
                f"--selector {key}={given[key]} but the records' server reported "
                + (f"{key}={reported[key]}" if key in reported else f"no {key} (the engine's default)"),
                field=f"server.curve_selectors.{key}", groups={},
                hint="drop --selector: the records say what the server ran with")
    return dict(reported) or None


def _drop_none(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _drop_none(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [_drop_none(v) for v in node]
    return node
