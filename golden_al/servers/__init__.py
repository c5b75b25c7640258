"""Talking to serving engines (SGLang, vLLM, ATOM, TensorRT-LLM, llama.cpp) and serving the reference engine.

* :mod:`golden_al.servers.launch`: exact launch commands per engine and a managed server process (readiness
  wait, captured log, always stopped);
* :mod:`golden_al.servers.probe`: what a server says about itself (version, args, draft length);
  :mod:`golden_al.servers.synthetic`: refuse a "measurement" while synthetic (forced) acceptance is active;
* :mod:`golden_al.servers.pipeline`, :mod:`golden_al.servers.replicas`, :mod:`golden_al.servers.crosscheck`,
  :mod:`golden_al.servers.retokenize`: how requests are sent, data-parallel replicas, and the checks of answers;
* :mod:`golden_al.servers.reference_server` and :mod:`golden_al.servers.served_engine`: ``serve-reference``, an
  HTTP server answering like an engine (the reference engine or a deterministic fake), with fault injection.

Measuring against a server is :mod:`golden_al.measure` (one home for every measurement). Everything here is
torch-free except the engine behind ``serve-reference``.
"""

from __future__ import annotations
