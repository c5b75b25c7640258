"""Our golden curve schema: validation, error locations, writer round trip."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from golden_al.errors import SchemaError
from golden_al.golden import GoldenCurve, dump_curve, parse_curve, read_curve_file, save_curve
from golden_al.golden.schema import load_yaml_roundtrip, to_plain

VALID = """\
schema_version: 1
model: tiny-model
aliases: [org/Tiny-Model, tiny]
draft:
  method: eagle3
  model: org/Tiny-EAGLE3
  precision: bf16
engine: {name: vllm, version: 0.33.0}
dataset: {name: SPEED-Bench, split: qualitative, category: coding, num_prompts: 80}
thinking_on:
  sampling: {temperature: 1.0, top_p: 0.95, chat_template_kwargs: {enable_thinking: true}}
  output_len: 4096
  points:
    1: {al: 1.8}
    2:
      al: 2.4
      ci95: [2.35, 2.45]
      num_verify_steps: 1000
      num_accepted_drafts: 1400
      per_position_accepted: [800, 600]
    3: {al: 2.75, origin: derived}
provenance:
  record_sha256: 4c1f5c6f0a8e4c8b9a7d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b
  tool: golden-al 0.1.0
  date: 2026-08-20
"""


def _write(tmp_path: Path, text: str, name: str = "tiny_eagle3.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _error(tmp_path: Path, text: str) -> SchemaError:
    p = _write(tmp_path, text)
    with pytest.raises(SchemaError) as info:
        read_curve_file(p)
    return info.value


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_valid_curve_loads(tmp_path: Path) -> None:
    curve = read_curve_file(_write(tmp_path, VALID))[0].curve
    assert curve.model == "tiny-model"
    assert curve.draft.method == "eagle3"
    assert curve.draft.precision == "bf16"
    on = curve.mode("on")
    assert on is not None
    assert curve.mode("off") is None
    assert {k: p.al for k, p in on.points.items()} == {1: 1.8, 2: 2.4, 3: 2.75}
    assert on.points[2].ci95 == (2.35, 2.45)
    assert on.points[3].origin == "derived"
    assert on.points[1].origin == "measured"
    assert on.sampling is not None
    assert on.sampling.chat_template_kwargs == {"enable_thinking": True}
    assert str(curve.provenance.date) == "2026-08-20"


@pytest.mark.parametrize(
    ("edit", "needle", "expect"),
    [
        pytest.param(("    1: {al: 1.8}", "    1: {al: 1.8, bogus: 3}"), "bogus",
                     r"thinking_on\.points\.1\.bogus: unknown key \(allowed keys: al, ci95", id="unknown-point-key"),
        pytest.param(("dataset:", "datset:"), "datset", r"datset: unknown key \(allowed keys: schema_version, model",
                     id="unknown-top-key"),
        pytest.param(("    3: {al: 2.75, origin: derived}", "    3: {al: 4.5, origin: derived}"), "{al: 4.5",
                     r"thinking_on\.points\.3\.al: AL must be in \[1, 4\] for k=3.*4\.5", id="al-above-k+1"),
        pytest.param(("    1: {al: 1.8}", "    1: {al: 0.9}"), "{al: 0.9}", r"points\.1\.al: AL must be in \[1, 2\]",
                     id="al-below-1"),
        pytest.param(("      ci95: [2.35, 2.45]", "      ci95: [2.45, 2.5]"), "ci95", r"ci95 must contain al=2\.4",
                     id="ci-excludes-al"),
        pytest.param(("      num_accepted_drafts: 1400", "      num_accepted_drafts: 1500"), "al: 2.4",
                     r"counts give AL 2\.5000", id="counts-disagree"),
        pytest.param(("      per_position_accepted: [800, 600]", "      per_position_accepted: [800, 500, 100]"),
                     "per_position", r"needs exactly k=2 entries", id="per-position-length"),
        pytest.param(("      per_position_accepted: [800, 600]", "      per_position_accepted: [600, 800]"),
                     "per_position", r"non-increasing", id="per-position-order"),
        pytest.param(("  method: eagle3", "  method: eagle4"), "eagle4", r"draft\.method: Input should be 'mtp'",
                     id="unknown-method"),
        pytest.param(("  precision: bf16", "  precision: bf17"), "bf17", r"draft\.precision", id="bad-precision"),
        pytest.param(("    1: {al: 1.8}", "    0: {al: 1.8}"), "    0:", r"draft length k must be an integer in \[1, 64\]",
                     id="k-zero"),
        pytest.param(("    1: {al: 1.8}", "    1: {al: '1.8'}"), "'1.8'", r"points\.1\.al: Input should be a valid number",
                     id="al-as-string"),
        pytest.param(("engine: {name: vllm, version: 0.33.0}", "engine: {name: 'TGI serve'}"), "TGI serve",
                     r"engine\.name", id="malformed-engine-name"),
    ],
)
def test_schema_errors_name_file_line_key_value(tmp_path: Path, edit: tuple[str, str], needle: str,
                                                expect: str) -> None:
    text = VALID.replace(*edit)
    assert text != VALID
    err = _error(tmp_path, text)
    line = _line_of(text, needle)
    assert str(err).startswith(f"{tmp_path / 'tiny_eagle3.yaml'}:{line}: "), str(err)
    assert re.search(expect, str(err)), str(err)
    assert err.line == line


def test_a_curve_measured_on_an_engine_not_installed_here_loads(tmp_path: Path) -> None:
    """Issue 40: a curve is data; the store loads it where the plugin that measured it is absent."""
    text = VALID.replace("engine: {name: vllm, version: 0.33.0}", "engine: {name: toyserve, version: 0.1.0}")
    assert text != VALID
    path = tmp_path / "tiny_eagle3.yaml"
    path.write_text(text)
    curve = read_curve_file(path)[0].curve
    assert curve.engine is not None
    assert curve.engine.name == "toyserve"


def test_missing_provenance_source(tmp_path: Path) -> None:
    text = VALID.replace("  record_sha256: 4c1f5c6f0a8e4c8b9a7d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b\n", "")
    err = _error(tmp_path, text)
    assert "provenance needs source_url, record_sha256 or notes" in str(err)


def test_no_thinking_mode(tmp_path: Path) -> None:
    text = re.sub(r"thinking_on:.*?(?=provenance:)", "", VALID, flags=re.S)
    assert "a curve needs thinking_on or thinking_off" in str(_error(tmp_path, text))


def test_wrong_schema_version(tmp_path: Path) -> None:
    err = _error(tmp_path, VALID.replace("schema_version: 1", "schema_version: 2"))
    assert err.line == 1
    assert "schema_version: unsupported value 2" in str(err)


def test_invalid_yaml_and_duplicate_key(tmp_path: Path) -> None:
    err = _error(tmp_path, VALID.replace("    1: {al: 1.8}", "    1: {al: 1.8"))
    assert "invalid YAML" in str(err)
    assert err.line is not None
    dup = VALID.replace("    3: {al: 2.75, origin: derived}", "    3: {al: 2.75}\n    3: {al: 2.8}")
    err = _error(tmp_path, dup)
    assert "invalid YAML" in str(err)
    assert err.line == _line_of(dup, "3: {al: 2.8}")


def test_several_errors_reported_together(tmp_path: Path) -> None:
    text = VALID.replace("  method: eagle3", "  method: eagle4").replace("    1: {al: 1.8}", "    1: {al: '1.8'}")
    err = _error(tmp_path, text)
    assert "draft.method" in str(err)
    assert f"line {_line_of(text, chr(39) + '1.8')}: thinking_on.points.1.al" in str(err)


def test_dump_is_stable_and_round_trips(tmp_path: Path) -> None:
    curve = read_curve_file(_write(tmp_path, VALID))[0].curve
    out = tmp_path / "out.yaml"
    save_curve(curve, out)
    text = out.read_text()
    assert read_curve_file(out)[0].curve == curve
    assert dump_curve(read_curve_file(out)[0].curve) == text  # same curve -> same bytes
    keys = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith(" ")]
    assert keys == ["schema_version", "model", "aliases", "draft", "engine", "dataset", "thinking_on", "provenance"]
    assert "    1: {al: 1.8}\n" in text  # one point per line
    assert "origin" not in text.split("3:")[0]  # the default origin is not written


def test_parse_curve_from_python_validates_ranges() -> None:
    data = to_plain(load_yaml_roundtrip(VALID))
    data["thinking_on"]["points"][1]["al"] = 2.5
    with pytest.raises(SchemaError, match=r"points\.1\.al: AL must be in \[1, 2\]"):
        parse_curve(data, path="x.yaml")
    data["thinking_on"]["points"][1]["al"] = 1.8
    assert isinstance(parse_curve(data), GoldenCurve)
