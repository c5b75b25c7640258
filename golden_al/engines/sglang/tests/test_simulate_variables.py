"""SGLang 0.5.23's simulation variables (issue 50 item 5): ``SGLANG_SIMULATE_ACC_GREEDY`` (DSpark's greedy draft
path) and the ``fixed`` default of ``SGLANG_SIMULATE_ACC_TOKEN_MODE`` (``python/sglang/srt/environ.py``), in check,
env, select and simulate."""

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
from golden_al.recipes.derive import Identity
from golden_al.recipes.plan import plan_document
from golden_al.recipes.srtctl import apply_overrides

STORE = load_store(None)
DSPARK = {"speculative-algorithm": "DSPARK", "speculative-dspark-block-size": 6}  # deepseek-v4-pro-0813: 3.77
EAGLE = {"speculative-algorithm": "EAGLE", "speculative-num-steps": 3, "speculative-eagle-topk": 1}  # dsv4: 2.49


def _recipe(args: dict[str, Any], env: dict[str, str], model: str) -> dict[str, Any]:
    return {"model": {"path": model}, "backend": {"type": "sglang"},
            "benchmark": {"type": "custom", "command": "bash agentic_srt.sh"},
            "roles": {"decode": {"args": {**args, "enable-thinking": True}, "env": env}}}


def _check(tmp_path: Path, data: dict[str, Any]) -> tuple[str, str]:
    f = tmp_path / "recipe.yaml"
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    (found,) = check_paths([str(f)], store=STORE).findings
    return found.verdict, found.message


DSPARK_ENV = {"SGLANG_SIMULATE_ACC_LEN": "3.77", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
              "SGLANG_RAGGED_VERIFY_MODE": "static"}
EAGLE_ENV = {"SGLANG_SIMULATE_ACC_LEN": "2.49", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
             "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}


@pytest.mark.parametrize(("args", "env", "model", "verdict", "needle"), [
    (DSPARK, {**DSPARK_ENV, "SGLANG_SIMULATE_ACC_GREEDY": "1"}, "deepseek-v4-pro-0813", "match",
     "draft and accept greedily, only the bonus token is temperature-sampled"),
    (DSPARK, {**DSPARK_ENV, "SGLANG_SIMULATE_ACC_GREEDY": "on"}, "deepseek-v4-pro-0813", "unsafe-value",
     "SGLang warns and reads it as false"),
    (EAGLE, {**EAGLE_ENV, "SGLANG_SIMULATE_ACC_GREEDY": "true"}, "deepseek-v4-pro", "match",
     "read by DSPARK only: EAGLE ignores it"),
    (EAGLE, {k: v for k, v in EAGLE_ENV.items() if "TOKEN_MODE" not in k}, "deepseek-v4-pro", "missing-companion",
     "SGLang then uses its default 'fixed', which emits token id 100"),
])
def test_check_reads_greedy_and_the_fixed_default(tmp_path: Path, args: dict[str, Any], env: dict[str, str],
                                                  model: str, verdict: str, needle: str) -> None:
    got, message = _check(tmp_path, _recipe(args, env, model))
    assert got == verdict, message
    assert needle in message, message


def test_select_treats_greedy_as_a_simulation_setting() -> None:
    identity = Identity(thinking="on")
    stale = _recipe(DSPARK, {"SGLANG_RAGGED_VERIFY_MODE": "static"}, "deepseek-v4-pro-0813")
    stale["environment"] = {"SGLANG_SIMULATE_ACC_GREEDY": "1"}
    (plan,) = plan_document(stale, path="r.yaml", selector=None, store=STORE, identity=identity)
    assert apply_overrides(stale, plan.overrides)["environment"] == {}  # unset where it would apply after the role's
    pinned = _recipe(DSPARK, {"SGLANG_RAGGED_VERIFY_MODE": "static", "SGLANG_SIMULATE_ACC_GREEDY": "1"},
                     "deepseek-v4-pro-0813")
    with pytest.raises(UsageError, match=r"already pins synthetic acceptance at roles\.decode\.env\.SGLANG_SIMULATE_ACC_GREEDY"):
        plan_document(pinned, path="r.yaml", selector=None, store=STORE, identity=identity)


@pytest.mark.parametrize(("algorithm", "k", "mode"), [("eagle", 3, "real-draft-token"), ("dflash", 7, "real-draft-token"),
                                                      ("ngram", 4, "fixed"), ("dspark", 6, None)])
def test_simulate_shows_the_token_mode_the_algorithm_runs(capsys: pytest.CaptureFixture[str], algorithm: str, k: int,
                                                          mode: str | None) -> None:
    assert main(["simulate", "--engine", "sglang", "--al", "2.5", "--draft-len", str(k), "--algorithm", algorithm,
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_settings"].get("SGLANG_SIMULATE_ACC_TOKEN_MODE") == mode
    assert any("SGLANG_SIMULATE_ACC_GREEDY=1 leaves this law" in w for w in out["warnings"]) == (mode is None)


def test_env_writes_real_draft_token_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "--engine", "sglang", "--model", "deepseek-v4-pro", "--thinking", "on", "--draft-len", "3",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["SGLANG_SIMULATE_ACC_TOKEN_MODE"] == "real-draft-token"
    assert main(["env", "--help"]) == 0
    assert "unset is 'fixed'" in capsys.readouterr().out.replace("\n", " ")
