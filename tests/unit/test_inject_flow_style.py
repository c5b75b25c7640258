"""``inject`` and ``inject --restore-real`` on flow-style YAML (hostile): one key, two keys (every key of the mapping,
or some), a flow mapping nested in a block one, a whole recipe in flow style, a flow mapping over several lines; and
a roles recipe without ``backend``. Each exits 0 with the settings changed and the rest as it was, never a traceback
(``inject --restore-real`` used to stop with "overlapping text edits" when a flow mapping lost two entries)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.golden import load_store

pytestmark = pytest.mark.hostile

HEAD = "name: x\nmodel: {path: zai-org/GLM-5.2-FP8}\nbenchmark: {type: custom, command: bash agentic_srt.sh}\n"
ARGS = "{speculative-algorithm: EAGLE, speculative-num-steps: 3}"
SIM = 'SGLANG_SIMULATE_ACC_LEN: "99", SGLANG_SIMULATE_ACC_METHOD: x'
SIM_LINES = 'SGLANG_SIMULATE_ACC_LEN: "99",\n  SGLANG_SIMULATE_ACC_METHOD: x'
SHAPES = {
    "one key": f'roles:\n  decode:\n    args: {ARGS}\n    env: {{SGLANG_SIMULATE_ACC_LEN: "99"}}\n',
    "two keys, all of it": f"roles:\n  decode:\n    args: {ARGS}\n    env: {{{SIM}}}\n",
    "two keys among others": f"roles:\n  decode:\n    args: {ARGS}\n    env: {{A: 1, {SIM.replace(', ', ', B: 2, ')}"
                             ", C: 3}\n",
    "two keys after a kept one": f"roles:\n  decode:\n    args: {ARGS}\n    env: {{KEEP: 1, {SIM}}}\n",
    "recipe-wide and backend": f"environment: {{{SIM}}}\nbackend:\n  type: sglang\n  sglang_config:\n"
                               f"    decode: {ARGS}\n  decode_environment: {{{SIM}}}\n",
    "nested flow in flow": f"roles: {{decode: {{args: {ARGS}, env: {{{SIM}}}}}}}\n",
    "a flow over lines": f'environment: {{\n  KEEP: "1",\n  {SIM_LINES}\n}}\n'
                         f"roles:\n  decode:\n    args: {ARGS}\n",
}


def _without_knobs(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _without_knobs(v) for k, v in data.items() if not str(k).startswith("SGLANG_SIMULATE_ACC_")}
    return data


def _recipe(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "agentic" / "r.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(HEAD + body)
    return path


@pytest.mark.parametrize("shape", SHAPES)
def test_restore_real_takes_flow_entries_out(shape: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _recipe(tmp_path, SHAPES[shape])
    before = yaml.safe_load(path.read_text())
    assert main(["inject", str(path), "--restore-real"]) == 0, capsys.readouterr().err
    assert yaml.safe_load(path.read_text()) == _without_knobs(before)
    text = path.read_text()
    assert main(["inject", str(path), "--restore-real"]) == 0  # idempotent
    assert path.read_text() == text
    assert check_paths([path], store=load_store()).findings == []


@pytest.mark.parametrize("shape", SHAPES)
def test_inject_over_stale_flow_entries_writes_a_match(shape: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _recipe(tmp_path, SHAPES[shape])
    assert main(["inject", str(path), "--model", "glm5.2", "--thinking", "on", "--force"]) == 0, \
        capsys.readouterr().err
    findings = check_paths([path], store=load_store()).findings
    assert findings
    assert {f.verdict for f in findings} == {"match"}, [f.message for f in findings]


def test_a_roles_recipe_without_backend_is_injected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _recipe(tmp_path, "roles:\n  decode:\n    args:\n      speculative-algorithm: EAGLE\n"
                             "      speculative-num-steps: 3\n")
    assert main(["inject", str(path), "--model", "glm5.2", "--thinking", "on"]) == 0, capsys.readouterr().err
    assert yaml.safe_load(path.read_text())["roles"]["decode"]["env"]["SGLANG_SIMULATE_ACC_LEN"] == "2.99"
    assert main(["inject", str(path), "--restore-real"]) == 0
    assert "env" not in yaml.safe_load(path.read_text())["roles"]["decode"] or \
        not yaml.safe_load(path.read_text())["roles"]["decode"]["env"]
