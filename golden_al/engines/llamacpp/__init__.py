"""llama.cpp's server (``llama-server``): everything golden-al knows about it.

Facts read from the llama.cpp tree vendored by ``llama-cpp-python==0.3.36`` (llama.cpp
commit 0c1e57098bba43ac29e6e3b677cdceebdd22334f, ggml-org/llama.cpp):

* flags: ``common/arg.cpp`` (``--spec-draft-model``, ``--spec-draft-n-max``/``-n-min``/
  ``-p-min``, ``--spec-type``, ``--spec-synth-len``/``--spec-synth-rates`` and their
  ``LLAMA_ARG_*`` environment forms, ``--metrics``, ``--alias``, ``--parallel``);
* draft length: ``common/speculative.cpp`` ``common_speculative_impl_draft_simple::draft``
  stops at ``n_max`` drafted tokens or when the draft's top probability is below
  ``p_min``, and clears a draft shorter than ``n_min``; ``tools/server/server-context.cpp``
  ``get_n_draft_max`` caps it by the tokens the request has left;
* counters: ``tools/server/server-task.cpp`` ``server_task_result_metrics::to_metrics``
  (``llamacpp:`` prefix), incremented per request when its slot is released
  (``metrics_on_prediction``); ``n_draft_verif_steps`` counts one per verify step;
* per request: ``tools/server/server-common.cpp`` ``server_slot_stats::to_json``
  (``timings.draft_n``, ``timings.draft_n_accepted``, present only when a draft was made);
  the slot's ``print_timings`` log line ``draft acceptance = ...`` (server-context.cpp);
* synthetic acceptance: ``common/speculative.cpp`` ``common_speculative_synth_rates_resolve``
  and ``common_speculative_init`` (warning line), ``server_sample_and_accept_synth``
  (server-context.cpp). Reproduced in :mod:`golden_al.engines.llamacpp.sampler`.

Fixed draft length: with ``--spec-draft-n-min`` equal to ``--spec-draft-n-max`` = k and
``--spec-draft-p-min 0``, every verify step carries exactly k drafts. ``p_min > 0`` ends a
draft early when the draft model is unsure (a *dynamic* draft length: AL would no longer
be a property of k), and ``n_min < k`` lets the budget cap send shorter drafts at the end
of a request. With ``n_min = k`` such short drafts are dropped (that step is a plain
decode step, no verify step), so ``draft tokens = k x verify steps`` holds exactly.
The other engines (vLLM, SGLang, the reference engine) draft ``min(k, tokens left)`` and
count those short final steps, so on the same greedy output llama-server's AL is higher for
requests that reach their budget (experiments/llamacpp-vs-reference: +0.16 at k = 8 on
128-token outputs, equal once both are counted by one rule).

Pure data plus small helpers: no I/O, fast to import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from distributions import units
from golden_al import plugin

__all__ = ["ACCEPTED_METRIC", "ACCEPTED_PER_POS_METRIC", "BUILD", "DRAFTS_METRIC", "DRAFT_TOKENS_METRIC",
           "ENV_SYNTH_LEN", "ENV_SYNTH_RATES", "FLAG_DRAFT_MODEL", "FLAG_N_MAX", "FLAG_N_MIN", "FLAG_P_MIN",
           "FLAG_SYNTH_LEN", "FLAG_SYNTH_RATES", "LLAMA_CPP_COMMIT", "PROFILE", "SPEC_TYPES",
           "SYNTH_FLAG_FORMS", "counted_steps", "draft_len_for_type", "draft_len_from_args", "launch_args",
           "read_command_line", "review_pin", "server_args", "simulator_settings", "spec_flags",
           "synthetic_settings", "synthetic_shell_env"]

LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
_REPO = "ggml-org/llama.cpp"


def _src(path: str) -> plugin.Source:
    return plugin.Source(_REPO, path, LLAMA_CPP_COMMIT[:7])


_ARG = _src("common/arg.cpp")
_SPEC = _src("common/speculative.cpp")
_CTX = _src("tools/server/server-context.cpp")
_TASK = _src("tools/server/server-task.cpp")
_COMMON = _src("tools/server/server-common.cpp")

#: The pinned source: an sdist from PyPI holding llama.cpp under ``vendor/llama.cpp``.
BUILD: Mapping[str, str] = {
    "package": "llama-cpp-python",
    "version": "0.3.36",
    "filename": "llama_cpp_python-0.3.36.tar.gz",
    "sha256": "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
    "subdir": "vendor/llama.cpp",
    "commit": LLAMA_CPP_COMMIT,
    "target": "llama-server",
}

# ---------------------------------------------------------------------------- flags (common/arg.cpp)
FLAG_MODEL = "--model"
FLAG_DRAFT_MODEL = "--spec-draft-model"  # aliases -md, --model-draft; env LLAMA_ARG_SPEC_DRAFT_MODEL
FLAG_SPEC_TYPE = "--spec-type"
SPEC_TYPE_DRAFT = "draft-simple"
FLAG_N_MAX = "--spec-draft-n-max"  # default 3; env LLAMA_ARG_SPEC_DRAFT_N_MAX
FLAG_N_MIN = "--spec-draft-n-min"  # default 0; env LLAMA_ARG_SPEC_DRAFT_N_MIN
FLAG_P_MIN = "--spec-draft-p-min"  # alias --draft-p-min; default 0.00 in this version
FLAG_METRICS = "--metrics"
FLAG_ALIAS = "--alias"
FLAG_PARALLEL = "--parallel"
FLAG_SYNTH_LEN = "--spec-synth-len"
FLAG_SYNTH_RATES = "--spec-synth-rates"
ENV_SYNTH_LEN = "LLAMA_ARG_SPEC_SYNTH_LEN"
ENV_SYNTH_RATES = "LLAMA_ARG_SPEC_SYNTH_RATES"
#: Every spelling of the draft-length flags, with the env form (for reading configs).
N_MAX_FORMS = (FLAG_N_MAX, "LLAMA_ARG_SPEC_DRAFT_N_MAX")
N_MIN_FORMS = (FLAG_N_MIN, "LLAMA_ARG_SPEC_DRAFT_N_MIN")
P_MIN_FORMS = (FLAG_P_MIN, "--draft-p-min", "LLAMA_ARG_SPEC_DRAFT_P_MIN")
DRAFT_MODEL_FORMS = (FLAG_DRAFT_MODEL, "-md", "--model-draft", "LLAMA_ARG_SPEC_DRAFT_MODEL")
#: A draft model fetched from a hub repository instead of a file.
DRAFT_HF_FORMS = ("--spec-draft-hf", "-hfd", "-hfrd", "--hf-repo-draft", "LLAMA_ARG_SPEC_DRAFT_HF_REPO")
SPEC_TYPE_FORMS = (FLAG_SPEC_TYPE, "LLAMA_ARG_SPEC_TYPE")
MODEL_FORMS = ("-m", FLAG_MODEL, "LLAMA_ARG_MODEL")
ALIAS_FORMS = ("-a", FLAG_ALIAS, "LLAMA_ARG_ALIAS")
#: flag -> env var of the two synthetic knobs.
SYNTH_FLAG_FORMS: Mapping[str, str] = {FLAG_SYNTH_LEN: ENV_SYNTH_LEN, FLAG_SYNTH_RATES: ENV_SYNTH_RATES}
#: Flags golden-al sets itself when it launches llama-server.
RESERVED_FLAGS = ("-m", FLAG_MODEL, *DRAFT_MODEL_FORMS[:3], FLAG_SPEC_TYPE, FLAG_N_MAX, FLAG_N_MIN, *P_MIN_FORMS[:2],
                  "--host", "--port", "-a", FLAG_ALIAS)

# ---------------------------------------------------------------------------- metrics (server-task.cpp)
DRAFTS_METRIC = "llamacpp:spec_decode_num_drafts_total"
DRAFT_TOKENS_METRIC = "llamacpp:spec_decode_num_draft_tokens_total"
ACCEPTED_METRIC = "llamacpp:spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POS_METRIC = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
REQUESTS_PROCESSING_METRIC = "llamacpp:requests_processing"
REQUESTS_DEFERRED_METRIC = "llamacpp:requests_deferred"
TOKENS_PREDICTED_METRIC = "llamacpp:tokens_predicted_total"

# ---------------------------------------------------------------------------- log lines
#: ``print_timings`` (server-context.cpp), once per finished request with drafts.
LOG_DRAFT_ACCEPTANCE = (
    r"draft acceptance = (?P<rate>[0-9.]+) \(\s*(?P<accepted>\d+) accepted /\s*(?P<generated>\d+) generated\), "
    r"mean len =\s*(?P<mean_len>[0-9.]+)"
)
#: The text every such line holds.
LOG_DRAFT_ACCEPTANCE_MARKER = "draft acceptance = "
#: How to get a fixed draft length k (the module docstring says why).
FIXED_K_HINT = f"launch with {FLAG_N_MIN} = {FLAG_N_MAX} = k and {FLAG_P_MIN} 0"
#: ``common_speculative_init`` (speculative.cpp) when synthetic acceptance is on.
LOG_SYNTH_WARNING = r"synthetic speculative acceptance is enabled for benchmarking"
LOG_SYNTH_INFO = (
    r"synthetic acceptance: n_max = (?P<n_max>\d+), mean length = (?P<mean_len>[0-9.]+), rates = \[(?P<rates>[^\]]*)\]"
)


def _never_off(value: str) -> bool:
    """llama.cpp's ``LLAMA_ARG_SPEC_SYNTH_*``: any value set turns synthetic acceptance on."""
    return False


def counted_steps(accept_lengths: Sequence[int], k: int, max_tokens: int, *, emitted: int = 1) -> list[int]:
    """The steps llama-server would count as verify steps, of one request's per-step ``L``.

    llama-server drafts at most ``n_remaining - 1`` tokens and, with ``n_min = k``, skips
    drafting when that is below k (server-context.cpp ``get_n_draft_max``): once fewer than
    ``k + 1`` tokens of the budget are left, it decodes the rest plainly, and those steps are
    no verify steps. Given another engine's greedy steps (which draft ``min(k, left)`` and count
    every step), this returns the leading ones llama-server counts on the same output.
    ``emitted``: tokens out before the first step (1: the prefill's token).
    """
    kept: list[int] = []
    for L in accept_lengths:
        if max_tokens - emitted - 1 < k:
            break
        kept.append(int(L))
        emitted += int(L)
    return kept


def _p_min_on(value: Any) -> bool | None:
    """``--spec-draft-p-min``: any value above 0 varies the draft length per step."""
    try:
        return float(str(value).strip().strip("'\"")) > 0
    except ValueError:
        return None


def spec_flags(algorithm: str | None, k: int, **options: Any) -> list[str]:
    """The llama-server flags that ask for a fixed draft length ``k`` (see the module docstring)."""
    k = units.check_draft_len(k)
    if algorithm not in (None, "", "draft", "draft-model", SPEC_TYPE_DRAFT):
        raise ValueError(f"llama.cpp launch supports the draft-model path ({SPEC_TYPE_DRAFT}), not {algorithm!r}")
    return [FLAG_SPEC_TYPE, SPEC_TYPE_DRAFT, FLAG_N_MAX, str(k), FLAG_N_MIN, str(k), FLAG_P_MIN, "0"]


def launch_args(*, target: str, draft: str, k: int, host: str, port: int, alias: str | None = None) -> list[str]:
    """llama-server's arguments (after the binary) for target/draft GGUF files at draft length ``k``.

    One slot (``--parallel 1``): a measurement sends one request at a time, and counter
    deltas then belong to exactly that request.
    """
    args = [FLAG_MODEL, target, FLAG_DRAFT_MODEL, draft, "--host", host, "--port", str(port), FLAG_METRICS,
            FLAG_PARALLEL, "1", *spec_flags(None, k)]
    if alias:
        args += [FLAG_ALIAS, alias]
    return args


def review_pin(ctx: plugin.PinContext) -> plugin.PinReview:
    """``check``: what llama.cpp makes of a pinned value (``common_speculative_synth_rates_resolve``).

    ``--spec-synth-len`` is AL itself, in ``[1, k + 1]``; ``--spec-synth-rates`` are k
    unconditional per-position rates, non-increasing, AL = 1 + their sum.
    """
    from .sampler import resolve_rates

    knob, raw, k = ctx.knob, ctx.raw, ctx.k
    r = plugin.PinReview()
    if knob in (FLAG_SYNTH_RATES, ENV_SYNTH_RATES):
        rates = [plugin.parse_number(x) for x in raw.strip("[]").split(",")]
        if any(v is None for v in rates):
            r.problems.append(("unsafe-value", f"{FLAG_SYNTH_RATES} {raw!r} is not a comma-separated list of numbers"))
            return r
        values = [float(v) for v in rates if v is not None]
        if k is not None:
            try:
                resolve_rates(None, k, values)
            except plugin.SamplerError as exc:
                r.problems.append(("unsafe-value", f"llama.cpp refuses {FLAG_SYNTH_RATES} {raw}: {exc.message}"))
                return r
        r.notes.append("llama.cpp rates are unconditional per-position probabilities: AL = 1 + their sum")
        r.al = 1.0 + sum(values)
        return r
    return PROFILE.review_value(knob, raw, plugin.parse_number(raw), k)  # --spec-synth-len: an AL in [1, k+1]


def server_args(req: plugin.LaunchRequest) -> list[str]:
    """``measure --launch``: llama-server's arguments for a :class:`LaunchRequest` (GGUF target and draft).

    Raises:
        UsageError: no draft, a non-GGUF file, ``--tp`` > 1, or an algorithm other than
            draft-model speculation.
    """

    if not req.draft:
        raise plugin.UsageError("llama.cpp launch needs --draft (the draft model's .gguf file)")
    if req.tp != 1:
        raise plugin.UsageError(f"llama.cpp launch runs on one device; --tp {req.tp} is not supported")
    for what, path in (("--target", req.target), ("--draft", req.draft)):
        if not str(path).endswith(".gguf"):
            raise plugin.UsageError(f"llama.cpp loads GGUF files; {what} {path} is not a .gguf file",
                                    hint="golden-al models list shows the cached GGUF pair")
    try:
        spec_flags(req.algorithm, req.draft_len)
    except ValueError as exc:
        raise plugin.UsageError(str(exc), hint="omit --algorithm for llama.cpp (draft-model speculation)") from None
    return launch_args(target=req.target, draft=req.draft, k=req.draft_len, host=req.host, port=req.port)


def simulator_settings(sampler: Any, al: float | None, k: int) -> dict[str, Any]:
    """The flag a :mod:`golden_al.engines.llamacpp.sampler` sampler stands for (``--spec-synth-len`` or ``-rates``)."""
    if sampler.rates is not None:
        return {FLAG_SYNTH_RATES: ",".join(units.format_number(r) for r in sampler.rates)}
    return {FLAG_SYNTH_LEN: units.format_number(units.check_al(al, k)) if al is not None else None}


def synthetic_settings(al: float, k: int, **_options: Any) -> dict[str, Any]:
    """``golden-al env --engine llamacpp``: ``{"--spec-synth-len": "4.05"}``.

    llama.cpp's length is the mean accepted length *including* the target token (AL
    itself, in ``[1, k + 1]``; ``common_speculative_synth_rates_resolve``).
    """
    al = units.check_al(al, k)
    return {FLAG_SYNTH_LEN: units.format_number(al)}


def synthetic_shell_env(settings: Mapping[str, Any]) -> dict[str, str]:
    """The ``LLAMA_ARG_*`` environment form of :func:`synthetic_settings` (``env --format shell``)."""
    return {SYNTH_FLAG_FORMS[name]: str(value) for name, value in settings.items()}


def _flag_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    found = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                found = args[i + 1]
            elif arg.startswith(name + "="):
                found = arg.split("=", 1)[1]
    return found


def _number(name: str, text: str | None, kind: type[Any], default: Any) -> Any:
    if text is None:
        return default
    try:
        return kind(text.strip())
    except ValueError:
        raise ValueError(f"{name} {text!r} is not a number") from None


def draft_len_from_args(args: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """``k`` and the rule that gave it, from llama-server arguments (last one wins, as in llama.cpp).

    Raises:
        ValueError: ``n_min`` differs from ``n_max`` or ``p_min`` > 0 (a draft length that
            varies per step), or a value is not a number.
    """
    env = env or {}
    n_max_s = _flag_value(args, N_MAX_FORMS[:1]) or env.get(N_MAX_FORMS[1])
    n_min_s = _flag_value(args, N_MIN_FORMS[:1]) or env.get(N_MIN_FORMS[1])
    p_min_s = _flag_value(args, P_MIN_FORMS[:2]) or env.get(P_MIN_FORMS[2])
    n_max = _number(FLAG_N_MAX, n_max_s, int, 3)
    n_min = _number(FLAG_N_MIN, n_min_s, int, 0)
    p_min = _number(FLAG_P_MIN, p_min_s, float, 0.0)
    rule = f"{FLAG_N_MAX} {n_max}" if n_max_s is not None else f"{FLAG_N_MAX} default (3)"
    if p_min > 0:
        raise ValueError(f"{FLAG_P_MIN} {p_min:g} ends drafts early when the draft is unsure: the draft length varies "
                         f"per step (set {FLAG_P_MIN} 0)")
    if n_min != n_max:
        raise ValueError(f"{FLAG_N_MIN} {n_min} != {FLAG_N_MAX} {n_max}: drafts shorter than k are verified near the "
                         f"end of each request (set {FLAG_N_MIN} {n_max})")
    return units.check_draft_len(n_max), rule


def _setting(args: Sequence[str], env: Mapping[str, str], forms: Sequence[str]) -> str | None:
    """The value of a setting given by any of its flag spellings (last wins) or, failing that, its env form."""
    flags = [f for f in forms if f.startswith("-")]
    value = _flag_value(args, flags)
    if value is None:
        value = next((env[f] for f in forms if not f.startswith("-") and f in env), None)
    return value


#: GGUF file names end in the quantization (``qwen2.5-coder-1.5b-instruct-q4_k_m.gguf``).
_GGUF_QUANT = re.compile(r"[-_.](?:i?q\d[a-z0-9_]*|f16|f32|bf16)$", re.IGNORECASE)


def _model_names(args: Sequence[str], env: Mapping[str, str]) -> tuple[str, ...]:
    names: list[str] = []
    alias = _setting(args, env, ALIAS_FORMS)
    if alias:
        names += [a.strip() for a in alias.split(",") if a.strip()]  # --alias takes a comma-separated list
    model = _setting(args, env, MODEL_FORMS)
    if model:
        stem = model.replace("\\", "/").rsplit("/", 1)[-1]
        stem = stem[:-5] if stem.lower().endswith(".gguf") else stem
        names += [stem, _GGUF_QUANT.sub("", stem)]
    return tuple(dict.fromkeys(n for n in names if n))


#: ``--spec-type`` values (``common/speculative.cpp`` ``common_speculative_type_from_name_map``) -> golden-curve
#: method. ``ngram-*`` drafts come from the text itself, a variable number per step.
SPEC_TYPES: Mapping[str, str] = {
    SPEC_TYPE_DRAFT: "draft-model", "draft-eagle3": "eagle3", "draft-mtp": "mtp", "draft-dflash": "dflash",
    "draft-dspark": "dspark", "ngram-simple": "ngram", "ngram-map-k": "ngram", "ngram-map-k4v": "ngram",
    "ngram-mod": "ngram", "ngram-cache": "ngram",
}
#: Types whose drafter is a block model: ``common_speculative_impl_draft_dflash`` clamps ``n_max`` to the
#: draft GGUF's ``dflash.block_size`` (default 16) minus one (DFlash; DSpark with ``sample_from_anchor``: the
#: block size itself), a value in the draft file that no config states.
BLOCK_TYPES: tuple[str, ...] = ("draft-dflash", "draft-dspark")


def _spec_types(args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The ``--spec-type`` values in force (comma-separated; every occurrence appends, as in ``common/arg.cpp``)."""
    values: list[str] = []
    for i, arg in enumerate(args):
        if arg == FLAG_SPEC_TYPE and i + 1 < len(args):
            values.append(args[i + 1])
        elif arg.startswith(FLAG_SPEC_TYPE + "="):
            values.append(arg.split("=", 1)[1])
    if not values and SPEC_TYPE_FORMS[1] in env:
        values.append(env[SPEC_TYPE_FORMS[1]])
    return [t.strip() for v in values for t in v.split(",") if t.strip() and t.strip() != "none"]


def draft_len_for_type(spec_type: str, args: Sequence[str], env: Mapping[str, str]) -> tuple[int, str]:
    """``k`` for one speculative type, with llama.cpp's clamps (``common/speculative.cpp``).

    Draft-model types (simple, EAGLE-3, MTP) draft ``--spec-draft-n-max`` tokens
    (:func:`draft_len_from_args`); a block draft (DFlash, DSpark) is clamped to its block
    size from the draft GGUF, so ``k`` is fixed by the flags only when ``n_max`` is 1.

    Raises:
        ValueError: the type's draft length cannot be fixed from the settings.
    """
    if spec_type not in SPEC_TYPES:
        raise ValueError(f"{FLAG_SPEC_TYPE} {spec_type!r} is not a llama.cpp speculative type "
                         f"({', '.join(SPEC_TYPES)})")
    if SPEC_TYPES[spec_type] == "ngram":
        raise ValueError(f"{FLAG_SPEC_TYPE} {spec_type} drafts a variable number of tokens per step (n-gram "
                         "matches): no fixed draft length")
    k, rule = draft_len_from_args(args, env)
    if spec_type in BLOCK_TYPES and k > 1:
        raise ValueError(f"{FLAG_SPEC_TYPE} {spec_type}: llama.cpp clamps {FLAG_N_MAX} {k} to the draft's block "
                         "size (dflash.block_size in the draft GGUF, default 16; minus one for DFlash), which no "
                         "config states: the draft length is min(n_max, block limit)")
    return k, rule + (f" ({spec_type})" if spec_type != SPEC_TYPE_DRAFT else "")


def read_command_line(args: Sequence[str], env: Mapping[str, str]) -> plugin.CommandLineReading:
    """``check``: what llama-server makes of a command line and environment that pin synthetic acceptance.

    * the speculative type from ``--spec-type`` (:data:`SPEC_TYPES` -> the curve method);
      without it llama-server infers the type from the draft GGUF's metadata (DFlash, DSpark,
      MTP; ``common/arg.cpp``), which a config does not show, so the method is unknown;
    * ``k`` from :func:`draft_len_for_type` (``--spec-draft-n-max`` must be written: the
      default of 3 is a property of the version, not of the config);
    * ``missing-companion`` without a draft model or a ``--spec-type``: llama-server then
      initializes no speculative decoding and refuses to start with a synthetic setting
      ("synthetic acceptance requires an initialized speculative decoding context",
      ``tools/server/server-context.cpp``);
    * ``unsafe-value`` when length and rates are both set (mutually exclusive,
      ``common_speculative_synth_rates_resolve``).
    """
    problems: list[tuple[str, str]] = []
    if all(_setting(args, env, (flag, var)) is not None for flag, var in SYNTH_FLAG_FORMS.items()):
        problems.append(("unsafe-value", f"{FLAG_SYNTH_LEN} and {FLAG_SYNTH_RATES} are both set: llama.cpp refuses "
                                         "them together (mutually exclusive)"))
    draft_model = _setting(args, env, DRAFT_MODEL_FORMS) or _setting(args, env, DRAFT_HF_FORMS)
    types = _spec_types(args, env)
    if draft_model is None and not types:
        problems.append(("missing-companion", f"no draft model ({FLAG_DRAFT_MODEL}) and no {FLAG_SPEC_TYPE} next to "
                                              "this value: llama-server starts no speculative decoding and refuses "
                                              "a synthetic setting without it"))
    draft: plugin.DraftLen | None = None
    problem: str | None = None
    algorithm = types[0] if len(types) == 1 else None
    if not types:
        problem = (f"no {FLAG_SPEC_TYPE}: llama-server infers the speculative type from the draft GGUF's metadata "
                   "(draft-mtp, draft-dflash, draft-dspark, or none for a plain draft model), which the config does "
                   f"not show (set {FLAG_SPEC_TYPE} {SPEC_TYPE_DRAFT} for a draft model)")
    elif len(types) > 1:
        problem = (f"{FLAG_SPEC_TYPE} {','.join(types)}: several speculative types, each step drafted by whichever "
                   "proposes first, so no one method and draft length")
    elif _setting(args, env, N_MAX_FORMS) is None and SPEC_TYPES.get(types[0]) != "ngram":
        problem = f"no {FLAG_N_MAX} (llama.cpp's default of 3 is not pinned)"
    else:
        try:
            k, rule = draft_len_for_type(types[0], args, env)
            draft = plugin.DraftLen(k, rule, chain=True)
        except ValueError as exc:
            problem = str(exc)
    return plugin.CommandLineReading(draft=draft, draft_problem=problem, algorithm=algorithm, draft_model=draft_model,
                                     models=_model_names(args, env), problems=tuple(problems))


def _simulate_rates_al(sampler: Any, al: float | None, k: int) -> float:
    """The AL ``--spec-synth-rates`` inject (a given ``--al`` must agree with them)."""
    return 1.0 + float(sampler.unconditional_rates(al, k).sum())


def forced_in_args(args: Sequence[str]) -> tuple[str, str] | None:
    """``--spec-synth-len`` / ``--spec-synth-rates`` among server arguments, as (what, hint), or None."""
    found = plugin.set_flag(args, tuple(SYNTH_FLAG_FORMS))
    return None if found is None else (f"{found[0]} {found[1]}", f"drop {found[0]} for a measurement")


_SYNTH_LOG = re.compile(f"{LOG_SYNTH_WARNING}|{LOG_SYNTH_INFO}")


def forced_in_log_line(line: str) -> tuple[str, str] | None:
    """llama-server's synthetic-acceptance log lines, as (what, hint), or None."""
    if _SYNTH_LOG.search(line):
        return ("llama.cpp synthetic acceptance", f"restart llama-server without {FLAG_SYNTH_LEN}/{FLAG_SYNTH_RATES} "
                f"(and without {ENV_SYNTH_LEN}/{ENV_SYNTH_RATES})")
    return None


PROFILE = plugin.EngineProfile(
    name="llamacpp",
    display_name="llama.cpp server",
    algorithms=tuple(SPEC_TYPES),
    draft_len_rules=(
        *(plugin.DraftLenRule(t, f"k = {FLAG_N_MAX} with {FLAG_N_MIN} = k and {FLAG_P_MIN} 0", True, _SPEC)
          for t in (SPEC_TYPE_DRAFT, "draft-eagle3", "draft-mtp")),
        *(plugin.DraftLenRule(t, f"k = min({FLAG_N_MAX}, the draft's block limit)", True, _SPEC) for t in BLOCK_TYPES),
    ),
    limits=(
        plugin.Limit("--spec-synth-len in [1, n_max + 1]; --spec-synth-rates: n_max values in [0, 1], non-increasing; "
                     "length and rates are mutually exclusive", source=_SPEC),
    ),
    caveats=(
        plugin.Caveat("synthetic acceptance draws one mt19937 stream per request, seeded by the request's seed (random "
                      "when none is given); a drafted end-of-generation token is never accepted", source=_CTX),
        plugin.Caveat("from a length, llama.cpp solves one constant conditional rate p (sum_{j=1..k} p^j = AL - 1, 32 "
                      "bisection steps): a geometric schedule, not vLLM's two-point one", ("simulate",), _SPEC),
        plugin.Caveat("counters are added when a request's slot is released; scrape /metrics after the response",
                      ("measure", "check-run"), _CTX),
    ),
    sources=(_ARG, _SPEC, _CTX, _TASK, _COMMON),
    curve_methods={**SPEC_TYPES, "draft-model": "draft-model"},
    env_prefixes=("LLAMA_ARG_",),
    check=plugin.CheckSupport(
        forced_in_args=forced_in_args,
        forced_in_log_line=forced_in_log_line,
        review_pin=review_pin,
        synthetic_knobs=(
            # common/arg.cpp sets the option from its LLAMA_ARG_* form whatever the value: set means on
            plugin.SyntheticKnob(FLAG_SYNTH_LEN, "flag", "al", env=ENV_SYNTH_LEN, source=_ARG, env_off=_never_off),
            plugin.SyntheticKnob(FLAG_SYNTH_RATES, "flag", "rates", env=ENV_SYNTH_RATES, source=_ARG, env_off=_never_off),
        ),
        synthetic_settings=synthetic_settings,
        shell_env=synthetic_shell_env,
        script_pin=plugin.lazy(f"{__name__}.pins:llamacpp_pin"),
        script_flags=(FLAG_N_MAX, FLAG_N_MIN, *P_MIN_FORMS[:2], *DRAFT_MODEL_FORMS[:3], FLAG_SPEC_TYPE),
        short_flags={"-m": "--model", "-md": FLAG_DRAFT_MODEL},
        command_line=plugin.CommandLine(
            value_knobs={**{f: f for f in SYNTH_FLAG_FORMS}, **{v: f for f, v in SYNTH_FLAG_FORMS.items()}},
            read=read_command_line,
        ),
        runtime_draft_len=(
            plugin.RuntimeDraftLen(P_MIN_FORMS, "ends a draft early when the draft model is unsure (a draft length per step)",
                                   _SPEC, unsafe=_p_min_on),
        ),
    ),
    server=plugin.ServerSupport(
        metrics=(
            plugin.Metric(DRAFTS_METRIC, "counter", "verify steps that carried a draft", source=_TASK),
            plugin.Metric(DRAFT_TOKENS_METRIC, "counter", "draft tokens proposed", source=_TASK),
            plugin.Metric(ACCEPTED_METRIC, "counter", "draft tokens accepted", source=_TASK),
            plugin.Metric(ACCEPTED_PER_POS_METRIC, "counter", "verify steps that accepted draft position i (0-based)",
                          labels=("position",), source=_TASK),
            plugin.Metric(REQUESTS_PROCESSING_METRIC, "gauge", "requests running", source=_TASK),
            plugin.Metric(REQUESTS_DEFERRED_METRIC, "gauge", "requests waiting for a slot", source=_TASK),
        ),
        response_fields={
            "draft_tokens": plugin.ResponseField("draft tokens proposed for this request", ("draft_n",), "timings", _COMMON),
            "accepted_tokens": plugin.ResponseField("draft tokens accepted for this request", ("draft_n_accepted",),
                                                    "timings", _COMMON),
            # server_slot: t_start_generation is set at the first generated token (n_decoded == 1), so
            # predicted_ms spans the decode steps that emit the rest
            "decode_ms": plugin.ResponseField("milliseconds from the first generated token to the last",
                                              ("predicted_ms",), "timings", _CTX),
        },
        counter_reader=plugin.lazy(f"{__name__}.counters:read"),
        counter_marker=DRAFTS_METRIC,
        al_sources=("llamacpp-prometheus",),
        source_impls={"llamacpp-prometheus": plugin.lazy(f"{__name__}.server:LlamaCppPrometheusSource")},
        server_probe=plugin.lazy(f"{__name__}.server:probe"),
    ),
    launch=plugin.LaunchSupport(
        spec_flags=spec_flags,
        launch_command=("llama-server",),
        server_args=server_args,
        reserved_flags=RESERVED_FLAGS,
        executable="llama-server",
        model_files="gguf",
        served_name_flag=FLAG_ALIAS,
        build=plugin.EngineBuild(
            BUILD["target"],
            f"downloads the pinned {BUILD['package']} sdist from the package index (sha256-checked, never installed), "
            f"builds {BUILD['target']} from its vendored llama.cpp with cmake, and caches it under the golden-al cache "
            "keyed by the source hash; a second call returns at once",
            plugin.lazy(f"{__name__}.build:build_llama_server"), plugin.lazy(f"{__name__}.build:check_binary")),
        launch_method=lambda algorithm, draft: "draft-model",
        launch_draft_len=draft_len_from_args,
    ),
    simulate=plugin.SimulateSupport(
        default_sampler="synthetic",
        samplers={"synthetic": plugin.lazy(f"{__name__}.sampler:LlamaCppSynthetic")},
        simulator_settings=simulator_settings,
        simulate_options=(plugin.SimulateOption(
            "--rates", "rates", metavar="P1,P2,...", parse=plugin.parse_rates, gives_al=_simulate_rates_al,
            help="--spec-synth-rates, K unconditional non-increasing rates in [0, 1]"),),
    ),
    run_logs=plugin.RunLogSupport(
        log_patterns=(
            plugin.LogPattern("draft-acceptance", LOG_DRAFT_ACCEPTANCE,
                              "per request: accepted / drafted tokens; mean len = 1 + accepted / verify steps", _CTX),
            plugin.LogPattern("synthetic-warning", LOG_SYNTH_WARNING, "synthetic acceptance is on", _SPEC),
            plugin.LogPattern("synthetic-info", LOG_SYNTH_INFO, "the resolved synthetic schedule (n_max, mean length, rates)",
                              _SPEC),
        ),
        run_evidence=plugin.lazy(f"{__name__}.evidence:read"),
    ),
)
