"""Fuzz the golden-file readers and the recipe injector: malformed input is a clean error."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golden_al.errors import GoldenALError
from golden_al.golden import load_store
from golden_al.golden.legacy import read_legacy_text
from golden_al.golden.schema import load_yaml_roundtrip, parse_curve, to_plain
from golden_al.injection import plan_injection

REPO = Path(__file__).resolve().parents[2]
CURVES = sorted((REPO / "golden_al" / "golden" / "curves").glob("*.yaml"))
LEGACY = sorted((REPO / "tests" / "fixtures" / "inferencex" / "golden_al_distribution").glob("*.yaml"))
RECIPES = sorted((REPO / "tests" / "fixtures" / "recipes").glob("*.yaml"))
STORE = load_store()
MODELS = {"sglang_agg_mtp.yaml": "qwen3.5", "sglang_disagg_mtp.yaml": "dsv4", "sglang_disagg_pinned.yaml": "dsv4",
          "sglang_dflash.yaml": "musespark", "vllm_disagg_spec_config.yaml": "dsv4", "trtllm_agg_mtp.yaml": "glm5.2",
          "sglang_override_format.yaml": "glm5.2"}


def mutate(text: str, cut: int, junk: str, where: int) -> str:
    """Truncate at ``cut`` (fraction of the text) and insert ``junk`` at ``where``."""
    t = text[: int(len(text) * cut)]
    pos = int(len(t) * where)
    return t[:pos] + junk + t[pos:]


fuzz = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
junk = st.text(alphabet=st.sampled_from(list(":{}[]-#'\"&*!|>,\n  abc123.")), max_size=12)


@fuzz
@given(i=st.integers(0, len(CURVES) - 1), cut=st.floats(0, 1), junk=junk, where=st.floats(0, 1))
def test_curve_files_fail_cleanly(i: int, cut: float, junk: str, where: float) -> None:
    text = mutate(CURVES[i].read_text(), cut, junk, where)
    try:
        doc = load_yaml_roundtrip(text, path="f.yaml")
        parse_curve(to_plain(doc), path="f.yaml", doc=doc)
    except GoldenALError:
        pass


@fuzz
@given(i=st.integers(0, len(LEGACY) - 1), cut=st.floats(0, 1), junk=junk, where=st.floats(0, 1))
def test_legacy_files_fail_cleanly(i: int, cut: float, junk: str, where: float) -> None:
    text = mutate(LEGACY[i].read_text(), cut, junk, where)
    try:
        read_legacy_text(text, path=LEGACY[i].name)
    except GoldenALError:
        pass


@fuzz
@given(i=st.integers(0, len(RECIPES) - 1), cut=st.floats(0.3, 1), junk=junk, where=st.floats(0, 1))
def test_injector_fails_cleanly_or_rewrites_only_what_it_should(i: int, cut: float, junk: str, where: float) -> None:
    text = mutate(RECIPES[i].read_text(), cut, junk, where)
    error = ""
    try:
        result = plan_injection(text, path=RECIPES[i].name, store=STORE, model=MODELS[RECIPES[i].name],
                                thinking="on")
    except GoldenALError as exc:
        error = str(exc)
    # an input error is fine; the injector's own re-verification (re-parse, only the
    # injected keys differ, idempotent) must never fail
    assert "internal error" not in error
    if not error:
        assert result.old_text == text
