"""The suite's own clean-up (tests/_leftovers.py): leftover processes and orphaned /dev/shm segments."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _leftovers

pytestmark = pytest.mark.skipif(not (Path("/proc/self/environ").exists() and _leftovers.SHM.is_dir()),
                                reason="Linux /proc and /dev/shm only")


def test_a_marked_process_is_found_and_killed_whatever_its_parent():
    token = uuid.uuid4().hex
    env = dict(os.environ, **{_leftovers.MARK: token})
    proc = subprocess.Popen(["sleep", "120"], env=env, start_new_session=True)
    other = subprocess.Popen(["sleep", "120"])  # not marked with this token: left alone
    try:
        assert _leftovers.marked_processes(token) == [proc.pid]
        assert _leftovers.kill_marked(token) == [proc.pid]
        assert proc.wait(timeout=30) < 0
        assert other.poll() is None
    finally:
        for p in (proc, other):
            p.kill()
            p.wait()


def test_an_orphaned_segment_is_removed_and_a_held_one_kept():
    before = _leftovers.shm_entries()
    orphan = _leftovers.SHM / f"golden-al-test-{uuid.uuid4().hex}"
    held = _leftovers.SHM / f"golden-al-test-{uuid.uuid4().hex}"
    orphan.write_bytes(b"x" * 4096)
    held.write_bytes(b"y" * 4096)
    with held.open("rb"):
        removed = _leftovers.remove_orphan_shm(before)
        assert orphan.name in removed
        assert not orphan.exists()
        assert held.exists()
        assert held.name not in removed
    held.unlink()
    assert not (set(removed) & before)
