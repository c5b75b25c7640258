"""Engine rules that live in the profiles: ATOM's k limit, TensorRT-LLM's greedy-only caveat,
curve choice by the draft's name shared by check and inject, and engine-neutral distributions."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

from golden_al.engines import atom, trtllm
from golden_al.errors import UsageError
from golden_al.plugin import PinContext, registry

ROOT = Path(__file__).resolve().parents[2]


def test_registry_has_the_four_engines_with_profiles():
    for name in ("sglang", "vllm", "trtllm", "atom"):
        profile = registry.get_profile(name)
        assert profile.name == name
        assert profile.sources
        assert all(s.repo and s.path and s.version for s in profile.sources)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("golden_al.engine_spec")


def test_unknown_engine_says_did_you_mean():
    with pytest.raises(UsageError) as exc:
        registry.synthetic_settings("sglng", 3.0, 3)
    assert "did you mean 'sglang'" in (exc.value.hint or "")


@pytest.mark.parametrize("method", ["mtp", "eagle3"])
def test_atom_refuses_more_than_four_draft_tokens_for_sequential_drafters(method):
    assert atom.spec_flags(method, 4) == ["--method", method, "--num-speculative-tokens", "4"]
    with pytest.raises(UsageError, match=r"refuses draft length 7 .*atom/config.py"):
        atom.spec_flags(method, 7)
    assert atom.PROFILE.max_k(method) == 4


def test_atom_dspark_has_no_sequential_limit():
    assert atom.spec_flags("dspark", 7)[-1] == "7"
    assert atom.PROFILE.max_k("dspark") is None


def test_atom_launch_refuses_k_above_four():
    from golden_al.servers.launch import LaunchSpec, build_command

    spec = LaunchSpec(engine="atom", target="m", draft_len=7, algorithm="mtp", port=1)
    with pytest.raises(UsageError, match="refuses draft length 7"):
        build_command(spec)
    spec = LaunchSpec(engine="atom", target="m", draft_len=3, algorithm="mtp", port=1)
    assert build_command(spec)[-2:] == ["--num-speculative-tokens", "3"]


def test_trtllm_two_model_path_detection():
    # the newest tree read (fcd3f3168280) runs DraftTarget one-model; the older index tree ran it two-model
    assert trtllm.two_model_path({"decoding_type": "DraftTarget", "max_draft_len": 3}) is False
    old, newest = trtllm.VERSIONS
    assert trtllm.path_at("DraftTarget", False, old) is True
    assert trtllm.path_at("DraftTarget", False, newest) is False
    assert trtllm.two_model_path({"decoding_type": "NGram"}) is True
    assert trtllm.two_model_path({"decoding_type": "SA"}) is False
    assert trtllm.two_model_path({"decoding_type": "Eagle3", "eagle3_one_model": False}) is True
    assert trtllm.two_model_path({"decoding_type": "MTP"}) is False
    assert trtllm.two_model_path({"decoding_type": "Medusa"}) is None


def test_simulate_says_two_model_forcing_is_greedy_only(capsys):
    from golden_al.cli.main import main

    assert main(["simulate", "--engine", "trtllm", "--method", "force", "--al", "3", "--draft-len", "3",
                 "--trtllm-path", "two-model", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("greedy" in w for w in out["warnings"])
    assert main(["simulate", "--engine", "trtllm", "--method", "force", "--al", "3", "--draft-len", "3",
                 "--trtllm-path", "one-model", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert not any("greedy" in w for w in out["warnings"])


def test_env_help_states_the_trtllm_caveat(capsys):
    from golden_al.cli.main import main

    assert main(["env", "--help"]) == 0
    assert "greedy" in capsys.readouterr().out


_LEGACY = """\
# key = num_speculative_tokens (EAGLE3 level); value = golden AL
minimax-m3:
  thinking_on:
    3: {on}
  thinking_off:
    3: 2.9
"""

_RECIPE = """\
name: minimax
model: {{path: minimax-m3}}
backend:
  type: vllm
  vllm_config:
    decode:
      speculative-config: '{{"method":"eagle3","model":"{draft}","num_speculative_tokens":3}}'
"""


@pytest.mark.parametrize(("draft", "al"), [("Inferact/MiniMax-M3-EAGLE3-GQA", 2.78)])
def test_inject_and_check_choose_the_gqa_curve_from_the_draft_name(tmp_path, draft, al):
    """InferenceX's golden dir holds minimaxm3_eagle3 and minimaxm3_eagle3_gqa: both commands pick GQA."""
    from golden_al.checks.static import check_paths
    from golden_al.golden import load_store
    from golden_al.injection.inject import plan_injection

    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "minimaxm3_eagle3.yaml").write_text(_LEGACY.format(on=2.5))
    (golden / "minimaxm3_eagle3_gqa.yaml").write_text(_LEGACY.format(on=2.78))
    store = load_store(golden)
    text = _RECIPE.format(draft=draft)
    res = plan_injection(text, path="r.yaml", store=store, model="minimax-m3", thinking="on")
    assert res.point.al == al
    assert res.point.curve == "minimaxm3_eagle3_gqa"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(res.new_text)
    report = check_paths([str(recipe)], store=store)
    assert report.findings
    assert all(f.verdict == "match" for f in report.findings)


_TOKENS = ("SGLANG_SIMULATE", "SIMULATE_ACC", "TLLM_SPEC_DECODE", "speculative-num-steps", "vllm:spec_decode",
           "sglang:spec", "atom:mtp", "spec-decode-acceptance", "synthetic_acceptance", "rejection_sample_method",
           "num_speculative_tokens", "spec_verify_ct", "spec_correct_drafts_histogram", "acceptance_histogram",
           "total_draft_tokens", "SpecDecoding metrics", "Decode batch", "MTP Stats")
#: More flags, fields, metrics and log lines of the five engines (llama.cpp's included).
_MORE_TOKENS = ("speculative_num_steps", "num-speculative-tokens", "synthetic_acceptance_", "spec_accept_length",
                "--speculative-config", "--speculative-algorithm", "spec-synth-", "LLAMA_ARG_", "llamacpp:",
                "spec-draft-n-", "draft acceptance =")


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """String constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docs = {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs]


@pytest.mark.parametrize("rel", ["distributions", "golden_al/formats/logs.py", "golden_al/formats/prometheus.py",
                                 "golden_al/servers/synthetic.py", "golden_al/servers/launch.py",
                                 "golden_al/servers/probe.py", "golden_al/plugin",
                                 "golden_al/configs", "golden_al/measure/imported"])
def test_no_engine_literal_outside_the_profiles(rel):
    """These modules read every engine name from golden_al/engines/ (no flag, knob, metric or log literal)."""
    base = ROOT / rel
    files = [base] if base.is_file() else sorted(base.rglob("*.py"))
    hits = [f"{f.relative_to(ROOT)}:{line}: {value!r}" for f in files for line, value in _code_strings(f)
            if any(t in value for t in _TOKENS)]
    assert hits == []


def _outside_the_profiles() -> list[str]:
    """Every module of golden_al/ but the engine profiles (a module or an engine's folder) and golden_al/golden/ (the curve formats:
    our schema and InferenceX's legacy files name fields such as ``rejection_sample_method`` and
    ``num_speculative_tokens`` themselves)."""
    from golden_al.plugin.registry import engine_names

    out = []
    for f in sorted((ROOT / "golden_al").rglob("*.py")):
        rel = f.relative_to(ROOT)
        if rel.parts[1] == "golden" or (rel.parts[1] == "engines" and len(rel.parts) == 3):
            continue
        if rel.parts[1] == "engines" and rel.parts[2] in engine_names():  # an engine's own folder (issue 40)
            continue
        out.append(str(rel))
    return out


@pytest.mark.parametrize("rel", _outside_the_profiles())
def test_no_engine_literal_anywhere_outside_the_profiles(rel):
    """serve-reference, the CLI help, the AL sources, the checks and the readers take every engine
    string from golden_al/engines/ (help text is built from profile data). A field name of our own
    curve schema (``Draft.rejection_sample_method``) is not an engine literal."""
    from golden_al.golden.schema import Draft

    schema_fields = tuple(Draft.model_fields)
    # vLLM's keys are synthetic_acceptance_<x> (in _MORE_TOKENS); the bare word also names InferenceX's
    # runners/inject_synthetic_acceptance.py, a harness file, not an engine knob
    tokens = (*(t for t in _TOKENS if t != "synthetic_acceptance"), *_MORE_TOKENS)
    hits = []
    for line, value in _code_strings(ROOT / rel):
        text = value
        for name in schema_fields:
            text = text.replace(name, "")
        if any(t in text for t in tokens):
            hits.append(f"{rel}:{line}: {value!r}")
    assert hits == []


def test_the_literal_rule_covers_serve_reference_and_the_cli():
    covered = _outside_the_profiles()
    assert "golden_al/servers/reference_server.py" in covered
    assert "golden_al/checks/command_lines.py" in covered
    assert sum(r.startswith("golden_al/cli/") for r in covered) >= 10
    assert not any(r.startswith("golden_al/engines/") and r.count("/") == 2 for r in covered)


_AGG_RECIPE = """\
name: agg
model: {{path: qwen3.5}}
backend:
  type: sglang
  agg_environment:
    SGLANG_SIMULATE_ACC_LEN: "{value}"
    SGLANG_SIMULATE_ACC_METHOD: match-expected
    SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token
  sglang_config:
    agg:
      speculative-algorithm: EAGLE
      speculative-num-steps: 3
      speculative-eagle-topk: 1
      speculative-num-draft-tokens: 4
"""

_QWEN = """\
# key = num_speculative_tokens (MTP level); value = golden AL
qwen3.5:
  thinking_on:
    3: 2.61
  thinking_off:
    3: 2.7
"""


def test_check_and_inject_read_the_agg_role_alike(tmp_path):
    """``agg`` is ``aggregated``: check judges the pin (it said undetermined), inject rewrites its block only."""
    from golden_al.checks.static import check_paths
    from golden_al.golden import load_store
    from golden_al.injection.inject import plan_injection

    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "qwen3.5_mtp.yaml").write_text(_QWEN)
    store = load_store(golden)
    recipe = tmp_path / "agg.yaml"
    recipe.write_text(_AGG_RECIPE.format(value="3.5"))
    report = check_paths([str(recipe)], store=store)
    assert [f.verdict for f in report.findings] == ["mismatch"]
    res = plan_injection(recipe.read_text(), path=recipe, store=store, model="qwen3.5", thinking="on")
    assert res.new_text.count("_environment:") == 1
    assert 'SGLANG_SIMULATE_ACC_LEN: "2.61"' in res.new_text
    recipe.write_text(res.new_text)
    assert [f.verdict for f in check_paths([str(recipe)], store=store).findings] == ["match"]


def test_check_says_two_model_forcing_is_greedy_only():
    review = trtllm.review_pin(trtllm.ENV_FORCE, "2", 2.0, 3, two_model=True)
    assert review.al == 3.0
    assert any("greedy" in n for n in review.notes)
    assert not any("greedy" in n for n in trtllm.review_pin(trtllm.ENV_FORCE, "2", 2.0, 3, two_model=False).notes)
    frac = trtllm.review_pin(trtllm.ENV_FORCE, "1.5", 1.5, 3, two_model=True)
    assert [v for v, _ in frac.problems] == ["unsafe-value"]


def test_atom_pin_without_method_is_unsafe():
    def pin(method_flag: bool) -> PinContext:
        return PinContext(atom.LENGTH_FLAG, "2.5", 2.5, 3, spec={"method_flag": method_flag})

    assert [v for v, _ in atom.review_pin(pin(False)).problems] == ["unsafe-value"]
    assert atom.review_pin(pin(True)).problems == []


def _name_branches(path: Path, names: frozenset[str]) -> list[str]:
    """Where a module chooses behaviour by an engine's name: a comparison with a name literal
    (``engine == "vllm"``, ``kind in ("sglang", ...)``) or with a profile's name (``vllm.PROFILE.name``),
    or a dict keyed by name literals."""
    out = []
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            literals = []
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Constant) and isinstance(side.value, str):
                    literals.append(side.value)
                elif isinstance(side, (ast.Tuple, ast.List, ast.Set)):
                    literals += [e.value for e in side.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            by_profile = any(isinstance(side, ast.Attribute) and side.attr == "name"
                             and isinstance(side.value, ast.Attribute) and side.value.attr == "PROFILE"
                             for side in (node.left, *node.comparators))
            if names & set(literals) or by_profile:
                out.append(f"{shown}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if names & keys:
                out.append(f"{shown}:{node.lineno}: a dict keyed by engine names")
    return out


@pytest.mark.parametrize("rel", _outside_the_profiles())
def test_nothing_outside_the_profiles_branches_on_an_engine_name(rel: str) -> None:
    """Behaviour comes from the profile (issue 24): no module outside golden_al/engines/ compares an
    engine's name with a literal or keys a table by engine names, so a new engine is covered untouched."""
    from golden_al.plugin.registry import engine_names

    assert _name_branches(ROOT / rel, frozenset(engine_names())) == []


def test_the_branch_rule_would_see_a_branch(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text('def f(e, kind):\n    if e == "vllm":\n        return {"atom": 1}\n'
                                   '    return kind in ("x", "sglang") or e == vllm.PROFILE.name\n')
    hits = _name_branches(tmp_path / "m.py", frozenset({"vllm", "atom", "sglang"}))
    assert sorted(h.split(":")[1] for h in hits) == ["2", "3", "4", "4"]
