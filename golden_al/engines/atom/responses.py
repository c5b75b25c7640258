"""ATOM's ``/debug/mtp_stats`` JSON: server-wide cumulative counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from golden_al import plugin

from . import (
    FLAG_K,
    FLAG_METHOD,
    MTP_STATS_PATH,
    STATS_ACCEPTED,
    STATS_AVG_TOKENS,
    STATS_DISTRIBUTION,
    STATS_DRAFT_TOKENS,
    STATS_ENABLED,
    counts_from_mtp_stats,
)

__all__ = ["parse_atom_mtp_stats"]


def parse_atom_mtp_stats(obj: Mapping[str, Any], *, k: int | None = None,
                         source: str | None = None) -> plugin.RequestSpecCounts:
    """Server-wide cumulative counts from ATOM's ``/debug/mtp_stats`` JSON.

    Raises:
        MetricMissingError: ``enabled`` is false (MTP off) or a total is absent.
        InputFileError: fields of the wrong type or that contradict each other.
    """
    if not isinstance(obj, Mapping):
        raise plugin.InputFileError(f"ATOM /debug/mtp_stats must be an object, got {type(obj).__name__}", path=source)
    if obj.get(STATS_ENABLED) is False:
        raise plugin.MetricMissingError(f"{plugin.where(source)}ATOM reports MTP statistics disabled (enabled: false)",
                                        hint=f"start ATOM with {FLAG_METHOD} and {FLAG_K}")
    for key in (STATS_DRAFT_TOKENS, STATS_ACCEPTED, STATS_DISTRIBUTION):
        if obj.get(key) is None:
            raise plugin.MetricMissingError(f"{plugin.where(source)}ATOM {MTP_STATS_PATH} has no {key}",
                                            hint=f"pass the body of GET {MTP_STATS_PATH}")
    counts = plugin.build_counts(lambda: counts_from_mtp_stats(obj, k=k), "ATOM /debug/mtp_stats", source)
    reported = plugin.optional_number(obj, STATS_AVG_TOKENS, source)
    plugin.check_acceptance_counts(counts, what="ATOM /debug/mtp_stats", path=source, reported_al=reported)
    return plugin.RequestSpecCounts("atom", counts, reported, None,
                                    source)
