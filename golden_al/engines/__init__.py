"""Engines: one module per serving engine, each exporting ``PROFILE`` (:mod:`.profile`),
plus the offline reference engine on transformers (``offline_reference/``).

:data:`REGISTRY` maps each ``--engine`` name to the module holding its profile; modules are
imported on first use so that ``env``, ``check`` and ``simulate`` stay fast to start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from golden_al.engines.profile import EngineProfile

__all__ = ["REGISTRY", "engine_names", "get_profile"]

#: ``--engine`` name -> module exporting ``PROFILE``. Adding an engine adds one line here.
REGISTRY: dict[str, str] = {
    "llamacpp": "golden_al.engines.llamacpp",
}


def engine_names() -> tuple[str, ...]:
    """Every registered serving engine, in registration order."""
    return tuple(REGISTRY)


def get_profile(name: str) -> EngineProfile:
    """The profile of engine ``name``.

    Raises:
        KeyError: ``name`` is not registered (the CLI turns this into a usage error with a
            "did you mean").
    """
    module = importlib.import_module(REGISTRY[name])
    profile: EngineProfile = module.PROFILE
    return profile
