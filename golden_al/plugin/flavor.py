"""What one engine's imitation adds to serve-reference: :class:`Flavor`.

The server (:mod:`golden_al.servers.reference_server`) owns HTTP, faults, the chat endpoint and
the Prometheus registry; a flavor owns what is the engine's own: its counters and gauges, its
log lines, its extra endpoints and response fields. An engine names its flavor in its profile
(:attr:`~golden_al.plugin.profile.ServerSupport.reference_flavor`, a hook, ``lazy("module:Class")``); the
server never branches on an engine's name.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

__all__ = ["Flavor", "Generation", "ServeSettings", "ServedEngine", "now_log", "now_short"]


class ServeSettings(Protocol):
    """What a flavor reads of serve-reference's settings (:class:`golden_al.servers.reference.config.ServeConfig`)."""

    host: str
    algorithm: str  #: the ``speculative_algorithm`` an SGLang imitation reports
    meta_version: str
    version: str
    decode_log_interval: int
    log_stats_interval_s: float
    per_request_metrics: str | None
    claim_synthetic: bool
    speculative_adaptive: bool
    accept_threshold_single: float
    server_settings: Mapping[str, Any]  #: settings the stand-in reports it runs with beyond its own
    iter_stats_max_iterations: int
    perf_metrics_max_requests: int


def now_log() -> str:
    """A log time stamp, ``2026-12-03 12:00:00``."""
    return _dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def now_short() -> str:
    """A log time stamp without the year, ``12-03 12:00:00``."""
    return _dt.datetime.now().strftime("%m-%d %H:%M:%S")


class Flavor:
    """One engine's imitation. :meth:`reset`, :meth:`record`, :meth:`set_running`, :meth:`tick` and
    :meth:`get` run under the server's lock, so a flavor keeps its counters without locks of its own;
    :meth:`generate_answer` and :meth:`chat_fields` read only the finished request and the settings."""

    #: the ``/health`` body
    health_body: ClassVar[bytes] = b"{}"
    #: POST paths besides ``/v1/chat/completions`` that generate (SGLang's ``/generate``)
    generate_paths: ClassVar[tuple[str, ...]] = ()
    #: seconds between :meth:`tick` calls (None: no ticker)
    tick_interval_s: float | None = None

    def __init__(self, config: ServeSettings, engine: ServedEngine, log: Callable[[str], None],
                 model_name: Callable[[], str]) -> None:
        self.config = config
        self.engine = engine
        self.log = log
        self.model_name = model_name
        self.running = 0

    def reset(self, registry: Any) -> None:
        """Zero the flavor's state and add its metrics to a fresh ``registry`` (a restart)."""

    def record(self, gen: Generation) -> None:
        """Count one finished request."""

    def set_running(self, running: int) -> None:
        """The number of requests being generated changed."""
        self.running = running

    def tick(self) -> None:
        """Periodic work (vLLM's stats-logging interval)."""

    def startup_lines(self, port: int) -> list[str]:
        """Log lines the engine writes at start-up."""
        return []

    def get(self, path: str) -> Any | None:
        """The JSON answer of an engine-specific GET endpoint, or None (not one of them)."""
        return None

    def generate_answer(self, gen: Generation, rid: str, latency: float, nospec: bool) -> dict[str, Any]:
        """The answer of a :attr:`generate_paths` endpoint."""
        raise NotImplementedError

    def lie(self, resp: dict[str, Any], kinds: list[str], k: int) -> int | None:
        """Make the engine's own per-request fields of an answer lie as the faults ``kinds`` ask (``claim-all``,
        ``claim-all-no-usage``, ``inflate-usage``, ``no-proposed``, ``fewer-drafts``); returns the completion
        tokens a ``claim-all`` would have emitted (None: the engine reports no such fields)."""
        return None

    def chat_fields(self, resp: dict[str, Any], choice: dict[str, Any], body: dict[str, Any], gen: Generation,
                    rid: str, latency: float, nospec: bool) -> None:
        """Add the engine's own fields to a chat answer (``nospec``: leave the spec fields out)."""


@dataclass
class Generation:
    """One answered request."""

    text: str
    prompt_tokens: int
    output_tokens: int
    """Completion tokens, including the first one emitted by the prefill."""
    accepted: list[int] = field(default_factory=list)
    """Accepted drafts ``n`` per verify step, in order."""
    drafted: list[int] = field(default_factory=list)
    """Drafts proposed per verify step (``min(k, budget left)``)."""
    finish_reason: str = "length"
    """``stop`` or ``length``."""


class ServedEngine(Protocol):
    """What the HTTP server needs from an engine."""

    draft_len: int
    model_name: str
    target_name: str
    draft_name: str

    def generate(self, *, messages: Sequence[Mapping[str, Any]] | None, text: str | None, max_tokens: int,
                 temperature: float, top_p: float, seed: int | None,
                 chat_template_kwargs: Mapping[str, Any] | None) -> Generation:
        """Answer one request (``messages`` for chat, ``text`` for SGLang ``/generate``)."""
        ...
