"""The shape of one serving engine's knowledge: :class:`EngineProfile`.

Every engine golden-al knows (SGLang, vLLM, TensorRT-LLM, ATOM, llama.cpp, ...) lives in
one folder of this package whose ``__init__`` exports one ``PROFILE: EngineProfile``: the
engine's identity and one group per capability (:class:`CheckSupport`, :class:`ServerSupport`,
:class:`LaunchSupport`, :class:`RecipeFormat`, :class:`SimulateSupport`, :class:`RunLogSupport`;
:data:`CAPABILITIES`). Commands never spell an engine's flag, env var, metric, field or log line
themselves: they read it here.
An engine is a plugin: its module, its tests and one ``golden_al.engines`` entry point
(``docs/adding-an-engine.md``).

A field typed with a protocol of :mod:`golden_al.plugin.hooks` is a hook: the protocol declares what golden-al passes
it and expects back; a field's comment says only what it is for. This module is pure data plus small typed
callables: no I/O, no torch, fast to import.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal

from golden_al.errors import UsageError

if TYPE_CHECKING:  # the hooks' protocols are types only (the conformance kit resolves them)
    from golden_al.plugin import hooks

__all__ = ["CAPABILITIES", "GROUPS", "LOG_NUMBER", "Capability", "Caveat", "CheckSupport", "CommandLine",
           "CommandLineReading", "DraftLen", "DraftLenRule", "EngineBuild", "EngineProfile", "EngineVersion",
           "EnvOption", "LaunchRequest", "LaunchSupport", "Limit", "LogPattern", "LogReader", "Metric",
           "PinContext", "PinReview", "RecipeFormat", "Record", "ResponseField", "RunLogSupport", "RuntimeDraftLen",
           "ServerSupport", "SimulateOption", "SimulateSupport", "Source", "Speculation", "SyntheticKnob",
           "VersionChoice", "group_of", "reads_off"]


_Getter = Callable[[Any], tuple[Any, ...]]
_FIELDS: dict[type, tuple[_Getter, _Getter, tuple[str, ...]]] = {}


def _fields(cls: type) -> tuple[_Getter, _Getter, tuple[str, ...]]:
    """A :class:`Record` class's compared values, hashed values and shown field names, by ``dataclasses``' rules."""
    def values(names: list[str]) -> _Getter:
        return attrgetter(*names) if len(names) > 1 else lambda obj: tuple(getattr(obj, n) for n in names)

    if cls not in _FIELDS:
        fs = fields(cls)
        _FIELDS[cls] = (values([f.name for f in fs if f.compare]),
                        values([f.name for f in fs if (f.compare if f.hash is None else f.hash)]),
                        tuple(f.name for f in fs if f.repr))
    return _FIELDS[cls]


class Record:
    """The base of the contract's frozen dataclasses, declared ``@dataclass(frozen=True, eq=False, repr=False)``:
    ``__eq__``, ``__hash__`` and ``__repr__`` as ``@dataclass(frozen=True)`` makes them, written once. Python 3.11
    compiles each generated method of each class at import (~0.1 ms apiece): on ``select``'s path these were ~10 ms
    (issue 52)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        compared = _fields(self.__class__)[0]
        return compared(self) == compared(other) if other.__class__ is self.__class__ else NotImplemented

    def __hash__(self) -> int:
        return hash(_fields(self.__class__)[1](self))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _fields(self.__class__)[2])
        return f"{self.__class__.__qualname__}({shown})"


@dataclass(frozen=True, eq=False, repr=False)
class Lazy(Record):
    """A profile hook whose module is imported on its first use (:func:`lazy`): calling it calls the target.

    Every hook of a profile is a Python object, usually a callable; a hook whose module is heavy (a server client,
    a log parser) or imports the layers that load the registry is written ``lazy("package.module:name")`` so that
    importing the profile stays cheap. :func:`golden_al.plugin.registry.load_hook` gives the object either way.
    """

    ref: str

    def resolve(self) -> Any:
        """The object ``ref`` names, importing its module.

        Raises:
            ImportError / AttributeError: the module or the name does not exist.
        """
        import importlib

        module, _, name = self.ref.partition(":")
        return getattr(importlib.import_module(module), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __str__(self) -> str:
        return self.ref


def lazy(ref: str) -> Lazy:
    """A hook imported on first use: ``lazy("golden_al_myengine.server:probe")``.

    Raises:
        ValueError: ``ref`` is not ``"module:name"``.
    """
    module, sep, name = ref.partition(":")
    if not (module and sep and name) or not all(part.isidentifier() for part in (*module.split("."), name)):
        raise ValueError(f"a lazy hook is 'package.module:name', got {ref!r}")
    return Lazy(ref)



@dataclass(frozen=True, eq=False, repr=False)
class Source(Record):
    """Where a fact comes from: an upstream file at a version."""

    repo: str  #: e.g. ``sgl-project/sglang``
    path: str  #: e.g. ``python/sglang/srt/environ.py``
    version: str  #: release, tag or commit, e.g. ``0.5.23``


def reads_off(value: Any) -> bool:
    """The shared rule for a value no engine reads as on: empty, null, or a number <= 0 (SGLang turns
    simulation off below 0 and at 0, llama.cpp's default is -1)."""
    if value is None or value == "" or value == [] or value == {}:
        return True
    if not isinstance(value, (str, int, float)):
        return False
    try:
        return float(str(value).strip().strip("'\"")) <= 0
    except ValueError:
        return False


@dataclass(frozen=True, eq=False, repr=False)
class SyntheticKnob(Record):
    """One synthetic-acceptance setting an engine reads.

    ``kind``: where it is set (an environment variable, a command-line flag, or a key inside
    a JSON config flag such as vLLM's ``--speculative-config``). ``unit``: what the value
    means (``al``: mean accepted length incl. the bonus token; ``al-1``: draft tokens only;
    ``rates``: per-position unconditional rates; ``rate``: mean rate; ``choice``: a mode
    string, with ``choices``).
    """

    name: str
    kind: Literal["env", "flag", "config-key"]
    unit: Literal["al", "al-1", "rates", "rate", "choice"]
    role: Literal["value", "companion"] = "value"  #: the pinned value, or a setting it needs
    choices: tuple[str, ...] = ()
    required_value: str | None = None  #: what a companion must be set to (e.g. ``match-expected``)
    aliases: tuple[str, ...] = ()  #: legacy spellings still found in the wild
    env: str | None = None  #: the environment-variable form of a flag, where the engine has one
    source: Source | None = None
    #: a companion that turns synthetic acceptance on when set to this value (vLLM's
    #: ``rejection_sample_method: synthetic``): ``check``'s census counts it as a pin site
    switch_value: str | None = None
    #: the value that turns such a switch back to real acceptance (``inject --restore-real``)
    real_value: str | None = None
    #: ``(alias, why)``: aliases the current engine no longer reads; a pin under one is unsafe, for ``why``
    retired: tuple[tuple[str, str], ...] = ()
    #: ``(value) -> bool``: whether the engine reads this value of the knob's environment variable as off
    #: (the launch guard); None: :func:`reads_off`, the shared rule (empty, or a number <= 0)
    env_off: Callable[[str], bool] | None = None

    def off_in_env(self, value: str) -> bool:
        """Whether the engine reads ``value`` of this knob's environment variable as off."""
        return self.env_off(value) if self.env_off is not None else reads_off(value)

    def spellings(self) -> tuple[str, ...]:
        """Every name the knob is written under (name, legacy aliases, environment form)."""
        return tuple(dict.fromkeys(n for n in (self.name, *self.aliases, self.env) if n))


def _truthy(value: Any) -> bool | None:
    """Whether a setting's value turns it on (None: cannot tell, e.g. set outside the file)."""
    if value is None or value is False or value == [] or value == {}:
        return False
    if value is True:
        return True
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, (list, dict)):
        return True
    text = str(value).strip().strip("'\"").strip().lower()
    if text in ("", "0", "0.0", "false", "no", "off", "none", "null", "disabled", "[]", "{}"):
        return False
    if "$" in text or "\x00" in text:
        return None
    return True


@dataclass(frozen=True, eq=False, repr=False)
class RuntimeDraftLen(Record):
    """A setting that lets the engine change the draft length at run time (adaptive or scheduled k).

    A golden AL belongs to one fixed k: such a setting beside a synthetic pin makes the pin
    ``unsafe-value`` in ``check``. ``unsafe(value)`` says whether a value turns it on (True),
    leaves k fixed (False) or cannot be told (None, treated as on); the default is "any value
    other than off, false, 0 or empty".
    """

    names: tuple[str, ...]  #: every spelling (flag, environment variable, config key)
    what: str  #: what it does, for the finding
    source: Source
    unsafe: Callable[[Any], bool | None] = _truthy
    flag_takes_value: bool = True  #: False for a switch flag (``--speculative-adaptive``): present = on


@dataclass(frozen=True, eq=False, repr=False)
class EngineVersion(Record):
    """The facts of one engine release (or source tree) golden-al has read; a profile lists them oldest first.

    ``refused_algorithms``: algorithm spellings (lower case) that version refuses to start with; ``facts``:
    what the engine's own hooks read for this version (its review of a pin, say); ``notes``: what changed,
    for the README's version table.
    """

    version: str  #: a release (``0.34.0``) or a source tree (``tree fcd3f3168280``)
    source: Source
    refused_algorithms: tuple[str, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False, repr=False)
class VersionChoice(Record):
    """Which version's facts a file is judged by, and why (``check`` says it beside each finding)."""

    version: EngineVersion | None  #: None: the profile lists no versions
    stated: str | None = None  #: the version the file names (a container tag, a pip pin), if any
    line: int | None = None  #: where it names it
    how: str = ""

    @property
    def name(self) -> str | None:
        """The version judged by."""
        return None if self.version is None else self.version.version


def _release_key(text: str) -> tuple[int, ...] | None:
    """A release's numeric parts (``v0.34.0rc1`` -> ``(0, 34, 0)``), None when it has none."""
    m = re.match(r"v?(\d+(?:\.\d+)*)", text.strip())
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


@dataclass(frozen=True, eq=False, repr=False)
class DraftLenRule(Record):
    """How ``k`` (draft tokens per verify step) follows from an algorithm's flags."""

    algorithm: str  #: the engine's own spelling (``EAGLE3``, ``mtp``, ``draft``, ...)
    rule: str  #: human text, e.g. ``k = --speculative-num-steps``
    chain: bool = True  #: False for trees and n-gram
    source: Source | None = None


@dataclass(frozen=True, eq=False, repr=False)
class DraftLen(Record):
    """A draft length derived from an engine's flags, with the rule that gave it."""

    k: int
    rule: str
    chain: bool = True  #: False for trees (SGLang EAGLE topk > 1) and n-gram
    #: the engine's human account of the rule and the values it read (``check``'s finding text); "": ``rule``
    described: str = ""
    #: the algorithm in the engine's canonical spelling, where the reading normalized it
    algorithm: str | None = None
    #: TensorRT-LLM-style one/two-model path: True two-model, False one-model, None unknown or not applicable
    two_model: bool | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Speculation(Record):
    """One worker role's speculative settings as its engine reads them from a config's engine
    arguments (:attr:`RecipeFormat.read`)."""

    engine: str
    #: the engine's own spelling as written: SGLang algorithm, vLLM method, TRT decoding_type
    algorithm: str | None
    #: what the engine's draft-length rule reads (SGLang: its speculative flags, dash spelling; vLLM:
    #: the speculative-config object; TensorRT-LLM: the ``speculative_config`` mapping)
    settings: Mapping[str, Any]
    #: the key holding the settings (vLLM: ``speculative-config`` / ``speculative_config``), None: flat
    key: str | None
    draft_model: str | None
    draft_sample_method: str | None = None
    rejection_sample_method: str | None = None
    #: the settings cannot be read at all (vLLM: a speculative-config that is not a JSON object)
    problem: str | None = None
    #: whether the role runs speculative decoding (SGLang: only with an algorithm)
    speculates: bool = True
    #: the values k rests on, by the name a user sees (a value set outside the file leaves k unknown)
    draft_inputs: Mapping[str, Any] = field(default_factory=dict)
    #: what the engine's :attr:`CheckSupport.review_pin` reads from these settings (SGLang: ``topk``)
    review_spec: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False, repr=False)
class RecipeFormat(Record):
    """How an engine's settings sit in an srt-slurm recipe (NVIDIA srt-slurm ``srtctl`` schema)."""

    #: the ``backend`` key holding per-role engine arguments (``sglang_config``); None: the engine's recipes are
    #: schema-2 ``roles`` recipes only (TileRT's)
    config_key: str | None
    backend_types: tuple[str, ...]  #: ``backend.type`` spellings
    read: hooks.ReadRole  #: the role's speculative settings (None: no speculative key)
    #: where ``select`` and ``inject`` write the synthetic settings: ``env`` (the worker environment blocks),
    #: ``config`` (inside the role's speculative config, vLLM's form) or ``args`` (server flags among the role's
    #: arguments, each flag's name without its dashes, ATOM's form); ``config`` and ``args`` get each role's own k
    inject_into: Literal["env", "config", "args"] = "env"
    #: the roles whose workers simulate the golden AL (every other role gets the synthetic settings unset); empty:
    #: every role the engine runs that speculates (a prefill worker runs no verify steps but reads the same settings)
    simulated_roles: tuple[str, ...] = ()
    #: keys of the role arguments that hold speculative settings (an override touching one changes k)
    spec_keys: tuple[str, ...] = ()
    #: the pin in a speculative config under :attr:`spec_keys` (where the engine keeps its knobs, vLLM's)
    config_pin: hooks.ConfigPin | None = None


@dataclass(frozen=True, eq=False, repr=False)
class LaunchRequest(Record):
    """What ``measure --launch`` asks a server for (engine-neutral)."""

    target: str
    host: str
    port: int
    tp: int
    draft_len: int
    algorithm: str | None = None
    draft: str | None = None
    speculative_extra: Mapping[str, Any] = field(default_factory=dict)
    per_request_metrics: str | None = None


@dataclass(frozen=True, eq=False, repr=False)
class PinContext(Record):
    """One pinned synthetic-acceptance value with what the gate saw around it, as an engine's
    :attr:`CheckSupport.review_pin` reads it.

    ``spec`` holds what the gate's readers gathered from the launch site for this engine (its
    config dict, flags seen next to the pin, the digits written); ``companions`` maps the knobs
    that must accompany the pin to their values (None as a whole: they cannot be seen).
    """

    knob: str
    raw: str
    value: float | None  #: ``raw`` read as a plain decimal (None: not a number)
    k: int | None
    algorithm: str | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)
    companions: Mapping[str, str | None] | None = None
    two_model: bool | None = None
    #: the engine version whose facts judge the pin (:meth:`EngineProfile.version_facts`); None: unversioned
    version: EngineVersion | None = None


@dataclass
class PinReview:
    """What an engine makes of a pinned synthetic-acceptance value (``check``'s per-engine rules).

    ``al``: the AL the engine would realize (None when it cannot be told); ``problems``:
    ``(verdict, message)`` pairs (``unsafe-value``, ``missing-companion``); ``notes``: facts
    worth showing next to the finding.
    """

    al: float | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, eq=False, repr=False)
class Limit(Record):
    """A limit the engine enforces (or silently applies), e.g. ATOM's ``k <= 4`` for mtp."""

    what: str
    algorithms: tuple[str, ...] = ()  #: empty: every algorithm
    max_k: int | None = None
    message: str = ""
    source: Source | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Caveat(Record):
    """Something true of the engine that a user must be told (e.g. greedy-only forcing)."""

    text: str
    #: commands, capabilities (a left-out one's caveats say why) or algorithms it concerns; empty: all
    applies_to: tuple[str, ...] = ()
    source: Source | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Metric(Record):
    """A Prometheus metric (name as exposed, with ``_total`` for counters)."""

    name: str
    kind: Literal["counter", "gauge", "histogram"]
    meaning: str
    labels: tuple[str, ...] = ()
    source: Source | None = None


@dataclass(frozen=True, eq=False, repr=False)
class EnvOption(Record):
    """An option of ``golden-al env`` that spells k the engine's way (SGLang ``--num-steps``)."""

    flag: str  #: ``--num-steps``
    help: str
    metavar: str = "N"

    @property
    def dest(self) -> str:
        """The argparse destination of :attr:`flag`."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True, eq=False, repr=False)
class LogReader(Record):
    """How the general log reader (:func:`golden_al.formats.logs.read_log_file`) reads the engine's acceptance lines."""

    parse: hooks.LineParser
    #: text every such line holds (lines without any engine's marker are never decoded)
    markers: tuple[str, ...]
    #: the line where the server logs its start-up arguments (``record.args``: name -> value), read by ``check-run``
    server_args: hooks.LineParser | None = None


@dataclass(frozen=True, eq=False, repr=False)
class EngineBuild(Record):
    """How ``golden-al engines build ENGINE`` gets the engine's server binary (llama.cpp's ``llama-server``)."""

    binary: str  #: what is built (``llama-server``)
    description: str  #: what the build does, for ``--help``
    build: hooks.BuildServer  #: its result has ``to_dict()``, ``cached``, ``build_seconds``, ``attempts``, ``log``
    check: hooks.CheckBinary  #: checks a binary the user gives instead


@dataclass(frozen=True, eq=False, repr=False)
class ResponseField(Record):
    """A per-request response field and its names across versions (newest first)."""

    meaning: str
    names: tuple[str, ...]
    path: str = ""  #: where it sits, e.g. ``meta_info`` or ``timings``
    source: Source | None = None


#: A number as engines print it in their log lines (printf ``%f``/``%g``, ``nan``, ``inf``), for a :class:`LogPattern`.
LOG_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf"


@dataclass(frozen=True, eq=False, repr=False)
class LogPattern(Record):
    """A log line the engine prints about acceptance, as a regular expression."""

    name: str
    regex: str
    meaning: str
    source: Source | None = None
    marker: str = ""  #: a substring every matching line holds (a cheap pre-filter), or ""


@dataclass(frozen=True, eq=False, repr=False)
class CommandLineReading(Record):
    """What an engine makes of one command line and its environment, around a pinned value.

    ``draft``: the draft length (None, with ``draft_problem`` saying why, when the
    settings do not fix it); ``problems``: ``(verdict, message)`` pairs the settings
    themselves cause (``missing-companion``, ``unsafe-value``); ``models``: names the
    settings give the served model, most specific first.
    """

    draft: DraftLen | None = None
    draft_problem: str | None = None
    algorithm: str | None = None
    draft_model: str | None = None
    models: tuple[str, ...] = ()
    problems: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, eq=False, repr=False)
class CommandLine(Record):
    """How an engine configured by flags and environment variables shows its pins in a config.

    A config that holds the server's command line as data (a compose ``command:`` or
    Kubernetes ``command:``/``args:`` list with ``env:``/``environment:``, a JSON args
    array) is read by :mod:`golden_al.checks.command_lines` with these two facts.
    """

    #: every spelling of a pinned value (flag or environment variable) -> the knob reported
    value_knobs: Mapping[str, str]
    read: hooks.ReadCommandLine  #: the engine's reading of the settings around a pin


@dataclass(frozen=True, eq=False, repr=False)
class SimulateOption(Record):
    """A ``golden-al simulate`` option this engine's samplers take (the CLI builds its flags from these)."""

    flag: str  #: e.g. ``--rates``
    kwarg: str  #: the sampler keyword it sets (:func:`golden_al.plugin.registry.get_sampler`)
    help: str
    metavar: str | None = None
    type: Callable[[str], Any] | None = None  #: argparse type
    choices: tuple[str, ...] = ()
    parse: Callable[[Any], Any] | None = None  #: the parsed value -> the sampler keyword's value
    #: ``(sampler, al or None, k) -> AL``: the option fixes the injected AL itself (rates, a rate); it
    #: checks a given ``--al`` against it. None: the option leaves ``--al`` required.
    gives_al: Callable[..., float] | None = None


@dataclass(frozen=True, eq=False, repr=False)
class CheckSupport(Record):
    """What ``check``, ``env``, ``select`` and ``inject`` need: the engine's synthetic-acceptance knobs, how to
    write them, and how to read its speculative settings (launch flags, configs, scripts) to prove a pin.
    Every engine has this group: an engine golden-al knows at all is one whose synthetic acceptance it judges."""

    synthetic_knobs: tuple[SyntheticKnob, ...]
    synthetic_settings: hooks.SyntheticSettings
    #: ``golden-al env`` shell/dotenv variable that carries a whole setting (vLLM's
    #: ``--speculative-config`` JSON, ATOM's flags); None: the settings are env vars.
    shell_variable: str | None = None
    shell_value: hooks.ShellValue | None = None  #: the value of :attr:`shell_variable`
    #: the environment form of flag settings, for ``golden-al env --format shell|dotenv`` (llama.cpp's ``LLAMA_ARG_*``)
    shell_env: hooks.ShellEnv | None = None
    #: ``golden-al env`` options that spell k the engine's way, and k from the ones given (UsageError naming what is
    #: missing or contradicts). Engines may share an option.
    env_options: tuple[EnvOption, ...] = ()
    env_draft_len: hooks.EnvDraftLen | None = None
    #: the engine's own review of a pinned value, when the knob's unit alone does not say what AL it realizes;
    #: None: :meth:`review_value` by unit
    review_pin: hooks.ReviewPin | None = None
    #: how far the pin's AL may sit from the golden one and still match (a value the engine rounds, e.g. a rate
    #: written to few digits); None: exact (1e-9)
    pin_tolerance: hooks.PinTolerance | None = None
    #: the settings other than the engine's defaults that change real AL
    #: and so choose among golden curves (:attr:`golden_al.golden.schema.Draft.selectors`), read from the same
    #: ``spec`` mapping :attr:`review_pin` reads (:attr:`PinContext.spec`, :attr:`Speculation.review_spec`);
    #: raises UsageError naming a setting it cannot read. None: the engine has no selectors.
    curve_selectors: hooks.CurveSelectors | None = None
    #: Each selector :attr:`curve_selectors` may return, with what it is (``engines show``, the README).
    selector_keys: Mapping[str, str] = field(default_factory=dict)
    #: How ``check`` reads pins from a command line kept in a config (None: not declared).
    command_line: CommandLine | None = None
    #: Settings that change the draft length at run time (``check``: ``unsafe-value`` beside a pin).
    runtime_draft_len: tuple[RuntimeDraftLen, ...] = ()
    #: k from speculative settings a config holds (None: none found); UsageError/ValueError saying why they do
    #: not fix k. None: configs cannot fix k.
    settings_draft_len: hooks.SettingsDraftLen | None = None
    #: the engine's speculative settings among a script's launch flags (``--name``: value) and the config keys it
    #: writes (bare ``name``: value); None: not read there.
    script_speculation: hooks.ScriptSpeculation | None = None
    #: the pin of a knob this engine spells its own way in a shell script (a JSON config, a flag); None: its knobs
    #: are environment variables, or read off its command line (:attr:`command_line`).
    script_pin: hooks.ScriptPin | None = None
    #: The launch flags whose values :attr:`script_speculation` reads (``check`` gathers them on each path).
    script_flags: tuple[str, ...] = ()
    #: Config keys a script writes (a YAML heredoc, TensorRT-LLM's) that :attr:`script_speculation` reads.
    script_config_keys: tuple[str, ...] = ()
    #: Short flags of the engine's executable and the long flag each stands for (llama-server ``-m``, ``-md``).
    short_flags: Mapping[str, str] = field(default_factory=dict)
    #: What :attr:`script_speculation` reads, for messages (``the launch flags``).
    script_settings: str = ""
    #: The setting that picks the algorithm (``--speculative-algorithm``); None: one algorithm per setting.
    algorithm_flag: str | None = None
    #: Environment variables set beside a pin that its :attr:`review_pin` reads: variable -> ``spec`` key.
    pin_env: Mapping[str, str] = field(default_factory=dict)
    #: What a harness's injector (InferenceX
    #: ``runners/synthetic_injectors``) writes beside a master-config value, as the pin's ``spec`` that
    #: :attr:`review_pin` reads, and notes on what it replaces. None: nothing beside the value.
    harness_pin: hooks.HarnessPin | None = None
    #: Forced acceptance (what was found, hint) in what a server shows of itself: in its
    #: command-line arguments (``forced_in_args(argv)``), a speculative config (``forced_in_config(mapping)``,
    #: vLLM's) and one line of its log (``forced_in_log_line(line)``). :mod:`golden_al.servers.synthetic` asks every
    #: registered engine (a wrapper may forward another engine's arguments), then runs ``check``'s census.
    forced_in_args: hooks.ForcedInArgs | None = None
    forced_in_config: hooks.ForcedInConfig | None = None
    forced_in_log_line: hooks.ForcedInLogLine | None = None


@dataclass(frozen=True, eq=False, repr=False)
class ServerSupport(Record):
    """What ``measure``/``sweep`` need against a running server (the group "measurable" means): its AL sources
    and their implementations, its probe, its metrics and response fields. Left out: not measurable."""

    #: AL sources ``measure``/``sweep`` read against this engine's server (names in
    #: :mod:`golden_al.plugin.sources`), the ``--al-source auto`` default first; empty: none.
    al_sources: tuple[str, ...] = ()
    #: source name -> its implementation (every name in :attr:`al_sources` has one).
    source_impls: Mapping[str, hooks.SourceImpl] = field(default_factory=dict)
    #: fills :class:`~golden_al.plugin.facts.ServerFacts` from what the server says about itself (None: not probed)
    server_probe: hooks.ServerProbe | None = None
    metrics: tuple[Metric, ...] = ()
    response_fields: Mapping[str, ResponseField] = field(default_factory=dict)
    server_info_fields: Mapping[str, str] = field(default_factory=dict)
    #: its Prometheus spec-decode counters (:mod:`golden_al.formats.counters`); None: it exposes none.
    counter_reader: hooks.CounterReader | None = None
    #: The metric whose presence says a snapshot holds this engine's counters (auto-detection).
    counter_marker: str | None = None
    #: Metric families whose ``*_created`` times identify one server lifetime (a restart changes them).
    lifetime_prefixes: tuple[str, ...] = ()
    #: The ``auto`` source when the server reports per-request counts (vLLM started with
    #: ``--per-request-spec-decode-metrics``), and how to tell (one short request that looks for them).
    per_request_source: str | None = None
    per_request_probe: hooks.PerRequestProbe | None = None
    #: a response's steps split by the draft length each was proposed at (None: it reports no per-step lengths)
    response_steps_by_draft_len: hooks.StepsByDraftLen | None = None
    #: Whether its proposed-drafts count is exactly ``verify steps x k`` (SGLang: ``spec_verify_ct x
    #: (speculative_num_draft_tokens - 1)``), so any other count means another draft length.
    exact_proposals: bool = False
    #: k from what a server reports of itself (``/server_info``, start-up arguments in its log); None: nothing.
    draft_len_from_server_info: hooks.ServerInfoDraftLen | None = None
    #: its ``serve-reference`` imitation, a class (None: serve-reference cannot answer like it)
    reference_flavor: hooks.ReferenceFlavor | None = None


@dataclass(frozen=True, eq=False, repr=False)
class LaunchSupport(Record):
    """What ``measure --launch`` and ``sweep`` need to start the engine's server. Left out: golden-al measures
    only a server someone else started."""

    #: the server command after ``python`` for ``measure --launch`` (None: golden-al cannot launch this engine)
    server_args: hooks.ServerArgs | None = None
    launch_command: tuple[str, ...] = ()  #: e.g. ``("-m", "sglang.launch_server")`` after the python
    spec_flags: hooks.SpecFlags | None = None  #: the launch flags that ask for draft length k
    #: Flags :attr:`server_args` sets itself; an ``--engine-arg`` must not repeat them.
    reserved_flags: tuple[str, ...] = ()
    #: The executable itself, when the engine is not a Python module (llama.cpp's
    #: ``llama-server``): :attr:`server_args` then gives the arguments after it.
    executable: str | None = None
    #: What its server loads: ``checkpoint`` (a Hugging Face directory or name) or ``gguf`` files
    #: (``measure --launch`` then maps a known model name to its cached GGUF).
    model_files: Literal["checkpoint", "gguf"] = "checkpoint"
    #: The flag that names the served model (llama.cpp: ``--alias``).
    served_name_flag: str = "--served-model-name"
    #: the record's ``draft_method`` of a launch (None: the algorithm, lower-cased, or ``unknown``)
    launch_method: hooks.LaunchMethod | None = None
    #: the draft length a launch command asks for, used when the server itself cannot tell yet (llama-server
    #: shows k only once a request drafted). None: the server tells.
    launch_draft_len: hooks.LaunchDraftLen | None = None
    #: ``golden-al engines build``: how golden-al builds the engine's server itself (None: it does not).
    build: EngineBuild | None = None


@dataclass(frozen=True, eq=False, repr=False)
class SimulateSupport(Record):
    """What ``simulate`` and ``check-run`` need: the engine's sampler (:mod:`simulators`) and how to show its
    settings. Left out: nothing to simulate, and ``check-run`` needs ``--method``."""

    #: The sampler method the engine uses for its synthetic knob by default (``check-run``'s law when ``--method``
    #: is not given; one of :attr:`samplers`); None: the engine has no sampler.
    default_sampler: str | None = None
    #: method (the engine's own spelling) -> its sampler class (the engine folder's ``sampler.py``)
    samplers: Mapping[str, hooks.Sampler] = field(default_factory=dict)
    #: what ``golden-al simulate`` shows as the engine's injected settings for one of its samplers
    simulator_settings: hooks.SimulatorSettings | None = None
    #: ``simulate``'s options of this engine's samplers (flags, sampler keywords, whether they fix AL).
    simulate_options: tuple[SimulateOption, ...] = ()
    #: what ``simulate --format json`` adds for this engine
    simulate_report: hooks.SimulateReport | None = None


@dataclass(frozen=True, eq=False, repr=False)
class RunLogSupport(Record):
    """What a run's logs give: ``check-run``'s evidence reader, the acceptance log lines, ``import`` formats.
    Left out: ``check-run`` reads only Prometheus snapshots for the engine."""

    #: check-run's reader of the engine's own log lines (:mod:`golden_al.plugin.evidence`); None: only Prometheus
    #: snapshots are read for it.
    run_evidence: hooks.RunEvidenceReader | None = None
    #: The engine's acceptance log lines, as ``check-run`` and ``import`` read them (None: it prints none).
    log_reader: LogReader | None = None
    log_patterns: tuple[LogPattern, ...] = ()
    #: ``golden-al import`` formats of the engine's own outputs (bench results, server logs): format name -> importer
    importers: Mapping[str, hooks.Importer] = field(default_factory=dict)


@dataclass(frozen=True, eq=False, repr=False)
class Capability(Record):
    """A group of the profile (one of the ``*Support`` dataclasses, or :class:`RecipeFormat`) that lets golden-al do
    one thing with an engine. A group is optional as a whole: left out, it is its conservative default (nothing
    declared), and a command that needs it refuses naming it (:meth:`EngineProfile.require`). ``fields`` are the
    ones that make the group present; the conformance kit refuses a group that sets some of them and not all."""

    name: str
    what: str  #: what golden-al can do with it, for messages
    group: str  #: the :class:`EngineProfile` attribute holding the group
    cls: type  #: the group's dataclass (the conformance kit checks the attribute holds one)
    fields: tuple[str, ...]  #: set together, or not at all
    commands: tuple[str, ...]

    def filled(self, profile: EngineProfile) -> tuple[str, ...]:
        """The group's :attr:`fields` that ``profile`` sets."""
        group = getattr(profile, self.group)
        return tuple(f for f in self.fields if group is not None and getattr(group, f))

    def present(self, profile: EngineProfile) -> bool:
        """Whether ``profile`` fills the group."""
        return len(self.filled(profile)) == len(self.fields)


#: The capability groups of a profile (``golden-al engines show`` lists an engine's).
CAPABILITIES: tuple[Capability, ...] = (
    Capability("check", "read, judge and write its synthetic-acceptance settings", "check", CheckSupport,
               ("synthetic_knobs", "synthetic_settings"), ("check", "env", "select", "inject")),
    Capability("server", "measure AL against a running server", "server", ServerSupport,
               ("al_sources", "source_impls", "server_probe"), ("measure", "sweep")),
    Capability("launch", "start its server itself", "launch", LaunchSupport, ("server_args", "launch_command"),
               ("measure --launch", "sweep")),
    Capability("recipes", "read and rewrite srt-slurm recipes", "recipe", RecipeFormat, ("read",),
               ("check", "select", "inject")),
    Capability("simulate", "reproduce its sampler", "simulate", SimulateSupport, ("default_sampler", "samplers"),
               ("simulate", "check-run")),
    Capability("run-logs", "read a run's logs for its realized AL", "run_logs", RunLogSupport, ("run_evidence",),
               ("check-run",)),
)
#: each capability group's attribute of :class:`EngineProfile` -> its dataclass (from :data:`CAPABILITIES`)
GROUPS: dict[str, type] = {c.group: c.cls for c in CAPABILITIES}


def group_of(field_name: str) -> str | None:
    """Where a field of a capability group is written in a profile (``server=ServerSupport(al_sources=...)``), or
    None for a top-level field or an unknown name: the hint for a profile written for the flat shape."""
    for cap in CAPABILITIES:
        if field_name in {f.name for f in fields(cap.cls)}:
            return f"{cap.group}={cap.cls.__name__}({field_name}=...)"
    return None


@dataclass(frozen=True, eq=False, repr=False)
class EngineProfile(Record):
    """Everything golden-al knows about one engine, as capability groups (:data:`CAPABILITIES`). One instance per
    engine package: its identity here, what each command needs in its group."""

    name: str  #: the ``--engine`` value
    display_name: str
    algorithms: tuple[str, ...]
    draft_len_rules: tuple[DraftLenRule, ...]
    check: CheckSupport
    #: The engine's speculative algorithm/method spelling -> golden-curve method
    #: (``deepseek_mtp`` -> ``mtp``, ...); see :func:`golden_al.golden.store.curve_method_for`.
    curve_methods: Mapping[str, str] = field(default_factory=dict)
    #: The engine's own reading of an algorithm as written into a
    #: golden-curve method, where a plain lookup in :attr:`curve_methods` (lower case, ``-`` for ``_``)
    #: is not enough; raises UsageError for a spelling the engine refuses. None: that lookup.
    curve_method_of: hooks.CurveMethodOf | None = None
    #: InferenceX master-config ``framework`` spellings that run this engine (``dynamo-sglang``).
    frameworks: tuple[str, ...] = ()
    #: Other names people write for the engine (``trt-llm``), beside :attr:`name` and :attr:`display_name`.
    aliases: tuple[str, ...] = ()
    #: The releases (or source trees) whose facts golden-al knows, oldest first; the last is the newest.
    versions: tuple[EngineVersion, ...] = ()
    #: Regular expressions, each with a ``version`` group, that find the engine's version a file names
    #: (a container image tag, a ``pip`` pin); the first match in the file wins.
    version_patterns: tuple[str, ...] = ()
    limits: tuple[Limit, ...] = ()
    caveats: tuple[Caveat, ...] = ()
    sources: tuple[Source, ...] = ()
    #: Prefixes of the environment variables that change what the server does (recorded).
    env_prefixes: tuple[str, ...] = ()
    server: ServerSupport = field(default_factory=ServerSupport)
    launch: LaunchSupport = field(default_factory=LaunchSupport)
    #: How its settings sit in an srt-slurm recipe (None: the engine has no recipe format).
    recipe: RecipeFormat | None = None
    simulate: SimulateSupport = field(default_factory=SimulateSupport)
    run_logs: RunLogSupport = field(default_factory=RunLogSupport)

    def capabilities(self) -> tuple[str, ...]:
        """The capability groups (:data:`CAPABILITIES`) whose every field this profile fills."""
        return tuple(c.name for c in CAPABILITIES if c.present(self))

    def has(self, capability: str) -> bool:
        """Whether the profile fills capability group ``capability``."""
        return capability in self.capabilities()

    def require(self, capability: str, command: str) -> None:
        """Refuse ``command`` on an engine without capability group ``capability``.

        Raises:
            UsageError: naming the engine, the capability, the caveats that apply to it (why it is left out) and the
            fields a profile fills for it.
        """
        if not self.has(capability):
            cap = next(c for c in CAPABILITIES if c.name == capability)
            why = "".join(f"; {c.text}" for c in self.caveats if capability in c.applies_to)
            raise UsageError(f"{command}: {self.display_name} has no {capability!r} capability: golden-al cannot "
                             f"{cap.what} for it{why}", hint=f"its profile leaves out {cap.group} ({', '.join(cap.fields)}; "
                                                          "golden-al engines show " + self.name + ")")

    def tolerance(self, ctx: PinContext) -> float:
        """How close the AL of ``ctx`` must be to the golden AL (:attr:`pin_tolerance`, or exact)."""
        return self.check.pin_tolerance(ctx) if self.check.pin_tolerance is not None else 1e-9

    def selectors(self, spec: Mapping[str, Any], k: int | None) -> dict[str, str]:
        """The curve selectors of a recipe's settings (:attr:`curve_selectors`; {} for an engine without them).

        Raises:
            UsageError: a setting the engine cannot read, or a selector it does not declare.
        """
        if self.check.curve_selectors is None:
            return {}
        got = self.check.curve_selectors(spec, k)
        unknown = sorted(set(got) - set(self.check.selector_keys))
        if unknown:
            raise UsageError(f"{self.display_name} returned curve selectors it does not declare: {', '.join(unknown)}")
        return dict(sorted(got.items()))

    def review(self, ctx: PinContext) -> PinReview:
        """The engine's review of one pin: its :attr:`review_pin`, or :meth:`review_value` by unit."""
        if self.check.review_pin is not None:
            return self.check.review_pin(ctx)
        return self.review_value(ctx.knob, ctx.raw, ctx.value, ctx.k)

    def review_value(self, knob: str, raw: str, value: float | None, k: int | None) -> PinReview:
        """The AL a pinned value realizes by the knob's declared unit (``al``: the value; ``al-1``:
        value + 1; ``rate``: 1 + k x value).

        Whatever the unit cannot turn into an AL (a per-position ``rates`` list, a ``choice``, an
        unknown knob, a value that is not a number, no k for a rate) is a problem, never a guess.
        """
        review = PinReview()
        try:
            unit = self.knob(knob).unit
        except KeyError:
            review.problems.append(("unsafe-value", f"{self.display_name} declares no synthetic knob {knob!r}"))
            return review
        if value is None:
            review.problems.append(("unsafe-value", f"{knob}={raw!r} is not a number"))
            return review
        if unit == "al":
            review.al = value
        elif unit == "al-1":
            review.al = value + 1.0
            review.notes.append(f"{knob} counts draft tokens only: {raw} means AL {value + 1.0:g}")
        elif unit == "rate" and k is not None:
            review.al = 1.0 + k * value
            review.notes.append(f"{knob} is a mean acceptance rate: {raw} at k={k} means AL {review.al:g}")
        else:
            what = "no k fixes the AL of a rate" if unit == "rate" else f"a {unit!r} value is not an AL"
            review.problems.append(("unsafe-value", f"{knob}={raw!r}: {what}; the profile of "
                                                    f"{self.display_name} gives no review_pin to read it"))
            return review
        if k is not None and not 1.0 <= review.al <= k + 1:
            review.problems.append(("unsafe-value", f"{knob}={raw} means AL {review.al:g}, outside [1, k+1] = "
                                                    f"[1, {k + 1}]"))
        return review

    def version_in(self, text: str) -> tuple[str, int] | None:
        """The engine version a file names (``(version, line)``), or None."""
        for pattern in self.version_patterns:
            m = re.search(pattern, text)
            if m:
                return m.group("version"), text.count("\n", 0, m.start()) + 1
        return None

    def version_facts(self, text: str | None = None) -> VersionChoice:
        """The known version a file is judged by: the newest known release not after the one it names
        (an image tag, a pip pin), else the newest known, saying which and why."""
        if not self.versions:
            return VersionChoice(None, how=f"golden-al lists no {self.display_name} versions")
        newest = self.versions[-1]
        found = self.version_in(text) if text else None
        if found is None:
            return VersionChoice(newest, how=f"the file names no {self.display_name} version: the newest known, "
                                             f"{newest.version}")
        stated, line = found
        key = _release_key(stated)
        known = [(k, v) for v in self.versions if (k := _release_key(v.version)) is not None]
        fits = [v for k, v in known if key is not None and k <= key]
        if fits:
            chosen = fits[-1]
            exact = "" if _release_key(chosen.version) == key else f" (the newest known not after {stated})"
            return VersionChoice(chosen, stated, line, f"{self.display_name} {stated} named at line {line}: the "
                                                       f"{chosen.version} facts{exact}")
        return VersionChoice(newest, stated, line, f"{self.display_name} {stated} named at line {line} is not a "
                                                   f"version golden-al maps to its facts: the newest known, "
                                                   f"{newest.version}")

    def retired_problem(self, name: str) -> str | None:
        """Why a pin spelled ``name`` is unsafe because the engine no longer reads that spelling, or None."""
        return next((why for knob in self.check.synthetic_knobs for alias, why in knob.retired if alias == name), None)

    def knob(self, name: str) -> SyntheticKnob:
        """The synthetic knob called ``name`` (or one of its aliases)."""
        for k in self.check.synthetic_knobs:
            if name == k.name or name in k.aliases or name == k.env:
                return k
        raise KeyError(f"{self.name} has no synthetic knob {name!r}")

    def check_k(self, algorithm: str, k: int) -> None:
        """Refuse a draft length the engine refuses for ``algorithm`` (see :attr:`limits`).

        Raises:
            UsageError: ``k`` above a limit, with the limit's message and source.
        """
        for lim in self.limits:
            if lim.max_k is not None and (not lim.algorithms or algorithm in lim.algorithms) and k > lim.max_k:
                where = f" ({lim.source.repo} {lim.source.path} at {lim.source.version})" if lim.source else ""
                raise UsageError(f"{self.display_name} refuses draft length {k} for {algorithm}: {lim.message}{where}",
                                 hint=f"use k <= {lim.max_k} with {algorithm}")

    def log_pattern(self, name: str) -> LogPattern:
        """The log pattern called ``name``."""
        for pattern in self.run_logs.log_patterns:
            if pattern.name == name:
                return pattern
        raise KeyError(f"{self.name} has no log pattern {name!r}")

    def max_k(self, algorithm: str) -> int | None:
        """The largest draft length the engine accepts for ``algorithm`` (None: no limit known)."""
        caps = [lim.max_k for lim in self.limits
                if lim.max_k is not None and (not lim.algorithms or algorithm in lim.algorithms)]
        return min(caps) if caps else None
