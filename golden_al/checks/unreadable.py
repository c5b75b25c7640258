"""The ``unreadable`` verdict: a file ``check`` could not read or parse in full fails the check.

Fail-closed rule: every file ``golden-al check`` is given or finds ends either as findings
or as "no pin", and "no pin" only when the file was read and parsed in full. A file that is
too large, not a regular file (FIFO, device, socket), unreadable for the user, not
decodable (UTF-16/32 with or without a BOM *is* decoded), holds NUL bytes, or does not
parse, gets one ``unreadable`` finding (exit 1) naming the reason and a hint.

Where the bytes could be read but not parsed (or decoded), the text is still scanned line
by line for the engines' knobs (:func:`scan_knob_lines`), and each knob line gets its own
``unreadable`` finding that names the pinned value and its line, so the reviewer sees which
pin the broken file hides.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from golden_al.checks.findings import Finding
from golden_al.errors import UnreadableInputError
from golden_al.plugin.registry import engine_names, get_profile

__all__ = ["KnobLine", "scan_knob_lines", "unread_findings", "unreadable_findings"]

#: The InferenceX harness's own knob (``SYNTHETIC_ACCEPTANCE_LENGTH=...`` in master configs).
_HARNESS_KNOB = "SYNTHETIC_ACCEPTANCE_LENGTH"


@lru_cache(maxsize=1)
def _knob_engines() -> dict[str, str]:
    """Every pinned-value knob (and its legacy spellings) of every engine profile -> engine."""
    out = {_HARNESS_KNOB: "unknown"}
    for engine in engine_names():
        for knob in get_profile(engine).check.synthetic_knobs:
            if knob.role == "value":
                for name in (knob.name, *knob.aliases):
                    out[name] = engine
    return out


def _engine_of(knob: str) -> str:
    return _knob_engines().get(knob, "unknown")


@lru_cache(maxsize=1)
def _pattern() -> re.Pattern[str]:
    names = sorted(_knob_engines(), key=len, reverse=True)
    alt = "|".join(re.escape(n) for n in names)
    # KNOB = v | KNOB: v | "KNOB": v | --flag v | --flag=v ; a value is a list or one token.
    return re.compile(rf"(?<![A-Za-z0-9_-])(?P<knob>{alt})(?![A-Za-z0-9_-])[\"']?\s*(?:[:=]\s*|\s+)"
                      r"(?P<value>\[[^\]\n]{0,400}\]|[\"']?[^\s\"',;}\]#)]{1,80})")



@dataclass(frozen=True)
class KnobLine:
    """One knob setting found by the plain text scan."""

    line: int
    knob: str
    engine: str
    value: str | None
    text: str


def scan_knob_lines(text: str) -> list[KnobLine]:
    """Every line of ``text`` that sets a synthetic-acceptance knob, with the value as written."""
    out: list[KnobLine] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        for m in _pattern().finditer(line):
            value = m.group("value").strip("'\"") or None
            out.append(KnobLine(number, m.group("knob"), _engine_of(m.group("knob")), value, stripped[:160]))
    return out


def unreadable_findings(path: str, error: UnreadableInputError, text: str | None = None) -> list[Finding]:
    """The file's ``unreadable`` finding, plus one per knob line of ``text`` (when it could be read)."""
    hint = f" (hint: {error.hint})" if error.hint else ""
    where = f" at line {error.line}" if error.line else ""
    head = Finding(file=path, line=error.line or 1, engine="unknown", algorithm=None, model=None, thinking=None,
                   thinking_source="not read", draft_len=None, pinned_value=None, implied_al=None,
                   expected_al=None, verdict="unreadable",
                   message=f"{error.reason}: {error.problem}{where}; the file was not read in full, so its pinned "
                           f"values cannot be checked{hint}")
    out = [head]
    for kl in scan_knob_lines(text) if text else []:
        out.append(Finding(
            file=path, line=kl.line, engine=kl.engine, algorithm=None, model=None, thinking=None,
            thinking_source="not read", draft_len=None, pinned_value=kl.value, implied_al=None, expected_al=None,
            verdict="unreadable",
            message=f"{kl.knob}={kl.value} is pinned in a file that cannot be {_verb(error.reason)} "
                    f"({error.reason}: {error.problem}{where}), so it cannot be checked: {kl.text}",
        ))
    return out


def _verb(reason: str) -> str:
    return "decoded" if reason in ("not-decodable", "nul-byte") else "parsed"


def unread_findings(path: str, occurrences: Sequence[Any], text: str, kind: str) -> list[Finding]:
    """``unread`` findings: a file of a kind ``check`` does not read (:mod:`golden_al.checks.file_kinds`)
    whose text names a knob, one per line that names one (the first line when only a name in parts does)."""
    from golden_al.knobs.census import names_knob_in_parts

    what = "a Jinja template whose inner file kind is unknown" if kind == "jinja" else \
        "a file of a kind golden-al does not read"
    hint = ("a launcher that consumes it may set the knob: move the setting to a file check reads (YAML, JSON, "
            "shell, Dockerfile, Python), or leave the file out with exclude = [...] in .golden-al.toml or --exclude "
            "when nothing consumes it")
    by_line: dict[int, Any] = {}
    for occ in occurrences:
        by_line.setdefault(occ.line, occ)
    if not by_line:
        lines = text.splitlines() or [""]
        first = next((i for i, ln in enumerate(lines, 1) if names_knob_in_parts(ln)), 1)
        return [Finding(file=path, line=first, engine="unknown", algorithm=None, model=None, thinking=None,
                        thinking_source="not read", draft_len=None, pinned_value=None, implied_al=None,
                        expected_al=None, verdict="unread",
                        message=f"{what}; its text names a knob in parts at line {first}: "
                                f"{lines[first - 1].strip()[:160]!r} (hint: {hint})")]
    out = []
    for line, occ in sorted(by_line.items()):
        value = str(occ.value) if occ.value_known else None
        out.append(Finding(file=path, line=line, engine=occ.engine, algorithm=None, model=None, thinking=None,
                           thinking_source="not read", draft_len=None, pinned_value=value, implied_al=None,
                           expected_al=None, verdict="unread",
                           message=f"{occ.term.spelling} is named in {what}, so it cannot be proven to match: "
                                   f"{occ.text!r} (hint: {hint})"))
    return out

