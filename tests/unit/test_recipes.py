"""The recipes floor (``golden_al/recipes/``): srtctl's semantics, the one derivation, and what ``select`` and
``check`` make of it (issue 49 item 1, issue 50 items 1, 3, 4 and the thinking guard, issue 51 items 8-9, issue 54
item 8)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.errors import UsageError
from golden_al.golden import load_store
from golden_al.recipes import srtctl
from golden_al.recipes.derive import Identity
from golden_al.recipes.plan import SelectionError
from golden_al.recipes.srt_slurm import engine_named
from golden_al.recipes.srtctl import Override, apply_overrides, expand_variants, parse_override
from golden_al.selection import select_recipe

REPO = Path(__file__).resolve().parents[2]
SELECT = REPO / "tests" / "fixtures" / "select"
STORE = load_store(None)


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _fixture(name: str) -> dict[str, Any]:
    """A fixture recipe (the base of a sweep recipe)."""
    doc: dict[str, Any] = yaml.safe_load((SELECT / name).read_text())
    return doc.get("base", doc)


def _check(path: Path, store: Any = STORE) -> list[tuple[str, str]]:
    return [(f.verdict, f.message) for f in check_paths([str(path)], store=store).findings]


def _applied(tmp_path: Path, path: Path, plan: Any, extra: dict[str, Any] | None = None) -> Path:
    """The recipe with the plan's overrides applied (srtctl's rules), written beside it."""
    doc = apply_overrides(yaml.safe_load(path.read_text()), plan.common_overrides())
    return _write(tmp_path, {**doc, **(extra or {})}, "applied.yaml")


# ------------------------------------------------------------------ issue 51 item 9: safe in $(...)


@pytest.mark.hostile
@pytest.mark.parametrize("value", ["a b", "x*", "[4,8]", "tab\there", "q?", '{"model": "my draft"}', "new\nline"])
def test_srtctl_words_hold_no_whitespace_or_glob_and_srtctl_reads_the_value_back(value: str) -> None:
    """``$(golden-al select R --format srtctl)`` is split at whitespace and globbed: each word must stay one word and
    srtctl's YAML reading of it must give the value back (it used to print ``"a b"``: two words)."""
    key, word = Override("set", ("roles", "decode", "env", "X"), value).srtctl_args()
    assert key == "--set"
    assert not re.search(r"[\s*?\[]", word), word
    assert srtctl._read_value(word.partition("=")[2]) == value
    assert parse_override("set", word).value == value


@pytest.mark.hostile
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_documented_command_substitution_passes_exactly_the_words(tmp_path: Path) -> None:
    words = [w for o in (Override("set", ("env", "A"), "x y*"), Override("set", ("env", "B"), {"m": "a b"}),
                         Override("set", ("env", "C"), 2.5), Override("unset", ("env", "D"))) for w in o.srtctl_args()]
    (tmp_path / "out.txt").write_text(" ".join(words) + "\n")
    (tmp_path / "xa").write_text("")  # a file a stray glob would match
    got = subprocess.run(["bash", "-c", 'printf "%s\\n" $(cat out.txt)'], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert got == words


@pytest.mark.hostile
def test_a_key_that_is_not_one_safe_word_is_refused() -> None:
    with pytest.raises(UsageError, match="cannot be passed to srtctl in one shell word"):
        Override("set", ("roles", "decode", "env", "A B"), "1").srtctl_args()


# ------------------------------------------------------------------ issue 51 item 8: a cap on variants


@pytest.mark.hostile
def test_variants_are_counted_before_any_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    def built(*_: Any) -> Any:
        raise AssertionError("a variant was built before the count was checked")

    monkeypatch.setattr(srtctl, "deep_merge", built)
    doc = {"base": {"a": 1}, "zip_override_x": {"k": list(range(500_000)), "t": [1]}}
    with pytest.raises(UsageError, match="expands to 500000 variants, more than golden-al plans"):
        expand_variants(doc)


@pytest.mark.hostile
def test_select_refuses_a_recipe_of_too_many_variants_with_exit_2(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    doc = yaml.safe_load((SELECT / "vllm_roles_variants.yaml").read_text())
    doc["zip_override_conc"] = {"name": [f"c{i}" for i in range(srtctl.MAX_VARIANTS + 1)]}
    doc["base"]["roles"]["decode"]["env"] = {"SGLANG_SIMULATE_ACC_LEN": "2"}  # a knob: check reads the file
    path = _write(tmp_path, doc)
    assert main(["select", str(path), "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"expands to {srtctl.MAX_VARIANTS + 2} variants" in err
    findings = check_paths([str(path)], store=STORE).findings  # check: unreadable findings, never a crash
    assert {f.verdict for f in findings} == {"unreadable"}
    assert "expands to 258 variants" in findings[0].message


# ------------------------------------------------------------------ issue 54 item 8: --apply


def test_apply_prints_the_recipe_srtctl_runs_and_check_calls_it_a_match(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = SELECT / "sglang_roles_dflash.yaml"
    assert main(["select", str(path), "--apply", "--set", "roles.agg.env.KEEP=1"]) == 0
    out = capsys.readouterr().out
    applied = yaml.safe_load(out)
    assert applied["roles"]["agg"]["env"] == {"SGLANG_ENABLE_SPEC_V2": "1", "KEEP": 1, "SGLANG_SIMULATE_ACC_LEN": "4.05",
                                              "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                                              "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}
    assert {v for v, _ in _check(_write(tmp_path, applied))} == {"match"}


# ------------------------------------------------------------------ issue 49: select refuses what check refuses


RUNTIME_K = sorted((SELECT / "runtime-k").glob("*.yaml"))


@pytest.mark.parametrize("path", RUNTIME_K, ids=[p.name for p in RUNTIME_K])
def test_a_draft_length_chosen_at_run_time_is_a_select_refusal_and_unselectable_under_no_pins(
        path: Path, tmp_path: Path) -> None:
    """vLLM per-batch-size k, SGLang adaptive speculation, TensorRT-LLM's schedule: check said unsafe-value while
    select emitted a golden; select refuses (exit 2) for check's reason (tests/unit/test_select_check_property.py
    proves the reasons equal) and the no-pins policy calls the recipe unselectable."""
    with pytest.raises(SelectionError) as refused:
        select_recipe(path, store=STORE)
    reason = refused.value.message.split("]: ", 1)[1]
    assert "at run time: the golden AL belongs to one fixed draft length" in reason
    shutil.copy(path, tmp_path / path.name)
    (finding,) = check_paths([str(tmp_path)], store=STORE, policy="no-pins").findings
    assert finding.verdict == "unselectable"
    assert reason in finding.message


def test_a_run_identity_naming_another_model_is_refused_and_unselectable(tmp_path: Path) -> None:
    with pytest.raises(SelectionError, match=r"conflicting models: the run's model 'dsv4' \(MODEL_PREFIX\) -> "
                                             r"deepseek-v4-pro, but the config serves glm-5.2-fp8"):
        select_recipe(SELECT / "trtllm_roles_nextn.yaml", store=STORE,
                      identity=Identity(model="dsv4", model_source="MODEL_PREFIX"))
    tree = tmp_path / "tree"
    (tree / "recipes").mkdir(parents=True)
    shutil.copy(SELECT / "trtllm_roles_nextn.yaml", tree / "recipes" / "r.yaml")
    (tree / "master.yaml").write_text(
        "glm52-trt:\n  framework: dynamo-trt\n  model-prefix: dsv4\n  scenarios:\n    agentic-coding:\n"
        "      - additional-settings: [CONFIG_FILE=recipes/r.yaml]\n")
    findings = check_paths([str(tree)], store=STORE, policy="no-pins").findings
    assert [(f.verdict, "conflicting models" in f.message) for f in findings] == [("unselectable", True)]


def test_the_dynamo_default_thinking_guard_says_what_is_known(tmp_path: Path) -> None:
    """DYN_DEFAULT_THINKING_MODE is a deployment default a request's own controls override: the refusal stays and
    says the run *may* run thinking off."""
    doc = _fixture("trtllm_roles_nextn.yaml")
    doc["roles"]["decode"]["env"]["DYN_DEFAULT_THINKING_MODE"] = "disabled"
    with pytest.raises(SelectionError, match=r"THINKING_MODE says thinking on, but roles\.decode\.env\."
                                             r"DYN_DEFAULT_THINKING_MODE=disabled .*makes thinking off the deployment's "
                                             r"default, so the run may run thinking off \(a request's own thinking "
                                             r"controls override that default"):
        select_recipe(_write(tmp_path, doc), store=STORE, identity=Identity(thinking="on",
                                                                            thinking_source="THINKING_MODE"))


# ------------------------------------------------------------------ issue 50 item 4: the recipe-wide environment


def test_a_recipe_wide_pin_is_unset_by_the_plan_and_checked_with_srtctls_precedence(tmp_path: Path) -> None:
    doc = _fixture("sglang_roles_dflash.yaml")
    doc["environment"] = {"KEEP": "1", "SGLANG_SIMULATE_ACC_LEN": "3.0", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "2"}
    path = _write(tmp_path, doc)
    verdicts = check_paths([str(path)], store=STORE).findings
    sglang = next(f for f in verdicts if f.engine == "sglang")
    assert (sglang.verdict, sglang.draft_len, sglang.expected_al) == ("missing-companion", 7, 4.05)
    assert "srtctl applies it to every worker after the role's own" in sglang.message
    plan = select_recipe(path, store=STORE)
    ops = [(o.op, o.dotted) for o in plan.variants[0].overrides]
    assert ("unset", "environment.SGLANG_SIMULATE_ACC_LEN") in ops
    assert ("unset", "environment.TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS") in ops
    applied = _applied(tmp_path, path, plan)
    assert yaml.safe_load(applied.read_text())["environment"] == {"KEEP": "1"}
    assert {v for v, _ in _check(applied)} == {"match"}
    # a role's own value that the recipe-wide one overrides is said so
    doc["roles"]["agg"]["env"]["SGLANG_SIMULATE_ACC_LEN"] = "4.05"
    role = next(f for f in check_paths([str(_write(tmp_path, doc))], store=STORE).findings if (f.line and "roles.agg" in
                f.message) or "overridden by the recipe-wide" in f.message)
    assert "overridden by the recipe-wide environment.SGLANG_SIMULATE_ACC_LEN" in role.message


# ------------------------------------------------------------------ issue 50 items 1 and 3: ATOM, framework names


ATOM = {"name": "atom-agentx", "model": {"path": "deepseek-ai/DeepSeek-V4-Pro"},
        "benchmark": {"type": "custom", "command": "bash benchmarks/multi_node/agentic_srt.sh"},
        "roles": {"prefill": {"args": {"method": "mtp", "num-speculative-tokens": 1}},
                  "decode": {"args": {"method": "mtp", "num-speculative-tokens": 3, "tensor-parallel-size": 8},
                             "env": {"KEEP": "1"}}}}


@pytest.mark.parametrize("framework", ["atom", "atom-disagg"])
def test_atom_roles_recipes_get_the_server_flag_at_each_roles_own_k(framework: str, tmp_path: Path) -> None:
    path = _write(tmp_path, json.loads(json.dumps(ATOM)))
    plan = select_recipe(path, store=STORE, identity=Identity(framework=framework))
    (v,) = plan.variants
    assert (v.engine, v.k, v.al, v.role) == ("atom", 3, 2.49, "decode")
    assert [(o.op, o.dotted, o.value) for o in v.overrides] == [
        ("set", "roles.prefill.args.spec-decode-acceptance-length", 1.79),  # ATOM refuses an AL above k + 1 = 2
        ("set", "roles.decode.args.spec-decode-acceptance-length", 2.49)]
    applied = _applied(tmp_path, path, plan)
    assert [v for v, _ in _check(applied)] == ["match", "match"]
    real = select_recipe(applied, store=STORE, identity=Identity(mode="eval-only", framework=framework))
    assert {(o.op, o.dotted) for o in real.variants[0].overrides} == {
        ("unset", "roles.prefill.args.spec-decode-acceptance-length"),
        ("unset", "roles.decode.args.spec-decode-acceptance-length")}
    with pytest.raises(SelectionError, match=r"already pins synthetic acceptance at .*roles\.decode\.args"):
        select_recipe(applied, store=STORE)


def test_atom_dspark_takes_the_probabilistic_block_rejection_curve(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(ATOM))
    doc["model"]["path"] = "moonshotai/Kimi-K3"
    doc["roles"]["decode"]["args"].update({"method": "dspark", "draft-model": "Inferact/Kimi-K3-DSpark"})
    store = load_store(REPO / "tests" / "fixtures" / "inferencex" / "golden_al_distribution")
    (v,) = select_recipe(_write(tmp_path, doc), store=store, identity=Identity(framework="atom",
                                                                                  model="kimik3")).variants
    assert v.curve == "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method"


def test_atom_inject_restore_real_takes_the_flag_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(json.dumps(ATOM))
    doc["roles"]["decode"]["args"]["spec-decode-acceptance-length"] = 2.49
    path = _write(tmp_path, doc)
    assert main(["inject", str(path), "--restore-real"]) == 0
    assert "spec-decode-acceptance-length" not in path.read_text()


@pytest.mark.parametrize(("framework", "engine"), [("mori-sglang", "sglang"), ("sglang-disagg", "sglang"),
                                                   ("vllm-disagg", "vllm"), ("atom-disagg", "atom"),
                                                   ("dynamo-trt", "trtllm")])
def test_every_framework_inferencex_plans_names_its_engine(framework: str, engine: str) -> None:
    assert engine_named(framework) == engine


def test_atom_inject_writes_each_roles_flag_and_check_calls_it_a_match(tmp_path: Path) -> None:
    path = _write(tmp_path, json.loads(json.dumps(ATOM)))
    assert main(["inject", str(path), "--model", "dsv4", "--thinking", "on"]) == 0
    roles = yaml.safe_load(path.read_text())["roles"]
    assert [roles[r]["args"]["spec-decode-acceptance-length"] for r in ("prefill", "decode")] == [1.79, 2.49]
    assert [v for v, _ in _check(path)] == ["match", "match"]
    assert main(["inject", str(path), "--model", "dsv4", "--thinking", "on"]) == 0  # again: nothing changes
    assert yaml.safe_load(path.read_text())["roles"] == roles


def test_a_run_time_k_in_a_base_every_variant_replaces_is_neither_flagged_nor_refused(tmp_path: Path) -> None:
    """srtctl runs only the variants: a base value each override replaces never reaches an engine, so check (its
    census) and select (its derivation) agree that it changes nothing."""
    runtime = '{"method": "mtp", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": {"1": 3}}'
    plain = '{"method": "mtp", "num_speculative_tokens": 3}'
    doc = {"base": {"name": "s", "model": {"path": "deepseek-ai/DeepSeek-V4-Pro"}, "backend": {"type": "vllm"},
                    "benchmark": {"type": "agentic"}, "roles": {"decode": {"args": {"speculative-config": runtime}}}},
           "override_a": {"roles": {"decode": {"args": {"speculative-config": plain}}}}}
    (v,) = select_recipe(_write(tmp_path, doc), store=STORE).variants
    assert (v.mode, v.al) == ("throughput", 2.49)
    doc["override_a"] = apply_overrides({"roles": doc["override_a"]["roles"]}, v.overrides)
    assert [f for f, _ in _check(_write(tmp_path, doc))] == ["match"]
