"""A server whose endpoint is drained on each read (TensorRT-LLM's ``/metrics`` rows and ``/perf_metrics`` entries),
and one unit's counts from a counter source over two such reads."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any


class DrainedClient:
    """Answers each ``GET path`` with the next drained list (then empty lists); ``others``: the drains of other
    paths (TensorRT-LLM's other endpoint, read as a witness; empty lists when not given)."""

    base_url = "http://trtllm.test"

    def __init__(self, path: str, drains: Sequence[Any], others: dict[str, Sequence[Any]] | None = None) -> None:
        self.drains = {path: list(drains), **{p: list(d) for p, d in (others or {}).items()}}

    async def get_json(self, path: str, *, label: str, optional: bool = False) -> Any:
        assert optional or path in self.drains
        left = self.drains.get(path)
        return left.pop(0) if left else []


def unit_delta(source: Any, path: str, drains: Sequence[Any], k: int,
               others: dict[str, Sequence[Any]] | None = None) -> Any:
    """``(after snapshot, counts)`` of ``source`` over two reads of ``path`` (continuity checked between them)."""
    client = DrainedClient(path, drains, others)

    async def run() -> Any:
        before = await source.snapshot(client)
        after = await source.snapshot(client)
        source.check_continuity(before, after, "unit")
        return after, source.delta_counts(before, after, k, "unit")

    return asyncio.run(run())
