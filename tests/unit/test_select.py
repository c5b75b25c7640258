"""``golden-al select``: launch-time selection of the golden AL as srtctl overrides (issue 34)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.errors import InputFileError, UsageError
from golden_al.golden import load_store
from golden_al.recipes.derive import Identity
from golden_al.recipes.plan import SelectionError
from golden_al.recipes.srtctl import (
    apply_overrides,
    deep_merge,
    expand_variants,
    parse_override,
    split_recipe_arg,
)
from golden_al.selection import select_recipe

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SELECT = FIX / "select"
RECIPES = FIX / "recipes"
STORE = load_store(None)


# ------------------------------------------------------------------ srtctl semantics


def test_deep_merge_follows_srtctl_null_deletes_lists_replace() -> None:
    base = {"a": {"x": 1, "y": 2}, "l": [1, 2], "gone": 3}
    out = deep_merge(base, {"a": {"y": None, "z": 3}, "l": [9], "gone": None})
    assert out == {"a": {"x": 1, "z": 3}, "l": [9]}
    assert base == {"a": {"x": 1, "y": 2}, "l": [1, 2], "gone": 3}  # inputs unchanged


def test_zip_groups_expand_broadcast_and_keep_literal_lists() -> None:
    doc = {"base": {"name": "b", "k": 1},
           "zip_override_s": {"k": [2, 3], "tp": [8], "conc": [[4, 8], [16]], "fixed": "x"},
           "override_a": {"k": 5}}
    variants = expand_variants(doc)
    assert [v.selector for v in variants] == ["override_a", "zip_override_s[0]", "zip_override_s[1]"]
    assert variants[1].data == {"name": "b", "k": 2, "tp": 8, "conc": [4, 8], "fixed": "x"}
    assert variants[2].data["conc"] == [16]
    assert variants[2].data["tp"] == 8
    assert [v.selector for v in expand_variants(doc, "zip_override_s[1]")] == ["zip_override_s[1]"]
    assert [v.selector for v in expand_variants(doc, "*_s")] == ["zip_override_s[0]", "zip_override_s[1]"]
    assert [v.selector for v in expand_variants(doc, "base")] == ["base"]


@pytest.mark.parametrize(("doc", "selector", "needle"), [
    ({"base": {}, "zip_override_s": {"k": [1, 2], "t": [1, 2, 3]}}, None, "disagree"),
    ({"base": {}, "zip_override_s": {"k": []}}, None, "empty list"),
    ({"base": {}, "override_a": {}}, "override_b", "available: base, override_a"),
    ({"base": {}, "zip_override_s": {"k": [1, 2]}}, "zip_override_s[2]", "has 2 variants"),
    ({"backend": {}}, "override_a", "flat"),
])
def test_bad_variants_and_selectors_are_refused_with_what_exists(doc: dict, selector: str | None,
                                                                 needle: str) -> None:
    with pytest.raises(UsageError, match=needle.replace("[", r"\[")):
        expand_variants(doc, selector)


def test_caller_sets_apply_before_unsets_and_values_read_as_srtctl_reads_them() -> None:
    """srtctl reads a value as a YAML scalar or sequence and keeps one that reads as a mapping as its text
    (SemiAnalysisAI/srt-slurm ``src/srtctl/core/overrides.py`` ``parse_value``)."""
    data = {"roles": {"decode": {"env": {"A": "1"}}}}
    ops = [parse_override("unset", "roles.decode.env.A"), parse_override("set", "roles.decode.env.A=2"),
           parse_override("set", 'roles.decode.env.B={"x": 1}'), parse_override("set", "roles.decode.env.C=text"),
           parse_override("set", 'roles.decode.env.D="720"'), parse_override("set", "roles.decode.env.E=720"),
           parse_override("set", "roles.decode.env.F=[4, 8]"), parse_override("set", "roles.decode.env.G=true")]
    assert apply_overrides(data, ops) == {"roles": {"decode": {"env": {
        "B": '{"x": 1}', "C": "text", "D": "720", "E": 720, "F": [4, 8], "G": True}}}}
    with pytest.raises(UsageError, match="no '='"):
        parse_override("set", "roles.decode")


def test_overrides_go_into_base_every_section_and_broadcast_into_zip_groups() -> None:
    """On an override file a --set reaches every variant: base, each override_* section, and each zip group as a
    one-element list (srtctl's ``apply_overrides_to_recipe``), so no section shadows it."""
    doc = {"base": {"roles": {"decode": {"env": {"X": "0"}}}},
           "override_a": {"roles": {"decode": {"env": {"X": "1"}}}},
           "zip_override_z": {"roles": {"decode": {"env": {"X": ["2", "3"]}}}}}
    applied = apply_overrides(doc, [parse_override("set", "roles.decode.env.X=9")])
    assert {v.selector: v.data["roles"]["decode"]["env"]["X"] for v in expand_variants(applied)} == {
        "override_a": 9, "zip_override_z[0]": 9}
    gone = apply_overrides(doc, [parse_override("unset", "roles.decode.env.X"), parse_override("set", "a.b=1")])
    assert all("X" not in v.data["roles"]["decode"]["env"] for v in expand_variants(
        {**gone, "zip_override_z": {"a": {"b": [1, 2]}}}))


@pytest.mark.parametrize(("arg", "expected"), [
    ("r.yaml", ("r.yaml", None)), ("r.yaml:base", ("r.yaml", "base")),
    ("dir/r.yaml:zip_override_y[2]", ("dir/r.yaml", "zip_override_y[2]")),
    ("r.yaml:override_*", ("r.yaml", "override_*")), ("C:/x/r.yaml", ("C:/x/r.yaml", None)),
])
def test_recipe_argument_splits_off_only_a_selector(arg: str, expected: tuple[str, str | None]) -> None:
    assert split_recipe_arg(arg) == expected


# ------------------------------------------------------------------ selection


def _applied_verdicts(path: Path, plan, tmp_path: Path) -> list[tuple[str, float | None]]:  # type: ignore[no-untyped-def]
    """check's (verdict, expected AL) for each variant of ``path`` with the plan's overrides applied."""
    doc = yaml.safe_load(path.read_text())
    variants = {v.selector: v for v in expand_variants(doc)}
    out = []
    for vp in plan.variants:
        applied = apply_overrides(variants[vp.selector].data,
                                  [o for o in vp.overrides])
        f = tmp_path / f"applied-{len(out)}.yaml"
        f.write_text(yaml.safe_dump(applied, sort_keys=False))
        out += [(x.verdict, x.expected_al) for x in check_paths([str(f)], store=STORE).findings]
    return out


@pytest.mark.parametrize(("name", "k", "al", "engine"), [
    ("select/sglang_roles_dflash.yaml", 7, 4.05, "sglang"),
    ("select/trtllm_roles_nextn.yaml", 3, 2.99, "trtllm"),
    ("recipes/sglang_agg_mtp.yaml", 3, 3.39, "sglang"),
    ("recipes/sglang_dflash.yaml", 7, 4.05, "sglang"),
    ("recipes/sglang_disagg_mtp.yaml", 3, 2.49, "sglang"),
    ("recipes/trtllm_agg_mtp.yaml", 3, 2.99, "trtllm"),
    ("recipes/vllm_disagg_spec_config.yaml", 3, 2.49, "vllm"),
])
def test_select_picks_the_golden_and_check_calls_the_result_a_match(name: str, k: int, al: float, engine: str,
                                                                    tmp_path: Path) -> None:
    plan = select_recipe(FIX / name, store=STORE)
    assert [(v.engine, v.k, v.al, v.mode) for v in plan.variants] == [(engine, k, al, "throughput")]
    verdicts = _applied_verdicts(FIX / name, plan, tmp_path)
    assert verdicts
    assert all(v == ("match", al) for v in verdicts), verdicts


def test_every_variant_is_planned_in_the_recipes_own_schema(tmp_path: Path) -> None:
    path = SELECT / "vllm_roles_variants.yaml"
    plan = select_recipe(path, store=STORE)
    assert [(v.selector, v.k, v.al) for v in plan.variants] == [
        ("override_mtp2", 2, 2.27), ("zip_override_conc[0]", 3, 2.49), ("zip_override_conc[1]", 3, 2.49)]
    decode = next(o for o in plan.variants[0].overrides if o.path[1] == "decode")
    assert decode.path == ("roles", "decode", "args", "speculative-config")
    assert json.loads(decode.value) == {"method": "mtp", "num_speculative_tokens": 2,
                                        "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.27}
    # the prefill role drafts 3: it gets the golden at its own k, as check reads each vLLM config
    prefill = next(o for o in plan.variants[0].overrides if o.path[1] == "prefill")
    assert json.loads(prefill.value)["synthetic_acceptance_length"] == 2.49
    verdicts = _applied_verdicts(path, plan, tmp_path)
    assert len(verdicts) == 6
    assert {v for v, _ in verdicts} == {"match"}
    with pytest.raises(SelectionError, match="different overrides"):
        plan.common_overrides()
    one = select_recipe(path, selector="zip_override_conc[1]", store=STORE)
    assert [v.selector for v in one.variants] == ["zip_override_conc[1]"]


def test_a_recipe_that_already_pins_is_refused_even_when_the_pin_matches() -> None:
    with pytest.raises(SelectionError, match=r"already pins .*backend\.decode_environment\.SGLANG_SIMULATE_ACC_LEN"):
        select_recipe(RECIPES / "sglang_disagg_pinned.yaml", store=STORE)


def test_eval_only_restores_real_acceptance() -> None:
    plan = select_recipe(RECIPES / "sglang_disagg_pinned.yaml", identity=Identity(mode="eval-only"), store=STORE)
    ops = [(o.op, o.dotted) for o in plan.variants[0].overrides]
    assert ("unset", "backend.decode_environment.SGLANG_SIMULATE_ACC_LEN") in ops
    assert {op for op, _ in ops} == {"unset"}
    assert plan.variants[0].al is None
    assert plan.variants[0].mode == "eval-only"


def test_eval_only_sets_vllms_switch_back_to_a_real_method(tmp_path: Path) -> None:
    doc = yaml.safe_load((SELECT / "vllm_roles_variants.yaml").read_text())["base"]
    spec = '{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic", ' \
           '"synthetic_acceptance_length": 2.49}'
    doc["roles"]["decode"]["args"]["speculative-config"] = spec
    f = tmp_path / "r.yaml"
    f.write_text(yaml.safe_dump(doc))
    plan = select_recipe(f, identity=Identity(mode="eval-only"), store=STORE)
    (o,) = plan.variants[0].overrides
    assert o.dotted == "roles.decode.args.speculative-config"
    assert json.loads(o.value) == {"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "standard"}


def test_not_agentic_or_spec_off_sets_nothing() -> None:
    plan = select_recipe(SELECT / "sglang_roles_fixed_seq.yaml", store=STORE)
    assert plan.variants[0].mode == "off"
    assert plan.variants[0].overrides == ()
    off = select_recipe(SELECT / "sglang_roles_dflash.yaml", identity=Identity(spec_decoding="none"), store=STORE)
    assert off.variants[0].overrides == ()
    # the run's identity beats the recipe's own signal
    on = select_recipe(SELECT / "sglang_roles_fixed_seq.yaml", identity=Identity(agentic=True), store=STORE)
    assert on.variants[0].al == 2.99


def test_no_role_speculating_leaves_no_stale_pin_in_force(tmp_path: Path) -> None:
    doc = {"name": "x", "model": {"path": "nvidia/GLM-5.2-NVFP4"}, "backend": {"type": "sglang"},
           "environment": {"SGLANG_SIMULATE_ACC_LEN": "9"},
           "roles": {"decode": {"args": {"tp-size": 8}, "env": {"SGLANG_SIMULATE_ACC_LEN": "2", "KEEP": "1"}}}}
    path = tmp_path / "agentic" / "r.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(doc))
    (plan,) = select_recipe(path, store=STORE).variants
    assert (plan.mode, plan.reason) == ("off", "no role of the recipe speculates")
    assert {(o.op, o.dotted) for o in plan.overrides} == {("unset", "environment.SGLANG_SIMULATE_ACC_LEN"),
                                                          ("unset", "roles.decode.env.SGLANG_SIMULATE_ACC_LEN")}
    path.write_text(yaml.safe_dump(apply_overrides(doc, plan.overrides)))
    assert check_paths([path], store=STORE).findings == []


@pytest.mark.parametrize(("identity", "needle"), [
    (Identity(thinking="off"), "no committed value|thinking_off"),
    (Identity(model="no-such-model"), "no curve for 'no-such-model' \\(--model\\)"),
    (Identity(framework="vllm"), "framework says vllm but"),
    (Identity(framework="nope"), "not one golden-al knows"),
])
def test_refusals_name_the_variant_and_the_reason(identity: Identity, needle: str) -> None:
    with pytest.raises(SelectionError, match=needle) as exc:
        select_recipe(SELECT / "sglang_roles_dflash.yaml", identity=identity, store=STORE)
    assert "[the recipe]" in str(exc.value)


def test_contradictory_thinking_is_refused(tmp_path: Path) -> None:
    doc = yaml.safe_load((SELECT / "sglang_roles_dflash.yaml").read_text())
    doc["roles"]["agg"]["env"]["SGLANG_DEFAULT_THINKING"] = "1"
    f = tmp_path / "r.yaml"
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(SelectionError, match=r"says thinking off, but .*SGLANG_DEFAULT_THINKING=1 .* makes thinking on "
                                             r"the deployment's default, so the run may run thinking on"):
        select_recipe(f, identity=Identity(thinking="off", thinking_source="THINKING_MODE"), store=STORE)


def test_a_caller_unset_or_set_that_would_undo_the_setting_is_refused() -> None:
    path = SELECT / "sglang_roles_dflash.yaml"
    with pytest.raises(SelectionError, match=r"--unset roles\.agg\.env would erase"):
        select_recipe(path, store=STORE, caller=[parse_override("unset", "roles.agg.env")])
    with pytest.raises(SelectionError, match=r"the caller.s overrides set synthetic acceptance"):
        select_recipe(path, store=STORE, caller=[parse_override("set", "roles.agg.env.SGLANG_SIMULATE_ACC_LEN=5")])
    # a caller override that changes k is applied first: the value follows it
    plan = select_recipe(path, store=STORE, caller=[parse_override("unset", "roles.agg.args.served-model-name")])
    assert plan.variants[0].al == 4.05


def test_an_out_of_range_golden_value_is_refused_before_anything_runs(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    text = (Path(__file__).resolve().parents[2] / "golden_al/golden/curves/musespark_dflash.yaml").read_text()
    (golden / "m.yaml").write_text(text.replace("7: {al: 4.05}", "7: {al: 4.05}\n    1: {al: 2.5}"))
    rc = main(["select", str(SELECT / "sglang_roles_dflash.yaml"), "--golden-dir", str(golden)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert "AL must be in [1, 2] for k=1" in err


# ------------------------------------------------------------------ the CLI


def _cli(args: list[str], capsys: pytest.CaptureFixture[str], env: dict[str, str] | None = None,
         monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if monkeypatch is not None:
        for key in ("MODEL_PREFIX", "THINKING_MODE", "FRAMEWORK", "IS_AGENTIC", "SPEC_DECODING", "EVAL_ONLY"):
            monkeypatch.delenv(key, raising=False)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
    rc = main(["select", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_json_contract(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out, _ = _cli([str(SELECT / "vllm_roles_variants.yaml") + ":override_mtp2", "--format", "json"], capsys,
                      monkeypatch=monkeypatch)
    assert rc == 0
    doc = json.loads(out)
    (v,) = doc["variants"]
    assert list(v)[:8] == ["selector", "engine", "method", "k", "thinking", "al", "curve", "overrides"]
    assert (v["selector"], v["engine"], v["method"], v["k"], v["thinking"], v["al"], v["curve"]) == (
        "override_mtp2", "vllm", "mtp", 2, "thinking_on", 2.27, "dsv4_mtp")
    assert {o["op"] for o in v["overrides"]} == {"set"}
    assert all("." in o["path"] for o in v["overrides"])
    assert doc["provenance"]["golden_al_version"]


def test_cli_reads_the_inferencex_environment(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(SELECT / "sglang_roles_dflash.yaml")
    rc, _, err = _cli([path], capsys, {"THINKING_MODE": "thinking_off"}, monkeypatch)
    assert rc == 2
    assert "thinking_off" in err
    rc, out, _ = _cli([path, "--format", "env"], capsys, {"MODEL_PREFIX": "musespark", "IS_AGENTIC": "1"},
                      monkeypatch)
    assert rc == 0
    assert out.splitlines() == ["SGLANG_SIMULATE_ACC_LEN=4.05", "SGLANG_SIMULATE_ACC_METHOD=match-expected",
                                            "SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token"]
    rc, out, _ = _cli([path], capsys, {"EVAL_ONLY": "true"}, monkeypatch)
    assert rc == 0
    assert out == ""
    rc, _, err = _cli([path], capsys, {"IS_AGENTIC": "maybe"}, monkeypatch)
    assert rc == 2
    assert "IS_AGENTIC='maybe' is not a boolean" in err


def test_cli_refusals_exit_2_with_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for args in ([str(RECIPES / "sglang_disagg_pinned.yaml")], [str(SELECT / "vllm_roles_variants.yaml")],
                 [str(SELECT / "vllm_roles_variants.yaml") + ":override_nope"],
                 [str(RECIPES / "vllm_disagg_spec_config.yaml"), "--format", "shell"]):
        rc, out, err = _cli(args, capsys, monkeypatch=monkeypatch)
        assert (rc, out, err.count("\n")) == (2, "", 1), (args, err)
        assert "Traceback" not in err


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_readme_launcher_one_liner_passes_srtctl_the_exact_overrides(tmp_path: Path) -> None:
    """``srtctl apply --file R $(golden-al select R --format srtctl)``: a stand-in srtctl prints the words it got,
    and applying them to the recipe gives what check calls a match."""
    fake = tmp_path / "bin" / "srtctl"
    fake.parent.mkdir()
    fake.write_text("#!/usr/bin/env bash\nprintf '%s\\n' \"$@\"\n")
    fake.chmod(0o755)
    recipe = SELECT / "vllm_roles_variants.yaml"
    golden_al = str(Path(sys.executable).parent / "golden-al")
    env = {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}
    script = f'srtctl apply --file "$R" $("{golden_al}" select "$R" --format srtctl)'
    got = subprocess.run(["bash", "-c", script], env={**env, "R": f"{recipe}:override_mtp2"}, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert got[:3] == ["apply", "--file", f"{recipe}:override_mtp2"]
    words = got[3:]
    ops = [parse_override(words[i][2:], words[i + 1]) for i in range(0, len(words), 2)]
    data = expand_variants(yaml.safe_load(recipe.read_text()), "override_mtp2")[0].data
    f = tmp_path / "applied.yaml"
    f.write_text(yaml.safe_dump(apply_overrides(data, ops)))
    assert {x.verdict for x in check_paths([str(f)], store=STORE).findings} == {"match"}


def test_the_readme_python_call() -> None:
    from golden_al.recipes.derive import Identity
    from golden_al.selection import select_recipe

    plan = select_recipe(SELECT / "sglang_roles_dflash.yaml", identity=Identity(thinking="on"))
    assert [w for o in plan.variants[0].overrides for w in o.srtctl_args()][:2] == [
        "--set", 'roles.agg.env.SGLANG_SIMULATE_ACC_LEN="4.05"']


# ------------------------------------------------------------------ launch scripts

SCRIPTS = SELECT / "scripts"


def test_a_launch_script_gets_the_environment_check_would_prove(tmp_path: Path) -> None:
    path = SCRIPTS / "glm5.2_fp4_b300_sglang_mtp.sh"
    plan = select_recipe(path, store=STORE)
    (v,) = plan.variants
    assert (v.engine, v.k, v.al, v.curve) == ("sglang", 3, 2.99, "glm5.2_mtp")
    assert [(o.op, o.dotted, o.value) for o in v.overrides] == [
        ("set", "env.SGLANG_SIMULATE_ACC_LEN", "2.99"), ("set", "env.SGLANG_SIMULATE_ACC_METHOD", "match-expected"),
        ("set", "env.SGLANG_SIMULATE_ACC_TOKEN_MODE", "real-draft-token")]
    # the script with that environment exported is a match for check
    lines = path.read_text().split("\n")
    pinned = tmp_path / path.name
    pinned.write_text("\n".join([lines[0], *(f"export {o.path[-1]}={o.value}" for o in v.overrides), *lines[1:]]))
    assert {f.verdict for f in check_paths([str(pinned)], store=STORE).findings} == {"match"}
    # a pin already in the script is refused, also where it would stay in force in a run that does not simulate
    for identity in (Identity(), Identity(mode="eval-only"), Identity(spec_decoding="none")):
        with pytest.raises(SelectionError, match="already pins"):
            select_recipe(pinned, identity=identity, store=STORE)


def test_a_script_whose_paths_need_different_values_is_refused() -> None:
    with pytest.raises(SelectionError, match=r"different golden values \(sglang k=2 thinking on: 2.5; sglang k=3"):
        select_recipe(SCRIPTS / "glm5.2_fp4_b300_sglang_conc.sh", store=STORE)


def test_a_script_takes_no_srtctl_format_or_selector(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(SCRIPTS / "glm5.2_fp4_b300_sglang_mtp.sh")
    rc, out, err = _cli([path], capsys, monkeypatch=monkeypatch)
    assert (rc, out) == (2, "")
    assert "use --format env or shell" in err
    rc, out, _ = _cli([path, "--format", "shell"], capsys, monkeypatch=monkeypatch)
    assert rc == 0
    assert out.splitlines()[0] == "export SGLANG_SIMULATE_ACC_LEN=2.99"
    with pytest.raises(SelectionError, match="no variants"):
        select_recipe(path, selector="base", store=STORE)


@pytest.mark.parametrize(("key", "refused"), [("VLLM_FLOAT32_MATMUL_PRECISION", False),
                                              ("SIMULATE_ACC_LEN", True)])
def test_select_and_check_refuse_the_same_duplicate_keys(key: str, refused: bool, tmp_path: Path) -> None:
    """One duplicate rule (issue 49): a repeated key golden-al reads or writes is refused by both; another repeated
    key (InferenceX's minimax-m3 recipes repeat ``VLLM_MINIMAX_M3_MSA_DECODE_BACKEND``) by neither."""
    src = FIX / "select" / "inferencex" / "vllm__minimax-m3__agentic__gb300-fp4__1p1d-tep4-tp4-c1-agentic.yaml"
    text = src.read_text()
    line = "    VLLM_FLOAT32_MATMUL_PRECISION: high\n"
    assert line in text
    path = tmp_path / "r.yaml"
    twice = f"    {key}: '3.1'\n" * 2 if refused else line
    path.write_text(text.replace(line, line + twice, 1))
    findings = check_paths([str(path)], store=STORE).findings
    unreadable = [f for f in findings if f.verdict == "unreadable"]
    if refused:
        with pytest.raises(InputFileError, match=f"duplicate key '{key}'"):
            select_recipe(path, store=STORE)
        assert unreadable
        assert key in unreadable[0].message
    else:
        assert select_recipe(path, store=STORE).variants
        assert not unreadable
