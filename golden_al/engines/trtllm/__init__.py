"""TensorRT-LLM: everything golden-al knows about it, in one place.

Upstream (NVIDIA/TensorRT-LLM, index commit 00b6d5a25c30):

* ``tensorrt_llm/_torch/speculative/interface.py``: ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``
  (counts draft tokens only, so the value is ``AL - 1``);
  ``get_force_num_accepted_tokens_float`` (one-model path, fractional values work) and
  ``get_force_num_accepted_tokens`` (``int()``, two-model path: a fractional value fails
  and turns forcing off). Reproduced in :mod:`golden_al.engines.trtllm.sampler`.
* ``tensorrt_llm/_torch/pyexecutor/sampler.py`` ``TorchSampler._process_draft_tokens_greedy``
  (``sampler/two_model_spec_dec.py`` ``TwoModelSpecDecHandler`` in later trees): the
  two-model path applies the forced count only there, i.e. to greedy requests; sampled
  (rejection-sampling) and tree requests run real acceptance.
* ``tensorrt_llm/llmapi/llm_args.py``: ``speculative_config`` (``decoding_type``,
  ``max_draft_len``; ``MTPDecodingConfig`` sets ``max_draft_len`` from
  ``num_nextn_predict_layers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from distributions import units
from golden_al import plugin

__all__ = ["ENV_FORCE", "PROFILE", "draft_len", "synthetic_settings", "two_model_path"]

VERSION = "00b6d5a25c30"
_REPO = "NVIDIA/TensorRT-LLM"
_INTERFACE = plugin.Source(_REPO, "tensorrt_llm/_torch/speculative/interface.py", VERSION)
_SAMPLER = plugin.Source(_REPO, "tensorrt_llm/_torch/pyexecutor/sampler.py", VERSION)
_LLM_ARGS = plugin.Source(_REPO, "tensorrt_llm/llmapi/llm_args.py", VERSION)
#: ``draft_len_schedule``: a draft length per batch size, chosen at run time by the drafter.
_DRAFTER = plugin.Source(_REPO, "tensorrt_llm/_torch/speculative/drafter.py", VERSION)
#: ``DecodingBaseConfig`` of a newer tree: ``max_concurrency`` (speculation off at batch sizes above it) and
#: ``acceptance_window`` + ``acceptance_length_threshold`` (speculation off for good once the rolling AL of the
#: last N finished requests drops below the threshold; ``PyExecutor``'s ``SpeculationGate``).
_LLM_ARGS_GATES = plugin.Source(_REPO, "tensorrt_llm/llmapi/llm_args.py", "0004396720054")

ENV_FORCE = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"

#: The newest tree read (``tensorrt_llm/llmapi/llm_args.py``, ``tensorrt_llm/_torch/speculative/interface.py``
#: at fcd3f3168280): ``DraftTargetDecodingConfig._draft_target_one_model`` defaults to True and nothing sets
#: it False outside tests (``SpeculativeDecodingMode.DRAFT_TARGET_ONE_MODEL``); ``eagle3_one_model: false`` still
#: runs two-model there (``validate_eagle_config`` only warns that it goes in release 1.4); ``SADecodingConfig`` (``decoding_type: SA``, a suffix automaton drafting
#: inside the target's forward) and ``PEARLDecodingConfig`` (``decoding_type: PEARL``, a DraftTarget
#: subclass on ``PEARL_ONE_MODEL`` whose ``pearl_adaptive_gamma``, default True, picks a draft length per
#: batch size) are new modes.
_NEWEST = "fcd3f3168280"
_LLM_ARGS_NEWEST = plugin.Source(_REPO, "tensorrt_llm/llmapi/llm_args.py", _NEWEST)
#: Facts by tree; TensorRT-LLM releases are not mapped to trees here, so a recipe's image tag is shown and the
#: newest tree's facts judge it.
VERSIONS: tuple[plugin.EngineVersion, ...] = (
    plugin.EngineVersion(f"tree {VERSION}", _LLM_ARGS, facts={"one_model_draft_target": False},
                         notes=("DraftTarget runs two-model (int() reader)",)),
    plugin.EngineVersion(f"tree {_NEWEST}", _LLM_ARGS_NEWEST, facts={"one_model_draft_target": True},
                         notes=("DraftTarget one-model by default (a fractional value works)", "SA and PEARL modes",
                                "Eagle3 two-model deprecated (still two-model)")),
)
#: Where a file names the TensorRT-LLM version: the NGC release image's tag, a pip pin.
VERSION_PATTERNS: tuple[str, ...] = (r"tensorrt-llm/release:(?P<version>[0-9][\w.]*)",
                                     r"\btensorrt[-_]llm\s*==\s*(?P<version>[0-9][\w.]*)")
#: ``pearl_adaptive_gamma`` of a PEARL config: a draft length chosen per batch size at run time
PEARL_ADAPTIVE = "pearl_adaptive_gamma"
#: Settings a forced count overrides on the one-model path (``interface.py``
#: ``SpecWorkerBase._apply_force_accepted_tokens`` replaces the accepted count per request), and that the
#: two-model path leaves to real acceptance (its forcing applies to greedy, non-tree requests only).
ACCEPTANCE_SETTINGS: tuple[str, ...] = ("use_relaxed_acceptance_for_thinking", "posterior_threshold",
                                        "use_dynamic_tree", "max_total_draft_tokens")


def _threshold_unsafe(value: Any) -> bool | None:
    """An ``acceptance_length_threshold`` a run's AL can fall below: above 1 (the gate compares decoded tokens per
    iteration, at least 1); None (unknown) when the file does not fix it."""
    if value is None:
        return False
    try:
        return float(str(value).strip("'\"")) > 1.0
    except ValueError:
        return None
ENV_PREFIXES: tuple[str, ...] = ("TLLM_",)
#: The recipe key holding the speculative config, and its keys.
SPEC_CONFIG_KEY = "speculative_config"
#: srt-slurm recipes (NVIDIA srt-slurm ``srtctl`` schema, as in SemiAnalysisAI/InferenceX
#: ``benchmarks/multi_node/srt-slurm-recipes`` at 843c6254f): the ``backend`` key holding per-role
#: engine arguments, and the ``backend.type`` spellings of this engine.
RECIPE_CONFIG_KEY = "trtllm_config"
RECIPE_BACKEND_TYPES: tuple[str, ...] = ("trtllm", "trt", "tensorrt-llm")
DECODING_TYPE = "decoding_type"
MAX_DRAFT_LEN = "max_draft_len"
MTP_LAYERS = "num_nextn_predict_layers"
ONE_MODEL_KEYS: tuple[str, ...] = ("eagle3_one_model", "mtp_eagle_one_model")
#: Where the draft checkpoint is named, newest spelling first.
DRAFT_MODEL_KEYS: tuple[str, ...] = ("speculative_model", "speculative_model_dir")
SPEC_KEYS: tuple[str, ...] = (MAX_DRAFT_LEN, DECODING_TYPE, *ONE_MODEL_KEYS, *DRAFT_MODEL_KEYS, MTP_LAYERS)
#: ``decoding_type`` values (lower-cased, no ``_``/``-``) that always run the two-model path.
TWO_MODEL_TYPES: tuple[str, ...] = ("ngram",)
#: ``decoding_type`` values whose default is the one-model path.
ONE_MODEL_TYPES: tuple[str, ...] = ("mtp", "eagle3", "eagle", "dflash", "dspark", "pard", "sa", "pearl",
                                    "drafttarget", "draftmodel")
#: ``decoding_type`` values that ran two-model in older trees (``one_model_draft_target`` False in their facts).
DRAFT_TARGET_TYPES: tuple[str, ...] = ("drafttarget", "draftmodel", "pearl")
#: Golden-curve method per ``decoding_type`` (lower-cased).
CURVE_METHODS: dict[str, str] = {
    "mtp": "mtp", "eagle3": "eagle3", "dflash": "dflash", "dspark": "dspark", "ngram": "ngram",
    "drafttarget": "draft-model", "draft-target": "draft-model", "pard": "pard", "medusa": "medusa",
    "pearl": "draft-model", "sa": "suffix",
}
CAVEAT_GREEDY_ONLY = (
    "TensorRT-LLM's two-model path forces acceptance only for greedy requests "
    "(TorchSampler._process_draft_tokens_greedy); sampled and tree requests run real acceptance, "
    "so the forced value does not apply to them"
)
CAVEAT_INT_ONLY = (
    f"the two-model path reads {ENV_FORCE} with int(): a fractional value (or '2.0') fails and silently "
    "disables forcing"
)


def draft_len(speculative_config: Mapping[str, Any]) -> plugin.DraftLen:
    """``k = speculative_config.max_draft_len``.

    For ``decoding_type: MTP`` TensorRT-LLM sets ``max_draft_len`` to
    ``num_nextn_predict_layers`` (``llm_args.py``
    ``MTPDecodingConfig.set_max_total_draft_tokens``), so that key gives k there, with or
    without ``max_draft_len``.
    """
    decoding = str(speculative_config.get(DECODING_TYPE) or "").strip().lower()
    layers = plugin.int_flag(speculative_config.get(MTP_LAYERS), MTP_LAYERS)
    if decoding == "mtp" and layers is not None:
        return plugin.DraftLen(units.check_draft_len(layers), f"{MTP_LAYERS} (MTP)", chain=True)
    k = plugin.int_flag(speculative_config.get(MAX_DRAFT_LEN), MAX_DRAFT_LEN)
    if k is None:
        raise plugin.UsageError(f"TensorRT-LLM {SPEC_CONFIG_KEY} has no {MAX_DRAFT_LEN}",
                                hint=f"set {MAX_DRAFT_LEN} (MTP: {MTP_LAYERS})")
    return plugin.DraftLen(units.check_draft_len(k), MAX_DRAFT_LEN, chain=True)


def two_model_path(speculative_config: Mapping[str, Any]) -> bool | None:
    """Whether the config runs the two-model path (True), the one-model path (False), or unknown (None).

    By the newest tree read: ``NGram`` runs two-model; Eagle3/MTP-Eagle follow
    ``eagle3_one_model``/``mtp_eagle_one_model``; MTP, Eagle3, DFlash, DSpark, PARD, SA, DraftTarget and
    PEARL default to one-model (DraftTarget ran two-model in older trees: :func:`path_at`).
    """
    dtype = str(speculative_config.get(DECODING_TYPE, "")).lower().replace("_", "").replace("-", "")
    one_model = next((speculative_config[key] for key in ONE_MODEL_KEYS if key in speculative_config), None)
    if dtype in TWO_MODEL_TYPES:
        return True
    if one_model is not None:
        return str(one_model).strip().lower() in ("false", "0", "no")
    if dtype in ONE_MODEL_TYPES:
        return False
    return None


#: Keys of a recipe role's arguments that may hold the speculative config (its own first).
RECIPE_SPEC_KEYS: tuple[str, ...] = (SPEC_CONFIG_KEY, "speculative-config")


def read_recipe_role(args: Mapping[str, Any]) -> plugin.Speculation | None:
    """One srt-slurm role's ``speculative_config`` mapping; None: no non-empty one."""
    key = next((k for k in RECIPE_SPEC_KEYS if isinstance(args.get(k), Mapping) and args[k]), None)
    if key is None:
        return None
    trt = args[key]
    decoding = trt.get(DECODING_TYPE)
    draft = next((trt[k] for k in DRAFT_MODEL_KEYS if trt.get(k)), None)
    inputs = {k: trt[k] for k in (MAX_DRAFT_LEN, MTP_LAYERS) if k in trt}
    review = {k: trt[k] for k in (PEARL_ADAPTIVE, *ACCEPTANCE_SETTINGS, *ONE_MODEL_KEYS) if k in trt}
    return plugin.Speculation("trtllm", str(decoding) if decoding else None, trt, key, draft,
                              draft_inputs=inputs or {MAX_DRAFT_LEN: None}, review_spec=review)


def script_speculation(flags: Mapping[str, Any]) -> plugin.Speculation | None:
    """:func:`read_recipe_role` of the ``speculative_config`` keys a script writes into its config file."""
    return read_recipe_role({SPEC_CONFIG_KEY: {k: flags[k] for k in SPEC_KEYS if k in flags}})


def settings_draft_len(spec: plugin.Speculation | None) -> plugin.DraftLen:
    """k of :func:`read_recipe_role`'s config (:func:`draft_len`), with its one/two-model path.

    Raises:
        UsageError: no config, or one that does not fix k.
    """
    if spec is None:
        raise plugin.UsageError(f"no {SPEC_CONFIG_KEY}")
    d = draft_len(spec.settings)
    two = two_model_path(spec.settings)
    path = "two-model" if two else ("one-model" if two is False else "unknown")
    return replace(d, described=f"TensorRT-LLM {MAX_DRAFT_LEN}={d.k} ({spec.settings.get(DECODING_TYPE, '?')}, "
                                f"{path} path)", algorithm=spec.algorithm, two_model=two)


def _forced_off(value: str) -> bool:
    """TensorRT-LLM forces acceptance for any value of its variable but 0 (garbage too: it fails loudly)."""
    number = plugin.parse_number(value.strip().strip("'\""))
    return number is not None and number == 0


def synthetic_settings(al: float, k: int) -> dict[str, Any]:
    """``{"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "3.05"}`` (AL - 1).

    Raises:
        UsageError: AL 1.0, whose value 0 means "off".
    """
    al = units.check_al(al, k)
    forced = units.drafts_from_al(al)
    if forced == 0.0:
        raise plugin.UsageError("TensorRT-LLM cannot force AL 1.0: its value would be 0, which disables forcing")
    return {ENV_FORCE: plugin.format_value(forced)}


def review_pin(knob: str, raw: str, value: float | None, k: int | None, *, two_model: bool | None) -> plugin.PinReview:
    """TensorRT-LLM's rules for a forced count ``value`` (AL - 1; ``interface.py``, ``sampler.py``)."""
    r = plugin.PinReview()
    if value is None:
        r.problems.append(("unsafe-value", f"{knob}={raw!r} is not a number: TensorRT-LLM reads it as 0 "
                                           "and forcing is off"))
        return r
    if value <= 0:
        r.problems.append(("unsafe-value", f"{knob}={raw} {'is 0, which' if value == 0 else 'is negative and'} "
                                           "disables forcing (an AL of 1 cannot be forced)"))
        return r
    if not float(value).is_integer():
        if two_model:
            r.problems.append(("unsafe-value", f"{knob}={raw} is fractional on TensorRT-LLM's two-model path, "
                                               "where int() fails and forcing silently turns off"))
        elif two_model is None:
            r.notes.append("fractional values work only on TensorRT-LLM's one-model path; the path is not known")
    if two_model:
        r.notes.append(CAVEAT_GREEDY_ONLY)
    al = units.al_from_drafts(value)
    if k is not None and al > k + 1 + 1e-9:
        r.problems.append(("unsafe-value", f"{knob}={raw} means AL {plugin.format_value(al)} > k+1 = {k + 1}; "
                                           "TensorRT-LLM caps it"))
    r.notes.append(f"TensorRT-LLM counts draft tokens only: AL = {raw} + 1")
    r.al = al
    return r


def simulator_settings(sampler: Any, al: float | None, k: int) -> dict[str, Any]:
    """The env var a :mod:`golden_al.engines.trtllm.sampler` sampler stands for, and how its path reads it."""
    from .sampler import parse_one_model, parse_two_model, trtllm_env_value

    al, k = sampler.check(al, k)
    env = trtllm_env_value(al)
    read = parse_one_model(env) if sampler.path == "one-model" else parse_two_model(env)
    return {ENV_FORCE: env, "value_as_read": read, "path": sampler.path, MAX_DRAFT_LEN: k}


def simulate_report(sampler: Any, al: float, k: int, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``simulate``'s TensorRT-LLM fields: the path, the forced value and the long-run mean it gives."""
    return {"trtllm_path": sampler.path, ENV_FORCE: settings[ENV_FORCE], "long_run_mean": sampler.long_run_mean(al, k)}

def _normal(decoding: str | None) -> str:
    return str(decoding or "").strip().lower().replace("_", "").replace("-", "")


def path_at(decoding: str | None, two_model: bool | None, version: plugin.EngineVersion | None) -> bool | None:
    """Whether the two-model path runs, by the judged version's facts: :func:`two_model_path` follows the newest
    tree (DraftTarget and PEARL one-model); an older tree's facts run DraftTarget two-model."""
    kind = _normal(decoding)
    if version is not None and version.facts.get("one_model_draft_target") is False and kind in DRAFT_TARGET_TYPES:
        return True
    return two_model


def _review(ctx: plugin.PinContext) -> plugin.PinReview:
    """:func:`review_pin` on the gate's :class:`PinContext`, by the judged version's facts; PEARL's adaptive
    draft length and the acceptance settings forcing does or does not override are reviewed here."""
    two = path_at(ctx.algorithm, ctx.two_model, ctx.version)
    review = review_pin(ctx.knob, ctx.raw, ctx.value, ctx.k, two_model=two)
    if _normal(ctx.algorithm) == "pearl" and str(ctx.spec.get(PEARL_ADAPTIVE, True)).strip().lower() not in (
            "false", "0", "no"):
        review.problems.append(("unsafe-value", f"PEARL picks its draft length per batch size at run time "
                                                f"({PEARL_ADAPTIVE}, default true; {_LLM_ARGS_NEWEST.path} at "
                                                f"{_NEWEST}): a golden AL is per fixed k"))
    seen = [k for k in ACCEPTANCE_SETTINGS if k in ctx.spec and str(ctx.spec[k]).strip().lower()
            not in ("false", "0", "no", "none", "null", "")]
    if seen and two:
        review.problems.append(("unsafe-value", f"{', '.join(seen)} on the two-model path: its forcing applies to "
                                                "greedy non-tree requests only, so these run real acceptance"))
    elif seen:
        review.notes.append(f"{', '.join(seen)} left alone: the one-model path's forced count replaces the accepted "
                            "count whatever the acceptance rule or tree (interface.py "
                            "SpecWorkerBase._apply_force_accepted_tokens)")
    return review



def env_draft_len(algorithm: str | None, values: Mapping[str, int]) -> plugin.DraftLen:
    """k from ``golden-al env --max-draft-len N``: N itself."""
    return plugin.DraftLen(int(values["max_draft_len"]), "--max-draft-len N")


PROFILE = plugin.EngineProfile(
    name="trtllm",
    frameworks=("dynamo-trt", "dynamo-trtllm", "trt", "trtllm"),
    aliases=("trt-llm",),
    display_name="TensorRT-LLM",
    algorithms=("MTP", "Eagle3", "Eagle", "DFlash", "DSpark", "NGram", "DraftTarget", "PARD", "SA", "PEARL"),
    versions=VERSIONS,
    version_patterns=VERSION_PATTERNS,
    draft_len_rules=(
        plugin.DraftLenRule("MTP", f"k = {MTP_LAYERS} (or {MAX_DRAFT_LEN})", True, _LLM_ARGS),
        plugin.DraftLenRule("*", f"k = {SPEC_CONFIG_KEY}.{MAX_DRAFT_LEN}", True, _LLM_ARGS),
    ),
    caveats=(
        plugin.Caveat(CAVEAT_GREEDY_ONLY, ("two-model", "simulate", "env", "check"), _SAMPLER),
        plugin.Caveat(CAVEAT_INT_ONLY, ("two-model", "env", "check", "inject"), _INTERFACE),
        plugin.Caveat(f"{ENV_FORCE}=0 means off: AL 1.0 cannot be forced", (), _INTERFACE),
    ),
    sources=(_INTERFACE, _SAMPLER, _LLM_ARGS),
    curve_methods=CURVE_METHODS,
    env_prefixes=ENV_PREFIXES,
    check=plugin.CheckSupport(
        env_options=(plugin.EnvOption("--max-draft-len", f"TensorRT-LLM {MAX_DRAFT_LEN} (k = N)"),),
        env_draft_len=env_draft_len,
        review_pin=_review,
        settings_draft_len=settings_draft_len,
        script_speculation=script_speculation,
        script_settings="the TensorRT-LLM config written by the script",
        script_config_keys=SPEC_KEYS,
        synthetic_knobs=(plugin.SyntheticKnob(ENV_FORCE, "env", "al-1", source=_INTERFACE, env_off=_forced_off),),
        runtime_draft_len=(
            plugin.RuntimeDraftLen(("draft_len_schedule",), "chooses max_draft_len by batch size at run time", _DRAFTER),
            plugin.RuntimeDraftLen(("max_concurrency",), "turns speculation off (k = 0) at batch sizes above it, so a run at "
                                   "a higher concurrency realizes AL 1, not the pin", _LLM_ARGS_GATES),
            plugin.RuntimeDraftLen(("acceptance_length_threshold",), "turns speculation off for good once the rolling AL of "
                                   "the last acceptance_window requests drops below it; a synthetic run's realized AL varies "
                                   "around the pin, so the run can lose speculation part way", _LLM_ARGS_GATES,
                                   unsafe=_threshold_unsafe),
        ),
        synthetic_settings=synthetic_settings,
    ),
    server=plugin.ServerSupport(
        al_sources=("trtllm-iteration-stats", "trtllm-perf-metrics"),
        source_impls={"trtllm-iteration-stats": plugin.lazy(f"{__name__}.server:TrtllmIterationSource"),
                      "trtllm-perf-metrics": plugin.lazy(f"{__name__}.server:TrtllmPerfMetricsSource")},
        server_probe=plugin.lazy(f"{__name__}.server:probe"),
        reference_flavor=plugin.lazy(f"{__name__}.reference:TrtllmFlavor"),
    ),
    simulate=plugin.SimulateSupport(
        default_sampler="force",
        samplers={"force": plugin.lazy(f"{__name__}.sampler:TrtllmForce")},
        simulator_settings=simulator_settings,
        simulate_options=(plugin.SimulateOption(
            "--trtllm-path", "path", choices=("one-model", "two-model"),
            help="one-model (float reader; default) or two-model (int() reader)"),),
        simulate_report=simulate_report,
    ),
    run_logs=plugin.RunLogSupport(
        run_evidence=plugin.lazy(f"{__name__}.evidence:read"),
        importers={"trtllm-iteration-log": plugin.lazy(f"{__name__}.imported:import_trtllm_iterations")},
    ),
    recipe=plugin.RecipeFormat(RECIPE_CONFIG_KEY, RECIPE_BACKEND_TYPES, read_recipe_role, spec_keys=RECIPE_SPEC_KEYS),
)
