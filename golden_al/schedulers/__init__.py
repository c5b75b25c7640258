"""Where a sweep's cells run.

* ``local`` (``sweep --scheduler local``, the default): the cells run here, one after
  another, with one server launched per draft length (:mod:`golden_al.measure.sweep`).
* ``slurm``: every cell is one task of one job array (:mod:`golden_al.schedulers.array_sweep`
  for the plan, its files and the cell states; :mod:`golden_al.schedulers.slurm` for every
  ``sbatch``/``squeue``/``scontrol``/``scancel`` call and the parsing of their output).
"""

SCHEDULERS = ("local", "slurm")

__all__ = ["SCHEDULERS"]
