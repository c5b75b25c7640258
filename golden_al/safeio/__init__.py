"""Bounded, safe input and output: every file golden-al reads or writes goes through here.

One module per job: :mod:`.limits` (the bounds), :mod:`.read` (files), :mod:`.yaml_docs`,
:mod:`.json_docs`, :mod:`.write` (the atomic writer); this package re-exports their public names.

Reading (fail closed: anything that cannot be read in full, within bounds, raises
:class:`~golden_al.errors.UnreadableInputError`, exit 2, whose ``reason`` names the problem):

* :func:`open_regular` opens only regular files. It ``stat``s first, so a FIFO, a device
  (``/dev/zero``), a socket or a directory is refused **without being opened**; the open
  itself uses ``O_NONBLOCK | O_NOCTTY`` and is re-checked with ``fstat`` (same inode, still
  regular), so a file swapped for a FIFO in between cannot block either.
* :func:`read_bytes` / :func:`read_text` read at most ``max_bytes`` (over it is an error,
  never a truncation or a skip). :func:`decode_text` detects byte-order marks (UTF-8,
  UTF-16, UTF-32) and BOM-less UTF-16, decodes strictly, and refuses NUL characters.
* :func:`iter_lines` streams a log in constant memory: a byte cap on the whole file and
  on each line (longer lines are cut, their rest skipped, and counted).
* :func:`load_yaml_documents` (PyYAML, C parser when present) composes nodes from parser
  events in Python with an explicit stack, so nesting is limited to ``max_depth`` before
  anything recurses (libyaml's own composer overflows the C stack near 100,000 levels);
  :func:`load_yaml_roundtrip` (ruamel.yaml, for rewrites with comments) checks its node
  graph before constructing. Both refuse alias expansion beyond ``alias_budget`` nodes
  ("billion laughs"), recursive aliases and tags outside the safe schema.
  :func:`load_json` bounds depth likewise.

Writing: :func:`atomic_write_bytes` is the one atomic writer (see its docstring for modes,
symlinks, read-only targets and hard links). Locks of folders that several processes write
(the golden store, a measurement cell, a model cache) live in :mod:`golden_al.locks`.
"""

from __future__ import annotations

from golden_al.safeio.json_docs import duplicate_key_of, load_json, no_duplicate_keys, read_json
from golden_al.safeio.limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LOG_BYTES,
    DEFAULT_MAX_RECORD_BYTES,
    ROUNDTRIP_MAX_BYTES,
)
from golden_al.safeio.read import (
    LineStats,
    decode_text,
    iter_lines,
    open_regular,
    read_bytes,
    read_text,
    run_budget,
)
from golden_al.safeio.write import atomic_write_bytes, atomic_write_text
from golden_al.safeio.yaml_docs import (
    load_yaml_as_roundtrip,
    load_yaml_documents,
    load_yaml_roundtrip,
    repeated_keys,
    safe_load_yaml,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LOG_BYTES",
    "DEFAULT_MAX_RECORD_BYTES",
    "ROUNDTRIP_MAX_BYTES",
    "LineStats",
    "atomic_write_bytes",
    "atomic_write_text",
    "decode_text",
    "duplicate_key_of",
    "iter_lines",
    "load_json",
    "load_yaml_as_roundtrip",
    "load_yaml_documents",
    "load_yaml_roundtrip",
    "no_duplicate_keys",
    "open_regular",
    "read_bytes",
    "read_json",
    "read_text",
    "repeated_keys",
    "run_budget",
    "safe_load_yaml",
]
