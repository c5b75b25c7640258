"""What one engine's imitation adds to serve-reference: :class:`Flavor`.

The server (:mod:`golden_al.servers.reference_server`) owns HTTP, faults, the chat endpoint and
the Prometheus registry; a flavor owns what is the engine's own: its counters and gauges, its
log lines, its extra endpoints and response fields. An engine names its flavor in its profile
(:attr:`~golden_al.plugin.profile.ServerSupport.reference_flavor`, a hook, ``lazy("module:Class")``); the
server never branches on an engine's name.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any, ClassVar

from golden_al.servers.reference.config import ServeConfig
from golden_al.servers.served_engine import Generation, ServedEngine

__all__ = ["Flavor", "now_log", "now_short"]


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

    def __init__(self, config: ServeConfig, engine: ServedEngine, log: Callable[[str], None],
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
