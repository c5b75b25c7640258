"""The CLI where torch and transformers are not installed (issue 37): a command that needs the ``engine`` extra
exits 2 with the install line before any download or model load; the torch-free commands work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCKER = '''
import importlib.abc, sys
class _NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _NoTorch())
'''


@pytest.fixture
def no_torch(tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if k not in ("GOLDEN_AL_CACHE", "GOLDEN_AL_GOLDEN_DIR")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "golden_al", *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)

    return run


def test_the_blocker_really_hides_torch(no_torch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0
    assert "No module named 'torch'" in done.stderr


@pytest.mark.parametrize("args", [
    ["measure", "--draft-len", "7", "--cache-dir", "cache"],
    ["models", "fetch", "qwen2.5-coder-pair", "--cache-dir", "cache"],
    ["serve-reference", "--flavor", "sglang", "--target", "t", "--draft", "d", "--draft-len", "3", "--cache-dir",
     "cache"],
])
def test_commands_that_need_the_engine_extra_exit_2_before_any_download(no_torch, tmp_path: Path,
                                                                         args: list[str]) -> None:
    done = no_torch(*args)
    assert done.returncode == 2, done.stderr
    assert "needs the 'engine' extra" in done.stderr
    assert "pip install 'golden-al[engine]'" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "cache").exists()  # nothing was downloaded or cached


def test_the_torch_free_commands_work_without_torch(no_torch) -> None:  # type: ignore[no-untyped-def]
    fixtures = REPO / "tests" / "fixtures"
    assert no_torch("check", str(fixtures / "recipes" / "sglang_agg_mtp.yaml")).returncode in (0, 1)
    assert no_torch("select", str(fixtures / "select" / "sglang_roles_dflash.yaml")).returncode == 0
    assert no_torch("env", "--model", "musespark", "--thinking", "on", "--engine", "sglang",
                    "--draft-len", "7").returncode == 0
    done = no_torch("verify", str(REPO / "experiments" / "qwen-coder-curve" / "humaneval" / "k4"))
    assert done.returncode == 0, done.stderr
