"""vLLM runs: ``vllm bench serve`` results (aggregate counters), with their Prometheus snapshots or
the server log for clusters, and the server log alone (``SpecDecoding metrics`` windows)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from distributions.counts import AcceptanceCounts
from golden_al import plugin

from . import (
    BENCH_ACCEPTED,
    BENCH_DRAFT_TOKENS,
    BENCH_DRAFTS,
    BENCH_POSITION_RATES,
    PROFILE,
)
from .counters import VllmSpecCounters

__all__ = ["bench_timing", "import_vllm_bench", "import_vllm_log", "log_windows"]


def positions_from_rates(rates: Sequence[Any], drafts: float, path: Path) -> list[int]:
    """Accepted drafts per position from vLLM bench's per-position rates and its draft count."""
    out = []
    for j, r in enumerate(rates):
        if not isinstance(r, (int, float)) or not math.isfinite(r) or not 0 <= r <= 1:
            raise plugin.InputFileError(f"{BENCH_POSITION_RATES}[{j}] = {r!r}, expected a rate in [0, 1]", path=path)
        v = r * drafts
        if abs(v - round(v)) > 1e-6 * max(1.0, drafts):
            raise plugin.InputFileError(f"{BENCH_POSITION_RATES}[{j}] = {r!r} times {drafts:g} drafts is not a count ({v:.4f})",
                                        path=path, hint="the file was edited or rounded")
        out.append(round(v))
    return out


def _bench_counts(doc: Mapping[str, Any], path: Path, k: int | None) -> AcceptanceCounts:
    missing = [key for key in (BENCH_DRAFTS, BENCH_DRAFT_TOKENS, BENCH_ACCEPTED, BENCH_POSITION_RATES) if key not in doc]
    if missing:
        raise plugin.InputFileError(
            f"no spec-decode counts ({', '.join(missing)} absent; keys seen: {sorted(doc)[:12]}...)", path=path,
            hint="older vllm bench serve versions do not save them: pass the server's /metrics snapshots "
            "(before and after) or its log (format vllm-log) instead")
    drafts = float(doc[BENCH_DRAFTS])
    pos = positions_from_rates(doc[BENCH_POSITION_RATES], drafts, path)
    try:
        return VllmSpecCounters(drafts, doc[BENCH_DRAFT_TOKENS], doc[BENCH_ACCEPTED], tuple(pos)).counts(
            k or len(pos) or None)
    except Exception as exc:
        raise plugin.InputFileError(f"the spec-decode counts are inconsistent: {exc}", path=path) from None


def _window_counts(snapshots: Sequence[Path], k: int | None) -> list[AcceptanceCounts]:

    parsed = []
    for p in snapshots:
        snap = plugin.parse_metrics_text(plugin.read_capped(p).decode("utf-8", errors="replace"), source=p)
        c = plugin.spec_counters(snap, PROFILE.name)
        assert isinstance(c, VllmSpecCounters)
        parsed.append((p, c))
    out = []
    for (pa, a), (pb, b) in itertools.pairwise(parsed):
        try:
            d = plugin.counters_delta(a, b)
        except Exception as exc:
            raise plugin.InputFileError(f"counters went backwards between {pa.name} and {pb.name} ({exc}): the "
                                        "snapshots are not in time order, or the server restarted", path=pb) from None
        assert isinstance(d, VllmSpecCounters)
        if d.num_drafts > 0:
            out.append(d.counts(k))
    return out


def log_windows(path: Path, k: int | None, notes: list[str] | None = None) -> list[AcceptanceCounts]:
    """The counts of every ``SpecDecoding metrics`` line of a vLLM log (one window each); what the reader left out
    is added to ``notes``."""

    from .logs import VllmSpecDecodingRecord

    scan = plugin.scan_log_text(plugin.read_capped(path).decode("utf-8", errors="replace"), source=path)
    if notes is not None:
        notes += scan.notes
    out = []
    for r in scan.of("vllm"):
        if not isinstance(r, VllmSpecDecodingRecord) or r.drafted_tokens <= 0:
            continue
        kk = k or len(r.per_position_rates)
        if not kk:
            raise plugin.InputFileError(f"line {r.line_no}: no per-position rates and no --draft-len", path=path)
        drafts = r.drafted_tokens / kk
        if abs(drafts - round(drafts)) > 1e-9:
            raise plugin.InputFileError(f"line {r.line_no}: Drafted {r.drafted_tokens} tokens is not a multiple of "
                                        f"k={kk}", path=path, hint="pass the server's --draft-len")
        # the log prints each rate to 3 decimals: the per-position counts are rounded, so the histogram
        # is only as exact as that; totals (accepted, drafted) are exact
        pos = [round(x * drafts) for x in r.per_position_rates] or None
        if pos is not None and sum(pos) != r.accepted_tokens:
            pos[0] += r.accepted_tokens - sum(pos)  # keep the exact total; the rounding lands on position 1
        try:
            out.append(VllmSpecCounters(round(drafts), r.drafted_tokens, r.accepted_tokens, tuple(pos or ())).counts(kk))
        except Exception as exc:
            raise plugin.InputFileError(f"line {r.line_no}: the interval's counts are inconsistent: {exc}",
                                        path=path) from None
    return out


def bench_timing(doc: Mapping[str, Any]) -> list[plugin.TimedUnit]:
    """Each request's decode steps as ``vllm bench serve --save-detailed`` timed them: its ``itls`` (seconds
    between streamed chunks after the first; one chunk per engine step, ``vllm/benchmarks/lib/
    endpoint_request_func.py`` at 009e6d4a) over its ``output_lens`` less the prefill's token, at
    ``max_concurrency`` requests; none when the file lacks either or the concurrency was unbounded."""
    itls, lens, batch = doc.get("itls"), doc.get("output_lens"), doc.get("max_concurrency")
    if not (isinstance(itls, list) and isinstance(lens, list) and len(itls) == len(lens) and isinstance(batch, int)):
        return []
    return [plugin.TimedUnit(batch=batch, steps=len(gaps), tokens=int(n) - 1, wall_ms=1000.0 * sum(gaps), load1=None)
             for gaps, n in zip(itls, lens, strict=True) if isinstance(gaps, list) and isinstance(n, int) and gaps
             and all(isinstance(g, (int, float)) and math.isfinite(g) and g >= 0 for g in gaps)]


def import_vllm_bench(paths: Sequence[Path], opts: plugin.ImportOptions, *, log: Path | None = None,
                       what: str = "vllm-bench") -> plugin.ImportedRun:
    """A ``vllm bench serve`` result, with its Prometheus snapshots or the server log for clusters."""
    benches = [p for p in paths if plugin.looks_json(p)]
    snaps = [p for p in paths if p not in benches]
    if len(benches) != 1:
        raise plugin.UsageError(f"vllm-bench imports one bench JSON per record, got {len(benches)}: "
                                + ", ".join(map(str, benches or paths)),
                                hint="import each cell on its own; /metrics snapshots (text) may come with it")
    bench = benches[0]
    doc = plugin.read_json_doc(bench)
    agg = _bench_counts(doc, bench, opts.draft_len) if BENCH_DRAFTS in doc or not (snaps or log) else None
    k = opts.draft_len or (agg.k if agg is not None else None)
    warnings = [f"imported from {what}: counts are the server's aggregate spec-decode counters over the run "
                "(no request is attributed)"]
    if log is not None:
        windows = log_windows(log, k, warnings)
        source = "vllm-log-intervals"
    elif len(snaps) >= 2:
        windows = _window_counts(snaps, k)
        source = "vllm-prometheus-windows"
    else:
        if snaps:
            warnings.append(f"one /metrics snapshot ({snaps[0].name}) cannot make a window; it was not used")
        assert agg is not None
        windows = [agg]
        source = "vllm-bench-aggregate"
    if not windows:
        raise plugin.InputFileError("no window with verify steps", path=log or bench)
    k = k or windows[0].k
    if agg is not None and len(windows) > 1:
        tot = sum(float(w.num_verify_steps) for w in windows)
        if abs(tot - float(agg.num_verify_steps)) > 0.5:
            warnings.append(f"the windows hold {tot:g} drafts, the bench JSON {agg.num_verify_steps:g}: the "
                            "snapshots or log intervals do not cover exactly the benchmark run")
    lens = [int(x) for x in doc.get("output_lens") or [] if isinstance(x, (int, float))]
    out_tokens = [sum(lens) if lens else int(doc.get("total_output_tokens") or 0)] if len(windows) == 1 else []
    completed = int(doc.get("completed") or 0)
    name = opts.dataset or str(doc.get("dataset_name") or "unknown")
    ds = plugin.ImportedDataset(name, completed, f"{what}:{name}:{doc.get('num_prompts')}", f"imported {what}: {bench.name}")
    files = [bench, *snaps, *([log] if log else [])]
    return plugin.ImportedRun(plugin.ImportedWindows(windows, k, source, out_tokens), k=k, opts=opts, engine="vllm", source=source, files=files,
                   model=str(doc.get("model_id") or "") or None, num_requests=completed, dataset=ds,
                   warnings=warnings, max_concurrency=doc.get("max_concurrency"), timed=bench_timing(doc),
                   timing_source="vllm-bench-itl")


def import_vllm_log(paths: Sequence[Path], opts: plugin.ImportOptions) -> list[plugin.ImportedRun]:
    """Records from vLLM server logs alone (their ``SpecDecoding metrics`` windows)."""
    out = []
    for p in paths:
        warnings = ["imported from a vLLM server log: aggregate counter intervals only (no request is attributed); "
                    "per-position counts rest on rates printed to 3 decimals"]
        windows = log_windows(p, opts.draft_len, warnings)
        if not windows:
            raise plugin.InputFileError(f"no '{PROFILE.log_pattern('spec-head').marker}' line with drafts", path=p,
                                        hint="start vLLM without --disable-log-stats, with speculative decoding")
        k = windows[0].k
        name = opts.dataset or "unknown"
        out.append(plugin.ImportedRun(plugin.ImportedWindows(windows, k, "vllm-log-intervals", []), k=k, opts=opts, engine="vllm",
                           source="vllm-log-intervals", files=[p], model=None, num_requests=0,
                           dataset=plugin.ImportedDataset(name, 0, f"vllm-log:{name}", f"imported vllm-log: {p.name}"),
                           warnings=warnings))
    return out


def import_bench_files(paths: Sequence[Path], opts: plugin.ImportOptions) -> list[plugin.ImportedRun]:
    """``golden-al import vllm-bench``: :func:`import_vllm_bench` as the profile's importer hook."""
    return [import_vllm_bench(paths, opts)]
