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

* ``sglang-bench``: ``python -m sglang.bench_serving --output-file F.jsonl
  [--output-details]`` (sgl-project/sglang ``python/sglang/benchmark/serving.py``,
  commit 00f9ec47): one JSON object per run, whose only spec-decode figure is
  ``accept_length`` (``/server_info`` ``avg_spec_accept_length`` after the run), with
  the server's arguments in ``server_info``. bench_serving saves no per-request
  ``meta_info`` (not even with ``--output-details``), so a run alone is **one aggregate
  window** without an interval, labelled so; its verify steps are estimated from the
  output tokens. Saved SGLang responses (JSON lines of ``/generate`` or OpenAI
  responses carrying ``meta_info`` / ``sglext.spec_tokens_details``, e.g. from a
  harness that kept them) given with the run, or alone, make one cluster per request.
* ``sglang-log``: an SGLang server log; each ``Decode batch ... accept len: X`` line
  (``python/sglang/srt/managers/scheduler_components/metrics_reporter.py``, 0.5.23) is
  one window of ``--decode-log-interval`` batches and one cluster; its start-up
  ``server_args=ServerArgs(...)`` line (``python/sglang/srt/entrypoints/engine.py``)
  gives k, the model and the interval. Aggregate only: steps are estimated as
  interval x ``#running-req`` and ``accept len`` is printed to 2 decimals.

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
from distributions.errors import DistributionError
from golden_al.engines import sglang as sglang_engine
from golden_al.engines import vllm as vllm_engine
from golden_al.errors import InputFileError, MixedDraftLengthsError, UsageError
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

FORMATS = ("vllm-bench", "vllm-log", "inferencex-speedbench", "sglang-bench", "sglang-log")
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
    decode_log_interval: int | None = None  #: SGLang ``--decode-log-interval`` (sglang-log), when the log lacks it


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
    from golden_al.formats import counters as prom
    from golden_al.formats.counters.vllm import VllmSpecCounters
    from golden_al.formats.prometheus import parse_metrics_text

    parsed = []
    for p in snapshots:
        snap = parse_metrics_text(_read(p).decode("utf-8", errors="replace"), source=p)
        c = prom.spec_counters(snap, vllm_engine.PROFILE.name)
        assert isinstance(c, VllmSpecCounters)
        parsed.append((p, c))
    out = []
    for (pa, a), (pb, b) in itertools.pairwise(parsed):
        try:
            d = prom.counters_delta(a, b)
        except Exception as exc:
            raise InputFileError(f"counters went backwards between {pa.name} and {pb.name} ({exc}): the "
                                 "snapshots are not in time order, or the server restarted", path=pb) from None
        assert isinstance(d, VllmSpecCounters)
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


def _rows(windows: Sequence[AcceptanceCounts], k: int, what: str, output_tokens: Sequence[int], *,
          unit: str = "window") -> list[RequestResult]:
    rows = []
    for i, c in enumerate(windows):
        known = c.histogram is not None and c.per_position_accepted is not None
        rows.append(RequestResult(
            index=i, request_id=f"{what}-{i}", draft_len=k, prompt_hash="",
            num_output_tokens=int(output_tokens[i]) if i < len(output_tokens) else 0,
            num_verify_steps=c.num_verify_steps, num_accepted_drafts=c.num_accepted_drafts,
            histogram=[tidy_count(float(v)) for v in c.histogram or ()] if known else [0] * (k + 1),
            per_position_accepted=[tidy_count(float(v)) for v in c.per_position_accepted or ()] if known else [0] * k,
            histogram_known=known,
            extra={"imported": what, unit: i, "unit": []}))
    return rows


def _record(rows: list[RequestResult], *, k: int, opts: ImportOptions, engine: str, source: str, files: Sequence[Path],
            model: str | None, num_requests: int, dataset: DatasetInfo, warnings: list[str],
            max_concurrency: Any = None, unit: str = "imported counter window", engine_version: str | None = None,
            extra_provenance: Mapping[str, Any] | None = None) -> Imported:
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
                    "import the server's counters during the run, its log, or per-request responses for clusters")
    known = all(r.histogram_known for r in rows)
    hist = [tidy_count(math.fsum(float(r.histogram[j]) for r in rows)) for j in range(k + 1)]
    pos = [tidy_count(math.fsum(float(r.per_position_accepted[j]) for r in rows)) for j in range(k)]
    if not known:
        hist, pos = [0] * (k + 1), [0] * k
        warn.append("totals only: the source reports no per-step histogram, so histogram and per_position_accepted "
                    "are zeros (histogram_known: false); the AL and its interval rest on the totals")
    rec = MeasurementRecord(
        engine=engine, engine_version=engine_version, mode="imported", target=ModelInfo(name=opts.model or model or "unknown", source="server"),
        draft=ModelInfo(name=f"{opts.draft_method or 'unknown'} draft", source="server"),
        draft_method=opts.draft_method or "unknown", draft_len=k, thinking=opts.thinking,  # type: ignore[arg-type]
        chat_template_kwargs=dict(opts.chat_template_kwargs),
        sampling=SamplingInfo(temperature=float(opts.temperature or 0.0), top_p=float(opts.top_p or 1.0),
                              top_k=opts.top_k, max_tokens=int(opts.max_tokens or 1)),
        dataset=dataset, al=al, al_ci95=(float(ci[0]), float(ci[1])), uncertainty=uncertainty, al_source=source,
        num_requests=num_requests,
        num_verify_steps=tidy_count(steps), num_accepted_drafts=tidy_count(acc), per_position_accepted=pos,
        histogram=hist, histogram_known=known, per_request_file=REQUESTS_FILE, warnings=warn,
        provenance={**collect(), "imported_from": [{"path": str(p), "sha256": sha256_file(p)} for p in files],
                    **({"max_concurrency": max_concurrency} if max_concurrency is not None else {}),
                    **(extra_provenance or {})},
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


# ------------------------------------------------------------------------------ SGLang
def _json_lines(path: Path) -> list[tuple[int, Mapping[str, Any]]]:
    """The JSON objects of a JSON-lines file (a file that is one JSON object counts as one line)."""
    text = _read(path).decode("utf-8", errors="replace")
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped:
        try:  # one pretty-printed object
            whole = json.loads(stripped)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, Mapping):
            return [(1, whole)]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(f"not a JSON line: {exc.msg} (column {exc.colno})", path=path, line=n,
                                 hint="bench_serving --output-file writes one JSON object per line") from None
        if not isinstance(obj, Mapping):
            raise InputFileError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=n)
        out.append((n, obj))
    if not out:
        raise InputFileError("empty: no JSON object", path=path)
    return out


def _sglang_k(opts: ImportOptions, args: Mapping[str, Any] | None, where: Path) -> int | None:
    """k from ``--draft-len`` and/or the server's arguments (which must agree); refuses adaptive speculation."""
    k_args = None
    if args:
        if args.get(sglang_engine.SERVER_INFO_FIELDS["adaptive"]):
            raise MixedDraftLengthsError(
                f"{where}: the server ran adaptive speculation ({sglang_engine.SERVER_INFO_FIELDS['adaptive']}: "
                "true), which changes the draft length step by step; SGLang reports no per-step draft length "
                "(neither in meta_info nor in its log), so the counts cannot be split by k and are not a curve point",
                hint=f"measure with SGLang started without {sglang_engine.FLAG_ADAPTIVE}")
        if args.get(sglang_engine.SERVER_INFO_FIELDS["algorithm"]):
            try:
                k_args = sglang_engine.draft_len_from_server_info(args).k
            except UsageError as exc:
                if opts.draft_len is None:
                    raise UsageError(f"{where}: {exc.message}", hint="pass --draft-len K") from None
    if opts.draft_len is not None and k_args is not None and opts.draft_len != k_args:
        raise UsageError(f"--draft-len {opts.draft_len} but the server's arguments in {where} give k={k_args}",
                         hint="drop --draft-len, or import the file of the run you mean")
    return opts.draft_len or k_args


def _sglang_model(opts: ImportOptions, args: Mapping[str, Any] | None) -> str | None:
    if opts.model:
        return opts.model
    if not args:
        return None
    name = args.get(sglang_engine.SERVER_INFO_FIELDS["served_model_name"]) or args.get(
        sglang_engine.SERVER_INFO_FIELDS["model_path"])
    return str(name) if name else None


def _response_windows(lines: Sequence[tuple[Path, int, Mapping[str, Any]]], k: int | None,
                      ) -> tuple[list[AcceptanceCounts], list[int]]:
    from golden_al.servers.measure import MixedDraftLengths

    counts, tokens = [], []
    mixed = MixedDraftLengths()
    for path, n, obj in lines:
        for meta in sglang_engine.response_spec_metas(obj) or ():
            label = f"{path}:{n}"
            try:
                c = sglang_engine.counts_from_meta_info(meta, k=k)
            except DistributionError as exc:
                raise InputFileError(exc.message, path=path, line=n, hint=exc.hint) from None
            mixed.check(c, label)
            if k is None:
                k = c.k
            counts.append(c)
            done = meta.get(sglang_engine.META_COMPLETION_TOKENS)
            tokens.append(int(done) if isinstance(done, (int, float)) and not isinstance(done, bool) else 0)
    return counts, tokens


def _import_sglang_bench(paths: Sequence[Path], opts: ImportOptions) -> list[Imported]:
    runs: list[tuple[Path, int, Mapping[str, Any]]] = []
    responses: list[tuple[Path, int, Mapping[str, Any]]] = []
    for p in paths:
        for n, obj in _json_lines(p):
            if sglang_engine.is_bench_run(obj):
                runs.append((p, n, obj))
            elif sglang_engine.response_spec_metas(obj) is not None:
                responses.append((p, n, obj))
            else:
                raise InputFileError(
                    f"neither a bench_serving run (keys {', '.join(sglang_engine.BENCH_RUN_KEYS)}) nor an SGLang "
                    f"response with {sglang_engine.META_INFO} (keys seen: {sorted(obj)[:10]})", path=p, line=n,
                    hint="pass the --output-file of python -m sglang.bench_serving, and/or saved responses")
    if responses:
        if len(runs) > 1:
            raise UsageError(f"{len(runs)} bench_serving runs given with per-request responses: which run the "
                             "responses belong to is ambiguous", hint="import one run's line with its responses")
        return [_sglang_per_request(responses, runs[0] if runs else None, opts)]
    return [_sglang_bench_run(p, n, run, opts, several=len(runs) > 1) for p, n, run in runs]


def _sglang_dataset(opts: ImportOptions, run: Mapping[str, Any] | None, count: int, key: str, source: str
                    ) -> DatasetInfo:
    name = opts.dataset or str((run or {}).get(sglang_engine.BENCH_DATASET) or "unknown")
    return _dataset(name, count, f"{key}:{name}", source)


def _bench_provenance(run: Mapping[str, Any] | None, info: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"imported_format": "sglang-bench", "imported_tool": sglang_engine.BENCH_TOOL}
    if run is not None:
        out["bench"] = {key: run.get(key) for key in (sglang_engine.BENCH_BACKEND, sglang_engine.BENCH_DATASET,
                                                      sglang_engine.BENCH_REQUEST_RATE,
                                                      sglang_engine.BENCH_MAX_CONCURRENCY) if key in run}
    if info is not None and info.get(sglang_engine.INFO_VERSION) is not None:
        out["server_version"] = str(info[sglang_engine.INFO_VERSION])
    return out


def _sglang_per_request(responses: list[tuple[Path, int, Mapping[str, Any]]],
                        run: tuple[Path, int, Mapping[str, Any]] | None, opts: ImportOptions) -> Imported:
    info = sglang_engine.bench_server_info(run[2]) if run else None
    where = run[0] if run else responses[0][0]
    k = _sglang_k(opts, info, where)
    counts, tokens = _response_windows(responses, k)
    if not counts:
        raise InputFileError("no response with spec-decode meta_info", path=where)
    k = k or counts[0].k
    files = list(dict.fromkeys([*([run[0]] if run else []), *(p for p, _, _ in responses)]))
    warnings = ["imported from saved SGLang responses: one cluster per request; AL = 1 + accepted drafts / verify "
                f"steps from each request's histogram (not SGLang's {sglang_engine.META_ACCEPT_LENGTH}, which counts "
                "the prefill token)"]
    if run is not None:
        server_al = sglang_engine.bench_accept_length(run[2])
        if server_al is not None:
            warnings.append(f"the run's server-side accept_length was {server_al:.4f} (cumulative since the server "
                            "started or was flushed; not used)")
    ds = _sglang_dataset(opts, run[2] if run else None, len(counts), "sglang-responses",
                         f"imported sglang-bench: {len(counts)} responses")
    version = str(info[sglang_engine.INFO_VERSION]) if info and info.get(sglang_engine.INFO_VERSION) else None
    return _record(_rows(counts, k, "sglang-responses", tokens, unit="request"), k=k, opts=opts, engine="sglang",
                   source="sglang-meta-info", files=files, model=_sglang_model(opts, info), num_requests=len(counts),
                   dataset=ds, warnings=warnings, unit="request", engine_version=version,
                   max_concurrency=(run[2].get(sglang_engine.BENCH_MAX_CONCURRENCY) if run else None),
                   extra_provenance=_bench_provenance(run[2] if run else None, info))


def _sglang_bench_run(path: Path, line: int, run: Mapping[str, Any], opts: ImportOptions, *, several: bool
                      ) -> Imported:
    info = sglang_engine.bench_server_info(run)
    k = _sglang_k(opts, info, path)
    if k is None:
        raise UsageError(f"{path}:{line}: the run does not show the draft length (no speculative arguments in "
                         f"{sglang_engine.BENCH_SERVER_INFO})", hint="pass --draft-len K")
    al = sglang_engine.bench_accept_length(run)
    if al is None or al <= 0:
        raise InputFileError(
            f"no {sglang_engine.BENCH_ACCEPT_LENGTH} in the run (value {run.get(sglang_engine.BENCH_ACCEPT_LENGTH)!r})",
            path=path, line=line,
            hint="bench_serving reads it from /server_info only for sglang backends with speculative decoding on")
    if not 1.0 <= al <= k + 1 + 1e-9:
        raise InputFileError(f"{sglang_engine.BENCH_ACCEPT_LENGTH} = {al!r}, expected a value in [1, k+1 = {k + 1}]",
                             path=path, line=line, hint="pass the run's real --draft-len")
    completed = int(run.get(sglang_engine.BENCH_COMPLETED) or 0)
    lens = [int(x) for x in run.get(sglang_engine.BENCH_OUTPUT_LENS) or [] if isinstance(x, (int, float))]
    total = sum(lens) if lens else int(run.get(sglang_engine.BENCH_TOTAL_OUTPUT) or 0)
    decode_tokens = max(total - completed, 0)  # each request's first token comes from prefill, not a verify step
    if decode_tokens <= 0:
        raise InputFileError(f"the run generated no decode token ({total} output tokens, {completed} requests)",
                             path=path, line=line)
    steps = decode_tokens / al
    window = AcceptanceCounts(k=k, num_verify_steps=steps, num_accepted_drafts=steps * (al - 1.0),
                              source="sglang-bench")
    warnings = [
        f"imported from {sglang_engine.BENCH_TOOL}: {sglang_engine.BENCH_ACCEPT_LENGTH} is the server's "
        "aggregate over every request since it started or was last flushed (warmup and earlier runs included, "
        "the last partial decode-log interval missing; with data parallelism, one scheduler's); no request is "
        "attributed",
        f"verify steps estimated as (output tokens - requests) / accept_length = ({total} - {completed}) / "
        f"{al:.4f}; they only weigh this record when pooled",
    ]
    ds = _sglang_dataset(opts, run, completed, f"sglang-bench:{path.name}:{line}",
                         f"imported sglang-bench: {path.name}" + (f" line {line}" if several else ""))
    version = str(info[sglang_engine.INFO_VERSION]) if info and info.get(sglang_engine.INFO_VERSION) else None
    prov = {**_bench_provenance(run, info), "run_line": line}
    return _record(_rows([window], k, "sglang-bench-aggregate", [total]), k=k, opts=opts, engine="sglang",
                   source="sglang-bench-aggregate", files=[path], model=_sglang_model(opts, info),
                   num_requests=completed, dataset=ds, warnings=warnings,
                   max_concurrency=run.get(sglang_engine.BENCH_MAX_CONCURRENCY), engine_version=version,
                   extra_provenance=prov)


def _import_sglang_log(paths: Sequence[Path], opts: ImportOptions) -> list[Imported]:
    from golden_al.formats import logs
    from golden_al.formats.validate import check_counts

    out = []
    for p in paths:
        text = _read(p).decode("utf-8", errors="replace")
        lines = text.splitlines()
        starts = logs.find_sglang_server_args(lines)
        spec_keys = [sglang_engine.SERVER_INFO_FIELDS[f] for f in ("algorithm", "num_steps", "eagle_topk",
                                                                      "num_draft_tokens", "dflash_block_size",
                                                                      "dspark_block_size", "model_path")]
        if len({json.dumps([s.args.get(key) for key in spec_keys], default=str) for s in starts}) > 1:
            raise InputFileError(f"{len(starts)} server starts with different speculative settings (lines "
                                 f"{', '.join(str(s.line_no) for s in starts)})", path=p,
                                 hint="split the log at the restart and import each part on its own")
        args = starts[0].args if starts else None
        k = _sglang_k(opts, args, p)
        if k is None:
            raise UsageError(f"{p}: no server_args line with the speculative settings", hint="pass --draft-len K")
        interval = opts.decode_log_interval
        logged = (args or {}).get(sglang_engine.INFO_DECODE_LOG_INTERVAL)
        if isinstance(logged, int) and not isinstance(logged, bool):
            if interval is not None and interval != logged:
                raise UsageError(f"--decode-log-interval {interval} but {p} line {starts[0].line_no} says {logged}")
            interval = logged
        marker = sglang_engine.PROFILE.log_pattern("decode-head").marker
        warnings = [f"imported from an SGLang server log: aggregate only (no request is attributed); each '{marker}' "
                    "line is one window; its verify steps are estimated as decode-log-interval x "
                    "#running-req (the interval's own batch sizes are not logged) and accept len is printed to "
                    "2 decimals; no per-step histogram"]
        if interval is None:
            interval = sglang_engine.DEFAULT_DECODE_LOG_INTERVAL
            warnings.append(f"no server_args line gives decode_log_interval: SGLang's default {interval} assumed")
        scan = logs.scan_log_text(text, source=p)
        windows = []
        for r in scan.of("sglang"):
            if not isinstance(r, logs.SglangDecodeRecord) or r.accept_len is None or r.running_req <= 0:
                continue
            check_counts(what="SGLang decode line", al=r.accept_len, k=k, path=p, line=r.line_no)
            steps, acc = sglang_engine.decode_window(r.accept_len, r.running_req, interval)
            windows.append(AcceptanceCounts(k=k, num_verify_steps=tidy_count(steps), num_accepted_drafts=tidy_count(acc),
                                            source="sglang-log"))
        if not windows:
            raise InputFileError(f"no '{marker}' line with accept len and a running batch", path=p,
                                 hint="start SGLang with speculative decoding on; decode lines are written every "
                                      "--decode-log-interval batches")
        name = opts.dataset or "unknown"
        prov: dict[str, Any] = {"imported_format": "sglang-log", "decode_log_interval": interval}
        if starts:
            prov["server_args_line"] = starts[0].line_no
        out.append(_record(_rows(windows, k, "sglang-log-intervals", []), k=k, opts=opts, engine="sglang",
                           source="sglang-log-intervals", files=[p], model=_sglang_model(opts, args), num_requests=0,
                           dataset=_dataset(name, 0, f"sglang-log:{name}", f"imported sglang-log: {p.name}"),
                           warnings=warnings, extra_provenance=prov))
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
    if fmt == "sglang-bench":
        return _import_sglang_bench(ps, opts)
    if fmt == "sglang-log":
        return _import_sglang_log(ps, opts)
    raise UsageError(f"unknown import format {fmt!r}", hint="one of " + ", ".join(FORMATS))


def write_imported(items: Sequence[Imported], out: str | Path) -> list[Path]:
    """Write each record (and its clusters) into ``out`` (one cell) or ``out/thinking_{mode}/k{K}``."""
    base = Path(out)
    dirs = []
    seen: dict[Path, int] = {}
    for item in items:
        r = item.record
        d = base if len(items) == 1 else base / f"thinking_{r.thinking}" / f"k{r.draft_len}"
        seen[d] = seen.get(d, 0) + 1
        if seen[d] > 1:  # several runs of one cell (bench_serving appends one line per run)
            d = d.with_name(f"{d.name}-run{seen[d]}")
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
