"""serve-reference's ATOM flavor (ROCm/ATOM HEAD ffdf3bb5d ``atom/entrypoints/openai/api_server.py``,
``atom/model_engine/llm_engine.py``, ``scheduler.py``): ``/debug/mtp_stats`` (cumulative, K draft
tokens charged per step), ``/server_info``, ``/metrics`` with ``atom:mtp_*`` counters, and
``[MTP Stats Interval]`` / ``[MTP Stats         ]`` lines every ``decode_log_interval`` steps."""

from __future__ import annotations

import datetime as _dt
from typing import Any, ClassVar

from golden_al import plugin

from . import (
    ACCEPTED_LABEL,
    LOG_MTP_STATS_FORMAT,
    METRIC_ACCEPTED,
    METRIC_DECODE_STEPS,
    METRIC_DRAFT_TOKENS,
    MTP_STATS_PATH,
    SERVER_INFO_PATH,
    STATS_ACCEPTED,
    STATS_AVG_TOKENS,
    STATS_DISTRIBUTION,
    STATS_DISTRIBUTION_PERCENT,
    STATS_DRAFT_TOKENS,
    STATS_ENABLED,
    STATS_RATE,
)

__all__ = ["AtomFlavor"]


class AtomFlavor(plugin.Flavor):
    """ATOM's MTP counters, stats endpoint and stats log lines."""

    health_body: ClassVar[bytes] = b'{"status": "ok"}'

    def reset(self, registry: Any) -> None:
        from prometheus_client import Counter

        k = self.engine.draft_len
        self.c_draft = Counter(METRIC_DRAFT_TOKENS.removesuffix("_total"), "Total MTP draft tokens.",
                               registry=registry)
        self.c_accepted = Counter(METRIC_ACCEPTED.removesuffix("_total"), "Total MTP accepted tokens.",
                                  registry=registry)
        self.c_steps = Counter(METRIC_DECODE_STEPS.removesuffix("_total"),
                               "MTP decode steps by accepted draft tokens.", (ACCEPTED_LABEL,), registry=registry)
        for j in range(k + 1):
            self.c_steps.labels(str(j)).inc(0)
        # cumulative /debug/mtp_stats; the interval of the log line
        self.draft = 0
        self.accepted = 0
        self.dist = [0] * (k + 1)
        self.iv: list[Any] = [0, 0, [0] * (k + 1)]

    def record(self, gen: plugin.Generation) -> None:
        k = self.engine.draft_len
        for n in gen.accepted:  # ATOM charges K draft tokens per step (scheduler.py SpecStats.update)
            self.draft += k
            self.accepted += n
            self.dist[n] += 1
            self.c_draft.inc(k)
            self.c_accepted.inc(n)
            self.c_steps.labels(str(n)).inc()
            iv = self.iv
            iv[0] += k
            iv[1] += n
            iv[2][n] += 1
            if sum(iv[2]) >= self.config.decode_log_interval:
                self._lines()

    def _lines(self) -> None:
        """ATOM's ``[MTP Stats Interval]`` and cumulative ``[MTP Stats         ]`` lines."""
        now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]

        def line(tag: str, draft: int, acc: int, dist: list[int]) -> str:
            steps = sum(dist) or 1
            pct = ", ".join(f"{j}: '{100.0 * c / steps:.2f}%'" for j, c in enumerate(dist))
            rate = 100.0 * acc / draft if draft else 0.0
            return LOG_MTP_STATS_FORMAT.format(time=now, tag=tag, avg=1 + acc / steps, accepted=acc,
                                                    drafted=draft, rate=rate, distribution=pct)

        iv = self.iv
        self.log(line("Interval", iv[0], iv[1], iv[2]))
        self.log(line("        ", self.draft, self.accepted, self.dist))
        self.iv = [0, 0, [0] * (self.engine.draft_len + 1)]

    def mtp_stats(self) -> dict[str, Any]:
        """ATOM ``GET /debug/mtp_stats`` (``LLMEngine.get_mtp_statistics``), cumulative."""
        steps = sum(self.dist)
        dist = {j: c for j, c in enumerate(self.dist) if c}
        return {
            STATS_ENABLED: True,
            STATS_DRAFT_TOKENS: self.draft,
            STATS_ACCEPTED: self.accepted,
            STATS_RATE: self.accepted / self.draft if self.draft else 0.0,
            STATS_AVG_TOKENS: 1 + self.accepted / steps if steps else 0.0,
            STATS_DISTRIBUTION: dist,
            STATS_DISTRIBUTION_PERCENT: {j: c / steps for j, c in dist.items()},
        }

    def startup_lines(self, port: int) -> list[str]:
        if not self.config.claim_synthetic:
            return []
        return [f"{plugin.now_log()} - atom - INFO - Forced speculative acceptance ON: mean acceptance "
                "length 2.50 (per-position rates ...)"]

    def get(self, path: str) -> Any | None:
        if path == MTP_STATS_PATH:
            return self.mtp_stats()
        if path == SERVER_INFO_PATH:
            name = self.model_name()
            return {"model_id": name, "served_model_name": name, "tp_size": 1, "dp_size": 1}
        return None
