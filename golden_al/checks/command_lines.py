"""Pins on a server command line kept as data: compose, Kubernetes and JSON launch configs.

A *scope* is a mapping that holds a command line and/or an environment:

* command line: ``entrypoint:``, ``command:``, ``args:``, ``argv:``, ``cmd:``,
  ``arguments:`` or any ``*args`` key, as a list of words or one string (split as a
  shell would; a word with spaces, such as the script of ``sh -c "..."``, is split too);
* environment: ``env:``, ``environment:``, ``envs:``, ``env_vars:`` as a mapping,
  a Kubernetes ``[{name, value}]`` list or compose ``KEY=VALUE`` items; a mapping whose
  own keys are an engine's knobs is an environment as well.

So a compose service, a Kubernetes container or a JSON launch spec is one scope. Each
engine whose profile declares :class:`~golden_al.plugin.profile.CommandLine` names its
knobs' spellings there and says what it makes of the scope's words and environment
(draft length, companions, model names); this module only finds them, with their lines.
Nothing here is engine knowledge.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from golden_al.plugin.pins import DraftInfo, ModelName, Pin, ThinkingSignal
from golden_al.plugin.profile import EngineProfile
from golden_al.plugin.registry import engine_names, get_profile
from golden_al.plugin.values import scalar_text
from golden_al.prompts.thinking import thinking_from_setting
from golden_al.recipes.derive import agentic_from_path

__all__ = ["ARGV_KEYS", "ENV_KEYS", "command_line_pins"]

ARGV_KEYS = ("entrypoint", "command", "args", "argv", "cmd", "arguments")
ENV_KEYS = ("env", "environment", "envs", "env_vars", "environment_variables")
#: Environment names a launch config commonly gives the served model (not engine knowledge).
_MODEL_ENV = ("SERVED_MODEL_NAME", "MODEL_NAME", "MODEL")

Path = tuple[str, ...]


@dataclass(frozen=True)
class _Word:
    text: str
    path: Path


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: plain whitespace split
        return text.split()


def _item_words(text: str) -> list[str]:
    """One list item: a word, or a command line of its own (the script of ``sh -c``)."""
    if not any(c.isspace() for c in text) or text.lstrip().startswith(("{", "[")):
        return [text]
    words = _split(text)
    return words if any(w.startswith("-") for w in words) else [text]


def _words(value: Any, path: Path) -> list[_Word]:
    if isinstance(value, str):
        return [_Word(t, path) for t in _split(value)]
    out: list[_Word] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            text = scalar_text(item)
            if text is None:
                continue
            p = (*path, str(i))
            out.extend(_Word(t, p) for t in _item_words(text))
    return out


def _is_argv_key(key: str) -> bool:
    k = key.lower().replace("-", "_")
    return k in ARGV_KEYS or (k.endswith(("args", "argv")) and not k.endswith("kwargs"))


def _env(value: Any, path: Path) -> dict[str, tuple[str | None, Path]]:
    out: dict[str, tuple[str | None, Path]] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out[str(k)] = (scalar_text(v), (*path, str(k)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            p = (*path, str(i))
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                # the line of ``value:`` (valueFrom: no value in this file)
                out[item["name"]] = (scalar_text(item.get("value")), (*p, "value") if "value" in item else p)
            elif isinstance(item, str) and "=" in item:
                name, _, val = item.partition("=")
                out[name.strip()] = (val.strip(), p)
    return out


def _profiles() -> list[EngineProfile]:
    return [p for p in (get_profile(n) for n in engine_names()) if p.check.command_line is not None]


def _sites(knobs: Mapping[str, str], words: Sequence[_Word], env: Mapping[str, tuple[str | None, Path]]
           ) -> list[tuple[str, str | None, Path, Path]]:
    """(spelling, value, path of the value, path of the knob) of every pinned value in one scope."""
    out: list[tuple[str, str | None, Path, Path]] = []
    for i, w in enumerate(words):
        name, eq, val = w.text.partition("=")
        if not name.startswith("-") or name not in knobs:
            continue
        if eq:
            out.append((name, val, w.path, w.path))
        elif i + 1 < len(words):
            out.append((name, words[i + 1].text, words[i + 1].path, w.path))
        else:
            out.append((name, None, w.path, w.path))
    # a Kubernetes ``{name, value}`` item: the knob is written at ``name``, its value at ``value``
    out += [(name, val, p, (*p[:-1], "name") if p and p[-1] == "value" else p) for name, (val, p) in env.items()
            if name in knobs]
    return out


def _thinking(words: Sequence[_Word], env: Mapping[str, tuple[str | None, Path]]) -> list[ThinkingSignal]:
    out: list[ThinkingSignal] = []
    for i, w in enumerate(words):
        name, eq, val = w.text.partition("=")
        if name.startswith("-"):
            value = val if eq else (words[i + 1].text if i + 1 < len(words) else "")
            out += thinking_from_setting(name, value, "the command line ")
    for name, (setting, _) in env.items():
        out += thinking_from_setting(name, setting, "the environment ")
    return out


def command_line_pins(nodes: Callable[[], Iterable[tuple[Path, Any]]], line_of: Callable[[Path], int],
                      file: str) -> list[Pin]:
    """Every pin on a command line or in an environment of a parsed YAML/JSON document.

    ``nodes()``: every ``(key path, value)`` of the document, parents first (walked once,
    and once more for the document's thinking settings when a pin is found); ``line_of``:
    the 1-based line of a key path.
    """
    profiles = _profiles()
    if not profiles:
        return []
    pins: list[Pin] = []
    for path, scope in nodes():
        if not isinstance(scope, dict):
            continue
        words: list[_Word] = []
        env: dict[str, tuple[str | None, Path]] = {}
        keys: list[str] = []
        for key, value in scope.items():
            key = str(key)
            if _is_argv_key(key):
                got = _words(value, (*path, key))
                words += got
                keys += [key] if got else []
            elif key.lower() in ENV_KEYS:
                got_env = _env(value, (*path, key))
                env.update(got_env)
                keys += [key] if got_env else []
        own_env = not (path and path[-1].lower() in ENV_KEYS)  # an env block is read with its parent
        for profile in profiles:
            assert profile.check.command_line is not None
            knobs = profile.check.command_line.value_knobs
            scope_env = dict(env)
            if own_env:
                scope_env.update({k: v for k, v in _env(scope, path).items() if k in knobs})
            sites = _sites(knobs, words, scope_env)
            if not sites:
                continue
            args = [w.text for w in words]
            env_values = {name: val for name, (val, _) in scope_env.items() if val is not None}
            reading = profile.check.command_line.read(args, env_values)
            thinking = _thinking(words, scope_env)
            models = [ModelName(m, f"the {profile.display_name} command line") for m in reading.models]
            models += [ModelName(env_values[n], f"the environment {n}") for n in _MODEL_ENV if env_values.get(n)]
            where = "/".join(keys) or "the keys"
            for spelling, raw, value_path, knob_path in sites:
                unresolved = None
                if raw is None:
                    unresolved = f"{spelling} has no value"
                elif "$" in raw:
                    unresolved = f"{spelling} is {raw}, set outside this file"
                draft = DraftInfo(problem=f"{reading.draft_problem} ({where} of this config)") if reading.draft is None \
                    else DraftInfo(k=reading.draft.k, rule=f"{profile.display_name} {reading.draft.rule} in {where}",
                                   chain=reading.draft.chain)
                pin = Pin(file=file, line=line_of(value_path), engine=profile.name, knob=knobs[spelling],
                          raw_value=None if unresolved else raw, unresolved=unresolved, algorithm=reading.algorithm,
                          draft=draft, thinking=list(thinking), models=list(models),
                          draft_model=reading.draft_model, agentic=agentic_from_path(file))
                pin.use_line = line_of(knob_path)
                pin.problems.extend(reading.problems)
                pin.notes.append(f"{profile.display_name} settings in {where} of a config"
                                 + (f" at {'.'.join(path)}" if path else ""))
                pins.append(pin)
    if pins:  # the document's own thinking settings (weaker ones lose in check's resolution)
        doc_thinking = [s for p, v in nodes() if p for s in thinking_from_setting(p[-1], v, "")]
        for pin in pins:
            pin.thinking += doc_thinking
    return pins
