"""What a pin builder gets of a knob that an engine spells its own way in a shell script (:class:`PinSite`), and
the helpers builders share. Each builder lives in its engine's folder (``golden_al/engines/<name>/pins.py``: vLLM's
``--speculative-config`` JSON, llama.cpp's ``--spec-synth-*`` flags, ATOM's ``--spec-decode-acceptance-*`` flags),
named by the profile (:attr:`~golden_al.plugin.profile.CheckSupport.script_pin`); :mod:`golden_al.checks.scripts`
finds the occurrences and hands each to its engine's builder; environment-variable knobs and engines read off their
command line need none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from golden_al.checks.findings import Pin
from golden_al.prompts.thinking import ThinkingSignal
from golden_al.recipes.derive import AgenticInfo
from golden_al.recipes.srt_slurm import ModelName
from golden_al.shell import harden, has_unknown, show

__all__ = ["PinSite", "clean", "value_of"]


@dataclass(frozen=True)
class PinSite:
    """One occurrence of a knob in a script, and what its path says around it."""

    knob: str
    line: int
    text: str  #: the value as written (shell words expanded where they could be)
    flags: Mapping[str, str]  #: the launch flags on this path (``--name``: value)
    env: Mapping[str, str]  #: the environment variables set on this path
    path: str
    models: list[ModelName]
    thinking: list[ThinkingSignal]
    agentic: AgenticInfo

    def pin(self, engine: str, knob: str, raw_value: str | None, unresolved: str | None) -> Pin:
        """A pin of ``engine`` here."""
        return Pin(file=self.path, line=self.line, engine=engine, knob=knob, raw_value=raw_value,
                   unresolved=unresolved, models=self.models, thinking=self.thinking, agentic=self.agentic)


def value_of(text: str | None) -> tuple[str | None, str | None]:
    """(value, why it is unresolved) of a value written in a script."""
    if text is None:
        return None, "no value"
    if has_unknown(text):
        return None, f"the value is {show(text)}, set outside this file"
    return harden(text).strip().strip("'\""), None


def clean(value: Any) -> str | None:
    """A model name or path as written, unquoted (None: none)."""
    if not isinstance(value, str) or not value.strip():
        return None
    return show(value).strip().strip("'\"")
