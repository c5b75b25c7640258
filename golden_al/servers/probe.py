"""What a running server says about itself: version, arguments, draft length, synthetic state.

:func:`probe_server` asks every server for ``/v1/models`` and reads a given server log, then hands
over to the engine's own probe, which its profile names (``server_probe``, a ``lazy("module:function")`` hook;
the built-in ones are in :mod:`golden_al.servers.adapters`): SGLang's ``/server_info``, vLLM's
``/version``, ``/metrics`` and startup log, ATOM's ``/server_info`` and ``/debug/mtp_stats``,
llama.cpp's ``/props`` and ``/metrics``. A plugin engine brings its own probe the same way.

Every source of self-description is also checked for synthetic acceptance
(:mod:`golden_al.servers.synthetic`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from golden_al.httpclient import ServerClient
from golden_al.plugin.facts import ServerFacts
from golden_al.servers import synthetic

__all__ = ["probe_server"]


def _probe_of(engine: str) -> Any:
    """The engine profile's ``server_probe`` (``"module:function"``), imported."""
    from golden_al.plugin import registry

    profile = registry.get_profile(engine)
    profile.require("server", "measure")  # a probe, its AL sources and their implementations, or none of them
    assert profile.server.server_probe is not None
    return registry.load_hook(profile.server.server_probe)


async def probe_server(client: ServerClient, engine: str, *, log_path: str | Path | None = None) -> ServerFacts:
    """Ask the server who it is; raises SyntheticAcceptanceActiveError when it injects acceptance."""
    facts = ServerFacts(engine, guard=lambda doc, where: synthetic.check_server_info(engine, doc, where=where))
    models = await client.get_json("/v1/models", label="GET /v1/models")
    if isinstance(models, Mapping):
        synthetic.check_server_info(engine, models, where="/v1/models")
        facts.models = [str(m.get("id")) for m in models.get("data") or [] if isinstance(m, Mapping)]
    log_text = None
    if log_path is not None:
        from golden_al import safeio

        try:  # a regular file, under the byte cap
            log_text = safeio.read_bytes(Path(log_path), max_bytes=safeio.DEFAULT_MAX_LOG_BYTES).decode(
                "utf-8", errors="replace")
        except OSError as exc:
            facts.warnings.append(f"cannot read server log {log_path}: {exc.strerror or exc}")
    if log_text is not None:
        synthetic.check_server_log(engine, log_text, where=f"server log {log_path}")
    await _probe_of(engine)(client, facts, log_text=log_text)
    return facts
