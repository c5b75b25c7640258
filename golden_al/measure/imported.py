"""Measurement records from results users already hold (``golden-al import``).

Formats (each confirmed in the upstream source named):

* ``vllm-bench``: ``vllm bench serve --save-result [--save-detailed]`` JSON
  (vllm-project/vllm ``vllm/benchmarks/serve.py``, commit 009e6d4a: ``main``
  writes ``model_id``, ``num_prompts``, ``max_concurrency``, ``completed``,
  ``total_output_tokens``, ``output_lens`` with ``--save-detailed``, and, when the
  server exposes spec-decode counters, ``spec_decode_num_drafts``,
  ``spec_decode_draft_tokens``, ``spec_decode_accepted_tokens`` and
  ``spec_decode_per_position_acceptance_rates``: deltas of ``/metrics`` over the
  run, rates = accepted at the position / drafts). Alone that is **one aggregate
  window**, which carries no interval; with two or more ``/metrics`` snapshots
  taken during the run (Prometheus text files, in time order) each pair of
  consecutive snapshots is a window, and the windows are the clusters.
* ``vllm-log``: a vLLM server log; every ``SpecDecoding metrics: ...`` line is one
  ``--log-stats`` interval (``vllm/v1/spec_decode/metrics.py``
  ``SpecDecodingLogging.log``, 0.33.0) and one cluster. Aggregate only: no request
  is attributed, and the last partial interval is never logged.
* ``inferencex-speedbench``: the results directory of InferenceX's SPEED-Bench
  collector (SemiAnalysisAI/InferenceX
  ``benchmarks/single_node/speedbench/*_fp4_b300_vllm.sh``, commit 843c6254f): per
  cell ``speedbench_{on,off}_mtp{K}`` (the vLLM bench JSON above) and
  ``server_{on,off}_mtp{K}.log``, and ``speedbench-reference-al.yaml`` whose header
  comments give the category, output length, sampling and chat-template kwargs per
  thinking mode. The server log's intervals are the clusters when it has them.

Every record says ``mode: imported`` and names what it was imported from
(``provenance.imported_from`` with each file's sha256); counts that rest on
aggregate counters say so in ``warnings``. Readers are bounded in bytes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributions.counts import AcceptanceCounts, tidy_count
from golden_al.engines import vllm as vllm_engine
from golden_al.errors import InputFileError, UsageError
from golden_al.measurement import (
    REQUESTS_FILE,
    DatasetInfo,
    MeasurementRecord,
    ModelInfo,
    RequestResult,
    SamplingInfo,
    Uncertainty,
    append_request_result,
    write_record,
)
from golden_al.provenance import collect, sha256_file

__all__ = ["FORMATS", "ImportOptions", "Imported", "import_files", "write_imported"]

FORMATS = ("vllm-bench", "vllm-log", "inferencex-speedbench")
MAX_BYTES = 1 << 30
"""Largest file read (1 GiB): bench JSON with --save-detailed texts and long server logs fit."""

_VB_DRAFTS = vllm_engine.BENCH_DRAFTS
_VB_DRAFT_TOKENS = vllm_engine.BENCH_DRAFT_TOKENS
_VB_ACCEPTED = vllm_engine.BENCH_ACCEPTED
_VB_RATES = vllm_engine.BENCH_POSITION_RATES
_IX_CELL = re.compile(r"^speedbench_(?P<mode>on|off)_mtp(?P<k>\d+)(?:\.json)?$")
_IX_MODE_LINE = re.compile(r"^#\s*thinking_(?P<mode>on|off)\s*:\s*temp\s+(?P<t>\S+)\s+top_p\s+(?P<p>\S+)"
                           r"(?:\s+top_k\s+(?P<k>\S+))?.*?(?:\|\s*chat_template_kwargs:\s*(?P<kw>.*))?$")
_IX_DATASET_LINE = re.compile(r"^#\s*dataset:\s*(?P<cat>\S+)\s*\|\s*output_len:\s*(?P<len>\d+)")


@dataclass
class ImportOptions:
    """What the files do not say (each may be required by a format)."""

    model: str | None = None
    draft_method: str | None = None
    draft_len: int | None = None
    thinking: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    dataset: str | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Imported:
    """One imported cell: its record and its clusters (lines of ``requests.jsonl``)."""

    record: MeasurementRecord
    rows: list[RequestResult]


def _read(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputFileError(f"file is {size} bytes, more than the {MAX_BYTES} read", path=path,
                                 hint="split it, or import the part that holds the run")
        return path.read_bytes()
    except OSError as exc:
        raise InputFileError(f"cannot read: {exc.strerror or exc}", path=path) from None


def _json(path: Path) -> Mapping[str, Any]:
    try:
        value = json.loads(_read(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(f"not a JSON document: {exc}", path=path,
                             hint="a vllm bench serve --save-result file is one JSON object") from None
    if not isinstance(value, Mapping):
        raise InputFileError(f"expected a JSON object, got {type(value).__name__}", path=path)
    return value


def _positions_from_rates(rates: Sequence[Any], drafts: float, path: Path) -> list[int]:
    out = []
    for j, r in enumerate(rates):
        if not isinstance(r, (int, float)) or not math.isfinite(r) or not 0 <= r <= 1:
            raise InputFileError(f"{_VB_RATES}[{j}] = {r!r}, expected a rate in [0, 1]", path=path)
        v = r * drafts
        if abs(v - round(v)) > 1e-6 * max(1.0, drafts):
            raise InputFileError(f"{_VB_RATES}[{j}] = {r!r} times {drafts:g} drafts is not a count ({v:.4f})",
                                 path=path, hint="the file was edited or rounded")
        out.append(round(v))
    return out


def _bench_counts(doc: Mapping[str, Any], path: Path, k: int | None) -> AcceptanceCounts:
    missing = [key for key in (_VB_DRAFTS, _VB_DRAFT_TOKENS, _VB_ACCEPTED, _VB_RATES) if key not in doc]
    if missing:
        raise InputFileError(
            f"no spec-decode counts ({', '.join(missing)} absent; keys seen: {sorted(doc)[:12]}...)", path=path,
            hint="older vllm bench serve versions do not save them: pass the server's /metrics snapshots "
            "(before and after) or its log (format vllm-log) instead")
    drafts = float(doc[_VB_DRAFTS])
    pos = _positions_from_rates(doc[_VB_RATES], drafts, path)
    try:
        return vllm_engine.counts_from_counters(drafts, doc[_VB_DRAFT_TOKENS], doc[_VB_ACCEPTED], pos or None,
                                          k=k or len(pos) or None)
    except Exception as exc:
        raise InputFileError(f"the spec-decode counts are inconsistent: {exc}", path=path) from None


def _window_counts(snapshots: Sequence[Path], k: int | None) -> list[AcceptanceCounts]:
    from golden_al.formats import prometheus as prom

    parsed = []
    for p in snapshots:
        snap = prom.parse_metrics_text(_read(p).decode("utf-8", errors="replace"), source=p)
        c = prom.spec_counters(snap, "vllm")
        assert isinstance(c, prom.VllmSpecCounters)
        parsed.append((p, c))
    out = []
    for (pa, a), (pb, b) in itertools.pairwise(parsed):
        try:
            d = prom.counters_delta(a, b)
        except Exception as exc:
            raise InputFileError(f"counters went backwards between {pa.name} and {pb.name} ({exc}): the "
                                 "snapshots are not in time order, or the server restarted", path=pb) from None
        assert isinstance(d, prom.VllmSpecCounters)
        if d.num_drafts <= 0:
            continue
        out.append(vllm_engine.counts_from_counters(d.num_drafts, d.num_draft_tokens, d.num_accepted_tokens,
                                              list(d.accepted_per_position) or None, k=k))
    return out


def _log_windows(path: Path, k: int | None) -> list[AcceptanceCounts]:
    from golden_al.formats import logs

    scan = logs.scan_log_text(_read(path).decode("utf-8", errors="replace"), source=path)
    out = []
    for r in scan.of("vllm"):
        if not isinstance(r, logs.VllmSpecDecodingRecord) or r.drafted_tokens <= 0:
            continue
        kk = k or len(r.per_position_rates)
        if not kk:
            raise InputFileError(f"line {r.line_no}: no per-position rates and no --draft-len", path=path)
        drafts = r.drafted_tokens / kk
        if abs(drafts - round(drafts)) > 1e-9:
            raise InputFileError(f"line {r.line_no}: Drafted {r.drafted_tokens} tokens is not a multiple of "
                                 f"k={kk}", path=path, hint="pass the server's --draft-len")
        # the log prints each rate to 3 decimals: the per-position counts are rounded, so the histogram
        # is only as exact as that; totals (accepted, drafted) are exact
        pos = [round(x * drafts) for x in r.per_position_rates] or None
        if pos is not None and sum(pos) != r.accepted_tokens:
            pos[0] += r.accepted_tokens - sum(pos)  # keep the exact total; the rounding lands on position 1
        try:
            out.append(vllm_engine.counts_from_counters(round(drafts), r.drafted_tokens, r.accepted_tokens, pos, k=kk))
        except Exception as exc:
            raise InputFileError(f"line {r.line_no}: the interval's counts are inconsistent: {exc}",
                                 path=path) from None
    return out


def _rows(windows: Sequence[AcceptanceCounts], k: int, what: str, output_tokens: Sequence[int]) -> list[RequestResult]:
    rows = []
    for i, c in enumerate(windows):
        rows.append(RequestResult(
            index=i, request_id=f"{what}-{i}", draft_len=k, prompt_hash="",
            num_output_tokens=int(output_tokens[i]) if i < len(output_tokens) else 0,
            num_verify_steps=c.num_verify_steps, num_accepted_drafts=c.num_accepted_drafts,
            histogram=[tidy_count(float(v)) for v in c.histogram or ()],
            per_position_accepted=[tidy_count(float(v)) for v in c.per_position_accepted or ()],
            extra={"imported": what, "window": i, "unit": []}))
    return rows


def _record(rows: list[RequestResult], *, k: int, opts: ImportOptions, engine: str, source: str, files: Sequence[Path],
            model: str | None, num_requests: int, dataset: DatasetInfo, warnings: list[str],
            max_concurrency: Any = None) -> Imported:
    from distributions import units
    from distributions.uncertainty import al_interval_result

    missing = [name for name, v in (("--thinking", opts.thinking), ("--temperature", opts.temperature),
                                    ("--max-tokens", opts.max_tokens)) if v is None]
    if missing:
        raise UsageError(f"{files[0]} does not say {', '.join(missing)}: pass them",
                         hint="the record keeps the settings the run used; fit refuses records without them")
    steps = math.fsum(float(r.num_verify_steps) for r in rows)
    acc = math.fsum(float(r.num_accepted_drafts) for r in rows)
    if steps <= 0:
        raise InputFileError("no verify steps in the imported counts: AL is undefined", path=files[0])
    al = units.al_from_counts(acc, steps)
    warn = list(warnings)
    unit = "imported counter window"
    if len(rows) >= 2:
        res = al_interval_result([float(r.num_accepted_drafts) for r in rows],
                                 [float(r.num_verify_steps) for r in rows], seed=0, draft_len=k)
        ci = (max(1.0, res.low), min(float(k + 1), res.high))
        uncertainty = Uncertainty.of(res, unit)
        if res.warning:
            warn.append(res.warning)
    else:
        ci = (1.0, float(k + 1))
        uncertainty = Uncertainty(method="none: one aggregate window", clusters=1, confidence=0.95, unit=unit)
        warn.append("one aggregate window: the counts carry no interval, so al_ci95 is the whole range [1, k+1]; "
                    "import /metrics snapshots taken during the run, or the server log, for windows")
    hist = [tidy_count(math.fsum(float(r.histogram[j]) for r in rows)) for j in range(k + 1)]
    pos = [tidy_count(math.fsum(float(r.per_position_accepted[j]) for r in rows)) for j in range(k)]
    rec = MeasurementRecord(
        engine=engine, mode="imported", target=ModelInfo(name=opts.model or model or "unknown", source="server"),
        draft=ModelInfo(name=f"{opts.draft_method or 'unknown'} draft", source="server"),
        draft_method=opts.draft_method or "unknown", draft_len=k, thinking=opts.thinking,  # type: ignore[arg-type]
        chat_template_kwargs=dict(opts.chat_template_kwargs),
        sampling=SamplingInfo(temperature=float(opts.temperature or 0.0), top_p=float(opts.top_p or 1.0),
                              top_k=opts.top_k, max_tokens=int(opts.max_tokens or 1)),
        dataset=dataset, al=al, al_ci95=(float(ci[0]), float(ci[1])), uncertainty=uncertainty, al_source=source,
        num_requests=num_requests,
        num_verify_steps=tidy_count(steps), num_accepted_drafts=tidy_count(acc), per_position_accepted=pos,
        histogram=hist, per_request_file=REQUESTS_FILE, warnings=warn,
        provenance={**collect(), "imported_from": [{"path": str(p), "sha256": sha256_file(p)} for p in files],
                    **({"max_concurrency": max_concurrency} if max_concurrency is not None else {})},
    )
    return Imported(rec, rows)


def _dataset(name: str, count: int, key: str, source: str) -> DatasetInfo:
    h = hashlib.sha256(key.encode()).hexdigest()
    return DatasetInfo(name=name, count=count, hash=h, source_hash=h, source=source)


def _import_vllm_bench(paths: Sequence[Path], opts: ImportOptions, *, log: Path | None = None,
                       what: str = "vllm-bench") -> Imported:
    benches = [p for p in paths if _looks_json(p)]
    snaps = [p for p in paths if p not in benches]
    if len(benches) != 1:
        raise UsageError(f"vllm-bench imports one bench JSON per record, got {len(benches)}: "
                         + ", ".join(map(str, benches or paths)),
                         hint="import each cell on its own; /metrics snapshots (text) may come with it")
    bench = benches[0]
    doc = _json(bench)
    agg = _bench_counts(doc, bench, opts.draft_len) if _VB_DRAFTS in doc or not (snaps or log) else None
    k = opts.draft_len or (agg.k if agg is not None else None)
    warnings = [f"imported from {what}: counts are the server's aggregate spec-decode counters over the run "
                "(no request is attributed)"]
    if log is not None:
        windows = _log_windows(log, k)
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
        raise InputFileError("no window with verify steps", path=log or bench)
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
    ds = _dataset(name, completed, f"{what}:{name}:{doc.get('num_prompts')}", f"imported {what}: {bench.name}")
    files = [bench, *snaps, *([log] if log else [])]
    return _record(_rows(windows, k, source, out_tokens), k=k, opts=opts, engine="vllm", source=source, files=files,
                   model=str(doc.get("model_id") or "") or None, num_requests=completed, dataset=ds,
                   warnings=warnings, max_concurrency=doc.get("max_concurrency"))


def _looks_json(p: Path) -> bool:
    head = _read(p)[:64].lstrip()
    return head.startswith(b"{")


def _import_vllm_log(paths: Sequence[Path], opts: ImportOptions) -> list[Imported]:
    out = []
    for p in paths:
        windows = _log_windows(p, opts.draft_len)
        if not windows:
            raise InputFileError(f"no '{vllm_engine.PROFILE.log_pattern('spec-head').marker}' line with drafts", path=p,
                                 hint="start vLLM without --disable-log-stats, with speculative decoding")
        k = windows[0].k
        name = opts.dataset or "unknown"
        out.append(_record(_rows(windows, k, "vllm-log-intervals", []), k=k, opts=opts, engine="vllm",
                           source="vllm-log-intervals", files=[p], model=None, num_requests=0,
                           dataset=_dataset(name, 0, f"vllm-log:{name}", f"imported vllm-log: {p.name}"),
                           warnings=["imported from a vLLM server log: aggregate counter intervals only (no request "
                                     "is attributed); per-position counts rest on rates printed to 3 decimals"]))
    return out


def _inferencex_header(path: Path) -> dict[str, Any]:
    info: dict[str, Any] = {"modes": {}}
    for line in _read(path).decode("utf-8", errors="replace").splitlines()[:40]:
        m = _IX_DATASET_LINE.match(line.strip())
        if m:
            info["category"], info["output_len"] = m.group("cat"), int(m.group("len"))
        m = _IX_MODE_LINE.match(line.strip())
        if m:
            kw_text = (m.group("kw") or "").strip()
            try:
                kw = json.loads(kw_text) if kw_text else {}
            except json.JSONDecodeError:
                kw = {}
            info["modes"][m.group("mode")] = {"temperature": float(m.group("t")), "top_p": float(m.group("p")),
                                              "top_k": int(m.group("k")) if m.group("k") else None, "kwargs": kw}
    return info


def _import_inferencex(paths: Sequence[Path], opts: ImportOptions) -> list[Imported]:
    if len(paths) != 1 or not paths[0].is_dir():
        raise UsageError("inferencex-speedbench imports one results directory (speedbench_results/)")
    d = paths[0]
    cells = sorted((m.group("mode"), int(m.group("k")), p) for p in d.iterdir() if (m := _IX_CELL.match(p.name)))
    if not cells:
        raise InputFileError("no speedbench_{on,off}_mtp{K} result file", path=d,
                             hint="the collector writes them with --result-filename speedbench_${mode}_mtp${mtp}")
    yaml_files = sorted(d.glob("*.yaml"))
    header = _inferencex_header(yaml_files[0]) if yaml_files else {"modes": {}}
    out = []
    for mode, k, bench in cells:
        m = header["modes"].get(mode, {})
        cell_opts = ImportOptions(
            model=opts.model, draft_method=opts.draft_method or "mtp", draft_len=k, thinking=mode,
            temperature=opts.temperature if opts.temperature is not None else m.get("temperature"),
            top_p=opts.top_p if opts.top_p is not None else m.get("top_p"),
            top_k=opts.top_k if opts.top_k is not None else m.get("top_k"),
            max_tokens=opts.max_tokens or header.get("output_len"),
            dataset=opts.dataset or (f"speed-bench:{header['category']}" if "category" in header else None),
            chat_template_kwargs=opts.chat_template_kwargs or m.get("kwargs") or {})
        log = d / f"server_{mode}_mtp{k}.log"
        use_log = log.exists() and bool(_log_windows(log, k))
        out.append(_import_vllm_bench([bench], cell_opts, log=log if use_log else None,
                                      what="inferencex-speedbench"))
    return out


def import_files(fmt: str, paths: Sequence[str | Path], opts: ImportOptions) -> list[Imported]:
    """Records from ``paths`` in format ``fmt`` (see the module docstring)."""
    ps = [Path(p) for p in paths]
    for p in ps:
        if not p.exists():
            raise InputFileError("no such file or directory", path=p)
    if fmt == "vllm-bench":
        return [_import_vllm_bench(ps, opts)]
    if fmt == "vllm-log":
        return _import_vllm_log(ps, opts)
    if fmt == "inferencex-speedbench":
        return _import_inferencex(ps, opts)
    raise UsageError(f"unknown import format {fmt!r}", hint="one of " + ", ".join(FORMATS))


def write_imported(items: Sequence[Imported], out: str | Path) -> list[Path]:
    """Write each record (and its clusters) into ``out`` (one cell) or ``out/thinking_{mode}/k{K}``."""
    base = Path(out)
    dirs = []
    for item in items:
        r = item.record
        d = base if len(items) == 1 else base / f"thinking_{r.thinking}" / f"k{r.draft_len}"
        d.mkdir(parents=True, exist_ok=True)
        if (d / "measurement.json").exists():
            raise UsageError(f"{d} already holds a record", hint="import into an empty --out")
        tmp = d / (REQUESTS_FILE + ".tmp")
        tmp.unlink(missing_ok=True)
        for row in item.rows:
            append_request_result(tmp, row)
        tmp.replace(d / REQUESTS_FILE)
        write_record(r, d)
        dirs.append(d)
    return dirs
