"""Writing: the one atomic writer (crash-safe, mode-keeping, through symbolic links, in place for
hard links, refusing read-only targets)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from golden_al.errors import InputFileError, ReadOnlyTargetError
from golden_al.safeio.read import file_kind

__all__ = ["atomic_write_bytes", "atomic_write_text"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes, *, force: bool = False) -> Path:
    """Write ``data`` to ``path`` so that a crash never leaves a partial file; returns ``path``.

    * **Atomic**: a temporary file in the target's folder, fsynced, renamed over the target.
    * **Mode**: an existing file keeps its permission bits (and, where allowed, its owner);
      a new file gets ``0666 & ~umask`` (0644 under umask 022), never the temp file's 0600.
    * **Symbolic links**: written through. The link's final target is replaced and the
      link itself stays a link.
    * **Read-only targets**: a file its owner cannot write (no ``w`` bit for us) is refused
      with :class:`~golden_al.errors.ReadOnlyTargetError` (exit 2) unless ``force``.
    * **Hard links**: a file with several links is rewritten *in place* (same inode, so
      every link sees the new content); that write is not atomic, so the new content is
      first written and fsynced to a sibling ``.<name>.*.tmp`` kept for recovery if the
      in-place write fails.

    Raises:
        ReadOnlyTargetError: the target is read-only and not ``force``.
        InputFileError: the folder or file cannot be written (names the target, not a temp file).
    """
    link = Path(path)
    target = Path(os.path.realpath(link)) if link.is_symlink() else link
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputFileError(f"cannot write: {exc.strerror or exc}", path=link) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputFileError(f"cannot write: it is {file_kind(st)}, not a regular file", path=link)
    if st is not None and not force and not (os.access(target, os.W_OK) and st.st_mode & 0o222):
        raise ReadOnlyTargetError("refusing to overwrite a read-only file", path=link,
                                  hint="make it writable, or pass --force to replace it anyway")
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputFileError(f"cannot write into {target.parent}: {exc.strerror or exc}", path=link,
                             hint="the folder must be writable by the user running golden-al") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if st is not None and st.st_nlink > 1:
            _write_in_place(target, data, link)
            os.unlink(tmp)
            return link
        if st is not None:
            with contextlib.suppress(OSError):
                os.chown(tmp, st.st_uid, st.st_gid)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            if not (st is not None and st.st_nlink > 1 and Path(tmp).exists() and not isinstance(exc, OSError)):
                os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputFileError(f"cannot write: {exc.strerror or exc}", path=link) from None
        raise
    return link


def _write_in_place(target: Path, data: bytes, shown: Path) -> None:
    writable_mode = None
    st = os.stat(target)
    if not os.access(target, os.W_OK):  # --force on a read-only hard-linked file
        writable_mode = stat.S_IMODE(st.st_mode)
        os.chmod(target, writable_mode | stat.S_IWUSR)
    try:
        with open(target, "r+b") as fh:
            fh.truncate(0)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        if writable_mode is not None:
            os.chmod(target, writable_mode)
    del shown


def atomic_write_text(path: str | Path, text: str, *, force: bool = False) -> Path:
    """Write UTF-8 ``text`` with :func:`atomic_write_bytes`."""
    return atomic_write_bytes(path, text.encode("utf-8"), force=force)
