"""The GitHub Action (``action.yml``) and the pre-commit hook, without GitHub: the action's own script
runs on a fixture tree with the inputs as the action passes them, and its job summary is checked."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures" / "check"
SCRIPT = REPO / "scripts" / "github-action-check.sh"


def _run(tmp_path: Path, **inputs: str) -> tuple[int, str, str]:
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
           "GITHUB_STEP_SUMMARY": str(summary), **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}}
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    return proc.returncode, proc.stdout, summary.read_text() if summary.exists() else ""


def test_the_action_runs_its_script_with_every_input():
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) >= {"paths", "golden-dir", "allow", "exclude", "check-run"}
    steps = action["runs"]["steps"]
    assert any("scripts/github-action-check.sh" in s.get("run", "") for s in steps)
    env = next(s["env"] for s in steps if "github-action-check.sh" in s.get("run", ""))
    assert {k for k in env} == {f"INPUT_{name.upper().replace('-', '_')}" for name in action["inputs"]
                                if name != "python-version"}


def test_a_failing_tree_gets_annotations_and_a_job_summary(tmp_path):
    code, out, summary = _run(tmp_path, paths=str(FIX / "tree" / "recipes"), golden_dir=str(FIX / "golden"))
    assert code == 1
    assert "::error file=" in out
    assert "title=golden-al check%3A mismatch::" in out
    assert summary.startswith("## golden-al check: FAIL")
    assert "| file:line | verdict | engine | k | pinned | golden | why |" in summary
    assert "**mismatch**" in summary
    assert "<details><summary>" in summary  # the matches, folded


def test_allow_and_a_clean_tree_pass(tmp_path):
    tree = tmp_path / "tree" / "agentic"
    tree.mkdir(parents=True)
    shutil.copy(FIX / "tree" / "recipes" / "sglang" / "musespark-dflash.yaml", tree)
    shutil.copy(FIX / "tree" / "recipes" / "vllm" / "agentic" / "unknown-model.yaml", tree)
    code, _, summary = _run(tmp_path, paths=str(tmp_path / "tree"), golden_dir=str(FIX / "golden"))
    assert code == 1  # no-golden fails by default
    code, _, summary = _run(tmp_path, paths=str(tmp_path / "tree"), golden_dir=str(FIX / "golden"),
                            allow="no-golden", exclude="nothing-*.yaml")
    assert code == 0
    assert "## golden-al check: pass" in summary
    assert "no-golden (allowed) | 1" in summary


def test_check_run_lines_are_run_and_summarised(tmp_path):
    from golden_al.engines import sglang

    log = tmp_path / "server.log"
    lines = [sglang.LOG_SERVER_ARGS_FORMAT.format(time="2026-01-01 00:00:00", model="deepseek-ai/DeepSeek-V4-Pro",
                                                  algorithm="EAGLE", steps=3, draft_tokens=4)]
    lines += [f"[2026-01-01 00:00:{i:02d} TP0] Decode batch, #running-req: 8, #token: 1, token usage: 0.00, "
              f"accept len: {2.49 - 0.02 * (i % 2) + 0.01:.2f}, accept rate: 0.50, cuda graph: True, gen throughput "
              "(token/s): 1.00, #queue-req: 0" for i in range(30)]
    log.write_text("\n".join(lines) + "\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(FIX / "tree" / "recipes" / "sglang" / "musespark-dflash.yaml", tree)
    code, out, summary = _run(tmp_path, paths=str(tree), check_run=f"sglang on {log}\n")
    assert code == 0, out
    assert "verdict: PASS" in out
    assert "### golden-al check-run" in summary
    assert "[curve dsv4_mtp]" in summary


def test_the_pre_commit_hook_calls_check():
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert (hook["id"], hook["entry"], hook["language"]) == ("golden-al-check", "golden-al check", "python")
    assert hook["pass_filenames"] is True


def test_a_stale_suppression_is_in_the_summary_and_fails_with_strict_suppressions(tmp_path):
    tree = tmp_path / "tree" / "agentic"
    tree.mkdir(parents=True)
    recipe = (FIX / "tree" / "recipes" / "sglang" / "musespark-dflash.yaml").read_text()
    lines = recipe.splitlines()
    lines[7] += "  # golden-al: ignore[mismatch] -- an old reason; the value matches now"  # line 8: the matching pin
    (tree / "r.yaml").write_text("\n".join(lines) + "\n")
    code, out, summary = _run(tmp_path, paths=str(tmp_path / "tree"), golden_dir=str(FIX / "golden"))
    assert code == 0
    assert "stale suppression" in summary
    assert "::warning file=" in out
    code, out, summary = _run(tmp_path, paths=str(tmp_path / "tree"), golden_dir=str(FIX / "golden"),
                              strict_suppressions="true")
    assert code == 1
    assert "::error file=" in out
    assert "**bad-suppression**" in summary
