"""serve-reference's TensorRT-LLM flavor: what ``trtllm-serve`` answers (NVIDIA/TensorRT-LLM
``tensorrt_llm/serve/openai_server.py`` at index commit 00b6d5a25c30).

``GET /metrics`` is a JSON list of the iteration statistics queued since the last call, drained by the
call (``get_iteration_stats``), at most ``iter_stats_max_iterations`` of them (default 1000; older rows
are dropped); ``GET /version`` is ``{"version": ...}``. Each decode iteration of a request is a row with
``specDecodingStats`` (``cpp/include/tensorrt_llm/executor/types.h`` ``SpecDecodingStats``); the context
(prefill) iteration is a row without drafts. Requests are generated one after another here, so every
row holds one request.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, ClassVar

from golden_al.engines.trtllm import iteration_stats as its
from golden_al.engines.trtllm.server import COMPLETED, METRICS_PATH, VERSION_PATH
from golden_al.servers.reference.flavor import Flavor
from golden_al.servers.served_engine import Generation

__all__ = ["TrtllmFlavor"]


class TrtllmFlavor(Flavor):
    """``trtllm-serve``'s drained JSON ``/metrics`` and ``/version``."""

    health_body: ClassVar[bytes] = b""

    def reset(self, registry: Any) -> None:
        self.queue: deque[dict[str, Any]] = deque(maxlen=self.config.iter_stats_max_iterations)
        self.iteration = 0

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

    def record(self, gen: Generation) -> None:
        """The request's context iteration, then one row per verify step (the last one completes it)."""
        steps = list(zip(gen.accepted, gen.drafted, strict=True))
        self.queue.append(self._row(drafted=0, accepted=0, requests=0, completed=0 if steps else 1))
        for i, (n, d) in enumerate(steps):  # a step without drafts is a plain decode iteration
            self.queue.append(self._row(drafted=d, accepted=n if d else 0, requests=int(d > 0),
                                        completed=int(i == len(steps) - 1)))

    def get(self, path: str) -> Any | None:
        if path == METRICS_PATH:
            rows = list(self.queue)
            self.queue.clear()
            return rows
        if path == VERSION_PATH:
            return {"version": self.config.version}
        return None
