"""Engines' synthetic-acceptance samplers and throughput/latency models.

Depends on :mod:`distributions` only; never on :mod:`golden_al`. Modules:

* :mod:`simulators.base`: :class:`EngineSampler`, the ``(engine, method)`` sampler registry.
* :mod:`simulators.registry`: the registry class samplers and :mod:`golden_al`'s engines share.
* :mod:`simulators.sglang`, :mod:`simulators.vllm`, :mod:`simulators.trtllm`,
  :mod:`simulators.atom`: one module per engine, each citing the upstream code.
* :mod:`simulators.batch`: B requests over S steps (shared vs per-request draws),
  per-request completion in steps.
* :mod:`simulators.throughput`: cost model, tokens/s, speedup and the best draft length.
* :mod:`simulators.requests`: synthetic request populations with known AL (Beta mixtures,
  output lengths), for calibrating intervals against truth.
"""

from __future__ import annotations

from simulators.base import (
    EngineSampler,
    ForcingDisabledError,
    SamplerError,
    UnknownSamplerError,
    available,
    get_sampler,
)

__all__ = [
    "EngineSampler",
    "ForcingDisabledError",
    "SamplerError",
    "UnknownSamplerError",
    "available",
    "get_sampler",
]
