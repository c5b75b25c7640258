"""Measurement records from results users already hold (``golden-al import``).

Formats (each confirmed in the upstream source named):

* ``vllm-bench``: ``vllm bench serve --save-result [--save-detailed]`` JSON
  (vllm-project/vllm ``vllm/benchmarks/serve.py``, commit 009e6d4a: ``main``
  writes ``model_id``, ``num_prompts``, ``max_concurrency``, ``completed``,
  ``total_output_tokens``, ``output_lens`` with ``--save-detailed``, and, when the
  server exposes spec-decode counters, ``spec_decode_num_drafts``,
  ``spec_decode_draft_tokens``, ``spec_decode_accepted_tokens`` and
  ``spec_decode_per_position_acceptance_rates``: deltas of ``/metrics`` over the
  run, rates = accepted at the position / drafts). Alone that is **one aggregate
  window**, which carries no interval; with two or more ``/metrics`` snapshots
  taken during the run (Prometheus text files, in time order) each pair of
  consecutive snapshots is a window, and the windows are the clusters.
* ``vllm-log``: a vLLM server log; every ``SpecDecoding metrics: ...`` line is one
  ``--log-stats`` interval (``vllm/v1/spec_decode/metrics.py``
  ``SpecDecodingLogging.log``, 0.33.0) and one cluster. Aggregate only: no request
  is attributed, and the last partial interval is never logged.
* ``inferencex-speedbench``: the results directory of InferenceX's SPEED-Bench
  collector (SemiAnalysisAI/InferenceX
  ``benchmarks/single_node/speedbench/*_fp4_b300_vllm.sh``, commit 843c6254f): per
  cell ``speedbench_{on,off}_mtp{K}`` (the vLLM bench JSON above) and
  ``server_{on,off}_mtp{K}.log``, and ``speedbench-reference-al.yaml`` whose header
  comments give the category, output length, sampling and chat-template kwargs per
  thinking mode. The server log's intervals are the clusters when it has them.

* ``sglang-bench``: ``python -m sglang.bench_serving --output-file F.jsonl
  [--output-details]`` (sgl-project/sglang ``python/sglang/benchmark/serving.py``,
  commit 00f9ec47): one JSON object per run, whose only spec-decode figure is
  ``accept_length`` (``/server_info`` ``avg_spec_accept_length`` after the run), with
  the server's arguments in ``server_info``. bench_serving saves no per-request
  ``meta_info`` (not even with ``--output-details``), so a run alone is **one aggregate
  window** without an interval, labelled so; its verify steps are estimated from the
  output tokens. Saved SGLang responses (JSON lines of ``/generate`` or OpenAI
  responses carrying ``meta_info`` / ``sglext.spec_tokens_details``, e.g. from a
  harness that kept them) given with the run, or alone, make one cluster per request.
* ``sglang-log``: an SGLang server log; each ``Decode batch ... accept len: X`` line
  (``python/sglang/srt/managers/scheduler_components/metrics_reporter.py``, 0.5.23) is
  one window of ``--decode-log-interval`` batches and one cluster; its start-up
  ``server_args=ServerArgs(...)`` line (``python/sglang/srt/entrypoints/engine.py``)
  gives k, the model and the interval. Aggregate only: steps are estimated as
  interval x ``#running-req`` and ``accept len`` is printed to 2 decimals.

* ``trtllm-iteration-log``: TensorRT-LLM iteration rows (``trtllm-bench --iteration_log``,
  JSON or Python-literal, or a saved ``trtllm-serve`` ``/metrics`` list; NVIDIA/TensorRT-LLM
  ``cpp/include/tensorrt_llm/executor/types.h`` ``SpecDecodingStats``, 00b6d5a25c30), read by
  :mod:`golden_al.engines.trtllm.iteration_stats`; k from ``--draft-len``; clusters of 10
  consecutive iterations (:mod:`golden_al.engines.trtllm.imported`).

Every record says ``mode: imported`` and names what it was imported from
(``provenance.imported_from`` with each file's sha256); counts that rest on
aggregate counters say so in ``warnings``. Readers are bounded in bytes, per file and per import
(:data:`MAX_RUN_BYTES`); the CLI bounds the time (``--max-seconds``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from golden_al import safeio
from golden_al.errors import InputFileError, UsageError
from golden_al.measure.imported.common import Imported, imported_record
from golden_al.measure.records import write_cell
from golden_al.measure.schema import MEASUREMENT_FILE
from golden_al.plugin.imported import MAX_BYTES, ImportOptions

__all__ = ["MAX_RUN_BYTES", "Imported", "formats", "import_files", "write_imported"]

#: Bytes all the files of one import may hold together: one file's cap (:data:`MAX_BYTES`).
MAX_RUN_BYTES = MAX_BYTES


def formats() -> dict[str, Any]:
    """Every import format, from the engines' profiles (:attr:`~golden_al.plugin.profile.RunLogSupport.importers`):
    format name -> its reader (a hook, ``lazy("module:function")``)."""
    from golden_al.plugin.registry import engine_names, get_profile

    out: dict[str, Any] = {}
    for name in engine_names():
        out.update(get_profile(name).run_logs.importers)
    return out


def import_files(fmt: str, paths: Sequence[str | Path], opts: ImportOptions) -> list[Imported]:
    """Records from ``paths`` in format ``fmt`` (see the module docstring). The files of one import share one
    byte budget (:data:`MAX_RUN_BYTES`, :func:`golden_al.safeio.run_budget`), checked before any is parsed.

    Raises:
        UnreadableInputError: ``too-large``: the files together hold more than the budget.
    """
    ps = [Path(p) for p in paths]
    for p in ps:
        if not p.exists():
            raise InputFileError("no such file or directory", path=p)
    safeio.run_budget(ps, MAX_RUN_BYTES, what="imported files",
                      hint="import the files of one run at a time (each run is its own import)")
    from golden_al.plugin.registry import load_hook

    table = formats()
    if fmt in table:
        return [imported_record(run) for run in load_hook(table[fmt])(ps, opts)]
    raise UsageError(f"unknown import format {fmt!r}", hint="one of " + ", ".join(table))


def write_imported(items: Sequence[Imported], out: str | Path) -> list[Path]:
    """Write each record (and its clusters) into ``out`` (one cell) or ``out/thinking_{mode}/k{K}``."""
    base = Path(out)
    dirs = []
    seen: dict[Path, int] = {}
    for item in items:
        r = item.record
        d = base if len(items) == 1 else base / f"thinking_{r.thinking}" / f"k{r.draft_len}"
        seen[d] = seen.get(d, 0) + 1
        if seen[d] > 1:  # several runs of one cell (bench_serving appends one line per run)
            d = d.with_name(f"{d.name}-run{seen[d]}")
        if (d / MEASUREMENT_FILE).exists():
            raise UsageError(f"{d} already holds a record", hint="import into an empty --out")
        write_cell(d, r, item.rows)
        dirs.append(d)
    return dirs
