"""What ``golden-al check`` reports: pins found in files, and one finding per pin.

A :class:`Pin` is one pinned synthetic-acceptance value with everything the file
says around it (engine, algorithm, draft-length flags, companions, thinking signals,
model names, agentic or not). :func:`golden_al.checks.static.evaluate` turns a pin
into a :class:`Finding`, the JSON contract of ``golden-al check --format json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from golden_al.safeio.inputs import Input

__all__ = [
    "ALLOWABLE_VERDICTS",
    "FAILING_VERDICTS",
    "SEVERITY",
    "VERDICTS",
    "Finding",
    "Verdict",
    "failing_verdicts",
]

Verdict = Literal["match", "mismatch", "no-golden", "wrong-method", "undetermined", "missing-companion",
                  "non-agentic-simulation", "unsafe-value", "unresolved", "unreadable", "unread", "pinned",
                  "unselectable", "bad-suppression"]
#: ``pinned`` and ``unselectable``: the ``no-pins`` policy (a hard-coded value, even a matching one; a recipe
#: ``select`` cannot plan); ``bad-suppression``: an inline suppression without a reason or verdict, or a stale one.
VERDICTS: tuple[str, ...] = get_args(Verdict)
#: Verdicts that make ``golden-al check`` exit 1: every verdict but ``match`` (pass means proven).
#: ``unresolved``: a knob the census found that no reader turned into a checked pin
#: (:mod:`golden_al.knobs.census`); ``unreadable``: a file that was not read and parsed in full
#: (:mod:`golden_al.checks.unreadable`); ``unread``: a file of a kind ``check`` does not read whose text
#: names a knob (:mod:`golden_al.checks.file_kinds`).
FAILING_VERDICTS: frozenset[str] = frozenset(v for v in VERDICTS if v != "match")
#: The failing verdicts ``check --allow`` may relax (adoption: a tree whose curves are not all committed yet).
ALLOWABLE_VERDICTS: tuple[str, ...] = ("no-golden", "undetermined")
#: Which verdict a finding gets when several problems apply (highest first).
SEVERITY: tuple[str, ...] = ("unreadable", "unread", "bad-suppression", "unresolved", "unsafe-value", "missing-companion",
                             "non-agentic-simulation", "mismatch", "wrong-method", "undetermined", "no-golden",
                             "unselectable", "pinned", "match")


def failing_verdicts(allow: frozenset[str] | set[str] = frozenset()) -> frozenset[str]:
    """The verdicts that fail the check once ``allow`` (a subset of :data:`ALLOWABLE_VERDICTS`) is relaxed."""
    return FAILING_VERDICTS - set(allow)


@dataclass(frozen=True)
class Finding:
    """One row of ``golden-al check`` output (the JSON contract)."""

    file: str
    line: int
    engine: str
    algorithm: str | None
    model: str | None
    thinking: str | None  # "on" | "off" | a level name | None
    thinking_source: str
    draft_len: int | None
    pinned_value: str | None
    implied_al: float | None
    expected_al: float | None
    verdict: str
    message: str
    #: where the value reaches the engine (the knob's export, the launch command); ``line`` is
    #: where the value itself is written; None: the same line
    use_line: int | None = None
    #: why a failing finding does not fail this run (an inline suppression and its reason, the baseline, a
    #: file unchanged since ``--changed-since``); None: it counts
    waived: str | None = None
    #: the engine version whose facts judged the finding (a release or a source tree); None: unversioned
    engine_version: str | None = None
    #: everything the verdict read (its file, a recipe its master config points to, curve files, the gate's
    #: configuration): ``--changed-since`` and the baseline re-judge a finding when any of them changed
    inputs: tuple[Input, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in contract order."""
        return {
            "file": self.file,
            "line": self.line,
            "use_line": self.line if self.use_line is None else self.use_line,
            "engine": self.engine,
            "algorithm": self.algorithm,
            "model": self.model,
            "thinking": self.thinking,
            "thinking_source": self.thinking_source,
            "draft_len": self.draft_len,
            "pinned_value": self.pinned_value,
            "implied_al": self.implied_al,
            "expected_al": self.expected_al,
            "verdict": self.verdict,
            "message": self.message,
            "waived": self.waived,
            "engine_version": self.engine_version,
            "inputs": [i.to_dict() for i in self.inputs],
        }
