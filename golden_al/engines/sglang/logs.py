"""SGLang's log lines: ``Decode batch`` intervals and the ``server_args=ServerArgs(...)`` start line, read by the general log reader (:func:`golden_al.formats.logs.read_log_file`) through the
profile's ``log_reader`` hook. The pattern is built from the upstream format string, anchored on the message
itself so any log prefix works:

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

A line that does not match is not a record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from golden_al import plugin

from . import PROFILE

__all__ = ['SglangDecodeRecord', 'SglangServerArgs', 'find_sglang_server_args', 'parse_sglang_decode_line', 'parse_sglang_server_args_line']

# ------------------------------------------------------------------------- SGLang

#: "Decode batch{iter_msg}, #running-req: {num_running_reqs}, " (0.5.15.post1 / 0.5.23);
#: older releases: "Decode batch. #running-req: {n}, ".
_SGL_HEAD = plugin.pattern(PROFILE, "decode-head")
_SGL_MARK = PROFILE.log_pattern("decode-head").marker
#: "accept len: {spec_accept_length:.2f}, accept rate: {spec_accept_rate:.2f}, "
_SGL_ACCEPT = plugin.pattern(PROFILE, "accept")
#: "cap len: {spec_cap_length:.2f}, " and "block accept len: {spec_block_accept_length:.2f}, "
_SGL_CAP = plugin.pattern(PROFILE, "cap")
_SGL_BLOCK = plugin.pattern(PROFILE, "block-accept")
#: DSpark "est uncap acc len: {mid:.2f} [{lo:.2f}, {hi:.2f}]"
_SGL_EST = plugin.pattern(PROFILE, "dspark-estimate")
#: "{cuda graph|cpu graph|npu graph|musa graph}: {bool}, gen throughput (token/s): {x:.2f}, #queue-req: {n}"
_SGL_TAIL = plugin.pattern(PROFILE, "tail")
#: PD-decode parts: "pre-allocated usage: {:.2f}, #prealloc-req: {n}, #transfer-req: {n},
#: [#host-receive-req: {n}, ]#retracted-req: {n}, "
_SGL_PD = plugin.pattern(PROFILE, "pd-decode")
#: token_usage_parts: "{key}: {value}" pairs before "accept len" (pool_stats_observer.py).
_SGL_KV = plugin.pattern(PROFILE, "token-usage")
_SGL_DP = plugin.pattern(PROFILE, "dp-rank")


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
    #: throughput fields, so a line that stops at (or inside) ``accept len`` lost its end (a truncated write); the
    #: reader's policy (:class:`golden_al.formats.logs.LineTally`) counts it as a line that does not parse
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
        accept_len=plugin.number(acc.group("len")) if acc else None,
        accept_rate=plugin.number(acc.group("rate")) if acc else None,
        cap_len=plugin.number(cap.group("v")) if cap else None,
        block_accept_len=plugin.number(block.group("v")) if block else None,
        est_uncap_accept_len=est_t,
        token_usage=usage,
        pd_decode=pd,
        graph=(tail.group("graph") == "True") if tail and tail.group("graph") else None,
        gen_throughput=plugin.number(tail.group("gen")) if tail else None,
        queue_req=int(tail.group("queue")) if tail else None,
        forward_iter=int(m.group("iter")) if m.group("iter") else None,
        dp_rank=int(dp.group("dp")) if dp else None,
        complete=acc is None or (tail is not None and _TWO_DECIMALS.fullmatch(acc.group("len")) is not None),
    )


_TWO_DECIMALS = re.compile(r"\d+\.\d\d")


#: "server_args=ServerArgs(model_path='...', tp_size=1, ...)" (engine.py, at start-up).
_SGL_SERVER_ARGS = plugin.pattern(PROFILE, "server-args")
_SGL_ARGS_MARK = PROFILE.log_pattern("server-args").marker
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
