"""A request pipeline that keeps a server busy: a fixed number in flight, optional Poisson arrivals.

``run_pipeline(items, send, schedule=...)`` starts ``items`` in order and keeps
exactly ``schedule.concurrency`` of them in flight: the moment one finishes the
next starts (no waves waiting for their slowest member). With
``schedule.request_rate`` the items also *arrive* as a Poisson process (gaps
drawn from an explicit, seeded generator), as ``vllm bench serve
--request-rate R --max-concurrency C`` sends them (vllm-project/vllm
``vllm/benchmarks/serve.py`` ``get_request``, commit 009e6d4a, burstiness 1): an
item starts at its arrival time or when a slot frees up, whichever is later.

``run_waves`` is the old schedule (a wave of ``concurrency`` items waits for its
slowest member before the next starts); it is kept for side-by-side
comparisons (experiments/pipeline-concurrency).

:class:`PipelineStats` keeps the running numbers of a live progress line:
requests done, output tokens/s, running AL, ETA.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from golden_al.errors import GoldenALError, UsageError

__all__ = ["PipelineStats", "Schedule", "arrival_offsets", "run_pipeline", "run_waves"]

T = TypeVar("T")


@dataclass(frozen=True)
class Schedule:
    """How requests are sent.

    Attributes:
        concurrency: requests in flight at all times (until the prompts run out).
        request_rate: mean arrivals per second (Poisson); None sends as fast as
            ``concurrency`` allows.
        seed: seed of the arrival generator (arrivals are reproducible).
        warmup: requests sent (and discarded) before the measurement starts.
    """

    concurrency: int = 1
    request_rate: float | None = None
    seed: int = 0
    warmup: int = 0

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise UsageError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.request_rate is not None and not (self.request_rate > 0 and np.isfinite(self.request_rate)):
            raise UsageError(f"--request-rate must be a positive number of requests per second, "
                             f"got {self.request_rate}", hint="leave it out to send as fast as --concurrency allows")
        if self.warmup < 0:
            raise UsageError(f"--warmup must be >= 0, got {self.warmup}")


def arrival_offsets(n: int, rate: float | None, rng: np.random.Generator) -> np.ndarray:
    """Seconds after the start at which each of ``n`` requests arrives (all 0 without a rate).

    The first request arrives at once; the gaps between arrivals are exponential
    with mean ``1/rate`` (a Poisson process).
    """
    if rate is None or n == 0:
        return np.zeros(n)
    gaps = rng.exponential(1.0 / rate, size=n)
    gaps[0] = 0.0
    return np.cumsum(gaps)


@dataclass
class PipelineStats:
    """Running totals for the progress line (monotonic clock)."""

    total: int
    done: int = 0
    output_tokens: int = 0
    accepted: float = 0.0
    steps: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def add(self, *, requests: int = 0, output_tokens: int = 0, accepted: float = 0.0, steps: float = 0.0) -> None:
        """Count finished requests and their tokens (and counts, when known per request or window)."""
        self.done += requests
        self.output_tokens += output_tokens
        self.accepted += accepted
        self.steps += steps

    def line(self, now: float | None = None) -> str:
        """``"12/80 requests, 345.6 output tok/s, AL 3.214, ETA 1m05s"``."""
        now = time.monotonic() if now is None else now
        elapsed = max(now - self.started, 1e-9)
        parts = [f"{self.done}/{self.total} requests", f"{self.output_tokens / elapsed:.1f} output tok/s"]
        parts.append(f"AL {1.0 + self.accepted / self.steps:.3f}" if self.steps > 0 else "AL -")
        if 0 < self.done < self.total:
            eta = elapsed / self.done * (self.total - self.done)
            parts.append(f"ETA {int(eta // 60)}m{int(eta % 60):02d}s")
        return ", ".join(parts)


async def run_pipeline(items: Sequence[T], send: Callable[[T], Awaitable[None]], *, schedule: Schedule,
                       rng: np.random.Generator | None = None) -> None:
    """Send every item through ``send`` with ``schedule.concurrency`` in flight at all times.

    Items start in order. The first failure (a :class:`GoldenALError` raised by
    ``send``) stops new starts; items already in flight finish (their results are
    kept), then the failure is raised, naming how many others failed too.
    """
    rng = rng if rng is not None else np.random.default_rng(schedule.seed)
    offsets = arrival_offsets(len(items), schedule.request_rate, rng)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(items)):
        queue.put_nowait(i)
    failures: list[GoldenALError] = []
    t0 = time.monotonic()

    async def worker() -> None:
        while not failures:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            wait = t0 + float(offsets[i]) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                if failures:
                    return
            try:
                await send(items[i])
            except GoldenALError as exc:
                failures.append(exc)
                return

    await asyncio.gather(*(worker() for _ in range(min(schedule.concurrency, len(items)))))
    _raise_failures(failures)


async def run_waves(items: Sequence[T], send: Callable[[T], Awaitable[None]], *, concurrency: int) -> None:
    """The old schedule: waves of ``concurrency`` items, each waiting for its slowest member."""
    failures: list[GoldenALError] = []

    async def guarded(item: T) -> None:
        try:
            await send(item)
        except GoldenALError as exc:
            failures.append(exc)

    for start in range(0, len(items), concurrency):
        await asyncio.gather(*(guarded(x) for x in items[start:start + concurrency]))
        if failures:
            break
    _raise_failures(failures)


def _raise_failures(failures: list[GoldenALError]) -> None:
    if not failures:
        return
    first = failures[0]
    if len(failures) > 1:  # every error class keeps its own constructor: extend the message in place
        others = "; ".join(f.message for f in failures[1:4])
        first.message = f"{first.message} (and {len(failures) - 1} more failed: {others})"
        first.args = (first.message,)
    raise first
