"""TileRT (issue 50 item 2): its profile, k rule, role rules, and what select, check, env and simulate make of it.

The recipe is the one InferenceX's launch-time selector tests TileRT with (``infx/srt_slurm/tests/
test_synthetic_acceptance.py``, the version planning ``tilert``): a vLLM prefill role and a TileRT decode role.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.errors import UsageError
from golden_al.golden import load_store
from golden_al.plugin import registry
from golden_al.plugin.conformance import profile_problems
from golden_al.recipes.derive import Identity
from golden_al.recipes.plan import plan_document
from golden_al.recipes.srt_slurm import engine_named, read_recipe
from golden_al.recipes.srtctl import apply_overrides, parse_override

from .. import read_recipe_role, settings_draft_len

STORE = load_store(None)
TILERT = registry.get_profile("tilert")
GOLDEN = 2.99  # glm5.2_mtp thinking_on k=3 (the shipped curve)
STALE = {"TILERT_SIMULATE_ACC_LEN": "99", "TILERT_SIMULATE_ACC_METHOD": "match-expected"}


def _recipe(**decode_args: Any) -> dict[str, Any]:
    return {"model": {"path": "glm-5.2-fp8"}, "benchmark": {"type": "agentic"},
            "environment": {"KEEP": "global", **STALE},
            "roles": {"prefill": {"engine": "vllm", "env": dict(STALE), "args": {"speculative-config": json.dumps(
                          {"method": "mtp", "num_speculative_tokens": 1, "rejection_sample_method": "synthetic",
                           "synthetic_acceptance_length": 1.9})}},
                      "decode": {"engine": {"type": "tilert"}, "env": {"GLM5_AR_N": "2"},
                                 "args": {"with-mtp": True, "num-mtp": 3, **decode_args}}}}


def _plan(data: dict[str, Any], **identity: Any) -> Any:
    (plan,) = plan_document(data, path="tilert.yaml", selector=None, store=STORE,
                            identity=Identity(framework="tilert", thinking="on", **identity))
    return plan


def _check(tmp_path: Path, data: dict[str, Any]) -> list[tuple[str, str]]:
    f = tmp_path / "recipe.yaml"
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    return [(x.verdict, x.message) for x in check_paths([str(f)], store=STORE).findings]


def test_the_profile_passes_the_kit_and_the_framework_name_maps_to_it() -> None:
    others = {n: registry.get_profile(n) for n in registry.engine_names() if n != "tilert"}
    assert profile_problems(TILERT, entry_name="tilert", others=others) == []
    assert TILERT.capabilities() == ("check", "recipes")
    assert engine_named("tilert") == "tilert"


@pytest.mark.parametrize(("args", "k", "problem"), [
    ({"with-mtp": True, "num-mtp": 3}, 3, None),
    ({"with-mtp": True}, 3, None),  # decode_server's default depth (InferenceX refuses a missing num-mtp)
    ({"with-mtp": True, "num-mtp": 2}, None, "accepts --num-mtp 3 only, got 2"),
    ({"with-mtp": "true", "num-mtp": 3}, None, "'true' is not a boolean"),
    ({"with-mtp": False, "num-mtp": 3}, None, "with-mtp is not true"),
])
def test_k_is_num_mtp_of_a_role_with_mtp_on(args: dict[str, Any], k: int | None, problem: str | None) -> None:
    spec = read_recipe_role(args)
    if problem is None:
        assert settings_draft_len(spec).k == k
        return
    with pytest.raises(UsageError, match=problem):
        settings_draft_len(spec)


def test_env_writes_the_length_and_the_one_method() -> None:
    assert registry.synthetic_settings("tilert", 3.2, 3) == {"TILERT_SIMULATE_ACC_LEN": "3.2",
                                                            "TILERT_SIMULATE_ACC_METHOD": "match-expected"}
    with pytest.raises(ValueError, match="outside"):
        registry.synthetic_settings("tilert", 4.5, 3)


def test_each_role_gets_its_engine() -> None:
    recipe = read_recipe(_recipe())
    assert recipe is not None
    assert {rc.role: rc.engine for rc in recipe.base.roles} == {"prefill": "vllm", "decode": "tilert"}


def test_select_simulates_in_the_tilert_decode_role_only(tmp_path: Path) -> None:
    data = _recipe()
    plan = _plan(data)
    assert (plan.engine, plan.role, plan.k, plan.al, plan.method) == ("tilert", "decode", 3, GOLDEN, "mtp")
    applied = apply_overrides(data, plan.overrides)
    assert applied["roles"]["decode"]["env"] == {"GLM5_AR_N": "2", "TILERT_SIMULATE_ACC_LEN": "2.99",
                                                 "TILERT_SIMULATE_ACC_METHOD": "match-expected"}
    assert applied["roles"]["decode"]["args"] == data["roles"]["decode"]["args"]
    assert applied["roles"]["prefill"]["env"] == {}  # the vLLM prefill never gets TileRT's variables
    assert applied["environment"] == {"KEEP": "global"}  # srtctl applies it after the roles': no stale value stays
    prefill = json.loads(applied["roles"]["prefill"]["args"]["speculative-config"])
    assert "synthetic_acceptance_length" in json.loads(data["roles"]["prefill"]["args"]["speculative-config"])
    assert "synthetic_acceptance_length" not in prefill
    assert prefill["rejection_sample_method"] != "synthetic"
    assert [v for v, _ in _check(tmp_path, applied)] == ["match"]  # what select plans, check proves


def test_eval_only_restores_real_acceptance_everywhere() -> None:
    applied = apply_overrides(_recipe(), _plan(_recipe(), mode="eval-only").overrides)
    assert applied["environment"] == {"KEEP": "global"}
    assert applied["roles"]["decode"]["env"] == {"GLM5_AR_N": "2"}
    assert applied["roles"]["prefill"]["env"] == {}


def test_select_refuses_a_depth_the_decode_server_refuses_unless_the_caller_sets_another() -> None:
    with pytest.raises(UsageError, match="accepts --num-mtp 3 only, got 2"):
        _plan(_recipe(**{"num-mtp": 2}))
    caller = [parse_override("set", "roles.decode.args.num-mtp=3")]  # InferenceX's own TileRT case
    (plan,) = plan_document(_recipe(**{"num-mtp": 2}), path="tilert.yaml", selector=None, store=STORE,
                            caller=caller, identity=Identity(framework="tilert", thinking="on"))
    assert (plan.k, plan.al) == (3, GOLDEN)


@pytest.mark.parametrize(("where", "env", "verdict", "needle"), [
    ("decode", {"TILERT_SIMULATE_ACC_LEN": "2.99", "TILERT_SIMULATE_ACC_METHOD": "match-expected"}, "match", ""),
    ("decode", {"TILERT_SIMULATE_ACC_LEN": "2.99"}, "missing-companion", "not set beside it"),
    ("decode", {"TILERT_SIMULATE_ACC_LEN": "2.99", "TILERT_SIMULATE_ACC_METHOD": "multinomial"}, "unsafe-value",
     "supports only 'match-expected'"),
    ("decode", {"TILERT_SIMULATE_ACC_LEN": "4.5", "TILERT_SIMULATE_ACC_METHOD": "match-expected"}, "unsafe-value",
     "outside [1, k+1]"),
    ("prefill", {"TILERT_SIMULATE_ACC_LEN": "2.99", "TILERT_SIMULATE_ACC_METHOD": "match-expected"}, "unsafe-value",
     "the prefill role runs vLLM, not TileRT"),
])
def test_check_judges_a_pin_by_the_decode_role(tmp_path: Path, where: str, env: dict[str, str], verdict: str,
                                               needle: str) -> None:
    data = _recipe()
    del data["environment"]
    data["roles"]["prefill"]["env"] = {}
    data["roles"]["prefill"]["args"]["speculative-config"] = '{"method":"mtp","num_speculative_tokens":1}'
    data["roles"][where]["env"].update(env)
    (found,) = _check(tmp_path, data)
    assert found[0] == verdict, found
    assert needle in found[1], found


def test_check_reads_a_decode_server_launch_line(tmp_path: Path) -> None:
    script = tmp_path / "decode.sh"
    lines = ["export SERVED_MODEL_NAME=glm-5.2-fp8 THINKING_MODE=thinking_on IS_AGENTIC=1",
             "export TILERT_SIMULATE_ACC_LEN=2.99 TILERT_SIMULATE_ACC_METHOD=match-expected",
             "python -m tilert.pd_vllm.decode_server --engine tilert --with-mtp --num-mtp 3"]
    script.write_text("#!/bin/bash\n" + "\n".join(lines) + "\n")
    assert [(x.verdict, x.draft_len) for x in check_paths([str(script)], store=STORE).findings] == [("match", 3)]
    script.write_text("#!/bin/bash\n" + "\n".join(lines).replace("--with-mtp ", "") + "\n")
    assert [x.verdict for x in check_paths([str(script)], store=STORE).findings] == ["undetermined"]


def test_simulate_refuses_naming_what_is_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--engine", "tilert", "--al", "3", "--draft-len", "3"]) == 2
    err = capsys.readouterr().err
    assert "no 'simulate' capability" in err
    assert "compiled kernel whose law is not public" in err


def test_an_aggregated_tilert_role_simulates_nowhere(tmp_path: Path) -> None:
    data: dict[str, Any] = {"model": {"path": "glm-5.2-fp8"}, "benchmark": {"type": "agentic"},
                            "roles": {"agg": {"args": {"with-mtp": True, "num-mtp": 3}, "env": {}}}}
    with pytest.raises(UsageError, match="simulates only in the decode role: no role would get the golden AL"):
        _plan(data)
    data["roles"]["agg"]["env"] = {"TILERT_SIMULATE_ACC_LEN": "2.99", "TILERT_SIMULATE_ACC_METHOD": "match-expected"}
    data["framework"] = "tilert"
    (found,) = _check(tmp_path, data)
    assert found[0] == "unsafe-value", found
    assert "TileRT simulates only in the decode role" in found[1], found
