"""Sweeps: every (thinking mode, draft length) cell against a server, resumable, with one-run curves.

Layout (``layout="sweep"``)::

    OUT/sweep.json                        the sweep's fingerprint (a resume must match)
    OUT/logs/k{K}.server.log              captured log of the server launched for k=K
    OUT/thinking_{on,off}/k{K}/           one cell: cell.json, requests.jsonl, measurement.json
    OUT/<level>/k{K}/                     a named level's cell (e.g. OUT/reasoning_effort_high/k3/)
    OUT/thinking_{on,off}/k{K}/validate/  --one-run --validate-k: the real measurement at K
    OUT/validation.json                   derived vs measured AL at the --validate-k lengths

``layout="flat"`` (``golden-al measure`` with one cell) puts the cell in ``OUT``
itself and the log in ``OUT/server.log``; ``layout="per-k"`` (``measure --draft-lens``,
one thinking mode) uses ``OUT/k{K}/``, like the reference engine.

When launching, the server is started once per draft length and serves both
thinking modes (thinking is a per-request setting), then stopped; a draft length
whose cells are all finished is not relaunched on ``--resume``. With an attached
server there is one draft length: the server's.

``one_run``: only the largest ``k`` is measured; every smaller ``k`` is derived by
truncating each request's per-step histogram (mass above ``k`` folds onto ``k``;
:meth:`distributions.AcceptanceDistribution.truncate` applied per request, so the
pooled pmf is exactly the truncated pooled pmf). This is exact in expectation only
when a draft's acceptance does not depend on where verify steps start. Real drafts
agree with the target in bursts, and a run at the largest ``k`` starts its steps at
other positions than a run at ``k``. experiments/one-run-vs-per-k shows both sides: on
the Qwen2.5-Coder pair the derived AL is within the paired 95% CI of the measured one at
every k (largest difference +0.06 at k=6), while bursty synthetic acceptance at the same
mean rate puts it up to 0.31 low; and block drafts (DFLASH, DSPARK) add that their drafts depend on the block size. So
every derived record says ``derivation_exact: false`` with a warning, and
``validate_k`` measures chosen lengths for real and compares.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from distributions import units
from distributions.uncertainty import se_from_ci, z_for_confidence
from golden_al.errors import SchemaError, ServerError, UsageError
from golden_al.httpclient import RetryPolicy, ServerClient
from golden_al.measure.derive import derive_record
from golden_al.measure.records import load_record, read_request_results
from golden_al.measure.schema import (
    MEASUREMENT_FILE,
    REQUESTS_FILE,
    DatasetInfo,
    MeasurementRecord,
    ModelInfo,
    SamplingInfo,
    ServerInfo,
)
from golden_al.measure.server import CellPlan, ChatPrompt, measure_cell, validate_cell_dir
from golden_al.plugin import checks_ran, registry
from golden_al.plugin.facts import ServerFacts, is_chain
from golden_al.plugin.sources import default_source, make_source, per_request_alternative
from golden_al.prompts.thinking import mode_key
from golden_al.provenance import atomic_write_text, collect, now_iso
from golden_al.servers import launch as launch_mod
from golden_al.servers import synthetic
from golden_al.servers.pipeline import Schedule
from golden_al.servers.probe import probe_server
from golden_al.servers.replicas import check_replicas_agree, identified, identity, identity_changes

__all__ = [
    "ModeSpec",
    "ServerOptions",
    "ServerRun",
    "SweepResult",
    "SweepSpec",
    "ValidationRow",
    "cell_dir",
    "launch_commands",
    "prompts_hash",
    "run_sweep",
]

SWEEP_FILE = "sweep.json"
VALIDATION_FILE = "validation.json"
_SWEEP_SCHEMA = "golden-al/sweep/1"
ProgressFn = Callable[..., None]
LogFn = Callable[[str], None]


@dataclass
class ServerOptions:
    """How to reach (or start) the server, and how to talk to it."""

    engine: str
    url: str | None = None
    launch: launch_mod.LaunchSpec | None = None
    urls: list[str] = field(default_factory=list)
    """Every ``--server`` (data-parallel replicas); ``url`` is the first."""
    base_env: dict[str, str] | None = None
    ready_timeout_s: float = 1800.0
    stop_timeout_s: float = 30.0
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    al_source: str = "auto"
    concurrency: int = 1
    api_key: str | None = None
    server_logs: list[str] = field(default_factory=list)
    """``--server-log``, one per ``--server`` in the same order."""
    assume_identical_replicas: bool = False
    """Replicas that report no configuration are pooled anyway (the record says so)."""
    served_model_name: str | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    save_text: bool = False
    request_rate: float | None = None
    warmup: int = 0
    scrape_interval_s: float = 1.0
    arrival_seed: int = 0
    tokenizer: str | None = None
    """``--tokenizer``: re-tokenize every answer's text (:mod:`golden_al.servers.retokenize`)."""

    def __post_init__(self) -> None:
        if self.urls and self.url is None:
            self.url = self.urls[0]
        elif self.url is not None and not self.urls:
            self.urls = [self.url]
        if (self.url is None) == (self.launch is None):
            raise UsageError("give exactly one of --server URL and --launch")
        if self.server_logs and self.launch is not None:
            raise UsageError("--server-log is for an attached --server (a launched server's log is read anyway)")
        if self.engine not in launch_mod.MEASURABLE_ENGINES:
            raise UsageError(f"unknown server engine {self.engine!r}",
                             hint="one of " + ", ".join(launch_mod.MEASURABLE_ENGINES))
        if self.launch is not None and self.engine not in launch_mod.SERVER_ENGINES:
            raise UsageError(f"golden-al cannot launch a {self.engine} server (its profile builds no server "
                             "command)", hint="start it yourself and attach with --server URL")
        Schedule(self.concurrency, self.request_rate, self.arrival_seed, self.warmup)  # validates
        if not self.scrape_interval_s > 0:
            raise UsageError(f"--scrape-interval must be > 0 seconds, got {self.scrape_interval_s}")

    def source_name(self) -> str:
        """The AL source actually used."""
        if self.al_source != "auto":
            return self.al_source
        per_req = bool(self.launch and self.launch.per_request_metrics)
        return default_source(self.engine, per_request_metrics=per_req)


@dataclass
class ModeSpec:
    """One thinking mode: its prompts (as sent), sampling and chat-template kwargs."""

    thinking: str  #: on, off or a named level (reasoning_effort_high)
    prompts: list[ChatPrompt]
    dataset: DatasetInfo
    sampling: SamplingInfo
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)

    def first(self, n: int) -> ModeSpec:
        """This mode with only its first ``n`` prompts (``measure --ci-half-width`` grows ``n``)."""
        prompts = self.prompts[:n]
        dataset = self.dataset.model_copy(update={"count": len(prompts), "hash": prompts_hash(prompts)})
        return dataclasses.replace(self, prompts=prompts, dataset=dataset)


def prompts_hash(prompts: Sequence[ChatPrompt]) -> str:
    """The dataset hash of prompts as sent: over the rendered texts (the reference engine's hash), else
    over the per-prompt hashes of the messages."""
    from golden_al.prompts.render import dataset_hash

    if prompts and all(p.text is not None for p in prompts):
        return dataset_hash(p.text or "" for p in prompts)
    return hashlib.sha256("".join(p.prompt_hash for p in prompts).encode()).hexdigest()


@dataclass
class SweepSpec:
    """What to measure."""

    draft_lens: list[int]
    modes: list[ModeSpec]
    target: ModelInfo | None
    """What the user named (``--target``), or None; the record's target is the served model (:func:`served_target`)."""
    draft: ModelInfo
    draft_method: str | None = None
    one_run: bool = False
    validate_k: list[int] = field(default_factory=list)
    allow_derived: bool = False
    """``--one-run`` of a block draft (DFlash): derive anyway (a block draft's drafts depend on the block size)."""
    bootstrap_seed: int = 0
    layout: Literal["sweep", "per-k", "flat"] = "sweep"
    check_modes: bool = True

    def __post_init__(self) -> None:
        if not self.draft_lens:
            raise UsageError("no draft lengths to measure")
        for k in self.draft_lens:
            units.check_draft_len(k)
        if self.check_modes and not self.modes:
            raise UsageError("no thinking modes to measure")
        if self.validate_k and not self.one_run:
            raise UsageError("--validate-k needs --one-run")
        if self.one_run and self.draft_method and not is_chain("", self.draft_method) and not self.allow_derived:
            raise UsageError(_BLOCK_ONE_RUN.format(method=self.draft_method), hint=_BLOCK_ONE_RUN_HINT)
        kmax = max(self.draft_lens)
        bad = [k for k in self.validate_k if k >= kmax or k not in self.draft_lens]
        if bad:
            raise UsageError(f"--validate-k {bad}: each must be one of the draft lengths below the largest ({kmax})")
        if self.layout == "flat" and (len(set(self.draft_lens)) > 1 or len(self.modes) > 1 or self.one_run):
            raise UsageError("a flat layout holds one cell (one draft length, one thinking mode)")
        if self.layout == "per-k" and len(self.modes) > 1:
            raise UsageError("a per-k layout holds one thinking mode")

    def measured_lens(self) -> list[int]:
        """Draft lengths measured for real, in the order they are measured."""
        if self.one_run:
            kmax = max(self.draft_lens)
            return [kmax, *sorted(set(self.validate_k))]
        return sorted(set(self.draft_lens))


_BLOCK_ONE_RUN = ("--one-run derives smaller k by truncating one run's steps, but {method} is a block draft: its "
                  "drafts depend on the block size, so the derivation is not the measurement")
_BLOCK_ONE_RUN_HINT = "measure each k (drop --one-run), or pass --allow-derived to derive anyway (marked derived)"


@dataclass
class ValidationRow:
    """Derived against measured AL at one draft length."""

    thinking: str
    draft_len: int
    derived_al: float
    derived_ci95: tuple[float, float]
    measured_al: float
    measured_ci95: tuple[float, float]
    difference: float
    within_ci: bool
    chain: bool


@dataclass
class SweepResult:
    """Every record written (measured and derived) and the validation rows."""

    records: list[MeasurementRecord]
    validation: list[ValidationRow]
    warnings: list[str]


@dataclass
class ServerRun:
    """A server measurement or sweep as a :class:`~golden_al.measure.precision.Runner`: every mode's first ``n``
    prompts (:meth:`ModeSpec.first`); ``result`` is the last run's (records, validation, warnings)."""

    options: ServerOptions
    spec: SweepSpec
    out: Path
    note: LogFn | None = None
    result: SweepResult | None = None
    unit: str = "requests"

    @property
    def available(self) -> int:
        return min(len(m.prompts) for m in self.spec.modes)

    @property
    def label(self) -> str:
        return f"{self.options.engine} measurement"

    def measure(self, n: int | None, resume: bool, progress: ProgressFn) -> list[MeasurementRecord]:
        """The records of every cell over the first ``n`` prompts of each mode (all with None)."""
        spec = self.spec if n is None else dataclasses.replace(self.spec, modes=[m.first(n) for m in self.spec.modes])
        self.result = run_sweep(self.options, spec, self.out, resume=resume, progress=progress, note=self.note)
        return list(self.result.records)


def cell_dir(out: Path, thinking: str, k: int, layout: str = "sweep", *, validate: bool = False) -> Path:
    """Where one cell lives."""
    if layout == "flat":
        return out
    d = out / f"k{k}" if layout == "per-k" else out / mode_key(thinking) / f"k{k}"
    return d / "validate" if validate else d


def _log_path(out: Path, k: int, layout: str) -> Path:
    return out / "server.log" if layout == "flat" else out / "logs" / f"k{k}.server.log"


def _fingerprint(options: ServerOptions, spec: SweepSpec) -> dict[str, Any]:
    launch = None
    if options.launch is not None:
        ls = dataclasses.replace(options.launch, draft_len=1, port=0)
        launch = {"engine": ls.engine, "target": ls.target, "draft": ls.draft, "algorithm": ls.algorithm,
                  "tp": ls.tp, "engine_args": ls.engine_args, "speculative_extra": ls.speculative_extra,
                  "per_request_metrics": ls.per_request_metrics, "image": ls.image}
    return {
        "engine": options.engine,
        "server": options.url if len(options.urls) <= 1 else options.urls,
        "launch": launch,
        "draft_lens": sorted(spec.draft_lens),
        "thinking": [m.thinking for m in spec.modes],
        "one_run": spec.one_run,
        "validate_k": sorted(spec.validate_k),
        "al_source": options.source_name(),
    }


def _check_sweep_state(out: Path, options: ServerOptions, spec: SweepSpec, resume: bool) -> None:
    if spec.layout == "flat":
        return
    path = out / SWEEP_FILE
    fp = _fingerprint(options, spec)
    if path.exists():
        if not resume:
            raise UsageError(f"{out} already holds a sweep", hint="pass --resume to continue it, or another --out")
        try:
            stored = json.loads(path.read_text(encoding="utf-8")).get("fingerprint", {})
        except (OSError, json.JSONDecodeError) as exc:
            raise SchemaError(f"cannot read sweep plan: {exc}", path=path) from None
        diff = sorted(k for k in set(stored) | set(fp) if stored.get(k) != fp.get(k))
        if diff:
            details = "; ".join(f"{k}: was {stored.get(k)!r}, now {fp.get(k)!r}" for k in diff)
            raise UsageError(f"cannot resume {out}: the sweep settings changed ({details})",
                             hint="resume with the same options, or sweep into another --out")
    atomic_write_text(path, json.dumps({"schema": _SWEEP_SCHEMA, "fingerprint": fp, "updated": now_iso()},
                                       indent=2) + "\n")


def _finished(d: Path, mode: ModeSpec) -> bool:
    """The cell has its record, over this mode's prompts (a grown prompt set is measured on)."""
    if not (d / MEASUREMENT_FILE).exists():
        return False
    try:
        return load_record(d).dataset.count == len(mode.prompts)
    except SchemaError:
        return False


# ---------------------------------------------------------------------------- derivation
def compare(derived: MeasurementRecord, measured: MeasurementRecord) -> ValidationRow:
    """Derived vs measured: the difference and whether it is within the combined 95% CI."""
    diff = derived.al - measured.al
    se = math.hypot(float(se_from_ci(*derived.al_ci95)), float(se_from_ci(*measured.al_ci95)))
    within = abs(diff) <= z_for_confidence(0.95) * se if se > 0 else abs(diff) < 1e-12
    chain = not any("block draft" in w for w in derived.warnings)
    return ValidationRow(derived.thinking, derived.draft_len, derived.al, derived.al_ci95, measured.al,
                         measured.al_ci95, diff, within, chain)


# ---------------------------------------------------------------------------- running
def served_target(given: ModelInfo | None, served: str) -> ModelInfo:
    """The record's target model: the one the server serves, as it names it (``/v1/models``, which every answer's
    ``model`` field must repeat), never its address. A GGUF file identified by its hash keeps its registry name; a
    ``--target`` naming it otherwise is kept as its path (what the server was said to load)."""
    if given is not None and given.source == "gguf":
        return given
    return ModelInfo(name=served, path=given.name if given is not None and given.name != served else None,
                     source="server")


def _server_info(options: ServerOptions, url: str, command: list[str] | None, env: Mapping[str, str] | None,
                 facts: ServerFacts, log: Path | None, cell: Path, served: str) -> ServerInfo:
    log_rel = None
    if log is not None:
        log_rel = os.path.relpath(log, cell)
    return ServerInfo(
        url=url,
        model=served,
        launched=options.launch is not None,
        command=command,
        env=launch_mod.relevant_env(env) if env is not None else None,
        server_args=facts.server_args,
        log_file=log_rel,
        image=options.launch.image if options.launch else None,
        curve_selectors=facts.selectors,
    )


async def _session(options: ServerOptions, spec: SweepSpec, out: Path, k: int, cells: list[tuple[ModeSpec, Path]],
                   url: str, command: list[str] | None, env: Mapping[str, str] | None, log: Path | None,
                   resume: bool, progress: ProgressFn, note: LogFn) -> list[MeasurementRecord]:
    urls = [url] if options.launch is not None else (options.urls or [url])
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(
            ServerClient(u, policy=options.policy, api_key=options.api_key, on_retry=note)) for u in urls]
        logs = _server_logs(options, urls, log)
        with checks_ran.recording() as at_start:
            every = [await probe_server(c, options.engine, log_path=logs[i]) for i, c in enumerate(clients)]
        check_replicas_agree(urls, every)
        closing = _closing_probe(options.engine, clients, logs, [identity(f) for f in every], k)
        unknown = [u for u, f in zip(urls, every, strict=True) if not identified(f)]
        if len(urls) > 1 and unknown and not options.assume_identical_replicas:
            raise ServerError(
                f"cannot tell whether the replicas are one configuration: {', '.join(unknown)} report(s) neither a "
                "draft method nor speculative arguments, so two different drafts would be pooled silently",
                hint="give each --server its own --server-log (the startup arguments are read from it), or say "
                     "--assume-identical-replicas (the record says so)")
        if len(urls) > 1 and unknown:
            note("replicas assumed identical (--assume-identical-replicas): " + ", ".join(unknown))
        facts = every[0]
        client = clients[0] if len(clients) == 1 else clients
        from_command = registry.get_profile(options.engine).launch.launch_draft_len
        if facts.draft_len is None and command is not None and from_command is not None:
            facts.draft_len, rule = from_command(command)
            facts.draft_len_rule = f"launch command {rule}"
        for w in facts.warnings:
            note(w)
        if facts.draft_len is not None and facts.draft_len != k:
            raise ServerError(
                f"the server drafts k={facts.draft_len} ({facts.draft_len_rule}) but k={k} was asked for",
                hint="pass the server's draft length (--draft-len), or --launch to start one per k",
            )
        warnings = list(facts.warnings)
        if len(urls) > 1 and unknown:
            warnings.append("the replicas could not be identified and were assumed identical "
                            "(--assume-identical-replicas): " + ", ".join(unknown))
        if facts.draft_len is None:
            warnings.append(f"the server's draft length could not be confirmed; recorded as the requested k={k}")
        served = options.served_model_name or (facts.models[0] if facts.models else None)
        if not served:
            raise ServerError("the server lists no model at /v1/models", hint="pass --served-model-name")
        source = make_source(options.source_name(), options.engine)
        if options.al_source == "auto" and not source.per_request and spec.modes and spec.modes[0].prompts:
            better = await per_request_alternative(clients[0], options.engine, served, spec.modes[0].prompts[0])
            if better is not None:
                note(f"the server returns per-request spec-decode metrics: AL source {better.name} "
                     f"instead of the aggregate {source.name}")
                source = better
        method = spec.draft_method or (options.launch.draft_method() if options.launch else None) \
            or facts.draft_method or "unknown"
        records = []
        for mode, d in cells:
            if resume and _finished(d, mode):
                continue
            plan = CellPlan(
                servers=[identity(f) for f in every], engine=options.engine, draft_len=k, thinking=mode.thinking, sampling=mode.sampling,
                chat_template_kwargs=mode.chat_template_kwargs, prompts=mode.prompts, dataset=mode.dataset,
                target=served_target(spec.target, served), draft=spec.draft, draft_method=method, served_model=served,
                concurrency=options.concurrency, save_text=options.save_text, extra_body=options.extra_body,
                bootstrap_seed=spec.bootstrap_seed, request_rate=options.request_rate, warmup=options.warmup,
                arrival_seed=options.arrival_seed, scrape_interval_s=options.scrape_interval_s,
                tokenizer=options.tokenizer,
            )
            info = _server_info(options, url, command, env, facts, log, d, served)
            progress(0, description=f"k={k} thinking {mode.thinking}")
            with checks_ran.recording(at_start):
                records.append(await measure_cell(client, plan, source, d, resume=resume, progress=progress,  # type: ignore[arg-type]
                                                  server=info, engine_version=facts.version, warnings=warnings,
                                                  closing_probe=closing))
        return records


def _closing_probe(engine: str, clients: Sequence[ServerClient], logs: Sequence[Path | None],
                   at_start: Sequence[Mapping[str, Any]], k: int) -> Callable[[], Any]:
    """The probe repeated after a cell's last unit: each server must report what it reported at the start
    (version, models, draft method and length, its arguments) and no other k, else the cell is not recorded."""
    async def probe() -> None:
        for i, client in enumerate(clients):
            now = identity(await probe_server(client, engine, log_path=logs[i]))
            changed = identity_changes(at_start[i], now)
            if now.get("draft_len") not in (None, k):
                changed.append(f"draft_len {now['draft_len']!r}, measured as k={k}")
            if changed:
                raise ServerError(f"{client.base_url} changed during the run: " + "; ".join(changed[:6]),
                                  hint="the server was restarted or reconfigured while it was measured: its rows "
                                       "mix two servers; delete the cell's directory and measure it again")
        checks_ran.ran("server-unchanged-at-end", len(clients))
    return probe


def _server_logs(options: ServerOptions, urls: Sequence[str], launched_log: Path | None) -> list[Path | None]:
    """One log per server: the launched server's own, or ``--server-log`` given once per ``--server``.

    Raises:
        UsageError: as many ``--server-log`` as ``--server`` are needed (a log read for one replica says
            nothing of another).
    """
    if options.launch is not None:
        return [launched_log]
    given = [Path(p) for p in options.server_logs]
    if not given:
        return [None] * len(urls)
    if len(given) != len(urls):
        raise UsageError(f"{len(given)} --server-log for {len(urls)} --server: give one log per server, in the "
                         "same order", hint="a log read for one replica says nothing of another")
    return list(given)


def _chain(options: ServerOptions, spec: SweepSpec) -> bool:
    method = spec.draft_method or (options.launch.draft_method() if options.launch else None)
    return is_chain(options.engine, method)


def launch_commands(options: ServerOptions, spec: SweepSpec) -> list[str]:
    """The shell lines ``--launch`` would run, one per measured draft length (``--print-command``).

    The environment shown is what the options add (``--env``); both it and the
    inherited environment are checked for synthetic acceptance.
    """
    if options.launch is None:
        raise UsageError("--print-command needs --launch")
    lines = []
    for k in spec.measured_lens():
        spec_k = dataclasses.replace(options.launch, draft_len=k, port=options.launch.port or 30000)
        synthetic.check_launch_env({**(options.base_env or {}), **spec_k.env})
        lines.append(launch_mod.shell_line(launch_mod.build_command(spec_k), spec_k.env))
    return lines


def run_sweep(options: ServerOptions, spec: SweepSpec, out: str | Path, *, resume: bool = False,
              progress: ProgressFn | None = None, note: LogFn | None = None) -> SweepResult:
    """Measure (and derive) every cell of ``spec``; see the module docstring.

    Args:
        progress: ``progress(advance, *, total=None, description=None)``, counts requests.
        note: receives one-line notices (retries, warnings, server starts).
    """
    out = Path(out)
    progress = progress or (lambda *a, **k: None)
    note = note or (lambda s: None)
    measured = spec.measured_lens()
    if options.url is not None and len(measured) > 1:
        raise UsageError(
            f"an attached server has one draft length, but k={measured} would be measured",
            hint="use --launch to start a server per draft length, or --one-run without --validate-k",
        )
    out.mkdir(parents=True, exist_ok=True)
    _check_sweep_state(out, options, spec, resume)
    if resume:  # every cell's files are read and checked before anything is sent to a server
        for k in measured:
            for m in spec.modes:
                d = cell_dir(out, m.thinking, k, spec.layout, validate=spec.one_run and k != max(spec.draft_lens))
                if d.exists():
                    validate_cell_dir(d, root=out)
    kmax = max(spec.draft_lens)
    total = len(measured) * sum(len(m.prompts) for m in spec.modes)
    progress(0, total=total)
    records: list[MeasurementRecord] = []
    for k in measured:
        validate = spec.one_run and k != kmax
        cells = [(m, cell_dir(out, m.thinking, k, spec.layout, validate=validate)) for m in spec.modes]
        if resume and all(_finished(d, m) for m, d in cells):
            progress(sum(len(m.prompts) for m, _ in cells))
            note(f"k={k}: already measured, skipped")
        elif options.launch is not None:
            _launch_and_measure(options, spec, out, k, cells, resume, progress, note)
        else:
            assert options.url is not None
            asyncio.run(_session(options, spec, out, k, cells, options.url, None, None, None, resume, progress, note))
        records.extend(load_record(d) for _, d in cells)
    validation: list[ValidationRow] = []
    warnings: list[str] = []
    if spec.one_run:
        chain = _chain(options, spec)
        if not chain and not spec.allow_derived:
            raise UsageError(_BLOCK_ONE_RUN.format(method=spec.draft_method or "the server's block draft")
                             + f"; k={kmax} was measured, the smaller k were not derived", hint=_BLOCK_ONE_RUN_HINT)
        for m in spec.modes:
            src_dir = cell_dir(out, m.thinking, kmax, spec.layout)
            source = load_record(src_dir)
            results = read_request_results(src_dir / REQUESTS_FILE)
            for k in sorted(spec.draft_lens):
                if k == kmax:
                    continue
                derived = derive_record(source, results, k, cell_dir(out, m.thinking, k, spec.layout),
                                        chain=chain, bootstrap_seed=spec.bootstrap_seed)
                records.append(derived)
                if k in spec.validate_k:
                    real = load_record(cell_dir(out, m.thinking, k, spec.layout, validate=True))
                    validation.append(compare(derived, real))
        if validation:
            atomic_write_text(out / VALIDATION_FILE, json.dumps(
                {"rows": [dataclasses.asdict(v) for v in validation], "provenance": collect()}, indent=2) + "\n")
        if not spec.validate_k:
            warnings.append("one-run derived records are not exact (bursty acceptance biases them low; block drafts "
                            "also depend on the block size): add --validate-k to measure some lengths for real")
        elif not all(v.within_ci for v in validation):
            warnings.append("a derived AL differs from the real measurement beyond the CIs: see validation.json")
    return SweepResult(records, validation, warnings)


def _launch_and_measure(options: ServerOptions, spec: SweepSpec, out: Path, k: int,
                        cells: list[tuple[ModeSpec, Path]], resume: bool, progress: ProgressFn,
                        note: LogFn) -> list[MeasurementRecord]:
    assert options.launch is not None
    port = options.launch.port or launch_mod.free_port(options.launch.host)
    spec_k = dataclasses.replace(options.launch, draft_len=k, port=port)
    command = launch_mod.build_command(spec_k)
    env = {**(options.base_env if options.base_env is not None else os.environ), **spec_k.env}
    for w in synthetic.check_launch_env(env):
        note(w)
    log = _log_path(out, k, spec.layout)
    note(f"k={k}: starting {options.engine}: {launch_mod.shell_line(command, spec_k.env)}")
    progress(0, description=f"k={k}: starting {options.engine} server")
    with launch_mod.ManagedServer(command, url=spec_k.url, log_path=log, env=env,
                                  ready_timeout_s=options.ready_timeout_s,
                                  stop_timeout_s=options.stop_timeout_s) as server:
        note(f"k={k}: server ready after {server.ready_after_s or 0:.1f} s (log {log})")
        return asyncio.run(_session(options, spec, out, k, cells, spec_k.url, command, env, log, resume,
                                    progress, note))
