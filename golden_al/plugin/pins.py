"""A pinned synthetic-acceptance value and what a file says around it (:class:`Pin`, with its :class:`DraftInfo`,
:class:`ModelName`, :class:`ThinkingSignal` and :class:`AgenticInfo`), the types every pin reader fills, and what a
pin builder gets of a knob that an engine spells its own way in a shell script (:class:`PinSite`).

Each builder lives in its engine's folder (``golden_al/engines/<name>/pins.py``: vLLM's ``--speculative-config``
JSON, llama.cpp's ``--spec-synth-*`` flags, ATOM's ``--spec-decode-acceptance-*`` flags), named by the profile
(:attr:`~golden_al.plugin.profile.CheckSupport.script_pin`); :mod:`golden_al.knobs.scripts` finds the occurrences
and hands each to its engine's builder; environment-variable knobs and engines read off their command line need
none. :func:`golden_al.checks.static.evaluate` turns a pin into a finding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from golden_al.plugin.profile import Record, VersionChoice
from golden_al.safeio.inputs import Input

__all__ = ["AgenticInfo", "DraftInfo", "ModelName", "Pin", "PinSite", "ThinkingSignal", "clean", "value_of"]


@dataclass(frozen=True, eq=False, repr=False)
class PinSite(Record):
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
    from golden_al.shell import harden, has_unknown, show  # the script reader's marks: off select's path

    if text is None:
        return None, "no value"
    if has_unknown(text):
        return None, f"the value is {show(text)}, set outside this file"
    return harden(text).strip().strip("'\""), None


def clean(value: Any) -> str | None:
    """A model name or path as written, unquoted (None: none)."""
    from golden_al.shell import show

    if not isinstance(value, str) or not value.strip():
        return None
    return show(value).strip().strip("'\"")


@dataclass(frozen=True, eq=False, repr=False)
class ThinkingSignal(Record):
    """One setting that says thinking is on or off, and how strongly.

    ``priority``: 4 (:data:`REQUEST`) per-request kwargs sent by the benchmark client; 3 server default chat-template
    kwargs / front-end default thinking mode; 2 engine environment defaults (``SGLANG_DEFAULT_THINKING``); 1
    chat-template file name; 0 the harness's lookup setting (InferenceX ``THINKING_MODE``).
    """

    mode: str  #: ``on``, ``off`` or a named level (``reasoning_effort_high``)
    source: str
    priority: int


@dataclass(frozen=True, eq=False, repr=False)
class AgenticInfo(Record):
    """Whether the config is an agentic benchmark (None: the files do not say)."""

    agentic: bool | None
    reason: str


@dataclass
class DraftInfo:
    """The draft length and how it was derived (``problem`` says why it is unknown)."""

    k: int | None = None
    rule: str = ""
    problem: str | None = None
    chain: bool = True
    two_model: bool | None = None  # TensorRT-LLM only


@dataclass(frozen=True, eq=False, repr=False)
class ModelName(Record):
    """A name a config or the run gives the served model (tried against the store in order).

    ``pattern``: ``name`` is a shell glob (a ``case`` arm such as ``*DeepSeek-V4*``) that the model's name matches on
    this path; it stands for every store model whose name fits it. ``run``: the run's identity names it (``--model``,
    ``MODEL_PREFIX``, the master config that runs the recipe), not the config itself: the two must agree.
    """

    name: str
    source: str
    pattern: bool = False
    run: bool = False


@dataclass
class Pin:
    """One pinned synthetic-acceptance value and its surroundings in the config."""

    file: str
    line: int  # where the pinned value is written (the line a person edits)
    engine: str  # a registered engine's name
    knob: str  # the name as written
    raw_value: str | None  # the value as written (after static expansion); None: unresolved
    unresolved: str | None = None  # why raw_value is None
    algorithm: str | None = None
    draft: DraftInfo = field(default_factory=DraftInfo)
    companions: dict[str, str | None] = field(default_factory=dict)
    thinking: list[ThinkingSignal] = field(default_factory=list)
    models: list[ModelName] = field(default_factory=list)
    draft_model: str | None = None
    draft_sample_method: str | None = None
    #: the draft's real rejection method (vLLM ``rejection_sample_method`` other than ``synthetic``):
    #: a curve input, as in ``inject`` (:func:`golden_al.recipes.srt_slurm.curve_rejection_method`)
    rejection_sample_method: str | None = None
    agentic: AgenticInfo = field(default_factory=lambda: AgenticInfo(None, "the files do not say"))
    problems: list[tuple[str, str]] = field(default_factory=list)  # (verdict, text) found while reading
    notes: list[str] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)  # engine-specific extras (vLLM config, ATOM flags)
    use_line: int | None = None  # where the value reaches the engine (None: at ``line``)
    #: further lines the pin was read from (the keys of a config written as a mapping): the census's
    #: occurrences on them are this pin's (:func:`golden_al.checks.static.check_paths`)
    covers: tuple[int, ...] = ()
    #: the engine version whose facts judge the pin, and why (:meth:`EngineProfile.version_facts`)
    version: VersionChoice | None = None
    #: what the pin's reading read besides its own file (the recipe a master config's CONFIG_FILE points to)
    inputs: tuple[Input, ...] = ()
