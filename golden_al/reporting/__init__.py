"""Reports: ``report.md`` and PNG plots (each beside its JSON data) for records and curves.

* :func:`load_sources` (RECORD_OR_CURVE arguments -> :class:`.data.Series` + inputs);
* :func:`write_report` (the plots, their JSON and ``report.md``);
* :mod:`golden_al.reporting.data` computes every plot's numbers without matplotlib;
  :mod:`golden_al.reporting.plots` draws them (matplotlib imported lazily).
"""

from __future__ import annotations

from golden_al.reporting.report import load_sources, write_report

__all__ = [
    "load_sources",
    "write_report",
]
