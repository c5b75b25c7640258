"""``check`` and ``select``/``inject`` read every recipe fixture alike: one reader (``golden_al.recipes.srt_slurm``).

``check`` loads with its own YAML reader, ``select`` (and ``inject``, which applies select's overrides) with
:func:`recipe_document`; both hand the data to :func:`read_recipe`, so roles, environment blocks, speculative
settings and the generating role must come out the same, and so must the golden value each picks for a pin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from golden_al.checks.static import check_paths
from golden_al.checks.yaml_configs import load_yaml_docs, recipe_contexts
from golden_al.errors import UsageError
from golden_al.golden import load_store
from golden_al.golden.schema import to_plain
from golden_al.injection.inject import plan_injection
from golden_al.recipes.srt_slurm import RecipeView, Speculation, read_recipe, recipe_document

FIX = Path(__file__).resolve().parents[1] / "fixtures"
RECIPES = sorted((FIX / "recipes").glob("*.yaml")) + sorted((FIX / "check" / "tree" / "recipes").rglob("*.yaml"))
IDS = [str(p.relative_to(FIX)) for p in RECIPES]


def _spec(s: Speculation | None) -> Any:
    if s is None:
        return None
    return (s.engine, s.algorithm, to_plain(dict(s.settings)), s.key, s.draft_model, s.draft_sample_method,
            s.rejection_sample_method, s.problem, s.speculates)


def _view(v: RecipeView) -> Any:
    return {
        "engine": (v.engine, v.engine_source),
        "variant": v.variant,
        "prefixes": v.prefixes,
        "roles": [(r.role, r.key, r.loc, _spec(r.spec)) for r in v.roles],
        "envs": [(e.role, e.key, e.loc, None if e.env is None else sorted(map(str, e.env))) for e in v.envs],
        "target": v.target.loc if v.target else None,
        "models": [m.name for m in v.models],
    }


def test_every_fixture_is_a_recipe():
    assert len(RECIPES) >= 15
    for path in RECIPES:
        assert read_recipe(recipe_document(path.read_text(), path)[0]) is not None, path


@pytest.mark.parametrize("path", RECIPES, ids=IDS)
def test_check_and_inject_see_the_same_roles_blocks_and_settings(path: Path) -> None:
    text = path.read_text()
    (doc,) = load_yaml_docs(text)
    ctxs = recipe_contexts(doc, str(path))  # what check reads
    recipe = read_recipe(recipe_document(text, path)[0])  # what select and inject read
    assert recipe is not None
    assert [_view(c.view) for c in ctxs] == [_view(v) for v in recipe.views()]


def test_every_golden_value_check_compares_is_the_one_inject_writes():
    """For each recipe finding check judges against a golden value, inject (same model and
    thinking mode) picks the same k, the same curve (the GQA draft's included) and the same AL."""
    store = load_store(FIX / "check" / "golden")
    report = check_paths([FIX / "check" / "tree" / "recipes"], store=store)
    judged = [f for f in report.findings if f.expected_al is not None]
    assert len(judged) >= 8
    assert any(f.model and "minimax" in f.model for f in judged)
    for f in judged:
        path = Path(f.file)
        assert f.thinking is not None
        assert f.model is not None
        try:
            res = plan_injection(path.read_text(), path=path, store=store, model=f.model, thinking=f.thinking)
        except UsageError:  # a value the engine would misread: check flags it, inject refuses to write it
            assert f.verdict == "unsafe-value", f.file
            continue
        assert (res.k, res.point.al) == (f.draft_len, f.expected_al), f.file
        if f.verdict in ("match", "mismatch"):  # the message names the curve
            assert f"[{res.point.curve}]" in f.message, (f.file, res.point.curve, f.message)
    assert any("[minimaxm3_eagle3_gqa]" in f.message for f in judged)


_SWEEP = """\
base:
  name: sweep
  model: {path: qwen3.5}
  backend:
    type: sglang
    decode_environment:
      SGLANG_SIMULATE_ACC_LEN: "2.61"
      SGLANG_SIMULATE_ACC_METHOD: match-expected
      SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token
    sglang_config:
      decode:
        speculative-algorithm: EAGLE
        speculative-num-steps: 3
        speculative-eagle-topk: 1
        speculative-num-draft-tokens: 4
override_stale:
  backend:
    decode_environment:
      SGLANG_SIMULATE_ACC_LEN: "2.5"
"""
_QWEN = """\
qwen3.5:
  thinking_on:
    3: 2.61
"""


def test_an_override_section_is_a_variant_for_check_and_inject_alike(tmp_path: Path) -> None:
    """A stale value in an ``override_*`` section: check reads the section merged into ``base``
    (as srtctl runs it) and judges the value at its own line against the base's draft length
    (it used to be an 'environment setting outside a recognised recipe'); inject names the
    same line as its one conflict."""
    golden = tmp_path / "golden"
    golden.mkdir()
    (golden / "qwen3.5_mtp.yaml").write_text(_QWEN)
    store = load_store(golden)
    recipe = tmp_path / "sweep.yaml"
    recipe.write_text(_SWEEP)
    report = check_paths([str(recipe)], store=store)
    verdicts = {f.line: (f.verdict, f.draft_len) for f in report.findings}
    assert verdicts == {19: ("mismatch", 3)}
    res = plan_injection(_SWEEP, path=recipe, store=store, model="qwen3.5", thinking="on")
    assert [(c.line, c.old, c.new) for c in res.conflicts] == [(19, "2.5", "2.61")]
