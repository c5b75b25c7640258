"""``serve-reference``: an HTTP server that answers like SGLang, vLLM or ATOM.

It wraps a :class:`~golden_al.servers.served_engine.ServedEngine` (the reference
engine, or the deterministic fake) behind the endpoints, fields, counters and log
lines that ``measure``/``sweep``/``check-run`` read from real engines, so all of
them can be tested end to end over real HTTP. Formats reproduced:

* SGLang 0.5.23 (``python/sglang/srt/entrypoints/http_server.py``,
  ``entrypoints/openai/protocol.py``, ``managers/tokenizer_manager.py``
  ``_calculate_spec_decoding_metrics``,
  ``managers/scheduler_components/metrics_reporter.py``,
  ``observability/metrics_collector.py``): ``/v1/chat/completions`` with
  ``choices[0].meta_info`` when ``return_meta_info`` and ``sglext.spec_tokens_details``
  when ``return_spec_tokens_details``; ``/generate`` with ``meta_info``;
  ``/server_info`` (and ``/get_server_info``) with the server args,
  ``internal_states[0].avg_spec_accept_length`` (advanced only at each decode-log
  interval, as SGLang does) and ``version``; ``/metrics``; the ``Decode batch, ...``
  log line every ``decode_log_interval`` request-steps. ``meta_version`` selects the
  field names: ``0.5.23``, ``0.5.15`` (adds the ``spec_accepted_drafts`` /
  ``spec_proposed_drafts`` / ``spec_accept_histogram`` aliases) or ``old``
  (``spec_accept_token_num`` / ``spec_draft_token_num`` / ``spec_accept_histogram``
  only). As in SGLang, ``completion_tokens`` includes the prefill token and the
  histogram list is only as long as the largest count seen.
* vLLM 0.33.0 (``vllm/v1/spec_decode/metrics.py``, ``vllm/v1/metrics/loggers.py``,
  ``vllm/entrypoints/openai/api_server.py``): ``/metrics`` with the spec-decode
  counters (``_total`` and ``_created``, per position too), request counters and
  running/waiting gauges; ``/version``; per-request ``metrics.speculative_decoding``
  when ``per_request_metrics`` is ``summary``/``detailed``; the ``SpecDecoding
  metrics: ...`` log line every ``log_stats_interval_s`` seconds; the
  ``non-default args: {...}`` startup line.

* ATOM (ROCm/ATOM HEAD ffdf3bb5d ``atom/entrypoints/openai/api_server.py``,
  ``atom/model_engine/llm_engine.py``, ``scheduler.py``): ``/debug/mtp_stats``
  (cumulative, K draft tokens charged per step), ``/server_info``, ``/metrics`` with
  ``atom:mtp_*`` counters, and ``[MTP Stats Interval]`` / ``[MTP Stats         ]``
  lines every ``decode_log_interval`` steps.

Faults for tests (:class:`FaultPlan`, ``--fault KIND@N`` on the command line; ``N``
counts chat/generate requests received, from 1, as ``N``, ``N-M`` or ``N+``):
``500``/``502``/``503`` answer that status; ``sleep`` sleeps ``fault_sleep_s`` first
(past the client's timeout) and then still generates; ``reset`` zeroes every
counter first (a restart); ``nospec`` omits the spec fields; ``die`` exits the
process at once (a killed server); ``claim-synthetic`` (a server-level flag)
reports synthetic acceptance in ``/server_info`` and the startup log. Servers that lie
(issue 23): ``redirect`` answers 302 with a body that claims every draft was accepted;
``claim-all`` answers with every draft accepted on every step; ``tokens-1`` reports one
completion token; ``fewer-drafts`` reports ``k - 1`` proposed drafts per step; ``list``
answers a JSON list; ``endless`` sends a body that never ends; ``trickle`` sends one byte
a second.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

from golden_al.engines import atom, sglang, vllm
from golden_al.errors import UsageError
from golden_al.servers.served_engine import Generation, ServedEngine

__all__ = ["FLAVORS", "Fault", "FaultPlan", "ReferenceServer", "ServeConfig", "parse_fault"]

FLAVORS = (sglang.PROFILE.name, vllm.PROFILE.name, atom.PROFILE.name)
_FAULT_KINDS = ("500", "502", "503", "sleep", "reset", "nospec", "die", "redirect", "claim-all", "tokens-1",
                "list", "endless", "trickle", "fewer-drafts")
_FAULT_RE = re.compile(r"^(?P<kind>[a-z0-9-]+)@(?P<lo>\d+)(?:(?P<plus>\+)|-(?P<hi>\d+))?$")


@dataclass(frozen=True)
class Fault:
    """One fault rule: ``kind`` on requests ``lo..hi`` (``hi`` None: to the end)."""

    kind: str
    lo: int
    hi: int | None

    def covers(self, n: int) -> bool:
        """Whether request number ``n`` (1-based) is hit."""
        return n >= self.lo and (self.hi is None or n <= self.hi)


class _BoundedHTTPServer(ThreadingHTTPServer):
    """A threading server with at most ``max_workers`` connections handled at once: one more is
    answered 503 at once and closed (a flood of stalled connections cannot hold unbounded threads)."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, max_workers: int) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(max_workers)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                body = json.dumps({"object": "error", "message": "too many connections", "code": 503}).encode()
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _lie(resp: dict[str, Any], kinds: list[str], k: int) -> dict[str, Any]:
    """The answer with the counts a lying server reports instead (faults ``claim-all``, ``tokens-1``,
    ``fewer-drafts``)."""
    meta = next((c.get(sglang.META_INFO) for c in resp.get("choices") or [] if isinstance(c, dict)
                 and isinstance(c.get(sglang.META_INFO), dict)), None)
    if "tokens-1" in kinds:
        resp["usage"]["completion_tokens"] = 1
    if meta is not None and "claim-all" in kinds:
        steps = int(meta.get(sglang.META_VERIFY) or 0)
        for key in sglang.META_ACCEPTED_KEYS:
            if key in meta:
                meta[key] = steps * k
        for key in sglang.META_HISTOGRAM_KEYS:
            if key in meta:
                meta[key] = [0] * k + [steps]
    if meta is not None and "fewer-drafts" in kinds:
        steps = int(meta.get(sglang.META_VERIFY) or 0)
        for key in sglang.META_PROPOSED_KEYS:
            if key in meta:
                meta[key] = steps * (k - 1)
    return resp


def parse_fault(text: str) -> Fault:
    """``"500@3"``, ``"sleep@2-4"``, ``"die@5"``, ``"503@1+"`` -> :class:`Fault`."""
    m = _FAULT_RE.match(text.strip())
    if not m or m.group("kind") not in _FAULT_KINDS:
        raise UsageError(f"bad --fault {text!r}", hint="KIND@N, KIND@N-M or KIND@N+ with KIND one of " + ", ".join(_FAULT_KINDS))
    lo = int(m.group("lo"))
    hi = None if m.group("plus") else int(m.group("hi") or lo)
    if lo < 1 or (hi is not None and hi < lo):
        raise UsageError(f"bad --fault range in {text!r}", hint="requests count from 1")
    return Fault(m.group("kind"), lo, hi)


@dataclass
class FaultPlan:
    """Faults by request number, plus an optional programmatic hook ``hook(n, body) -> kinds``."""

    faults: list[Fault] = field(default_factory=list)
    hook: Callable[[int, Mapping[str, Any]], list[str]] | None = None

    def kinds(self, n: int, body: Mapping[str, Any]) -> list[str]:
        """Fault kinds that apply to request ``n``."""
        out = [f.kind for f in self.faults if f.covers(n)]
        if self.hook is not None:
            out.extend(self.hook(n, body))
        return out


@dataclass
class ServeConfig:
    """Server settings (see :class:`ReferenceServer`)."""

    flavor: str
    host: str = "127.0.0.1"
    port: int = 8000
    served_model_name: str | None = None
    algorithm: str = "standalone"
    """SGLang flavor: the ``speculative_algorithm`` reported (standalone, eagle, dflash, ...)."""
    meta_version: str = "0.5.23"
    decode_log_interval: int = 40
    log_stats_interval_s: float = 10.0
    per_request_metrics: str | None = None
    faults: FaultPlan = field(default_factory=FaultPlan)
    fault_sleep_s: float = 30.0
    claim_synthetic: bool = False
    version: str = "golden-al-reference"
    speculative_adaptive: bool = False
    """SGLang flavor: report ``speculative_adaptive: true`` in ``/server_info`` (for tests of the refusal)."""
    io_timeout_s: float = 30.0
    """Seconds a connection may stay silent (request line, headers, body, keep-alive idle)."""
    max_body_bytes: int = 4 * 1024 * 1024
    """Largest request body read (413 above it)."""
    max_workers: int = 64
    """Connections handled at once (503 for one more)."""


def _now_sglang() -> str:
    return _dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def _now_vllm() -> str:
    return _dt.datetime.now().strftime("%m-%d %H:%M:%S")


class _Stats:
    """Server-side counters of both flavors (reset by the ``reset`` fault)."""

    def __init__(self, config: ServeConfig, engine: ServedEngine, log: Callable[[str], None]) -> None:
        self.config = config
        self.engine = engine
        self.log = log
        self.lock = threading.Lock()
        self.running = 0
        self.reset()

    # ------------------------------------------------------------------ vLLM registry
    def _build_registry(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge

        k = self.engine.draft_len
        name = self.model_name
        r = CollectorRegistry()
        lab = ("engine", "model_name")
        self.registry = r
        flavor = self.config.flavor
        self.g_start = Gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                             registry=r)
        self.g_start.set(self.start_time)
        if flavor == "vllm":
            names = vllm.COUNTER_NAMES  # family names; prometheus_client adds _total
            self.c_drafts = Counter(names["num_drafts"], "Number of spec decoding drafts.", lab, registry=r)
            self.c_draft_tokens = Counter(names["num_draft_tokens"], "Number of draft tokens.", lab, registry=r)
            self.c_accepted = Counter(names["num_accepted_tokens"], "Number of accepted tokens.", lab, registry=r)
            self.c_per_pos = Counter(names["accepted_per_position"], "Accepted tokens per draft position.",
                                     (*lab, vllm.POSITION_LABEL), registry=r)
            self.g_running = Gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                                   lab, registry=r)
            self.g_waiting = Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                                   lab, registry=r)
            self.c_prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", lab, registry=r)
            self.c_gen = Counter("vllm:generation_tokens", "Number of generation tokens processed.", lab, registry=r)
            self.c_success = Counter("vllm:request_success", "Count of successfully processed requests.",
                                     ("engine", "finished_reason", "model_name"), registry=r)
            for c in (self.c_drafts, self.c_draft_tokens, self.c_accepted, self.c_prompt, self.c_gen):
                c.labels("0", name).inc(0)
            for j in range(k):
                self.c_per_pos.labels("0", name, str(j)).inc(0)
            for reason in ("stop", "length", "abort", "error"):
                self.c_success.labels("0", reason, name).inc(0)
            self.g_running.labels("0", name).set(self.running)
            self.g_waiting.labels("0", name).set(0)
        elif flavor == "atom":
            self.c_atom_draft = Counter(atom.METRIC_DRAFT_TOKENS.removesuffix("_total"), "Total MTP draft tokens.",
                                        registry=r)
            self.c_atom_accepted = Counter(atom.METRIC_ACCEPTED.removesuffix("_total"), "Total MTP accepted tokens.",
                                           registry=r)
            self.c_atom_steps = Counter(atom.METRIC_DECODE_STEPS.removesuffix("_total"),
                                        "MTP decode steps by accepted draft tokens.", (atom.ACCEPTED_LABEL,), registry=r)
            for j in range(k + 1):
                self.c_atom_steps.labels(str(j)).inc(0)
        else:
            sg = ("model_name", "engine_type", "tp_rank")
            self.c_verify = Counter(sglang.METRIC_VERIFY_CALLS.removesuffix("_total"),
                                    "Number of speculative decoding verification calls.", sg, registry=r)
            self.c_gen = Counter(sglang.METRIC_GENERATION_TOKENS.removesuffix("_total"),
                                 "Number of generation tokens processed.", sg, registry=r)
            self.c_requests = Counter(sglang.METRIC_NUM_REQUESTS.removesuffix("_total"),
                                      "The number of processed requests.", sg, registry=r)
            self.g_accept_len = Gauge(sglang.METRIC_ACCEPT_LENGTH, "The average acceptance length of speculative "
                                      "decoding.", sg, registry=r)
            self.g_accept_rate = Gauge(sglang.METRIC_ACCEPT_RATE, "The average acceptance rate of speculative "
                                       "decoding.", sg, registry=r)
            for c in (self.c_verify, self.c_gen, self.c_requests):
                c.labels(name, "unified", "0").inc(0)

    @property
    def model_name(self) -> str:
        return self.config.served_model_name or self.engine.model_name

    def reset(self) -> None:
        """Zero every counter, as a restarted server would."""
        self.start_time = time.time()
        # vLLM interval (log line)
        self.iv_drafts = 0
        self.iv_draft_tokens = 0
        self.iv_accepted = 0
        self.iv_pos = [0] * self.engine.draft_len
        self.iv_start = time.monotonic()
        # SGLang interval (decode log) and lifetime totals advanced at each interval
        self.sg_batches = 0
        self.sg_tokens = 0
        self.sg_bs = 0
        self.sg_correct = 0
        self.sg_total_tokens = 0
        self.sg_total_forward = 0
        self.sg_iv_start = time.monotonic()
        # ATOM (cumulative /debug/mtp_stats; interval for the log line)
        self.atom_draft = 0
        self.atom_accepted = 0
        self.atom_dist = [0] * (self.engine.draft_len + 1)
        self.atom_iv: list[Any] = [0, 0, [0] * (self.engine.draft_len + 1)]
        self._build_registry()

    # ------------------------------------------------------------------ recording
    def record(self, gen: Generation) -> None:
        """Count one finished request (counters are current when the response returns)."""
        with self.lock:
            name = self.model_name
            if self.config.flavor == "vllm":
                for n, d in zip(gen.accepted, gen.drafted, strict=True):
                    if d <= 0:
                        continue
                    self.c_drafts.labels("0", name).inc()
                    self.c_draft_tokens.labels("0", name).inc(d)
                    self.c_accepted.labels("0", name).inc(n)
                    self.iv_drafts += 1
                    self.iv_draft_tokens += d
                    self.iv_accepted += n
                    for j in range(n):
                        self.c_per_pos.labels("0", name, str(j)).inc()
                        self.iv_pos[j] += 1
                self.c_prompt.labels("0", name).inc(gen.prompt_tokens)
                self.c_gen.labels("0", name).inc(gen.output_tokens)
                self.c_success.labels("0", gen.finish_reason, name).inc()
            elif self.config.flavor == "atom":
                k = self.engine.draft_len
                for n in gen.accepted:  # ATOM charges K draft tokens per step (scheduler.py SpecStats.update)
                    self.atom_draft += k
                    self.atom_accepted += n
                    self.atom_dist[n] += 1
                    self.c_atom_draft.inc(k)
                    self.c_atom_accepted.inc(n)
                    self.c_atom_steps.labels(str(n)).inc()
                    iv = self.atom_iv
                    iv[0] += k
                    iv[1] += n
                    iv[2][n] += 1
                    if sum(iv[2]) >= self.config.decode_log_interval:
                        self._atom_lines()
            else:
                k = self.engine.draft_len
                self.c_verify.labels(name, "unified", "0").inc(len(gen.accepted))
                self.c_gen.labels(name, "unified", "0").inc(gen.output_tokens)
                self.c_requests.labels(name, "unified", "0").inc()
                for n in gen.accepted:
                    self.sg_batches += 1
                    self.sg_tokens += n + 1
                    self.sg_bs += 1
                    self.sg_correct += n
                    if self.sg_batches >= self.config.decode_log_interval:
                        self._sglang_line(k)

    def _sglang_line(self, k: int) -> None:
        elapsed = max(time.monotonic() - self.sg_iv_start, 1e-9)
        accept_len = self.sg_tokens / self.sg_bs
        per_round = k  # speculative_num_draft_tokens - 1 (== steps for topk 1)
        accept_rate = self.sg_correct / (self.sg_bs * per_round)
        self.sg_total_tokens += self.sg_tokens
        self.sg_total_forward += self.sg_bs
        name = self.model_name
        self.g_accept_len.labels(name, "unified", "0").set(accept_len)
        self.g_accept_rate.labels(name, "unified", "0").set(accept_rate)
        self.log(sglang.LOG_DECODE_BATCH_FORMAT.format(
            time=_now_sglang(), running=max(self.running, 1), tokens=self.sg_tokens, accept_len=accept_len,
            accept_rate=accept_rate, throughput=self.sg_tokens / elapsed))
        self.sg_batches = self.sg_tokens = self.sg_bs = self.sg_correct = 0
        self.sg_iv_start = time.monotonic()

    def _atom_lines(self) -> None:
        """ATOM's ``[MTP Stats Interval]`` and cumulative ``[MTP Stats         ]`` lines."""
        now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]

        def line(tag: str, draft: int, acc: int, dist: list[int]) -> str:
            steps = sum(dist) or 1
            pct = ", ".join(f"{j}: '{100.0 * c / steps:.2f}%'" for j, c in enumerate(dist))
            rate = 100.0 * acc / draft if draft else 0.0
            return atom.LOG_MTP_STATS_FORMAT.format(time=now, tag=tag, avg=1 + acc / steps, accepted=acc,
                                                    drafted=draft, rate=rate, distribution=pct)

        iv = self.atom_iv
        self.log(line("Interval", iv[0], iv[1], iv[2]))
        self.log(line("        ", self.atom_draft, self.atom_accepted, self.atom_dist))
        self.atom_iv = [0, 0, [0] * (self.engine.draft_len + 1)]

    def mtp_stats(self) -> dict[str, Any]:
        """ATOM ``GET /debug/mtp_stats`` (``LLMEngine.get_mtp_statistics``), cumulative."""
        with self.lock:
            steps = sum(self.atom_dist)
            dist = {j: c for j, c in enumerate(self.atom_dist) if c}
            return {
                atom.STATS_ENABLED: True,
                atom.STATS_DRAFT_TOKENS: self.atom_draft,
                atom.STATS_ACCEPTED: self.atom_accepted,
                atom.STATS_RATE: self.atom_accepted / self.atom_draft if self.atom_draft else 0.0,
                atom.STATS_AVG_TOKENS: 1 + self.atom_accepted / steps if steps else 0.0,
                atom.STATS_DISTRIBUTION: dist,
                atom.STATS_DISTRIBUTION_PERCENT: {j: c / steps for j, c in dist.items()},
            }

    def vllm_log_tick(self) -> None:
        """Write the ``SpecDecoding metrics`` line for the interval (nothing without drafts)."""
        with self.lock:
            if self.iv_drafts <= 0:
                self.iv_start = time.monotonic()
                return
            dt = max(time.monotonic() - self.iv_start, 1e-9)
            al = 1.0 + self.iv_accepted / self.iv_drafts
            rates = ", ".join(f"{c / self.iv_drafts:.3f}" for c in self.iv_pos)
            rate = 100.0 * self.iv_accepted / self.iv_draft_tokens if self.iv_draft_tokens else 0.0
            self.log(vllm.LOG_SPEC_DECODING_FORMAT.format(
                pid=os.getpid(), time=_now_vllm(), al=al, accepted_per_s=self.iv_accepted / dt,
                drafted_per_s=self.iv_draft_tokens / dt, accepted=self.iv_accepted, drafted=self.iv_draft_tokens,
                rates=rates, rate=rate))
            self.iv_drafts = self.iv_draft_tokens = self.iv_accepted = 0
            self.iv_pos = [0] * self.engine.draft_len
            self.iv_start = time.monotonic()

    def set_running(self, delta: int) -> None:
        with self.lock:
            self.running += delta
            if self.config.flavor == "vllm":
                self.g_running.labels("0", self.model_name).set(self.running)

    def avg_spec_accept_length(self) -> float:
        with self.lock:
            return self.sg_total_tokens / self.sg_total_forward if self.sg_total_forward else 0.0

    def metrics_text(self) -> bytes:
        from prometheus_client import generate_latest

        with self.lock:
            return generate_latest(self.registry)


def _histogram(accepted: list[int]) -> list[int]:
    """SGLang's dynamically grown list: index j = steps that accepted j drafts."""
    if not accepted:
        return []
    out = [0] * (max(accepted) + 1)
    for n in accepted:
        out[n] += 1
    return out


class ReferenceServer:
    """The HTTP server. ``start()`` serves in a background thread; ``serve_forever()`` blocks.

    Args:
        engine: what generates.
        config: flavor, address, intervals, faults.
        log_stream: where log lines go (the server's "log"); flushed per line.
    """

    def __init__(self, engine: ServedEngine, config: ServeConfig, log_stream: TextIO) -> None:
        if config.flavor not in FLAVORS:
            raise UsageError(f"unknown flavor {config.flavor!r}", hint="sglang, vllm or atom")
        if config.meta_version not in ("0.5.23", "0.5.15", "old"):
            raise UsageError(f"unknown SGLang meta_info version {config.meta_version!r}", hint="0.5.23, 0.5.15 or old")
        if config.per_request_metrics not in (None, "none", "summary", "detailed"):
            raise UsageError(f"bad per-request metrics level {config.per_request_metrics!r}")
        self.engine = engine
        self.config = config
        self._log_stream = log_stream
        self._log_lock = threading.Lock()
        self.stats = _Stats(config, engine, self.log)
        self._counter = 0
        self._counter_lock = threading.Lock()
        self._stop = threading.Event()
        self.httpd = _BoundedHTTPServer((config.host, config.port), self._handler_class(),
                                        max_workers=config.max_workers)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ logging
    def log(self, line: str) -> None:
        """Write one log line and flush."""
        with self._log_lock:
            self._log_stream.write(line + "\n")
            self._log_stream.flush()

    def _startup_lines(self) -> None:
        cfg = self.config
        k = self.engine.draft_len
        if cfg.flavor == "vllm":
            spec: dict[str, Any] = {"model": self.engine.draft_name, vllm.K_KEY: k}
            if cfg.claim_synthetic:
                spec.update({vllm.METHOD_KEY: vllm.SYNTHETIC_METHOD, vllm.LENGTH_KEY: 2.5})
            args = {"model": self.engine.target_name, "host": cfg.host, "port": self.port,
                    "served_model_name": [self.stats.model_name], vllm.SPEC_CONFIG_KEY: spec}
            self.log(f"(APIServer pid={os.getpid()}) INFO {_now_vllm()} [api_utils.py:286] non-default args: {args!r}")
        elif cfg.flavor == "atom":
            if cfg.claim_synthetic:
                self.log(f"{_now_sglang()} - atom - INFO - Forced speculative acceptance ON: mean acceptance "
                         f"length 2.50 (per-position rates ...)")
        else:
            self.log(sglang.LOG_SERVER_ARGS_FORMAT.format(time=_now_sglang(), model=self.engine.target_name,
                                                          algorithm=self.config.algorithm.upper(), steps=k,
                                                          draft_tokens=k + 1))

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Serve in background threads (plus the vLLM stats-logging ticker)."""
        self._startup_lines()
        t = threading.Thread(target=self.httpd.serve_forever, name="serve-reference", daemon=True)
        t.start()
        self._threads.append(t)
        if self.config.flavor == "vllm":
            tick = threading.Thread(target=self._ticker, name="stats-logger", daemon=True)
            tick.start()
            self._threads.append(tick)
        self.log(f"[{_now_sglang()}] golden-al serve-reference ({self.config.flavor} flavor, k={self.engine.draft_len}) "
                 f"listening on http://{self.config.host}:{self.port}")

    def serve_forever(self) -> None:
        """Start and block until :meth:`shutdown` (or Ctrl-C)."""
        self.start()
        try:
            while not self._stop.wait(0.5):
                pass
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop serving."""
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _ticker(self) -> None:
        while not self._stop.wait(self.config.log_stats_interval_s):
            self.stats.vllm_log_tick()

    @property
    def url(self) -> str:
        """Base URL."""
        return f"http://{self.config.host}:{self.port}"

    # ------------------------------------------------------------------ answers
    def next_request_number(self) -> int:
        with self._counter_lock:
            self._counter += 1
            return self._counter

    def server_info(self) -> dict[str, Any]:
        """SGLang ``/server_info``: server args flattened, ``internal_states``, ``version``."""
        k = self.engine.draft_len
        algo = self.config.algorithm.upper()
        if algo == "DFLASH":
            steps, ndt = 1, k + 1
        elif algo == "DSPARK":
            steps, ndt = 1, k + 1
        else:
            steps, ndt = k, k + 1
        f = sglang.SERVER_INFO_FIELDS
        info: dict[str, Any] = {
            f["model_path"]: self.engine.target_name,
            f["served_model_name"]: self.stats.model_name,
            f["tp_size"]: 1,
            f["algorithm"]: algo,
            f["draft_model"]: self.engine.draft_name,
            f["num_steps"]: steps,
            f["eagle_topk"]: 1,
            f["num_draft_tokens"]: ndt,
            "decode_log_interval": self.config.decode_log_interval,
            f["adaptive"]: self.config.speculative_adaptive,
            sglang.SERVER_INFO_STATES: [{sglang.SERVER_INFO_AVG_ACCEPT_LENGTH: self.stats.avg_spec_accept_length(),
                                         "last_gen_throughput": 0.0}],
            "version": self.config.version,
        }
        if algo == "DSPARK":
            info[f["dspark_block_size"]] = k
        if self.config.claim_synthetic:
            info["environ"] = {sglang.ENV_LEN: "2.5", sglang.ENV_METHOD: sglang.DEFAULT_METHOD}
        return info

    def meta_info(self, gen: Generation, rid: str, latency: float) -> dict[str, Any]:
        """SGLang ``meta_info`` of a finished request (field names per ``meta_version``)."""
        k = self.engine.draft_len
        verify = len(gen.accepted)
        correct = sum(gen.accepted)
        proposed = verify * k
        hist = _histogram(gen.accepted)
        finish: dict[str, Any] = {"type": gen.finish_reason}
        if gen.finish_reason == "length":
            finish["length"] = gen.output_tokens
        meta: dict[str, Any] = {
            "id": rid,
            "finish_reason": finish,
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": gen.output_tokens,
            "cached_tokens": 0,
            "e2e_latency": latency,
            sglang.META_VERIFY: verify,
        }
        if verify:
            meta[sglang.META_ACCEPT_LENGTH] = gen.output_tokens / verify
            meta[sglang.META_ACCEPT_RATE] = correct / proposed if proposed else 0.0
        # field names by version, newest first: (0.5.23, 0.5.15 alias, old) for accepted / proposed,
        # (0.5.23, 0.5.15 alias = old) for the histogram
        acc, prop, hists = sglang.META_ACCEPTED_KEYS, sglang.META_PROPOSED_KEYS, sglang.META_HISTOGRAM_KEYS
        version = self.config.meta_version
        if version == "old":
            meta.update({acc[2]: correct, prop[2]: proposed, hists[1]: hist})
            return meta
        meta.update({acc[0]: correct, prop[0]: proposed, hists[0]: hist})
        if version == "0.5.15":
            meta.update({acc[1]: correct, prop[1]: proposed, hists[1]: hist})
        return meta

    def spec_tokens_details(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """SGLang ``SpecTokensDetails`` (0.5.23 ``entrypoints/openai/protocol.py``)."""
        keys = (sglang.META_ACCEPT_RATE, sglang.META_ACCEPT_LENGTH, sglang.META_ACCEPTED_KEYS[0],
                sglang.META_PROPOSED_KEYS[0], sglang.META_VERIFY, sglang.META_HISTOGRAM_KEYS[0])
        out: dict[str, Any] = {key: meta.get(key) for key in keys}
        out.update(spec_cap_length=None, spec_block_accept_length=None, spec_cap_lens_histogram=None)
        return out

    def vllm_request_metrics(self, gen: Generation) -> dict[str, Any]:
        """vLLM 0.33 ``metrics.speculative_decoding`` of one request."""
        k = self.engine.draft_len
        steps = [(n, d) for n, d in zip(gen.accepted, gen.drafted, strict=True) if d > 0]
        hist = [0] * (k + 1)
        for n, _ in steps:
            hist[n] += 1
        acc = sum(n for n, _ in steps)
        drafted = sum(d for _, d in steps)
        out: dict[str, Any] = {
            vllm.REQ_MEAN_AL: 1.0 + acc / len(steps) if steps else None,
            vllm.REQ_RATE: acc / drafted if drafted else None,
            vllm.REQ_HISTOGRAM: hist,
            vllm.REQ_STEPS: len(steps),
            vllm.REQ_ACCEPTED: acc,
            vllm.REQ_DRAFT_TOKENS: drafted,
            vllm.REQ_K: k,
        }
        if self.config.per_request_metrics == vllm.PER_REQUEST_LEVELS[1]:
            out[vllm.REQ_PER_STEP] = [n for n, _ in steps]
            out[vllm.REQ_PER_STEP_DRAFTED] = [d for _, d in steps]
        return out

    # ------------------------------------------------------------------ handler
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            #: seconds a connection may stay silent (headers, body, or idle between keep-alive requests)
            timeout = server.config.io_timeout_s

            def log_message(self, format: str, *args: Any) -> None:
                return

            def handle_one_request(self) -> None:
                """Every request gets an HTTP answer: anything the handlers did not foresee is a 400 or
                500 JSON error, a silent socket is closed after ``timeout``, never a traceback."""
                try:
                    super().handle_one_request()
                except TimeoutError:
                    self.close_connection = True
                except (ConnectionError, OSError):
                    self.close_connection = True
                except Exception as exc:  # a bad request must never kill the server thread
                    server.log(f"[{_now_sglang()}] golden-al: bad request: {type(exc).__name__}: {exc}")
                    self._error(400, f"bad request: {type(exc).__name__}")
                    self.close_connection = True

            def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
                """The standard library's malformed-request answers (a bad request line, headers too long),
                as JSON like every other error, always with an HTTP/1.1 status line."""
                if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
                    self.request_version = "HTTP/1.1"
                self._error(int(code), message or HTTPStatus(int(code)).phrase)
                self.close_connection = True

            def _body(self) -> dict[str, Any] | None:
                """The JSON object of the request body, under the byte cap, or None (answered with a 4xx)."""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    self._error(411, "a Content-Length is required")
                    self.close_connection = True  # the chunked body is not read: it must not pass for a request
                    return None
                raw = self.headers.get("Content-Length") or "0"
                if not raw.strip().isdigit():
                    self._error(400, f"bad Content-Length {raw[:40]!r}")
                    return None
                length = int(raw)
                if length > server.config.max_body_bytes:
                    self._error(413, f"body of {length:,} bytes is over the {server.config.max_body_bytes:,}-byte cap")
                    self.close_connection = True
                    return None
                try:
                    data = self.rfile.read(length)
                except TimeoutError:
                    self._error(408, f"the body stopped arriving ({server.config.io_timeout_s:g} s without a byte)")
                    self.close_connection = True
                    return None
                if len(data) < length:
                    self._error(400, "the body ended before its Content-Length")
                    self.close_connection = True
                    return None
                try:
                    body = json.loads(data or b"{}")
                except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                    self._error(400, f"bad JSON body: {type(exc).__name__}")
                    return None
                if not isinstance(body, dict):
                    self._error(400, "the body must be a JSON object")
                    return None
                return body

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _json(self, status: int, obj: Any) -> None:
                self._send(status, json.dumps(obj).encode())

            def _error(self, status: int, message: str) -> None:
                self._json(status, {"object": "error", "message": message, "type": HTTPStatus(status).phrase,
                                    "code": status})

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                flavor = server.config.flavor
                if path in ("/health", "/health_generate"):
                    self._send(200, {"vllm": b"", "atom": b'{"status": "ok"}'}.get(flavor, b"{}"))
                elif path == "/v1/models":
                    self._json(200, {"object": "list", "data": [
                        {"id": server.stats.model_name, "object": "model", "owned_by": "golden-al",
                         "root": server.engine.target_name, "max_model_len": 1 << 20}]})
                elif path == "/metrics":
                    self._send(200, server.stats.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
                elif path == "/version" and flavor == "vllm":
                    self._json(200, {"version": server.config.version})
                elif path in sglang.SERVER_INFO_PATHS and flavor == "sglang":
                    self._json(200, server.server_info())
                elif path == atom.MTP_STATS_PATH and flavor == "atom":
                    self._json(200, server.stats.mtp_stats())
                elif path == atom.SERVER_INFO_PATH and flavor == "atom":
                    self._json(200, {"model_id": server.stats.model_name, "served_model_name": server.stats.model_name,
                                     "tp_size": 1, "dp_size": 1})
                elif path == "/get_model_info" and flavor == "sglang":
                    self._json(200, {"model_path": server.engine.target_name, "is_generation": True})
                else:
                    self._error(404, f"no route {path}")

            def do_POST(self) -> None:
                path = self.path.split("?", 1)[0]
                body = self._body()
                if body is None:
                    return
                if path == "/v1/chat/completions":
                    self._generate(body, chat=True)
                elif path == "/generate" and server.config.flavor == "sglang":
                    self._generate(body, chat=False)
                else:
                    self._error(404, f"no route {path}")

            def _generate(self, body: dict[str, Any], *, chat: bool) -> None:
                n = server.next_request_number()
                kinds = server.config.faults.kinds(n, body)
                if "die" in kinds:
                    server.log(f"[{_now_sglang()}] golden-al fault: request {n}: exiting (simulated kill)")
                    os._exit(17)
                for status in ("500", "502", "503"):
                    if status in kinds:
                        server.log(f"[{_now_sglang()}] golden-al fault: request {n}: HTTP {status}")
                        self._error(int(status), f"injected fault on request {n}")
                        return
                if "reset" in kinds:
                    server.log(f"[{_now_sglang()}] golden-al fault: request {n}: counters reset (simulated restart)")
                    server.stats.reset()
                try:
                    if chat:
                        messages = body.get("messages")
                        if not isinstance(messages, list) or not messages:
                            self._error(400, "messages must be a non-empty list")
                            return
                        if body.get("stream"):
                            self._error(400, "streaming is not supported by serve-reference")
                            return
                        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
                        temperature = float(body.get("temperature", 1.0))
                        top_p = float(body.get("top_p", 1.0))
                        text = None
                    else:
                        sp = body.get("sampling_params") or {}
                        messages = None
                        text = body.get("text")
                        if not isinstance(text, str):
                            self._error(400, "/generate needs a text prompt")
                            return
                        max_tokens = int(sp.get("max_new_tokens", 128))
                        temperature = float(sp.get("temperature", 1.0))
                        top_p = float(sp.get("top_p", 1.0))
                    seed = body.get("seed")
                    seed = int(seed) if seed is not None else None
                    kwargs = body.get("chat_template_kwargs") or {}
                except (TypeError, ValueError) as exc:
                    self._error(400, f"bad request field: {exc}")
                    return
                server.stats.set_running(+1)
                t0 = time.monotonic()
                try:
                    if "sleep" in kinds:
                        server.log(f"[{_now_sglang()}] golden-al fault: request {n}: sleeping {server.config.fault_sleep_s:g} s")
                        time.sleep(server.config.fault_sleep_s)
                    try:
                        gen = server.engine.generate(messages=messages, text=text, max_tokens=max_tokens,
                                                     temperature=temperature, top_p=top_p, seed=seed,
                                                     chat_template_kwargs=kwargs)
                    except Exception as exc:  # a bad request must never kill the server thread
                        server.log(f"[{_now_sglang()}] engine error on request {n}: {type(exc).__name__}: {exc}")
                        self._error(500, f"engine error: {type(exc).__name__}: {exc}")
                        return
                    server.stats.record(gen)
                finally:
                    server.stats.set_running(-1)
                latency = time.monotonic() - t0
                if self._misbehave(kinds, n):
                    return
                nospec = "nospec" in kinds
                rid = uuid.uuid4().hex
                if not chat:
                    meta = server.meta_info(gen, rid, latency)
                    if nospec:
                        meta = {k: v for k, v in meta.items() if not k.startswith("spec_")}
                    self._json(200, {"text": gen.text, sglang.META_INFO: meta})
                    return
                choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": gen.text},
                                          "logprobs": None, "finish_reason": gen.finish_reason}
                resp: dict[str, Any] = {
                    "id": f"chatcmpl-{rid}", "object": "chat.completion", "created": int(time.time()),
                    "model": server.stats.model_name, "choices": [choice],
                    "usage": {"prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.output_tokens,
                              "total_tokens": gen.prompt_tokens + gen.output_tokens},
                }
                if server.config.flavor == "sglang":
                    meta = server.meta_info(gen, rid, latency)
                    if nospec:
                        meta = {k: v for k, v in meta.items() if not k.startswith("spec_")}
                    if body.get("return_meta_info"):
                        choice[sglang.META_INFO] = meta
                    if body.get("return_spec_tokens_details") and not nospec:
                        resp[sglang.META_EXTENSION] = {sglang.META_DETAILS: server.spec_tokens_details(meta)}
                elif server.config.per_request_metrics in vllm.PER_REQUEST_LEVELS and not nospec:
                    resp[vllm.REQUEST_METRICS] = {vllm.REQUEST_SPEC: server.vllm_request_metrics(gen)}
                self._json(200, _lie(resp, kinds, server.engine.draft_len))

            def _misbehave(self, kinds: list[str], n: int) -> bool:
                """The faults that replace the answer itself; True when one did."""
                if "list" in kinds:
                    self._json(200, [1, 2, 3])
                elif "redirect" in kinds:
                    body = json.dumps({"usage": {"completion_tokens": 32}, "choices": [{sglang.META_INFO: {
                        sglang.META_VERIFY: 8, sglang.META_ACCEPTED_KEYS[0]: 8 * server.engine.draft_len}}]})
                    self.send_response(302)
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body.encode())
                elif "endless" in kinds or "trickle" in kinds:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    chunk = b" " * (65536 if "endless" in kinds else 1)
                    try:
                        for _ in range(10**9):
                            self.wfile.write(chunk)
                            self.wfile.flush()
                            if "trickle" in kinds:
                                time.sleep(1.0)
                    except (BrokenPipeError, ConnectionResetError, OSError):
                        pass
                    self.close_connection = True
                else:
                    return False
                server.log(f"[{_now_sglang()}] golden-al fault: request {n}: {kinds}")
                return True

        return Handler
