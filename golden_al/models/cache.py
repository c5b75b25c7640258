"""What the model cache holds: registry models (fetched or not) and converted GGUF files. Torch-free."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from golden_al.models.convert import CONVERSION_MANIFEST
from golden_al.models.fetch import (
    MODEL_MANIFEST,
    _converted_ok,
    _gguf_ok_quick,
    converted_hash_mismatch,
    float32_dirs,
    model_dir,
    read_manifest,
)
from golden_al.models.registry import MODELS, PAIRS
from golden_al.models.wheels import dir_size
from golden_al.provenance import sha256_file

__all__ = ["CachedModel", "cached_models", "downloads_size"]


@dataclass(frozen=True)
class CachedModel:
    """One model's cache status."""

    name: str
    kind: str  # registry | gguf-conversion
    pair: str | None
    gguf_path: str | None
    gguf_sha256: str | None
    gguf_status: str  # verified | verified-now | stale | mismatch | missing
    converted_dir: str | None
    converted_status: str  # ok | incomplete | missing | hash-mismatch | verified-now
    dtype: str | None
    shipped_dtype: str | None
    size_bytes: int
    num_parameters: int | None
    verified_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cached_models(cache_dir: str | Path, *, verify: bool = False) -> list[CachedModel]:
    """Status of every registry model and every converted GGUF under ``cache_dir``.

    Without ``verify`` the GGUF counts as verified when the manifest verified it and
    its size and mtime are unchanged; with ``verify`` every file is re-hashed.
    """
    cache = Path(cache_dir).expanduser()
    out: list[CachedModel] = []
    for entry in MODELS.values():
        pair = next((p.name for p in PAIRS.values() if entry.name in (p.target, p.draft)), None)
        mdir = model_dir(cache, entry.name)
        manifest = read_manifest(mdir / MODEL_MANIFEST)
        gguf = mdir / entry.gguf_filename
        if not gguf.is_file():
            gstatus = "missing"
        elif verify:
            gstatus = "verified-now" if sha256_file(gguf) == entry.gguf_sha256 else "mismatch"
        else:
            gstatus = "verified" if _gguf_ok_quick(manifest, gguf, entry) else "stale"
        # the float32 conversion the loader uses: read from the GGUF, else safetensors (an older cache)
        choices = float32_dirs(cache, entry.name)
        conv_dir = next((c for c in choices if _converted_ok(c, entry)),
                        next((c for c in choices if c.is_dir()), choices[0]))
        conv = read_manifest(conv_dir / CONVERSION_MANIFEST)
        if not conv_dir.is_dir():
            cstatus = "missing"
        elif not _converted_ok(conv_dir, entry):
            cstatus = "incomplete"
        elif verify:
            cstatus = "hash-mismatch" if converted_hash_mismatch(conv_dir) else "verified-now"
        else:
            cstatus = "ok"
        out.append(CachedModel(
            name=entry.name, kind="registry", pair=pair,
            gguf_path=str(gguf) if gguf.is_file() else None, gguf_sha256=entry.gguf_sha256, gguf_status=gstatus,
            converted_dir=str(conv_dir) if conv_dir.is_dir() else None, converted_status=cstatus,
            dtype=(conv or {}).get("dtype"), shipped_dtype=entry.shipped_dtype, size_bytes=dir_size(mdir),
            num_parameters=(conv or {}).get("num_parameters"),
            verified_at=((manifest or {}).get("gguf") or {}).get("verified_at"),
        ))
    converted_root = cache / "converted"
    if converted_root.is_dir():
        for conv_dir in sorted(converted_root.glob("*/safetensors-*")):
            conv = read_manifest(conv_dir / CONVERSION_MANIFEST) or {}
            files = conv.get("files") or {}
            complete = bool(files) and all(
                (conv_dir / rel).is_file() and (conv_dir / rel).stat().st_size == info.get("size")
                for rel, info in files.items())
            cstatus = "missing" if not conv else "incomplete" if not complete else "ok"
            if verify and complete:
                cstatus = "hash-mismatch" if converted_hash_mismatch(conv_dir) else "verified-now"
            out.append(CachedModel(
                name=str(conv.get("gguf_file") or conv_dir.parent.name), kind="gguf-conversion", pair=None,
                gguf_path=None, gguf_sha256=conv.get("gguf_sha256"), gguf_status="not-kept",
                converted_dir=str(conv_dir), converted_status=cstatus, dtype=conv.get("dtype"),
                shipped_dtype=conv.get("shipped_dtype"), size_bytes=dir_size(conv_dir),
                num_parameters=conv.get("num_parameters"), verified_at=conv.get("created"),
            ))
    return out


def downloads_size(cache_dir: str | Path) -> dict[str, int]:
    """Bytes of downloaded wheels per pair (and ``data`` for prompt packages)."""
    root = Path(cache_dir).expanduser() / "downloads"
    if not root.is_dir():
        return {}
    return {p.name: dir_size(p) for p in sorted(root.iterdir()) if p.is_dir()}

