"""``golden-al inject RECIPE --restore-real``: every synthetic setting the census finds is removed,
comments kept, idempotent, and ``check`` on the result finds no pin."""

from __future__ import annotations

from pathlib import Path

import pytest

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.errors import InputFileError
from golden_al.golden import load_store
from golden_al.injection.restore import restore_text

ALL_ENGINES = """\
name: r   # a recipe with every engine's settings
backend:
  type: sglang
  decode_environment:
    # keep me
    SGLANG_SIMULATE_ACC_LEN: "2.49"   # pinned
    SGLANG_SIMULATE_ACC_METHOD: match-expected
    SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token
    OTHER: 1
  vllm_config:
    decode:
      speculative-config: '{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.49}'
    agg:
      speculative-config:
        method: mtp
        rejection_sample_method: synthetic
        synthetic_acceptance_rates: [0.8, 0.5]
env: {TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: '1.49', X: 2}
atom_args: {spec-decode-acceptance-length: 3.1, method: mtp}
containers:
  - args: ["--spec-synth-len", "3.85", "--port", "80"]
    env:
      - name: LLAMA_ARG_SPEC_SYNTH_LEN
        value: "3"
      - name: KEEP
        value: "1"
  - environment:
      - SGLANG_SIMULATE_ACC_LEN=2
      - A=1
"""


def test_every_engines_settings_go_and_the_rest_stays() -> None:
    r = restore_text(ALL_ENGINES, path="r.yaml")
    new = r.new_text
    for gone in ("SGLANG_SIMULATE_ACC", "synthetic_acceptance", "TLLM_SPEC_DECODE", "spec-decode-acceptance",
                 "--spec-synth-len", "3.85", "LLAMA_ARG_SPEC_SYNTH", '"synthetic"', ": synthetic"):
        assert gone not in new, gone
    for kept in ("# keep me", "# a recipe with every engine's settings", "OTHER: 1", "X: 2", "method: mtp",
                 '"--port", "80"', "name: KEEP", "- A=1", '"rejection_sample_method": "standard"',
                 "rejection_sample_method: standard"):
        assert kept in new, kept
    removed = {x.name for x in r.removals}
    assert {"SGLANG_SIMULATE_ACC_LEN", "synthetic_acceptance_length", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
            "spec-decode-acceptance-length", "--spec-synth-len", "LLAMA_ARG_SPEC_SYNTH_LEN"} <= removed
    assert not restore_text(new, path="r.yaml").changed  # idempotent


def test_check_on_the_result_finds_no_pin(tmp_path: Path, capsys) -> None:
    recipe = tmp_path / "agentic" / "r.yaml"
    recipe.parent.mkdir()
    recipe.write_text(ALL_ENGINES)
    assert check_paths([recipe], store=load_store()).findings
    assert main(["inject", str(recipe), "--restore-real"]) == 0
    assert "removed" in capsys.readouterr().err
    report = check_paths([recipe], store=load_store())
    assert (report.findings, report.occurrences) == ([], 0)
    assert main(["inject", str(recipe), "--restore-real"]) == 0  # again: nothing to do
    assert "has no synthetic-acceptance setting" in capsys.readouterr().err


def test_real_method_block_and_dry_run(tmp_path: Path, capsys) -> None:
    recipe = tmp_path / "v.yaml"
    recipe.write_text(ALL_ENGINES)
    assert main(["inject", str(recipe), "--restore-real", "--real-method", "block", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert '+      speculative-config: \'{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": ' \
           '"block"}\'' in out
    assert recipe.read_text() == ALL_ENGINES  # dry run: nothing written


def test_a_knob_inside_a_script_string_is_refused_with_its_line() -> None:
    text = 'command: ["sh", "-c", "export SGLANG_SIMULATE_ACC_LEN=2.2; exec srv"]\n'
    with pytest.raises(InputFileError, match=r":1: SGLANG_SIMULATE_ACC_LEN is set inside a string"):
        restore_text(text, path="c.yaml")


@pytest.mark.parametrize(("argv", "said"), [
    (["--restore-real", "--model", "x"], "takes no --model"),
    (["--real-method", "block", "--model", "x", "--thinking", "on"], "goes with --restore-real"),
    ([], "needs --model and --thinking"),
])
def test_usage(tmp_path: Path, capsys, argv: list[str], said: str) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(ALL_ENGINES)
    assert main(["inject", str(recipe), *argv]) == 2
    assert said in capsys.readouterr().err


def test_a_shell_script_is_not_rewritten(tmp_path: Path, capsys) -> None:
    script = tmp_path / "run.sh"
    script.write_text("export SGLANG_SIMULATE_ACC_LEN=2\n")
    assert main(["inject", str(script), "--restore-real"]) == 2
    assert "rewrites YAML" in capsys.readouterr().err
