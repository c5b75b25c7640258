"""``golden-al curves``: list and show the committed golden curves.

``curves list`` prints one row per curve (name, model, method, variant, draft lengths
per thinking mode, source); ``curves show MODEL`` prints every curve of MODEL (any
name form: key, alias, repo id, served name) as a table of AL per k and thinking mode,
with its settings and provenance. ``--format json`` prints the curves in our schema
(plus ``name``, ``path`` and ``format``) instead. ``--format legacy`` (show only)
prints each curve in the InferenceX ``golden_al_distribution`` shape.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from golden_al.cli._common import add_golden_dir_option, golden_dir

DESCRIPTION = __doc__

EXAMPLES = """\
examples:
  golden-al curves list
  golden-al curves show deepseek-ai/DeepSeek-V4-Pro
  golden-al curves show kimi-k3 --format json
  golden-al curves show minimax-m3 --variant gqa --format legacy
  golden-al curves list --golden-dir ../InferenceX/golden_al_distribution
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="curves_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="one line per curve")
    ls.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    ls.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    add_golden_dir_option(ls)
    show = sub.add_parser("show", help="every value of one model's curves")
    show.add_argument("model", metavar="MODEL", help="model key, alias, repo id or served name")
    show.add_argument("--method", help="only curves of this method")
    show.add_argument("--variant", help="only this variant (or curve name)")
    show.add_argument("--format", choices=("text", "json", "legacy", "speculation-profile"), default="text",
                      help="output format (default: text); speculation-profile: per mode and k, the "
                           "conditional and marginal acceptance rates with intervals, in the shape of "
                           "specdec_bench's speculation_profile.json")
    show.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    add_golden_dir_option(show)


def _rates(point: Any) -> dict[str, Any] | None:
    """Both rate conventions of one point with intervals (None: the point has no per-position counts)."""
    from distributions.uncertainty import rate_profile

    if not point.per_position_accepted or not point.num_verify_steps:
        return None
    ci = tuple(point.ci95) if point.ci95 else None
    return rate_profile(point.per_position_accepted, point.num_verify_steps, al_ci95=ci).as_dict()


def _curve_json(sc: Any) -> dict[str, Any]:
    data = sc.curve.model_dump(mode="json", exclude_none=True)
    for mode_name, block in sc.curve.modes().items():
        where = data["levels"][mode_name] if mode_name in data.get("levels", {}) else data[mode_name]
        for k, point in block.points.items():
            rates = _rates(point)
            if rates is not None:
                where["points"][str(k) if str(k) in where["points"] else k]["rates"] = rates
    return {"name": sc.name, "path": str(sc.path), "format": sc.format, **data}


def _speculation_profile(sc: Any) -> dict[str, Any]:
    """specdec_bench's ``speculation_profile.json`` shape, one entry per thinking mode and k: both
    conventions declared by name, so a consumer never has to guess which one it got."""
    profiles = []
    for mode_name, block in sc.curve.modes().items():
        for k in sorted(block.points):
            rates = _rates(block.points[k])
            entry = {"thinking": mode_name, "k": int(k), "golden_al": block.points[k].al}
            if rates is None:
                rates = {"acceptance_length": block.points[k].al, "conditional_accept_rates": None,
                         "marginal_accept_rates": None, "note": "no per-position counts in the curve"}
            profiles.append({**entry, **rates})
    return {"model": sc.curve.model, "curve": sc.name, "draft_method": sc.curve.draft.method,
            "conventions": {"conditional_accept_rates": "P(position j accepted | position j-1 accepted)",
                            "marginal_accept_rates": "P(position j accepted) = accepted at j / verify steps"},
            "profiles": profiles}


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() + "\n" for r in rows)


def _list(store: Any, fmt: str) -> str:
    from golden_al.golden import format_k_list

    if fmt == "json":
        return json.dumps([_curve_json(sc) for sc in store.curves], indent=2) + "\n"
    with_levels = any(sc.curve.levels for sc in store.curves)  # a column only when some curve has named levels
    rows = [["CURVE", "MODEL", "METHOD", "VARIANT", "THINKING_ON k", "THINKING_OFF k",
             *(["LEVELS k"] if with_levels else []), "SOURCE"]]
    for sc in sorted(store.curves, key=lambda s: (s.model, s.method, s.variant or "", s.name)):
        c = sc.curve
        on = format_k_list(c.thinking_on.points) if c.thinking_on else "-"
        off = format_k_list(c.thinking_off.points) if c.thinking_off else "-"
        levels = "; ".join(f"{name} {format_k_list(blk.points)}" for name, blk in c.levels.items()) or "-"
        src = c.provenance.source_url or (f"record {c.provenance.record_sha256[:12]}" if c.provenance.record_sha256
                                          else "(see provenance notes)")
        rows.append([sc.name, sc.model, sc.method, sc.variant or "-", on, off, *([levels] if with_levels else []),
                     src])
    return _table(rows) + f"{len(store.curves)} curves, {len(store.models())} models ({store.root})\n"


def _sampling_text(blk: Any) -> str:
    if blk.sampling is None:
        return "not recorded"
    s = blk.sampling.model_dump(exclude_none=True)
    kw = s.pop("chat_template_kwargs", None)
    text = ", ".join(f"{k}={v}" for k, v in s.items())
    if kw is not None:
        text += (", " if text else "") + "chat_template_kwargs=" + json.dumps(kw)
    return text or "not recorded"


def _show_one(sc: Any) -> str:
    from golden_al.plugin.values import format_value

    c = sc.curve
    d = c.draft
    out = [f"{sc.name}  ({sc.format}: {sc.path})"]
    out.append(f"  model:      {c.model}")
    out.append(f"  aliases:    {', '.join(c.aliases) or '-'}")
    draft = [f"method {d.method}"]
    draft += [f"variant {d.variant}"] if d.variant else []
    draft += [f"model {d.model}"] if d.model else []
    draft += [f"precision {d.precision}"] if d.precision else []
    draft += [f"draft_sample_method {d.draft_sample_method}"] if d.draft_sample_method else []
    draft += [f"rejection_sample_method {d.rejection_sample_method}"] if d.rejection_sample_method else []
    out.append(f"  draft:      {', '.join(draft)}")
    if c.engine:
        e = c.engine
        out.append("  engine:     " + ", ".join(x for x in (e.name, e.version, e.image, e.hardware) if x))
    if c.dataset:
        ds = c.dataset
        out.append("  dataset:    " + ", ".join(str(x) for x in (ds.name, ds.split, ds.category,
                                                                  f"{ds.num_prompts} prompts" if ds.num_prompts else None,
                                                                  ds.revision) if x))
    for m, blk in c.modes().items():
        out.append(f"  {m}: sampling {_sampling_text(blk)}; output_len {blk.output_len or 'not recorded'}")
    modes = c.modes()
    ks = sorted({k for blk in modes.values() for k in blk.points})
    rows = [["k", *modes.keys()]]
    for k in ks:
        row = [str(k)]
        for blk in modes.values():
            p = blk.points.get(k)
            if p is None:
                row.append("-")
                continue
            cell = f"{p.al:.2f}" if abs(round(p.al, 2) - p.al) < 1e-12 else format_value(p.al)
            if p.ci95:
                cell += f" [{format_value(p.ci95[0])}, {format_value(p.ci95[1])}]"
            if p.num_verify_steps:
                cell += f" ({p.num_verify_steps} steps)"
            if p.origin == "derived":
                cell += " derived"
            row.append(cell)
        rows.append(row)
    out += ["    " + line for line in _table(rows).splitlines()]
    pv = c.provenance
    for label, value in (("source", pv.source_url), ("record", pv.record_sha256), ("tool", pv.tool),
                         ("date", pv.date.isoformat() if pv.date else None), ("collector", pv.collector),
                         ("notes", pv.notes)):
        if value:
            out.append(f"  {label + ':':<11} {value}")
    return "\n".join(out) + "\n"


def _show(store: Any, args: argparse.Namespace) -> str:
    from golden_al.errors import NoGoldenValueError
    from golden_al.golden import write_legacy

    curves = store.curves_for(args.model, args.method, args.variant)
    if not curves:
        raise NoGoldenValueError(
            f"model {args.model!r} has no curve"
            + (f" with method {args.method!r}" if args.method else "")
            + (f" and variant {args.variant!r}" if args.variant else "")
            + f" ({'; '.join(sc.label() for sc in store.curves_for(args.model))})"
        )
    if args.format == "json":
        return json.dumps([_curve_json(sc) for sc in curves], indent=2) + "\n"
    if args.format == "legacy":
        return "\n".join(write_legacy(sc.curve) for sc in curves)
    if args.format == "speculation-profile":
        return json.dumps([_speculation_profile(sc) for sc in curves], indent=2) + "\n"
    return "\n".join(_show_one(sc) for sc in curves)


def run(args: argparse.Namespace) -> int:
    from golden_al.golden import load_store

    store = load_store(golden_dir(args.golden_dir))
    text = _list(store, args.format) if args.curves_command == "list" else _show(store, args)
    sys.stdout.write(text)
    return 0
