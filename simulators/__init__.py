"""The sampler base, batching and throughput/latency models: engine-free.

Depends on :mod:`distributions` only; never on :mod:`golden_al`. Modules:

* :mod:`simulators.base`: :class:`EngineSampler`, what every engine's sampler offers (each engine's own sampler
  lives in its folder, ``golden_al/engines/<name>/sampler.py``, citing the upstream code).
* :mod:`simulators.rates`: forced acceptance by per-position rates (vLLM's and ATOM's samplers derive from it).
* :mod:`simulators.registry`: the plugin registry class (:mod:`golden_al.plugin.registry` fills one with engines).
* :mod:`simulators.batch`: B requests over S steps (shared vs per-request draws),
  per-request completion in steps.
* :mod:`simulators.throughput`: cost model, tokens/s, speedup and the best draft length.
"""
