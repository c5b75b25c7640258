"""The measurement record's JSON contract: ``measurement.json`` (:class:`MeasurementRecord`) and the lines of its
``requests.jsonl`` (:class:`RequestResult`).

One record describes one measured (or derived, pooled, imported) cell: target, draft, draft length ``k``,
thinking mode, sampling, dataset, the AL with its 95% interval over independent clusters (``uncertainty`` says
which method and how many), and the raw counts it rests on. Every producer (the offline reference engine, every
server, imports, pooling, derivation) writes the same record, so ``fit``, ``report``, ``commit`` and ``verify``
never care where a number came from. Files are read and written by :mod:`golden_al.measure.records` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    computed_field,
    field_validator,
    model_validator,
)

from distributions.counts import tidy_count
from distributions.uncertainty import ALInterval

__all__ = [
    "BY_DRAFT_LEN_DIR",
    "MEASUREMENT_FILE",
    "REQUESTS_FILE",
    "SCHEMA_VERSION",
    "BlockDraftInfo",
    "CellCounts",
    "DatasetInfo",
    "MeasurementRecord",
    "ModelInfo",
    "RequestResult",
    "SamplingInfo",
    "ServerInfo",
    "ServerShare",
    "Timing",
    "TimingGroup",
    "Uncertainty",
]

SCHEMA_VERSION = 1
MEASUREMENT_FILE = "measurement.json"
REQUESTS_FILE = "requests.jsonl"
BY_DRAFT_LEN_DIR = "by_draft_len"
"""Sub-directory of a cell holding one record per other draft length the server drafted at (a server that
reports per-step draft lengths); left out when a directory is searched for records."""

def _tidy(value: Any) -> Any:
    return tidy_count(value) if isinstance(value, float) else value


Count = Annotated[int | float, BeforeValidator(_tidy), Field(ge=0)]
"""A count: an int when observed (a float that is integral up to float noise becomes one), a float when it is an
expectation (replay estimates)."""


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

    url: str | None = Field(default=None, description="the server's address")
    model: str | None = Field(
        default=None, description="the model the server serves, as it names it: its /v1/models, which every OpenAI "
        "answer's model field must repeat")
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
    cpu_ms: tuple[float, float, float] | None = Field(
        default=None, description="the process's CPU time per step, quartiles (the cost of a step on a shared machine)")
    load1: tuple[float, float] | None = Field(
        description="least and most 1-minute load average seen (os.getloadavg); None: not recorded (an import)")


class Timing(_Strict):
    """What a measurement timed, grouped by batch size: the input of ``draft-lengths --measured``."""

    source: str = Field(description="reference-steps | llamacpp-response-decode-ms | vllm-bench-itl | ...")
    unit: Literal["step", "request"]
    cpus: int | None = Field(default=None, description="os.cpu_count() where the timings were read")
    groups: list[TimingGroup]


class ServerShare(_Strict):
    """One data-parallel replica's part of a cell measured on several ``--server`` URLs."""

    url: str
    num_requests: int = Field(ge=0)
    clusters: int = Field(ge=0, description="lines of requests.jsonl (requests, or counter batches)")
    num_verify_steps: Count
    num_accepted_drafts: Count
    histogram: list[Count]
    al: float | None = Field(default=None, description="this replica's AL (None without verify steps)")


def _check_histogram(k: int, known: bool, histogram: Sequence[Count], per_position: Sequence[Count]) -> None:
    """A request's or a record's histogram shape (k+1 entries, k positions), all zeros when not known."""
    if len(histogram) != k + 1:
        raise ValueError(f"histogram has {len(histogram)} entries, expected k+1={k + 1}")
    if len(per_position) != k:
        raise ValueError(f"per_position_accepted has {len(per_position)} entries, expected k={k}")
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
        _check_histogram(k, self.histogram_known, self.histogram, self.per_position_accepted)
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
        _check_histogram(k, self.histogram_known, self.histogram, self.per_position_accepted)
        if self.draft_len_observed not in (None, k):
            raise ValueError(f"draft_len_observed {self.draft_len_observed} is not draft_len {k}")
        lo, hi = self.al_ci95
        if not lo <= hi:
            raise ValueError(f"al_ci95 must be [lo, hi] with lo <= hi, got {self.al_ci95}")
        return self

    def distribution(self) -> Any:
        """The measured :class:`~distributions.AcceptanceDistribution` (from the histogram)."""
        from distributions.acceptance import AcceptanceDistribution

        if not self.histogram_known:
            raise ValueError("this record holds totals only (histogram_known is false): it has no distribution")

        return AcceptanceDistribution.from_accepted_histogram(self.histogram, k=self.draft_len)
