"""ATOM's ``/debug/mtp_stats`` JSON: server-wide cumulative counts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from golden_al.engines import atom
from golden_al.errors import InputFileError, MetricMissingError
from golden_al.formats.responses import (
    RequestSpecCounts,
    build_counts,
    optional_number,
    where,
)
from golden_al.formats.validate import check_acceptance_counts

__all__ = ["parse_atom_mtp_stats", "read_atom_mtp_stats_file"]


def parse_atom_mtp_stats(obj: Mapping[str, Any], *, k: int | None = None,
                         source: str | None = None) -> RequestSpecCounts:
    """Server-wide cumulative counts from ATOM's ``/debug/mtp_stats`` JSON.

    Raises:
        MetricMissingError: ``enabled`` is false (MTP off) or a total is absent.
        InputFileError: fields of the wrong type or that contradict each other.
    """
    if not isinstance(obj, Mapping):
        raise InputFileError(f"ATOM /debug/mtp_stats must be an object, got {type(obj).__name__}", path=source)
    if obj.get(atom.STATS_ENABLED) is False:
        raise MetricMissingError(f"{where(source)}ATOM reports MTP statistics disabled (enabled: false)",
                                 hint=f"start ATOM with {atom.FLAG_METHOD} and {atom.FLAG_K}")
    for key in (atom.STATS_DRAFT_TOKENS, atom.STATS_ACCEPTED, atom.STATS_DISTRIBUTION):
        if obj.get(key) is None:
            raise MetricMissingError(f"{where(source)}ATOM {atom.MTP_STATS_PATH} has no {key}",
                                     hint=f"pass the body of GET {atom.MTP_STATS_PATH}")
    counts = build_counts(lambda: atom.counts_from_mtp_stats(obj, k=k), "ATOM /debug/mtp_stats", source)
    reported = optional_number(obj, atom.STATS_AVG_TOKENS, source)
    check_acceptance_counts(counts, what="ATOM /debug/mtp_stats", path=source, reported_al=reported)
    return RequestSpecCounts("atom", counts, reported, None,
                             source)


def read_atom_mtp_stats_file(path: str | Path, *, k: int | None = None) -> RequestSpecCounts:
    """Read a saved ``/debug/mtp_stats`` body.

    Raises:
        InputFileError: unreadable or not JSON.
    """
    from golden_al import safeio

    p = Path(path)
    obj = safeio.read_json(p)  # regular file, byte cap, depth limit
    return parse_atom_mtp_stats(obj, k=k, source=str(p))
