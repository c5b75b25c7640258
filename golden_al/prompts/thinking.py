"""Thinking presets per model family (``thinking_presets.yaml``), torch-free.

A preset says which ``chat_template_kwargs`` turn a chat template's thinking mode
on or off (``enable_thinking``, ``thinking``, ``reasoning_effort``,
``thinking_mode``, ...) and the sampling the provider recommends per mode. The
reference engine passes the kwargs to ``tokenizer.apply_chat_template``; server
clients send them as ``chat_template_kwargs`` over HTTP. Both use these functions,
so one model renders the same way everywhere.

>>> chat_template_kwargs_for("Qwen/Qwen3-8B", "on")
{'enable_thinking': True}
>>> family_for("qwen2.5-coder-1.5b-instruct")
'qwen2'
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError, UsageError

__all__ = [
    "PRESETS_FILE",
    "ThinkingMode",
    "ThinkingPreset",
    "chat_template_kwargs_for",
    "family_for",
    "get_preset",
    "load_presets",
    "normalize_thinking",
    "preset_for",
    "sampling_for",
]

PRESETS_FILE = Path(__file__).with_name("thinking_presets.yaml")


@dataclass(frozen=True)
class ThinkingMode:
    """One mode of a family: the template kwargs and the recommended sampling (may be empty)."""

    chat_template_kwargs: Mapping[str, Any]
    sampling: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ThinkingPreset:
    """A model family's thinking switch: ``on``/``off`` and any named levels (``reasoning_effort_high``)."""

    family: str
    description: str
    match: tuple[str, ...]
    model_types: tuple[str, ...]
    default: str
    modes: Mapping[str, ThinkingMode]
    source: str

    @property
    def has_thinking(self) -> bool:
        """True when the family has a thinking-on mode."""
        return "on" in self.modes

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


def normalize_thinking(value: str | bool) -> str:
    """``'on'``/``'off'`` (from on, off, True, thinking_on, true, 1, ...) or a level name (``reasoning_effort_high``)."""
    from golden_al.golden.schema import normalize_mode

    try:
        return normalize_mode(value)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


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


def get_preset(family: str) -> ThinkingPreset:
    """The preset of ``family``; UsageError listing the known families otherwise."""
    presets = load_presets()
    if family not in presets:
        raise UsageError(f"unknown model family {family!r}; known: {', '.join(presets)}")
    return presets[family]


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


def chat_template_kwargs_for(model_or_family: Any, thinking: str | bool | None) -> dict[str, Any]:
    """The ``chat_template_kwargs`` that select ``thinking`` for this model or family."""
    return preset_for(model_or_family).kwargs_for(thinking)


def sampling_for(model_or_family: Any, thinking: str | bool | None) -> dict[str, Any]:
    """The provider-recommended sampling for ``thinking`` (may be empty)."""
    return preset_for(model_or_family).sampling_for(thinking)
