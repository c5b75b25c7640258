"""What a running server says about itself (:class:`ServerFacts`), as an engine's probe fills it, and the helpers
probes share. :func:`golden_al.servers.probe.probe_server` makes one per probe and hands it to the engine's own
probe (its profile's ``server_probe`` hook), which reads the engine's endpoints into it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from golden_al.errors import UsageError

__all__ = ["ServerFacts", "filter_args", "is_chain"]

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
    #: ``(document, where)``: refuses a self-description that reports synthetic (forced) acceptance, raising
    #: :class:`~golden_al.errors.SyntheticAcceptanceActiveError` (:func:`golden_al.servers.synthetic.check_server_info`
    #: of the engine, set by :func:`golden_al.servers.probe.probe_server`); None: no guard was given, and
    #: :meth:`described` refuses rather than skip it.
    guard: Callable[[Mapping[str, Any], str], None] | None = field(default=None, repr=False, compare=False)

    def described(self, document: Mapping[str, Any], where: str = "/server_info") -> None:
        """Hand a document the server gave about itself (``/server_info``, ``/props``) to the synthetic-acceptance
        guard before anything is read from it.

        Raises:
            SyntheticAcceptanceActiveError: the document reports forced acceptance.
            UsageError: no guard was given (a probe run outside :func:`~golden_al.servers.probe.probe_server`).
        """
        if self.guard is None:
            raise UsageError(f"{self.engine}: the server's {where} was read with no synthetic-acceptance guard",
                             hint="probe a server through golden_al.servers.probe.probe_server")
        self.guard(document, where)


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


def is_chain(engine: str, method: str | None, topk: int | None = None) -> bool:
    """Whether drafts form a chain (a smaller k proposes a prefix of the same tokens)."""
    m = (method or "").lower()
    if any(b in m for b in _BLOCK_DRAFTS):
        return False
    return topk in (None, 1)
