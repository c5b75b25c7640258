"""Measurement runners: turn an engine's per-request results into records.

* :mod:`golden_al.measure.records`: engine-agnostic (``requests.jsonl`` with resume,
  ``measurement.json`` from per-request counts); torch-free.
* :mod:`golden_al.measure.reference`: the offline reference engine (imports torch
  lazily, inside its functions).
"""
