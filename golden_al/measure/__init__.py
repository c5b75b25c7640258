"""Running a measurement, and its records: one home for the reference engine and for servers.

* records: :mod:`~golden_al.measure.schema` (the JSON contract), :mod:`~golden_al.measure.totals` (counts,
  clusters, the interval), :mod:`~golden_al.measure.records` (the one writer and reader);
* the reference engine: :mod:`~golden_al.measure.reference` (settings, models and prompts in, records out;
  torch imported inside its functions);
* servers: :mod:`~golden_al.measure.cell` (a cell on disk: plan, fingerprint, lock, resume),
  :mod:`~golden_al.measure.cell_rows` (answers to checked rows and records), :mod:`~golden_al.measure.server`
  (running a cell), :mod:`~golden_al.measure.sweep` (every thinking mode and draft length, launching per k);
* both: :mod:`~golden_al.measure.precision` (measuring to a precision), :mod:`~golden_al.measure.derive`
  (smaller k from a larger one), :mod:`~golden_al.measure.imported` (records from engines' outputs).
"""
