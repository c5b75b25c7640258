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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.httpclient import ServerClient
from golden_al.servers import synthetic

__all__ = ["ServerFacts", "filter_args", "probe_server"]

# api_key, hf_token, access_token, password, ... (but not num_speculative_tokens or max_num_batched_tokens)
_SECRET = re.compile(r"(^|_)(api_?key|key|token|secret|password|passwd|credentials?)$", re.IGNORECASE)
_BLOCK_DRAFTS = ("dflash", "dspark")


@dataclass
class ServerFacts:
    """A server's self-description."""

    engine: str
    version: str | None = None
    models: list[str] = field(default_factory=list)
    server_args: dict[str, Any] | None = None
    draft_len: int | None = None
    draft_len_rule: str | None = None
    draft_method: str | None = None
    chain: bool | None = None
    warnings: list[str] = field(default_factory=list)
    #: the curve selectors of the server's settings (:meth:`~golden_al.plugin.profile.EngineProfile.selectors`);
    #: None: the server does not say what it runs with
    selectors: dict[str, str] | None = None


def filter_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-scalar (and short list) arguments, without anything that looks secret."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if _SECRET.search(str(key)):
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            out[str(key)] = value
        elif isinstance(value, (list, tuple)) and len(value) <= 16 and all(
                isinstance(v, (bool, int, float, str)) or v is None for v in value):
            out[str(key)] = list(value)
        elif isinstance(value, Mapping) and len(value) <= 32:
            out[str(key)] = filter_args(value)
    return out


def _probe_of(engine: str) -> Any:
    """The engine profile's ``server_probe`` (``"module:function"``), imported."""
    from golden_al.plugin import registry

    profile = registry.get_profile(engine)
    profile.require("server", "measure")  # a probe, its AL sources and their implementations, or none of them
    assert profile.server.server_probe is not None
    return registry.load_hook(profile.server.server_probe)


def is_chain(engine: str, method: str | None, topk: int | None = None) -> bool:
    """Whether drafts form a chain (a smaller k proposes a prefix of the same tokens)."""
    m = (method or "").lower()
    if any(b in m for b in _BLOCK_DRAFTS):
        return False
    return topk in (None, 1)


async def probe_server(client: ServerClient, engine: str, *, log_path: str | Path | None = None) -> ServerFacts:
    """Ask the server who it is; raises SyntheticAcceptanceActiveError when it injects acceptance."""
    facts = ServerFacts(engine)
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
