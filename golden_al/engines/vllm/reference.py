"""serve-reference's vLLM flavor (vLLM 0.33.0 ``vllm/v1/spec_decode/metrics.py``,
``vllm/v1/metrics/loggers.py``, ``vllm/entrypoints/openai/api_server.py``): ``/metrics`` with the
spec-decode counters (``_total`` and ``_created``, per position too), request counters and
running/waiting gauges; ``/version``; per-request ``metrics.speculative_decoding`` when
``per_request_metrics`` is ``summary``/``detailed``; the ``SpecDecoding metrics: ...`` log line every
``log_stats_interval_s`` seconds; the ``non-default args: {...}`` startup line."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, ClassVar

from golden_al import plugin

from . import (
    K_KEY,
    LENGTH_KEY,
    LOG_SPEC_DECODING_FORMAT,
    METHOD_KEY,
    METRIC_ACCEPTED,
    METRIC_ACCEPTED_PER_POS,
    METRIC_DRAFT_TOKENS,
    METRIC_DRAFTS,
    PER_REQUEST_LEVELS,
    POSITION_LABEL,
    REQ_ACCEPTED,
    REQ_DRAFT_TOKENS,
    REQ_HISTOGRAM,
    REQ_K,
    REQ_MEAN_AL,
    REQ_PER_STEP,
    REQ_PER_STEP_DRAFTED,
    REQ_RATE,
    REQ_STEPS,
    REQUEST_METRICS,
    REQUEST_SPEC,
    SPEC_CONFIG_KEY,
    SYNTHETIC_METHOD,
)

__all__ = ["VllmFlavor"]

_LABELS = ("engine", "model_name")


class VllmFlavor(plugin.Flavor):
    """vLLM's counters, interval log line, ``/version`` and per-request metrics."""

    health_body: ClassVar[bytes] = b""

    def __init__(self, config: plugin.ServeSettings, engine: plugin.ServedEngine, log: Callable[[str], None],
                 model_name: Callable[[], str]) -> None:
        super().__init__(config, engine, log, model_name)
        self.tick_interval_s = config.log_stats_interval_s

    def reset(self, registry: Any) -> None:
        from prometheus_client import Counter, Gauge

        k = self.engine.draft_len
        name = self.model_name()
        drafts, draft_tokens, accepted, per_pos = (m.removesuffix("_total") for m in (  # prometheus_client adds it
            METRIC_DRAFTS, METRIC_DRAFT_TOKENS, METRIC_ACCEPTED, METRIC_ACCEPTED_PER_POS))
        self.c_drafts = Counter(drafts, "Number of spec decoding drafts.", _LABELS, registry=registry)
        self.c_draft_tokens = Counter(draft_tokens, "Number of draft tokens.", _LABELS, registry=registry)
        self.c_accepted = Counter(accepted, "Number of accepted tokens.", _LABELS, registry=registry)
        self.c_per_pos = Counter(per_pos, "Accepted tokens per draft position.", (*_LABELS, POSITION_LABEL),
                                 registry=registry)
        self.g_running = Gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
                               _LABELS, registry=registry)
        self.g_waiting = Gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                               _LABELS, registry=registry)
        self.c_prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", _LABELS, registry=registry)
        self.c_gen = Counter("vllm:generation_tokens", "Number of generation tokens processed.", _LABELS,
                             registry=registry)
        self.c_success = Counter("vllm:request_success", "Count of successfully processed requests.",
                                 ("engine", "finished_reason", "model_name"), registry=registry)
        for c in (self.c_drafts, self.c_draft_tokens, self.c_accepted, self.c_prompt, self.c_gen):
            c.labels("0", name).inc(0)
        for j in range(k):
            self.c_per_pos.labels("0", name, str(j)).inc(0)
        for reason in ("stop", "length", "abort", "error"):
            self.c_success.labels("0", reason, name).inc(0)
        self.g_running.labels("0", name).set(self.running)
        self.g_waiting.labels("0", name).set(0)
        # the interval of the SpecDecoding log line
        self.iv_drafts = self.iv_draft_tokens = self.iv_accepted = 0
        self.iv_pos = [0] * k
        self.iv_start = time.monotonic()

    def record(self, gen: plugin.Generation) -> None:
        name = self.model_name()
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

    def set_running(self, running: int) -> None:
        super().set_running(running)
        self.g_running.labels("0", self.model_name()).set(running)

    def tick(self) -> None:
        """Write the ``SpecDecoding metrics`` line for the interval (nothing without drafts)."""
        if self.iv_drafts <= 0:
            self.iv_start = time.monotonic()
            return
        dt = max(time.monotonic() - self.iv_start, 1e-9)
        al = 1.0 + self.iv_accepted / self.iv_drafts
        rates = ", ".join(f"{c / self.iv_drafts:.3f}" for c in self.iv_pos)
        rate = 100.0 * self.iv_accepted / self.iv_draft_tokens if self.iv_draft_tokens else 0.0
        self.log(LOG_SPEC_DECODING_FORMAT.format(
            pid=os.getpid(), time=plugin.now_short(), al=al, accepted_per_s=self.iv_accepted / dt,
            drafted_per_s=self.iv_draft_tokens / dt, accepted=self.iv_accepted, drafted=self.iv_draft_tokens,
            rates=rates, rate=rate))
        self.iv_drafts = self.iv_draft_tokens = self.iv_accepted = 0
        self.iv_pos = [0] * self.engine.draft_len
        self.iv_start = time.monotonic()

    def startup_lines(self, port: int) -> list[str]:
        cfg = self.config
        spec: dict[str, Any] = {"model": self.engine.draft_name, K_KEY: self.engine.draft_len}
        if cfg.claim_synthetic:
            spec.update({METHOD_KEY: SYNTHETIC_METHOD, LENGTH_KEY: 2.5})
        spec.update(cfg.server_settings)
        args = {"model": self.engine.target_name, "host": cfg.host, "port": port,
                "served_model_name": [self.model_name()], SPEC_CONFIG_KEY: spec}
        return [f"(APIServer pid={os.getpid()}) INFO {plugin.now_short()} [api_utils.py:286] non-default args: {args!r}"]

    def get(self, path: str) -> Any | None:
        return {"version": self.config.version} if path == "/version" else None

    def chat_fields(self, resp: dict[str, Any], choice: dict[str, Any], body: dict[str, Any], gen: plugin.Generation,
                    rid: str, latency: float, nospec: bool) -> None:
        if self.config.per_request_metrics in PER_REQUEST_LEVELS and not nospec:
            resp[REQUEST_METRICS] = {REQUEST_SPEC: self.request_metrics(gen)}

    def request_metrics(self, gen: plugin.Generation) -> dict[str, Any]:
        """vLLM 0.33 ``metrics.speculative_decoding`` of one request."""
        k = self.engine.draft_len
        steps = [(n, d) for n, d in zip(gen.accepted, gen.drafted, strict=True) if d > 0]
        hist = [0] * (k + 1)
        for n, _ in steps:
            hist[n] += 1
        acc = sum(n for n, _ in steps)
        drafted = sum(d for _, d in steps)
        out: dict[str, Any] = {
            REQ_MEAN_AL: 1.0 + acc / len(steps) if steps else None,
            REQ_RATE: acc / drafted if drafted else None,
            REQ_HISTOGRAM: hist,
            REQ_STEPS: len(steps),
            REQ_ACCEPTED: acc,
            REQ_DRAFT_TOKENS: drafted,
            REQ_K: k,
        }
        if self.config.per_request_metrics == PER_REQUEST_LEVELS[1]:
            out[REQ_PER_STEP] = [n for n, _ in steps]
            out[REQ_PER_STEP_DRAFTED] = [d for _, d in steps]
        return out
