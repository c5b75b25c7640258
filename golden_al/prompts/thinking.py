"""Thinking mode, its one home: the modes and their spellings, what a config's settings say of it, and the presets
per model family (``thinking_presets.yaml``), torch-free.

A preset says which ``chat_template_kwargs`` turn a chat template's thinking mode
on or off (``enable_thinking``, ``thinking``, ``reasoning_effort``,
``thinking_mode``, ...) and the sampling the provider recommends per mode. The
reference engine passes the kwargs to ``tokenizer.apply_chat_template``; server
clients send them as ``chat_template_kwargs`` over HTTP. Both use these functions,
so one model renders the same way everywhere.

>>> preset_for("Qwen/Qwen3-8B").kwargs_for("on")
{'enable_thinking': True}
>>> family_for("qwen2.5-coder-1.5b-instruct")
'qwen2'
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from golden_al.errors import InputFileError, UsageError
from golden_al.plugin.pins import ThinkingSignal
from golden_al.plugin.profile import Record

__all__ = [
    "LEVEL_RE",
    "PRESETS_FILE",
    "REQUEST",
    "SETTING_NAMES",
    "THINKING_MODES",
    "ThinkingMode",
    "ThinkingPreset",
    "family_for",
    "is_thinking_setting",
    "load_presets",
    "mode_key",
    "normalize_mode",
    "normalize_thinking",
    "preset_for",
    "resolve_thinking",
    "thinking_from_kwargs",
    "thinking_from_setting",
    "truth",
]

PRESETS_FILE = Path(__file__).with_name("thinking_presets.yaml")


@dataclass(frozen=True, eq=False, repr=False)
class ThinkingMode(Record):
    """One mode of a family: the template kwargs and the recommended sampling (may be empty)."""

    chat_template_kwargs: Mapping[str, Any]
    sampling: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False, repr=False)
class ThinkingPreset(Record):
    """A model family's thinking switch: ``on``/``off`` and any named levels (``reasoning_effort_high``)."""

    family: str
    description: str
    match: tuple[str, ...]
    model_types: tuple[str, ...]
    default: str
    modes: Mapping[str, ThinkingMode]
    source: str

    def mode(self, thinking: str | bool | None) -> ThinkingMode:
        """The mode for ``thinking`` (``on``/``off``/a level name; None = the template's default)."""
        name = normalize_thinking(thinking) if thinking is not None else self.default
        if name not in self.modes:
            if name == "on":
                raise UsageError(
                    f"model family {self.family!r} has no thinking mode ({self.description}); "
                    "use --thinking off",
                    hint="or pass explicit chat_template_kwargs if your template has a switch we do not know",
                )
            if name == "off":
                raise UsageError(f"model family {self.family!r} has no thinking-off mode ({self.description}); "
                                 "use --thinking on")
            raise UsageError(f"model family {self.family!r} has no thinking level {name!r} "
                             f"(its modes: {', '.join(self.modes)})",
                             hint="add it to the family's preset, or pass explicit chat_template_kwargs")
        return self.modes[name]

    def equivalents(self, thinking: str | bool) -> list[str]:
        """The other modes of this family with the same kwargs and sampling as ``thinking``.

        DeepSeek-V4's ``on`` *is* ``reasoning_effort_high``: a curve measured as one
        answers for the other. Unknown modes have none.
        """
        name = normalize_thinking(thinking)
        mode = self.modes.get(name)
        if mode is None:
            return []
        return [n for n, m in self.modes.items() if n != name and m == mode]

    def kwargs_for(self, thinking: str | bool | None) -> dict[str, Any]:
        """A fresh copy of the ``chat_template_kwargs`` for ``thinking``."""
        return copy.deepcopy(dict(self.mode(thinking).chat_template_kwargs))

    def sampling_for(self, thinking: str | bool | None) -> dict[str, Any]:
        """The recommended sampling for ``thinking`` (empty when none is documented)."""
        return dict(self.mode(thinking).sampling)


def _parse(data: Any, path: Path) -> dict[str, ThinkingPreset]:
    if not isinstance(data, dict) or not isinstance(data.get("families"), dict):
        raise InputFileError("expected a mapping with a 'families' mapping", path=path)
    out: dict[str, ThinkingPreset] = {}
    for name, spec in data["families"].items():
        if not isinstance(spec, dict) or not isinstance(spec.get("modes"), dict) or not spec["modes"]:
            raise InputFileError(f"family {name!r}: expected a mapping with non-empty 'modes'", path=path)
        modes = {}
        for mode_name, mode in spec["modes"].items():
            key = normalize_thinking(mode_name)
            if not isinstance(mode, dict) or not isinstance(mode.get("chat_template_kwargs", {}), dict):
                raise InputFileError(f"family {name!r} mode {mode_name!r}: expected chat_template_kwargs mapping",
                                     path=path)
            modes[key] = ThinkingMode(dict(mode.get("chat_template_kwargs") or {}), dict(mode.get("sampling") or {}))
        default = normalize_thinking(spec.get("default", "off"))
        if default not in modes:
            raise InputFileError(f"family {name!r}: default mode {default!r} is not among its modes", path=path)
        for pattern in spec.get("match") or []:
            try:
                re.compile(pattern)
            except re.error as err:
                raise InputFileError(f"family {name!r}: bad match regex {pattern!r}: {err}", path=path) from err
        out[str(name)] = ThinkingPreset(
            family=str(name),
            description=str(spec.get("description", "")),
            match=tuple(spec.get("match") or ()),
            model_types=tuple(spec.get("model_types") or ()),
            default=default,
            modes=modes,
            source=str(spec.get("source", "")),
        )
    if "generic" not in out:
        raise InputFileError("the presets need a 'generic' fallback family", path=path)
    return out


@functools.lru_cache(maxsize=4)
def _load_cached(path: str) -> dict[str, ThinkingPreset]:
    from golden_al import safeio

    p = Path(path)
    data = safeio.safe_load_yaml(safeio.read_text(p), path=p)
    return _parse(data, p)


def load_presets(path: str | Path | None = None) -> dict[str, ThinkingPreset]:
    """All presets, by family name, in match order (default: the shipped YAML)."""
    return dict(_load_cached(str(Path(path) if path else PRESETS_FILE)))


def _names_and_type(model: Any) -> tuple[list[str], str | None]:
    """Candidate name strings and the model_type of a name, a config dict or a config object."""
    if isinstance(model, (str, Path)):
        return [str(model)], None
    if isinstance(model, Mapping):
        get = model.get
    else:
        def get(key: str, default: Any = None) -> Any:
            return getattr(model, key, default)
    names = [str(v) for v in (get("_name_or_path"), get("name_or_path"), get("name")) if v]
    model_type = get("model_type")
    return names, (str(model_type) if model_type else None)


def family_for(model_name_or_config: Any) -> str:
    """The family of a model name, hub id, path, config dict or config object (``generic`` if unknown).

    Names are matched first (so a DeepSeek-R1 distill of Qwen is ``deepseek-r1``),
    then ``model_type``.
    """
    presets = load_presets()
    names, model_type = _names_and_type(model_name_or_config)
    for name in names:
        lowered = name.lower()
        for preset in presets.values():
            if any(re.search(pattern, lowered) for pattern in preset.match):
                return preset.family
    if model_type:
        for preset in presets.values():
            if model_type.lower() in preset.model_types:
                return preset.family
    return "generic"


def preset_for(model_or_family: Any) -> ThinkingPreset:
    """The preset for a family name, or for a model name/config via :func:`family_for`."""
    if isinstance(model_or_family, ThinkingPreset):
        return model_or_family
    presets = load_presets()
    if isinstance(model_or_family, str) and model_or_family in presets:
        return presets[model_or_family]
    return presets[family_for(model_or_family)]


# ------------------------------------------------------------------------------ modes

#: The two switch modes as curve keys; a named level (``reasoning_effort_high``) is its own key.
THINKING_MODES: tuple[str, str] = ("thinking_on", "thinking_off")
#: A named reasoning level: lower-case words joined by ``_`` (``reasoning_effort_high``).
LEVEL_RE = r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$"


def normalize_mode(thinking: str | bool) -> str:
    """``on``/``off`` (from on, off, thinking_on, true, 1, ...) or a level name (``reasoning_effort_high``).

    Raises:
        ValueError: neither a switch value nor a well-formed level name.
    """
    if isinstance(thinking, bool):
        return "on" if thinking else "off"
    t = str(thinking).strip().lower().replace("-", "_")
    if t in ("on", "thinking_on", "true", "1", "yes", "enabled"):
        return "on"
    if t in ("off", "thinking_off", "false", "0", "no", "disabled"):
        return "off"
    if re.match(LEVEL_RE, t) and not t.startswith("thinking_"):
        return t
    raise ValueError(f"thinking mode must be on, off or a named level such as reasoning_effort_high, "
                     f"got {thinking!r}")


def mode_key(thinking: str | bool) -> str:
    """The curve key of a mode: ``thinking_on``/``thinking_off``, or the level name itself."""
    m = normalize_mode(thinking)
    return {"on": "thinking_on", "off": "thinking_off"}.get(m, m)


def normalize_thinking(value: str | bool) -> str:
    """:func:`normalize_mode`, raising :class:`~golden_al.errors.UsageError` (exit 2) for a bad value."""
    try:
        return normalize_mode(value)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


# ------------------------------------------------------------------- what a config says

#: Priority of a request's own thinking controls (per-request kwargs): every lower priority is a default they override.
REQUEST = 4


_TRUE = {"1", "true", "yes", "on", "enabled", "enable"}
_FALSE = {"0", "false", "no", "off", "disabled", "disable"}


def truth(value: Any) -> bool | None:
    """Whether a setting's value turns a switch on (True), off (False), or neither can be told (None)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().strip("'\"").lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


#: chat_template_kwargs keys that switch thinking (Qwen3/GLM ``enable_thinking``, DeepSeek/Kimi ``thinking``,
#: MiniMax ``thinking_mode``).
_KWARG_KEYS = ("enable_thinking", "thinking", "thinking_mode")
#: The request/chat-template key of a named reasoning level (gpt-oss harmony template, DeepSeek-V4, the OpenAI chat
#: API's ``reasoning_effort`` request field).
_EFFORT_KEY = "reasoning_effort"


def _effort_level(value: Any) -> str | None:
    """``"high"`` -> ``reasoning_effort_high`` (None for anything that is not one plain word)."""
    if not isinstance(value, str):
        return None
    word = value.strip().strip("'\"").lower()
    return f"{_EFFORT_KEY}_{word}" if re.fullmatch(r"[a-z0-9]+", word) else None


def thinking_from_kwargs(value: Any, source: str, priority: int) -> list[ThinkingSignal]:
    """Signals from a chat_template_kwargs object (dict or JSON text)."""
    obj = value
    if isinstance(value, str):
        try:
            obj = json.loads(value)
        except json.JSONDecodeError:
            return []
    if not isinstance(obj, dict):
        return []
    out: list[ThinkingSignal] = []
    for key in _KWARG_KEYS:
        if key in obj and (t := truth(obj[key])) is not None:
            out.append(ThinkingSignal("on" if t else "off", f"{source} {key}={obj[key]!r}".replace("'", '"'), priority))
    level = _effort_level(obj.get(_EFFORT_KEY))
    if level is not None and not any(s.mode == "off" for s in out):
        # one object, one mode: {"thinking": true, "reasoning_effort": "high"} is reasoning_effort_high
        said = "; ".join([s.source for s in out] + [f"{source} {_EFFORT_KEY}={obj[_EFFORT_KEY]!r}".replace("'", '"')])
        out = [ThinkingSignal(level, said, priority)]
    return out


#: Settings (env variables, flags, recipe keys) that set a default thinking mode (Dynamo's
#: ``DYN_DEFAULT_THINKING_MODE`` is a deployment default that a request's own controls override).
_SETTINGS: dict[str, int] = {
    "SGLANG_DEFAULT_THINKING": 2, "SGLANG_ENABLE_THINKING": 2, "DYN_DEFAULT_THINKING_MODE": 3,
    "dyn-default-thinking-mode": 3, "--dyn-default-thinking-mode": 3, "THINKING_MODE": 0,
}
_KWARG_SETTINGS: dict[str, int] = {
    "default-chat-template-kwargs": 3, "--default-chat-template-kwargs": 3, "default_chat_template_kwargs": 3,
    "chat-template-kwargs": REQUEST, "--chat-template-kwargs": REQUEST, "chat_template_kwargs": REQUEST,
}
#: Settings that name a reasoning level directly (a request field, like per-request kwargs).
_EFFORT_SETTINGS: dict[str, int] = {"reasoning_effort": REQUEST, "reasoning-effort": REQUEST,
                                    "--reasoning-effort": REQUEST, "REASONING_EFFORT": REQUEST}
_CHAT_TEMPLATE_NAMES = ("--chat-template", "chat-template", "chat_template")
#: Every setting name :func:`thinking_from_setting` reads (a launch flag, an environment variable, a config key).
SETTING_NAMES: tuple[str, ...] = (*_SETTINGS, *_KWARG_SETTINGS, *_EFFORT_SETTINGS, *_CHAT_TEMPLATE_NAMES,
                                  "AIPERF_EXTRA_INPUTS")


def is_thinking_setting(name: str) -> bool:
    """Whether :func:`thinking_from_setting` can find a signal in a setting of this name."""
    return name in SETTING_NAMES


def _template_signal(name: str, value: str, where: str) -> list[ThinkingSignal]:
    """A chat template's file name that says thinking or no thinking."""
    base = PurePath(value.replace("\\", "/")).name.lower()
    if not base.endswith((".jinja", ".jinja2", ".j2")):
        return []
    if re.search(r"(^|[_-])(no[_-]?think(ing)?|non[_-]?thinking|nothink)([_.-]|$)", base):
        return [ThinkingSignal("off", f"{where}{name} {PurePath(value).name}", 1)]
    if re.search(r"(^|[_-])think(ing)?([_.-]|$)", base):
        return [ThinkingSignal("on", f"{where}{name} {PurePath(value).name}", 1)]
    return []


def thinking_from_setting(name: str, value: Any, where: str) -> list[ThinkingSignal]:
    """Signals from one named setting (empty when the name is not a thinking setting)."""
    if name in _KWARG_SETTINGS:
        return thinking_from_kwargs(value, f"{where}{name}", _KWARG_SETTINGS[name])
    if name in _EFFORT_SETTINGS:
        level = _effort_level(value)
        return [ThinkingSignal(level, f"{where}{name}={value}", _EFFORT_SETTINGS[name])] if level else []
    if name == "THINKING_MODE":
        mode = {"thinking_on": "on", "on": "on", "thinking_off": "off", "off": "off"}.get(str(value).strip().lower())
        return [ThinkingSignal(mode, f"{where}THINKING_MODE={value}", 0)] if mode else []
    if name in _SETTINGS:
        t = truth(value)
        return [] if t is None else [ThinkingSignal("on" if t else "off", f"{where}{name}={value}", _SETTINGS[name])]
    if name == "AIPERF_EXTRA_INPUTS" and isinstance(value, str):
        out: list[ThinkingSignal] = []
        for item in re.split(r"[\s,]+", value):
            key, _, val = item.partition(":")
            if key in _KWARG_KEYS and (t := truth(val)) is not None:
                out.append(ThinkingSignal("on" if t else "off", f"{where}AIPERF_EXTRA_INPUTS {item}", REQUEST))
        return out
    if name in _CHAT_TEMPLATE_NAMES and isinstance(value, str):
        return _template_signal(name, value, where)
    return []


def resolve_thinking(signals: Sequence[ThinkingSignal]) -> tuple[str | None, str]:
    """(mode, how): the mode of the strongest signals (None when they conflict), thinking on when none says."""
    if not signals:
        return "on", ("assumed: nothing in the config sets the thinking mode; thinking on assumed "
                      "(InferenceX's THINKING_MODE default and the models' chat-template default)")
    top = max(s.priority for s in signals)
    best = [s for s in signals if s.priority == top]
    modes = {s.mode for s in best}
    sources = "; ".join(dict.fromkeys(s.source for s in best))
    if len(modes) > 1:
        return None, f"conflicting settings: {sources}"
    mode = best[0].mode
    overridden = [s for s in signals if s.priority < top and s.mode != mode]
    if overridden:
        sources += " (overrides " + "; ".join(dict.fromkeys(s.source for s in overridden)) + ")"
    return mode, sources

