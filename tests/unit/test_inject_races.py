"""inject never loses a concurrent edit (issue 38, item 5): it holds commit's lock on the recipe's folder while it
reads, plans and writes, and writes only if the file is unchanged since it was read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from golden_al import locks
from golden_al.errors import InjectionConflictError, LockedError
from golden_al.golden import load_store
from golden_al.injection import inject as inject_mod
from golden_al.injection.restore import restore_file

pytestmark = pytest.mark.hostile

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "recipes"
STORE = load_store(None)


def _recipe(tmp_path: Path) -> Path:
    p = tmp_path / "recipe.yaml"
    shutil.copy(FIX / "sglang_agg_mtp.yaml", p)
    return p


def test_an_edit_between_read_and_write_is_never_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _recipe(tmp_path)
    real_plan = inject_mod.plan_injection
    edited = p.read_text() + "# an editor saved this while inject ran\n"

    def plan_then_someone_saves(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = real_plan(*args, **kwargs)
        p.write_text(edited)
        return result

    monkeypatch.setattr(inject_mod, "plan_injection", plan_then_someone_saves)
    with pytest.raises(InjectionConflictError, match="changed while it was being rewritten"):
        inject_mod.inject_file(p, store=STORE, model="qwen3.5", thinking="on")
    assert p.read_text() == edited


def test_inject_waits_for_the_lock_commit_takes_and_names_the_holder(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    p = _recipe(tmp_path)
    before = p.read_text()
    monkeypatch.setattr(locks, "LOCK_TIMEOUT_S", 0.3)
    with locks.directory_lock(tmp_path, purpose="another writer"):
        with pytest.raises(LockedError, match="another writer"):
            inject_mod.inject_file(p, store=STORE, model="qwen3.5", thinking="on")
        with pytest.raises(LockedError):
            restore_file(p)
        assert p.read_text() == before
        # a dry run only reads: it needs no lock
        assert inject_mod.inject_file(p, store=STORE, model="qwen3.5", thinking="on", dry_run=True).changed
    written = inject_mod.inject_file(p, store=STORE, model="qwen3.5", thinking="on")
    assert written.written
    assert "SGLANG_SIMULATE_ACC_LEN" in p.read_text()
