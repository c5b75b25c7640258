"""Get ``llama-server``: download the pinned llama.cpp source from PyPI, build it, cache it.

The source is the sdist of ``llama-cpp-python`` (pinned by version and sha256 in
:data:`golden_al.engines.llamacpp.BUILD`), fetched with ``pip download --no-deps
--no-binary :all:`` (never installed); its ``vendor/llama.cpp`` tree is built with
cmake (ninja when available) for the ``llama-server`` target only.

Cache layout (outside the repository, under the golden-al cache)::

    CACHE/engines/llamacpp/src/<sdist>.tar.gz         the verified sdist
    CACHE/engines/llamacpp/<sha256[:16]>/source/      the extracted llama.cpp tree
    CACHE/engines/llamacpp/<sha256[:16]>/build/       cmake build directory
    CACHE/engines/llamacpp/<sha256[:16]>/build.log    configure + build output
    CACHE/engines/llamacpp/<sha256[:16]>/configure.json  the cmake options of the build directory
    CACHE/engines/llamacpp/<sha256[:16]>/attempts.json  every configure + build attempt, timed
    CACHE/engines/llamacpp/<sha256[:16]>/build.json   written last: the build is complete

A second call finds ``build.json`` and an existing binary and returns at once; an
interrupted build resumes where ninja stopped (the build directory is kept). Each
attempt (configure and compile; failed or interrupted ones too) is timed into
``attempts.json``, so ``build_seconds`` in ``build.json`` is the wall time of the whole
build over all its attempts, not of the last one; it is null when the build directory
holds work of a run that was not timed. A build directory configured with other cmake options
than this host's :data:`CMAKE_OPTIONS` (or with unrecorded ones) is deleted and built again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from golden_al import plugin

from . import BUILD

__all__ = ["CMAKE_OPTIONS", "X86_NO_AMX", "BuildResult", "build_dir", "build_llama_server", "cached_binary",
           "check_binary", "cmake_options", "sha256_file"]

#: x86 compiler flags that turn AMX off. ggml builds with ``-march=native``
#: (ggml/src/ggml-cpu/CMakeLists.txt @0c1e570), which compiles its AMX kernels wherever the CPU
#: reports AMX; on an AMX-reporting virtual machine (a 2-core Sapphire Rapids guest, 2026-12-05)
#: ``ggml_backend_amx_mul_mat`` crashes llama-server with SIGSEGV on its warm-up decode.
#: GCC and clang let an explicit ``-mno-*`` win over ``-march`` in either order.
X86_NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"


def cmake_options(machine: str) -> tuple[str, ...]:
    """cmake options for a host whose ``platform.machine()`` is ``machine``: Release, no
    tests/examples/UI, no HTTPS (the server is reached on loopback); AMX off on x86."""
    options: tuple[str, ...] = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_BUILD_TESTS=OFF",
                                "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_UI=OFF",
                                "-DLLAMA_USE_PREBUILT_UI=OFF")
    if machine.lower() in {"x86_64", "amd64", "i686", "i386"}:
        options += (f"-DCMAKE_C_FLAGS={X86_NO_AMX}", f"-DCMAKE_CXX_FLAGS={X86_NO_AMX}")
    return options


#: this host's cmake options; a cached build made with other options is rebuilt from scratch
CMAKE_OPTIONS: tuple[str, ...] = cmake_options(platform.machine())
_STEP = re.compile(rb"^\[(\d+)/(\d+)\]")
_clock = time.monotonic  # one name for the wall clock of attempts (tests replace it)
ProgressFn = Callable[..., None]


class BuildError(plugin.EngineError):
    """Downloading, extracting or building llama.cpp failed."""


@dataclass
class _Steps:
    """ninja's ``[done/total]`` of the running command (updated line by line)."""

    done: int = 0
    total: int = 0


class _Attempts:
    """``attempts.json``: every configure + build attempt of one build directory, with its wall time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.attempts: list[dict[str, object]] = []
        self.untimed_work = False  # the build directory holds work from a run nobody timed
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            self.attempts = [a for a in data.get("attempts", []) if isinstance(a, dict)]
            self.untimed_work = bool(data.get("untimed_work", False))
        except (OSError, ValueError, AttributeError):
            pass

    def add(self, **attempt: object) -> None:
        self.attempts.append(attempt)
        plugin.atomic_write_text(self.path, json.dumps({"attempts": self.attempts, "untimed_work": self.untimed_work},
                                                       indent=2) + "\n")

    def total_seconds(self) -> float | None:
        """Wall time of all attempts; None when part of the build was not timed."""
        return None if self.untimed_work else self.timed_seconds()

    def timed_seconds(self) -> float:
        """Wall time of the attempts that were timed."""
        return round(sum(float(str(a.get("seconds", 0.0))) for a in self.attempts), 1)


@dataclass(frozen=True)
class BuildResult:
    """Where the binary is and how it was made."""

    binary: str
    source_sha256: str
    package: str
    commit: str
    cached: bool
    elapsed_s: float
    log: str | None
    built_at: str | None = None
    #: wall time of configure + compile over every attempt (None: not known in full)
    build_seconds: float | None = None
    attempts: int | None = None

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return asdict(self)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def build_dir(cache_dir: Path) -> Path:
    """``CACHE/engines/llamacpp/<sha256[:16]>``: everything built from the pinned source."""
    return Path(cache_dir) / "engines" / "llamacpp" / BUILD["sha256"][:16]


def cached_binary(cache_dir: Path) -> Path | None:
    """The built ``llama-server`` if a complete build is cached, else None."""
    d = build_dir(cache_dir)
    marker = d / "build.json"
    if not marker.exists():
        return None
    try:
        info = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    binary = Path(str(info.get("binary", "")))
    if (info.get("source_sha256") != BUILD["sha256"] or info.get("cmake_options") != list(CMAKE_OPTIONS)
            or not binary.is_file() or not os.access(binary, os.X_OK)):
        return None
    return binary


def _configured_options(dest: Path) -> list[str] | None:
    """The cmake options the build directory was configured with (``configure.json``), if recorded."""
    try:
        options = json.loads((dest / "configure.json").read_text(encoding="utf-8")).get("cmake_options")
    except (OSError, ValueError, AttributeError):
        return None
    return options if isinstance(options, list) else None


def check_binary(path: str | Path) -> Path:
    """An existing ``llama-server`` given by the user (``--llama-server PATH``).

    Raises:
        UsageError: the path is missing or not executable.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise plugin.UsageError(f"--llama-server {path}: no such file", hint="build one with `golden-al engines build llamacpp`")
    if not os.access(p, os.X_OK):
        raise plugin.UsageError(f"--llama-server {path}: not executable")
    return p.resolve()


def _fetch_sdist(root: Path, pip: Sequence[str], note: Callable[[str], None]) -> Path:
    src = root / "src"
    sdist = src / BUILD["filename"]
    if sdist.exists() and sha256_file(sdist) == BUILD["sha256"]:
        return sdist
    src.mkdir(parents=True, exist_ok=True)
    spec = f"{BUILD['package']}=={BUILD['version']}"
    note(f"downloading {spec} (sdist, ~77 MB) from the package index")
    with tempfile.TemporaryDirectory(dir=src, prefix=".download-") as tmp:
        cmd = [*pip, "download", "--quiet", "--no-deps", "--no-binary", ":all:", spec,
               "-d", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        got = Path(tmp) / BUILD["filename"]
        if proc.returncode != 0 or not got.exists():
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
            raise BuildError(f"pip download {spec} failed (exit {proc.returncode}): {' | '.join(tail)}",
                             hint="is the package index reachable? (pip config, PIP_INDEX_URL)")
        digest = sha256_file(got)
        if digest != BUILD["sha256"]:
            raise plugin.HashMismatchError(f"{BUILD['filename']}: sha256 {digest}, expected {BUILD['sha256']}",
                                           hint="the index served another file than the pinned one; refusing to build it")
        os.replace(got, sdist)
    return sdist


def _extract(sdist: Path, dest: Path) -> Path:
    source = dest / "source"
    if (source / "CMakeLists.txt").exists() and (source / ".extracted").exists():
        return source
    prefix = f"{BUILD['package'].replace('-', '_')}-{BUILD['version']}/{BUILD['subdir']}/"
    tmp = dest / "source.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(sdist, "r:gz") as tar:
        members = []
        for m in tar.getmembers():
            if not m.name.startswith(prefix) or m.name == prefix.rstrip("/"):
                continue
            m.name = m.name[len(prefix):]
            if not m.name or m.name == ".git":  # a submodule's gitdir pointer to the wheel's repository
                continue
            members.append(m)
        if not members:
            raise BuildError(f"{sdist.name} holds no {BUILD['subdir']}/ tree")
        tar.extractall(tmp, members=members, filter="data")
    (tmp / ".extracted").write_text(BUILD["sha256"] + "\n", encoding="utf-8")
    shutil.rmtree(source, ignore_errors=True)
    os.replace(tmp, source)
    return source


def _run_logged(cmd: Sequence[str], log: Path, progress: ProgressFn | None, steps: _Steps | None = None) -> None:
    with log.open("ab") as fh:
        fh.write(f"\n# {plugin.now_iso()}: {' '.join(cmd)}\n".encode())
        fh.flush()
        proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        total_seen: int | None = None
        last = 0
        for line in proc.stdout:
            fh.write(line)
            m = _STEP.match(line)
            if m and steps is not None:
                steps.done, steps.total = int(m.group(1)), int(m.group(2))
            if m and progress is not None:
                done, total = int(m.group(1)), int(m.group(2))
                if total != total_seen:
                    progress(0, total=total)
                    total_seen = total
                if done > last:
                    progress(done - last)
                    last = done
        rc = proc.wait()
    if rc != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
        raise BuildError(f"{cmd[0]} {cmd[1] if len(cmd) > 1 else ''} failed (exit {rc}): {' | '.join(tail)[-600:]}",
                         hint=f"read the build log {log}")


def _drop_if_configured_otherwise(dest: Path, note: Callable[[str], None]) -> None:
    """Delete a build directory configured with other cmake options than this host's (or unrecorded ones)."""
    build = dest / "build"
    if build.exists() and _configured_options(dest) != list(CMAKE_OPTIONS):
        note(f"the cached build in {build} was configured with other cmake options; rebuilding it from scratch")
        shutil.rmtree(build)
        for stale in ("attempts.json", "build.json", "configure.json"):
            (dest / stale).unlink(missing_ok=True)


def build_llama_server(cache_dir: str | Path, *, jobs: int = 2, pip: Sequence[str] | None = None,
                       progress: ProgressFn | None = None, note: Callable[[str], None] | None = None,
                       ) -> BuildResult:
    """The cached ``llama-server`` (built first when missing; see the module docstring).

    Args:
        jobs: parallel compile jobs (``cmake --build -j``).
        pip: the pip command (default: this interpreter's ``-m pip``).
        progress: ``progress(advance, *, total=None)`` over ninja's build steps.

    Raises:
        BuildError: cmake or a compiler is missing, or a step failed (with the log tail).
        HashMismatchError: the downloaded sdist is not the pinned one.
    """
    t0 = _clock()
    note = note or (lambda s: None)
    cache = Path(cache_dir)
    dest = build_dir(cache)
    found = cached_binary(cache)
    if found is not None:
        info = json.loads((dest / "build.json").read_text(encoding="utf-8"))
        # a record without its attempts was written by a version that timed only the last compile run
        seconds = info.get("build_seconds") if "build_attempts" in info else None
        return BuildResult(str(found), BUILD["sha256"], f"{BUILD['package']}=={BUILD['version']}", BUILD["commit"],
                           True, _clock() - t0, str(dest / "build.log"), info.get("built_at"), seconds)
    if jobs < 1:
        raise plugin.UsageError(f"--jobs must be >= 1, got {jobs}")
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError("cmake is not installed", hint="apt-get install cmake (or pip install cmake)")
    if shutil.which("c++") is None and shutil.which("g++") is None and shutil.which("clang++") is None:
        raise BuildError("no C++ compiler found (c++, g++ or clang++)", hint="apt-get install g++")
    ninja = shutil.which("ninja")
    dest.mkdir(parents=True, exist_ok=True)
    sdist = _fetch_sdist(dest.parent, list(pip) if pip else [sys.executable, "-m", "pip"], note)
    source = _extract(sdist, dest)
    build = dest / "build"
    log = dest / "build.log"
    _drop_if_configured_otherwise(dest, note)
    attempts = _Attempts(dest / "attempts.json")
    configure = not (build / "CMakeCache.txt").exists()
    if not configure and not attempts.attempts:
        attempts.untimed_work = True  # configured (and maybe compiled) by a run that kept no attempts
    steps = _Steps()
    started_at, t_attempt, outcome = plugin.now_iso(), _clock(), "interrupted"
    try:
        if configure:
            note(f"configuring llama.cpp {BUILD['commit'][:7]} in {build}")
            generator = ["-G", "Ninja"] if ninja else []
            _run_logged([cmake, "-S", str(source), "-B", str(build), *generator, *CMAKE_OPTIONS], log, None)
            plugin.atomic_write_text(dest / "configure.json", json.dumps({"cmake_options": list(CMAKE_OPTIONS)}) + "\n")
        note(f"building {BUILD['target']} with {jobs} job(s) (a cold build takes tens of minutes on 2 cores)")
        _run_logged([cmake, "--build", str(build), "--target", BUILD["target"], "-j", str(jobs)], log, progress,
                    steps)
        outcome = "built"
    except BuildError:
        outcome = "failed"
        raise
    finally:  # failed and interrupted attempts count: the next one resumes their work
        attempts.add(started_at=started_at, seconds=round(_clock() - t_attempt, 1), configured=configure,
                     steps_run=steps.done, steps_total=steps.total, jobs=jobs, outcome=outcome)
    binary = build / "bin" / BUILD["target"]
    if not binary.is_file():
        raise BuildError(f"the build finished but {binary} does not exist", hint=f"read {log}")
    built_at = plugin.now_iso()
    seconds = attempts.total_seconds()
    record: dict[str, object] = {
        "binary": str(binary), "source_sha256": BUILD["sha256"], "package": BUILD["package"],
        "version": BUILD["version"], "commit": BUILD["commit"], "cmake_options": list(CMAKE_OPTIONS),
        "generator": "Ninja" if ninja else "default", "jobs": jobs, "built_at": built_at,
        "build_seconds": seconds, "build_attempts": attempts.attempts,
    }
    if seconds is None:
        record["build_seconds_note"] = (f"the build directory held work of an untimed run; the timed attempts took "
                                        f"{attempts.timed_seconds()} s")
    plugin.atomic_write_text(dest / "build.json", json.dumps(record, indent=2) + "\n")
    return BuildResult(str(binary), BUILD["sha256"], f"{BUILD['package']}=={BUILD['version']}", BUILD["commit"],
                       False, _clock() - t0, str(log), built_at, seconds, len(attempts.attempts))
