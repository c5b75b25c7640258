"""A roles recipe whose roles run different engines (TileRT's shape: real vLLM prefill, a decode engine that
simulates through its environment) is planned and checked from an engine profile alone: a toy engine, registered
here and nowhere else, gets the golden point in the one role its recipe format lets simulate, and its variables
unset everywhere else (issue 50: TileRT must need no general module edited)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from golden_al.checks.static import check_paths
from golden_al.errors import UsageError
from golden_al.golden import load_store
from golden_al.plugin.profile import (
    CheckSupport,
    DraftLen,
    DraftLenRule,
    EngineProfile,
    RecipeFormat,
    Speculation,
    SyntheticKnob,
)
from golden_al.plugin.registry import ENGINES
from golden_al.recipes.srtctl import apply_overrides
from golden_al.selection import select_recipe

LEN, METHOD = "TOYRT_SIMULATE_ACC_LEN", "TOYRT_SIMULATE_ACC_METHOD"
STORE = load_store(None)


def _read(args: Mapping[str, Any]) -> Speculation | None:
    if args.get("with-mtp") is not True:
        return None
    n = args.get("num-mtp")
    return Speculation("toyrt", "mtp", {"num-mtp": n}, None, None, draft_inputs={"num-mtp": n})


def _draft_len(spec: Speculation | None) -> DraftLen:
    n = spec.settings.get("num-mtp") if spec is not None else None
    if not isinstance(n, int):
        raise UsageError("no num-mtp")
    return DraftLen(n, "k = num-mtp", algorithm="mtp")


def _settings(al: float, k: int, **_: Any) -> dict[str, Any]:
    return {LEN: f"{al:g}", METHOD: "match-expected"}


TOY = EngineProfile(
    name="toyrt", display_name="ToyRT", algorithms=("mtp",), draft_len_rules=(DraftLenRule("mtp", "k = num-mtp"),),
    curve_methods={"mtp": "mtp"}, frameworks=("toyrt",),
    check=CheckSupport(synthetic_knobs=(SyntheticKnob(LEN, "env", "al"),
                                        SyntheticKnob(METHOD, "env", "choice", role="companion",
                                                      choices=("match-expected",), required_value="match-expected")),
                       synthetic_settings=_settings, settings_draft_len=_draft_len),
    recipe=RecipeFormat("toyrt_config", ("toyrt",), _read, spec_keys=("with-mtp", "num-mtp"),
                        simulated_roles=("decode",)),
)


def _forget() -> None:
    """Every cached answer of golden-al's modules about the registered engines."""
    for name, module in list(sys.modules.items()):
        if name.startswith("golden_al"):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


@pytest.fixture
def toy() -> Iterator[None]:
    ENGINES.add("toyrt", TOY)
    _forget()
    try:
        yield
    finally:
        del ENGINES.entries["toyrt"]
        ENGINES.reset()
        _forget()


RECIPE = {
    "name": "glm-tilert-like", "model": {"path": "deepseek-ai/DeepSeek-V4-Pro"}, "engine": "toyrt",
    "benchmark": {"type": "custom", "command": "bash benchmarks/multi_node/agentic_srt.sh"},
    "environment": {"KEEP": "global", LEN: "99", METHOD: "stale"},
    "roles": {
        "prefill": {"engine": "vllm", "args": {"speculative-config": '{"method": "mtp", "num_speculative_tokens": 1}'},
                    "env": {LEN: "99"}},
        "decode": {"engine": {"type": "toyrt"}, "args": {"with-mtp": True, "num-mtp": 3}, "env": {"AR": "2"}},
    },
}


def test_only_the_role_the_engine_lets_simulate_gets_the_golden_and_every_other_is_cleaned(
        toy: None, tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(RECIPE, sort_keys=False))
    (v,) = select_recipe(path, store=STORE).variants
    assert (v.engine, v.role, v.k, v.al) == ("toyrt", "decode", 3, 2.49)
    assert [(o.op, o.dotted, o.value) for o in v.overrides] == [
        ("unset", "roles.prefill.env.TOYRT_SIMULATE_ACC_LEN", None),  # prefill runs real vLLM
        ("unset", "environment.TOYRT_SIMULATE_ACC_LEN", None),  # srtctl applies it after the roles' own
        ("unset", "environment.TOYRT_SIMULATE_ACC_METHOD", None),
        ("set", "roles.decode.env.TOYRT_SIMULATE_ACC_LEN", "2.49"),
        ("set", "roles.decode.env.TOYRT_SIMULATE_ACC_METHOD", "match-expected")]
    applied = apply_overrides(RECIPE, v.overrides)
    assert applied["roles"]["prefill"] == {"engine": "vllm", "args": RECIPE["roles"]["prefill"]["args"], "env": {}}
    assert applied["environment"] == {"KEEP": "global"}
    out = tmp_path / "applied.yaml"
    out.write_text(yaml.safe_dump(applied, sort_keys=False))
    assert [(f.engine, f.verdict, f.draft_len) for f in check_paths([str(out)], store=STORE).findings] == [
        ("toyrt", "match", 3)]


def test_a_role_of_an_engine_golden_al_does_not_know_is_refused_naming_it(tmp_path: Path) -> None:
    """Without the engine registered, the decode role's engine is unknown: refused, never guessed."""
    from golden_al.recipes.plan import SelectionError

    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({**RECIPE, "engine": "vllm"}, sort_keys=False))  # else prefill would be planned
    with pytest.raises(SelectionError, match=r"the decode role runs an unknown engine 'toyrt' \(engine\)"):
        select_recipe(path, store=STORE)
