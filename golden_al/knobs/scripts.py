"""Pins in shell scripts (InferenceX ``benchmarks/**/*.sh``), read statically.

A *site* is where a knob literally appears in the source: an assignment or export of
``SGLANG_SIMULATE_ACC_LEN`` / ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` (or those
names inside a string, e.g. an env prefix built for a launch command), a
``--speculative-config`` JSON with ``synthetic_acceptance_*`` (also built with
``printf``), ATOM's ``--spec-decode-acceptance-length`` / ``-rate`` flag, or llama.cpp's
``--spec-synth-len`` / ``--spec-synth-rates`` (or their ``LLAMA_ARG_SPEC_SYNTH_*`` env form). The
script is walked over every feasible path (:mod:`golden_al.shell`) with
``EVAL_ONLY=false`` and ``RUN_EVAL=false`` (throughput runs; evals use real
acceptance); each path that reaches a site yields a pin, resolved against the flags and
variables of that same path (``--speculative-num-steps``, ``--num-speculative-tokens``,
here-document ``max_draft_len``, ``SGLANG_DEFAULT_THINKING``, ...). Identical pins
from several paths become one finding that names the path conditions.

The legacy ``SIMULATE_ACC_LEN`` counts only when exported or passed as an environment
prefix (a plain shell variable of that name, as in ATOM scripts, is not a pin).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from golden_al.knobs.census import _alternation
from golden_al.knobs.names import CONFIG_KEYS, CONFIG_KNOBS, FLAG_KNOBS, env_pin_context
from golden_al.plugin.pins import (
    AgenticInfo,
    DraftInfo,
    ModelName,
    Pin,
    PinSite,
    ThinkingSignal,
    clean,
    value_of,
)
from golden_al.plugin.profile import CommandLine
from golden_al.plugin.registry import (
    companion_env_names,
    engine_names,
    env_knobs,
    get_profile,
    load_hook,
)
from golden_al.plugin.spec import config_json, settings_draft, settings_draft_any_algorithm
from golden_al.prompts.thinking import SETTING_NAMES, thinking_from_setting
from golden_al.recipes.derive import agentic_from_flag, agentic_from_path
from golden_al.shell import (
    MAX_STATES,
    AndOr,
    ArrayAssign,
    Case,
    Cmd,
    Expander,
    FuncDef,
    Group,
    If,
    Loop,
    Node,
    State,
    Walker,
    harden,
    has_unknown,
    is_soft,
    iter_cmds,
    origin_of,
    parse_script,
    show,
    unknown_names,
)

__all__ = ["extract_shell_pins"]

#: every registered engine's environment-variable knobs (each spelling) and their companions, from the profiles
_ENV_KNOBS = tuple(env_knobs())
_ENV_COMPANIONS = tuple(sorted(companion_env_names()))
_ENV_PIN = re.compile(r"(?<![A-Za-z0-9_])(" + _alternation(_ENV_KNOBS) + ")=")


def _config_pin_rx(engine: str) -> re.Pattern[str]:
    """One engine's config-key knob (vLLM's ``synthetic_acceptance_length``...) or config switch set on
    (``rejection_sample_method`` ... ``synthetic``)."""
    parts = [re.escape(k) + r"\b" for k in CONFIG_KEYS if CONFIG_KNOBS[k] == engine]
    for knob in get_profile(engine).check.synthetic_knobs:
        if knob.kind == "config-key" and knob.switch_value is not None:
            parts.append(rf"{re.escape(knob.name)}[\\\"' :=]+{re.escape(knob.switch_value)}")
    return re.compile("|".join(parts))


#: each engine that keeps its knobs in a speculative config (vLLM), and what marks a pin of it
_CONFIG_PINS = tuple((engine, _config_pin_rx(engine)) for engine in dict.fromkeys(CONFIG_KNOBS.values()))
#: any of them (a cheap test for a site)
_CONFIG_PIN = re.compile("|".join(rx.pattern for _, rx in _CONFIG_PINS) or r"(?!)")
#: flag knobs (ATOM's, llama.cpp's) -> their engine; their environment forms (llama.cpp ``LLAMA_ARG_*``) -> engine
_FLAG_KNOBS = FLAG_KNOBS
_FLAG_ENV = {k.env: name for name in engine_names() for k in get_profile(name).check.synthetic_knobs
             if k.kind == "flag" and k.env}
_LLAMACPP_ENV = tuple(_FLAG_ENV)
_STRING_PIN = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, _ENV_KNOBS)) + r")=(\S*)")
_STRING_COMPANION = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, _ENV_COMPANIONS)) + r")=(\S*)")
#: the thinking settings a script sets as launch flags and as environment variables
_THINKING_FLAGS = tuple(n for n in SETTING_NAMES if n.startswith("--"))
_THINKING_ENV = tuple(n for n in SETTING_NAMES if n.isupper())
_FLAGS = (
    *(f for name in engine_names() for f in get_profile(name).check.script_flags),
    "--model-path", "--model", "--served-model-name", "--dspark-config", "--reasoning-parser", *_THINKING_FLAGS,
    *_FLAG_KNOBS,
)
_HEREDOC_KEYS = tuple(k for name in engine_names() for k in get_profile(name).check.script_config_keys)
#: short flags of an engine's executable (llama-server ``-m``) -> (executable, long flag)
_SHORT_FLAGS = {short: (p.launch.executable, long) for name in engine_names() if (p := get_profile(name)).launch.executable
                for short, long in p.check.short_flags.items()}
_ENV_NAMES = (*_THINKING_ENV, "IS_AGENTIC", "MODEL", "MODEL_PATH", "MODEL_PREFIX", "SERVED_MODEL_NAME", "DRAFT_MODEL",
              "DRAFT_MODEL_PATH", *_ENV_COMPANIONS,
              *(var for name in engine_names() for var in get_profile(name).check.pin_env))
_ASSUME = {"EVAL_ONLY": "false", "RUN_EVAL": "false"}
#: InferenceX single-node scripts: ``<model-prefix>_<precision>_<gpu>[_<framework>][_mtp].sh``
#: (runners/launch_*.sh build ``${EXP_NAME%%_*}_${PRECISION}_<gpu>...``).
_SCRIPT_NAME = re.compile(r"^([A-Za-z0-9.\-]+)_(fp4|fp8|bf16|fp16|int4|int8|mxfp4|nvfp4|mxfp8|w4a8|w4a16|w8a8)_")
_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


# ------------------------------------------------------------------- site finding


def _cmd_texts(cmd: Cmd) -> list[str]:
    out = [w.raw for w in cmd.words]
    for _, _, v in cmd.assigns:
        out.extend([w.raw for w in v.items] if isinstance(v, ArrayAssign) else [v.raw])
    out.extend(h.body for h in cmd.heredocs)
    return out


_SITE_TEXT = re.compile("|".join([
    _ENV_PIN.pattern, _CONFIG_PIN.pattern, _alternation((*_FLAGS, *_LLAMACPP_ENV)),
    r"\b(?:" + _alternation(_HEREDOC_KEYS) + r")\s*:", r"\b(?:" + _alternation(_ENV_NAMES) + r")=",
]))
_SITE_NAMES = frozenset((*_ENV_NAMES, *(k for k, ek in env_knobs().items() if not ek.legacy), *_LLAMACPP_ENV))


@dataclass(frozen=True)
class _ProfileReader:
    """A registered engine that no hand-written reader of this module covers, read through its
    profile's :class:`~golden_al.plugin.profile.CommandLine`: its value knobs (environment
    spellings and flags) are sites, and its launch line (its executable, or its launch module)
    is handed to ``command_line.read`` for k, the algorithm and the model."""

    engine: str
    env: frozenset[str]
    flags: frozenset[str]
    markers: tuple[str, ...]  #: the executable's name, or the module after ``python -m``
    command_line: CommandLine

    def launches(self, words: list[str]) -> bool:
        """Whether ``words`` start the engine's server (``toy-serve ...``, ``python -m mod ...``)."""
        heads = [PurePath(w).name for w in words[:3]]
        return any(m in heads or m in words[:4] for m in self.markers)


@functools.cache
def _profile_readers() -> tuple[_ProfileReader, ...]:
    """Every registered engine whose knobs the hand-written readers here do not know, with a
    declared command line (an engine without one stays ``unresolved`` in ``check``)."""
    known = {*_SITE_NAMES, *_FLAGS, *_ENV_KNOBS, *CONFIG_KEYS}
    out = []
    for name in engine_names():
        profile = get_profile(name)
        line = profile.check.command_line
        if line is None or set(line.value_knobs) & known:
            continue
        markers = tuple(m for m in (profile.launch.executable, *profile.launch.launch_command[1:2]) if m)
        out.append(_ProfileReader(name, frozenset(k for k in line.value_knobs if not k.startswith("-")),
                                  frozenset(k for k in line.value_knobs if k.startswith("-")), markers, line))
    return tuple(out)


def _profile_site(cmd: Cmd) -> bool:
    """Whether ``cmd`` assigns, exports, passes or launches a profile-read engine's knob or server."""
    readers = _profile_readers()
    if not readers:
        return False
    texts = _cmd_texts(cmd)
    for r in readers:
        if any(n in r.env for n, _, _ in cmd.assigns):
            return True
        if any(k in t for t in texts for k in (*r.env, *r.flags)):
            return True
        if r.launches([w.raw.strip("'\"") for w in cmd.words]):
            return True
    return False


def _is_site(cmd: Cmd) -> bool:
    if any(n in _SITE_NAMES for n, _, _ in cmd.assigns):
        return True
    return any(_SITE_TEXT.search(text) for text in _cmd_texts(cmd)) or _profile_site(cmd)


def _relevant_refs(cmd: Cmd) -> set[str]:
    """Variables whose values a site uses (values of relevant flags, pin texts)."""
    refs: set[str] = set()
    for name, _, v in cmd.assigns:
        if name in _ENV_NAMES or name in (*_ENV_KNOBS, *_LLAMACPP_ENV):
            texts = [w.raw for w in v.items] if isinstance(v, ArrayAssign) else [v.raw]
            for t in texts:
                refs |= set(_REF.findall(t))
    seqs: list[list[str]] = [[w.raw for w in cmd.words]]
    seqs += [[w.raw for w in v.items] for _, _, v in cmd.assigns if isinstance(v, ArrayAssign)]
    for seq in seqs:
        for i, w in enumerate(seq):
            if _ENV_PIN.search(w) or _CONFIG_PIN.search(w):
                refs |= set(_REF.findall(w))
            flag = w.split("=", 1)[0]
            if flag in _FLAGS:
                if "=" in w:
                    refs |= set(_REF.findall(w))
                elif i + 1 < len(seq):
                    refs |= set(_REF.findall(seq[i + 1]))
    for _, _, v in cmd.assigns:
        if isinstance(v, ArrayAssign):
            continue
        if _ENV_PIN.search(v.raw) or _CONFIG_PIN.search(v.raw):
            refs |= set(_REF.findall(v.raw))
        elif any(f in v.raw for f in _FLAGS):
            toks = v.raw.split()
            for i, t in enumerate(toks):
                if t.split("=", 1)[0].strip("'\"") in _FLAGS:
                    refs |= set(_REF.findall(t if "=" in t else (toks[i + 1] if i + 1 < len(toks) else "")))
    for h in cmd.heredocs:
        for line in h.body.splitlines():
            if any(re.match(rf"\s*{k}\s*:", line) for k in _HEREDOC_KEYS):
                refs |= set(_REF.findall(line))
    if _profile_site(cmd):  # a profile-read engine: its command line is read whole
        refs |= {r for t in _cmd_texts(cmd) for r in _REF.findall(t)}
    return refs


def _cmd_lines(cmd: Cmd) -> set[int]:
    lines = {cmd.line, *(w.line for w in cmd.words), *(h.line for h in cmd.heredocs)}
    for _, _, v in cmd.assigns:
        lines.add(v.line)
        if isinstance(v, ArrayAssign):
            lines.update(w.line for w in v.items)
    return lines


class _Relevance:
    """Which variables and compound statements matter for the sites (to prune forks).

    A site is a command that mentions a knob or a setting around it as written, or one on a line
    where the census (:mod:`golden_al.knobs.census`) found a knob after decoding (a name in
    quotes, assembled from variables, or a variable that holds ``NAME=value``)."""

    def __init__(self, nodes: list[Node], census_lines: frozenset[int] = frozenset()) -> None:
        cmds = list(iter_cmds(nodes))
        self.sites = {id(c) for c in cmds if _is_site(c) or (census_lines and _cmd_lines(c) & census_lines)}
        self.vars: set[str] = set(_ASSUME) | {"IS_AGENTIC"}
        for c in cmds:
            if id(c) in self.sites:
                self.vars |= _relevant_refs(c)
        self.funcs: dict[str, list[Node]] = {}
        self._collect_funcs(nodes)
        for _ in range(6):
            before = len(self.vars)
            for c in cmds:
                for name, _, v in c.assigns:
                    if name in self.vars:
                        texts = [w.raw for w in v.items] if isinstance(v, ArrayAssign) else [v.raw]
                        for t in texts:
                            self.vars |= set(_REF.findall(t))
                if c.words and c.words[0].raw in ("export", "local", "declare", "readonly"):
                    for w in c.words[1:]:
                        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", w.raw)
                        if m and m.group(1) in self.vars:
                            self.vars |= set(_REF.findall(m.group(2)))
            self._cache: dict[int, bool] = {}
            for n in _compound(nodes):
                if self.relevant(n):
                    self.vars |= _cond_refs(n)
            if len(self.vars) == before:
                break
        self._cache = {}

    def _collect_funcs(self, nodes: Iterable[Node]) -> None:
        for n in nodes:
            if isinstance(n, FuncDef):
                self.funcs[n.name] = n.body
            for child in _children(n):
                self._collect_funcs([child])

    def relevant(self, node: Node, depth: int = 0) -> bool:
        key = id(node)
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = False  # recursion guard
        result = False
        if depth < 12:
            for c in _all_cmds(node):
                if id(c) in self.sites or any(name in self.vars for name, _, _ in c.assigns):
                    result = True
                    break
                if c.words and c.words[0].raw in ("export", "local", "declare") and any(
                        re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", w.raw) and w.raw.split("=")[0] in self.vars
                        for w in c.words[1:]):
                    result = True
                    break
                if c.words and c.words[0].raw in self.funcs and any(
                        self.relevant(b, depth + 1) for b in self.funcs[c.words[0].raw]):
                    result = True
                    break
        self._cache[key] = result
        return result


def _children(node: Node) -> list[Node]:
    if isinstance(node, If):
        out: list[Node] = []
        for cond, body in node.branches:
            out += cond + body
        return out + (node.orelse or [])
    if isinstance(node, Case):
        return [n for _, body in node.arms for n in body]
    if isinstance(node, (Loop, FuncDef, Group)):
        return list(node.body)
    if isinstance(node, AndOr):
        return list(node.items)
    return []


def _all_cmds(node: Node) -> Iterable[Cmd]:
    return iter_cmds([node])


def _compound(nodes: Iterable[Node]) -> Iterable[Node]:
    for n in nodes:
        if isinstance(n, (If, Case, AndOr)):
            yield n
        yield from _compound(_children(n))


def _cond_refs(node: Node) -> set[str]:
    refs: set[str] = set()
    if isinstance(node, If):
        for cond, _ in node.branches:
            for c in iter_cmds(cond):
                for w in c.words:
                    refs |= set(_REF.findall(w.raw))
    elif isinstance(node, Case) and node.subject is not None:
        refs |= set(_REF.findall(node.subject.raw))
    elif isinstance(node, AndOr):
        for c in iter_cmds(node.items[:-1]):
            for w in c.words:
                refs |= set(_REF.findall(w.raw))
    return refs


# ------------------------------------------------------------------------ visiting


def _flags_in(words: list[str]) -> list[tuple[str, str]]:
    out = []
    for i, w in enumerate(words):
        flag, eq, val = w.partition("=")
        if flag in _FLAGS:
            if eq:
                out.append((flag, val))
            elif i + 1 < len(words):
                out.append((flag, words[i + 1]))
            else:  # a boolean flag ends the command (--speculative-use-block-verification)
                out.append((flag, ""))
    # llama-server's short model flag (-m is too common a substring to be a site marker)
    for i, w in enumerate(words[:-1]):
        if w in _SHORT_FLAGS and any(x.endswith(str(_SHORT_FLAGS[w][0])) for x in words[:i]):
            out.append((_SHORT_FLAGS[w][1], words[i + 1]))
    # `vllm serve MODEL` and `trtllm-serve MODEL`: the positional model
    for i, w in enumerate(words[:-1]):
        if (w == "serve" and i > 0 and words[i - 1].endswith("vllm")) or w.endswith("trtllm-serve"):
            nxt = words[i + 1]
            if not nxt.startswith("-"):
                out.append(("--model", nxt))
    return out


class _Visitor:
    """Records flags and pin sites on each path (as hashable notes on the state)."""

    def __init__(self, relevance: _Relevance) -> None:
        self.rel = relevance

    def __call__(self, cmd: Cmd, state: State, walker: Walker) -> None:
        if id(cmd) not in self.rel.sites:
            return
        ex = Expander(state)
        words: list[str] = []
        for w in cmd.words:
            words.extend(ex.expand_word_list(w.raw))
        arrays: list[list[str]] = []
        for name, _, v in cmd.assigns:
            if isinstance(v, ArrayAssign):
                value = state.env.get(name)
                arrays.append(list(value) if isinstance(value, tuple) else [])
        for name, _, v in cmd.assigns:  # flags inside a command line kept in a string
            if not isinstance(v, ArrayAssign) and any(f in v.raw for f in _FLAGS):
                value = state.env.get(name)
                if isinstance(value, str):
                    arrays.append(value.split())
        for seq in [words, *arrays]:
            found = _flags_in(seq)
            for flag, value in found:
                state.notes.append(("flag", flag, value, cmd.line))
            if found:  # words set at run time in a launch line may hold more flags
                for i, token in enumerate(seq):
                    if (has_unknown(token) and not token.startswith("-") and not (i and seq[i - 1].startswith("-"))
                            and not show(token).startswith("$(")):
                        state.notes.append(("opaque", show(token)))
        for h in cmd.heredocs:
            body = ex.expand_text(h.body, quoted=True) if h.expand else h.body
            for i, line in enumerate(body.splitlines()):
                m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(\S.*?)\s*$", line)
                if m and m.group(1) in _HEREDOC_KEYS:
                    state.notes.append(("flag", m.group(1), m.group(2), h.line + i))
                elif m and m.group(1) in ("chat_template_kwargs", "default_chat_template_kwargs"):
                    state.notes.append(("flag", "--" + m.group(1).replace("_", "-"), m.group(2), h.line + i))
        self._sites(cmd, state, ex, words, arrays)
        self._profile_sites(cmd, state, ex, words)

    def _profile_sites(self, cmd: Cmd, state: State, ex: Expander, words: list[str]) -> None:
        """Pins and launch lines of the engines read through their profiles (:func:`_profile_readers`)."""
        head = words[0] if words else ""
        for r in _profile_readers():
            for name, _, v in cmd.assigns:
                if name in r.env and not isinstance(v, ArrayAssign):
                    value = state.env.get(name)
                    text = value if isinstance(value, str) else ""
                    state.notes.append(("pin", "engine:" + r.engine, name, v.line, text,
                                        "prefix" if words and head != "export" else "assign",
                                        origin_of(v.raw, v.line, state, _literal(text))))
            if head in ("export", "env", "declare", "typeset"):
                for w in cmd.words[1:]:
                    for word in ex.expand_word_list(w.raw):
                        name, eq, value = word.partition("=")
                        if eq and name in r.env:
                            state.notes.append(("pin", "engine:" + r.engine, name, w.line, value, "export",
                                                origin_of(w.raw, w.line, state, _literal(value))))
                            state.exported.add(name)
            if r.launches(words):
                state.notes.append(("launch", r.engine, tuple(words), cmd.line))
                for i, text in enumerate(words):
                    flag, eq, given = text.partition("=")
                    if flag in r.flags:
                        given = given if eq else (words[i + 1] if i + 1 < len(words) else "")
                        state.notes.append(("pin", "engine:" + r.engine, flag, cmd.line, given, "",
                                            origin_of(given, cmd.line, state, _literal(given))))

    def _sites(self, cmd: Cmd, state: State, ex: Expander, words: list[str], arrays: list[list[str]]) -> None:
        head = words[0] if words else ""
        exported_stmt = head in ("export", "declare", "typeset") or (bool(cmd.assigns) and bool(words)
                                                                    and head not in ("local", "readonly"))
        # 1. assignments of the knobs themselves
        for name, _, v in cmd.assigns:
            if isinstance(v, ArrayAssign):
                continue
            if name in _LLAMACPP_ENV:
                value = state.env.get(name)
                text = value if isinstance(value, str) else ""
                state.notes.append(("pin", _FLAG_ENV[name], name, v.line, text, "env",
                                    origin_of(v.raw, v.line, state, _literal(text))))
                continue
            env_knob = env_knobs().get(name)
            if env_knob is not None and (not env_knob.legacy or exported_stmt):
                value = state.env.get(name)
                text = value if isinstance(value, str) else ""
                state.notes.append(("pin", "env", name, v.line, text,
                                    "prefix" if words and head not in ("export",) else "assign",
                                    origin_of(v.raw, v.line, state, _literal(text))))
            elif _ENV_PIN.search(v.raw):  # NAME=... inside a string value
                text = ex.expand_text(v.raw, quoted=False)
                self._string_pins(text, v.raw, v.line, state)
            self._config_pins(v.raw, v.line, state, ex)
        # 2. words: export NAME=..., env NAME=..., JSON configs, ATOM flags
        for w in cmd.words:
            raw = w.raw
            m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", raw)
            if not m and head in ("export", "env", "declare", "typeset"):
                self._expanded_export(w, state, ex)
                continue
            if m and m.group(1) in _ENV_KNOBS and (
                    head in ("export", "env", "declare")):
                name = m.group(1)
                value = ex.expand_text(raw[m.end():], quoted=False)
                state.notes.append(("pin", "env", name, w.line, value, "export",
                                    origin_of(raw[m.end():], w.line, state, _literal(value))))
                state.exported.add(name)
            elif m and m.group(1) in _LLAMACPP_ENV and head in ("export", "env", "declare"):
                value = ex.expand_text(raw[m.end():], quoted=False)
                state.notes.append(("pin", _FLAG_ENV[m.group(1)], m.group(1), w.line, value, "export",
                                    origin_of(raw[m.end():], w.line, state, _literal(value))))
            elif _ENV_PIN.search(raw) and not m and head == "env":
                self._string_pins(ex.expand_text(raw, quoted=False), raw, w.line, state)
            self._config_pins(raw, w.line, state, ex)
        items = [(w, cmd.words) for w in cmd.words]
        for _, _, v in cmd.assigns:
            if isinstance(v, ArrayAssign):
                items += [(w, list(v.items)) for w in v.items]
                for w in v.items:
                    self._config_pins(w.raw, w.line, state, ex)
        for w, seq in items:
            flag = w.raw.strip("'\"").split("=", 1)[0]
            if flag in _FLAG_KNOBS:
                if "=" in w.raw:
                    value = ex.expand_text(w.raw, quoted=False).split("=", 1)[1]
                    where = (w.raw, w.line)
                else:
                    idx = seq.index(w)
                    value = ex.expand_text(seq[idx + 1].raw, quoted=False) if idx + 1 < len(seq) else ""
                    where = (seq[idx + 1].raw, seq[idx + 1].line) if idx + 1 < len(seq) else (w.raw, w.line)
                state.notes.append(("pin", _FLAG_KNOBS[flag], flag, w.line, value, "",
                                    origin_of(where[0], where[1], state, _literal(value))))

    def _config_pins(self, raw: str, line: int, state: State, ex: Expander) -> None:
        """A pin of each engine whose config-held knob ``raw`` writes (a JSON config in a word or an assignment),
        at the line of the knob."""
        for engine, rx in _CONFIG_PINS:
            if m := rx.search(raw):
                use = line + raw[:m.start()].count("\n")
                text = ex.expand_text(raw, quoted=False)
                state.notes.append(("pin", engine, "", use, text, "",
                                    origin_of(raw, use, state, _config_value(text, engine))))

    def _expanded_export(self, w: Any, state: State, ex: Expander) -> None:
        """``export "NAME"="v"``, ``export 'NAME=v'``, ``export "$KV"``: the word as bash passes it to
        ``export`` (quotes removed, variables expanded) names the knob."""
        for word in ex.expand_word_list(w.raw):
            m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", word)
            if not m:
                continue
            name, value = m.group(1), word[m.end():]
            if name in _ENV_KNOBS:
                state.notes.append(("pin", "env", name, w.line, value, "export",
                                    origin_of(w.raw, w.line, state, _literal(value))))
                state.exported.add(name)
            elif name in _LLAMACPP_ENV:
                state.notes.append(("pin", _FLAG_ENV[name], name, w.line, value, "export",
                                    origin_of(w.raw, w.line, state, _literal(value))))

    def _string_pins(self, text: str, raw: str, line: int, state: State) -> None:
        for m in _STRING_PIN.finditer(text):
            comps = dict(_STRING_COMPANION.findall(text))
            state.notes.append(("pin", "env", m.group(1), line, m.group(2),
                                "string:" + ";".join(f"{k}={v}" for k, v in sorted(comps.items())),
                                origin_of(raw, line, state, _literal(m.group(2)))))


def _literal(text: str | None) -> str | None:
    """The pinned value as a finding shows it (None while it holds an unknown part)."""
    if not text or has_unknown(text):
        return None
    return harden(text).strip().strip("'\"") or None


def _config_value(text: str, engine: str) -> str | None:
    """The synthetic-acceptance value of ``engine``'s config in ``text``, as written."""
    cfg = config_json(text)
    if cfg is None:
        return None
    raw = next((cfg[k] for k in CONFIG_KEYS if CONFIG_KNOBS[k] == engine and k in cfg), None)
    if raw is None or isinstance(raw, (list, dict)):
        return None
    return _literal(str(raw))


# ------------------------------------------------------------------------- resolving


def _flags(state: State) -> dict[str, str]:
    out: dict[str, str] = {}
    for note in state.notes:
        if isinstance(note, tuple) and note[0] == "flag":
            out[str(note[1])] = str(note[2])
    return out


def _env(state: State, name: str) -> str | None:
    v = state.env.get(name)
    if v is None or isinstance(v, tuple):
        return None
    return v


def _models(state: State, flags: dict[str, str], path: str) -> list[ModelName]:
    out: list[ModelName] = []

    def add(value: str | None, source: str) -> None:
        if value and not has_unknown(value):
            value = harden(value).strip().strip("'\"")
            if value and re.search(r"[A-Za-z0-9]", value) and value not in [m.name for m in out]:
                out.append(ModelName(value, source))

    add(flags.get("--served-model-name"), "--served-model-name")
    add(flags.get("--model-path"), "--model-path")
    add(flags.get("--model"), "--model")
    for name in ("SERVED_MODEL_NAME", "MODEL", "MODEL_PATH", "MODEL_PREFIX"):
        add(_env(state, name), f"${name}")
    model_vars = {"SERVED_MODEL_NAME", "MODEL", "MODEL_PATH", "MODEL_PREFIX", "MODEL_NAME"}
    for flag in ("--served-model-name", "--model-path", "--model"):
        model_vars |= set(unknown_names(flags.get(flag) or ""))
    for name, glob, line in state.globs:
        if name in model_vars and re.search(r"[A-Za-z0-9]", glob) and glob not in [m.name for m in out]:
            out.append(ModelName(glob, f"the case arm at line {line} (${name} matches {glob})", pattern=True))
    m = _SCRIPT_NAME.match(PurePath(path).name)
    if m:
        out.append(ModelName(m.group(1), "the script's file-name prefix (InferenceX runners name scripts "
                                         "<model-prefix>_<precision>_<gpu>...)"))
    return out


def _thinking(state: State, flags: dict[str, str]) -> list[ThinkingSignal]:
    out: list[ThinkingSignal] = []
    for name in _THINKING_ENV:
        v = _env(state, name)
        if v is not None and not has_unknown(v):
            out += thinking_from_setting(name, harden(v), "")
    for flag in _THINKING_FLAGS:
        v = flags.get(flag)
        if v is not None and not has_unknown(v):
            out += thinking_from_setting(flag, harden(v), "")
    return out


def _make_pin(note: tuple[Any, ...], state: State, path: str) -> Pin | None:
    _, kind, knob, line, text, how, _value_line = note
    flags = _flags(state)
    conds = [c for c in state.conds if "EVAL_ONLY" not in c and "RUN_EVAL" not in c]
    models = _models(state, flags, path)
    thinking = _thinking(state, flags)
    agentic = agentic_from_path(path)
    flag = _env(state, "IS_AGENTIC")
    if flag is not None and not has_unknown(flag) and not is_soft(flag):
        agentic = agentic_from_flag(flag, "path assumes ") or agentic
    else:
        taken = [c for c in state.conds if "IS_AGENTIC" in c and not c.startswith("not (")]
        if taken and all(re.search(r"IS_AGENTIC[^ ]* ==? \"?(1|true)", show(c)) for c in taken):
            agentic = AgenticInfo(True, f"the pin sits on the path where {show(taken[-1])}")
    if kind == "env":
        pin = _env_pin(knob, line, text, how, flags, state, path, models, thinking, agentic)
    elif kind.startswith("engine:"):
        pin = _profile_pin(kind.split(":", 1)[1], knob, line, text, state, path, models, thinking, agentic)
    else:  # an engine's own form of its knob (vLLM's JSON config, a llama.cpp or ATOM flag)
        site = PinSite(knob, line, text, flags, {k: v for k, v in state.env.items() if isinstance(v, str)}, path,
                       models, thinking, agentic)
        builder = get_profile(kind).check.script_pin
        assert builder is not None  # a note of this kind comes only from an engine with one
        pin = load_hook(builder)(site)
    if conds:
        pin.notes.append("on the path where " + "; ".join(_short(c) for c in conds[-4:]))
    return pin


def _env_pin(knob: str, line: int, text: str, how: str, flags: Mapping[str, str], state: State, path: str,
             models: list[ModelName], thinking: list[ThinkingSignal], agentic: AgenticInfo) -> Pin:
    """The pin of an engine's environment-variable knob: k, algorithm and draft from the engine's
    speculative settings among the launch flags (and config keys) on this path
    (:attr:`~golden_al.plugin.profile.CheckSupport.script_speculation`), its companions beside it."""
    env_knob = env_knobs()[knob]
    profile = get_profile(env_knob.engine)
    value, why = value_of(text)
    if value is None and text == "":
        value, why = None, f"{knob} has no value on this path"
    pin = Pin(file=path, line=line, engine=profile.name, knob=knob, raw_value=value, unresolved=why,
              models=models, thinking=thinking, agentic=agentic)
    spec = profile.check.script_speculation(flags) if profile.check.script_speculation is not None else None
    where = profile.check.script_settings or "the launch flags"
    pin.algorithm = show(spec.algorithm) if spec is not None and spec.algorithm else None
    hidden = sorted({str(n[1]) for n in state.notes if isinstance(n, tuple) and n[0] == "opaque"})
    if spec is not None and spec.algorithm is None and spec.settings and hidden and profile.check.algorithm_flag:
        pin.draft = settings_draft_any_algorithm(profile.name, spec, where, ", ".join(hidden[:3]))
    else:
        pin.draft = settings_draft(profile.name, spec, where)
    pin.draft_model = clean(spec.draft_model if spec is not None else None) or clean(_env(state, "DRAFT_MODEL"))
    if spec is not None:
        pin.spec.update(spec.review_spec)
    if how.startswith("string:"):
        set_there = dict(kv.split("=", 1) for kv in how[len("string:"):].split(";") if "=" in kv)
        companions, extra = env_pin_context(env_knob, set_there.get)
        pin.notes.append("set inside a string that is put in front of the launch command")
    else:
        def lookup(name: str) -> str | None:
            v = _env(state, name)
            return None if v is None else harden(v)

        companions, extra = env_pin_context(env_knob, lookup)
        if how == "assign" and knob not in state.exported:
            pin.notes.append(f"{knob} is assigned but never exported in this file")
    pin.companions.update(companions)
    pin.spec.update(extra)
    return pin


def _short(cond: str) -> str:
    c = show(cond)
    return c if len(c) <= 70 else c[:67] + "..."


def _same_flags(output: str) -> object:
    """What ``check`` reads from a function's printed launch flags (two outputs that agree on it are one value)."""
    return tuple(sorted(_flags_in(output.split())))


def _profile_pin(engine: str, knob: str, line: int, text: str, state: State, path: str, models: list[ModelName],
                 thinking: list[ThinkingSignal], agentic: AgenticInfo) -> Pin:
    """The pin of a profile-read engine: k, algorithm and models from its last launch line on this path."""
    reader = next(r for r in _profile_readers() if r.engine == engine)
    value, why = value_of(text)
    if value is None and text == "":
        value, why = None, f"{knob} has no value on this path"
    launches = [n for n in state.notes if isinstance(n, tuple) and n[0] == "launch" and n[1] == engine]
    pin = Pin(file=path, line=line, engine=engine, knob=reader.command_line.value_knobs.get(knob, knob),
              raw_value=value, unresolved=why, models=models, thinking=thinking, agentic=agentic)
    display = get_profile(engine).display_name
    if not launches:
        pin.draft = DraftInfo(problem=f"no {display} launch on this path of the script, so nothing fixes k")
        return pin
    args = tuple(str(a) for a in launches[-1][2])  # type: ignore[attr-defined]
    launch_line = launches[-1][3]
    if any(has_unknown(a) for a in args):
        pin.notes.append(f"the {display} launch at line {launch_line} holds words set outside this file")
    env = {k: harden(v) for k, v in state.env.items() if isinstance(v, str) and not has_unknown(v)}
    reading = reader.command_line.read([harden(a) for a in args], env)
    pin.draft = DraftInfo(problem=f"{reading.draft_problem} (the launch at line {launch_line})") \
        if reading.draft is None else DraftInfo(k=reading.draft.k, chain=reading.draft.chain,
                                                rule=f"{display} {reading.draft.rule} at line {launch_line}")
    pin.algorithm = reading.algorithm
    pin.draft_model = reading.draft_model
    pin.models = [ModelName(m, f"the {display} launch at line {launch_line}") for m in reading.models] + models
    pin.problems.extend(reading.problems)
    return pin


def _pin_notes(state: State) -> list[tuple[Any, ...]]:
    return [n for n in state.notes if isinstance(n, tuple) and n[0] == "pin"]


def _hoisted(state: State) -> tuple[tuple[str, str, int], ...]:
    """The inputs of the script that the ``case`` arms on this path fix: (name, value, line)."""
    return tuple(sorted({(n, v, line) for n, v, line, hoist in state.bound if hoist}))


def _walk(nodes: list[Node], relevance: _Relevance, assume: dict[str, str], initial: State) -> tuple[list[State], bool]:
    walker = Walker(nodes, _Visitor(relevance), assume=assume, relevant=relevance.relevant,
                    relevant_vars=relevance.vars, same_output=_same_flags)
    return walker.run(initial), walker.truncated


def _with_arm_conditions(nodes: list[Node], relevance: _Relevance, states: list[State], path: str) -> tuple[
        list[State], bool]:
    """Paths whose pins lack k or a model, walked again from the top with the inputs their ``case``
    arms fix (``case "$MODEL:$K" in *X*:1)`` fixes ``K=1`` for the whole run, so flags built from
    ``$K`` *before* the ``case`` are read with it too)."""
    groups: dict[tuple[tuple[str, str, int], ...], list[State]] = {}
    out: list[State] = []
    for state in states:
        fixed = _hoisted(state)
        if fixed and any((p := _make_pin(n, state, path)) is not None and (p.draft.k is None or not p.models)
                         for n in _pin_notes(state)):
            groups.setdefault(fixed, []).append(state)
        else:
            out.append(state)
    truncated = False
    for fixed, group in groups.items():
        conds = tuple(f"{n} = {v} (the case arm at line {line})" for n, v, line in fixed)
        again, cut = _walk(nodes, relevance, {**_ASSUME, **{n: v for n, v, _ in fixed}}, State(conds=conds))
        truncated |= cut
        wanted = {(n, v) for n, v, _ in fixed}
        kept = [s for s in again if wanted <= {(n, v) for n, v, _, _ in s.bound} and _pin_notes(s)]
        out.extend(kept or group)
    return out, truncated


def extract_shell_pins(text: str, path: str, *, census: Iterable[Any] = ()) -> tuple[list[Pin], list[str]]:
    """Pins of one shell script and diagnostics (e.g. the path cap was reached). ``census``: the
    file's knob occurrences (:func:`golden_al.knobs.census.census_shell`), whose lines are sites too.

    Raises:
        ShellSyntaxError: the script does not parse (``check`` reports it as ``unreadable``).
    """
    nodes = parse_script(text)
    census_lines = frozenset(line for occ in census for line in occ.lines())
    relevance = _Relevance(nodes, census_lines)
    if not relevance.sites:
        return [], []
    states, truncated = _walk(nodes, relevance, _ASSUME, State())
    states, truncated_again = _with_arm_conditions(nodes, relevance, states, path)
    diags = []
    if truncated or truncated_again:
        diags.append(f"{path}: more than {MAX_STATES} paths; only the first were followed")
    pins: dict[tuple[Any, ...], Pin] = {}
    for state in states:
        for note in _pin_notes(state):
            pin = _make_pin(note, state, path)
            if pin is None:
                continue
            pin.use_line, pin.line = int(note[3]), int(note[6])
            if pin.line != pin.use_line:
                pin.notes.insert(0, f"the value is written at line {pin.line} and reaches the engine at line "
                                    f"{pin.use_line}")
            key = (pin.line, pin.use_line, pin.knob, pin.raw_value, pin.unresolved, pin.draft.k, pin.draft.problem,
                   tuple(pin.models), tuple(pin.thinking), tuple(sorted(pin.companions.items())),
                   pin.agentic, pin.algorithm)
            if key in pins:
                old = pins[key]
                more = [n for n in pin.notes if n.startswith("on the path") and n not in old.notes]
                if more and sum(n.startswith("on the path") for n in old.notes) < 2:
                    old.notes.extend(more)
                continue
            pins[key] = pin
    return sorted(pins.values(), key=lambda p: (p.line, p.use_line or 0, p.knob, p.draft.k or 0)), diags
