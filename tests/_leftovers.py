"""What a test run leaves behind: processes it started and shared-memory segments nobody holds.

Every process the suite starts inherits :data:`MARK` in its environment (set once per session),
so a leftover is found by reading ``/proc/PID/environ`` of our own processes, whatever its
parent became. A ``/dev/shm`` entry that appeared during the run and that no live process maps
or holds open (``/proc/PID/maps``, ``/proc/PID/fd``) is an orphan: a SIGKILLed vLLM server
leaves its segments behind (hundreds of MB each). Linux only; elsewhere both are no-ops.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

MARK = "GOLDEN_AL_TEST_SESSION"
SHM = Path("/dev/shm")
PROC = Path("/proc")


def _pids() -> list[int]:
    return [int(p.name) for p in PROC.iterdir() if p.name.isdigit()] if PROC.is_dir() else []


def marked_processes(token: str) -> list[int]:
    """Live processes (not this one) whose environment carries ``MARK=token``."""
    needle = f"{MARK}={token}".encode()
    me = os.getpid()
    found: list[int] = []
    for pid in _pids():
        if pid == me:
            continue
        with contextlib.suppress(OSError):
            if needle in (PROC / str(pid) / "environ").read_bytes().split(b"\0"):
                found.append(pid)
    return found


def kill_marked(token: str) -> list[int]:
    """SIGKILL every marked process (and its process group when it leads one); returns the pids."""
    pids = marked_processes(token)
    for pid in pids:
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid and pid != os.getpgrp():
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
    return pids


def shm_entries() -> set[str]:
    return {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()


def _held() -> set[str]:
    held: set[str] = set()
    prefix = str(SHM) + "/"
    for pid in _pids():
        base = PROC / str(pid)
        with contextlib.suppress(OSError):
            for line in (base / "maps").read_text(errors="replace").splitlines():
                path = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
                if path.startswith(prefix):
                    held.add(path[len(prefix):].removesuffix(" (deleted)"))
        with contextlib.suppress(OSError):
            for fd in (base / "fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith(prefix):
                        held.add(target[len(prefix):].removesuffix(" (deleted)"))
    return held


def remove_orphan_shm(before: set[str]) -> list[str]:
    """Unlink ``/dev/shm`` entries not in ``before`` that no live process holds; returns their names."""
    held = _held()
    removed: list[str] = []
    for name in sorted(shm_entries() - before - held):
        with contextlib.suppress(OSError):
            (SHM / name).unlink()
            removed.append(name)
    return removed
