"""One lock for store, cell and model cache (golden_al.locks): one behaviour, a timeout, a named holder."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path

import pytest

from golden_al import locks
from golden_al.errors import LockedError


def _hold(directory: str, ready, release) -> None:  # pragma: no cover - a child process
    with locks.directory_lock(directory, purpose="commit"):
        ready.set()
        release.wait(30)


def test_a_second_process_waits_then_names_the_holder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = mp.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    child.start()
    try:
        assert ready.wait(30)
        told: list[str] = []
        monkeypatch.setattr(locks, "LOCK_TIMEOUT_S", 0.3)
        with pytest.raises(LockedError) as err:
            with locks.directory_lock(tmp_path, purpose="measure", on_wait=told.append):
                pass
        assert f"pid {child.pid}" in str(err.value)
        assert "(commit:" in str(err.value)
        assert len(told) == 1
        assert f"pid {child.pid}" in told[0]
        assert locks.holder_of(tmp_path)["purpose"] == "commit"  # type: ignore[index]
    finally:
        release.set()
        child.join(30)
    with locks.directory_lock(tmp_path, purpose="measure", timeout_s=5):  # free again once it is gone
        assert locks.holder_of(tmp_path)["pid"] == os.getpid()  # type: ignore[index]


def test_a_dead_holder_never_leaves_the_folder_locked(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    child.start()
    assert ready.wait(30)
    child.kill()
    child.join(30)
    with locks.directory_lock(tmp_path, purpose="commit", timeout_s=5):
        pass


def test_readers_share_and_create_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    with locks.directory_lock(missing, purpose="commit --dry-run", shared=True):
        pass
    assert not missing.exists()
    with locks.directory_lock(tmp_path, purpose="commit"):
        pass
    with locks.directory_lock(tmp_path, purpose="read", shared=True), \
            locks.directory_lock(tmp_path, purpose="read", shared=True, timeout_s=0):
        pass  # two readers at once


def test_the_holder_record_is_bounded_json(tmp_path: Path) -> None:
    with locks.directory_lock(tmp_path, purpose="commit"):
        record = json.loads((tmp_path / locks.LOCK_NAME).read_text())
    assert set(record) == {"pid", "host", "purpose", "command", "since"}
    (tmp_path / locks.LOCK_NAME).write_bytes(b"\xff" * 10_000_000)  # garbage: no holder, no crash
    assert locks.holder_of(tmp_path) is None


def test_store_cell_and_model_cache_use_the_one_lock() -> None:
    """No other fcntl lock in the library: every folder lock goes through golden_al.locks."""
    root = Path(__file__).resolve().parents[2] / "golden_al"
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "fcntl.flock" in p.read_text())
    assert users == ["locks.py"]
