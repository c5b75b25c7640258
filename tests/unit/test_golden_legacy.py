"""The InferenceX legacy golden files: both shapes, headers, errors, write_legacy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from golden_al.errors import SchemaError
from golden_al.golden import load_store, read_curve_file, read_legacy_text, write_legacy
from golden_al.golden.legacy import legacy_name_parts, parse_legacy_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inferencex" / "golden_al_distribution"
HEAD_FILES = sorted(FIXTURES.glob("*.yaml"))


def inferencex_lookup(data: Any, model_key: str, k: int, thinking_mode: str = "thinking_on") -> Any:
    """InferenceX's lookup semantics, re-stated from runners/inject_synthetic_acceptance.py
    ``_lookup_al`` (HEAD 843c6254f): ``data[model]``; a list is searched item by item for
    key ``k``; a mapping with a key starting with ``thinking`` is indexed by
    THINKING_MODE (missing mode is an error) then ``k``; otherwise by ``k``."""
    block = data.get(model_key)
    if isinstance(block, list):
        return next((item[k] for item in block if k in item), None)
    if isinstance(block, dict):
        if any(str(key).startswith("thinking") for key in block):
            if thinking_mode not in block:
                raise KeyError(thinking_mode)
            return block[thinking_mode].get(k)
        return block.get(k)
    return None


def test_fixture_set_is_the_nine_head_files() -> None:
    assert len(HEAD_FILES) == 9


@pytest.mark.parametrize("path", HEAD_FILES, ids=lambda p: p.name)
def test_head_files_read_exactly_as_their_lookup_does(path: Path) -> None:
    raw = yaml.safe_load(path.read_text())
    (curve,) = [sc.curve for sc in read_curve_file(path)]
    (model_key,) = raw.keys()
    assert curve.model == model_key
    for mode in ("thinking_on", "thinking_off"):
        blk = curve.mode(mode)
        expected = raw[model_key].get(mode)
        if expected is None:
            assert blk is None
            continue
        assert {k: p.al for k, p in blk.points.items()} == expected
        for k, al in expected.items():
            assert inferencex_lookup(raw, model_key, k, mode) == al


def test_comments_are_ignored_for_values() -> None:
    text = (FIXTURES / "qwen3.5_mtp.yaml").read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#")) + "\n"
    (with_header,) = read_legacy_text(text, path="qwen3.5_mtp.yaml")
    (bare,) = read_legacy_text(body, path="qwen3.5_mtp.yaml")
    for mode in ("thinking_on", "thinking_off"):
        assert {k: p.al for k, p in bare.mode(mode).points.items()} == \
            {k: p.al for k, p in with_header.mode(mode).points.items()}
    assert bare.provenance.source_url is None
    assert with_header.provenance.source_url == "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/27317114007"


def test_header_fields() -> None:
    h = parse_legacy_header((FIXTURES / "qwen3.5_mtp.yaml").read_text())
    assert h.category == "coding"
    assert h.output_len == 4096
    assert h.dataset_name == "SPEED-Bench"
    assert h.mode_sampling["thinking_on"] == {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "presence_penalty": 0.0,
                                              "chat_template_kwargs": {"enable_thinking": True}}
    assert h.mode_sampling["thinking_off"]["presence_penalty"] == 1.5
    assert h.engine == "vllm"
    assert h.hardware == "B300"
    assert h.method == "mtp"
    assert h.collector == "benchmarks/single_node/speedbench/qwen3.5_fp4_b300_vllm.sh"
    h = parse_legacy_header((FIXTURES / "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method.yaml")
                            .read_text())
    assert (h.draft_sample_method, h.rejection_sample_method, h.draft_model) == \
        ("probabilistic", "block", "Inferact/Kimi-K3-DSpark")
    h = parse_legacy_header((FIXTURES / "minimaxm3_eagle3.yaml").read_text())
    assert h.sampling == {"temperature": 1.0, "top_p": 0.95, "top_k": 40}
    assert h.unparsed == []


@pytest.mark.parametrize(
    ("stem", "parts"),
    [
        ("dsv4_mtp", ("dsv4", "mtp", None)),
        ("dsv4-pro-0813-dspark", ("dsv4-pro-0813", "dspark", None)),
        ("minimaxm3_eagle3_gqa", ("minimaxm3", "eagle3", "gqa")),
        ("qwen3.5_mtp", ("qwen3.5", "mtp", None)),
        ("kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method",
         ("kimik3", "dspark", "probabilistic_sample_method_block_rejection_sample_method")),
        ("speedbench-reference-al", ("speedbench-reference-al", None, None)),
    ],
)
def test_legacy_name_parts(stem: str, parts: tuple[str, str | None, str | None]) -> None:
    assert legacy_name_parts(stem) == parts


def test_flat_list_shape_reads_into_both_modes() -> None:
    path = FIXTURES / "history" / "flat-list" / "dsv4_mtp.yaml"
    raw = yaml.safe_load(path.read_text())
    (curve,) = [sc.curve for sc in read_curve_file(path)]
    for mode in ("thinking_on", "thinking_off"):
        got = {k: p.al for k, p in curve.mode(mode).points.items()}
        assert got == {k: inferencex_lookup(raw, "deepseek-v4-pro", k, mode) for k in range(1, 9)}
    assert "flat shape without thinking modes" in (curve.provenance.notes or "")
    assert curve.draft.method == "mtp"
    assert "dsv4" in curve.aliases


def test_plain_mapping_shape_and_method_from_header() -> None:
    path = FIXTURES / "history" / "1de285d3a" / "speedbench-reference-al.yaml"
    raw = yaml.safe_load(path.read_text())
    (curve,) = [sc.curve for sc in read_curve_file(path)]
    assert curve.draft.method == "mtp"  # "(MTP level)" in the header; no method in the file name
    assert {k: p.al for k, p in curve.thinking_on.points.items()} == raw["deepseek-v4-pro"]
    assert curve.thinking_off == curve.thinking_on


def test_metadata_block_gives_the_draft_model() -> None:
    (curve,) = [sc.curve for sc in read_curve_file(FIXTURES / "history" / "ce4e6f073" / "minimaxm3_eagle3_gqa.yaml")]
    assert curve.model == "minimax-m3"
    assert curve.draft.model == "Inferact/MiniMax-M3-EAGLE3-GQA"
    assert curve.draft.variant == "gqa"


@pytest.mark.parametrize(
    ("body", "needle", "message"),
    [
        pytest.param("m:\n  thinking_on:\n    1: 1.9\n    2: 3.5\n", "2: 3.5", r"AL must be in \[1, 3\] for k=2",
                     id="al-out-of-range"),
        pytest.param("m:\n  thinking_on:\n    one: 1.9\n", "one:", r"draft length key must be an integer", id="bad-k"),
        pytest.param("m:\n  thinking_maybe:\n    1: 1.9\n", "thinking_maybe", r"unknown thinking mode",
                     id="bad-mode"),
        pytest.param("m:\n  thinking_on:\n    1: high\n", "1: high", r"AL must be a number", id="not-a-number"),
        pytest.param("m:\n  - 1: 1.9\n  - 2\n", "- 2", r"flat list item 2 must be a one-key mapping", id="bad-flat"),
        pytest.param("m: 3\n", "m: 3", r"expected \{thinking_on", id="scalar-block"),
    ],
)
def test_legacy_errors_name_file_and_line(body: str, needle: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message) as info:
        read_legacy_text(body, path="x_mtp.yaml")
    line = next(i for i, s in enumerate(body.splitlines(), 1) if needle in s)
    assert info.value.line == line
    assert str(info.value).startswith(f"x_mtp.yaml:{line}: ")


def test_null_value_means_no_value() -> None:
    (curve,) = read_legacy_text("m:\n  thinking_on:\n    1: 1.9\n    2:\n", path="x_mtp.yaml")
    assert list(curve.thinking_on.points) == [1]


def test_unknown_method_needs_a_name_or_header() -> None:
    with pytest.raises(SchemaError, match="cannot tell the draft method"):
        read_legacy_text("m:\n  thinking_on:\n    1: 1.9\n", path="reference.yaml")


SHIPPED = load_store().curves


@pytest.mark.parametrize("stored", SHIPPED, ids=lambda sc: sc.name)
def test_write_legacy_is_readable_by_their_lookup(stored: Any) -> None:
    """write_legacy output -> yaml.safe_load -> their _lookup_al semantics gives every value;
    and their newest reader's rule (exactly one top-level key) holds."""
    curve = stored.curve
    text = write_legacy(curve)
    data = yaml.safe_load(text)
    assert list(data) == [curve.model]
    for mode, blk in curve.modes().items():
        for k, p in blk.points.items():
            got = inferencex_lookup(data, curve.model, k, mode)
            assert isinstance(got, float), (mode, k, got)
            assert got == p.al, (mode, k, got, p.al)
    assert text.splitlines()[0].startswith("# Source") or curve.provenance.source_url is None
    # and it reads back through our own legacy reader with the same values
    (back,) = read_legacy_text(text, path=f"{stored.name}.yaml")
    assert {m: {k: p.al for k, p in b.points.items()} for m, b in back.modes().items()} == \
        {m: {k: p.al for k, p in b.points.items()} for m, b in curve.modes().items()}
    assert back.provenance.source_url == curve.provenance.source_url


def test_write_legacy_writes_two_decimals_as_they_do() -> None:
    (curve,) = [sc.curve for sc in read_curve_file(FIXTURES / "dsv4_mtp.yaml")]
    text = write_legacy(curve)
    assert "    4: 3.00\n" in text
    assert "    5: 3.10\n" in text
    body = [s for s in text.splitlines() if not s.startswith("#")]
    original = [s for s in (FIXTURES / "dsv4_mtp.yaml").read_text().splitlines() if s and not s.startswith("#")]
    assert body == original  # the value lines are byte-identical to theirs
