"""The census: every occurrence of every engine's knob in a file, as the file's consumer decodes it.

``golden-al check`` passes a file only when it has *proved* that each occurrence of a
synthetic-acceptance knob was read into a checked pin. The census is the other half of that
proof: it lists the occurrences without the pin readers' help, so that a form the readers do
not understand (a name spelled with escapes, assembled from variables, quoted in a way the
readers did not expect) cannot pass as "no pin".

**Vocabulary** (:func:`vocabulary`), from the engine registry and nothing else: every spelling
of every value knob of every registered engine (name, legacy aliases, environment form; a
flag also without its dashes and with ``_`` for ``-``, as recipe keys write flags), each
companion that switches synthetic acceptance on by its value (vLLM
``rejection_sample_method: synthetic``), each setting that changes the draft length at run
time, and the InferenceX harness's ``SYNTHETIC_ACCEPTANCE_LENGTH``. An engine added to the
registry is counted without a line changing here.

**Decoding**, per file kind, the way the consumer reads it:

* YAML: every mapping key and string scalar of PyYAML's node graph (escapes decoded; comments
  are not data); JSON: every string token after its escapes; in both, a string that holds a
  JSON document is decoded again, and a string that holds shell words is read with its quotes
  removed (``sh -c`` scripts, ``KEY=VALUE`` lists, command lines);
* shell: every word of tree-sitter-bash's tree after brace expansion (``A_{B,C}`` is ``A_B`` and
  ``A_C``) and quote removal (``'...'``, ``"..."``, ``$'...'`` with its escapes, backslashes), with
  each ``$VAR`` replaced by every value the file assigns to it (``for NAME in WORDS`` assigns each
  word) and by an unknown part; ``env -S"..."``'s string as words; here-document bodies as text and,
  where they parse, as YAML/JSON data.

**Assembled names.** A word whose value holds an unknown part (a variable set outside the
file, a command substitution) is an occurrence when it *can* spell a knob: its literal parts
match the name with the unknown parts as wildcards, and they spell at least
:data:`MIN_LITERAL` of its characters (``export ${PREFIX}_ACC_LEN=2.2`` is one; ``export
"$kv"`` spells nothing). Such an occurrence is ``certain=False``.

**Shortcuts** that skip a file the census provably finds nothing in: :func:`may_hold_knob` (YAML and JSON:
without escapes or expansions a knob is a substring of the text less its quotes) and
:func:`python_may_set_knob` (Python: no literal, alone or composed, can spell a value or switch knob).

Pure: no I/O (the caller reads the bounded text), no engine branching.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache, reduce
from typing import Any, Literal

from golden_al.plugin.profile import RuntimeDraftLen
from golden_al.plugin.registry import engine_names, get_profile

__all__ = [
    "ANY_KNOB",
    "HARNESS",
    "MIN_LITERAL",
    "Occurrence",
    "Term",
    "census_data",
    "census_json",
    "census_shell",
    "census_text",
    "iter_pin_sites",
    "may_hold_knob",
    "names_knob_in_parts",
    "python_may_set_knob",
    "vocabulary",
]

#: The engine field of the harness's own knob (InferenceX master configs).
HARNESS = "harness"
#: InferenceX master configs' golden-AL setting (``runners/inject_synthetic_acceptance.py``).
HARNESS_KNOB = "SYNTHETIC_ACCEPTANCE_LENGTH"
#: Literal characters a word with unknown parts must spell of a knob name to count as one.
MIN_LITERAL = 4
#: Possible decodings of one word kept before its unknown parts stand for the rest.
MAX_COMBINATIONS = 32
#: How deep a variable's value is expanded through other variables, strings in strings, JSON in JSON.
MAX_DEPTH = 4

Role = Literal["value", "switch", "runtime-k"]
_WILD = "\ue000"  # an unknown part of a decoded word (private-use code point)


@dataclass(frozen=True)
class Term:
    """One spelling of one knob."""

    spelling: str  #: as matched (``--spec-synth-len``, ``spec_synth_len``, ``SGLANG_SIMULATE_ACC_LEN``)
    engine: str  #: the registered engine, or :data:`HARNESS`
    knob: str  #: the knob's own name in the engine profile
    role: Role
    switch_value: str | None = None  #: a switch counts only when set to this value
    runtime: RuntimeDraftLen | None = None
    flag: bool = False  #: a command-line flag (takes the next word as its value)


ANY_KNOB = Term("(a variable named outside the file)", "unknown", "(any knob)", "value")


@dataclass(frozen=True)
class Occurrence:
    """One occurrence of a knob in a file, as decoded."""

    line: int  #: first line of the decoded unit (key, scalar, word, token) holding it
    end_line: int  #: last line of that unit (or of its mapping entry)
    term: Term
    context: str  #: ``YAML key``, ``YAML string``, ``JSON key``, ``shell word``, ...
    text: str  #: the decoded unit, shortened, for messages
    value: Any = None  #: the value it sets, where the form shows one (None: none or unknown)
    value_known: bool = False
    certain: bool = True  #: False: the unit spells the knob only with its unknown parts filled in
    how: str = ""  #: how it was decoded (``assembled from $A``, ``JSON inside a YAML string``, ...)
    key_line: int | None = None  #: the line of the mapping key whose value holds it, if any
    #: a copy: found only through a variable whose own assigned value already holds the knob (that
    #: assignment is the occurrence a pin must cover; this one only says where the value is used)
    derived: bool = False
    #: why the occurrence provably sets nothing (a variable never exported, ``unset``, ``echo`` to the
    #: terminal, a ``sed '/NAME/d'`` that deletes it), or None
    inert: str | None = None

    @property
    def engine(self) -> str:
        return self.term.engine

    def lines(self) -> range:
        """Every line a pin covering this occurrence may point at."""
        start = min(self.line, self.key_line) if self.key_line is not None else self.line
        return range(start, max(self.end_line, self.line) + 1)


# ------------------------------------------------------------------------- vocabulary


def _flag_spellings(name: str) -> list[str]:
    bare = name.lstrip("-")
    forms = [name, bare, bare.replace("-", "_")]
    if name.startswith("-"):
        forms.append("--" + bare.replace("-", "_"))
    return list(dict.fromkeys(forms))


def _key_spellings(name: str) -> list[str]:
    return list(dict.fromkeys([name, name.replace("_", "-")]))


@lru_cache(maxsize=1)
def vocabulary() -> tuple[Term, ...]:
    """Every spelling of every knob of every registered engine (module docstring)."""
    terms: list[Term] = [Term(HARNESS_KNOB, HARNESS, HARNESS_KNOB, "value")]
    for engine in engine_names():
        profile = get_profile(engine)
        for knob in profile.check.synthetic_knobs:
            if knob.role == "value":
                role: Role = "value"
            elif knob.switch_value is not None:
                role = "switch"
            else:
                continue
            for name in knob.spellings():
                if knob.kind == "flag" and name.startswith("-"):
                    forms = _flag_spellings(name)
                elif knob.kind == "config-key":
                    forms = _key_spellings(name)
                else:
                    forms = [name]
                for form in forms:
                    terms.append(Term(form, engine, knob.name, role, knob.switch_value,
                                      flag=form.startswith("-")))
        for setting in profile.check.runtime_draft_len:
            for name in setting.names:
                forms = _flag_spellings(name) if name.startswith("-") else (
                    [name] if name.isupper() else _key_spellings(name))
                for form in forms:
                    terms.append(Term(form, engine, setting.names[0], "runtime-k", runtime=setting,
                                      flag=form.startswith("-")))
    seen: dict[tuple[str, str], Term] = {}
    for t in terms:
        seen.setdefault((t.spelling, t.engine), t)
    return tuple(seen.values())


@lru_cache(maxsize=1)
def _by_spelling() -> dict[str, list[Term]]:
    out: dict[str, list[Term]] = {}
    for t in vocabulary():
        out.setdefault(t.spelling, []).append(t)
    return out


def _alternation(names: Iterable[str]) -> str:
    """A regex that matches as ``|`` of ``names`` longest first does, written as their trie: at each position the
    spellings that can match lie on one path, tried deepest first, and a shared prefix is read once (3x faster)."""
    trie: dict[str, Any] = {}
    for name in names:
        reduce(lambda node, c: node.setdefault(c, {}), name, trie)[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(c) + emit(child) for c, child in sorted(node.items()) if c]
        body = "" if not alts else alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node and body else body

    return emit(trie)


@lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_\-])(" + _alternation(_by_spelling()) + r")(?![A-Za-z0-9_\-])")


@lru_cache(maxsize=1)
def _substring_rx() -> re.Pattern[str]:
    """Any spelling anywhere (no word boundaries: a superset of :func:`_pattern`'s matches)."""
    return re.compile(_alternation(_by_spelling()))


_SPECIAL = re.compile(rb"[$\\`{]")  # what makes a shell word's value other than its text less quotes


@lru_cache(maxsize=1)
def _substrings() -> frozenset[str]:
    """Every substring of every spelling: each literal piece of a token that spells a knob is one."""
    return frozenset(name[i:j] for name in _by_spelling() for i in range(len(name))
                     for j in range(i + 1, len(name) + 1))


# ------------------------------------------------------------------------- matching


_TOKEN = re.compile(r"[A-Za-z0-9_\-" + _WILD + r"]+")


@dataclass
class _Sink:
    """Collects occurrences of one file, one per (line, spelling, engine), certain ones first."""

    found: dict[tuple[int, str, str], Occurrence] = field(default_factory=dict)

    def add(self, occ: Occurrence) -> None:
        key = (occ.line, occ.term.spelling, occ.term.engine)
        old = self.found.get(key)
        if old is None or _rank(occ) > _rank(old):
            self.found[key] = occ

    def result(self) -> list[Occurrence]:
        return sorted(self.found.values(), key=lambda o: (o.line, o.term.spelling, o.term.engine))


def _rank(occ: Occurrence) -> tuple[bool, bool, bool, bool]:
    """Which of two occurrences at one place to keep: one that needs a pin, then the surer reading."""
    return (occ.inert is None, not occ.derived, occ.certain, occ.value_known)


def _shorten(text: str, limit: int = 160) -> str:
    text = text.replace(_WILD, "$?")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _value_after(text: str, end: int) -> tuple[Any, bool]:
    """The value a ``NAME=value``, ``NAME: value`` or ``--flag value`` in running text sets."""
    m = re.match(r"""\s*[\"']?\s*(?:=|:)\s*([\"']?)([^\s,;}\]\"'&|)]*)""", text[end:])
    if m is None:
        m = re.match(r"""\s+([\"']?)([^\s,;}\]\"'&|)-][^\s,;}\]\"'&|)]*)""", text[end:])
    if m is None:
        return None, False
    value = m.group(2)
    if _WILD in value or "$" in value:
        return None, False
    return value, True


@lru_cache(maxsize=65536)
def _names(text: str) -> bool:
    """Whether ``text`` names a knob as it stands (the same values recur in every script)."""
    return _pattern().search(text) is not None


def _switch_on(term: Term, value: Any, known: bool) -> bool:
    """Whether a switch occurrence turns synthetic acceptance on (unknown values count as on)."""
    return term.role != "switch" or not known or str(value).strip().strip("'\"").lower() == str(
        term.switch_value).lower()


def census_text(text: str, *, line: int, end_line: int, context: str, sink: _Sink, how: str = "",
                key_line: int | None = None, certain: bool = True, copied: frozenset[str] = frozenset(),
                inert: str | None = None, inert_names: frozenset[str] = frozenset()) -> None:
    """Occurrences in one decoded unit of text (a key, a scalar, a word, a body). ``copied``: spellings
    the unit holds only as copies of variables' values (:attr:`Occurrence.derived`); ``inert``: why the
    whole unit sets nothing, or ``inert_names``: spellings that are inert here (:attr:`Occurrence.inert`)."""
    for m in _pattern().finditer(text) if _names(text) else ():
        value, known = _value_after(text, m.end())
        for term in _by_spelling()[m.group(1)]:
            if not _switch_on(term, value, known):
                continue
            at = line + text.count("\n", 0, m.start()) if end_line > line else line
            why = inert or ("a shell variable the script never exports (no child process sees it)"
                            if term.spelling in inert_names and m.start() == 0 else None)
            sink.add(Occurrence(at, max(at, end_line), term, context, _shorten(text), value, known, certain, how,
                                key_line, derived=term.spelling in copied, inert=why))
    for tok, term in _assembled(text) if _WILD in text else ():  # unknown parts (module docstring: assembled names)
        sink.add(Occurrence(line, end_line, term, context, _shorten(text), None, False, False,
                            (how + "; " if how else "") + f"{_shorten(tok, 60)} can spell it "
                            "with its parts set outside the file", key_line, inert=inert))


@lru_cache(maxsize=65536)
def _assembled(text: str) -> tuple[tuple[str, Term], ...]:
    """The tokens of ``text`` with unknown parts and each knob (not a run-time one) they can spell (pure: the same
    words recur in every script)."""
    out: list[tuple[str, Term]] = []
    for tok in _TOKEN.findall(text):
        if _WILD not in tok or len(tok) - tok.count(_WILD) < MIN_LITERAL:
            continue
        if not all(piece in _substrings() for piece in tok.split(_WILD) if piece):
            continue  # a literal piece that no spelling holds: the token spells no knob
        rx = re.compile("".join(".*" if c == _WILD else re.escape(c) for c in re.sub(_WILD + "+", _WILD, tok)))
        out.extend((tok, term) for spelling, terms in _by_spelling().items() if rx.fullmatch(spelling)
                   for term in terms if term.role != "runtime-k")
    return tuple(out)


# ------------------------------------------------------------------- strings in strings


#: A shell expansion as the shell reading of a string ends it (never later than bash would).
_EXPANSION = r"\$\{[^}]*\}?|\$\([^)]*\)?|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*\#?$!-]|`[^`]*`?"
_SH_PART = re.compile(rf"""
    (?P<ansi>\$'(?:[^'\\]|\\.)*'?)          # $'...' (ANSI-C escapes)
  | (?P<sq>'[^']*'?)                           # '...'
  | (?P<dq>"(?:[^"\\]|\\.)*"?)               # "..."
  | (?P<exp>{_EXPANSION})
  | (?P<esc>\\.)
  | (?P<lit>[^'"$`\\]+|.)
""", re.S | re.X)
_DQ_PART = re.compile(rf"""(?P<exp>{_EXPANSION})
  | \\(?P<esc>[$`"\\\n]) | (?P<lit>[^$`\\]+|.)""", re.S | re.X)


def _dq(body: str) -> str:
    out = []
    for m in _DQ_PART.finditer(body):
        if m.group("exp") is not None:
            out.append(_WILD)
        elif m.group("esc") is not None:
            out.append("" if m.group("esc") == "\n" else m.group("esc"))
        else:
            out.append(m.group("lit"))
    return "".join(out)


def _shell_unquote(text: str) -> str | None:
    """``text`` with shell quoting removed (quotes, backslashes, ``$'...'`` escapes; an expansion is an
    unknown part), or None when it holds no quoting or expansion (then it reads as itself). An
    expansion never ends later than bash would end it, so no literal text is lost to it."""
    if not any(c in text for c in "'\"\\$`"):
        return None
    out = []
    for m in _SH_PART.finditer(text):
        kind = m.lastgroup
        part = m.group(0)
        if kind == "ansi":
            out.append(ansi_c(part[2:-1] if part.endswith("'") and len(part) > 2 else part[2:]))
        elif kind == "sq":
            out.append(part[1:-1] if part.endswith("'") and len(part) > 1 else part[1:])
        elif kind == "dq":
            out.append(_dq(part[1:-1] if part.endswith('"') and len(part) > 1 else part[1:]))
        elif kind == "exp":
            out.append(_WILD)
        elif kind == "esc":
            out.append("" if part[1] == "\n" else part[1])
        else:
            out.append(part)
    return "".join(out)


_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
              "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def ansi_c(body: str) -> str:
    """The value of bash's ``$'...'`` body (``\\xHH``, ``\\uHHHH``, ``\\UHHHHHHHH``, octal, ``\\cX``, ...)."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in _C_ESCAPES:
            out.append(_C_ESCAPES[e])
            i += 2
        elif e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            m = re.match(f"[0-9A-Fa-f]{{1,{width}}}", body[i + 2:])
            if m:
                try:
                    out.append(chr(int(m.group(0), 16)))
                except (ValueError, OverflowError):
                    out.append("\ufffd")
                i += 2 + len(m.group(0))
            else:
                out.append("\\" + e)
                i += 2
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            assert m is not None
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += 1 + len(m.group(0))
        elif e == "c" and i + 2 < n:
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + e)
            i += 2
    return "".join(out)


_DECODING = frozenset("\\'\"$`" + _WILD)


def _worth_reading(text: str) -> bool:
    """Whether any reading of ``text`` (as itself, as shell words, as JSON) can hold a knob.

    Those readings only remove quotes and backslashes, turn expansions into unknown parts and decode
    escapes (``\\x53``, ``\\u0053``, ``$'...'``). So a text can hold a knob only if it names one as it
    stands, names one once its quotes and backslashes are gone, holds an escape (a backslash before a
    letter or digit), or holds an expansion (``$``, a backquote, an unknown part) that an assembled name
    may come from."""
    if _names(text):
        return True
    if _DECODING.isdisjoint(text):
        return False
    if "$" in text or "`" in text or _WILD in text or _ESCAPE.search(text):
        return True
    return _substring_rx().search(text.replace("'", "").replace('"', "").replace("\\", "")) is not None


_ESCAPE = re.compile(r"\\[0-9A-Za-z]")


def _string_census(text: str, *, line: int, end_line: int, context: str, sink: _Sink, key_line: int | None,
                   depth: int, how: str = "", copied: frozenset[str] = frozenset(), inert: str | None = None,
                   itself: bool = True) -> None:
    """A decoded string: as itself (unless ``itself`` is False: the caller read it), as shell words with
    their quotes removed, and as JSON inside it. Each further reading is taken only where it can differ
    in what it names (:func:`_worth_reading`): removing quotes joins pieces, an expansion or escape makes
    new text; a JSON string without a backslash is its own text."""
    if not _worth_reading(text):
        return
    if itself:
        census_text(text, line=line, end_line=end_line, context=context, sink=sink, how=how, key_line=key_line,
                    copied=copied, inert=inert)
    if depth >= MAX_DEPTH:
        return
    named = _names(text)
    if "$" in text or "`" in text or _ESCAPE.search(text) or _substring_rx().search(
            text.replace("'", "").replace('"', "").replace("\\", "")):
        unquoted = _shell_unquote(text)
        if unquoted is not None and unquoted != text:
            census_text(unquoted, line=line, end_line=end_line, context=context, sink=sink,
                        how=(how + "; " if how else "") + "read as shell words (quotes removed)", key_line=key_line,
                        copied=copied, inert=inert)
    stripped = text.strip()
    if stripped[:1] in "{[" and len(stripped) > 1 and ("\\" in stripped or named):
        try:
            inner = json.loads(stripped)
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, (dict, list)):
            _json_value(inner, line=line, end_line=end_line, context=f"JSON inside a {context}", sink=sink,
                        key_line=key_line, depth=depth + 1, copied=copied, inert=inert)


def _json_value(value: Any, *, line: int, end_line: int, context: str, sink: _Sink, key_line: int | None,
                depth: int, copied: frozenset[str] = frozenset(), inert: str | None = None) -> None:
    """Census of already-decoded data (JSON inside a string): keys and strings, lines of the outer unit."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if d > 64:
            continue
        if isinstance(v, dict):
            for k, item in v.items():
                _key(str(k), item, line=line, end_line=end_line, context=context + " (a key)", sink=sink,
                     key_line=key_line, copied=copied, inert=inert)
                stack.append((item, d + 1))
        elif isinstance(v, list):
            stack.extend((item, d + 1) for item in v)
        elif isinstance(v, str):
            _string_census(v, line=line, end_line=end_line, context=context, sink=sink, key_line=key_line,
                           depth=depth, copied=copied, inert=inert)


def _key(name: str, value: Any, *, line: int, end_line: int, context: str, sink: _Sink,
         key_line: int | None, copied: frozenset[str] = frozenset(), inert: str | None = None) -> None:
    """A mapping key (``context`` names it): the knob is the key itself when it is spelled exactly; its
    value is the entry's."""
    terms = _by_spelling().get(name)
    if terms:
        known = not isinstance(value, (dict, list)) and value is not None and "$" not in str(value)
        for term in terms:
            if not _switch_on(term, value, known):
                continue
            sink.add(Occurrence(line, end_line, term, context, _shorten(name), value,
                                known or term.role == "runtime-k", True, "", key_line,
                                derived=term.spelling in copied, inert=inert))
        return
    census_text(name, line=line, end_line=end_line, context=context, sink=sink, key_line=key_line, copied=copied,
                inert=inert)


# ------------------------------------------------------------------------------ YAML


def names_knob_in_parts(text: str) -> bool:
    """Whether ``text`` spells a knob anywhere once its quotes and backslashes are removed
    (``SGLANG_"SIMULATE"_ACC_LEN``): the test for a file of a kind no reader decodes."""
    return _substring_rx().search(_unquoted(text)) is not None


def may_hold_knob(text: str) -> bool:
    """Whether any reading the census gives a YAML or JSON text can hold a knob: a proven shortcut,
    so that a data file is parsed and read in full only when it can matter.

    Proof. Without a backslash there is no escape anywhere (YAML and JSON escapes, ``$'...'``), so
    no reading creates a character the text does not hold, and none joins two lines (YAML folds a
    line break into a space or keeps it; only an escaped line break joins). Without ``$`` or a
    backquote no reading has an unknown part, so nothing is assembled. What remains is removing
    quote characters: a knob in any reading is then a substring of the text with its quotes
    removed. ``tests/unit/test_census.py`` checks this against the full census on generated texts.
    """
    if "\\" in text or "$" in text or "`" in text:
        return True
    return _substring_rx().search(text.replace("'", "").replace('"', "")) is not None



def census_data(node: Any, *, sink: _Sink | None = None) -> list[Occurrence]:
    """Occurrences in a PyYAML node graph (one document): every key and string scalar, decoded.

    Aliases are visited once (their node is shared); ``node`` is what
    :func:`golden_al.safeio.load_yaml_documents` returns beside the data.
    """
    import yaml

    own = sink is None
    sink = sink or _Sink()
    seen: set[int] = set()
    #: (node, line of its key, the documentation key it sits under: its text is read by people)
    stack: list[tuple[Any, int | None, str | None]] = [(node, None, None)]
    while stack:
        n, key_line, doc_key = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                kl = k.start_mark.line + 1
                under = None
                if isinstance(k, yaml.ScalarNode):
                    name = str(k.value)
                    if name in _by_spelling() or _worth_reading(name):
                        value = v.value if isinstance(v, yaml.ScalarNode) else _plain(v)
                        _key(name, value, line=kl, end_line=kl, context="YAML key", sink=sink, key_line=None)
                    under = name if name.strip().lower() in PROSE_KEYS else None
                else:
                    stack.append((k, None, None))
                stack.append((v, kl, under))
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((item, None, doc_key) for item in reversed(n.value))
        elif isinstance(n, yaml.ScalarNode) and isinstance(n.value, str):
            start = n.start_mark.line + 1
            end = max(start, n.end_mark.line + (0 if n.end_mark.column == 0 and n.end_mark.line > n.start_mark.line
                                                else 1))
            _string_census(n.value, line=start, end_line=end, context="YAML string", sink=sink, key_line=key_line,
                           depth=0, inert=prose_reason(doc_key) if doc_key else None)
    return sink.result() if own else []


#: Mapping keys whose string values (or lists of strings) are documentation: text a person reads (a changelog's
#: ``description``, a ``title``), which no launcher, engine or harness passes to a process. A knob named there is
#: a census entry that sets nothing (:func:`prose_reason`), listed by ``check`` and never a pin. A mapping under
#: such a key is read as configuration again.
PROSE_KEYS: frozenset[str] = frozenset({"description", "descriptions", "summary", "note", "notes", "comment",
                                        "comments", "changelog", "title", "help", "docs", "documentation"})
PROSE_PREFIX = "documentation text"


def prose_reason(key: str) -> str:
    """The :attr:`Occurrence.inert` reason of a knob named in the documentation text under ``key``."""
    return f"{PROSE_PREFIX} (under '{key}'): read by people, passed to no process"


def _plain(node: Any) -> Any:
    """A small plain value of a node (for the value of a runtime-k key), bounded."""
    import yaml

    if isinstance(node, yaml.ScalarNode):
        return node.value
    if isinstance(node, yaml.SequenceNode):
        return [_plain(x) for x in node.value[:64]]
    if isinstance(node, yaml.MappingNode):
        return {str(getattr(k, "value", "?")): _plain(v) for k, v in node.value[:64]}
    return None


# ------------------------------------------------------------------------------ JSON


_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_COLON = re.compile(r"[ \t\r\n]*:[ \t\r\n]*")  # after a JSON string: it is a key


def census_json(text: str) -> list[Occurrence]:
    """Occurrences in a JSON text: every string token (key or value) after its escapes."""
    import bisect

    sink = _Sink()
    newlines = [m.start() for m in re.finditer("\n", text)]
    decoder = json.JSONDecoder()
    for m in _JSON_STRING.finditer(text):
        token = m.group(0)
        if "\\" in token:
            try:
                value = json.loads(token)
            except ValueError:
                continue
        else:
            value = token[1:-1]  # no escape: the string is its own text
        if not _worth_reading(value):
            continue
        line = bisect.bisect_right(newlines, m.start()) + 1
        end = bisect.bisect_right(newlines, m.end() - 1) + 1
        colon = _COLON.match(text, m.end())
        if colon is not None:
            after = colon.end()
            entry = None
            if value in _by_spelling():
                try:
                    entry, _ = decoder.raw_decode(text, after)
                except (ValueError, RecursionError):
                    entry = None
            _key(value, entry, line=line, end_line=end, context="JSON key", sink=sink, key_line=None)
        else:
            _string_census(value, line=line, end_line=end, context="JSON string", sink=sink, key_line=None,
                           depth=0)
    return sink.result()


# ----------------------------------------------------------------------------- shell


_WORDISH = frozenset({"word", "string", "raw_string", "ansi_c_string", "concatenation", "translated_string",
                      "simple_expansion", "expansion", "number", "command_substitution", "process_substitution",
                      "arithmetic_expansion"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution", "arithmetic_expansion"})
#: Node types that are parts of a word (a word inside one of these is read with it).
_WORD_PARTS = _WORDISH - _SUBSTITUTIONS
#: What the shell census reads, in one query: ``u`` words (maximal ones are kept), assignments, here-document bodies;
#: ``a`` assignments and for loops (the values variables are given); ``d`` declaration commands.
_SCRIPT_QUERY = " ".join([*(f"({t}) @u" for t in sorted(_WORD_PARTS | {"variable_assignment", "heredoc_body"})),
                          "(variable_assignment) @a (for_statement) @a (declaration_command) @d"])


@lru_cache(maxsize=1)
def _query() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Query(tree_sitter.Language(tree_sitter_bash.language()), _SCRIPT_QUERY)


def _captures(root: Any) -> dict[str, list[Any]]:
    """The nodes :data:`_SCRIPT_QUERY` captures, by capture name (one walk of the tree, in C)."""
    import tree_sitter

    got = tree_sitter.QueryCursor(_query()).captures(root)
    return {name: got.get(name, []) for name in "uad"}


class _ShellDecoder:
    """Decodes tree-sitter-bash words: quote removal, escapes, variables (every value the file gives)."""

    def __init__(self, data: bytes, root: Any, assignments: list[Any], allexport: bool = False) -> None:
        self.data = data
        self.root = root
        self.allexport = allexport  #: every assignment is exported (a ``.env`` file)
        self._exported: tuple[set[str], bool] | None = None
        self.assigned: dict[str, list[Any]] = {}
        self.loops: list[tuple[Any, list[Any]]] = []  #: ``for NAME in WORDS``: (the statement, its words)
        self._collect(assignments)
        self._memo: dict[str, list[str]] = {}
        self._words: dict[tuple[str, bytes, int], list[str]] = {}

    def raw(self, node: Any) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", errors="replace")

    def _collect(self, assignments: list[Any]) -> None:
        for n in sorted(assignments, key=lambda x: x.start_byte):
            if n.type == "for_statement":  # for NAME in WORDS: each word is a value of NAME
                var = n.child_by_field_name("variable")
                if var is not None:
                    words = [c for i, c in enumerate(n.children) if n.field_name_for_child(i) == "value"]
                    self.assigned.setdefault(self.raw(var), []).extend(words)
                    self.loops.append((n, words))
                continue
            name = n.child_by_field_name("name")
            value = n.child_by_field_name("value")
            if name is not None and value is not None:
                self.assigned.setdefault(self.raw(name), []).append(value)

    def unexported(self, name: str) -> bool:
        """Whether the script never exports ``name`` (no ``export``/``declare -x`` of it, no ``set -a``)."""
        if self._exported is None:
            self._exported = _exports(self, self.root)
        names, every = self._exported
        return not (self.allexport or every) and name not in names

    def variable(self, name: str, depth: int) -> list[str]:
        """Every value the file assigns to ``name`` (decoded); an unknown part when it assigns none."""
        if name in self._memo:
            return self._memo[name]
        self._memo[name] = [_WILD]  # recursion guard
        out: list[str] = []
        for value in self.assigned.get(name, [])[:8]:
            if value.type == "array":
                for item in value.children:
                    if item.is_named and item.type != "comment":
                        out.extend(self.word(item, depth + 1))
            else:
                out.extend(self.word(value, depth + 1))
        # a variable the file assigns has those values; one it never assigns comes from outside
        result = list(dict.fromkeys(out[:MAX_COMBINATIONS])) or [_WILD]
        self._memo[name] = result
        return result

    def copied_spellings(self, node: Any) -> frozenset[str]:
        """Knob spellings that the values of the variables ``node`` expands already hold."""
        names = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "simple_expansion":
                names.append(self.raw(n)[1:])
            elif n.type == "expansion":
                m = re.match(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", self.raw(n))
                if m:
                    names.append(m.group(1))
            else:
                stack.extend(n.children)
        out: set[str] = set()
        for name in names:
            for value in self.variable(name, 0):
                out.update(m.group(1) for m in _pattern().finditer(value))
        return frozenset(out)

    def word(self, node: Any, depth: int = 0) -> list[str]:
        """The possible values of one word node (unknown parts as wildcards; the same text has the same values)."""
        key = (node.type, self.data[node.start_byte:node.end_byte], depth)
        if key not in self._words:
            self._words[key] = self._word(node, depth)
        return self._words[key]

    def _word(self, node: Any, depth: int) -> list[str]:
        if depth > MAX_DEPTH:
            return [_WILD]
        t = node.type
        if t == "raw_string":
            return [self.raw(node)[1:-1]]
        if t == "ansi_c_string":
            return [ansi_c(self.raw(node)[2:-1])]
        if t == "word" or t == "number":
            return [_unescape(self.raw(node))]
        if t in ("string", "translated_string"):
            parts: list[list[str]] = []
            pos = node.start_byte + (2 if t == "translated_string" else 1)
            for child in node.children:
                if child.start_byte > pos:
                    parts.append([_unescape(self.data[pos:child.start_byte].decode("utf-8", "replace"), dq=True)])
                if child.type == "string_content":
                    parts.append([_unescape(self.raw(child), dq=True)])
                elif child.is_named:
                    parts.append(self.word(child, depth))
                pos = max(pos, child.end_byte)
            return _product(parts)
        if t == "concatenation":  # bash expands braces first: SGLANG_SIMULATE_ACC_{LEN,METHOD}=2 is two words
            items: list[str | list[str]] = []
            for c in node.children:
                if c.type == "word":
                    items.extend(x if x in "{,}" else [_unescape(x)]
                                 for x in re.split(r"(?<!\\)([{,}])", self.raw(c)) if x)
                elif c.type != "comment":
                    items.append(self.word(c, depth))
            return _braces(items, 0, "")[0]
        if t == "simple_expansion":
            name = self.raw(node)[1:]
            return self.variable(name, depth) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else [_WILD]
        if t == "expansion":
            return self._expansion(node, depth)
        return [_WILD]

    def _expansion(self, node: Any, depth: int) -> list[str]:
        raw = self.raw(node)
        m = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=+?])(.*))?\}", raw, re.S)
        if m is None:
            return [_WILD]
        values = self.variable(m.group(1), depth)
        if m.group(2) and m.group(2).lstrip(":") in "-=":
            default = m.group(3) or ""
            values = list(dict.fromkeys([*values, *(_shell_unquote(default) or default,)]))
        return values


def _braces(items: list[str | list[str]], i: int, stop: str) -> tuple[list[str], int]:
    """Bash brace expansion of a word's parts from ``i`` up to a ``stop`` character (``,}`` inside a group):
    ``items`` are the unquoted ``{``, ``,``, ``}`` and lists of the other parts' values. A ``{`` that opens no
    group with a comma is itself. Returns the values and the index reached."""
    parts: list[list[str]] = []
    while i < len(items):
        item = items[i]
        if isinstance(item, str) and item in stop:
            break
        if item == "{":
            alternatives: list[str] = []
            j = i + 1
            while True:
                values, j = _braces(items, j, ",}")
                alternatives.extend(values)
                if j >= len(items) or items[j] == "}":
                    break
                j += 1
            if j < len(items) and len(alternatives) > 1:  # a group: {a,b} (a lone {a} is literal)
                parts.append(list(dict.fromkeys(alternatives))[:MAX_COMBINATIONS])
                i = j + 1
                continue
        parts.append([item] if isinstance(item, str) else item)
        i += 1
    return _product(parts), i


_UNESCAPE = {False: re.compile(r"\\(.)", re.S), True: re.compile(r'\\([$`"\\\n])')}


def _unescape(text: str, dq: bool = False) -> str:
    """A backslash quotes the next character (inside double quotes, ``dq``: only ``$ ` " \\`` and newline); a
    backslash-newline is removed."""
    return _UNESCAPE[dq].sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text) if "\\" in text else text


def _product(parts: list[list[str]]) -> list[str]:
    out = [""]
    for options in parts:
        nxt = [a + b for a in out for b in options]
        if len(nxt) > MAX_COMBINATIONS:
            nxt = list(dict.fromkeys([*nxt[: MAX_COMBINATIONS - 1], "".join(p[-1] for p in parts)]))
        out = nxt
    return out


def census_shell(text: str, *, allexport: bool = False) -> list[Occurrence]:
    """Occurrences in a shell script: every word after quote removal and static expansion, every
    here-document body (as text, and as YAML/JSON data where it parses).

    An occurrence that provably sets nothing is kept with its reason in :attr:`Occurrence.inert`:
    the name of a plain variable the script never exports (``export``, ``declare -x``, ``set -a``),
    a word of ``unset``/``env -u``/a ``[ ]`` test, an argument of ``echo``/``printf``/``grep`` whose
    output reaches the terminal (not captured, piped or written to a file), a ``sed`` script that
    only deletes lines (``sed -i '/NAME/d'``).

    ``allexport``: every assignment is exported (a ``.env`` file that compose's ``env_file`` reads).

    Raises:
        golden_al.shell.ShellSyntaxError: the script does not parse (the caller reports it).
    """
    from golden_al.shell.parse import _tree

    data = text.encode("utf-8", errors="replace")
    root = _tree(data).root_node
    caps = _captures(root)
    dec = _ShellDecoder(data, root, caps["a"], allexport)
    sink = _Sink()
    glued = _glued_declarations(dec, caps["d"], sink)  # these nodes are read there
    spelled = re.compile(_substring_rx().pattern.encode())  # re's own cache keeps it compiled
    cover = -1  # where the last word read ends: a node before it may be one of its parts
    for n in sorted(caps["u"], key=lambda x: (x.start_byte, -x.end_byte)):
        start, stop = n.start_byte, n.end_byte
        if glued and any(a <= start and stop <= b for a, b in glued):
            continue
        t = n.type
        if t == "heredoc_body":
            _heredoc(dec, n, sink)
            continue
        chunk = data[start:stop]
        if not _SPECIAL.search(chunk) and (t != "variable_assignment" or b"(" not in chunk) and spelled.search(
                chunk.replace(b"'", b"").replace(b'"', b"") if b"'" in chunk or b'"' in chunk else chunk) is None:
            continue  # no expansion, escape or array: its value is its text less some quotes, and names no knob
        if t == "variable_assignment":
            _assignment(dec, n, sink)
            continue
        parent = n.parent if stop <= cover else None  # a word part lies inside the word that holds it
        if parent is not None and parent.type in _WORD_PARTS:
            continue  # a part of a larger word: read with it
        cover = max(cover, stop)
        raw = dec.raw(n)
        values = dec.word(n)
        if any(v.startswith("-S") for v in values) and _command_of(dec, n)[1].rsplit("/", 1)[-1] == "env":
            values = [v[2:] if v.startswith("-S") else v for v in values]  # env -S"A=1 cmd": the string's words
        if not any(_WILD in v or _names(v) for v in values) and "\\" not in raw:
            continue  # nothing in any of its values can be or become a knob name
        line, end = n.start_point[0] + 1, n.end_point[0] + 1
        parent = n.parent
        if parent is not None and _exports_words(dec, parent) and all(
                v.split("=", 1)[0].strip(_WILD) == "" for v in values):
            sink.add(Occurrence(line, end, ANY_KNOB, "shell word", _shorten(raw), None, False, False,
                                "an exported name set outside this file: it can be any engine's knob"))
            continue
        if all(map(_silent, values)):
            continue
        named = any(_names(v) for v in values) or "\\" in raw
        copied = dec.copied_spellings(n) if named else frozenset()
        inert = _inert_word(dec, n) if named else None
        for v in values:
            how = "assembled from variables the file sets" if "$" in raw and _WILD not in v and v != raw else ""
            census_text(v, line=line, end_line=end, context="shell word", sink=sink, how=how, copied=copied,
                        inert=inert)
            if _looks_like_data(v):
                _string_census(v, line=line, end_line=end, context="shell word", sink=sink, key_line=None,
                               depth=1, copied=copied, inert=inert, itself=False)
    _loop_assignments(dec, sink)
    if any(o.term.flag for o in sink.found.values()):
        _flag_values(dec, root, sink)
    return sink.result()


@lru_cache(maxsize=65536)
def _silent(value: str) -> bool:
    """Whether :func:`census_shell` adds nothing for a word with this value. Its readings (:func:`census_text`, and
    :func:`_string_census` where the value looks like data) are pure functions of the value: where and how the
    word was found only annotate what they add. So they run once here, into a scratch sink."""
    sink = _Sink()
    census_text(value, line=1, end_line=1, context="", sink=sink)
    if _looks_like_data(value):
        _string_census(value, line=1, end_line=1, context="", sink=sink, key_line=None, depth=1, itself=False)
    return not sink.found


def _assignment(dec: _ShellDecoder, n: Any, sink: _Sink) -> None:
    """``NAME=value``: the name with each value; a plain variable's name, never exported, sets nothing."""
    name = n.child_by_field_name("name")
    value = n.child_by_field_name("value")
    if name is None:
        return
    texts = [dec.raw(name) + "=" + v for v in (dec.word(value) if value is not None and value.type != "array"
                                               else [""])]
    if all(map(_silent, texts)):
        return
    line, end = n.start_point[0] + 1, n.end_point[0] + 1
    copied = dec.copied_spellings(value) if value is not None and any(map(_names, texts)) else frozenset()
    plain = dec.raw(name) in _by_spelling() and n.parent is not None and n.parent.type not in (
        "command", "declaration_command") and dec.unexported(dec.raw(name))
    for text in texts:
        census_text(text, line=line, end_line=end, context="shell assignment", sink=sink, copied=copied,
                    inert_names=frozenset({dec.raw(name)}) if plain else frozenset())


def _loop_assignments(dec: _ShellDecoder, sink: _Sink) -> None:
    """``for NAME in WORDS``: NAME is assigned each word (all of ``"$@"`` without WORDS), as ``NAME=word``."""
    for loop, words in dec.loops:
        name = dec.raw(loop.child_by_field_name("variable"))
        if name in _by_spelling():
            for v in [v for w in words for v in dec.word(w)] or [_WILD]:
                census_text(f"{name}={v}", line=loop.start_point[0] + 1, end_line=loop.start_point[0] + 1,
                            context="shell for loop", sink=sink,
                            inert_names=frozenset({name}) if dec.unexported(name) else frozenset())


def _declaration_words(node: Any) -> list[list[Any]]:
    """The argument words of a declaration command (``export``, ``declare``, ``typeset``, ``local``,
    ``readonly``) as bash splits them: tree-sitter-bash ends a word after a variable name, so
    ``export NA"ME"=v`` comes as two nodes; nodes with no byte between them are one word."""
    groups: list[list[Any]] = []
    for c in node.children[1:]:
        if c.type == "comment":
            continue
        if groups and groups[-1][-1].end_byte == c.start_byte:
            groups[-1].append(c)
        else:
            groups.append([c])
    return groups


def _declaration_values(dec: _ShellDecoder, group: list[Any]) -> list[str]:
    """The possible values of one declaration word made of ``group``'s nodes."""
    parts: list[list[str]] = []
    for c in group:
        if c.type == "variable_name":
            parts.append([dec.raw(c)])
        elif c.type == "variable_assignment":
            name, value = c.child_by_field_name("name"), c.child_by_field_name("value")
            head = dec.raw(name) if name is not None else ""
            values = dec.word(value) if value is not None and value.type != "array" else [""]
            parts.append([head + "=" + v for v in values])
        else:
            parts.append(dec.word(c))
    return _product(parts)


def _glued_declarations(dec: _ShellDecoder, declarations: list[Any], sink: _Sink) -> list[tuple[int, int]]:
    """Census entries of the declaration words that the unit loop of :func:`census_shell` cannot read
    node by node: a word tree-sitter split in parts (``export SGLANG_SIMU"LATE_ACC_LEN"=3``) and a bare
    name (``export NAME`` after ``printf -v NAME``/``read NAME``: the export is what a child process sees).
    A bare name the file also assigns with ``NAME=value`` is a copy (that assignment is the occurrence).
    Returns the byte ranges read here."""
    read: list[tuple[int, int]] = []
    for node in declarations:
        exporting = _exports_words(dec, node)
        for group in _declaration_words(node):
            if len(group) == 1 and group[0].type != "variable_name":
                continue
            values = _declaration_values(dec, group)
            if not any(_WILD in v or _names(v) for v in values):
                continue
            read.append((group[0].start_byte, group[-1].end_byte))
            line, end = group[0].start_point[0] + 1, group[-1].end_point[0] + 1
            for v in values:
                name = v.split("=", 1)[0]
                bare = "=" not in v
                inert_names = frozenset({name}) if not exporting and name in _by_spelling() and dec.unexported(
                    name) else frozenset()
                copied = frozenset({name}) if bare and name in dec.assigned else frozenset()
                how = "a declaration word in parts" if len(group) > 1 else "a name exported without a value here"
                census_text(v, line=line, end_line=end, context="shell word", sink=sink, how=how, copied=copied,
                            inert_names=inert_names)
    return read


def _exports_words(dec: _ShellDecoder, node: Any) -> bool:
    """Whether ``node`` is ``export``/``declare -x``/``typeset -x``/``local -x``: its words name variables
    that child processes see."""
    if node.type != "declaration_command" or not node.children:
        return False
    head = dec.raw(node.children[0])
    return head == "export" or any(dec.raw(c).startswith("-") and "x" in dec.raw(c) for c in node.children[1:])


def _exports(dec: _ShellDecoder, root: Any) -> tuple[set[str], bool]:
    """Names the script exports (``export``, ``declare -x``/``typeset -x``/``local -x``) and whether
    ``set -a`` / ``set -o allexport`` exports every assignment."""
    names: set[str] = set()
    allexport = False
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "declaration_command" and n.children:
            if _exports_words(dec, n):
                for group in _declaration_words(n):
                    names.update(v.split("=", 1)[0] for v in _declaration_values(dec, group))
        elif n.type == "command":
            words = [w for c in n.children for w in dec.word(c.children[0] if c.type == "command_name" and c.children
                                                              else c)]
            if words[:1] == ["set"] and any(
                    (w.startswith("-") and not w.startswith("--") and "a" in w) or w == "allexport"
                    for w in words[1:]):
                allexport = True
        stack.extend(n.children)
    return names, allexport


#: Commands whose arguments only reach the terminal when their output is not captured, piped or saved.
_DISPLAY = frozenset({"echo", "printf", "grep", "egrep", "fgrep", "logger", ":", "true"})
_SED_DELETE = re.compile(r"^\s*(?:/(?:[^/\\\n]|\\.)*/\s*d\s*;?\s*)+$")


def _command_of(dec: _ShellDecoder, word: Any) -> tuple[Any, str]:
    """The statement a word belongs to (through concatenations and strings; None at the top) and, when it is a
    command, the value of its name (else "")."""
    n = word.parent
    while n is not None and n.type in ("concatenation", "string"):
        n = n.parent
    name_node = n.child_by_field_name("name") if n is not None and n.type == "command" else None
    return n, dec.word(name_node.children[0])[0] if name_node is not None and name_node.children else ""


def _inert_word(dec: _ShellDecoder, word: Any) -> str | None:
    """Why a word of a command sets nothing (module docstring of :func:`census_shell`), or None."""
    n, head = _command_of(dec, word)
    if n is None:
        return None
    if n.type == "unset_command":
        return "unset removes it"
    if n.type == "test_command":
        return "compared in a test, not set"
    if n.type != "command":
        return None
    name_node = n.child_by_field_name("name")
    args = [c for c in n.children if c is not name_node and c.type in _WORDISH]
    if word is name_node or (name_node is not None and word.parent is name_node):
        return None
    idx = next((i for i, c in enumerate(args) if c.start_byte <= word.start_byte < c.end_byte), None)
    if head == "env" and idx is not None and idx > 0 and dec.raw(args[idx - 1]) in ("-u", "--unset"):
        return "env -u removes it"
    if head in ("find", "xargs") and idx is not None and any(dec.raw(a) == "sed" for a in args[:idx]):
        head = "sed"  # find ... -exec sed SCRIPT {} +, xargs sed SCRIPT
    if head == "sed" and idx is not None:
        values = dec.word(args[idx])
        if values and all(_SED_DELETE.match(v) for v in values):
            return "a sed script that only deletes the lines holding it"
    if head == "printf" and idx is not None and any(dec.raw(a) == "-v" for a in args[:idx]):
        return None  # printf -v NAME assigns the variable NAME, it prints nothing
    if head in _DISPLAY and _to_terminal(dec, n):
        return f"{head} writes it to the terminal only"
    return None


def _to_terminal(dec: _ShellDecoder, command: Any) -> bool:
    """Whether a command's standard output reaches the terminal: not captured by ``$( )``, not piped into
    another command, not written to a file, and not inside a function (whose caller may capture it)."""
    child, n = command, command.parent
    while n is not None:
        t = n.type
        if t in _SUBSTITUTIONS or t == "function_definition":
            return False
        if t == "pipeline":
            named = [c for c in n.children if c.is_named]
            if named and named[-1] is not child:
                return False
        if t == "redirected_statement":
            for r in n.children:
                if r.type == "heredoc_redirect":
                    return False
                if r.type != "file_redirect":
                    continue
                ops = "".join(c.type for c in r.children if not c.is_named)
                dest = r.child_by_field_name("destination")
                target = dec.raw(dest) if dest is not None else ""
                descriptor = r.child_by_field_name("descriptor")
                fd = dec.raw(descriptor) if descriptor is not None else "1"
                if ">" in ops and fd in ("1", "") and target not in ("/dev/null", "/dev/stderr", "/dev/tty", "&2",
                                                                       "2"):
                    if not (ops.endswith("&") and target.isdigit()):
                        return False
        child, n = n, n.parent
    return True


def _looks_like_data(text: str) -> bool:
    s = text.strip()
    return s[:1] in "{[" or any(c in text for c in "'\"\\")


def _heredoc(dec: _ShellDecoder, node: Any, sink: _Sink) -> None:
    start = node.start_point[0] + 1
    end = node.end_point[0] + 1
    body = dec.raw(node)
    expanded = body
    if node.children:  # an unquoted delimiter: expansions inside
        parts: list[list[str]] = []
        pos = node.start_byte
        for child in node.children:
            if child.start_byte > pos:
                parts.append([dec.data[pos:child.start_byte].decode("utf-8", "replace")])
            parts.append(dec.word(child) if child.type in ("simple_expansion", "expansion") else
                         ([dec.raw(child)] if child.type == "heredoc_content" else [_WILD]))
            pos = max(pos, child.end_byte)
        if node.end_byte > pos:
            parts.append([dec.data[pos:node.end_byte].decode("utf-8", "replace")])
        expanded = _product(parts)[0]
    for i, line_text in enumerate(expanded.split("\n")):
        census_text(line_text, line=start + i, end_line=start + i, context="here-document", sink=sink)
    _embedded_data(expanded, start, end, sink)


def _embedded_data(text: str, start: int, end: int, sink: _Sink) -> None:
    """A here-document that is YAML or JSON data: its keys and strings, decoded."""
    if _WILD in text or not any(c in text for c in "\"'\\"):
        return  # nothing a YAML/JSON reader would decode differently from the text itself
    from golden_al import safeio
    from golden_al.errors import UnreadableInputError

    try:
        for _data, node in safeio.load_yaml_documents(text):
            if node is None:
                continue
            for occ in census_data(node):
                sink.add(Occurrence(occ.line + start - 1, occ.end_line + start - 1, occ.term,
                                    "here-document " + occ.context, occ.text, occ.value, occ.value_known,
                                    occ.certain, occ.how, None if occ.key_line is None else occ.key_line + start - 1))
    except (UnreadableInputError, ValueError, RecursionError, TypeError):
        return


def _flag_values(dec: _ShellDecoder, root: Any, sink: _Sink) -> None:
    """``--flag value`` across two words of one command: the value of flag occurrences."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in ("command", "declaration_command"):
            words = [c for c in n.children if c.type in _WORDISH and c.type not in _SUBSTITUTIONS]
            for i, w in enumerate(words[:-1]):
                first = dec.word(w)
                if len(first) != 1 or first[0] not in _by_spelling():
                    continue
                nxt = dec.word(words[i + 1])
                line = w.start_point[0] + 1
                for term in _by_spelling()[first[0]]:
                    if not term.flag:
                        continue
                    key = (line, term.spelling, term.engine)
                    old = sink.found.get(key)
                    if old is None or old.value_known:
                        continue
                    value: Any = None
                    known = len(nxt) == 1 and _WILD not in nxt[0]
                    if term.runtime is not None and not term.runtime.flag_takes_value:
                        value, known = True, True
                    elif known:
                        value = nxt[0]
                    sink.found[key] = dataclasses.replace(old, end_line=max(old.end_line, words[i + 1].end_point[0] + 1),
                                                          value=value, value_known=known)
        stack.extend(n.children)


def iter_pin_sites(occurrences: Iterable[Occurrence]) -> Iterator[Occurrence]:
    """The occurrences that need a pin to cover them (values, switches and the harness knob; not copies,
    not inert ones)."""
    for occ in occurrences:
        if occ.term.role in ("value", "switch") and not occ.derived and occ.inert is None:
            yield occ


# ---------------------------------------------------------------------------- Python


def census_python(text: str) -> list[Occurrence]:
    """Occurrences in a Python file (a launcher): every string expression, decoded by Python's own parser
    (escapes, implicit concatenation), as itself, as shell words and as JSON inside it. What the code
    computes is an unknown part: an f-string's fields, a ``+`` operand that is not a literal, a
    ``.format``/``%`` placeholder, an item of ``"".join([...])`` that is not a literal. A docstring sets
    nothing; comments are not data.

    Raises:
        SyntaxError: the file does not parse as Python (the caller reports it).
    """
    import ast

    nodes = list(ast.walk(ast.parse(text)))  # walked once, read three times
    inert_at = _python_inert(nodes)
    sink = _Sink()
    inner: set[int] = set()  # string nodes read as a part of a larger string expression
    for node in nodes:
        if id(node) in inner:
            continue
        values = _python_string(node, inner)
        if values is None or not hasattr(node, "lineno"):
            continue
        line = node.lineno
        end = getattr(node, "end_lineno", None) or line
        inert = inert_at.get(id(node))
        for v in values:
            _string_census(v, line=line, end_line=end, context="Python string", sink=sink, key_line=None, depth=0,
                           inert=inert)
    for node in nodes:  # a keyword argument's name: dict(NAME=...), os.environ.update(NAME=...)
        if isinstance(node, ast.keyword) and node.arg is not None:
            value = node.value.value if isinstance(node.value, ast.Constant) and isinstance(
                node.value.value, (str, int, float)) else _WILD
            census_text(f"{node.arg}={value}", line=node.lineno, end_line=node.lineno, context="Python keyword",
                        sink=sink)
    return sink.result()


def _python_inert(nodes: list[Any]) -> dict[int, str]:
    """String nodes of a Python tree (``nodes``: all of them) that provably set nothing, with why: docstrings, a name the code reads
    from the environment (``os.environ.get(K)``, ``os.getenv(K)``, ``os.environ[K]`` read), a string compared
    in a test (``K in os.environ``, ``"K" in text``), and the message of an exception or of ``sys.exit``
    (standard error)."""
    import ast

    def environ(n: Any) -> bool:
        return (isinstance(n, ast.Attribute) and n.attr == "environ") or (isinstance(n, ast.Name)
                                                                          and n.id == "environ")

    out: dict[int, str] = {}

    def mark(root: Any, why: str) -> None:
        for sub in ast.walk(root):
            out.setdefault(id(sub), why)

    read = "read from the environment, not set"
    for node in nodes:
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(
                    first.value.value, str):
                out[id(first.value)] = "a docstring"
        elif isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if (name == "get" and isinstance(f, ast.Attribute) and environ(f.value)) or name == "getenv":
                mark(node.args[0], read)
            elif name == "exit" and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                    f.value.id == "sys":
                mark(node, "the message of sys.exit (standard error)")
        elif isinstance(node, ast.Subscript) and environ(node.value) and isinstance(node.ctx, ast.Load):
            mark(node.slice, read)
        elif isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, (ast.Constant, ast.JoinedStr, ast.BinOp)):
                    mark(operand, "compared in a test, not set")
        elif isinstance(node, ast.Raise) and node.exc is not None:
            mark(node.exc, "an exception's message")
    return out


_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z%]")
_BRACES = re.compile(r"\{[^{}]*\}")


def _python_string(node: Any, inner: set[int]) -> list[str] | None:
    """The possible values of a string expression (unknown parts as wildcards), or None when ``node`` is not
    one. Marks the string nodes read as its parts in ``inner``."""
    import ast

    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts: list[list[str]] = []
        for v in node.values:
            inner.add(id(v))
            parts.append([v.value] if isinstance(v, ast.Constant) and isinstance(v.value, str) else [_WILD])
        return _product(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left = _python_string(node.left, inner)
        if isinstance(node.op, ast.Mod):
            if left is None:
                return None
            inner.add(id(node.left))
            return [_PERCENT.sub(_WILD, v) for v in left]
        right = _python_string(node.right, inner)
        if left is None and right is None:
            return None
        inner.update((id(node.left), id(node.right)))
        return _product([left or [_WILD], right or [_WILD]])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        receiver = _python_string(node.func.value, set())
        if receiver is None:
            return None
        if node.func.attr == "format":
            inner.add(id(node.func.value))
            return [_BRACES.sub(_WILD, v) for v in receiver]
        if node.func.attr == "join" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            inner.add(id(node.func.value))
            items = []
            for i, item in enumerate(node.args[0].elts):
                inner.add(id(item))
                got = _python_string(item, inner)
                items.append(got or [_WILD])
                if i < len(node.args[0].elts) - 1:
                    items.append(receiver)
            return _product(items)
    return None


# ------------------------------------------------------------------ Python: the shortcut


#: A Python comment, a string literal (``s``, ``d``: as Python 3.10-3.11's tokenizer ends it), or a quote that opens
#: none (``so``, ``do``). Each branch starts with its character, so that the search skips to the next one.
_PY_TOKEN = re.compile(r"""\#[^\n]*
    |'(?:(?P<s>''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''|[^'\\\n]*(?:\\.[^'\\\n]*)*')|(?P<so>))
    |"(?:(?P<d>""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*\"\"\"|[^"\\\n]*(?:\\.[^"\\\n]*)*")|(?P<do>))""", re.S | re.X)
#: An escape that makes a character the text does not hold: Python's, and (in a decoded value) JSON's or ANSI-C's.
_PY_NEW_CHAR = re.compile(r"\\[xuUN0-7]")
_NEW_CHAR = re.compile(r"\\[xuU0-7]")
#: A chain: characters no reading separates (name characters, quotes, backslashes, ``$`` and backquotes, the
#: unknown part) and the spans a reading turns into one unknown part; with ``%`` placeholders and ``{...}``
#: fields where the literal's value may be formatted (a ``%`` or ``.format`` after it or a composed value).
_CHAINS = [re.compile(rf"(?:{_EXPANSION}{spans}|\\\n|[A-Za-z0-9_\-'\"\\$`{_WILD}{chars}])+")
           for spans, chars in (("", ""), (f"|{_PERCENT.pattern}|{_BRACES.pattern}", "%{}"))]
_RUN = re.compile(r"[A-Za-z0-9_\-]+")
#: The parts of a chain: a span a reading may replace by one unknown part, a run, an unknown part, another character.
_ELEMENT = re.compile(rf"(?P<span>{_EXPANSION}|{_PERCENT.pattern}|{_BRACES.pattern})|(?P<run>[A-Za-z0-9_\-]+)"
                      rf"|(?P<wild>{_WILD})|.", re.S)
_RUN_TAIL = re.compile(r"[A-Za-z0-9_\-]*\Z")
_EDGE_RUNS = re.compile(r"\A[A-Za-z0-9_\-]*|[A-Za-z0-9_\-]*\Z")
#: A character some reading removes, replaces or joins across (anything but name characters and plain punctuation).
_OPEN = re.compile(r"[^A-Za-z0-9_\- \t\r\n,.:;=/+*!?<>|&@#^~\[\]]")
_JOIN_LIST = re.compile(r"\.join\s*\(\s*[\[(]")
_PREFIX = re.compile(r"(?<![\w])[rRbBuUfF]{1,2}\Z")
#: An expansion, placeholder or escape that may go on into what is composed after the literal.
_CROSSING = re.compile(r"(?:\$\{[^}]*|\$\([^)]*|`[^`]*|\$[A-Za-z0-9_@*#?$!-]*|%(?:\([^)]*\)?)?[-#0 +]*\d*(?:\.\d*)?|\\)\Z")
_FSTRING_PART = re.compile(r"""\{\{|\}\}|\{((?:[^{}'"]|'[^'\n]*'|"[^"\n]*"|\{[^{}'"]*\})*)\}|[{}]""")


@lru_cache(maxsize=1)
def _pin_parts() -> tuple[re.Pattern[str], dict[str, frozenset[str]]]:
    """The pin sites' spellings (values and switches: what a finding needs) as one pattern, and each of their
    substrings with the spellings that hold it."""
    names = sorted({t.spelling for t in vocabulary() if t.role in ("value", "switch")}, key=len, reverse=True)
    subs: dict[str, set[str]] = {}
    for name in names:
        for i in range(len(name)):
            for j in range(i + 1, len(name) + 1):
                subs.setdefault(name[i:j], set()).add(name)
    return re.compile(_alternation(names)), {k: frozenset(v) for k, v in subs.items()}


def _unquoted(text: str) -> str:
    return text.replace("\\\n", "").replace("\\", "").replace("'", "").replace('"', "")


def python_may_set_knob(text: str) -> bool:
    """Whether :func:`census_python` can find a pin site (a value or switch knob) in ``text``: a proven shortcut,
    so that only such a file is parsed (a file with none gives no finding; a runtime-k name alone needs no pin).

    Proof. A name the census reads is a *token* (a run of name characters and unknown parts) of a string
    expression's value, or a keyword argument's name. Literals are found as the tokenizer finds them; escapes
    are decoded (Python's) or answer True (JSON's, ANSI-C's). A token then joins characters only across what a
    reading removes or replaces (quotes, backslashes, expansions, placeholders, fields: the *chains* of
    :data:`_CHAINS`), or across a literal's edge that ``+``, ``%``, ``.format`` or implicit concatenation composes
    (``.join`` of a list through a receiver that can join answers True). A one-run token is a spelling only if
    the text less quotes and backslashes holds it; any other needs :data:`MIN_LITERAL` characters of runs that
    each spell a part of one spelling (:func:`_segments`). Their largest sum per spelling, within a chain or
    along composed edges, below that: no token is a pin site. ``tests/unit/test_census.py`` checks it.
    """
    pattern, subs = _pin_parts()
    if pattern.search(_unquoted(text)):
        return True
    bounds: tuple[dict[str, int], ...] = ({}, {}, {}, {})  # inner (max), start (max), end (max), whole (sum)
    if not _literal_chains(text, pattern, subs, bounds):
        return True
    inner, start, end, whole = bounds
    return any(max(inner.get(s, 0), start.get(s, 0) + whole.get(s, 0) + end.get(s, 0)) >= min(MIN_LITERAL, len(s))
               for s in {*inner, *start, *end, *whole})


def _literal_chains(code: str, pattern: re.Pattern[str], subs: dict[str, frozenset[str]],
                    bounds: tuple[dict[str, int], ...]) -> bool:
    """Adds the chains of every literal of ``code`` to the bounds of :func:`python_may_set_knob` (f-string
    fields are code again); False when a literal cannot be read that way."""
    literals: list[tuple[int, re.Match[str]]] = []  # (where its prefix starts, the literal)
    for m in _PY_TOKEN.finditer(code):
        if m.lastgroup in ("so", "do"):
            return False
        if m.lastgroup in ("s", "d"):
            found = _PREFIX.search(code, max(0, m.start() - 3), m.start())
            literals.append((found.start() if found else m.start(), m))
    for i, (at, m) in enumerate(literals):
        q = 3 if code.startswith(("\'\'\'", '"""'), m.start()) else 1
        prefix, body = code[at:m.start()].lower(), code[m.start() + q:m.end() - q]
        before = code[literals[i - 1][1].end() if i else 0:at]
        after = code[m.end():literals[i + 1][0] if i + 1 < len(literals) else len(code)]
        if "#" in before or "#" in after:
            before, after = re.sub(r"#[^\n]*", "", before), re.sub(r"#[^\n]*", "", after)
        before, after = before.rstrip(" \t\r\n\\(["), after.lstrip(" \t\r\n\\)]")
        left = before.endswith("+") or (i > 0 and not before)
        right = after.startswith(("+", "%", ".format", ".join")) or (i + 1 < len(literals) and not after)
        if not (left or right or "f" in prefix or _OPEN.search(body)):
            continue  # plain text on its own: only a whole spelling, which the text itself would show
        if "\\" in body and "r" not in prefix:
            made = _PY_NEW_CHAR.search(body)
            body = body.encode("latin-1", "backslashreplace").decode("unicode_escape")
            if made and pattern.search(_unquoted(body)):
                return False
        if _NEW_CHAR.search(body) or (right and _CROSSING.search(body)) or (_JOIN_LIST.match(after) and (
                not body or _CHAINS[1].match(body[0]) or _CHAINS[1].match(body[-1]))):
            return False  # an escape that makes any character, a span that may go on past the literal, a list's
            # items joined through this receiver
        if "f" in prefix:
            fields = _fields(body)
            if fields is None or not all(_literal_chains(c, pattern, subs, bounds) for c in fields[1]):
                return False
            body = fields[0]
        _add_chains(body, _CHAINS[left or right or after.startswith("%")], left, right, subs, bounds)
    return True


def _add_chains(body: str, chains: re.Pattern[str], left: bool, right: bool, subs: dict[str, frozenset[str]],
                bounds: tuple[dict[str, int], ...]) -> None:
    """One literal value's chains into ``bounds`` (:func:`python_may_set_knob`)."""
    inner, start, end, whole = bounds
    # a value with no character a reading removes or replaces holds plain runs: only its edges may join
    for m in chains.finditer(body) if _OPEN.search(body) else _EDGE_RUNS.finditer(body):
        chain = m.group(0)
        at_start, at_end = left and m.start() == 0, right and m.end() == len(body)
        if not (at_start or at_end) and _RUN.fullmatch(chain):
            continue  # a plain run on its own: a whole spelling or nothing
        for s, segments, dead in _segments(chain, chains, subs, bounds):
            if at_start and at_end and not dead:
                whole[s] = whole.get(s, 0) + segments[0]
                continue
            for side, value, on in ((start, segments[0], at_start), (end, segments[-1], at_end),
                                    (inner, max(segments), True)):
                if on:
                    side[s] = max(side.get(s, 0), value)


def _segments(chain: str, chains: re.Pattern[str], subs: dict[str, frozenset[str]],
              bounds: tuple[dict[str, int], ...]) -> Iterator[tuple[str, list[int], bool]]:
    """Per spelling: the sums of consecutive *atoms* of ``chain`` that one token of it may hold, and whether an
    atom breaks them. An atom is runs joined by unknown parts; atoms are parted by what some reading keeps as a
    separator (a quote, a backslash, a span a reading may replace: an expansion, a placeholder, whose inside
    is an inner chain of its own). A token holds whole atoms, none with a run that spells no part of the
    spelling. A run may be read in several ways: after a backslash without its first letter (an escape); a
    span's last name characters may be read as the start of the next atom."""
    atoms: list[tuple[dict[str, int], bool]] = []  # (what the atom spells of each spelling, spells 0 of any other)
    atom: tuple[dict[str, int], bool] | None = None

    def read(*candidates: str) -> None:
        nonlocal atom
        best: dict[str, int] = {}
        for c in candidates:
            for s in subs.get(c, ()) if c else ():
                best[s] = max(best.get(s, 0), len(c))
        credits, free = atom if atom is not None else ({}, True)
        optional = "" in candidates
        atom = ({s: credits.get(s, 0) + best.get(s, 0) for s in {*best, *(credits if optional else ())}
                 if (s in credits or free) and (s in best or optional)}, free and optional)

    escaped = False
    for e in _ELEMENT.finditer(chain):
        kind, text = e.lastgroup, e.group(0)
        if kind == "run":
            read(text, text[1:]) if escaped else read(text)
        elif kind != "wild":
            if atom is not None:
                atoms.append(atom)
            atom = None
            if kind == "span":
                _add_chains(text[1:], chains, False, False, subs, bounds)  # its inside: inner chains only
                tail = _RUN_TAIL.search(text)
                if tail is not None and tail.group(0):
                    read(tail.group(0), "")
        escaped = text == "\\"
    if atom is not None:
        atoms.append(atom)
    for s in {s for credits, _ in atoms for s in credits}:
        segments, total, dead = [], 0, False
        for credits, free in atoms:
            if s in credits or free:
                total += credits.get(s, 0)
            else:
                segments.append(total)
                total, dead = 0, True
        segments.append(total)
        yield s, segments, dead


def _fields(body: str) -> tuple[str, list[str]] | None:
    """An f-string body's value (each replacement field an unknown part, ``{{`` a ``{``) and its fields' code, read
    left to right as Python does; None at a brace it would refuse."""
    codes: list[str | None] = []  # None: a lone brace

    def part(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        codes.append(m.group(1))
        return _WILD

    value = _FSTRING_PART.sub(part, body)
    return None if None in codes else (value, [c for c in codes if c is not None])
