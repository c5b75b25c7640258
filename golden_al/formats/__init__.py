"""Engine output formats: Prometheus snapshots, server log lines, per-request responses.

Torch-free readers of what SGLang, vLLM and ATOM report about acceptance. Each
module cites the upstream file and version of the format it parses:

* :mod:`golden_al.formats.prometheus`: ``/metrics`` snapshots (samples, sums, server lifetimes);
* :mod:`golden_al.formats.counters`: spec-decode counters per engine (one reader each, named by
  the engine's profile), before/after deltas (:class:`CounterResetError` on a decrease,
  :class:`MetricMissingError` for an absent metric, zero verify steps an explicit
  :class:`NoVerifyStepsError`);
* :mod:`golden_al.formats.logs`: server log lines that report acceptance, read by each engine's parser
  (``golden_al/engines/<name>/logs.py``) as typed records with their line numbers;
* :mod:`golden_al.formats.responses`: SGLang ``meta_info`` /
  ``sglext.spec_tokens_details``, vLLM ``metrics.speculative_decoding``, ATOM
  ``/debug/mtp_stats``.
"""

from __future__ import annotations

from golden_al.formats.counters import counters_delta, detect_engine, spec_counters
from golden_al.formats.logs import parse_log_line, read_log_file, scan_log_text
from golden_al.formats.prometheus import parse_metrics_text, read_metrics_file

__all__ = [
    "counters_delta",
    "detect_engine",
    "parse_log_line",
    "parse_metrics_text",
    "read_log_file",
    "read_metrics_file",
    "scan_log_text",
    "spec_counters",
]
