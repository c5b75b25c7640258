"""SGLang runs: ``bench_serving`` results (with per-request ``meta_info`` where saved) and the server
log (``Decode batch`` lines)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from distributions.counts import AcceptanceCounts, tidy_count
from distributions.errors import DistributionError
from golden_al import plugin

from . import (
    DEFAULT_DECODE_LOG_INTERVAL,
    FLAG_ADAPTIVE,
    INFO_AVG_ACCEPT_LENGTH,
    INFO_DECODE_LOG_INTERVAL,
    INFO_INTERNAL_STATES,
    INFO_VERSION,
    META_ACCEPT_LENGTH,
    META_COMPLETION_TOKENS,
    META_INFO,
    PROFILE,
    SERVER_INFO_FIELDS,
    counts_from_meta_info,
    decode_window,
    draft_len_from_server_info,
    require_lossless,
    response_spec_metas,
)

__all__ = ["import_sglang_bench", "import_sglang_log"]

# ``python -m sglang.bench_serving --output-file F.jsonl [--output-details]`` appends ONE JSON object per run
# (sgl-project/sglang ``python/sglang/benchmark/serving.py`` ``benchmark()``, commit 00f9ec47; the same keys in
# the older ``python/sglang/bench_serving.py``, commit 50a61368; documented in
# ``docs/developer_guide/bench_serving.md``). ``accept_length`` is ``/server_info``
# ``internal_states[0].avg_spec_accept_length`` read after the run: accepted tokens (bonus included) per
# request-step since server start or the last ``/flush_cache``. ``--output-details`` adds per-request arrays
# (``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``generated_texts``, ``errors``) but no per-request
# ``meta_info``: bench_serving does not save ``spec_verify_ct`` or the histogram of any request.
BENCH_ACCEPT_LENGTH = "accept_length"
BENCH_SERVER_INFO = "server_info"
BENCH_COMPLETED = "completed"
BENCH_TOTAL_OUTPUT = "total_output_tokens"
BENCH_OUTPUT_LENS = "output_lens"
BENCH_BACKEND = "backend"
BENCH_DATASET = "dataset_name"
BENCH_MAX_CONCURRENCY = "max_concurrency"
BENCH_REQUEST_RATE = "request_rate"
#: Keys every bench_serving run object has (how a run line is told from a response line).
BENCH_RUN_KEYS: tuple[str, ...] = (BENCH_BACKEND, BENCH_COMPLETED, BENCH_TOTAL_OUTPUT)
BENCH_TOOL = "sglang.bench_serving"
INFO_PD_DECODE = "decode"  #: a PD router's /server_info holds the decode servers' infos under this key


def is_bench_run(obj: Mapping[str, Any]) -> bool:
    """Whether a JSON object is one ``bench_serving --output-file`` run (not a response)."""
    return all(key in obj for key in BENCH_RUN_KEYS)


def bench_server_info(run: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``server_info`` a bench_serving run saved (a PD router's: its first decode server, as
    bench_serving itself reads it), or None."""
    info = run.get(BENCH_SERVER_INFO)
    if not isinstance(info, Mapping):
        return None
    decode = info.get(INFO_PD_DECODE)
    if isinstance(decode, list) and decode and isinstance(decode[0], Mapping):
        return decode[0]
    return info


def bench_accept_length(run: Mapping[str, Any]) -> float | None:
    """A run's ``accept_length`` (else its ``server_info.internal_states[0].avg_spec_accept_length``)."""
    value = run.get(BENCH_ACCEPT_LENGTH)
    if value is None:
        info = bench_server_info(run) or {}
        states = info.get(INFO_INTERNAL_STATES)
        if isinstance(states, list) and states and isinstance(states[0], Mapping):
            value = states[0].get(INFO_AVG_ACCEPT_LENGTH)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _sglang_k(opts: plugin.ImportOptions, args: Mapping[str, Any] | None, where: Path) -> int | None:
    """k from ``--draft-len`` and/or the server's arguments (which must agree); refuses adaptive speculation."""
    k_args = None
    if args:
        if args.get(SERVER_INFO_FIELDS["adaptive"]):
            raise plugin.MixedDraftLengthsError(
                f"{where}: the server ran adaptive speculation ({SERVER_INFO_FIELDS['adaptive']}: "
                "true), which changes the draft length step by step; SGLang reports no per-step draft length "
                "(neither in meta_info nor in its log), so the counts cannot be split by k and are not a curve point",
                hint=f"measure with SGLang started without {FLAG_ADAPTIVE}")
        require_lossless(args, str(where))
        if args.get(SERVER_INFO_FIELDS["algorithm"]):
            try:
                k_args = draft_len_from_server_info(args).k
            except plugin.UsageError as exc:
                if opts.draft_len is None:
                    raise plugin.UsageError(f"{where}: {exc.message}", hint="pass --draft-len K") from None
    if opts.draft_len is not None and k_args is not None and opts.draft_len != k_args:
        raise plugin.UsageError(f"--draft-len {opts.draft_len} but the server's arguments in {where} give k={k_args}",
                                hint="drop --draft-len, or import the file of the run you mean")
    return opts.draft_len or k_args


def _sglang_model(opts: plugin.ImportOptions, args: Mapping[str, Any] | None) -> str | None:
    if opts.model:
        return opts.model
    if not args:
        return None
    name = args.get(SERVER_INFO_FIELDS["served_model_name"]) or args.get(
        SERVER_INFO_FIELDS["model_path"])
    return str(name) if name else None


def _response_windows(lines: Sequence[tuple[Path, int, Mapping[str, Any]]], k: int | None,
                      ) -> tuple[list[AcceptanceCounts], list[int]]:

    counts, tokens = [], []
    mixed = plugin.MixedDraftLengths()
    for path, n, obj in lines:
        for meta in response_spec_metas(obj) or ():
            label = f"{path}:{n}"
            try:
                c = counts_from_meta_info(meta, k=k)
            except DistributionError as exc:
                raise plugin.InputFileError(exc.message, path=path, line=n, hint=exc.hint) from None
            mixed.check(c, label)
            if k is None:
                k = c.k
            counts.append(c)
            done = meta.get(META_COMPLETION_TOKENS)
            tokens.append(int(done) if isinstance(done, (int, float)) and not isinstance(done, bool) else 0)
    return counts, tokens


def import_sglang_bench(paths: Sequence[Path], opts: plugin.ImportOptions) -> list[plugin.ImportedRun]:
    """Records from SGLang ``bench_serving`` result lines (one per run)."""
    runs: list[tuple[Path, int, Mapping[str, Any]]] = []
    responses: list[tuple[Path, int, Mapping[str, Any]]] = []
    for p in paths:
        for n, obj in plugin.json_lines(p):
            if is_bench_run(obj):
                runs.append((p, n, obj))
            elif response_spec_metas(obj) is not None:
                responses.append((p, n, obj))
            else:
                raise plugin.InputFileError(
                    f"neither a bench_serving run (keys {', '.join(BENCH_RUN_KEYS)}) nor an SGLang "
                    f"response with {META_INFO} (keys seen: {sorted(obj)[:10]})", path=p, line=n,
                    hint="pass the --output-file of python -m sglang.bench_serving, and/or saved responses")
    if responses:
        if len(runs) > 1:
            raise plugin.UsageError(f"{len(runs)} bench_serving runs given with per-request responses: which run the "
                                    "responses belong to is ambiguous", hint="import one run's line with its responses")
        return [_sglang_per_request(responses, runs[0] if runs else None, opts)]
    return [_sglang_bench_run(p, n, run, opts, several=len(runs) > 1) for p, n, run in runs]


def _sglang_dataset(opts: plugin.ImportOptions, run: Mapping[str, Any] | None, count: int, key: str, source: str
                    ) -> plugin.ImportedDataset:
    name = opts.dataset or str((run or {}).get(BENCH_DATASET) or "unknown")
    return plugin.ImportedDataset(name, count, f"{key}:{name}", source)


def _sglang_per_request(responses: list[tuple[Path, int, Mapping[str, Any]]],
                        run: tuple[Path, int, Mapping[str, Any]] | None, opts: plugin.ImportOptions) -> plugin.ImportedRun:
    info = bench_server_info(run[2]) if run else None
    where = run[0] if run else responses[0][0]
    k = _sglang_k(opts, info, where)
    counts, tokens = _response_windows(responses, k)
    if not counts:
        raise plugin.InputFileError("no response with spec-decode meta_info", path=where)
    k = k or counts[0].k
    files = list(dict.fromkeys([*([run[0]] if run else []), *(p for p, _, _ in responses)]))
    warnings = ["imported from saved SGLang responses: one cluster per request; AL = 1 + accepted drafts / verify "
                f"steps from each request's histogram (not SGLang's {META_ACCEPT_LENGTH}, which counts "
                "the prefill token)"]
    if run is not None:
        server_al = bench_accept_length(run[2])
        if server_al is not None:
            warnings.append(f"the run's server-side accept_length was {server_al:.4f} (cumulative since the server "
                            "started or was flushed; not used)")
    ds = _sglang_dataset(opts, run[2] if run else None, len(counts), "sglang-responses",
                         f"imported sglang-bench: {len(counts)} responses")
    version = str(info[INFO_VERSION]) if info and info.get(INFO_VERSION) else None
    return plugin.ImportedRun(plugin.ImportedWindows(counts, k, "sglang-responses", tokens, unit="request"), k=k, opts=opts, engine="sglang",
                   source="sglang-meta-info", files=files, model=_sglang_model(opts, info), num_requests=len(counts),
                   dataset=ds, warnings=warnings, unit="request", engine_version=version,
                   max_concurrency=(run[2].get(BENCH_MAX_CONCURRENCY) if run else None),
                   extra_provenance=bench_provenance(run[2] if run else None, info))


def _sglang_bench_run(path: Path, line: int, run: Mapping[str, Any], opts: plugin.ImportOptions, *, several: bool
                      ) -> plugin.ImportedRun:
    info = bench_server_info(run)
    k = _sglang_k(opts, info, path)
    if k is None:
        raise plugin.UsageError(f"{path}:{line}: the run does not show the draft length (no speculative arguments in "
                                f"{BENCH_SERVER_INFO})", hint="pass --draft-len K")
    al = bench_accept_length(run)
    if al is None or al <= 0:
        raise plugin.InputFileError(
            f"no {BENCH_ACCEPT_LENGTH} in the run (value {run.get(BENCH_ACCEPT_LENGTH)!r})",
            path=path, line=line,
            hint="bench_serving reads it from /server_info only for sglang backends with speculative decoding on")
    if not 1.0 <= al <= k + 1 + 1e-9:
        raise plugin.InputFileError(f"{BENCH_ACCEPT_LENGTH} = {al!r}, expected a value in [1, k+1 = {k + 1}]",
                                    path=path, line=line, hint="pass the run's real --draft-len")
    completed = int(run.get(BENCH_COMPLETED) or 0)
    lens = [int(x) for x in run.get(BENCH_OUTPUT_LENS) or [] if isinstance(x, (int, float))]
    total = sum(lens) if lens else int(run.get(BENCH_TOTAL_OUTPUT) or 0)
    decode_tokens = max(total - completed, 0)  # each request's first token comes from prefill, not a verify step
    if decode_tokens <= 0:
        raise plugin.InputFileError(f"the run generated no decode token ({total} output tokens, {completed} requests)",
                                    path=path, line=line)
    steps = decode_tokens / al
    window = AcceptanceCounts(k=k, num_verify_steps=steps, num_accepted_drafts=steps * (al - 1.0),
                              source="sglang-bench")
    warnings = [
        f"imported from {BENCH_TOOL}: {BENCH_ACCEPT_LENGTH} is the server's "
        "aggregate over every request since it started or was last flushed (warmup and earlier runs included, "
        "the last partial decode-log interval missing; with data parallelism, one scheduler's); no request is "
        "attributed",
        f"verify steps estimated as (output tokens - requests) / accept_length = ({total} - {completed}) / "
        f"{al:.4f}; they only weigh this record when pooled",
    ]
    ds = _sglang_dataset(opts, run, completed, f"sglang-bench:{path.name}:{line}",
                         f"imported sglang-bench: {path.name}" + (f" line {line}" if several else ""))
    version = str(info[INFO_VERSION]) if info and info.get(INFO_VERSION) else None
    prov = {**bench_provenance(run, info), "run_line": line}
    return plugin.ImportedRun(plugin.ImportedWindows([window], k, "sglang-bench-aggregate", [total]), k=k, opts=opts, engine="sglang",
                   source="sglang-bench-aggregate", files=[path], model=_sglang_model(opts, info),
                   num_requests=completed, dataset=ds, warnings=warnings,
                   max_concurrency=run.get(BENCH_MAX_CONCURRENCY), engine_version=version,
                   extra_provenance=prov)


def import_sglang_log(paths: Sequence[Path], opts: plugin.ImportOptions) -> list[plugin.ImportedRun]:
    """Records from SGLang server logs (``Decode batch`` lines, with the start-up arguments for k)."""

    from . import logs as sglang_logs

    out = []
    for p in paths:
        text = plugin.read_capped(p).decode("utf-8", errors="replace")
        lines = text.splitlines()
        starts = sglang_logs.find_sglang_server_args(lines)
        spec_keys = [SERVER_INFO_FIELDS[f] for f in ("algorithm", "num_steps", "eagle_topk",
                                                                      "num_draft_tokens", "dflash_block_size",
                                                                      "dspark_block_size", "model_path")]
        if len({json.dumps([s.args.get(key) for key in spec_keys], default=str) for s in starts}) > 1:
            raise plugin.InputFileError(f"{len(starts)} server starts with different speculative settings (lines "
                                        f"{', '.join(str(s.line_no) for s in starts)})", path=p,
                                        hint="split the log at the restart and import each part on its own")
        args = starts[0].args if starts else None
        k = _sglang_k(opts, args, p)
        if k is None:
            raise plugin.UsageError(f"{p}: no server_args line with the speculative settings", hint="pass --draft-len K")
        interval = opts.decode_log_interval
        logged = (args or {}).get(INFO_DECODE_LOG_INTERVAL)
        if isinstance(logged, int) and not isinstance(logged, bool):
            if interval is not None and interval != logged:
                raise plugin.UsageError(f"--decode-log-interval {interval} but {p} line {starts[0].line_no} says {logged}")
            interval = logged
        marker = PROFILE.log_pattern("decode-head").marker
        warnings = [f"imported from an SGLang server log: aggregate only (no request is attributed); each '{marker}' "
                    "line is one window; its verify steps are estimated as decode-log-interval x "
                    "#running-req (the interval's own batch sizes are not logged) and accept len is printed to "
                    "2 decimals; no per-step histogram"]
        if interval is None:
            interval = DEFAULT_DECODE_LOG_INTERVAL
            warnings.append(f"no server_args line gives decode_log_interval: SGLang's default {interval} assumed")
        scan = plugin.scan_log_text(text, source=p)
        decode = [r for r in scan.of("sglang") if isinstance(r, sglang_logs.SglangDecodeRecord)]
        warnings += scan.notes
        windows = []
        for r in decode:
            if r.accept_len is None or r.running_req <= 0:
                continue
            plugin.check_counts(what="SGLang decode line", al=r.accept_len, k=k, path=p, line=r.line_no)
            steps, acc = decode_window(r.accept_len, r.running_req, interval)
            windows.append(AcceptanceCounts(k=k, num_verify_steps=tidy_count(steps), num_accepted_drafts=tidy_count(acc),
                                            source="sglang-log"))
        if not windows:
            raise plugin.InputFileError(f"no '{marker}' line with accept len and a running batch", path=p,
                                        hint="start SGLang with speculative decoding on; decode lines are written every "
                                      "--decode-log-interval batches")
        name = opts.dataset or "unknown"
        prov: dict[str, Any] = {"imported_format": "sglang-log", "decode_log_interval": interval}
        if starts:
            prov["server_args_line"] = starts[0].line_no
        out.append(plugin.ImportedRun(plugin.ImportedWindows(windows, k, "sglang-log-intervals", []), k=k, opts=opts, engine="sglang",
                           source="sglang-log-intervals", files=[p], model=_sglang_model(opts, args), num_requests=0,
                           dataset=plugin.ImportedDataset(name, 0, f"sglang-log:{name}", f"imported sglang-log: {p.name}"),
                           warnings=warnings, extra_provenance=prov))
    return out


def bench_provenance(run: Mapping[str, Any] | None, info: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a benchmark run and its server info say of themselves, for the record's provenance."""
    out: dict[str, Any] = {"imported_format": "sglang-bench", "imported_tool": BENCH_TOOL}
    if run is not None:
        out["bench"] = {key: run.get(key) for key in (BENCH_BACKEND, BENCH_DATASET, BENCH_REQUEST_RATE,
                                                      BENCH_MAX_CONCURRENCY) if key in run}
    if info is not None and info.get(INFO_VERSION) is not None:
        out["server_version"] = str(info[INFO_VERSION])
    return out
