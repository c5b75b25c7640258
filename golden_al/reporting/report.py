"""Write ``report.md`` and every plot (``plot_x.png`` beside ``plot_x.json``) for a set of series.

:func:`load_sources` turns RECORD_OR_CURVE arguments into :class:`~golden_al.reporting.data.Series`:

* ``measurement.json`` files and directories holding them are grouped by target, draft,
  draft method, engine and dataset (one series per dataset) and fitted in memory (:func:`golden_al.curvefit.fit_records`, the same
  refusals as ``golden-al fit``);
* ``*.yaml``/``*.yml`` files are golden curves, in our schema or the InferenceX legacy
  shape (a legacy file may hold several models); a ``CURVE.fit.json`` beside a curve adds
  its histograms and counts. A directory without records but with YAML files is read as
  a directory of curves.

:func:`write_report` writes the plots and their JSON (each JSON carries the inputs and
the provenance), then ``report.md`` with the tables, the fit flags and the provenance.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError
from golden_al.provenance import atomic_write_text, collect, sha256_file
from golden_al.reporting import plots
from golden_al.reporting.data import (
    Series,
    acceptance_data,
    al_vs_k_data,
    histogram_data,
    load_sidecar,
    per_position_data,
    series_from_curve,
    series_from_fit,
    slug,
)

__all__ = ["ReportInput", "ReportResult", "load_sources", "write_report"]


@dataclass(frozen=True)
class ReportInput:
    """One file a report rests on."""

    path: str
    kind: str  # measurement-record | golden-curve | inferencex-legacy | fit-sidecar
    sha256: str


@dataclass
class ReportResult:
    """The files written."""

    report: Path
    files: list[Path] = field(default_factory=list)


def load_sources(paths: Iterable[str | Path]) -> tuple[list[Series], list[ReportInput]]:
    """Series and the inputs they come from (see the module docstring)."""
    from golden_al.curvefit import FitOptions, fit_records, sidecar_path
    from golden_al.golden.store import read_curve_file
    from golden_al.measure.records import expand_record_paths, load_records
    from golden_al.measure.schema import MEASUREMENT_FILE

    record_paths: list[Path] = []
    curve_paths: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputFileError("no such file or directory", path=p,
                                 hint="give measurement records (.json or directories) or curves (.yaml)")
        if p.is_dir():
            if (p / MEASUREMENT_FILE).is_file() or any(p.rglob(MEASUREMENT_FILE)):
                record_paths.extend(expand_record_paths([p]))
            else:
                found = sorted(q for q in p.iterdir() if q.suffix in (".yaml", ".yml") and q.is_file())
                if not found:
                    raise InputFileError("directory holds neither measurement.json records nor *.yaml curves", path=p)
                curve_paths.extend(found)
        elif p.suffix in (".yaml", ".yml"):
            curve_paths.append(p)
        else:
            record_paths.append(p)
    series: list[Series] = []
    inputs: list[ReportInput] = []
    if record_paths:
        records = load_records(record_paths)
        groups: dict[tuple[str, ...], list[Any]] = {}
        for lr in records:
            r = lr.record
            groups.setdefault((r.target.name, r.draft.name, r.draft_method, r.engine, r.dataset.name,
                               r.dataset.category or ""), []).append(lr)
        several_datasets = len({k[4:] for k in groups}) > 1
        for key, recs in groups.items():
            fit = fit_records(recs, FitOptions())
            parents = sorted({str(lr.path.parent) for lr in recs})
            source = parents[0] if len(parents) == 1 else f"{os.path.commonpath(parents)}/ ({len(recs)} records)"
            dataset = key[4] + (f":{key[5]}" if key[5] else "")
            series.extend(series_from_fit(fit, source, label_suffix=f" [{dataset}]" if several_datasets else ""))
        inputs += [ReportInput(str(lr.path), "measurement-record", lr.sha256) for lr in records]
    for cp in curve_paths:
        side = load_sidecar(cp)
        read = read_curve_file(cp)
        for sc in read:
            series.extend(series_from_curve(sc.curve, str(cp), side))
        inputs.append(ReportInput(str(cp), "golden-curve", read[0].digest))
        if side is not None:
            sp = sidecar_path(cp)
            inputs.append(ReportInput(str(sp), "fit-sidecar", sha256_file(sp)))
    return series, inputs


def _write_json(path: Path, data: dict[str, Any], inputs: Sequence[ReportInput], prov: dict[str, Any]) -> Path:
    doc = {**data, "inputs": [vars(i) for i in inputs], "provenance": prov}
    return atomic_write_text(path, json.dumps(doc, indent=2) + "\n")


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"


def _acceptance_md(data: dict[str, Any]) -> list[str]:
    """The per-cell table of ``acceptance.json`` and, per series, what its source cannot give and why."""
    def nums(v: Any) -> str:  # a number, or a list of them; integers as integers
        return "-" if v is None else " ".join(f"{x:.0f}" if float(x).is_integer() else f"{x:.3f}"
                                             for x in (v if isinstance(v, list) else [v]))

    md = ["## Acceptance per cell", "", "![acceptance](acceptance.png)", "",
          "AL weighted by verify steps (the golden value) against the mean of the requests' own ALs (what a "
          "per-request average reports); the histogram counts the steps that accepted 0..k drafts; the per-position "
          "rate is the share of steps that accepted position j. Data: `acceptance.json`. Throughput against k: "
          "`golden-al draft-lengths --measured RUN...` (timed runs) or `--curve-file CURVE` (assumed costs).", "",
          "| series | k | AL | per-request mean AL | histogram (0..k) | per-position acceptance |",
          "| --- | ---: | ---: | ---: | --- | --- |"]
    missing: dict[str, dict[str, str]] = {}
    for c in data["cells"]:
        md.append(f"| {c['label']} | {c['k']} | {c['al']:.3f} | " + " | ".join(nums(c[n]) for n in (
            "al_per_request_mean", "histogram", "per_position_acceptance")) + " |")
        missing.setdefault(c["label"], {}).update(c["unavailable"])
    return [*md, "", *(f"- {label}: no {name} ({why})" for label, gone in missing.items() for name, why in gone.items()),
            ""]


def write_report(series: Sequence[Series], inputs: Sequence[ReportInput], out_dir: str | Path, *,
                 title: str = "golden-al report", provenance: dict[str, Any] | None = None) -> ReportResult:
    """Write every plot + JSON pair and ``report.md`` into ``out_dir``.

    Kept whole: one plot and JSON pair per section, emitted in report order into one ``report.md``.
    """
    if not series:
        raise InputFileError("nothing to report: the inputs hold no curve points")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    prov = provenance if provenance is not None else collect()
    files: list[Path] = []

    def emit(name: str, data: dict[str, Any], draw: Any) -> str:
        files.append(_write_json(out / f"{name}.json", data, inputs, prov))
        files.append(draw(data, out / f"{name}.png"))
        return name

    al_data = al_vs_k_data(series)
    emit("al_vs_k", al_data, plots.plot_al_vs_k)
    pp_data = per_position_data(series)
    emit("per_position", pp_data, plots.plot_per_position)
    hist_names: list[tuple[Series, str, dict[str, Any]]] = []
    used: set[str] = set()
    for s in series:
        if not s.histograms:
            continue
        name = f"histograms_{slug(s.model)}_{s.mode}"
        while name in used:
            name += "_"
        used.add(name)
        hd = histogram_data(s)
        emit(name, hd, plots.plot_histograms)
        hist_names.append((s, name, hd))
    acc_data = acceptance_data(series)
    emit("acceptance", acc_data, plots.plot_acceptance)

    md: list[str] = [f"# {title}", ""]
    git = prov.get("git") or {}
    md += [f"Written by golden-al {prov.get('tool_version')} on {prov.get('ended')}"
           + (f" (git {git.get('commit', '')[:12]}{', dirty tree' if git.get('dirty') else ''})" if git else "")
           + ". Every plot `X.png` has its data in `X.json` beside it.", ""]
    md += ["## Inputs", "", "| file | kind | sha256 |", "| --- | --- | --- |"]
    md += [f"| `{i.path}` | {i.kind} | `{i.sha256[:16]}…` |" for i in inputs]
    md += ["", "## Acceptance length against draft length", "", "![AL against k](al_vs_k.png)", "",
           "AL = 1 + accepted drafts / verify steps (bonus token included), rounded to two decimals as the "
           "harnesses read it; the CI is the curve's 95% interval (measure's AL interval over independent "
           "clusters: requests, or batches of counter windows; rounded outwards to three decimals, as `fit` prints "
           "it); *fitted* is the shared "
           "per-position profile AL(k) = 1 + Σ_{j≤k} Π_{i≤j} c_i.", ""]
    for row in al_data["series"]:
        fitted = {f["k"]: f["al"] for f in row["fitted"]}
        flags: dict[int, list[str]] = {}
        for fl in row["flags"]:
            flags.setdefault(fl["k"], []).append(fl["kind"])
        md += [f"### {row['label']}", "", f"Source: `{row['source']}`", "",
               "| k | AL | 95% CI | origin | fitted | flags |", "| ---: | ---: | --- | --- | ---: | --- |"]
        for p in row["points"]:
            f = fitted.get(p["k"])
            md.append(f"| {p['k']} | {p['al']:.2f} | {_ci(p['ci95'])} | {p['origin']} | "
                      f"{'' if f is None else f'{f:.3f}'} | {', '.join(flags.get(p['k'], [])) or '-'} |")
        for fl in row["flags"]:
            md.append(f"\n- flag k={fl['k']} {fl['kind']}: {fl['message']}")
        md.append("")
    md += ["## Per-position acceptance", "", "![per-position acceptance](per_position.png)", ""]
    for row in pp_data["series"]:
        pu, pc = row.get("fitted_unconditional", []), row.get("fitted_conditional", [])
        mu = row.get("measured_unconditional", [])
        n = max(len(pu), len(mu))
        md += [f"**{row['label']}**" + (f" (measured at k={row['measured_at_k']})" if mu else ""), "",
               "| j | p_j fitted | c_j fitted | p_j measured |", "| ---: | ---: | ---: | ---: |"]
        for j in range(n):
            cells = [f"{v[j]:.3f}" if j < len(v) else "" for v in (pu, pc, mu)]
            md.append(f"| {j + 1} | " + " | ".join(cells) + " |")
        md.append("")
    if hist_names:
        md += ["## Measured per-step distributions against the engines' synthetic samplers", "",
               "Each engine's sampler is injected with the measured mean AL of that k; same mean, different "
               "spread (std of L per verify step below).", ""]
        for s, name, hd in hist_names:
            labels = list(hd["panels"][0]["samplers"]) if hd["panels"] else []
            md += [f"### {s.label}", "", f"![histograms]({name}.png)", "",
                   "| k | AL | std measured | " + " | ".join(f"std {lab}" for lab in labels) + " |",
                   "| ---: | ---: | ---: | " + " | ".join("---:" for _ in labels) + " |"]
            from distributions.acceptance import AcceptanceDistribution

            for panel in hd["panels"]:
                stds = []
                for lab in labels:
                    pmf = panel["samplers"][lab]["pmf"]
                    stds.append(f"{AcceptanceDistribution.from_pmf(pmf).std():.3f}" if pmf else "n/a")
                md.append(f"| {panel['k']} | {panel['measured_al']:.3f} | {panel['measured_std']:.3f} | "
                          + " | ".join(stds) + " |")
            md.append("")
    md += _acceptance_md(acc_data)
    md += ["", "## Provenance", "", "```json", json.dumps(prov, indent=2), "```", ""]
    report = atomic_write_text(out / "report.md", "\n".join(md))
    files.append(report)
    return ReportResult(report=report, files=files)
