"""Measuring AL on real serving engines (SGLang, vLLM, ATOM) and serving the reference engine.

* :mod:`golden_al.servers.launch`: exact launch commands per engine and a managed
  server process (readiness wait, captured log, always stopped).
* :mod:`golden_al.httpclient`: async OpenAI-compatible chat client with
  bounded retries and exponential backoff.
* :mod:`golden_al.servers.synthetic`: refuse a "measurement" while synthetic
  (forced) acceptance is active.
* :mod:`golden_al.servers.probe`: what a server says about itself (version, args,
  draft length), checked against the requested draft length.
* :mod:`golden_al.plugin.sources`: bias-free AL sources (SGLang per-request
  histograms, vLLM counters or per-request metrics, ATOM ``/debug/mtp_stats``).
* :mod:`golden_al.servers.measure`: measure one cell resumably into a
  ``measurement.json`` record.
* :mod:`golden_al.servers.sweep`: every (thinking mode, draft length) cell,
  relaunching per draft length, resumable, with one-run derivation.
* :mod:`golden_al.servers.reference_server` and :mod:`golden_al.servers.served_engine`:
  ``serve-reference``, an HTTP server answering like SGLang, vLLM or ATOM (the
  reference engine or a deterministic fake behind it), with fault injection for tests.

Everything here is torch-free except the engine behind ``serve-reference``.
"""

from __future__ import annotations
