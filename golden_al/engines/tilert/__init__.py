"""TileRT: everything golden-al knows about it, in one place.

TileRT serves disaggregated: a vLLM prefill worker (``tilert.pd_vllm.prefill_connector``) hands each request to the
TileRT decode server (``python -m tilert.pd_vllm.decode_server``), which drafts with the model's MTP head.
Upstream (tile-ai/TileRT, the PyPI wheel tilert 0.1.6.post3 unless noted):

* ``tilert/pd_vllm/decode_server.py``: ``--with-mtp`` (a switch: MTP speculative decoding on) and ``--num-mtp``
  (the MTP draft depth, ``choices=(3,)``, default 3; v0.1.5 has no ``--num-mtp`` and always drafts 3).
* ``tilert/models/glm_5_2_rocm/ops/mtp.py`` (the CPU reference of the fused step tail): a simulated step takes each
  request's accepted drafts from ``sim_accept``, clamped to ``[0, num_mtp]``, and rewrites every emitted token id to
  100. ``sim_accept`` is drawn from ``TILERT_SIMULATE_ACC_LEN`` in a compiled kernel (``simulate_accept_len_kernel``
  of ``libtilert_glm52_rocm.so``), whose messages say ``TILERT_SIMULATE_ACC_METHOD`` "only supports
  'match-expected'" and the length "must be a finite in-range float"; how the kernel draws is not public.
* SemiAnalysisAI/InferenceX ``infx/srt_slurm/synthetic_acceptance.py`` (the version that plans ``tilert``; the stored
  copy names no commit): a role speculates when ``args.with-mtp`` is true, k = ``args.num-mtp``, method MTP; only the
  decode role running TileRT simulates, through ``TILERT_SIMULATE_ACC_LEN="<al:g>"`` and
  ``TILERT_SIMULATE_ACC_METHOD="match-expected"`` in its environment (the decode server has no flag for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from distributions import units
from golden_al import plugin

__all__ = ["ENV_LEN", "ENV_METHOD", "PROFILE", "read_recipe_role", "settings_draft_len", "synthetic_settings"]

_REPO = "tile-ai/TileRT"
VERSION = "0.1.6.post3"
_DECODE = plugin.Source(_REPO, "tilert/pd_vllm/decode_server.py", VERSION)
_MTP = plugin.Source(_REPO, "tilert/models/glm_5_2_rocm/ops/mtp.py", VERSION)
_KERNEL = plugin.Source(_REPO, "tilert/libtilert_glm52_rocm.so (compiled: its messages only)", VERSION)
_SELECTOR = plugin.Source("SemiAnalysisAI/InferenceX", "infx/srt_slurm/synthetic_acceptance.py", "the version planning tilert")

ENV_LEN = "TILERT_SIMULATE_ACC_LEN"
ENV_METHOD = "TILERT_SIMULATE_ACC_METHOD"
METHOD = "match-expected"  #: the one method TileRT accepts
WITH_MTP = "with-mtp"  #: decode_server's switch (a recipe writes it as a boolean, srtctl passes ``--with-mtp``)
NUM_MTP = "num-mtp"
DEPTHS = (3,)  #: ``--num-mtp`` choices of the decode server
DEFAULT_DEPTH = 3


def read_recipe_role(args: Mapping[str, Any]) -> plugin.Speculation | None:
    """One srt-slurm role's TileRT decode settings (None: neither ``with-mtp`` nor ``num-mtp``); it speculates only
    when ``with-mtp`` is the boolean true, and another value than a boolean is a problem (srtctl would pass it as an
    argument of the switch)."""
    if WITH_MTP not in args and NUM_MTP not in args:
        return None
    on = args.get(WITH_MTP)
    problem = None if on is None or isinstance(on, bool) else f"{WITH_MTP}: {on!r} is not a boolean (a switch)"
    settings = {k: args[k] for k in (WITH_MTP, NUM_MTP) if k in args}
    return plugin.Speculation("tilert", "mtp" if on is True else None, settings, None, None, problem=problem,
                              speculates=on is True, draft_inputs={NUM_MTP: args.get(NUM_MTP, DEFAULT_DEPTH)})


def script_speculation(flags: Mapping[str, Any]) -> plugin.Speculation | None:
    """:func:`read_recipe_role` of a script's decode_server flags (``--with-mtp`` present: on)."""
    args = {WITH_MTP: True} if f"--{WITH_MTP}" in flags else {}
    return read_recipe_role({**args, **({NUM_MTP: flags[f"--{NUM_MTP}"]} if f"--{NUM_MTP}" in flags else {})})


def _depth(k: Any) -> int:
    """``--num-mtp`` as the decode server takes it (absent: its default). Raises UsageError for another depth."""
    n = plugin.int_flag(k, f"--{NUM_MTP}")
    n = DEFAULT_DEPTH if n is None else n
    if n not in DEPTHS:
        raise plugin.UsageError(f"TileRT's decode server accepts --{NUM_MTP} {'/'.join(map(str, DEPTHS))} only, got {n} "
                                f"({_DECODE.repo} {_DECODE.path} at {_DECODE.version})")
    return n


def settings_draft_len(spec: plugin.Speculation | None) -> plugin.DraftLen:
    """k = ``num-mtp`` (default 3) of a role whose ``with-mtp`` is true.

    Raises:
        UsageError: no TileRT settings, ``with-mtp`` not a boolean or off, a depth the decode server refuses.
    """
    if spec is None or spec.problem is not None or not spec.speculates:
        why = "no TileRT settings" if spec is None else spec.problem or f"{WITH_MTP} is not true (no MTP drafts)"
        raise plugin.UsageError(why)
    k = _depth(spec.settings.get(NUM_MTP))
    return plugin.DraftLen(k, f"k = {NUM_MTP}", described=f"TileRT {NUM_MTP}={k}", algorithm="mtp")


def synthetic_settings(al: float, k: int) -> dict[str, Any]:
    """``{"TILERT_SIMULATE_ACC_LEN": "3.2", "TILERT_SIMULATE_ACC_METHOD": "match-expected"}``."""
    al = units.check_al(al, k)
    return {ENV_LEN: plugin.format_value(al), ENV_METHOD: METHOD}


def _review(ctx: plugin.PinContext) -> plugin.PinReview:
    """A pinned length by its unit, and its method beside it: TileRT refuses any but ``match-expected``; what it does
    without one is not known."""
    review = PROFILE.review_value(ctx.knob, ctx.raw, ctx.value, ctx.k)
    method = (ctx.companions or {}).get(ENV_METHOD)
    if ctx.companions and method is None:
        review.problems.append(("missing-companion", f"{ENV_METHOD} is not set beside it: what TileRT draws without "
                                                     f"it is not known (InferenceX sets {METHOD})"))
    elif method is not None and method != METHOD:
        review.problems.append(("unsafe-value", f"{ENV_METHOD}={method!r}: TileRT refuses to start, it supports only "
                                                f"{METHOD!r} ({_KERNEL.path} at {VERSION})"))
    return review


PROFILE = plugin.EngineProfile(
    name="tilert",
    display_name="TileRT",
    frameworks=("tilert",),
    algorithms=("mtp",),
    draft_len_rules=(plugin.DraftLenRule("mtp", f"k = --{NUM_MTP} (default {DEFAULT_DEPTH}; the decode server accepts "
                                         f"{'/'.join(map(str, DEPTHS))} only)", True, _DECODE),),
    curve_methods={"mtp": "mtp"},
    caveats=(
        plugin.Caveat(f"TileRT draws each request's accepted drafts from {ENV_LEN} in a compiled kernel whose law is not "
                      "public (per request or per step, rounded or random, its generator)", ("simulate",), _KERNEL),
        plugin.Caveat(f"while simulating, TileRT rewrites every emitted token id to 100 ({_MTP.path}); in {VERSION} only its "
                      f"GLM-5.2 ROCm library reads {ENV_LEN}", ("env", "select", "check"), _MTP),
        plugin.Caveat("only the decode role simulates: the prefill role is vLLM, whose synthetic settings select restores",
                      ("select", "check"), _SELECTOR),
    ),
    sources=(_DECODE, _MTP, _KERNEL, _SELECTOR),
    env_prefixes=("TILERT_",),
    check=plugin.CheckSupport(
        synthetic_knobs=(
            plugin.SyntheticKnob(ENV_LEN, "env", "al", source=_SELECTOR),
            plugin.SyntheticKnob(ENV_METHOD, "env", "choice", role="companion", choices=(METHOD,), required_value=METHOD,
                                 source=_KERNEL),
        ),
        synthetic_settings=synthetic_settings,
        review_pin=_review,
        settings_draft_len=settings_draft_len,
        script_speculation=script_speculation,
        script_flags=(f"--{WITH_MTP}", f"--{NUM_MTP}"),
        script_settings="the TileRT decode_server flags",
    ),
    recipe=plugin.RecipeFormat(None, ("tilert",), read_recipe_role, inject_into="env", simulated_roles=("decode",),
                               spec_keys=(WITH_MTP, NUM_MTP)),
)
