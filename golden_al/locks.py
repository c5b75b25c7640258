"""One lock for every folder golden-al writes from several processes: the golden store
(``commit``), a measurement cell (``measure``/``sweep``) and a model's cache (``models fetch``).

:func:`directory_lock` holds an ``fcntl`` lock on ``DIR/.golden-al.lock``: exclusive for a
writer, shared for a reader that must not see a half-done change. It waits for another holder,
polling, up to a timeout, and the holder writes who it is into the lock file (pid, host,
command, purpose, since when), so a process that waits, or gives up, names the holder. The
kernel drops the lock when its holder dies, so a crash never leaves a folder locked; the file
itself stays (it is not the lock).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from golden_al.errors import InputFileError, LockedError

__all__ = ["LOCK_NAME", "LOCK_TIMEOUT_S", "directory_lock", "holder_of"]

#: The lock file every locked folder keeps.
LOCK_NAME = ".golden-al.lock"
#: How long a process waits for another holder before it gives up (LockedError, exit 2).
LOCK_TIMEOUT_S = 120.0
_POLL_S = 0.05
_HOLDER_BYTES = 4096


def holder_of(directory: str | Path) -> dict[str, object] | None:
    """Who last took ``directory``'s lock exclusively (None: nobody, or unreadable)."""
    try:
        with open(Path(directory) / LOCK_NAME, "rb") as fh:
            raw = fh.read(_HOLDER_BYTES)
        value = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _describe(holder: dict[str, object] | None) -> str:
    if not holder:
        return "another process"
    return (f"pid {holder.get('pid')} on {holder.get('host')} ({holder.get('purpose')}: "
            f"{holder.get('command')}, since {holder.get('since')})")


@contextlib.contextmanager
def directory_lock(directory: str | Path, *, purpose: str, shared: bool = False,
                   timeout_s: float | None = None,
                   on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold the lock of ``directory`` for ``purpose`` (e.g. ``"commit"``, ``"measure"``).

    A writer (``shared=False``) creates the folder and its lock file when missing and records
    itself as the holder. A reader creates nothing: with no lock file (or a read-only folder)
    there is no writer to wait for, since writes are atomic renames. ``on_wait`` is told once,
    with the holder's name, when the lock is not granted at once.

    ``timeout_s`` defaults to :data:`LOCK_TIMEOUT_S`.

    Raises:
        LockedError: not granted within ``timeout_s`` (the message names the holder).
        InputFileError: the lock file cannot be created.
    """
    root = Path(directory)
    lock_path = root / LOCK_NAME
    timeout_s = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
    if shared and (not root.is_dir() or not lock_path.exists()):
        yield lock_path
        return
    try:
        if not shared:
            root.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, (os.O_RDONLY if shared else os.O_RDWR | os.O_CREAT) | getattr(os, "O_CLOEXEC", 0),
                     0o666)
    except OSError as exc:
        if shared and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            yield lock_path  # a read-only folder cannot change under a reader
            return
        raise InputFileError(f"cannot lock {root}: {exc.strerror or exc}", path=lock_path) from None
    try:
        op = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        deadline = time.monotonic() + timeout_s
        told = False
        while True:
            try:
                fcntl.flock(fd, op)
                break
            except BlockingIOError:
                who = _describe(holder_of(root))
                if time.monotonic() >= deadline:
                    raise LockedError(f"{root} is locked by {who} for over {timeout_s:g} s",
                                      path=root, hint=f"wait for it to finish ({purpose} needs the folder)") from None
                if on_wait is not None and not told:
                    on_wait(f"waiting for {root}: locked by {who}")
                    told = True
                time.sleep(_POLL_S)
        if not shared:
            record = {"pid": os.getpid(), "host": socket.gethostname(), "purpose": purpose,
                      "command": " ".join(sys.argv)[:512], "since": datetime.now(UTC).isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode("utf-8"), 0)
        yield lock_path
    finally:
        os.close(fd)
