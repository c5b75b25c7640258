"""The numbers behind every report plot (no matplotlib): one :class:`Series` per curve and thinking mode.

A series comes from measurement records (fitted in memory by
:func:`golden_al.curvefit.fit_records`, so the measured histograms and per-position
counts are at hand) or from a golden curve file (our schema or the InferenceX legacy
shape; a ``CURVE.fit.json`` sidecar beside it adds its histograms and counts). Each
``*_data`` function returns the plain-JSON document that its plot shows and that is
saved beside it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError
from distributions.fit import FitResult, fit_profile
from golden_al.golden.schema import GoldenCurve
from golden_al.measure.totals import prompt_clusters

__all__ = [
    "PointView",
    "Series",
    "acceptance_data",
    "al_vs_k_data",
    "histogram_data",
    "per_position_data",
    "series_from_curve",
    "series_from_fit",
    "slug",
]


def slug(text: str) -> str:
    """A file-name-safe version of ``text``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "series"


@dataclass(frozen=True)
class PointView:
    """One point as a report shows it."""

    al: float
    ci95: tuple[float, float] | None
    origin: str
    al_exact: float | None = None


@dataclass
class Series:
    """One curve in one thinking mode, with what is known about its per-step distribution."""

    label: str
    model: str
    method: str
    mode: str
    source: str
    points: dict[int, PointView]
    profile: FitResult | None
    histograms: dict[int, list[float]] = field(default_factory=dict)
    steps: dict[int, float] = field(default_factory=dict)
    per_position_accepted: dict[int, list[float]] = field(default_factory=dict)
    flags: list[dict[str, Any]] = field(default_factory=list)
    per_request: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    """Per k, each request's (accepted drafts, verify steps): a prompt's turns and repeats summed."""
    missing: dict[str, str] = field(default_factory=dict)
    """Why a quantity is absent: ``histogram`` (and the per-position rates), ``al_per_request_mean``."""

    @property
    def curve(self) -> dict[int, float]:
        """``{k: golden AL}``."""
        return {k: p.al for k, p in sorted(self.points.items())}

    def measured_unconditional(self) -> tuple[int, list[float]] | None:
        """``(k, p_1..p_k)`` from the per-position counts at the largest k that has them."""
        if not self.per_position_accepted:
            return None
        k = max(self.per_position_accepted)
        steps = self.steps.get(k)
        if not steps:
            return None
        return k, [float(x) / steps for x in self.per_position_accepted[k]]


def _exact_or_rounded(p: PointView) -> float:
    return p.al if p.al_exact is None else p.al_exact


def _profile_from_points(points: dict[int, PointView]) -> FitResult | None:
    ks = sorted(points)
    als = [_exact_or_rounded(points[k]) for k in ks]
    cis = [points[k].ci95 for k in ks]
    try:
        if all(c is not None and c[1] > c[0] for c in cis):
            return fit_profile(ks, als, ci95=cis)  # type: ignore[arg-type]
        return fit_profile(ks, als)
    except DistributionError:
        return None


def _flag_dicts(fit: FitResult | None) -> list[dict[str, Any]]:
    return [{"k": f.k, "kind": f.kind, "message": f.message} for f in fit.flags] if fit is not None else []


def series_from_fit(fit: Any, source: str, *, label_suffix: str = "") -> list[Series]:
    """Series of a :class:`golden_al.curvefit.CurveFit` (records fitted in memory)."""
    out: list[Series] = []
    curve: GoldenCurve = fit.curve
    for mode, mf in fit.modes.items():
        blk = curve.mode(mode)
        assert blk is not None
        points = {}
        for k, p in blk.points.items():
            cell = mf.cells.get(k)
            # the curve's own (outward-rounded) ci95, as `fit` prints it, so both show the same interval
            ci = p.ci95 if p.ci95 is not None else (tuple(cell.ci95) if cell else None)
            points[k] = PointView(p.al, ci, p.origin, cell.al if cell else None)  # type: ignore[arg-type]
        s = Series(
            label=f"{curve.model} ({curve.draft.method}){label_suffix} {mode}", model=curve.model + label_suffix,
            method=curve.draft.method, mode=mode, source=source, points=points, profile=mf.fit,
            flags=_flag_dicts(mf.fit),
        )
        for k, cell in mf.cells.items():
            rows = [lr.requests() for lr in cell.records]
            clusters = prompt_clusters([q for r in rows for q in r or ()], k) if all(rows) else None
            if clusters is not None:
                s.per_request[k] = list(clusters.values())
            else:
                s.missing["al_per_request_mean"] = (
                    "a record without its requests.jsonl" if not all(rows) else
                    "the lines are counter windows, not requests: the source attributes no count to a request")
            if not cell.histogram_known:  # an imported aggregate: totals only, no pmf to draw
                s.missing["histogram"] = "the source reports totals only (histogram_known: false)"
                continue
            s.histograms[k] = [float(x) for x in cell.histogram]
            s.steps[k] = float(cell.num_verify_steps)
            s.per_position_accepted[k] = [float(x) for x in cell.per_position_accepted]
        out.append(s)
    return out


def series_from_curve(curve: GoldenCurve, source: str, sidecar: dict[str, Any] | None = None) -> list[Series]:
    """Series of a golden curve; ``sidecar`` is its ``CURVE.fit.json`` document when present."""
    out: list[Series] = []
    for mode, blk in curve.modes().items():
        side = (sidecar or {}).get("modes", {}).get(mode, {})
        side_points = side.get("points", {})
        points = {}
        for k, p in blk.points.items():
            sp = side_points.get(str(k), {})
            ci = p.ci95 if p.ci95 is not None else (tuple(sp["ci95_exact"]) if sp.get("ci95_exact") else None)
            points[k] = PointView(p.al, ci, p.origin, sp.get("al_exact"))  # type: ignore[arg-type]
        profile = _profile_from_points({k: v for k, v in points.items() if v.origin == "measured"} or points)
        # the sidecar's flags come from the count-weighted fit; without one, the profile's own
        s = Series(label=f"{curve.model} ({curve.draft.method}) {mode}", model=curve.model,
                   method=curve.draft.method, mode=mode, source=source, points=points, profile=profile,
                   flags=side["flags"] if "flags" in side else _flag_dicts(profile),
                   missing={"al_per_request_mean": "a golden curve holds no per-request rows"})
        for k, p in blk.points.items():
            sp = side_points.get(str(k), {})
            if sp.get("histogram"):
                s.histograms[k] = [float(x) for x in sp["histogram"]]
            steps = sp.get("num_verify_steps", p.num_verify_steps)
            pos = sp.get("per_position_accepted", p.per_position_accepted)
            if steps and pos:
                s.steps[k] = float(steps)
                s.per_position_accepted[k] = [float(x) for x in pos]
        if not s.histograms:
            s.missing["histogram"] = "the curve has no .fit.json sidecar with the measured histograms"
        out.append(s)
    return out


# ------------------------------------------------------------------------------------- plot data
def al_vs_k_data(series: Sequence[Series]) -> dict[str, Any]:
    """AL per k with its CI and origin, and the fitted profile's curve, per series."""
    rows = []
    for s in series:
        fitted = s.profile.curve() if s.profile is not None else {}
        rows.append({
            "label": s.label, "model": s.model, "method": s.method, "thinking": s.mode, "source": s.source,
            "points": [{"k": k, "al": p.al, "al_exact": p.al_exact, "ci95": list(p.ci95) if p.ci95 else None,
                        "origin": p.origin} for k, p in sorted(s.points.items())],
            "fitted": [{"k": k, "al": v} for k, v in sorted(fitted.items())],
            "flags": s.flags,
        })
    return {"plot": "al_vs_k", "x": "draft length k (drafted tokens per verify step)",
            "y": "acceptance length AL (tokens per verify step, bonus token included)", "series": rows}


def per_position_data(series: Sequence[Series]) -> dict[str, Any]:
    """Per-position acceptance: fitted unconditional p_j and conditional c_j, and measured ones."""
    rows = []
    for s in series:
        entry: dict[str, Any] = {"label": s.label, "thinking": s.mode}
        if s.profile is not None:
            entry["fitted_unconditional"] = [float(x) for x in s.profile.unconditional]
            entry["fitted_conditional"] = [float(x) for x in s.profile.conditional]
        measured = s.measured_unconditional()
        if measured is not None:
            k, p = measured
            entry["measured_at_k"] = k
            entry["measured_unconditional"] = p
            entry["measured_conditional"] = [float(x) for x in units.unconditional_to_conditional(
                np.minimum.accumulate(np.clip(p, 0.0, 1.0)))]
        rows.append(entry)
    return {"plot": "per_position",
            "x": "draft position j",
            "y": "acceptance probability: unconditional p_j = P(accepted >= j), conditional c_j = p_j / p_(j-1)",
            "series": rows}


def _sampler_pmfs(al: float, k: int) -> dict[str, Any]:
    """Every registered engine's samplers at (AL, k), each labelled ``<display name> <method>``, in registration
    order (the engines' own list: :func:`golden_al.plugin.registry.samplers`)."""
    from golden_al.plugin.registry import get_profile, get_sampler, samplers
    from simulators.base import SamplerError

    out: dict[str, Any] = {}
    for engine, methods in samplers().items():
        for method in methods:
            label = f"{get_profile(engine).display_name} {method}"
            try:
                dist = get_sampler(engine, method).pmf(al, k)
                out[label] = {"pmf": dist.to_list(), "mean": dist.mean()}
            except (SamplerError, DistributionError) as exc:
                out[label] = {"pmf": None, "mean": None, "why": str(exc)}
    return out


def histogram_data(s: Series) -> dict[str, Any]:
    """Per k: the measured pmf of L and each engine sampler's pmf when injected with the measured mean."""
    panels = []
    for k in sorted(s.histograms):
        dist = AcceptanceDistribution.from_accepted_histogram(s.histograms[k], k=k)
        al = dist.mean()
        panels.append({
            "k": k, "measured_al": al, "measured_pmf": dist.to_list(), "measured_std": dist.std(),
            "num_verify_steps": s.steps.get(k), "samplers": _sampler_pmfs(min(max(al, 1.0), k + 1.0), k),
        })
    return {"plot": "histograms", "label": s.label, "thinking": s.mode,
            "x": "tokens per verify step L (accepted drafts + 1)", "y": "probability",
            "note": "each sampler is injected with the measured mean AL of that k", "panels": panels}


def acceptance_data(series: Sequence[Series]) -> dict[str, Any]:
    """Per cell (series and k): the token-weighted AL, the per-request mean AL, the histogram of accepted drafts
    (steps accepting 0..k) and the per-position acceptance rates (accepted at position j / verify steps), each
    None where the source cannot give it, with the reason in ``unavailable``."""
    cells = []
    for s in series:
        for k, p in sorted(s.points.items()):
            reqs = s.per_request.get(k)
            steps, hist, pos = s.steps.get(k), s.histograms.get(k), s.per_position_accepted.get(k)
            cell = {
                "label": s.label, "model": s.model, "method": s.method, "thinking": s.mode, "source": s.source, "k": k,
                "al": p.al if p.al_exact is None else p.al_exact,
                "al_per_request_mean": units.per_request_mean_al(*zip(*reqs, strict=True)) if reqs else None,
                "request_als": [1.0 + a / n for a, n in reqs if n > 0] if reqs else None,
                "histogram": hist, "per_position_acceptance": [x / steps for x in pos] if pos and steps else None}
            cell["unavailable"] = {name: s.missing.get(why, "not measured at this k") for name, why in (
                ("al_per_request_mean", "al_per_request_mean"), ("histogram", "histogram"),
                ("per_position_acceptance", "histogram")) if cell[name] is None}
            cells.append(cell)
    return {"plot": "acceptance", "x": "draft length k",
            "y": "AL weighted by verify steps (al) and the mean of the requests' own ALs (al_per_request_mean); "
                 "per-position acceptance rate = steps accepting position j / verify steps",
            "cells": cells}


def load_sidecar(path: Path) -> dict[str, Any] | None:
    """The ``CURVE.fit.json`` beside ``path``, or None."""
    from golden_al.curvefit import sidecar_path

    side = sidecar_path(path)
    if not side.is_file():
        return None
    try:
        data = json.loads(side.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) and data.get("kind") == "golden-al-fit" else None
