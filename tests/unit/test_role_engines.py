"""The plugin floor under per-role engines: a pin where its engine does not simulate is not a proven match, and a
capability a profile leaves out is refused with the profile's reason."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from golden_al.checks.static import check_paths
from golden_al.errors import UsageError
from golden_al.golden import load_store
from golden_al.plugin import registry
from golden_al.plugin.profile import Caveat, SimulateSupport

STORE = load_store(None)


def _recipe(prefill_env: dict[str, str]) -> dict:
    return {"model": {"path": "glm-5.2-fp8"}, "backend": {"type": "sglang"}, "benchmark": {"type": "agentic"},
            "roles": {
                "prefill": {"engine": "vllm", "env": prefill_env,
                            "args": {"speculative-config": '{"method":"mtp","num_speculative_tokens":3}'}},
                "decode": {"args": {"speculative-algorithm": "EAGLE", "speculative-num-steps": 3,
                                    "speculative-eagle-topk": 1, "speculative-num-draft-tokens": 4,
                                    "enable-thinking": True},
                           "env": {"SGLANG_SIMULATE_ACC_LEN": "2.99", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                                   "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}}}}


def _verdicts(tmp_path: Path, data: dict) -> dict[int, tuple[str, str]]:
    f = tmp_path / "recipe.yaml"
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    return {x.line: (x.verdict, x.message) for x in check_paths([str(f)], store=STORE).findings}


def test_a_pin_in_a_role_another_engine_runs_is_not_a_match(tmp_path: Path) -> None:
    clean = _verdicts(tmp_path, _recipe({}))
    assert [v for v, _ in clean.values()] == ["match"]
    stale = _verdicts(tmp_path, _recipe({"SGLANG_SIMULATE_ACC_LEN": "2.99"}))
    assert sorted(v for v, _ in stale.values()) == ["match", "unsafe-value"]
    reason = next(r for v, r in stale.values() if v == "unsafe-value")
    assert "roles.prefill.env" in reason
    assert "the prefill role runs vLLM, not SGLang" in reason


def test_a_capability_left_out_is_refused_with_the_profiles_reason() -> None:
    sglang = registry.get_profile("sglang")
    bare = replace(sglang, simulate=SimulateSupport(), caveats=(Caveat("its sampler reads no known law", ("simulate",)),))
    with pytest.raises(UsageError, match=r"no 'simulate' capability.*its sampler reads no known law"):
        bare.require("simulate", "simulate")
