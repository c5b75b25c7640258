"""SGLang: everything golden-al knows about it, in one place.

Upstream (sgl-project/sglang, 0.5.23 unless noted):

* ``python/sglang/srt/environ.py``: the simulate-acceptance environment variables, read
  once at import (so they must be in the server's launch environment).
* ``python/sglang/srt/arg_groups/speculative_hook.py``: how the draft length follows
  from ``--speculative-algorithm`` and its flags (:func:`draft_len`).
* ``python/sglang/srt/speculative/spec_utils.py``: the simulated sampler
  (reproduced in :mod:`golden_al.engines.sglang.sampler`).
* ``python/sglang/srt/managers/tokenizer_manager.py`` ``_calculate_spec_decoding_metrics``
  and ``schedule_batch.py`` ``Req.update_spec_correct_drafts_histogram``: the per-request
  ``meta_info`` fields (:func:`counts_from_meta_info`), with the 0.5.15.post1 and older
  aliases.
* ``python/sglang/srt/managers/scheduler_components/metrics_reporter.py``: the
  ``Decode batch`` log line; ``python/sglang/srt/observability/metrics_collector.py``: the metrics.
* ``python/sglang/srt/entrypoints/http_server.py``: ``GET /server_info``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from distributions import units
from distributions.counts import (
    AcceptanceCounts,
    Count,
    as_count,
    counts_close,
    format_count,
    from_histogram,
)
from distributions.errors import DistributionError
from golden_al import plugin

__all__ = ["ALGORITHMS", "ENV_LEN", "ENV_METHOD", "ENV_TOKEN_MODE", "LEGACY_ENV_LEN", "LEGACY_ENV_METHOD",
           "PROFILE", "biased_al", "counts_from_meta_info",
           "decode_window", "draft_len", "draft_len_from_server_info", "max_len",
           "normalize_algorithm", "require_lossless", "response_spec_metas", "spec_flags",
           "synthetic_settings"]

VERSION = "0.5.23"
_REPO = "sgl-project/sglang"
_ENVIRON = plugin.Source(_REPO, "python/sglang/srt/environ.py", VERSION)
_HOOK = plugin.Source(_REPO, "python/sglang/srt/arg_groups/speculative_hook.py", VERSION)
_TOKENIZER = plugin.Source(_REPO, "python/sglang/srt/managers/tokenizer_manager.py", VERSION)
_REPORTER = plugin.Source(_REPO, "python/sglang/srt/managers/scheduler_components/metrics_reporter.py", VERSION)
_COLLECTOR = plugin.Source(_REPO, "python/sglang/srt/observability/metrics_collector.py", VERSION)
_HTTP = plugin.Source(_REPO, "python/sglang/srt/entrypoints/http_server.py", VERSION)
_SPEC_UTILS = plugin.Source(_REPO, "python/sglang/srt/speculative/spec_utils.py", VERSION)
_ENGINE = plugin.Source(_REPO, "python/sglang/srt/entrypoints/engine.py", VERSION)
_BENCH = plugin.Source(_REPO, "python/sglang/benchmark/serving.py", "00f9ec47")

# ----------------------------------------------------------------- synthetic acceptance
ENV_LEN = "SGLANG_SIMULATE_ACC_LEN"
ENV_METHOD = "SGLANG_SIMULATE_ACC_METHOD"
ENV_TOKEN_MODE = "SGLANG_SIMULATE_ACC_TOKEN_MODE"
#: Older SGLang read these un-prefixed names; 0.5.23 no longer aliases them.
LEGACY_ENV_LEN = "SIMULATE_ACC_LEN"
LEGACY_ENV_METHOD = "SIMULATE_ACC_METHOD"
#: Prefixes of every simulate-acceptance variable, current and legacy.
ENV_PREFIXES: tuple[str, ...] = ("SGLANG_SIMULATE_", "SIMULATE_ACC_")
#: DSPARK refuses a simulated length unless the verify planner is verify-all.
ENV_RAGGED_VERIFY = "SGLANG_RAGGED_VERIFY_MODE"
METHODS: tuple[str, ...] = ("match-expected", "multinomial")
TOKEN_MODES: tuple[str, ...] = ("fixed", "real-draft-token")
DEFAULT_METHOD = "match-expected"
#: what golden-al writes and check requires; SGLang's own default (the variable unset) is :data:`UNSET_TOKEN_MODE`
DEFAULT_TOKEN_MODE = "real-draft-token"
#: ``SGLANG_SIMULATE_ACC_TOKEN_MODE`` unset (environ.py ``EnvStr("fixed")``): every simulated step emits token id 100
UNSET_TOKEN_MODE = "fixed"
#: DSpark opt-in (environ.py ``EnvBool(False)``, read by dspark_components/dspark_worker_v2.py): with a simulated
#: length, temperature-only requests draft and accept greedily and only the bonus token is temperature-sampled; the
#: length is still drawn by ``sample_simulated_acc_len`` (dspark_verify.py ``begin_simulated_step``)
ENV_GREEDY = "SGLANG_SIMULATE_ACC_GREEDY"
#: EnvBool's spellings (environ.py): any other value warns and reads as False
BOOL_SPELLINGS: dict[str, bool] = {"true": True, "1": True, "yes": True, "y": True,
                                   "false": False, "0": False, "no": False, "n": False}

# ----------------------------------------------------------------- launch flags
FLAG_ALGORITHM = "--speculative-algorithm"
FLAG_NUM_STEPS = "--speculative-num-steps"
FLAG_EAGLE_TOPK = "--speculative-eagle-topk"
FLAG_NUM_DRAFT_TOKENS = "--speculative-num-draft-tokens"
FLAG_DFLASH_BLOCK = "--speculative-dflash-block-size"
FLAG_DSPARK_BLOCK = "--speculative-dspark-block-size"
FLAG_DRAFT_MODEL = "--speculative-draft-model-path"
#: The draft-length flags, without the leading dashes, in the order messages show them.
DRAFT_FLAGS: tuple[str, ...] = tuple(f[2:] for f in (FLAG_NUM_STEPS, FLAG_EAGLE_TOPK, FLAG_NUM_DRAFT_TOKENS,
                                                     FLAG_DFLASH_BLOCK, FLAG_DSPARK_BLOCK))
FLAG_BLOCK_VERIFICATION = "--speculative-use-block-verification"
FLAG_SPS_TABLE = "--speculative-dspark-sps-table-path"
#: Flags that change the real AL without changing k (curve selectors, :func:`curve_selectors`).
SELECTOR_FLAGS: tuple[str, ...] = (FLAG_BLOCK_VERIFICATION[2:], FLAG_SPS_TABLE[2:])
#: Every speculative flag a recipe may override (plus the short ``speculative-algo`` spelling).
SPEC_FLAGS: tuple[str, ...] = ("speculative-algorithm", "speculative-algo", *DRAFT_FLAGS,
                               FLAG_DRAFT_MODEL[2:])
LAUNCH_MODULE = "sglang.launch_server"
#: srt-slurm recipes (NVIDIA srt-slurm ``srtctl`` schema, as in SemiAnalysisAI/InferenceX
#: ``benchmarks/multi_node/srt-slurm-recipes`` at 843c6254f): the ``backend`` key holding per-role
#: engine arguments, and the ``backend.type`` spellings of this engine.
RECIPE_CONFIG_KEY = "sglang_config"
RECIPE_BACKEND_TYPES: tuple[str, ...] = ("sglang",)

#: ``--speculative-algorithm`` values (upper-cased by SGLang) and their family.
ALGORITHMS: dict[str, str] = {
    "EAGLE": "eagle",
    "EAGLE3": "eagle",
    "NEXTN": "eagle",
    "STANDALONE": "eagle",
    "FROZEN_KV_MTP": "eagle",
    "UNO": "uno",
    "DFLASH": "dflash",
    "DSPARK": "dspark",
    "NGRAM": "ngram",
}

# ----------------------------------------------------------------- per-request fields
META_VERIFY = "spec_verify_ct"
#: ``meta_info`` aliases, newest first.
META_HISTOGRAM_KEYS: tuple[str, ...] = ("spec_correct_drafts_histogram", "spec_accept_histogram")
META_HISTOGRAM_OLDEST = "spec_acceptance_histogram"  # tokenizer_manager before 0.5
META_ACCEPTED_KEYS: tuple[str, ...] = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")
META_PROPOSED_KEYS: tuple[str, ...] = ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num")
META_ACCEPT_LENGTH = "spec_accept_length"
META_ACCEPT_RATE = "spec_accept_rate"
META_DETAILS = "spec_tokens_details"  # sglext.spec_tokens_details on the OpenAI endpoints
META_INFO = "meta_info"
#: The OpenAI endpoints' extension object that holds :data:`META_DETAILS`.
META_EXTENSION = "sglext"

_FIELD_NAMES = {
    "num_verify_steps": META_VERIFY,
    "num_accepted_drafts": META_ACCEPTED_KEYS[0],
    "num_draft_tokens": META_PROPOSED_KEYS[0],
    "histogram": META_HISTOGRAM_KEYS[0],
}

# ----------------------------------------------------------------- metrics
METRIC_VERIFY_CALLS = "sglang:spec_verify_calls_total"
METRIC_GENERATION_TOKENS = "sglang:generation_tokens_total"
METRIC_NUM_REQUESTS = "sglang:num_requests_total"
METRIC_ACCEPT_LENGTH = "sglang:spec_accept_length"
METRIC_ACCEPT_RATE = "sglang:spec_accept_rate"
METRIC_SPEC_PREFIX = "sglang:spec_"

# ----------------------------------------------------------------- server info
#: ``GET /server_info`` (``/get_server_info`` before 0.5): the server args it returns.
SERVER_INFO_PATHS: tuple[str, ...] = ("/server_info", "/get_server_info")
SERVER_INFO_FIELDS: dict[str, str] = {
    "algorithm": "speculative_algorithm",
    "num_steps": "speculative_num_steps",
    "eagle_topk": "speculative_eagle_topk",
    "num_draft_tokens": "speculative_num_draft_tokens",
    "dflash_block_size": "speculative_dflash_block_size",
    "dspark_block_size": "speculative_dspark_block_size",
    "draft_model": "speculative_draft_model_path",
    "served_model_name": "served_model_name",
    "model_path": "model_path",
    "tp_size": "tp_size",
    # python/sglang/srt/server_args.py (sgl-project/sglang 469c63e5): "adaptive speculative decoding that
    # dynamically adjusts num_steps based on acceptance rate" -- one run mixes draft lengths
    "adaptive": "speculative_adaptive",
    # python/sglang/srt/server_args.py (0.5.23): "Accept a draft token if its probability in the target model is
    # greater than this threshold" (default 1.0); below 1 acceptance is lossy and the measured AL is inflated
    "accept_threshold_single": "speculative_accept_threshold_single",
    "accept_threshold_acc": "speculative_accept_threshold_acc",
    "block_verification": "speculative_use_block_verification",
    "sps_table": "speculative_dspark_sps_table_path",
}
FLAG_ADAPTIVE = "--speculative-adaptive"

#: ``/server_info`` (``python/sglang/srt/entrypoints/http_server.py``; ``scheduler_components/internal_state.py``):
#: ``internal_states[0].avg_spec_accept_length`` advances at each decode-log interval.
INFO_INTERNAL_STATES = "internal_states"
INFO_AVG_ACCEPT_LENGTH = "avg_spec_accept_length"
INFO_VERSION = "version"
INFO_DP_SIZE = "dp_size"
INFO_DECODE_LOG_INTERVAL = "decode_log_interval"
DEFAULT_DECODE_LOG_INTERVAL = 40  # arg_groups/fields/observability.py
#: ``meta_info`` of ``/generate`` (``tokenizer_manager.py``) and the OpenAI ``choices[i].meta_info``.
META_COMPLETION_TOKENS = "completion_tokens"

# ----------------------------------------------------------------- log line
#: The decode log line as 0.5.23 prints it (``metrics_reporter.py``), for ``serve-reference`` to imitate.
LOG_DECODE_BATCH_FORMAT = (
    "[{time} TP0] Decode batch, #running-req: {running}, #token: {tokens}, token usage: 0.00, accept len: "
    "{accept_len:.2f}, accept rate: {accept_rate:.2f}, cpu graph: False, gen throughput (token/s): {throughput:.2f}, "
    "#queue-req: 0"
)
#: The start-up line with the speculative server args (``server_args.py``), abridged.
LOG_SERVER_ARGS_FORMAT = (
    "[{time}] server_args=ServerArgs(model_path={model!r}, speculative_algorithm={algorithm!r}, "
    "speculative_num_steps={steps}, speculative_eagle_topk=1, speculative_num_draft_tokens={draft_tokens})"
)
_NUM = plugin.LOG_NUMBER
LOG_PATTERNS: tuple[plugin.LogPattern, ...] = (
    plugin.LogPattern("decode-head",
                      r"Decode batch(?: \[(?P<iter>\d+)\])?[.,] #running-req: (?P<running>\d+), (?P<body>.*)$",
                      '"Decode batch{iter_msg}, #running-req: {n}, " (0.5.15.post1 / 0.5.23; older: "Decode batch. ")',
                      _REPORTER, marker='Decode batch'),
    plugin.LogPattern("accept", rf"(?:^|, )accept len: (?P<len>{_NUM})(?:, accept rate: (?P<rate>{_NUM}))?(?=,|$)",
                      '"accept len: {spec_accept_length:.2f}, accept rate: {spec_accept_rate:.2f}"', _REPORTER),
    plugin.LogPattern("cap", rf"(?:^|, )cap len: (?P<v>{_NUM})(?=,|$)", '"cap len: {spec_cap_length:.2f}"', _REPORTER),
    plugin.LogPattern("block-accept", rf"(?:^|, )block accept len: (?P<v>{_NUM})(?=,|$)",
                      '"block accept len: {spec_block_accept_length:.2f}"', _REPORTER),
    plugin.LogPattern("dspark-estimate", rf"est uncap acc len: (?P<mid>{_NUM}) \[(?P<lo>{_NUM}), (?P<hi>{_NUM})\]",
                      'DSpark "est uncap acc len: {mid:.2f} [{lo:.2f}, {hi:.2f}]"', _REPORTER),
    plugin.LogPattern("tail",
                      rf"(?:(?P<graph_kind>cuda|cpu|npu|musa) graph: (?P<graph>True|False), )?"
                      rf"gen throughput \(token/s\): (?P<gen>{_NUM}), #queue-req: (?P<queue>\d+)",
                      '"{cuda|cpu|npu|musa} graph: {bool}, gen throughput (token/s): {x:.2f}, #queue-req: {n}"', _REPORTER),
    plugin.LogPattern("pd-decode",
                      rf"(?:^|, )(?P<key>pre-allocated usage|#prealloc-req|#transfer-req|#host-receive-req|#retracted-req): "
                      rf"(?P<v>{_NUM})(?=,|$)",
                      "PD-decode parts (pre-allocated usage, #prealloc-req, #transfer-req, #retracted-req)", _REPORTER),
    plugin.LogPattern("token-usage", rf"(?P<key>[#A-Za-z][A-Za-z #_-]*?): (?P<v>{_NUM})(?=,|$)",
                      '"{key}: {value}" pairs before "accept len" (pool_stats_observer.py)', _REPORTER),
    plugin.LogPattern("dp-rank", r"\bDP(?P<dp>\d+)\b", "the data-parallel rank prefix", _REPORTER),
    # python/sglang/srt/entrypoints/engine.py (0.5.23 and 0.4.x): logger.info(f"{server_args=}") at start-up,
    # the dataclass repr of every server argument: "server_args=ServerArgs(model_path='...', tp_size=1, ...)"
    plugin.LogPattern("server-args", r"server_args=ServerArgs\((?P<body>.*)\)\s*$",
                      '"server_args=ServerArgs(key=value, ...)" at start-up', _ENGINE, marker="server_args=ServerArgs("),
)


# ----------------------------------------------------------------- lossless acceptance
def require_lossless(args: Mapping[str, Any], where: str) -> None:
    """Refuse a server whose arguments (``/server_info``, a bench file's ``server_info``) make
    acceptance lossy: ``speculative_accept_threshold_single``/``_acc`` below 1.0 accept drafts the
    target would reject, so its AL is inflated. An absent field is SGLang's default 1.0 (versions
    before the flags).

    Raises:
        LossyAcceptanceError: a threshold below 1.0 (each named with its value).
        UsageError: a threshold that is not a number (named).
    """
    lossy = []
    for key in ("accept_threshold_single", "accept_threshold_acc"):
        name = SERVER_INFO_FIELDS[key]
        if name not in args or args[name] is None:
            continue
        value = args[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise plugin.UsageError(f"the server's {name} is {value!r}, not a number", hint="is this SGLang's /server_info?")
        if value < 1.0:
            lossy.append(f"{name}={value:g}")
    if lossy:
        raise plugin.LossyAcceptanceError(
            f"{where}: the SGLang server accepts lossily ({', '.join(lossy)}, below 1.0): it accepts drafts the target "
            "would not produce, so its AL is inflated and is not a golden value",
            hint="use a server started without --speculative-accept-threshold-single/-acc (both default to 1.0)")


# ----------------------------------------------------------------- draft length
def normalize_algorithm(algorithm: str) -> str:
    """Upper-case an SGLang ``--speculative-algorithm`` value and check it is known."""
    name = str(algorithm).strip().upper().replace("-", "_")
    if name not in ALGORITHMS:
        raise plugin.UsageError(
            f"unknown SGLang speculative algorithm {algorithm!r}",
            hint="one of " + ", ".join(a.lower() for a in ALGORITHMS),
        )
    return name


def draft_len(
    algorithm: str,
    *,
    num_steps: Any = None,
    eagle_topk: Any = None,
    num_draft_tokens: Any = None,
    dflash_block_size: Any = None,
    dspark_block_size: Any = None,
) -> plugin.DraftLen:
    """Draft length ``k`` from SGLang's flags (``speculative_hook.py``).

    * EAGLE/EAGLE3/NEXTN/STANDALONE: ``k = speculative_num_steps`` (topk 1 forces
      ``num_draft_tokens = steps + 1``; topk > 1 is a tree of depth ``steps``).
    * DFLASH: ``k = num_draft_tokens - 1`` (== ``dflash_block_size - 1``; block 8 holds
      the verified token plus 7 drafts).
    * DSPARK: ``k = dspark_block_size`` (gamma); ``num_draft_tokens`` is forced to gamma+1.
    * NGRAM: ``k = num_draft_tokens - 1``.
    * UNO (linear, topk 1): ``k = num_draft_tokens - 1``; SGLang forces ``num_steps`` to 1.

    Raises:
        UsageError: when the flags are contradictory or do not determine ``k`` (SGLang
            would then pick a value from the checkpoint or its own defaults).
    """
    algo = normalize_algorithm(algorithm)
    family = ALGORITHMS[algo]
    steps = plugin.int_flag(num_steps, FLAG_NUM_STEPS[2:])
    topk = plugin.int_flag(eagle_topk, FLAG_EAGLE_TOPK[2:])
    ndt = plugin.int_flag(num_draft_tokens, FLAG_NUM_DRAFT_TOKENS[2:])
    dfb = plugin.int_flag(dflash_block_size, FLAG_DFLASH_BLOCK[2:])
    dsb = plugin.int_flag(dspark_block_size, FLAG_DSPARK_BLOCK[2:])
    if family == "eagle":
        if steps is None:
            raise plugin.UsageError(
                f"SGLang {algo} without {FLAG_NUM_STEPS}: SGLang auto-chooses the draft length",
                hint=f"pin {FLAG_NUM_STEPS} K (with {FLAG_EAGLE_TOPK} 1)",
            )
        if steps < 1:
            raise plugin.UsageError(f"{FLAG_NUM_STEPS[2:]} must be >= 1, got {steps}")
        # With topk 1 SGLang silently adjusts num_draft_tokens to steps + 1.
        return plugin.DraftLen(steps, FLAG_NUM_STEPS[2:], chain=topk in (None, 1))
    if family == "uno":
        return _uno_draft_len(ndt, topk)
    if family == "dflash":
        if dfb is not None and ndt is not None and dfb != ndt:
            raise plugin.UsageError(
                f"DFLASH block size {dfb} != num-draft-tokens {ndt}: SGLang rejects this",
                hint=f"{FLAG_DFLASH_BLOCK} is an alias of {FLAG_NUM_DRAFT_TOKENS}",
            )
        block = ndt if ndt is not None else dfb
        if block is None:
            raise plugin.UsageError(
                f"SGLang DFLASH without {FLAG_NUM_DRAFT_TOKENS}: the block size comes from the checkpoint",
                hint=f"pin {FLAG_NUM_DRAFT_TOKENS} K+1",
            )
        if block < 2:
            raise plugin.UsageError(f"DFLASH block size must be >= 2, got {block}")
        rule = "num-draft-tokens - 1" if ndt is not None else "dflash-block-size - 1"
        return plugin.DraftLen(block - 1, rule, chain=True)
    if family == "dspark":
        if dsb is not None:
            if ndt is not None and ndt != dsb + 1:
                raise plugin.UsageError(
                    f"DSPARK block size {dsb} needs num-draft-tokens {dsb + 1}, got {ndt}: SGLang rejects this"
                )
            return plugin.DraftLen(dsb, "dspark-block-size", chain=True)
        if ndt is not None:
            return plugin.DraftLen(ndt - 1, "num-draft-tokens - 1", chain=True)
        raise plugin.UsageError(
            f"SGLang DSPARK without {FLAG_DSPARK_BLOCK}: gamma comes from the checkpoint (default 7)",
            hint=f"pin {FLAG_DSPARK_BLOCK} K",
        )
    if ndt is None:
        raise plugin.UsageError(f"SGLang NGRAM needs {FLAG_NUM_DRAFT_TOKENS} to fix the draft length")
    return plugin.DraftLen(ndt - 1, "num-draft-tokens - 1", chain=False)


def _uno_draft_len(ndt: int | None, topk: int | None) -> plugin.DraftLen:
    """UNO's k. ``UnoWorkerV2`` (python/sglang/srt/speculative/uno_worker_v2.py, main after 0.5.23) is one
    model (the target with a drafting LoRA); topk 1 decodes linearly over speculative_num_draft_tokens slots,
    the verified token plus num_draft_tokens - 1 drafts, with num_steps forced to 1; topk > 1 is a tree."""
    if ndt is None:
        raise plugin.UsageError(f"SGLang UNO without {FLAG_NUM_DRAFT_TOKENS}: UNO requires it (k = it - 1)",
                                hint=f"pin {FLAG_NUM_DRAFT_TOKENS} K+1")
    if ndt < 2:
        raise plugin.UsageError(f"UNO {FLAG_NUM_DRAFT_TOKENS[2:]} must be >= 2, got {ndt}")
    return plugin.DraftLen(ndt - 1, "num-draft-tokens - 1 (UNO, num-steps forced to 1)", chain=topk in (None, 1))


def draft_len_from_flags(algorithm: str, flags: Mapping[str, Any]) -> plugin.DraftLen:
    """:func:`draft_len` from flags named without dashes (``speculative-num-steps``) or as server arguments
    (``speculative_num_steps``, ``/server_info``)."""
    return draft_len(algorithm, **{key: flags.get(SERVER_INFO_FIELDS[key], flags.get(SERVER_INFO_FIELDS[key].replace(
        "_", "-"))) for key in ("num_steps", "eagle_topk", "num_draft_tokens", "dflash_block_size", "dspark_block_size")})


#: Recipe keys of a role's speculative flags (dash spelling; ``_`` spellings are read too).
_RECIPE_KEYS: tuple[str, ...] = (*SPEC_FLAGS, FLAG_DRAFT_MODEL[2:].removesuffix("-path"), *SELECTOR_FLAGS)


def read_recipe_role(args: Mapping[str, Any]) -> plugin.Speculation | None:
    """One srt-slurm role's speculative flags (``speculative_num_steps`` read as ``speculative-num-steps``);
    None: the role has no speculative flag. A draft-length flag without an algorithm starts nothing."""
    flags: dict[str, Any] = {}
    for key in _RECIPE_KEYS:
        for spelling in (key, key.replace("-", "_")):
            if spelling in args:
                flags[key] = args[spelling]
    if not flags:
        return None
    algo = flags.get(SPEC_FLAGS[0], flags.get(SPEC_FLAGS[1]))
    inputs = {FLAG_ALGORITHM: algo, **{f"--{k}": v for k, v in flags.items() if k not in SELECTOR_FLAGS}}
    return plugin.Speculation("sglang", str(algo) if algo else None, flags, None, flags.get(FLAG_DRAFT_MODEL[2:]),
                              speculates=bool(algo), draft_inputs=inputs,
                              review_spec={"topk": flags.get(FLAG_EAGLE_TOPK[2:]),
                                           **{key: flags[f] for key, f in _SELECTOR_SPEC.items() if f in flags}})


#: :func:`curve_selectors`'s ``spec`` keys and the flags they are read from.
_SELECTOR_SPEC = {"block_verification": FLAG_BLOCK_VERIFICATION[2:], "sps_table": FLAG_SPS_TABLE[2:]}


def script_speculation(flags: Mapping[str, Any]) -> plugin.Speculation | None:
    """:func:`read_recipe_role` of the speculative ``--flags`` among a script's launch flags."""
    return read_recipe_role({k[2:]: v for k, v in flags.items()
                             if k.startswith("--") and k[2:] in (*SPEC_FLAGS, *SELECTOR_FLAGS)})


#: sgl-project/sglang (main, 2026-12) ``python/sglang/srt/arg_groups/speculative_hook.py`` (block verification
#: for EAGLE/EAGLE3/NEXTN/DFLASH/DSPARK, topk 1, not with accept thresholds) and
#: ``python/sglang/srt/speculative/dspark_sps_table.py`` (the verify planner's cost table; ``const`` is the
#: flat table, whose budget is verify-all).
SELECTOR_KEYS: dict[str, str] = {
    "verification": f"block: {FLAG_BLOCK_VERIFICATION} (the drafts verified jointly, not token by token)",
    "dspark_sps_table": f"the DSpark verify planner's cost table ({FLAG_SPS_TABLE}, by file name) where the "
                        f"planner is not verify-all ({ENV_RAGGED_VERIFY} other than static)",
}
_TRUE = ("", "true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def curve_selectors(spec: Mapping[str, Any], k: int | None) -> dict[str, str]:
    """The curve selectors of a role's flags (``spec``: ``block_verification``, ``sps_table``,
    ``ragged_verify_mode``, as :func:`read_recipe_role` and the gate gather them).

    Raises:
        UsageError: a flag value that cannot be read (a boolean that is not one, an unresolved path).
    """
    out: dict[str, str] = {}
    block = spec.get("block_verification")
    if block is not None:
        text = str(block).strip().lower()
        if isinstance(block, bool):
            on = block
        elif text in _TRUE or text.startswith("-"):  # a bare flag: the script reader took the next flag as value
            on = True
        elif text in _FALSE:
            on = False
        else:
            raise plugin.UsageError(f"{FLAG_BLOCK_VERIFICATION}={block!r} is not a boolean")
        if on:
            out["verification"] = "block"
    table = spec.get("sps_table")
    mode = str(spec.get("ragged_verify_mode") or "").strip().lower()
    if table is not None and mode != "static":
        text = str(table).strip()
        if not text or "$" in text or text.startswith("-"):
            raise plugin.UsageError(f"{FLAG_SPS_TABLE}={table!r} cannot be read here: the table chooses the curve",
                                    hint="write the table's path in the file")
        name = text.replace("\\", "/").rsplit("/", 1)[-1]
        if name.lower() != "const":  # the flat table: verify-all, as without one
            out["dspark_sps_table"] = plugin.selector_text(name, "dspark_sps_table")
    return out


def settings_draft_len(spec: plugin.Speculation | None) -> plugin.DraftLen:
    """k of :func:`read_recipe_role`'s settings (:func:`draft_len_from_flags`), described with the values read.

    Raises:
        UsageError: no algorithm, or flags that do not fix k.
    """
    if spec is None or spec.algorithm is None:
        raise plugin.UsageError(f"no {FLAG_ALGORITHM}")
    name = normalize_algorithm(spec.algorithm)
    d = draft_len_from_flags(name, spec.settings)
    shown = ", ".join(f"{k}={spec.settings[k]}" for k in DRAFT_FLAGS if k in spec.settings)
    return replace(d, described=f"SGLang {name} {d.rule} ({shown})", algorithm=name)


def draft_len_from_server_info(info: Mapping[str, Any]) -> plugin.DraftLen:
    """:func:`draft_len` from a ``GET /server_info`` body (its ``speculative_*`` args)."""
    return draft_len_from_flags(str(info.get(SERVER_INFO_FIELDS["algorithm"])), info)


def max_len(algorithm: str, k: int) -> int:
    """The simulator clamp ``max_len`` for draft length ``k`` (always ``k + 1``).

    EAGLE family ``steps + 1``; DFLASH ``block_size``; DSPARK ``gamma + 1``; NGRAM
    ``num_draft_tokens``: with the draft-length rules above each is ``k + 1``.
    """
    normalize_algorithm(algorithm)
    return units.check_draft_len(k) + 1


def spec_flags(algorithm: str, k: int) -> list[str]:
    """The launch flags that ask for draft length ``k`` (chain, topk 1)."""
    algo = normalize_algorithm(algorithm)
    k = units.check_draft_len(k)
    family = ALGORITHMS[algo]
    base = [FLAG_ALGORITHM, algo]
    if family == "eagle":
        return [*base, FLAG_NUM_STEPS, str(k), FLAG_EAGLE_TOPK, "1", FLAG_NUM_DRAFT_TOKENS, str(k + 1)]
    if family == "dspark":
        return [*base, FLAG_DSPARK_BLOCK, str(k)]
    return [*base, FLAG_NUM_DRAFT_TOKENS, str(k + 1)]


def synthetic_settings(al: float, k: int, *, method: str = DEFAULT_METHOD,
                       token_mode: str = DEFAULT_TOKEN_MODE) -> dict[str, Any]:
    """``{SGLANG_SIMULATE_ACC_LEN: "4.05", _METHOD: "match-expected", _TOKEN_MODE: "real-draft-token"}``."""
    al = units.check_al(al, k)
    if method not in METHODS:
        raise plugin.UsageError(f"unknown SGLang method {method!r}", hint=" or ".join(METHODS))
    if token_mode not in TOKEN_MODES:
        raise plugin.UsageError(f"unknown SGLang token mode {token_mode!r}", hint=" or ".join(TOKEN_MODES))
    return {ENV_LEN: plugin.format_value(al), ENV_METHOD: method, ENV_TOKEN_MODE: token_mode}


def simulator_settings(sampler: Any, al: float | None, k: int) -> dict[str, Any]:
    """The env vars and flags a :mod:`golden_al.engines.sglang.sampler` sampler stands for."""
    al, k = sampler.check(al, k)
    out: dict[str, Any] = {ENV_LEN: plugin.format_value(al), ENV_METHOD: sampler.method}
    family = ALGORITHMS[normalize_algorithm(sampler.algorithm)]
    if family != "dspark":  # DSPARK does not read it; NGRAM runs only 'fixed' (real-draft-token needs topk 1)
        out[ENV_TOKEN_MODE] = UNSET_TOKEN_MODE if family == "ngram" else DEFAULT_TOKEN_MODE
    flags = spec_flags(sampler.algorithm, k)
    out.update(zip(flags[::2], flags[1::2], strict=True))
    if family == "dspark":
        out[FLAG_NUM_DRAFT_TOKENS] = str(k + 1)
    return out


#: Golden-curve method per ``--speculative-algorithm`` (``EAGLE``/``NEXTN`` serve the model's
#: own head and are resolved by :func:`golden_al.golden.store.curve_method_for`).
CURVE_METHODS: dict[str, str] = {
    "EAGLE3": "eagle3", "DFLASH": "dflash", "DSPARK": "dspark", "NGRAM": "ngram",
    "STANDALONE": "draft-model", "FROZEN_KV_MTP": "mtp", "UNO": "uno",
}


def curve_method_of(algorithm: str) -> str | None:
    """The golden-curve method of an ``--speculative-algorithm`` as SGLang reads it (case-insensitive,
    ``-`` for ``_``; None: an algorithm no curve method covers).

    Raises:
        UsageError: an algorithm SGLang does not know.
    """
    return CURVE_METHODS.get(normalize_algorithm(algorithm))


RESERVED_FLAGS: tuple[str, ...] = (
    "--model-path", "--model", "--port", "--host", "--tp-size", "--tp",
    *(f"--{f}" for f in SPEC_FLAGS), "--served-model-name",
)


def server_args(req: plugin.LaunchRequest) -> list[str]:
    """``-m sglang.launch_server`` and its flags for a ``measure --launch`` request."""
    if not req.algorithm:
        raise plugin.UsageError("SGLang launch needs --algorithm", hint="dflash, eagle, eagle3, nextn, dspark, standalone, ngram")
    cmd = ["-m", LAUNCH_MODULE, "--model-path", req.target, "--host", req.host, "--port", str(req.port),
           "--tp-size", str(req.tp)]
    if req.draft:
        cmd += [FLAG_DRAFT_MODEL, req.draft]
    return cmd + spec_flags(req.algorithm, req.draft_len)


# ----------------------------------------------------------------- check's rules
def review_pin(ctx: plugin.PinContext) -> plugin.PinReview:
    """SGLang's rules for a pinned simulated length (``spec_utils.py``, ``environ.py``); ``ctx.spec``: ``role``,
    ``topk``, ``ragged_verify_mode``. ``ctx.companions`` maps :data:`ENV_METHOD`/:data:`ENV_TOKEN_MODE`/
    :data:`ENV_GREEDY` to what is set next to the pin (None: not set); ``None`` as a whole when they cannot be seen.
    """
    knob, raw, value, k, companions = ctx.knob, ctx.raw, ctx.value, ctx.k, ctx.companions
    if value is None:
        return plugin.PinReview(problems=[("unsafe-value", f"{knob}={raw!r} is not a number")])
    role, ragged_verify_mode, topk = ctx.spec.get("role"), ctx.spec.get("ragged_verify_mode"), ctx.spec.get("topk")
    topk = plugin.parse_number(str(topk)) if topk is not None else None
    r = plugin.PinReview(al=value)
    algo = (ctx.algorithm or "").upper()
    if value <= 0:
        r.problems.append(("unsafe-value", f"{knob}={raw} <= 0 turns simulation off"))
    elif k is not None and value > k + 1:
        r.problems.append(("unsafe-value", f"{knob}={raw} > k+1 = {k + 1}: SGLang clamps it to {k + 1}"))
    if not companions:
        return r
    method = companions.get(ENV_METHOD)
    mode = companions.get(ENV_TOKEN_MODE)
    if role == "prefill" and (method is None or mode is None):
        r.notes.append(f"the prefill block lacks {ENV_METHOD}/_TOKEN_MODE; harmless there (a prefill "
                       "worker runs no verify steps)")
        method = method or DEFAULT_METHOD
        mode = mode or DEFAULT_TOKEN_MODE
    if method is None:
        r.problems.append(("missing-companion", f"{ENV_METHOD} is not set next to it (InferenceX requires "
                                                f"{DEFAULT_METHOD}, SGLang's default from 0.5.23; older releases "
                                                "default to the biased multinomial)"))
    elif method != DEFAULT_METHOD:
        if method == "multinomial":
            r.problems.append(("unsafe-value", f"{ENV_METHOD}=multinomial is a clamped rounded normal "
                                               "whose mean is biased near the bounds"))
        else:
            r.problems.append(("unsafe-value", f"{ENV_METHOD}={method!r}: SGLang raises ValueError "
                                               f"(allowed: {', '.join(METHODS)})"))
    _review_greedy(r, companions.get(ENV_GREEDY), algo)
    if algo == "DSPARK":
        r.notes.append(f"DSPARK ignores {ENV_TOKEN_MODE} (real drafts are always used)")
        if ragged_verify_mode not in ("static", None) and value != 1.0:
            # dspark_components/dspark_worker_v2.py: a simulated length other than 1.0 raises ValueError unless
            # the verify planner verifies all drafts (static; compact only with a flat SPS table, not in the file)
            r.problems.append(("unsafe-value", f"{ENV_RAGGED_VERIFY}={ragged_verify_mode} beside a simulated length: "
                                               "DSPARK refuses to start (ValueError) unless the mode is static"))
        return r
    if algo == "NGRAM":
        if mode == DEFAULT_TOKEN_MODE:
            r.problems.append(("unsafe-value", "NGRAM has no draft chain: SGLang rejects "
                                               f"{ENV_TOKEN_MODE}={DEFAULT_TOKEN_MODE}"))
        return r
    if mode is None:
        r.problems.append(("missing-companion", f"{ENV_TOKEN_MODE} is not set next to it: SGLang then uses its "
                                                f"default {UNSET_TOKEN_MODE!r}, which emits token id 100 instead of "
                                                "the real draft tokens"))
    elif mode == "fixed":
        r.problems.append(("unsafe-value", f"{ENV_TOKEN_MODE}=fixed emits token id 100 instead of the "
                                           "real draft tokens"))
    elif mode != DEFAULT_TOKEN_MODE:
        r.problems.append(("unsafe-value", f"{ENV_TOKEN_MODE}={mode!r}: SGLang raises ValueError "
                                           f"(allowed: {', '.join(TOKEN_MODES)})"))
    elif topk is not None and topk > 1:
        r.problems.append(("unsafe-value", f"{DEFAULT_TOKEN_MODE} needs {FLAG_EAGLE_TOPK} 1 (SGLang raises "
                                           "ValueError for trees)"))
    return r


def _review_greedy(r: plugin.PinReview, raw: str | None, algo: str) -> None:
    """What :data:`ENV_GREEDY` beside a pin does: nothing unset or off; a value SGLang's EnvBool cannot read is read
    as off (a warning); on, DSPARK keeps the simulated length's law and only changes which path drafts."""
    if raw is None:
        return
    on = BOOL_SPELLINGS.get(raw.strip().lower())
    if on is None:
        r.problems.append(("unsafe-value", f"{ENV_GREEDY}={raw!r}: SGLang warns and reads it as false "
                                           f"(allowed: {', '.join(BOOL_SPELLINGS)})"))
    elif on and algo != "DSPARK":
        r.notes.append(f"{ENV_GREEDY} is read by DSPARK only: {algo or 'this algorithm'} ignores it")
    elif on:
        r.notes.append(f"{ENV_GREEDY}: temperature-only requests draft and accept greedily, only the bonus token "
                       "is temperature-sampled; the simulated length is drawn as without it")


LEGACY_PROBLEM = (f"legacy {LEGACY_ENV_LEN}: current SGLang (0.5.x) reads only {ENV_LEN}, so this value is ignored "
                  "(and old SGLang defaulted to the biased 'multinomial' method)")


# ----------------------------------------------------------------- counts
def _first_key(meta: Mapping[str, Any], keys: Sequence[str], what: str) -> tuple[str | None, Any]:
    """The value under the first present alias; aliases present together must agree."""
    found = [(key, meta[key]) for key in keys if key in meta and meta[key] is not None]
    if not found:
        return None, None
    key0, val0 = found[0]
    for key, val in found[1:]:
        if val != val0:
            raise DistributionError(
                f"sglang-meta-info: {what} aliases disagree: {key0}={val0!r} but {key}={val!r}",
                hint="SGLang emits the old names as backward-compat copies of the new ones",
            )
    return key0, val0


def counts_from_meta_info(meta: Mapping[str, Any], *, k: int | None = None) -> AcceptanceCounts:
    """Counts from one finished request's ``meta_info`` (or ``sglext.spec_tokens_details``).

    * histogram: ``spec_correct_drafts_histogram`` or ``spec_accept_histogram``;
      index = accepted DRAFT tokens (bonus excluded), one entry per verify step.
      It grows only as far as the largest value seen, so it is padded to ``k+1``.
    * verify steps: ``spec_verify_ct`` (decode steps only; prefill is not counted).
    * accepted: ``spec_num_correct_drafts`` / ``spec_accepted_drafts`` / ``spec_accept_token_num``.
    * proposed: ``spec_num_proposed_drafts`` / ``spec_proposed_drafts`` / ``spec_draft_token_num``
      (``spec_verify_ct * (speculative_num_draft_tokens - 1)``).

    AL from these counts (``1 + accepted / spec_verify_ct``) is bias-free; the
    ``spec_accept_length`` SGLang itself reports is not (see :func:`biased_al`).

    Args:
        k: draft length (``speculative_num_steps`` for EAGLE-family chains). If
            omitted it is inferred as proposed / verify steps, which is
            ``speculative_num_draft_tokens - 1`` (the tree size, not its depth,
            when ``speculative_eagle_topk > 1``).
    """
    src = "sglang-meta-info"
    if META_DETAILS in meta and isinstance(meta[META_DETAILS], Mapping):
        meta = meta[META_DETAILS]
    _, hist_raw = _first_key(meta, META_HISTOGRAM_KEYS, "histogram")
    _, acc_raw = _first_key(meta, META_ACCEPTED_KEYS, "accepted-drafts")
    _, prop_raw = _first_key(meta, META_PROPOSED_KEYS, "proposed-drafts")
    verify_raw = meta.get(META_VERIFY)
    if verify_raw is None and hist_raw is None:
        raise DistributionError(
            f"{src}: neither {META_VERIFY} nor a histogram in {META_INFO} keys {sorted(meta)}",
            hint="speculative decoding is off, or the request has not finished (meta_info is filled at finish)",
        )
    verify = None if verify_raw is None else as_count(verify_raw, f"{src}: {META_VERIFY}")
    proposed = None if prop_raw is None else as_count(prop_raw, f"{src}: {META_PROPOSED_KEYS[0]}")
    if k is None:
        if proposed is not None and verify:
            ratio = float(proposed) / float(verify)
            if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
                raise DistributionError(
                    f"{src}: cannot infer k: proposed/verify = {format_count(proposed)}/{format_count(verify)} "
                    "is not a whole number",
                    hint="pass k=speculative_num_steps",
                )
            k = round(ratio)
        else:
            raise DistributionError(
                f"{src}: the draft length k is unknown and cannot be inferred from {META_INFO}",
                hint="pass k=speculative_num_steps (the histogram only grows as far as the largest value seen)",
            )
    k = units.check_draft_len(k)
    if hist_raw is None and verify == 0:
        hist_raw = [0]  # older SGLang omits an empty histogram
    if hist_raw is None:  # totals only: AL is known, the pmf is not
        assert verify is not None  # checked above: one of the two is present
        if acc_raw is None:
            raise DistributionError(f"{src}: no histogram and no accepted-draft count in {sorted(meta)}")
        return AcceptanceCounts(k=k, num_verify_steps=verify, num_accepted_drafts=acc_raw,
                                num_draft_tokens=proposed, source=src, field_names=_FIELD_NAMES)
    counts = from_histogram(hist_raw, k=k, num_draft_tokens=proposed, source=src, field_names=_FIELD_NAMES)
    if verify is not None and not counts_close(verify, counts.num_verify_steps):
        raise DistributionError(
            f"{src}: {META_VERIFY}={format_count(verify)} but the histogram {list(hist_raw)} counts "
            f"{format_count(counts.num_verify_steps)} steps",
            hint="SGLang adds one histogram entry per verify step; were the fields taken from different requests?",
        )
    if acc_raw is not None and not counts_close(as_count(acc_raw, f"{src}: accepted"), counts.num_accepted_drafts):
        raise DistributionError(
            f"{src}: accepted drafts={acc_raw!r} but the histogram {list(hist_raw)} holds "
            f"{format_count(counts.num_accepted_drafts)} (sum of j*h[j])",
            hint="index j of the histogram is the number of accepted DRAFT tokens (bonus excluded)",
        )
    return counts


def biased_al(completion_tokens: Count, spec_verify_ct: Count) -> float:
    """SGLang's own per-request ``spec_accept_length = completion_tokens / spec_verify_ct``.

    This is biased and exists so callers can show the difference:
    ``completion_tokens`` includes the first token, produced by prefill, which
    is not a verify step, so for a request whose last step was not cut short
    ``completion_tokens = 1 + sum(L)`` and the value is ``AL + 1 / spec_verify_ct``
    (about 1/steps too high; 0.01 at 100 steps). Prometheus
    ``generation_tokens_total / spec_verify_calls_total`` has the same bias. The
    bias-free AL comes from the histogram: :func:`counts_from_meta_info` ``.al``.
    """
    completion = as_count(completion_tokens, "completion_tokens")
    verify = as_count(spec_verify_ct, META_VERIFY)
    if verify == 0:
        raise DistributionError(
            f"{META_ACCEPT_LENGTH} is undefined: {META_VERIFY} = 0",
            hint="the request produced no decode step with drafts",
        )
    return float(completion) / float(verify)


def response_spec_metas(obj: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The spec-decode ``meta_info`` of one saved response, one per choice, or None if it is none.

    ``/generate``: top-level ``meta_info``; OpenAI endpoints with ``return_spec_tokens_details``:
    ``sglext.spec_tokens_details`` (a list when ``n > 1``); chat with ``return_meta_info``:
    ``choices[i].meta_info`` (``entrypoints/openai/protocol.py``, ``serving_chat.py``, 0.5.23).
    """
    ext = obj.get(META_EXTENSION)
    if isinstance(ext, Mapping) and ext.get(META_DETAILS) is not None:
        details = ext[META_DETAILS]
        items = details if isinstance(details, list) else [details]
        return [d for d in items if isinstance(d, Mapping)] or None
    choices = obj.get("choices")
    if isinstance(choices, list):
        metas = [c[META_INFO] for c in choices if isinstance(c, Mapping) and isinstance(c.get(META_INFO), Mapping)]
        if metas:
            return metas
    meta = obj.get(META_INFO)
    if isinstance(meta, Mapping):
        return [meta]
    return None


def decode_window(accept_len: float, running_req: int, interval: int) -> tuple[float, float]:
    """``(verify steps, accepted drafts)`` of one ``Decode batch`` line, as check-run weighs them.

    ``accept len`` is Σ emitted tokens / Σ batch sizes over the ``--decode-log-interval``
    batches before the line (bonus included); the batch sizes themselves are not logged, so
    the steps are estimated as ``interval * #running-req`` (the batch size when the line was
    written) and the accepted drafts as ``steps * (accept len - 1)``.
    """
    steps = float(interval * running_req)
    return steps, steps * max(float(accept_len) - 1.0, 0.0)


# ----------------------------------------------------------------- the profile
#: ``simulate --algorithm``: the algorithms whose clamp ``max_len`` golden_al.engines.sglang.sampler knows.
SIMULATE_ALGORITHMS = ("eagle", "eagle3", "nextn", "standalone", "frozen_kv_mtp", "uno", "ngram", "dflash", "dspark")


def simulate_report(sampler: Any, al: float, k: int, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``simulate``'s SGLang fields: the algorithm and the clamp it sets."""
    return {"algorithm": sampler.algorithm, "max_len": sampler.max_len(k)}

#: ``golden-al env``'s SGLang spellings of k.
ENV_OPTIONS = (
    plugin.EnvOption("--num-steps", f"SGLang {FLAG_NUM_STEPS} (EAGLE family: k = N)"),
    plugin.EnvOption("--num-draft-tokens", f"SGLang {FLAG_NUM_DRAFT_TOKENS} (DFLASH/NGRAM: k = N - 1)"),
    plugin.EnvOption("--block-size", f"SGLang block size: DSPARK {FLAG_DSPARK_BLOCK} (k = G), DFLASH {FLAG_DFLASH_BLOCK} "
                              "(k = G - 1)", "G"),
)


def env_draft_len(algorithm: str | None, values: Mapping[str, int]) -> plugin.DraftLen:
    """k from ``golden-al env``'s SGLang spellings (:data:`ENV_OPTIONS`), by :func:`draft_len`.

    Raises:
        UsageError: no ``--algorithm``, or a block size for an algorithm without blocks.
    """
    if not algorithm:
        raise plugin.UsageError("--num-steps/--num-draft-tokens/--block-size need --algorithm",
                                hint="e.g. --algorithm dflash --num-draft-tokens 8")
    algo = normalize_algorithm(algorithm)
    family = ALGORITHMS[algo]
    block = values.get("block_size")
    if block is not None and family not in ("dflash", "dspark"):
        raise plugin.UsageError(f"--block-size applies to DFLASH and DSPARK, not {algorithm}")
    return draft_len(algo, num_steps=values.get("num_steps"), num_draft_tokens=values.get("num_draft_tokens"),
                     dflash_block_size=block if family == "dflash" else None,
                     dspark_block_size=block if family == "dspark" else None)


PROFILE = plugin.EngineProfile(
    name="sglang",
    frameworks=("dynamo-sglang", "sglang", "mori-sglang", "sglang-disagg"),
    display_name="SGLang",
    algorithms=tuple(a.lower() for a in ALGORITHMS),
    draft_len_rules=(
        *(plugin.DraftLenRule(a, f"k = {FLAG_NUM_STEPS} (topk > 1: a tree of that depth)", True, _HOOK)
          for a in ALGORITHMS if ALGORITHMS[a] == "eagle"),
        plugin.DraftLenRule("DFLASH", f"k = {FLAG_NUM_DRAFT_TOKENS} - 1 (= {FLAG_DFLASH_BLOCK} - 1)", True, _HOOK),
        plugin.DraftLenRule("DSPARK", f"k = {FLAG_DSPARK_BLOCK} (gamma)", True, _HOOK),
        plugin.DraftLenRule("NGRAM", f"k = {FLAG_NUM_DRAFT_TOKENS} - 1", False, _HOOK),
        plugin.DraftLenRule("UNO", f"k = {FLAG_NUM_DRAFT_TOKENS} - 1 (linear, topk 1; num-steps forced to 1)", True, _HOOK),
    ),
    caveats=(
        plugin.Caveat("SGLang draws ONE length per verify step for the whole batch: concurrent requests are perfectly "
                      "correlated", ("simulate",), _SPEC_UTILS),
        plugin.Caveat(f"DSPARK refuses a simulated length other than 1.0 unless {ENV_RAGGED_VERIFY}=static",
                      ("dspark",), _SPEC_UTILS),
        plugin.Caveat(f"DFLASH honours {ENV_LEN} only from 0.5.23 (absent in 0.5.15.post1)", ("dflash",), _SPEC_UTILS),
        plugin.Caveat(f"{ENV_LEN} is read once at import: set it in the server's launch environment", (), _ENVIRON),
        plugin.Caveat(f"{ENV_TOKEN_MODE} unset is {UNSET_TOKEN_MODE!r} (token id 100 for every simulated token), so env "
                      f"writes {DEFAULT_TOKEN_MODE}; {ENV_GREEDY} (DSpark's greedy draft path) stays unset", ("env",),
                      _ENVIRON),
    ),
    sources=(_ENVIRON, _HOOK, _SPEC_UTILS, _TOKENIZER, _REPORTER, _COLLECTOR, _HTTP, _ENGINE, _BENCH),
    curve_methods=CURVE_METHODS,
    curve_method_of=curve_method_of,
    env_prefixes=("SGLANG_", *ENV_PREFIXES[1:]),
    check=plugin.CheckSupport(
        review_pin=review_pin,
        env_options=ENV_OPTIONS,
        env_draft_len=env_draft_len,
        curve_selectors=curve_selectors,
        selector_keys=SELECTOR_KEYS,
        settings_draft_len=settings_draft_len,
        script_speculation=script_speculation,
        script_settings="the launch flags",
        script_flags=tuple(f"--{f}" for f in (*SPEC_FLAGS, *SELECTOR_FLAGS)),
        algorithm_flag=FLAG_ALGORITHM,
        pin_env={ENV_RAGGED_VERIFY: "ragged_verify_mode"},
        synthetic_knobs=(
            plugin.SyntheticKnob(ENV_LEN, "env", "al", aliases=(LEGACY_ENV_LEN,), source=_ENVIRON,
                                 retired=((LEGACY_ENV_LEN, LEGACY_PROBLEM),)),
            plugin.SyntheticKnob(ENV_METHOD, "env", "choice", role="companion", choices=METHODS,
                                 required_value=DEFAULT_METHOD, aliases=(LEGACY_ENV_METHOD,), source=_ENVIRON),
            plugin.SyntheticKnob(ENV_TOKEN_MODE, "env", "choice", role="companion", choices=TOKEN_MODES,
                                 required_value=DEFAULT_TOKEN_MODE, source=_ENVIRON),
            plugin.SyntheticKnob(ENV_GREEDY, "env", "choice", role="companion", choices=tuple(BOOL_SPELLINGS),
                                 source=_ENVIRON),
        ),
        synthetic_settings=synthetic_settings,
        runtime_draft_len=(
            plugin.RuntimeDraftLen((FLAG_ADAPTIVE, SERVER_INFO_FIELDS["adaptive"]),
                                   "adjusts --speculative-num-steps from the acceptance rate at run time",
                                   plugin.Source(_REPO, "python/sglang/srt/server_args.py", "469c63e5"), flag_takes_value=False),
        ),
    ),
    server=plugin.ServerSupport(
        metrics=(
            plugin.Metric(METRIC_VERIFY_CALLS, "counter", "verify steps (batch-level calls)", source=_COLLECTOR),
            plugin.Metric(METRIC_GENERATION_TOKENS, "counter", "generated tokens, prefill token included", source=_COLLECTOR),
            plugin.Metric(METRIC_NUM_REQUESTS, "counter", "finished requests", source=_COLLECTOR),
            plugin.Metric(METRIC_ACCEPT_LENGTH, "gauge", "accept length of the last interval (biased)", source=_COLLECTOR),
            plugin.Metric(METRIC_ACCEPT_RATE, "gauge", "accept rate of the last interval", source=_COLLECTOR),
        ),
        response_fields={
            "num_verify_steps": plugin.ResponseField("verify steps", (META_VERIFY,), META_INFO, _TOKENIZER),
            "num_accepted_drafts": plugin.ResponseField("accepted drafts", META_ACCEPTED_KEYS, META_INFO, _TOKENIZER),
            "num_draft_tokens": plugin.ResponseField("proposed drafts", META_PROPOSED_KEYS, META_INFO, _TOKENIZER),
            "histogram": plugin.ResponseField("steps by accepted drafts", (*META_HISTOGRAM_KEYS, META_HISTOGRAM_OLDEST),
                                              META_INFO, _TOKENIZER),
            "reported_al": plugin.ResponseField("completion_tokens / spec_verify_ct (biased)", (META_ACCEPT_LENGTH,),
                                                META_INFO, _TOKENIZER),
        },
        server_info_fields=SERVER_INFO_FIELDS,
        counter_reader=plugin.lazy(f"{__name__}.counters:read"),
        reference_flavor=plugin.lazy(f"{__name__}.reference:SglangFlavor"),
        counter_marker=METRIC_VERIFY_CALLS,
        lifetime_prefixes=(METRIC_SPEC_PREFIX, METRIC_GENERATION_TOKENS.removesuffix("_total"),
                           METRIC_NUM_REQUESTS.removesuffix("_total")),
        draft_len_from_server_info=draft_len_from_server_info,
        exact_proposals=True,
        al_sources=("sglang-meta-info", "sglang-spec-tokens-details", "sglang-generate"),
        source_impls={
            "sglang-meta-info": plugin.lazy(f"{__name__}.server:META_INFO"),
            "sglang-spec-tokens-details": plugin.lazy(f"{__name__}.server:SPEC_TOKENS_DETAILS"),
            "sglang-generate": plugin.lazy(f"{__name__}.server:GENERATE"),
        },
        server_probe=plugin.lazy(f"{__name__}.server:probe"),
    ),
    launch=plugin.LaunchSupport(
        spec_flags=spec_flags,
        launch_command=("-m", LAUNCH_MODULE),
        server_args=server_args,
        reserved_flags=RESERVED_FLAGS,
    ),
    simulate=plugin.SimulateSupport(
        default_sampler="match-expected",
        samplers={"match-expected": plugin.lazy(f"{__name__}.sampler:SGLangMatchExpected"), "multinomial": plugin.lazy(f"{__name__}.sampler:SGLangMultinomial")},
        simulator_settings=simulator_settings,
        simulate_options=(plugin.SimulateOption(
            "--algorithm", "algorithm", type=str.lower, choices=SIMULATE_ALGORITHMS,
            help=f"{FLAG_ALGORITHM}, which sets the clamp max_len (default: eagle, steps+1)"),),
        simulate_report=simulate_report,
    ),
    run_logs=plugin.RunLogSupport(
        log_patterns=LOG_PATTERNS,
        run_evidence=plugin.lazy(f"{__name__}.evidence:read"),
        log_reader=plugin.LogReader(plugin.lazy(f"{__name__}.logs:parse_sglang_decode_line"), ("Decode batch",),
                                    server_args=plugin.lazy(f"{__name__}.logs:parse_sglang_server_args_line")),
        importers={"sglang-bench": plugin.lazy(f"{__name__}.imported:import_sglang_bench"),
                   "sglang-log": plugin.lazy(f"{__name__}.imported:import_sglang_log")},
    ),
    recipe=plugin.RecipeFormat(RECIPE_CONFIG_KEY, RECIPE_BACKEND_TYPES, read_recipe_role, spec_keys=SPEC_FLAGS),
)
