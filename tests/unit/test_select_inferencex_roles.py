"""The differential test of issue 50 item 6: ``select`` against InferenceX's newest launch-time selector.

The fixtures (``tests/fixtures/select/inferencex-roles``, by ``experiments/inferencex-select/roles_fixtures.py``) are
every recipe of InferenceX 843c625 that a master config runs in an agentic scenario and that speculates, pins
removed, in the roles format the newest selector reads, each with the identity InferenceX launches it with. The
selector's facts (SemiAnalysisAI/InferenceX ``infx/srt_slurm/synthetic_acceptance.py``, the version that plans
``atom``, ``atom-disagg`` and ``tilert``, with ``infx/golden_al_distribution``'s ``curve_name``/``golden_length``)
are modelled below from their documented behaviour (our own code, none of theirs); golden-al must give the same
golden, k and override paths, except in the cases of :data:`DIFFERENCES`, each proven by an engine's own source; and,
in a run that does not simulate (EVAL_ONLY, not IS_AGENTIC, SPEC_DECODING=none), unset every synthetic setting the
selector unsets, so that ``check`` on the result finds no pin.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from golden_al.checks.static import check_paths
from golden_al.golden import load_store
from golden_al.recipes.derive import Identity
from golden_al.recipes.plan import SelectionError
from golden_al.recipes.srtctl import apply_overrides, expand_variants
from golden_al.selection import select_recipe

FIX = Path(__file__).resolve().parents[1] / "fixtures"
DIR = FIX / "select" / "inferencex-roles"
GOLDEN = FIX / "inferencex" / "golden_al_distribution"
CASES: dict[str, Any] = json.loads((DIR / "cases.json").read_text())["cases"]
STORE = load_store(GOLDEN)

#: framework -> engine, as the selector maps them
ENGINES = {"sglang": "sglang", "mori-sglang": "sglang", "sglang-disagg": "sglang", "dynamo-sglang": "sglang",
           "vllm": "vllm", "vllm-disagg": "vllm", "dynamo-vllm": "vllm", "trt": "trtllm", "dynamo-trt": "trtllm",
           "atom": "atom", "atom-disagg": "atom", "tilert": "tilert"}
ENV_VARS = {"sglang": ("SGLANG_SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD", "SGLANG_SIMULATE_ACC_TOKEN_MODE"),
            "trtllm": ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",),
            "tilert": ("TILERT_SIMULATE_ACC_LEN", "TILERT_SIMULATE_ACC_METHOD")}


def _their_spec(role: Mapping[str, Any], engine: str) -> dict[str, Any]:
    """What the selector reads of one role: method, k, draft model, draft sampler (empty: no speculation)."""
    args = role.get("args") or {}
    if engine == "tilert":
        return {} if args.get("with-mtp") is not True else {"method": "mtp", "k": args.get("num-mtp")}
    if engine == "atom":
        method = str(args.get("method") or "").lower()
        return {} if not method else {"method": method, "k": args.get("num-speculative-tokens"),
                                      "model": args.get("draft-model", ""),
                                      "draft_sample_method": "probabilistic" if method == "dspark" else None}
    if engine == "vllm":
        raw = args.get("speculative-config")
        cfg = json.loads(raw) if isinstance(raw, str) else (raw or {})
        return {} if not cfg else {"method": cfg.get("method"), "k": cfg.get("num_speculative_tokens"),
                                   "model": cfg.get("model", ""), "draft_sample_method": cfg.get("draft_sample_method"),
                                   "config": cfg}
    if engine == "sglang":
        method = str(args.get("speculative-algorithm") or args.get("speculative-algo") or "").lower()
        key = "speculative-dspark-block-size" if method == "dspark" else "speculative-num-steps"
        return {} if not method else {"method": method, "k": args.get(key),
                                      "model": args.get("speculative-draft-model-path", "")}
    cfg = args.get("speculative_config") or {}
    return {} if not cfg else {"method": str(cfg.get("decoding_type", "")).lower(), "k": cfg.get("max_draft_len"),
                               "model": cfg.get("speculative_model", "")}


def _their_curve(prefix: str, spec: Mapping[str, Any]) -> str:
    """The curve file stem the selector reads (its special cases, from its curve_name)."""
    method = str(spec.get("method", "")).lower()
    if method in ("eagle", "nextn"):
        method = "eagle3" if prefix in ("kimik2.5", "minimaxm3") else "mtp"
    if prefix.startswith("dsv4") and method == "dspark":
        return "dsv4-pro-0813-dspark"
    if prefix == "minimaxm3" and method == "eagle3" and "gqa" in str(spec.get("model", "")).lower():
        return f"{prefix}_{method}_gqa"
    if prefix == "kimik3" and method == "dspark":
        sampler = spec.get("draft_sample_method")
        if sampler not in ("greedy", "probabilistic"):
            raise ValueError(f"no Kimi DSpark curve for draft sampling {sampler!r}")
        return f"{prefix}_{method}" + ("_probabilistic_sample_method_block_rejection_sample_method"
                                       if sampler == "probabilistic" else "")
    return f"{prefix}_{method}"


def their_plan(recipe: Mapping[str, Any], framework: str, prefix: str, thinking: str, *, synthetic: bool = True
               ) -> tuple[int | None, float | None, dict[tuple[str, str], Any]]:
    """(k, golden AL, {(op, path): value}) the selector plans for one resolved variant of a roles recipe;
    ``synthetic`` False (EVAL_ONLY, not IS_AGENTIC, SPEC_DECODING=none): real acceptance restored."""
    engine = ENGINES[framework]
    roles = recipe.get("roles") or {}
    spec = _their_spec(roles.get("decode", roles.get("agg", {})), engine)
    k = al = None
    if synthetic and spec:
        k = spec["k"]
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError("a positive integer draft length is required")
        (modes,) = yaml.safe_load((GOLDEN / f"{_their_curve(prefix, spec)}.yaml").read_text()).values()
        al = float(modes[thinking][k])
    out: dict[tuple[str, str], Any] = {("unset", f"environment.{v}"): None for v in ENV_VARS.get(engine, ())
                                       if v in (recipe.get("environment") or {})}
    for name, role in roles.items():
        if name not in ("agg", "prefill", "decode"):
            continue
        runs, role_al, env = engine, al, role.get("env") or {}
        if engine == "tilert":  # only the decode role running TileRT simulates; prefill runs real vLLM
            runs = role.get("engine", recipe.get("engine", "tilert"))
            runs = runs.get("type") if isinstance(runs, Mapping) else runs
            role_al = al if name == "decode" and runs == "tilert" else None
        worker = _their_spec(role, runs)
        if engine == "tilert" and (role_al is None or not worker):
            out.update({("unset", f"roles.{name}.env.{v}"): None for v in ENV_VARS[engine] if v in env})
        cfg = worker.get("config", {})
        if runs == "vllm" and worker and role_al is not None:
            out["set", f"roles.{name}.args.speculative-config"] = {
                **cfg, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": role_al}
        elif runs == "vllm" and (cfg.get("rejection_sample_method") == "synthetic" or "synthetic_acceptance_length" in cfg):
            out["set", f"roles.{name}.args.speculative-config"] = {
                **{k: v for k, v in cfg.items() if k != "synthetic_acceptance_length"}, "rejection_sample_method": "block"}
        elif runs == "atom" and role_al is not None and worker:
            out["set", f"roles.{name}.args.spec-decode-acceptance-length"] = role_al
        elif runs == "atom" and "spec-decode-acceptance-length" in (role.get("args") or {}):
            out["unset", f"roles.{name}.args.spec-decode-acceptance-length"] = None
        elif runs != "vllm" and role_al is not None and worker:
            values = {"sglang": (role_al, "match-expected", "real-draft-token"), "tilert": (role_al, "match-expected"),
                      "trtllm": (role_al - 1,)}[engine]
            out.update({("set", f"roles.{name}.env.{v}"): x for v, x in zip(ENV_VARS[engine], values, strict=True)})
        elif engine in ("sglang", "trtllm"):
            out.update({("unset", f"roles.{name}.env.{v}"): None for v in ENV_VARS[engine] if v in env})
    return k, al, out


def _ours(overrides: Any) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for o in overrides:
        value = o.value
        if isinstance(value, str) and value.startswith("{"):
            value = json.loads(value)
        elif isinstance(value, str) and o.path[-1] in (*ENV_VARS["sglang"][:1], *ENV_VARS["trtllm"], ENV_VARS["tilert"][0]):
            value = round(float(value), 9)
        out[o.op, o.dotted] = value
    return out


#: Where golden-al's plan differs, and the engine source that proves golden-al right.
DIFFERENCES = [
    ("a role that drafts another k than the generating role gets the golden AL at its own k; the selector writes the "
     "generating role's, which the role's server refuses above its k + 1 (a prefill role at k=1 cannot take 2.49)",
     "ROCm/ATOM atom/config.py line 1134 at ffdf3bb5d (_resolve_synthetic_acceptance: 'must be in [1, n + 1] for "
     "num_speculative_tokens=n'); vllm-project/vllm vllm/config/speculative.py at 0.34.0 (the synthetic acceptance "
     "check: 'synthetic_acceptance_length must be in [1, n+1]')"),
    ("THINKING_MODE thinking_on against a recipe whose DYN_DEFAULT_THINKING_MODE is disabled is refused (the "
     "selector writes the thinking_on golden): that variable is a deployment default, so the run may run thinking off",
     "ai-dynamo/dynamo, its TensorRT-LLM backend docs: request-level chat_template_kwargs override the default"),
    ("TileRT: a decode role with MTP on and no num-mtp drafts 3, its decode server's default (the selector refuses "
     "it); a num-mtp other than 3 is refused (the selector plans its golden, and the decode server does not start)",
     "tile-ai/TileRT tilert/pd_vllm/decode_server.py line 309 at 0.1.6.post3 (PyPI): --num-mtp choices=(3,), "
     "default=3"),
    ("a restore (eval-only, not agentic, SPEC_DECODING=none; a TileRT recipe's real vLLM prefill) sets vLLM's "
     "rejection_sample_method back to the method the golden curve was measured with, block only where the curve says "
     "so (Kimi-K3 DSpark probabilistic), else vLLM's default standard; the selector writes block everywhere. Both are "
     "lossless, but block verification accepts differently for sampled requests, and the curves are measured at "
     "temperature 1.0 with the default",
     "vllm-project/vllm vllm/config/speculative.py line 610 at 0.34.0 (rejection_sample_method default 'standard'), "
     "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py lines 617 and 645 at 0.34.0 (greedy requests: exact "
     "match whatever the method; block verification only for sampled ones); SemiAnalysisAI/InferenceX "
     "benchmarks/single_node/speedbench/glm52_fp4_b300_vllm.sh line 158 at 843c625 (a curve measured without the key)"),
]


def _variants() -> list[tuple[str, str | None]]:
    out = []
    for name in sorted(CASES):
        doc = yaml.safe_load((DIR / name).read_text())
        out += [(name, v.selector) for v in expand_variants(doc)]
    return out


VARIANTS = _variants()


def _compare(data: Mapping[str, Any], case: Mapping[str, Any], recipe: Path, selector: str | None) -> str:
    """golden-al's plan of one variant against the selector's: the same golden, k and override paths, and the same
    values but where :data:`DIFFERENCES` says; returns the class of the outcome."""
    framework, prefix = case["framework"], case["MODEL_PREFIX"]
    k, al, theirs = their_plan(data, framework, prefix, case["THINKING_MODE"])
    identity = Identity(model=prefix, model_source="MODEL_PREFIX", thinking="on", thinking_source="THINKING_MODE",
                        framework=framework, agentic=True)
    try:
        (ours,) = select_recipe(recipe, selector=selector, identity=identity, store=STORE).variants
    except SelectionError as exc:
        refusal = str(exc)
    else:
        refusal = ""
    if refusal:
        assert "DYN_DEFAULT_THINKING_MODE" in refusal, refusal
        assert "may run thinking off" in refusal, refusal
        return "refused: DIFFERENCES[1]"
    assert (ours.k, ours.al) == (k, al)
    got = _ours(ours.overrides)
    assert set(got) == set(theirs)
    outcome = "same"
    for (op, path), value in theirs.items():
        role = path.split(".")[1] if path.startswith("roles.") else None
        own = _their_spec(data["roles"][role], ENGINES[framework]).get("k") if role else k
        mine = got[op, path]
        if own != k and ENGINES[framework] in ("vllm", "atom"):  # DIFFERENCES[0]: its server validates the value
            mine_al = mine["synthetic_acceptance_length"] if isinstance(mine, dict) else mine
            assert 1 <= mine_al <= own + 1 < al
            assert not isinstance(mine, dict) or mine == {**value, "synthetic_acceptance_length": mine_al}
            outcome = "per-role AL: DIFFERENCES[0]"
        elif isinstance(mine, dict) and mine == {**value, "rejection_sample_method": "standard"} != value:
            outcome = "real method: DIFFERENCES[3]"
        else:
            assert mine == (round(value, 9) if isinstance(value, float) else value), path
    return outcome


def test_the_fixtures_hold_every_agentic_speculative_variant() -> None:
    assert len(CASES) == 99
    assert len(VARIANTS) == 103


@pytest.mark.parametrize(("name", "selector"), VARIANTS, ids=[f"{n}:{s}" for n, s in VARIANTS])
def test_select_agrees_with_inferencexs_selector_or_is_right_where_it_differs(name: str, selector: str | None) -> None:
    doc = yaml.safe_load((DIR / name).read_text())
    (variant,) = [v for v in expand_variants(doc) if v.selector == selector]
    outcome = _compare(variant.data, CASES[name], DIR / name, selector)
    assert outcome in ("same", "refused: DIFFERENCES[1]")


#: the run modes that do not simulate (InferenceX: EVAL_ONLY, IS_AGENTIC false, SPEC_DECODING none), one per variant
RESTORES = [{"mode": "eval-only"}, {"agentic": False}, {"spec_decoding": "none"}]


def _compare_restore(recipe: Mapping[str, Any], case: Mapping[str, Any], path: Path, restore: Mapping[str, Any]) -> None:
    """``recipe`` pinned as ``select`` plans it (a stale recipe-wide variable beside), then planned by a run that does
    not simulate: the same paths as the selector, the same values but DIFFERENCES[3]; ``check`` on the result finds
    no pin."""
    engine = ENGINES[case["framework"]]
    identity = {"model": case["MODEL_PREFIX"], "thinking": "on", "framework": case["framework"], "agentic": True}
    path.write_text(yaml.safe_dump(dict(recipe), sort_keys=False))
    try:
        (pinned,) = select_recipe(path, identity=Identity(**identity), store=STORE).variants
    except SelectionError:  # DIFFERENCES[1]: nothing pinned but the recipe-wide variable
        pinned = None
    data = apply_overrides(recipe, pinned.overrides if pinned else ())
    data["environment"] = {**(data.get("environment") or {}), **{v: "9" for v in ENV_VARS.get(engine, ())[:1]}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    (ours,) = select_recipe(path, identity=Identity(**{**identity, **restore}), store=STORE).variants
    theirs = their_plan(data, case["framework"], case["MODEL_PREFIX"], case["THINKING_MODE"], synthetic=False)[2]
    got = _ours(ours.overrides)
    assert set(got) == set(theirs) != set()
    for key, value in theirs.items():
        real = got[key].get("rejection_sample_method") if isinstance(got[key], dict) else None
        assert got[key] == value or (engine in ("vllm", "tilert") and real == "standard" and got[key] == {
            **value, "rejection_sample_method": real}), key  # DIFFERENCES[3]
        assert real in (None, "block" if "block_rejection" in str(pinned and pinned.curve) else "standard")
    path.write_text(yaml.safe_dump(apply_overrides(data, ours.overrides), sort_keys=False))
    assert check_paths([path], store=STORE).findings == []


@pytest.mark.parametrize(("name", "selector"), VARIANTS, ids=[f"{n}:{s}" for n, s in VARIANTS])
def test_a_run_that_does_not_simulate_leaves_no_pin_in_force_as_inferencexs_selector(name: str, selector: str | None,
                                                                                    tmp_path: Path) -> None:
    (variant,) = [v for v in expand_variants(yaml.safe_load((DIR / name).read_text())) if v.selector == selector]
    (tmp_path / "agentic").mkdir()
    _compare_restore(variant.data, CASES[name], tmp_path / "agentic" / "r.yaml",
                     RESTORES[VARIANTS.index((name, selector)) % len(RESTORES)])


def _roles(prefill: dict[str, Any] | None, decode: dict[str, Any], path: str) -> dict[str, Any]:
    roles = {"decode": {"args": decode, "env": {"KEEP": "1"}}}
    if prefill is not None:
        roles["prefill"] = {"args": prefill}
    return {"name": "new-framework", "model": {"path": path}, "benchmark": {"type": "custom", "command":
            "bash benchmarks/multi_node/agentic_srt.sh"}, "environment": {"KEEP": "global"}, "roles": roles}


def _vllm(k: int) -> dict[str, Any]:
    return {"speculative-config": json.dumps({"method": "mtp", "num_speculative_tokens": k})}


#: The frameworks the 843c625 tree does not launch: (framework, MODEL_PREFIX, recipe, expected outcome).
NEW_FRAMEWORKS = [
    ("atom-disagg", "dsv4", _roles({"method": "mtp", "num-speculative-tokens": 1},
                                   {"method": "mtp", "num-speculative-tokens": 3}, "deepseek-ai/DeepSeek-V4-Pro"),
     "per-role AL: DIFFERENCES[0]"),
    ("atom", "kimik3", _roles(None, {"method": "dspark", "num-speculative-tokens": 3,
                                     "draft-model": "Inferact/Kimi-K3-DSpark"}, "moonshotai/Kimi-K3"), "same"),
    ("atom", "minimaxm3", _roles(None, {"method": "eagle3", "num-speculative-tokens": 3,
                                        "draft-model": "Inferact/MiniMax-M3-EAGLE3-GQA"}, "MiniMaxAI/MiniMax-M3"),
     "same"),
    ("mori-sglang", "dsv4", _roles({"speculative-algorithm": "EAGLE", "speculative-num-steps": 3},
                                   {"speculative-algorithm": "EAGLE", "speculative-num-steps": 3,
                                    "speculative-eagle-topk": 1, "speculative-num-draft-tokens": 4},
                                   "deepseek-ai/DeepSeek-V4-Pro"), "same"),
    ("sglang-disagg", "glm5.2", _roles(None, {"speculative-algorithm": "EAGLE", "speculative-num-steps": 3,
                                              "speculative-eagle-topk": 1, "speculative-num-draft-tokens": 4},
                                       "zai-org/GLM-5.2-FP8"), "same"),
    ("vllm-disagg", "dsv4", _roles(_vllm(1), _vllm(3), "deepseek-ai/DeepSeek-V4-Pro"), "per-role AL: DIFFERENCES[0]"),
]


@pytest.mark.parametrize(("framework", "prefix", "recipe", "expected"), NEW_FRAMEWORKS,
                         ids=[f"{f}-{p}" for f, p, _, _ in NEW_FRAMEWORKS])
def test_the_new_frameworks_agree_or_differ_where_an_engine_proves_golden_al_right(
        framework: str, prefix: str, recipe: dict[str, Any], expected: str, tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    case = {"framework": framework, "MODEL_PREFIX": prefix, "THINKING_MODE": "thinking_on"}
    assert _compare(recipe, case, path, None) == expected


def _tilert(decode: dict[str, Any]) -> dict[str, Any]:
    """InferenceX's TileRT shape: a real vLLM prefill, the TileRT decode role, stale values recipe-wide."""
    recipe = _roles(_vllm(1), decode, "zai-org/GLM-5.2-FP8")
    recipe["roles"]["prefill"]["engine"] = "vllm"
    recipe["roles"]["decode"]["engine"] = {"type": "tilert"}
    recipe["environment"].update(TILERT_SIMULATE_ACC_LEN="99", TILERT_SIMULATE_ACC_METHOD="stale")
    return recipe


@pytest.mark.parametrize(("stale", "expected"), [(False, "same"), (True, "real method: DIFFERENCES[3]")])
def test_tilert_agrees_in_its_decode_role_only(stale: bool, expected: str, tmp_path: Path) -> None:
    recipe = _tilert({"with-mtp": True, "num-mtp": 3})
    if stale:  # a stale pin in the real vLLM prefill: restored to the curve's method (DIFFERENCES[3])
        recipe["roles"]["prefill"]["args"]["speculative-config"] = json.dumps({
            "method": "mtp", "num_speculative_tokens": 1, "rejection_sample_method": "synthetic",
            "synthetic_acceptance_length": 1.5})
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    case = {"framework": "tilert", "MODEL_PREFIX": "glm5.2", "THINKING_MODE": "thinking_on"}
    assert _compare(recipe, case, path, None) == expected


@pytest.mark.parametrize(("depth", "theirs", "ours"), [(None, "refused", 3), (2, 2, "refused")])
def test_tilert_depths_where_its_decode_server_proves_golden_al_right(depth: int | None, theirs: Any, ours: Any,
                                                                      tmp_path: Path) -> None:
    """DIFFERENCES[2]."""
    recipe = _tilert({"with-mtp": True, **({} if depth is None else {"num-mtp": depth})})
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    try:
        their = their_plan(recipe, "tilert", "glm5.2", "thinking_on")[0]
    except ValueError:
        their = "refused"
    identity = Identity(model="glm5.2", thinking="on", framework="tilert", agentic=True)
    if ours == "refused":
        with pytest.raises(SelectionError, match="--num-mtp 3 only"):
            select_recipe(path, identity=identity, store=STORE)
    else:
        assert select_recipe(path, identity=identity, store=STORE).variants[0].k == ours
    assert their == theirs


@pytest.mark.parametrize("restore", RESTORES, ids=["eval-only", "not agentic", "SPEC_DECODING none"])
@pytest.mark.parametrize(("framework", "prefix", "recipe"), [
    *[(f, p, r) for f, p, r, _ in NEW_FRAMEWORKS], ("tilert", "glm5.2", _tilert({"with-mtp": True, "num-mtp": 3}))],
    ids=[*(f"{f}-{p}" for f, p, _, _ in NEW_FRAMEWORKS), "tilert-glm5.2"])
def test_the_new_frameworks_leave_no_pin_in_force_when_they_do_not_simulate(
        framework: str, prefix: str, recipe: dict[str, Any], restore: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "agentic").mkdir()
    case = {"framework": framework, "MODEL_PREFIX": prefix, "THINKING_MODE": "thinking_on"}
    _compare_restore(recipe, case, tmp_path / "agentic" / "r.yaml", restore)
