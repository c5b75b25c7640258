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
from dataclasses import dataclass
from functools import lru_cache

from golden_al.checks.findings import Finding
from golden_al.engines import engine_names, get_profile
from golden_al.errors import UnreadableInputError

__all__ = ["KnobLine", "scan_knob_lines", "unreadable_findings"]

#: The InferenceX harness's own knob (``SYNTHETIC_ACCEPTANCE_LENGTH=...`` in master configs).
_HARNESS_KNOB = "SYNTHETIC_ACCEPTANCE_LENGTH"


@lru_cache(maxsize=1)
def _knob_engines() -> dict[str, str]:
    """Every pinned-value knob (and its legacy spellings) of every engine profile -> engine."""
    out = {_HARNESS_KNOB: "unknown"}
    for engine in engine_names():
        for knob in get_profile(engine).synthetic_knobs:
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
