"""``check``'s per-file results kept between runs, keyed on content: a re-run reads again only what changed.

A file's result (its findings before the adoption layer, the knob occurrences it counted, its documentation-text
names, its diagnostics) is a function of its text, path and kind, of the run (the checked roots, the byte cap,
the working directory, the curve store's files) and of the code that reads it (golden-al, the engine plugins, the
YAML and tree-sitter libraries, Python). An entry is found by the SHA-256 of all of these, so it cannot go stale:
any change gives another key. A recipe's key adds the master-config entries that run it and those files' digests
(they judge its pins). A result whose verdicts read any other file (a master config's pin reads the recipe it
resolves on disk: its findings name it, :attr:`Finding.inputs`), and an unreadable file's, are never kept. The
cache is one JSON file, read bounded; an unreadable or foreign one, or a foreign entry, is ignored (computed
again), never trusted in part.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from golden_al.checks.findings import Finding
from golden_al.safeio.inputs import Input

__all__ = ["FORMAT", "ResultCache"]

#: The cache file's format; part of every key.
FORMAT = "golden-al check cache 1"
_LIBRARIES = ("PyYAML", "tree-sitter", "tree-sitter-bash", "pydantic")


def _code_digest() -> str:
    """SHA-256 of every file of golden-al's packages and of each engine plugin's package, and of the versions of
    Python and of the libraries that parse what check reads."""
    import importlib.metadata
    import importlib.util

    from golden_al.plugin.registry import ENGINES

    entries = ENGINES.entries.values()  # "module:attribute", or a profile registered in-process (its repr)
    tops = {"golden_al", "simulators", "distributions", *(e.split(":")[0].split(".")[0] for e in entries
                                                          if isinstance(e, str))}
    h = hashlib.sha256(f"{FORMAT}\0{sys.version}\0{[e for e in entries if not isinstance(e, str)]!r}".encode())
    for lib in _LIBRARIES:
        h.update(f"{lib}={importlib.metadata.version(lib)}\0".encode())
    for top in sorted(tops):
        spec = importlib.util.find_spec(top)
        for base in (spec.submodule_search_locations or []) if spec else []:
            for folder, dirs, names in os.walk(base):  # top-down, folders in name order: one order everywhere
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(n for n in names if not n.endswith(".pyc")):
                    path = os.path.join(folder, name)
                    with open(path, "rb") as fh:
                        h.update(f"{os.path.relpath(path, base)}\0".encode() + hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


class ResultCache:
    """The per-file results of one ``check`` run: :meth:`get` the last run's, :meth:`put` this run's, :meth:`save`."""

    def __init__(self, path: Path, *, run: Any) -> None:
        """``run``: everything besides code and file that results depend on (JSON-serialisable)."""
        self.path = path
        self.run_key = hashlib.sha256(json.dumps([_code_digest(), run], sort_keys=True).encode()).hexdigest()
        self.old: dict[str, Any] = {}
        self.new: dict[str, Any] = {}
        from golden_al import safeio
        from golden_al.errors import InputFileError

        try:
            doc = safeio.read_json(path, max_bytes=64 << 20)
        except InputFileError:
            doc = None  # none yet, or not ours: every result is computed
        if isinstance(doc, dict) and doc.get("format") == FORMAT and isinstance(doc.get("entries"), dict):
            self.old = doc["entries"]

    def key(self, shown: str, kind: str, digest: str, context: str = "") -> str:
        """A file's key from its text's ``digest``; ``context``: what else its result depends on (the master-config
        entries that run it)."""
        return hashlib.sha256(f"{self.run_key}\0{shown}\0{kind}\0{digest}\0{context}".encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The kept result (``findings`` as :class:`Finding`), or None."""
        entry = self.old.get(key)
        try:
            found = dict(entry, findings=[Finding(**dict(f, inputs=tuple(Input(**i) for i in f["inputs"])))
                                          for f in entry["findings"]]) if isinstance(entry, dict) else None
        except (TypeError, KeyError, AttributeError):
            found = None  # a foreign entry: computed again
        if found is not None:
            self.new[key] = entry
        return found

    def put(self, key: str, findings: list[Finding], **counts: Any) -> None:
        self.new[key] = {"findings": [dataclasses.asdict(f) for f in findings], **counts}

    def save(self) -> None:
        """Writes this run's entries (those it used or made: the file never outgrows one tree), atomically."""
        from golden_al.safeio.write import atomic_write_text

        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps({"format": FORMAT, "entries": self.new}, separators=(",", ":")))
