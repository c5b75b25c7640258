"""serve-reference's settings and its fault plan (what a test asks the server to get wrong)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from golden_al.errors import UsageError

__all__ = ["FAULT_KINDS", "Fault", "FaultPlan", "ServeConfig", "parse_fault"]

FAULT_KINDS = ("500", "502", "503", "sleep", "reset", "nospec", "die", "redirect", "claim-all", "tokens-1",
               "list", "endless", "trickle", "fewer-drafts", "claim-all-no-usage", "tokens-text", "no-proposed",
               "gzip-bomb", "duplicate-usage", "model-swap", "no-model", "upgrade",
               "inflate-usage")
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


def parse_fault(text: str) -> Fault:
    """``"500@3"``, ``"sleep@2-4"``, ``"die@5"``, ``"503@1+"`` -> :class:`Fault`."""
    m = _FAULT_RE.match(text.strip())
    if not m or m.group("kind") not in FAULT_KINDS:
        raise UsageError(f"bad --fault {text!r}", hint="KIND@N, KIND@N-M or KIND@N+ with KIND one of " + ", ".join(FAULT_KINDS))
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
    accept_threshold_single: float = 1.0
    """SGLang flavor: the ``speculative_accept_threshold_single`` reported in ``/server_info`` (below 1: lossy)."""
    server_settings: Mapping[str, Any] = field(default_factory=dict)
    """Settings the stand-in reports it runs with beyond its own (``serve-reference --server-setting``): SGLang
    flavor: ``/server_info`` fields; vLLM flavor: speculative-config keys of its ``non-default args`` line."""
    iter_stats_max_iterations: int = 1000
    """TensorRT-LLM flavor: iteration rows ``/metrics`` keeps between two reads (older ones are dropped); 1000 is
    ``iter_stats_max_iterations``' default (``tensorrt_llm/llmapi/llm_args.py``)."""
    perf_metrics_max_requests: int = 0
    """TensorRT-LLM flavor: finished requests ``/perf_metrics`` keeps between two reads (0: ``return_perf_metrics``
    off, an empty list), ``perf_metrics_max_requests`` in ``tensorrt_llm/llmapi/llm_args.py``."""
    io_timeout_s: float = 30.0
    """Seconds a connection may stay silent (request line, headers, body, keep-alive idle)."""
    max_body_bytes: int = 4 * 1024 * 1024
    """Largest request body read (413 above it)."""
    max_workers: int = 64
    """Connections handled at once (503 for one more)."""
