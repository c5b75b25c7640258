"""Draw the report plots from their JSON data (matplotlib, imported lazily, Agg canvas).

Every function takes the document made by :mod:`golden_al.reporting.data` and a PNG
path, draws with matplotlib's object API (``Figure`` + ``FigureCanvasAgg``: no pyplot,
no global backend switch, nothing shown on screen) and returns the path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["plot_acceptance", "plot_al_vs_k", "plot_histograms", "plot_per_position"]

_DPI = 110


def _figure(ncols: int, nrows: int = 1, *, width: float = 6.0, height: float = 4.2) -> Any:
    """A figure on the Agg canvas (matplotlib is the ``plot`` extra, which the CLI checks before any work)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=_DPI)
    return path


def _modes(series: list[dict[str, Any]]) -> list[str]:
    """thinking_on, thinking_off, then named levels (reasoning_effort_high, ...) in series order."""
    seen = list(dict.fromkeys(s["thinking"] for s in series))
    return [m for m in ("thinking_on", "thinking_off") if m in seen] + \
        [m for m in seen if m not in ("thinking_on", "thinking_off")]


def _colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]


def plot_al_vs_k(data: dict[str, Any], path: Path) -> Path:
    """AL against k per thinking mode: points (filled measured, hollow derived), 95% CI band, fitted profile."""
    series = data["series"]
    modes = _modes(series) or ["thinking_off"]
    fig = _figure(len(modes))
    axes = fig.subplots(1, len(modes), squeeze=False)[0]
    keys = list(dict.fromkeys(f"{s['model']} ({s['method']})" for s in series))
    by_model = dict(zip(keys, _colors(len(keys)), strict=True))
    for ax, mode in zip(axes, modes, strict=True):
        for s in series:
            if s["thinking"] != mode:
                continue
            color = by_model[f"{s['model']} ({s['method']})"]
            pts = s["points"]
            ks = [p["k"] for p in pts]
            als = [p["al"] for p in pts]
            label = s["label"].replace(f" {mode}", "")
            ax.plot(ks, als, color=color, lw=1.5, label=label)
            with_ci = [p for p in pts if p["ci95"]]
            if with_ci:
                ax.fill_between([p["k"] for p in with_ci], [p["ci95"][0] for p in with_ci],
                                [p["ci95"][1] for p in with_ci], color=color, alpha=0.2, lw=0)
            meas = [p for p in pts if p["origin"] == "measured"]
            der = [p for p in pts if p["origin"] != "measured"]
            ax.plot([p["k"] for p in meas], [p["al"] for p in meas], "o", color=color, ms=5)
            if der:
                ax.plot([p["k"] for p in der], [p["al"] for p in der], "o", mfc="white", color=color, ms=5)
            if s["fitted"]:
                ax.plot([f["k"] for f in s["fitted"]], [f["al"] for f in s["fitted"]], "--", color=color,
                        lw=1, alpha=0.8)
            for fl in s["flags"]:
                if fl["k"] in ks:
                    ax.annotate(fl["kind"], (fl["k"], als[ks.index(fl["k"])]), textcoords="offset points",
                                xytext=(4, -12), fontsize=7, color="crimson")
        ax.set_title(f"Acceptance length against draft length ({mode.replace('_', ' ')})")
        ax.set_xlabel("draft length k (drafted tokens per verify step)")
        ax.set_ylabel("AL (tokens per verify step, incl. bonus token)")
        ax.grid(alpha=0.3)
        handles, _labels = ax.get_legend_handles_labels()
        from matplotlib.lines import Line2D

        handles += [Line2D([], [], marker="o", ls="", color="gray", label="measured"),
                    Line2D([], [], marker="o", ls="", mfc="white", color="gray", label="derived"),
                    Line2D([], [], ls="--", color="gray", label="fitted profile")]
        ax.legend(handles=handles, fontsize=8, loc="lower right")
        ax.text(0.01, 0.99, "shaded: 95% CI", transform=ax.transAxes, va="top", fontsize=8, color="dimgray")
    return _save(fig, path)


def plot_per_position(data: dict[str, Any], path: Path) -> Path:
    """Unconditional p_j and conditional c_j against position j: fitted profile lines, measured markers."""
    series = data["series"]
    fig = _figure(2)
    ax_p, ax_c = fig.subplots(1, 2)
    for color, s in zip(_colors(len(series)), series, strict=True):
        for ax, fitted_key, meas_key in ((ax_p, "fitted_unconditional", "measured_unconditional"),
                                         (ax_c, "fitted_conditional", "measured_conditional")):
            if s.get(fitted_key):
                js = list(range(1, len(s[fitted_key]) + 1))
                ax.plot(js, s[fitted_key], "-", color=color, lw=1.5, label=f"{s['label']} (fitted)")
            if s.get(meas_key):
                js = list(range(1, len(s[meas_key]) + 1))
                ax.plot(js, s[meas_key], "o", color=color, ms=5,
                        label=f"{s['label']} (measured at k={s['measured_at_k']})")
    ax_p.set_title("Unconditional acceptance p_j = P(accepted drafts >= j)")
    ax_c.set_title("Conditional acceptance c_j = P(j accepted | j-1 accepted)")
    for ax in (ax_p, ax_c):
        ax.set_xlabel("draft position j")
        ax.set_ylabel("probability")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    return _save(fig, path)


def plot_histograms(data: dict[str, Any], path: Path) -> Path:
    """Per k: measured pmf of L against each engine sampler injected with the same mean."""
    panels = data["panels"]
    ncols = min(4, max(1, len(panels)))
    nrows = max(1, -(-len(panels) // ncols))
    fig = _figure(ncols, nrows, width=4.2, height=3.2)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    names = ["measured", *panels[0]["samplers"]] if panels else ["measured"]
    colors = dict(zip(names, _colors(len(names)), strict=True))
    width = 0.8 / len(names)
    for ax, panel in zip(axes, panels, strict=False):
        k = panel["k"]
        xs = list(range(1, k + 2))
        bars = [("measured", panel["measured_pmf"])]
        bars += [(name, v["pmf"]) for name, v in panel["samplers"].items()]
        for i, (name, pmf) in enumerate(bars):
            if pmf is None:
                continue
            ax.bar([x - 0.4 + (i + 0.5) * width for x in xs], pmf, width=width, color=colors[name],
                   label=name, edgecolor="black" if name == "measured" else "none", lw=0.5)
        ax.set_title(f"k={k}: measured AL {panel['measured_al']:.2f}", fontsize=9)
        ax.set_xticks(xs)
        ax.set_xlabel("tokens per verify step L", fontsize=8)
        ax.set_ylabel("probability", fontsize=8)
        ax.grid(alpha=0.3, axis="y")
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(6, len(labels)), fontsize=8)
    fig.suptitle(f"{data['label']}: measured per-step distribution vs. what each engine injects for the same AL")
    return _save(fig, path)


def plot_acceptance(data: dict[str, Any], path: Path) -> Path:
    """Left: the token-weighted AL and the per-request mean AL against k, each request's own AL as a dot.
    Right: the per-position acceptance rate of every cell, one line per k."""
    cells = data["cells"]
    labels = list(dict.fromkeys(c["label"] for c in cells))
    colors = dict(zip(labels, _colors(len(labels)), strict=True))
    fig = _figure(2)
    ax_a, ax_p = fig.subplots(1, 2)
    for label in labels:
        mine = [c for c in cells if c["label"] == label]
        color = colors[label]
        ax_a.plot([c["k"] for c in mine], [c["al"] for c in mine], "-o", color=color, ms=4,
                  label=f"{label}: weighted by steps")
        means = [c for c in mine if c["al_per_request_mean"] is not None]
        ax_a.plot([c["k"] for c in means], [c["al_per_request_mean"] for c in means], "--s", color=color, ms=4,
                  label=f"{label}: mean of requests")
        for c in means:
            ax_a.plot([c["k"] + 0.15] * len(c["request_als"]), c["request_als"], ".", color=color, alpha=0.25, ms=3)
        for c in (c for c in mine if c["per_position_acceptance"]):
            rates = c["per_position_acceptance"]
            ax_p.plot(range(1, len(rates) + 1), rates, "-o", color=color, ms=3, alpha=0.4 + 0.6 * c["k"] / 8)
    for ax, title, x, y in ((ax_a, "AL: step-weighted vs the mean of requests (dots)", "draft length k", "AL"),
                            (ax_p, "Per-position acceptance rate, a line per k", "draft position j", "rate")):
        ax.set(title=title, xlabel=x, ylabel=y)
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax_a.legend(fontsize=7)
    return _save(fig, path)
