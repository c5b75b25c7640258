"""The bounds every reader applies, in one place (bytes, depth, alias expansion)."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_LOG_BYTES", "DEFAULT_MAX_RECORD_BYTES", "JSON_MAX_DEPTH", "MAX_LINE_BYTES", "ROUNDTRIP_MAX_BYTES", "YAML_ALIAS_BUDGET", "YAML_MAX_DEPTH"]

#: Byte cap of a structured input (recipe, config, script, curve, record, JSON): 5x the
#: largest file of InferenceX (``perf-changelog.yaml``, 0.4 MiB), and small enough that
#: parsing a hostile file under it stays within seconds and a few hundred MB.
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
#: Byte cap of a file that is loaded with ruamel.yaml (golden curves):
#: ruamel's pure-Python parser is slow (a 240 KiB recipe took 78 s on a loaded 2-core machine),
#: and InferenceX's largest golden file is 2 KiB.
ROUNDTRIP_MAX_BYTES = 64 * 1024
#: Byte cap of a streamed input (server log, ``/metrics`` snapshot).
DEFAULT_MAX_LOG_BYTES = 256 * 1024 * 1024
#: Byte cap of a measurement record (``measurement.json``, ``requests.jsonl``).
DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024
#: Longest line :func:`iter_lines` keeps; the rest of a longer line is skipped.
MAX_LINE_BYTES = 1024 * 1024
#: Deepest YAML nesting accepted (InferenceX's deepest recipe nests 9 levels).
YAML_MAX_DEPTH = 100
#: Nodes that alias expansion may add to a YAML document (a "billion laughs" adds 10^9).
YAML_ALIAS_BUDGET = 100_000
#: Deepest JSON nesting accepted.
JSON_MAX_DEPTH = 100
