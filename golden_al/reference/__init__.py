"""The offline reference engine: chain speculative decoding in transformers + torch.

torch and transformers are imported only inside this package (the ``[engine]``
extra); nothing on the import path of the torch-free commands imports it.

Public API:

* :class:`ReferenceEngine` (``generate``, ``iter_generate``, ``replay``,
  ``iter_replay``, ``target_generate``) and :func:`make_generator`;
* :class:`SamplingParams`; results :class:`.live.RequestOutput` (live),
  :class:`.replay.ReplayOutput` (replay), :class:`.replay.TargetOutput`;
* the counting rules of :mod:`.accounting` (:class:`.accounting.StepCounts`,
  :func:`greedy_accept_counts`, :func:`.accounting.expected_step_counts`);
* :func:`assisted_generate` (transformers' own assisted generation, for comparison).
"""

from __future__ import annotations

from golden_al.reference.accounting import counts_from_accept_counts, greedy_accept_counts
from golden_al.reference.engine import ReferenceEngine, make_generator
from golden_al.reference.sampling import SamplingParams

__all__ = [
    "ReferenceEngine",
    "SamplingParams",
    "counts_from_accept_counts",
    "greedy_accept_counts",
    "make_generator",
    "quiet_transformers",
]


def quiet_transformers() -> None:
    """Silence transformers' own progress bars and info logs (the CLI shows its own progress)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
