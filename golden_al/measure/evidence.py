"""A real run's own files: the AL it realized (:func:`evidence_from_files`: two Prometheus snapshots or the engine's
logs, read by its profile's ``run_evidence``), the settings it logged at start-up (:func:`server_settings`) and the
golden point they derive (:func:`golden_target`, by :func:`golden_al.recipes.derive.derive`). ``check-run`` judges
the evidence against its injected AL, ``verify`` against the golden curve's own interval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golden_al.errors import (
    CounterSemanticsError,
    InputFileError,
    NoVerifyStepsError,
    UnreadableInputError,
    UsageError,
)
from golden_al.formats.counters import (
    SpecCounters,
    counters_delta,
    detect_engine,
    order_snapshots,
    spec_counters,
    validate_counters,
)
from golden_al.formats.prometheus import MetricsSnapshot, check_same_lifetime, read_metrics_file
from golden_al.plugin.evidence import RunEvidence

__all__ = ["DEFAULT_DECODE_LOG_INTERVAL", "RunTarget", "evidence_from_files", "golden_target", "logged_draft_len",
           "server_settings"]

#: SGLang ``--decode-log-interval`` default (``arg_groups/fields/observability.py``, 0.5.23).
DEFAULT_DECODE_LOG_INTERVAL = 40


# ----------------------------------------------------------------------- the target


@dataclass(frozen=True)
class RunTarget:
    """The golden AL a run had to realize, looked up in the store, and where each input came from."""

    expect_al: float
    draft_len: int
    golden: dict[str, Any]
    point: Any = None  #: the :class:`~golden_al.golden.store.GoldenPoint` itself (its interval, for ``verify``)


def server_settings(files: Sequence[str | Path], engine: str) -> dict[str, Any]:
    """What the server logged about itself at start-up (model, speculative algorithm, k), for engines
    whose profile declares a ``server-args`` log line (SGLang's ``server_args=ServerArgs(...)``):
    ``{"model", "algorithm", "k", "line", "file"}``, each only when the log says it.

    Raises:
        InputFileError: two starts with different settings in the files (one run, one configuration).
    """
    from golden_al import safeio
    from golden_al.plugin.registry import get_profile, load_hook

    profile = get_profile(engine)
    if profile.run_logs.log_reader is None or profile.run_logs.log_reader.server_args is None:
        return {}
    parse = load_hook(profile.run_logs.log_reader.server_args)
    fields = profile.server.server_info_fields
    found: list[tuple[str, Any]] = []
    for f in files:
        if _looks_like_metrics(_head(f)):
            continue
        for n, line in safeio.iter_lines(f):
            rec = parse(line, n)
            if rec is not None:
                found.append((str(f), rec))
    if not found:
        return {}
    keys = [fields[x] for x in ("algorithm", "num_steps", "eagle_topk", "num_draft_tokens", "dflash_block_size",
                                "dspark_block_size", "model_path", "served_model_name") if x in fields]
    seen = {json.dumps([rec.args.get(key) for key in keys], default=str) for _, rec in found}
    if len(seen) > 1:
        raise InputFileError(f"{len(found)} server starts with different settings ("
                             + ", ".join(f"{f} line {rec.line_no}" for f, rec in found) + ")",
                             hint="check each run's log on its own")
    file, rec = found[0]
    args = rec.args
    out: dict[str, Any] = {"file": file, "line": rec.line_no}
    name = args.get(fields.get("served_model_name", "")) or args.get(fields.get("model_path", ""))
    if name:
        out["model"] = str(name)
    if args.get(fields.get("algorithm", "")):
        out["algorithm"] = str(args[fields["algorithm"]])
        try:
            out["k"] = profile_draft_len(engine, args)
        except UsageError:
            pass
    # the settings the engine's curve selectors read, by its server-info names (one spelling with /server_info)
    out["selector_spec"] = {short: args[key] for short, key in fields.items() if key in args}
    return out


def profile_draft_len(engine: str, server_info: Mapping[str, Any]) -> int:
    """k from what a server reports of itself (``/server_info`` or its start-up arguments), read by the
    engine's profile (:attr:`~golden_al.plugin.profile.ServerSupport.draft_len_from_server_info`).

    Raises:
        UsageError: the engine does not say how, or the settings do not fix k.
    """
    from golden_al.plugin.registry import get_profile

    profile = get_profile(engine)
    if profile.server.draft_len_from_server_info is None:
        raise UsageError(f"{profile.display_name} reports no draft length about itself")
    return int(profile.server.draft_len_from_server_info(server_info).k)


def logged_draft_len(files: Sequence[str | Path], engine: str, draft_len: int | None) -> tuple[int | None,
                                                                                             dict[str, Any]]:
    """(k of the run, what the server logged about itself): the log's k where it logs one, which a ``--draft-len``
    must agree with; else the flag (None: neither says).

    Raises:
        UsageError: a flag that contradicts the log. InputFileError: two starts with different settings.
    """
    logged = server_settings(files, engine)
    if draft_len is not None and logged.get("k") is not None and draft_len != logged["k"]:
        raise UsageError(f"--draft-len {draft_len} but the server's arguments ({logged.get('file')} line "
                         f"{logged.get('line')}) give k={logged['k']}",
                         hint="drop --draft-len, or check the log of the run you mean")
    return (draft_len if draft_len is not None else logged.get("k")), logged


def golden_target(files: Sequence[str | Path], *, engine: str, store: Any, thinking: str, model: str | None = None,
                  draft_len: int | None = None, algorithm: str | None = None,
                  selectors: Mapping[str, str] | None = None) -> RunTarget:
    """The golden AL the run had to realize: its (model, thinking mode, k, algorithm, selectors) derived as ``check``
    derives a recipe's (:func:`golden_al.recipes.derive.derive`, the same refusals).

    Model, algorithm and k come from the arguments or, where the engine logs them at start-up
    (:func:`server_settings`), from the files; given both, they must agree (a model by the derivation's rule).

    Raises:
        UsageError: no model or k, an argument that contradicts the log, or the derivation's refusal.
        NoGoldenValueError: no committed value (no curve, method or point).
    """
    k, logged = logged_draft_len(files, engine, draft_len)
    where = f"{logged.get('file')} line {logged.get('line')}" if logged else ""
    if algorithm is not None and logged.get("algorithm") is not None and \
            algorithm.strip().lower() != str(logged["algorithm"]).strip().lower():
        raise UsageError(f"--algorithm {algorithm} but the server's arguments ({where}) say {logged['algorithm']}")
    name = model or logged.get("model")
    algo = algorithm or logged.get("algorithm")
    if name is None:
        raise UsageError("check-run needs the model (--model) to look the golden AL up; the files do not name it",
                         hint="pass --model M, or --expect-al AL")
    if k is None:
        raise UsageError("check-run needs the draft length (--draft-len); the files do not give it",
                         hint="pass --draft-len K")
    from golden_al.prompts.thinking import REQUEST
    from golden_al.recipes.derive import Identity, derive, run_settings
    from golden_al.recipes.srt_slurm import ModelName

    chosen = _run_selectors(engine, logged, int(k), selectors, where)
    settings = run_settings(engine, int(k), f"the server's arguments ({where})" if "k" in logged and draft_len is None
                            else "--draft-len", algorithm=algo,
                            models=[ModelName(logged["model"], f"the server's arguments ({where})")]
                            if logged.get("model") else [])
    identity = Identity(model=model, thinking=thinking, thinking_priority=REQUEST)
    point = derive(settings, store, identity=identity, what="run", selectors=chosen).require(
        ", ".join(map(str, files)))
    golden = {"model": point.model, "thinking": point.thinking, "k": point.k, "al": point.al, "curve": point.curve,
              "method": point.method, "source": str(point.source),
              "from_log": {key: logged[key] for key in ("model", "algorithm", "k") if key in logged
                           and {"model": model, "algorithm": algorithm, "k": draft_len}[key] is None},
              "log": where or None, "selectors": chosen or None}
    return RunTarget(point.al, int(k), golden, point)


def _run_selectors(engine: str, logged: Mapping[str, Any], k: int, given: Mapping[str, str] | None,
                   where: str) -> dict[str, str]:
    """The curve selectors of the run: what its logged start-up settings say (the engine's profile reads them),
    which ``--selector`` must agree with; ``--selector`` alone where the log does not say.

    Raises:
        UsageError: a ``--selector`` that contradicts the log, naming both values.
    """
    from golden_al.plugin.registry import get_profile

    given = dict(given or {})
    if "selector_spec" not in logged:
        return given
    seen = get_profile(engine).selectors(logged["selector_spec"], k)
    if given and given != seen:
        shown = ", ".join(f"{key}={v}" for key, v in sorted(seen.items())) or "the engine's defaults"
        raise UsageError(f"--selector {', '.join(f'{key}={v}' for key, v in sorted(given.items()))} but the "
                         f"server's arguments ({where}) run {shown}", hint="drop --selector: the log says it")
    return seen


# ----------------------------------------------------------------------- reading


def _looks_like_metrics(text: str) -> bool:
    head = text[:4096]
    return "# TYPE " in head or "# HELP " in head or any(
        line and not line.startswith("#") and ("_total" in line.split(" ")[0] or "{" in line.split(" ")[0])
        and len(line.split(" ")) == 2 for line in head.splitlines()[:5])


def _head(path: str | Path) -> str:
    """The first lines of a file (regular files only: a FIFO or device is refused unopened)."""
    from golden_al import safeio

    lines = []
    for n, line in safeio.iter_lines(path):
        lines.append(line)
        if n >= 5:
            break
    return "\n".join(lines)


def evidence_from_files(files: Sequence[str | Path], engine: str, k: int, *,
                        decode_log_interval: int = DEFAULT_DECODE_LOG_INTERVAL,
                        batch_size: float | None = None,
                        labels: dict[str, str] | None = None) -> RunEvidence:
    """Realized AL and its sample size from two Prometheus snapshots, or from the engine's logs read
    by the reader its profile names (``run_evidence``, :mod:`golden_al.plugin.evidence`).

    Raises:
        UsageError: a single snapshot, snapshots mixed with other files, SGLang counters without
            ``batch_size``, or an engine whose profile names no log reader.
        InputFileError: no usable line in the files.
        CounterResetError: a counter went backwards between the snapshots.
        NoVerifyStepsError: the window holds no verify step.
    """
    from golden_al.plugin.registry import engine_names, get_profile, load_hook

    if not files:
        raise UsageError("no input files")
    snapshots: list[tuple[MetricsSnapshot, SpecCounters]] = []
    others: list[str | Path] = []
    for f in files:
        if _looks_like_metrics(_head(f)):
            try:
                snap = read_metrics_file(f)
            except (CounterSemanticsError, UnreadableInputError):
                raise
            except InputFileError:
                snap = None
            if snap is not None and detect_engine(snap) is not None:
                snapshots.append((snap, spec_counters(snap, engine if detect_engine(snap) == engine else None,
                                                      labels)))
                continue
        others.append(f)
    if snapshots:
        if others:
            raise UsageError(f"mix of Prometheus snapshots and other files ({', '.join(map(str, others))} "
                             "holds no speculative-decoding counters)", hint="pass either two snapshots or logs")
        if len(snapshots) != 2:
            raise UsageError(f"{len(snapshots)} Prometheus snapshot(s) given; check-run needs exactly two "
                             "(before and after the run)")
        return _from_snapshots(snapshots, engine, batch_size, k)
    profile = get_profile(engine)
    if profile.run_logs.run_evidence is None:
        readers = [p.display_name for p in map(get_profile, engine_names()) if p.run_logs.run_evidence]
        raise UsageError(f"golden-al reads no log of {profile.display_name} (its profile names no run_evidence)",
                         hint=f"pass two Prometheus snapshots, or use the logs of {', '.join(readers)}")
    reader = load_hook(profile.run_logs.run_evidence)
    evidence: RunEvidence = reader(others, k, decode_log_interval=decode_log_interval)
    return evidence


def _from_snapshots(snapshots: list[tuple[MetricsSnapshot, SpecCounters]], engine: str,
                    batch_size: float | None, k: int | None = None) -> RunEvidence:
    engines = {c.engine for _, c in snapshots}
    if engines != {engine}:
        raise UsageError(f"the snapshots hold {', '.join(sorted(engines))} counters, but --engine is {engine}")
    # Never order across server lifetimes: a restart makes "by their counters" meaningless.
    check_same_lifetime(snapshots[0][0], snapshots[1][0])
    (snap_a, before), (snap_b, after) = order_snapshots(snapshots)
    d = counters_delta(before, after)
    validate_counters(d, k)
    steps = d.num_verify_steps
    if steps <= 0:
        raise NoVerifyStepsError(f"{snap_a.source} -> {snap_b.source}: zero verify steps between the snapshots",
                                 hint="was the run sent between the two scrapes?")
    notes = [f"before: {snap_a.source}; after: {snap_b.source} (ordered by their counters)"]
    draws, how = d.independent_draws(batch_size)
    notes.extend(how)
    return RunEvidence(engine, "prometheus delta", d.al, steps, draws, draws, 2, tuple(notes))
