"""The measurement record (``measurement.json``) and its per-request JSONL.

One record describes one measured (or derived) cell: target, draft, draft
length ``k``, thinking mode, sampling, dataset, the AL with its 95% interval over
independent clusters (``uncertainty`` says which method and how many), and the raw
counts it rests on. Every engine (the offline reference
engine, SGLang, vLLM, ATOM) writes the same record, so ``fit``, ``report`` and
``commit`` never care where a number came from.

Per-request results are appended to a JSONL file beside the record as each
request finishes (flushed and fsynced), so a crash loses nothing and a resumed
run can skip what is done. :func:`read_request_results` tolerates a torn last
line from a crash.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    computed_field,
    field_validator,
    model_validator,
)

from distributions import units
from distributions.counts import tidy_count
from distributions.errors import DistributionError
from distributions.uncertainty import ALInterval, al_interval_result
from golden_al.errors import InputFileError, NoVerifyStepsError, SchemaError
from golden_al.provenance import atomic_write_text

__all__ = [
    "MEASUREMENT_FILE",
    "REQUESTS_FILE",
    "SCHEMA_VERSION",
    "BlockDraftInfo",
    "CellCounts",
    "CellTotals",
    "DatasetInfo",
    "MeasurementRecord",
    "ModelInfo",
    "RequestResult",
    "SamplingInfo",
    "ServerInfo",
    "ServerShare",
    "TimedUnit",
    "Timing",
    "TimingGroup",
    "Uncertainty",
    "append_request_result",
    "cell_totals",
    "clusters_from_requests",
    "counts_from_requests",
    "interval_from_requests",
    "line_indices",
    "load_record",
    "prompt_clusters",
    "read_request_results",
    "request_indices",
    "request_timing",
    "timing_block",
    "write_record",
]

SCHEMA_VERSION = 1
MEASUREMENT_FILE = "measurement.json"
REQUESTS_FILE = "requests.jsonl"
BY_DRAFT_LEN_DIR = "by_draft_len"
"""Sub-directory of a cell holding one record per other draft length the server drafted at (a server that
reports per-step draft lengths); left out when a directory is searched for records."""

Count = Annotated[int | float, Field(ge=0)]
"""A count: an int when observed, a float when it is an expectation (replay estimates)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class ModelInfo(_Strict):
    """A target or draft model as used."""

    name: str = Field(description="model key, hub id, served name or path as given")
    path: str | None = Field(default=None, description="local directory or file it was loaded from")
    source: str | None = Field(default=None, description="gguf | safetensors | hub | server | ngram")
    dtype: str | None = Field(default=None, description="dtype as loaded, e.g. float32, bfloat16")
    shipped_dtype: str | None = Field(default=None, description="dtype the checkpoint ships in")
    sha256: str | None = Field(default=None, description="hash of the weights file, when known")
    num_parameters: int | None = None


class BlockDraftInfo(_Strict):
    """A block draft (DFlash, DFlash2): what its checkpoint says and the block it ran with."""

    algorithm: Literal["dflash", "dflash2"]
    layout: str = Field(description="checkpoint layout: z-lab | speculators")
    block_size: int = Field(ge=2, description="the draft's own block (the verified token + block_size - 1 drafts)")
    verify_block: int = Field(ge=2, description="the block this record ran: draft_len + 1")
    mask_token_id: int = Field(ge=0)
    target_layer_ids: list[int]
    num_draft_layers: int = Field(ge=1)


class SamplingInfo(_Strict):
    """Sampling settings of the measured requests."""

    temperature: float = Field(ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: int | None = None
    max_tokens: int = Field(ge=1)
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        """True when decoding is greedy (temperature 0)."""
        return self.temperature == 0.0


class DatasetInfo(_Strict):
    """The prompts: which set, which category, how many, and a hash of what was sent."""

    name: str
    category: str | None = None
    count: int = Field(ge=0)
    hash: str = Field(description="sha256 over the rendered prompts in order")
    source: str | None = Field(default=None, description="the --prompts spec or file path")
    chat_template_hash: str | None = None
    source_hash: str | None = Field(
        default=None, description="sha256 over every prompt of the set the selection is drawn from (shards of one "
        "set share it)")
    selection: list[int] | None = Field(
        default=None, description="indices (in that set) of the prompts this record holds; None: all of them")

    def prompt_set_key(self) -> str:
        """What must match for two records to hold prompts of one set: ``source_hash``, else ``hash``."""
        return self.source_hash or self.hash


class ServerInfo(_Strict):
    """How a serving engine was reached or launched."""

    url: str | None = None
    launched: bool = False
    command: list[str] | None = None
    env: dict[str, str] | None = Field(default=None, description="non-secret launch env vars that matter")
    server_args: dict[str, Any] | None = None
    log_file: str | None = None
    image: str | None = None
    curve_selectors: dict[str, str] | None = Field(
        default=None, description="the engine's curve selectors of the server's settings ({}: its defaults; "
        "absent: the server did not say): golden-al fit writes them into the curve's draft.selectors")


class TimingGroup(_Strict):
    """The units of one cell timed at one batch size (docs/researchers.md, section 1)."""

    batch: int = Field(ge=1, description="requests decoding together: a step's rows, or the client's concurrency")
    units: int = Field(ge=1, description="how many steps (or requests) were timed")
    steps: int = Field(ge=1, description="decode steps the units cover (a request's: its verify and plain steps)")
    tokens: int = Field(ge=0, description="tokens those steps emitted")
    wall_ms: float = Field(ge=0, description="the units' total wall time")
    step_ms: tuple[float, float, float] = Field(
        description="per-step wall time, quartiles q1, median, q3 (a request's: its decode time over its steps)")
    draft_ms: tuple[float, float, float] | None = Field(
        default=None, description="the draft phase of a step, quartiles (an engine that times it apart)")
    load1: tuple[float, float] | None = Field(
        description="least and most 1-minute load average seen (os.getloadavg); None: not recorded (an import)")


class Timing(_Strict):
    """What a measurement timed, grouped by batch size: the input of ``draft-lengths --measured``."""

    source: str = Field(description="reference-steps | llamacpp-response-decode-ms | vllm-bench-itl | ...")
    unit: Literal["step", "request"]
    cpus: int | None = Field(default=None, description="os.cpu_count() where the timings were read")
    groups: list[TimingGroup]


@dataclass(frozen=True)
class TimedUnit:
    """One timed step, or one request with the decode steps it took (summed into :class:`Timing`)."""

    batch: int
    steps: int
    tokens: int
    wall_ms: float
    load1: float | None
    draft_ms: float | None = None


def _quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    q1, q2, q3 = np.percentile(np.asarray(values, dtype=np.float64), [25, 50, 75])
    return round(float(q1), 3), round(float(q2), 3), round(float(q3), 3)


def timing_block(units: Sequence[TimedUnit], *, source: str, unit: Literal["step", "request"]) -> Timing | None:
    """The record's :class:`Timing` from its timed units (None when none covers a step)."""
    by_batch: dict[int, list[TimedUnit]] = {}
    for u in units:
        if u.steps > 0:
            by_batch.setdefault(u.batch, []).append(u)
    groups = [TimingGroup(
        batch=b, units=len(us), steps=sum(u.steps for u in us), tokens=sum(u.tokens for u in us),
        wall_ms=round(sum(u.wall_ms for u in us), 3), step_ms=_quartiles([u.wall_ms / u.steps for u in us]),
        draft_ms=_quartiles([u.draft_ms / u.steps for u in us]) if all(u.draft_ms is not None for u in us)  # type: ignore[operator]
        else None, load1=(min(loads), max(loads)) if (loads := [u.load1 for u in us if u.load1 is not None]) else None)
        for b, us in sorted(by_batch.items())]
    return Timing(source=source, unit=unit, cpus=os.cpu_count(), groups=groups) if groups else None


def request_timing(rows: Sequence[RequestResult], *, batch: int, source: str) -> Timing | None:
    """:func:`timing_block` of the rows that carry ``decode_ms`` (a row of a window: its requests' summed). Each
    request's first output token comes from the prefill, so its decode steps emit the rest: one step per token
    not accepted as a draft. None when no row carries ``decode_ms``."""
    units = []
    for r in rows:
        if r.decode_ms is not None:
            n = len(line_indices(r))
            units.append(TimedUnit(batch=batch, steps=int(r.num_output_tokens - n - float(r.num_accepted_drafts)),
                                   tokens=r.num_output_tokens - n, wall_ms=r.decode_ms, load1=r.load1))
    return timing_block(units, source=source, unit="request")


class ServerShare(_Strict):
    """One data-parallel replica's part of a cell measured on several ``--server`` URLs."""

    url: str
    num_requests: int = Field(ge=0)
    clusters: int = Field(ge=0, description="lines of requests.jsonl (requests, or counter batches)")
    num_verify_steps: Count
    num_accepted_drafts: Count
    histogram: list[Count]
    al: float | None = Field(default=None, description="this replica's AL (None without verify steps)")


def _check_unknown_histogram(known: bool, histogram: Sequence[Count], per_position: Sequence[Count]) -> None:
    if not known and (any(float(v) for v in histogram) or any(float(v) for v in per_position)):
        raise ValueError("histogram_known is false: histogram and per_position_accepted must be all zeros")


class RequestResult(_Strict):
    """One finished request, one JSON line in ``requests.jsonl``."""

    index: int = Field(ge=0, description="position of the prompt in the dataset")
    request_id: str
    draft_len: int = Field(ge=1)
    prompt_hash: str
    num_prompt_tokens: int | None = Field(default=None, ge=0)
    num_output_tokens: int = Field(ge=0)
    num_verify_steps: Count
    num_accepted_drafts: Count
    histogram: list[Count] = Field(description="k+1 counts: steps that accepted j drafts")
    per_position_accepted: list[Count] = Field(description="k counts: steps that accepted position j+1")
    accept_lengths: list[int] | None = Field(default=None, description="L per verify step, in order")
    histogram_known: bool = Field(
        default=True, description="False when the source gives only totals (an imported aggregate): histogram "
        "and per_position_accepted are then all zeros, not measured")
    draft_len_observed: int | None = Field(
        default=None, ge=0, description="the most drafts one verify step proposed, where the source shows it")
    finish_reason: str | None = None
    wall_s: float | None = None
    decode_ms: float | None = Field(
        default=None, ge=0, description="the engine's own time from the first output token to the last (llama.cpp "
        "timings.predicted_ms); its decode steps are num_output_tokens - 1 - num_accepted_drafts")
    load1: float | None = Field(default=None, ge=0, description="1-minute load average when the answer came")
    text: str | None = None
    turn: int | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> RequestResult:
        k = self.draft_len
        if len(self.histogram) != k + 1:
            raise ValueError(f"histogram has {len(self.histogram)} entries, expected k+1={k + 1}")
        if len(self.per_position_accepted) != k:
            raise ValueError(f"per_position_accepted has {len(self.per_position_accepted)} entries, expected k={k}")
        _check_unknown_histogram(self.histogram_known, self.histogram, self.per_position_accepted)
        from golden_al.errors import CounterSemanticsError
        from golden_al.formats.validate import check_counts

        try:  # the one counter-semantics validator: measure never records impossible counts
            check_counts(what="request", accepted=float(self.num_accepted_drafts),
                         drafts=float(self.num_verify_steps), k=k,
                         per_position=[float(v) for v in self.per_position_accepted] if self.histogram_known else None)
        except CounterSemanticsError as exc:
            raise ValueError(exc.problem) from None
        return self


class CellCounts(_Strict):
    """Aggregated counts for one cell."""

    num_requests: int = Field(ge=0)
    num_verify_steps: Count
    num_accepted_drafts: Count
    histogram: list[Count]
    per_position_accepted: list[Count]


class Uncertainty(_Strict):
    """What ``al_ci95`` rests on: ``method``, independent ``clusters``, ``confidence``.

    ``unit`` says what one cluster is (``request``, ``conversation``, ``counter window batch``,
    ``counter unit``); ``resamples`` and ``seed`` make the interval reproducible.
    """

    method: str
    clusters: int = Field(ge=0)
    confidence: float = Field(gt=0.0, lt=1.0)
    unit: str | None = None
    resamples: int | None = Field(default=None, ge=0)
    seed: int | None = None
    windows: int | None = Field(
        default=None, ge=0, description="aggregate counters at concurrency: the timed counter windows behind the "
        "clusters (batch means: each cluster is a batch of contiguous windows)")
    recomputed_from: str | None = Field(
        default=None, description="set when this interval was recomputed from requests.jsonl by the current method "
        "because the record held one from another method: that method ('unrecorded' when the record did not say)")

    @classmethod
    def of(cls, interval: ALInterval, unit: str | None) -> Uncertainty:
        """The block for ``interval`` (:func:`distributions.uncertainty.al_interval_result`)."""
        return cls(**interval.uncertainty(), unit=unit, resamples=interval.resamples, seed=interval.seed)


class MeasurementRecord(_Strict):
    """``measurement.json``: one measured or derived (model, thinking mode, k) cell."""

    schema_version: Literal[1] = 1
    kind: Literal["measurement"] = "measurement"
    engine: str = Field(description="reference | sglang | vllm | atom")
    engine_version: str | None = None
    mode: str = Field(description="live | replay | server")
    estimate: bool = Field(default=False, description="True when counts are expectations (sampled replay)")
    derived: bool = Field(default=False, description="True when derived from a measurement at a larger k")
    derived_from_draft_len: int | None = None
    derivation_exact: bool | None = Field(
        default=None, description="True only when the derivation is known to be exact (acceptance independent of the step start); real drafts: false, validate with measured points"
    )
    target: ModelInfo
    draft: ModelInfo
    draft_method: str = Field(description="draft-model | eagle | eagle3 | mtp | dflash | dspark | ngram | ...")
    block_draft: BlockDraftInfo | None = Field(
        default=None, description="block drafts (draft_method dflash): DFlash or DFlash2, block size, mask token, "
        "target layers")
    draft_len: int = Field(ge=1, le=64)
    draft_len_observed: int | None = Field(
        default=None, description="the k the source's own rows show (the most drafts a verify step proposed), equal "
        "to draft_len; None where the source does not show it")
    thinking: str = Field(description="on | off | a named level such as reasoning_effort_high")
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    sampling: SamplingInfo
    dataset: DatasetInfo
    al: float = Field(ge=1.0)
    al_ci95: tuple[float, float]
    uncertainty: Uncertainty | None = Field(
        default=None, description="what al_ci95 rests on (absent in records written before it existed)")
    al_source: str = Field(description="how AL was obtained, e.g. reference-steps, sglang-histogram, vllm-prometheus-delta")
    num_requests: int = Field(ge=0)
    num_verify_steps: Count
    num_accepted_drafts: Count
    per_position_accepted: list[Count]
    histogram: list[Count]
    histogram_known: bool = Field(
        default=True, description="False when the counts rest on totals only (an imported aggregate such as SGLang's "
        "accept length): histogram and per_position_accepted are then all zeros, not measured")
    per_request_file: str | None = Field(description="JSONL beside this record, relative path")
    server: ServerInfo | None = None
    per_server: list[ServerShare] | None = Field(
        default=None, description="sub-counts per data-parallel replica (several --server URLs); totals above")
    timing: Timing | None = Field(
        default=None, description="what the measurement timed (steps or requests, by batch size); None: untimed")
    warnings: list[str] = Field(default_factory=list)
    checks: dict[str, int] | None = Field(
        default=None, description="against a server: the guards that passed while this session measured, and how "
        "many times (answers, units or probes; golden_al.plugin.checks_ran names them); None for other modes")
    provenance: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _derived_fields_are_recomputed(cls, data: Any) -> Any:
        """``acceptance_rates`` is computed from the counts on every write; a file's copy is never trusted."""
        if isinstance(data, dict) and "acceptance_rates" in data:
            data = {k: v for k, v in data.items() if k != "acceptance_rates"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def acceptance_rates(self) -> dict[str, Any] | None:
        """Per-position acceptance in both conventions, by name, with 95 % intervals
        (:func:`distributions.uncertainty.rate_profile`): ``conditional_accept_rates`` (P(j | j-1))
        and ``marginal_accept_rates`` (P(j) = accepted at j / verify steps). None when the record
        holds totals only or no verify step."""
        from distributions.uncertainty import rate_profile

        steps = float(self.num_verify_steps)
        if not self.histogram_known or steps <= 0:
            return None
        try:
            return rate_profile([float(x) for x in self.per_position_accepted], steps,
                                al_ci95=self.al_ci95).as_dict()
        except ValueError:  # counts that are not a prefix (a hand-edited file): no rates rather than wrong ones
            return None

    @field_validator("thinking")
    @classmethod
    def _thinking(cls, v: str) -> str:
        from golden_al.prompts.thinking import normalize_mode

        if normalize_mode(v) != v:
            raise ValueError(f"thinking must be on, off or a level name such as reasoning_effort_high, got {v!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> MeasurementRecord:
        k = self.draft_len
        if self.al > k + 1 + 1e-9:
            raise ValueError(f"al {self.al} exceeds k+1={k + 1}")
        if len(self.histogram) != k + 1:
            raise ValueError(f"histogram has {len(self.histogram)} entries, expected k+1={k + 1}")
        if len(self.per_position_accepted) != k:
            raise ValueError(f"per_position_accepted has {len(self.per_position_accepted)} entries, expected k={k}")
        _check_unknown_histogram(self.histogram_known, self.histogram, self.per_position_accepted)
        if self.draft_len_observed not in (None, k):
            raise ValueError(f"draft_len_observed {self.draft_len_observed} is not draft_len {k}")
        lo, hi = self.al_ci95
        if not lo <= hi:
            raise ValueError(f"al_ci95 must be [lo, hi] with lo <= hi, got {self.al_ci95}")
        return self

    def distribution(self) -> Any:
        """The measured :class:`~distributions.AcceptanceDistribution` (from the histogram)."""
        from distributions import AcceptanceDistribution

        if not self.histogram_known:
            raise ValueError("this record holds totals only (histogram_known is false): it has no distribution")

        return AcceptanceDistribution.from_accepted_histogram(self.histogram, k=self.draft_len)


# ---------------------------------------------------------------------------- aggregation
def counts_from_requests(results: Sequence[RequestResult], draft_len: int) -> CellCounts:
    """Sum per-request counts for one draft length (requests of other k are ignored)."""
    k = units.check_draft_len(draft_len)
    hist = np.zeros(k + 1)
    pos = np.zeros(k)
    steps = 0.0
    acc = 0.0
    n = 0
    for r in results:
        if r.draft_len != k:
            continue
        n += 1
        hist += np.asarray(r.histogram, dtype=np.float64)
        pos += np.asarray(r.per_position_accepted, dtype=np.float64)
        steps += float(r.num_verify_steps)
        acc += float(r.num_accepted_drafts)
    return CellCounts(
        num_requests=n,
        num_verify_steps=tidy_count(steps),
        num_accepted_drafts=tidy_count(acc),
        histogram=[tidy_count(v) for v in hist],
        per_position_accepted=[tidy_count(v) for v in pos],
    )


def _cluster_unit(rows: Sequence[RequestResult]) -> str:
    if any(r.extra and "batch" in r.extra for r in rows):
        return "counter window batch"
    if any(r.extra and "unit" in r.extra for r in rows):
        return "counter unit"
    if any(r.turn is not None for r in rows):
        return "conversation"
    return "request"


def clusters_from_requests(results: Sequence[RequestResult], draft_len: int, *,
                           merge_same_prompt: bool = False) -> tuple[list[float], list[float], str]:
    """Per-cluster ``(accepted, steps)`` totals of one cell, and what one cluster is.

    Each line of ``requests.jsonl`` at ``draft_len`` is one cluster (a request, a counter
    unit or a batch of counter windows), except that the turns of one conversation (lines
    with ``turn`` set and the same ``index``) are summed into one, and, with
    ``merge_same_prompt`` (pooling several records), per-request lines of the same prompt
    are summed into one: a prompt measured twice is one independent unit, not two.
    """
    rows = sorted((r for r in results if r.draft_len == draft_len),
                  key=lambda q: (q.index, q.turn or 0, q.request_id))
    unit = _cluster_unit(rows)
    clusters: dict[tuple[Any, ...], list[float]] = {}
    for pos, r in enumerate(rows):
        if merge_same_prompt and unit in ("request", "conversation"):
            key: tuple[Any, ...] = (r.prompt_hash,)
        elif r.turn is not None:
            key = (r.index,)
        else:
            key = (r.index, pos)
        tot = clusters.setdefault(key, [0.0, 0.0])
        tot[0] += float(r.num_accepted_drafts)
        tot[1] += float(r.num_verify_steps)
    return [v[0] for v in clusters.values()], [v[1] for v in clusters.values()], unit


def prompt_clusters(results: Sequence[RequestResult], draft_len: int) -> dict[str, tuple[float, float]] | None:
    """Per-prompt ``(accepted, steps)`` totals at ``draft_len``, keyed by prompt (its hash, else its
    index), so that cells measured on the same prompts can be lined up cluster by cluster (the
    joint law of a curve); None when the lines are counter units or windows, which no prompt owns."""
    rows = [r for r in results if r.draft_len == draft_len]
    if not rows or _cluster_unit(rows) not in ("request", "conversation"):
        return None
    out: dict[str, tuple[float, float]] = {}
    for r in rows:
        key = f"sha256:{r.prompt_hash}" if r.prompt_hash else f"index:{r.index}"
        acc, steps = out.get(key, (0.0, 0.0))
        out[key] = (acc + float(r.num_accepted_drafts), steps + float(r.num_verify_steps))
    return out


def interval_from_requests(results: Sequence[RequestResult], draft_len: int, *, seed: int = 0,
                           merge_same_prompt: bool = False) -> tuple[ALInterval, str]:
    """The AL interval of one cell over its independent clusters (:func:`clusters_from_requests`).

    :func:`distributions.uncertainty.al_interval_result`: a function of the multiset of
    clusters and ``seed``, so the order lines finished in does not change it.

    Raises:
        DistributionError: no line has a verify step (callers check that first).
    """
    acc, steps, unit = clusters_from_requests(results, draft_len, merge_same_prompt=merge_same_prompt)
    return al_interval_result(acc, steps, seed=seed, draft_len=draft_len), unit


def line_indices(result: RequestResult) -> list[int]:
    """Prompt indices one line covers (a counter window or batch lists its prompts in ``extra.unit``)."""
    if result.extra and isinstance(result.extra.get("unit"), list):
        return [int(i) for i in result.extra["unit"]]
    return [result.index]


def request_indices(results: Sequence[RequestResult]) -> set[int]:
    """Every prompt index the lines cover (:func:`line_indices`)."""
    return {i for r in results for i in line_indices(r)}


@dataclass(frozen=True)
class CellTotals:
    """What every record of one cell rests on, built one way for every producer (the reference
    engine, servers, imports): the summed counts, the interval over independent clusters, the
    requests (prompts) behind them, and the notes every such record carries."""

    counts: CellCounts
    interval: ALInterval
    unit: str
    num_requests: int
    notes: tuple[str, ...]


def cell_totals(results: Sequence[RequestResult], draft_len: int, *, seed: int = 0,
                what: str = "") -> CellTotals:
    """:class:`CellTotals` of the lines at ``draft_len``.

    ``num_requests`` counts prompts (a counter window's line covers several); ``what`` names the
    cell in the error (e.g. ``" (thinking on)"``).

    Raises:
        NoVerifyStepsError: no line has a verify step, so AL is undefined.
    """
    rows = [r for r in results if r.draft_len == draft_len]
    counts = counts_from_requests(rows, draft_len)
    num_requests = len(request_indices(rows))
    if float(counts.num_verify_steps) <= 0:
        raise NoVerifyStepsError(
            f"the {num_requests} requests at k={draft_len}{what} produced zero verify steps: AL is undefined",
            hint="a request that ends on its first token makes no verify step (that token comes from the prefill), "
                 "and a draft that proposes nothing (n-gram without matches) makes none either: raise --max-tokens "
                 "or use other prompts")
    interval, unit = interval_from_requests(rows, draft_len, seed=seed)
    notes: list[str] = []
    zero = sum(1 for r in rows if float(r.num_verify_steps) == 0)
    if zero and unit in ("request", "conversation"):
        notes.append(f"{zero} request(s) had no verify step (they ended on the prefill token) and carry no weight")
    if interval.warning:
        notes.append(interval.warning)
    if unit.startswith("counter"):
        note = counter_width_note(counts, interval, unit, draft_len)
        if note:
            notes.append(note)
    return CellTotals(counts, interval, unit, num_requests, tuple(notes))


def counter_width_note(counts: CellCounts, interval: ALInterval, unit: str, draft_len: int) -> str | None:
    """How much wider a counter-only interval is than one treating every verify step as independent (the narrowest
    any per-request source could give; the steps' own histogram, else the widest law with this mean): a server that
    reports only counters leaves a few windows as the independent units (issue 39)."""
    from distributions.uncertainty import iid_ci_from_counts

    known = sum(float(v) for v in counts.histogram) > 0  # zeros: the source gave totals only
    try:
        iid = iid_ci_from_counts(float(counts.num_accepted_drafts), float(counts.num_verify_steps),
                                 histogram=list(counts.histogram) if known else None,
                                 k=draft_len)
    except DistributionError:
        return None
    base = iid.ci_high - iid.ci_low
    if base <= 0:
        return None
    ratio = (interval.high - interval.low) / base
    return (f"the interval rests on {interval.clusters} {unit}s, not on requests: it is {ratio:.1f}x as wide as one "
            f"that treated each of the {float(counts.num_verify_steps):.0f} verify steps as independent (the "
            "narrowest a per-request AL source could give); measure with the engine's per-request source where it "
            "has one (golden-al engines show ENGINE), or more windows")


# ---------------------------------------------------------------------------- file I/O
def write_record(record: MeasurementRecord, out_dir: str | Path, *, name: str = MEASUREMENT_FILE) -> Path:
    """Write ``record`` as indented JSON into ``out_dir/name`` atomically."""
    text = json.dumps(record.model_dump(mode="json"), indent=2) + "\n"
    return atomic_write_text(Path(out_dir) / name, text)


def load_record(path: str | Path) -> MeasurementRecord:
    """Load and validate a ``measurement.json`` (or a directory holding one)."""
    from golden_al import safeio

    p = Path(path)
    if p.is_dir():
        p = p / MEASUREMENT_FILE
    if not os.path.lexists(p):
        raise InputFileError("no such measurement record", path=p)
    data = safeio.read_json(p, max_bytes=safeio.DEFAULT_MAX_RECORD_BYTES)
    if not isinstance(data, dict) or data.get("kind", "measurement") != "measurement":
        raise SchemaError("not a measurement record (expected kind: measurement)", path=p)
    try:
        return MeasurementRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise SchemaError(f"{loc}: {first['msg']}", path=p,
                          hint=f"{len(exc.errors())} schema error(s); schema_version {SCHEMA_VERSION}") from None


def append_request_result(path: str | Path, result: RequestResult) -> None:
    """Append one result as a JSON line, flushed and fsynced (nothing lost on a crash)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(result.model_dump(mode="json", exclude_none=True), separators=(",", ":")) + "\n"
    with p.open("a", encoding="utf-8") as fh:
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def read_request_results(path: str | Path, *, strict: bool = False) -> list[RequestResult]:
    """Read ``requests.jsonl``. A torn last line (a crash mid-write: no newline at its end) is dropped
    unless ``strict``; any other line that is not a result, and a prompt (index and turn) or request id
    that a line at the same draft length already holds, is a SchemaError with its line."""
    from golden_al import safeio

    p = Path(path)
    if not p.exists():
        return []
    text = safeio.read_text(p, max_bytes=safeio.DEFAULT_MAX_RECORD_BYTES)
    lines = text.splitlines()
    torn = bool(text) and not text.endswith("\n")  # only a line written without its newline is torn
    out: list[RequestResult] = []
    seen: dict[tuple[int, str], int] = {}
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(RequestResult.model_validate_json(line))
        except ValidationError as exc:
            if i == len(lines) and torn and not strict:
                break  # torn final line from an interrupted write
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise SchemaError(f"{loc}: {first['msg']}", path=p, line=i) from None
        _refuse_repeats(out[-1], i, seen, p)
    return out


def _refuse_repeats(r: RequestResult, line: int, seen: dict[tuple[int, str], int], path: Path) -> None:
    """Each prompt (index, turn) and each request id once per draft length: a repeated row is not more evidence."""
    extra = r.extra or {}
    ids = extra["request_ids"] if isinstance(extra.get("request_ids"), list) else [r.request_id]
    names = [f"prompt {i}" + (f" turn {r.turn}" if r.turn is not None else "") for i in line_indices(r)]
    for name in [*names, *(f"request id {str(x)!r}" for x in ids if str(x))]:
        first = seen.setdefault((r.draft_len, name), line)
        if first != line:
            raise SchemaError(f"{name} has two results at k={r.draft_len} (lines {first} and {line})", path=path,
                              line=line, hint="a row counted twice is not more evidence: the file was edited, "
                                              "concatenated, or two runs wrote to it")


