"""Run a command in a child process and measure what it took: exit code, wall time, peak RSS.

Peak RSS is the command's own high-water mark. Linux keeps ``ru_maxrss`` across
``execve`` and counts a forked child's shared pages, so a command started straight from a
pytest process that has loaded torch would report pytest's ~700 MB. Commands therefore
start through a small launcher (:data:`_LAUNCHER`, a fresh interpreter of a few MB) that
forks and execs the command and reports the ``os.wait4`` ``ru_maxrss`` of that grandchild;
a command that grows without bound is caught even when it is killed at the timeout. In
:func:`main_as_nobody` (a fork of this process) the peak is the growth over the fork: the
child resets its high-water mark (``/proc/self/clear_refs``) and reports ``VmHWM`` minus
its ``VmRSS`` at the start.

Permission cases run as ``nobody`` (:func:`main_as_nobody`): as root (CI), a forked child
drops to nobody/nogroup with no supplementary groups and no capabilities, exactly what
``setpriv --reuid=nobody --regid=nogroup --clear-groups`` does, then runs the CLI's
``main``. It forks rather than exec'ing a fresh interpreter because root's interpreter
and site-packages may live under ``/root``, which nobody cannot read.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MB = 1024 * 1024

#: argv: REPORT_FD CMD...; runs CMD as its child and writes the child's ru_maxrss (KiB) to REPORT_FD.
_LAUNCHER = """
import os, signal, sys
fd = int(sys.argv[1]); cmd = sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.close(fd)
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGKILL))
_, status, usage = os.wait4(pid, 0)
os.write(fd, str(usage.ru_maxrss).encode()); os.close(fd)
code = os.waitstatus_to_exitcode(status)
if code < 0:
    signal.signal(-code, signal.SIG_DFL); os.kill(os.getpid(), -code)
os._exit(code)
"""


def _status_kib(field: str) -> int:
    """A ``VmRSS``/``VmHWM`` line of /proc/self/status, in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


@dataclass(frozen=True)
class Ran:
    """What one bounded run did."""

    rc: int
    wall_s: float
    peak_rss_mb: float
    stdout: str
    stderr: str
    timed_out: bool


def golden_al(*argv: str) -> list[str]:
    """The command line that runs the CLI with this interpreter."""
    return [sys.executable, "-m", "golden_al", *argv]


#: Modules the CLI imports lazily, loaded before a child drops to nobody.
_WARM = ("golden_al.cli.check", "golden_al.cli.inject", "golden_al.cli.commit", "golden_al.cli.check_run",
         "golden_al.checks.static", "golden_al.knobs.scripts", "golden_al.checks.yaml_configs",
         "golden_al.shell", "golden_al.checks.run", "golden_al.golden", "golden_al.injection",
         "golden_al.injection.inject", "golden_al.formats", "golden_al.safeio", "simulators.base", "yaml",
         "ruamel.yaml", "prometheus_client.parser", "rich.console", "tree_sitter", "tree_sitter_bash")


def main_as_nobody(argv: list[str], *, warm: list[str] | None = None, timeout: float = 60.0) -> Ran:
    """``golden_al.cli.main.main(argv)`` in a forked child running as an unprivileged user.

    ``warm``: a harmless command line run here first (output discarded) so that every
    module the command imports lazily is loaded before the child loses access to them.
    """
    import contextlib
    import importlib
    import io
    import pwd

    for name in _WARM:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from golden_al.cli.main import main

    if warm is not None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(warm)

    user = pwd.getpwnam("nobody")
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    rss_r, rss_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 70
        try:
            os.close(rss_r)
            Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
            base = _status_kib("VmRSS")
            sys.stdout = open(out.fileno(), "w", closefd=False)
            sys.stderr = open(err.fileno(), "w", closefd=False)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)  # from root: drops every capability too
            assert os.geteuid() != 0
            code = main(argv)
            sys.stdout.flush()
            sys.stderr.flush()
            os.write(rss_w, str(max(0, _status_kib("VmHWM") - base)).encode())
        finally:
            os._exit(code)
    os.close(rss_w)
    timer = threading.Timer(timeout, lambda: os.kill(pid, signal.SIGKILL))
    timer.start()
    try:
        _, status, usage = os.wait4(pid, 0)
    finally:
        timer.cancel()
    grown = os.read(rss_r, 64)
    os.close(rss_r)
    out.seek(0)
    err.seek(0)
    # A child that died before reporting counts its whole (inherited) high-water mark.
    peak_kib = int(grown) if grown else usage.ru_maxrss
    return Ran(os.waitstatus_to_exitcode(status), time.monotonic() - start, peak_kib / 1024.0,
               out.read().decode(errors="replace"), err.read().decode(errors="replace"), False)


def run_bounded(cmd: list[str], *, timeout: float, cwd: str | Path | None = None,
                memory_mb: float | None = None) -> Ran:
    """Run ``cmd`` (killed after ``timeout`` s; optional address-space limit) and measure it."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))

    def limit() -> None:  # pragma: no cover - runs in the child
        if memory_mb is not None:
            import resource

            cap = int(memory_mb * MB)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    rss_r, rss_w = os.pipe()
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, str(rss_w), *cmd], stdout=out_w, stderr=err_w,
                            stdin=subprocess.DEVNULL, cwd=cwd, env=env, pass_fds=(rss_w,),
                            preexec_fn=limit if memory_mb is not None else None, start_new_session=True)
    os.close(out_w)
    os.close(err_w)
    os.close(rss_w)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}

    def drain(fd: int) -> None:
        while data := os.read(fd, 65536):
            if sum(map(len, chunks[fd])) < 4 * MB:
                chunks[fd].append(data)

    readers = [threading.Thread(target=drain, args=(fd,), daemon=True) for fd in chunks]
    for t in readers:
        t.start()
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    for t in readers:
        t.join(timeout=5)
    for fd in chunks:
        os.close(fd)
    reported = os.read(rss_r, 64)
    os.close(rss_r)
    # Killed at the timeout before reporting: the launcher's own figure (inherited, an upper bound).
    peak_kib = int(reported) if reported else usage.ru_maxrss
    return Ran(proc.returncode, wall, peak_kib / 1024.0, b"".join(chunks[out_r]).decode(errors="replace"),
               b"".join(chunks[err_r]).decode(errors="replace"), timed_out.is_set())
