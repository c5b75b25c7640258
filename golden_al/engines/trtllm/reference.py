"""serve-reference's TensorRT-LLM flavor: what ``trtllm-serve`` answers (NVIDIA/TensorRT-LLM
``tensorrt_llm/serve/openai_server.py`` at index commit 00b6d5a25c30).

``GET /metrics`` is a JSON list of the iteration statistics queued since the last call, drained by the
call (``get_iteration_stats``), at most ``iter_stats_max_iterations`` of them (default 1000; older rows
are dropped); ``GET /version`` is ``{"version": ...}``. Each decode iteration of a request is a row with
``specDecodingStats`` (``cpp/include/tensorrt_llm/executor/types.h`` ``SpecDecodingStats``); the context
(prefill) iteration is a row without drafts. Requests are generated one after another here, so every
row holds one request. With ``perf_metrics_max_requests`` above 0 (``return_perf_metrics`` on),
``GET /perf_metrics`` is the drained list of finished requests' entries: ``first_iter`` the context iteration,
``last_iter`` the last verify step, ``speculative_decoding`` their drafted and accepted totals (left out when
the request drafted nothing).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, ClassVar

from golden_al import plugin

from . import iteration_stats as its
from .server import (
    COMPLETED,
    METRICS_PATH,
    PERF_ACCEPTED,
    PERF_DRAFTED,
    PERF_METRICS_PATH,
    PERF_RATE,
    PERF_SPEC,
    VERSION_PATH,
)

__all__ = ["TrtllmFlavor"]


class TrtllmFlavor(plugin.Flavor):
    """``trtllm-serve``'s drained JSON ``/metrics`` and ``/version``."""

    health_body: ClassVar[bytes] = b""

    def reset(self, registry: Any) -> None:
        self.queue: deque[dict[str, Any]] = deque(maxlen=self.config.iter_stats_max_iterations)
        self.perf: deque[dict[str, Any]] = deque(maxlen=max(self.config.perf_metrics_max_requests, 1))
        self.iteration = 0
        self.requests = 0

    def _row(self, *, drafted: int, accepted: int, requests: int, completed: int) -> dict[str, Any]:
        row: dict[str, Any] = {
            its.ITER: self.iteration, "iterLatencyMS": 1.0, "numActiveRequests": max(requests, 1),
            "numQueuedRequests": 0, COMPLETED: completed, "timestamp": f"{time.time():.6f}",
            its.SPEC_STATS: {its.DRAFTED: drafted, its.ACCEPTED: accepted, its.REQUESTS: requests,
                             its.AL: (accepted + requests) / requests if requests else 0.0,
                             "draftOverhead": 0.0},
        }
        self.iteration += 1
        return row

    def record(self, gen: plugin.Generation) -> None:
        """The request's context iteration, then one row per verify step (the last one completes it)."""
        steps = list(zip(gen.accepted, gen.drafted, strict=True))
        first = self.iteration
        self.queue.append(self._row(drafted=0, accepted=0, requests=0, completed=0 if steps else 1))
        for i, (n, d) in enumerate(steps):  # a step without drafts is a plain decode iteration
            self.queue.append(self._row(drafted=d, accepted=n if d else 0, requests=int(d > 0),
                                        completed=int(i == len(steps) - 1)))
        if self.config.perf_metrics_max_requests > 0:
            drafted = sum(d for _, d in steps)
            accepted = sum(n for n, d in steps if d)
            entry: dict[str, Any] = {"first_iter": first, "last_iter": self.iteration - 1,
                                     "timing_metrics": {}, "kv_cache_metrics": {}}
            if drafted:
                entry[PERF_SPEC] = {PERF_RATE: accepted / drafted, PERF_ACCEPTED: accepted, PERF_DRAFTED: drafted}
            self.perf.append({"request_id": self.requests, "perf_metrics": entry})
        self.requests += 1

    def get(self, path: str) -> Any | None:
        if path == METRICS_PATH:
            rows = list(self.queue)
            self.queue.clear()
            return rows
        if path == PERF_METRICS_PATH:
            entries = list(self.perf) if self.config.perf_metrics_max_requests > 0 else []
            self.perf.clear()
            return entries
        if path == VERSION_PATH:
            return {"version": self.config.version}
        return None
