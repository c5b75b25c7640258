"""``golden-al commit``: diff, refusal without --force, atomic and idempotent writes, the InferenceX export."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _fit_records import make_curve_dir

from golden_al.cli.main import main
from golden_al.errors import UsageError
from golden_al.golden import Point, dump_curve, load_store, read_curve_file, save_curve
from golden_al.locks import LOCK_NAME


@pytest.fixture
def curve_file(tmp_path: Path) -> Path:
    recs = make_curve_dir(tmp_path / "recs", range(1, 5))
    out = tmp_path / "curve.yaml"
    assert main(["fit", str(recs), "--out", str(out)]) == 0
    return out


def _edit(path: Path, out: Path, **changes) -> Path:
    """A copy of the curve at ``path`` with thinking_off points replaced/added/removed."""
    curve = read_curve_file(path)[0].curve
    points = dict(curve.thinking_off.points)
    for k, value in changes.items():
        k = int(k.lstrip("k"))
        if value is None:
            points.pop(k)
        else:
            points[k] = value
    blk = curve.thinking_off.model_copy(update={"points": points})
    save_curve(curve.model_copy(update={"thinking_off": blk}), out)
    return out


def _commit(*argv: str) -> int:
    return main(["commit", *argv])


def _lookup_al(model_block, num_spec_tokens, thinking_mode):
    """InferenceX runners/inject_synthetic_acceptance.py _lookup_al semantics (HEAD 843c6254f)."""
    if isinstance(model_block, list):
        for item in model_block:
            if num_spec_tokens in item:
                return item[num_spec_tokens]
        return None
    if any(str(k).startswith("thinking") for k in model_block):
        return model_block.get(thinking_mode).get(num_spec_tokens)
    return model_block.get(num_spec_tokens)


def test_new_curve_is_added_with_a_diff(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    out = capsys.readouterr().out
    curve = read_curve_file(curve_file)[0].curve
    for k, p in curve.thinking_off.points.items():
        assert f"+ thinking_off k={k}: added {p.al:.2f}" in out
    assert "(new file)" in out
    assert "4 added" in out
    written = store / "qwen2.5-coder-1.5b-instruct_draft-model.yaml"
    assert read_curve_file(written)[0].curve == curve
    got = load_store(store).lookup("Qwen/Qwen2.5-Coder-1.5B-Instruct", "off", 3)
    assert got.al == curve.thinking_off.points[3].al


def test_recommit_is_idempotent(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    target = store / "qwen2.5-coder-1.5b-instruct_draft-model.yaml"
    before = (target.read_bytes(), target.stat().st_mtime_ns)
    capsys.readouterr()
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    out = capsys.readouterr().out
    assert "4 unchanged" in out
    assert "nothing to write" in out
    assert (target.read_bytes(), target.stat().st_mtime_ns) == before


def test_changed_value_refused_without_force_then_forced(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    target = store / "qwen2.5-coder-1.5b-instruct_draft-model.yaml"
    committed = target.read_bytes()
    old = read_curve_file(curve_file)[0].curve.thinking_off.points[2]
    new_al = round(old.al + 0.07, 2)
    changed = _edit(curve_file, tmp_path / "changed.yaml", k2=Point(al=new_al))
    capsys.readouterr()
    assert _commit(str(changed), "--golden-dir", str(store)) == 1
    cap = capsys.readouterr()
    assert f"~ thinking_off k=2: {old.al:.2f} -> {new_al:.2f}" in cap.out
    assert "needs --force" in cap.out
    assert "refusing to change" in cap.err
    assert "--force" in cap.err
    assert target.read_bytes() == committed
    assert _commit(str(changed), "--golden-dir", str(store), "--force") == 0
    assert read_curve_file(target)[0].curve.thinking_off.points[2].al == new_al


def test_adding_points_needs_no_force(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    last = read_curve_file(curve_file)[0].curve.thinking_off.points[4].al
    more = _edit(curve_file, tmp_path / "more.yaml", k5=Point(al=round(last + 0.05, 2), origin="derived"))
    capsys.readouterr()
    assert _commit(str(more), "--golden-dir", str(store)) == 0
    assert "+ thinking_off k=5: added" in capsys.readouterr().out
    assert 5 in read_curve_file(store / "qwen2.5-coder-1.5b-instruct_draft-model.yaml")[0].curve.thinking_off.points


def test_removed_point_and_revised_ci_need_force(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    capsys.readouterr()
    fewer = _edit(curve_file, tmp_path / "fewer.yaml", k4=None)
    assert _commit(str(fewer), "--golden-dir", str(store)) == 1
    assert "- thinking_off k=4:" in capsys.readouterr().out
    p1 = read_curve_file(curve_file)[0].curve.thinking_off.points[1]
    revised = _edit(curve_file, tmp_path / "rev.yaml", k1=Point(al=p1.al, ci95=(1.0, p1.ci95[1] + 0.1)))
    assert _commit(str(revised), "--golden-dir", str(store)) == 1
    assert "ci95" in capsys.readouterr().out


def test_settings_change_needs_force(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    curve = read_curve_file(curve_file)[0].curve
    sampling = curve.thinking_off.sampling.model_copy(update={"temperature": 0.7})
    other = curve.model_copy(update={"thinking_off": curve.thinking_off.model_copy(update={"sampling": sampling})})
    save_curve(other, tmp_path / "other.yaml")
    capsys.readouterr()
    assert _commit(str(tmp_path / "other.yaml"), "--golden-dir", str(store)) == 1
    assert "thinking_off.sampling.temperature: 0 -> 0.7" in capsys.readouterr().out


def test_dry_run_writes_nothing(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store), "--dry-run", "--export", "inferencex",
                   "--export-name", "qwen25coder_draft-model.yaml") == 0
    assert not store.exists() or not any(store.rglob("*.yaml"))
    assert "dry run" in capsys.readouterr().out
    existing = tmp_path / "existing"  # an existing store: still no file of any kind is created
    existing.mkdir()
    assert _commit(str(curve_file), "--golden-dir", str(existing), "--dry-run") == 0
    assert list(existing.iterdir()) == []  # no .golden-al.lock left behind


def test_export_inferencex_reads_with_their_lookup(curve_file: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store), "--export", "inferencex",
                   "--export-name", "qwen25coder_draft-model.yaml") == 0
    exported = store / "golden_al_distribution" / "qwen25coder_draft-model.yaml"
    text = exported.read_text()
    assert text.startswith("#")
    data = yaml.safe_load(text)
    curve = read_curve_file(curve_file)[0].curve
    assert list(data) == [curve.model]
    block = data[curve.model]
    for k, p in curve.thinking_off.points.items():
        got = _lookup_al(block, k, "thinking_off")
        assert isinstance(got, float)
        assert got == p.al
    assert _lookup_al(block, 99, "thinking_off") is None
    assert "record sha256" in text.lower()  # provenance in the header comment
    # the export (a subfolder) is not read as a second curve of the store
    assert len(load_store(store).curves) == 1


def test_export_dir_option(curve_file: Path, tmp_path: Path) -> None:
    assert _commit(str(curve_file), "--golden-dir", str(tmp_path / "s"), "--export", "inferencex",
                   "--export-dir", str(tmp_path / "ix"), "--export-name", "q_draft-model.yaml") == 0
    assert (tmp_path / "ix" / "q_draft-model.yaml").is_file()


def test_write_is_atomic(curve_file: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    target = store / "qwen2.5-coder-1.5b-instruct_draft-model.yaml"
    committed = target.read_bytes()
    more = _edit(curve_file, tmp_path / "more.yaml", k6=Point(al=3.9, origin="derived"))

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("golden_al.safeio.write.os.replace", crash)
    assert _commit(str(more), "--golden-dir", str(store)) != 0
    assert target.read_bytes() == committed
    left = sorted(p.name for p in store.iterdir() if p.name != LOCK_NAME)  # the store lock stays
    assert left == [target.name]  # no temp file left behind


def test_alias_naming_another_model_is_refused(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    store.mkdir()
    other = read_curve_file(curve_file)[0].curve.model_copy(update={"model": "another-model", "aliases": ["Qwen/Qwen2.5-Coder-1.5B-Instruct"]})
    save_curve(other, store / "another-model_draft-model.yaml")
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 2
    assert "already names model 'another-model'" in capsys.readouterr().err


def test_legacy_file_of_the_same_model_is_refused(curve_file: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "qwen2.5-coder-1.5b-instruct_mtp.yaml").write_text(
        "qwen2.5-coder-1.5b-instruct:\n  thinking_off:\n    1: 1.80\n")
    curve = read_curve_file(curve_file)[0].curve
    mtp = curve.model_copy(update={"draft": curve.draft.model_copy(update={"method": "mtp", "model": None})})
    save_curve(mtp, tmp_path / "mtp.yaml")
    assert _commit(str(tmp_path / "mtp.yaml"), "--golden-dir", str(store)) == 2
    assert "legacy shape" in capsys.readouterr().err


def test_not_a_curve_is_an_input_error(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nmodel: x\n")
    assert _commit(str(bad), "--golden-dir", str(tmp_path / "s")) == 2
    assert "bad.yaml" in capsys.readouterr().err


def test_committed_bytes_are_canonical(curve_file: Path, tmp_path: Path) -> None:
    # the store file is dump_curve's text: loading and dumping it again gives the same bytes
    store = tmp_path / "store"
    assert _commit(str(curve_file), "--golden-dir", str(store)) == 0
    target = store / "qwen2.5-coder-1.5b-instruct_draft-model.yaml"
    assert dump_curve(read_curve_file(target)[0].curve) == target.read_text()


def test_export_refuses_a_second_file_for_a_model_and_takes_export_name(curve_file: Path, tmp_path: Path,
                                                                        capsys) -> None:
    """InferenceX names files by its own prefix (dsv4_mtp.yaml): a second file would make the model ambiguous."""
    ix = tmp_path / "ix"
    assert _commit(str(curve_file), "--golden-dir", str(tmp_path / "s"), "--export", "inferencex",
                   "--export-dir", str(ix), "--export-name", "theirs_draft-model.yaml") == 0
    assert [p.name for p in ix.iterdir()] == ["theirs_draft-model.yaml"]
    capsys.readouterr()
    # another name for a model the folder already holds would add a second file: refused
    assert _commit(str(curve_file), "--golden-dir", str(tmp_path / "s2"), "--export", "inferencex",
                   "--export-dir", str(ix), "--export-name", "mine_draft-model.yaml") == 2
    err = capsys.readouterr().err
    assert "theirs_draft-model.yaml already holds" in err
    assert "--export-name theirs_draft-model.yaml" in err
    assert [p.name for p in ix.iterdir()] == ["theirs_draft-model.yaml"]
    # without a name, the file the folder already has for this curve is the one written
    (ix / "theirs_draft-model.yaml").write_text((ix / "theirs_draft-model.yaml").read_text().replace("# ", "#  ", 1))
    assert _commit(str(curve_file), "--golden-dir", str(tmp_path / "s2"), "--export", "inferencex",
                   "--export-dir", str(ix)) == 0
    assert [p.name for p in ix.iterdir()] == ["theirs_draft-model.yaml"]
    assert "exported" in capsys.readouterr().out
    assert _commit(str(curve_file), "--export-name", "x.yaml") == 2


def test_export_of_a_new_curve_without_a_name_is_refused(curve_file: Path, tmp_path: Path, capsys) -> None:
    """golden-al cannot derive InferenceX's model prefix: no <model>_<method>.yaml guess, exit 2 and a hint."""
    store = tmp_path / "s"
    assert _commit(str(curve_file), "--golden-dir", str(store), "--export", "inferencex") == 2
    err = capsys.readouterr().err
    assert "cannot know the name InferenceX would give it" in err
    assert "--export-name <model prefix>_draft-model.yaml" in err
    assert not store.exists() or not any(store.rglob("*.yaml"))  # refused before anything is written
    assert _commit(str(curve_file), "--golden-dir", str(store), "--dry-run", "--export", "inferencex") == 2


def test_export_keeps_the_source_file_name_of_an_imported_curve(curve_file: Path, tmp_path: Path) -> None:
    from golden_al.curvefit.commit import export_file_name

    curve = read_curve_file(curve_file)[0].curve
    prov = curve.provenance.model_copy(update={
        "notes": "Imported from SemiAnalysisAI/InferenceX golden_al_distribution/dsv4_mtp.yaml at 843c6254f"})
    imported = curve.model_copy(update={"provenance": prov})
    assert export_file_name(imported, tmp_path / "ix") == "dsv4_mtp.yaml"
    assert export_file_name(imported, tmp_path / "ix", "c_d.yaml") == "c_d.yaml"
    assert export_file_name(curve, tmp_path / "ix", "c_d.yaml") == "c_d.yaml"
    with pytest.raises(UsageError, match="cannot know the name"):
        export_file_name(curve, tmp_path / "ix")
