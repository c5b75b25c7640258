"""Adopting the gate on a real tree: configuration, inline suppressions, a baseline, changed files, policies.

None of these hides a finding: a waived finding stays in every output with the reason it does not fail
(:attr:`~golden_al.checks.findings.Finding.waived`), and the summary counts them.

* **Configuration**: ``.golden-al.toml`` (top-level keys) or ``[tool.golden-al]`` in ``pyproject.toml``, the
  nearest one from the working directory up to the repository root: ``exclude`` (globs), ``policy``
  (``default`` or ``no-pins``), ``golden-dir``, ``allow`` (verdicts), ``baseline`` (a file); paths are relative to
  the configuration file. Flags on the command line win (``--exclude`` adds to the list).
* **Inline suppressions** (YAML and shell comments): ``# golden-al: ignore[unresolved] -- reason``. The verdicts
  are named (no blanket ignore) and the reason is required; a trailing comment covers its own line, a comment on a
  line of its own the next line that is not blank or a comment. A malformed one is a ``bad-suppression`` finding.
* **Baseline** (``--baseline FILE``, written by ``--write-baseline FILE``): the failing findings known when it was
  written, by file, verdict, engine, value and k (not line, so edits above them do not revive them); one baseline
  entry waives one finding, so a second identical pin is new. It holds no message (no knob name for the census to
  find in it), and the baseline file itself is never checked.
* **Changed since** (``--changed-since REF``): the whole tree is still checked (a recipe's verdict depends on the
  master configs that run it), but only findings in files changed since ``REF`` (committed, uncommitted or new)
  fail.
* **Policy** ``no-pins`` (InferenceX's rule since 2026-09: the golden AL is selected at launch, never written): a
  hard-coded value is a ``pinned`` finding even when it matches, naming the value ``select`` chooses; a recipe that
  speculates on an agentic benchmark must be selectable, else an ``unselectable`` finding.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.checks.findings import VERDICTS, Finding
from golden_al.engines._values import format_value
from golden_al.errors import InputFileError, UsageError
from golden_al.safeio.inputs import text_input

__all__ = [
    "POLICIES",
    "CheckConfig",
    "Suppression",
    "apply_baseline",
    "apply_changed_since",
    "apply_no_pins",
    "apply_suppressions",
    "baseline_document",
    "changed_files",
    "find_config",
    "load_config",
    "read_suppressions",
]

POLICIES: tuple[str, ...] = ("default", "no-pins")
CONFIG_NAME = ".golden-al.toml"
_KEYS = ("exclude", "policy", "golden-dir", "allow", "baseline")


# ---------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class CheckConfig:
    """The gate's settings from a configuration file (empty when there is none)."""

    path: Path | None = None
    digest: str | None = None  #: of the file's text (an input of every verdict)
    exclude: tuple[str, ...] = ()
    policy: str = "default"
    golden_dir: Path | None = None
    allow: tuple[str, ...] = ()
    baseline: Path | None = None


def find_config(start: Path) -> Path | None:
    """The nearest ``.golden-al.toml``, or ``pyproject.toml`` with a ``[tool.golden-al]`` table, from ``start`` up
    to the repository root (the first folder holding ``.git``) or the filesystem root."""
    here = start.resolve()
    for folder in (here, *here.parents):
        own = folder / CONFIG_NAME
        if own.is_file():
            return own
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                text = _read(pyproject)
                if "golden-al" in text and "golden-al" in _toml(pyproject, text).get("tool", {}):
                    return pyproject
            except InputFileError:
                return pyproject  # load_config names the problem
        if (folder / ".git").exists():
            return None
    return None


def _read(path: Path) -> str:
    """A configuration file's text, bounded like every read (1 MiB)."""
    from golden_al import safeio

    return safeio.read_text(path, max_bytes=1 << 20)


def _toml(path: Path, text: str | None = None) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(_read(path) if text is None else text)
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(f"not valid TOML ({exc})", path=path) from None


def _strings(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputFileError(f"{key} must be a string or a list of strings, got {value!r}", path=path)
    return tuple(value)


def load_config(path: Path) -> CheckConfig:
    """Read a configuration file (see the module docstring).

    Raises:
        InputFileError: not TOML, an unknown key, or a value of the wrong type or outside its choices.
    """
    text = _read(path)
    data = _toml(path, text)
    table = data.get("tool", {}).get("golden-al", {}) if path.name == "pyproject.toml" else data
    where = "[tool.golden-al]" if path.name == "pyproject.toml" else "the file"
    if not isinstance(table, Mapping):
        raise InputFileError(f"{where} must be a table", path=path)
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise InputFileError(f"unknown key {unknown[0]!r} in {where}", path=path,
                             hint="known keys: " + ", ".join(_KEYS))
    base = path.parent
    policy = table.get("policy", "default")
    if policy not in POLICIES:
        raise InputFileError(f"policy {policy!r} is not one of {', '.join(POLICIES)}", path=path)
    golden = table.get("golden-dir")
    baseline = table.get("baseline")
    for key, value in (("golden-dir", golden), ("baseline", baseline)):
        if value is not None and not isinstance(value, str):
            raise InputFileError(f"{key} must be a path string, got {value!r}", path=path)
    return CheckConfig(path=path, digest=text_input("config", "", text).digest, exclude=_strings(table.get("exclude", []), "exclude", path), policy=policy,
                       golden_dir=base / golden if golden else None,
                       allow=_strings(table.get("allow", []), "allow", path),
                       baseline=base / baseline if baseline else None)


# ---------------------------------------------------------------------------- suppressions


_SUPPRESS = re.compile(r"(?:^|\s)#\s*golden-al:\s*ignore(?P<rest>.*)$")
_FORM = re.compile(r"^\[(?P<verdicts>[^\]]*)\]\s*(?:--\s*(?P<reason>.*))?$")


@dataclass(frozen=True)
class Suppression:
    """One ``# golden-al: ignore[...] -- reason`` comment."""

    file: str
    line: int  #: where the comment is
    target: int  #: the line whose findings it covers
    verdicts: frozenset[str]
    reason: str | None
    problem: str | None = None  #: why it is malformed (then it covers nothing)

    def covers(self, finding: Finding) -> bool:
        return self.problem is None and finding.verdict in self.verdicts and self.target in (
            finding.line, finding.use_line)


def read_suppressions(file: str, text: str) -> list[Suppression]:
    """Every suppression comment of a YAML or shell text, well-formed or not."""
    lines = text.splitlines()
    out: list[Suppression] = []
    for i, line in enumerate(lines, start=1):
        if "golden-al" not in line:
            continue
        m = _SUPPRESS.search(line)
        if m is None:
            continue
        own_line = line[: m.start()].strip() == ""
        target = i
        if own_line:
            target = next((j for j in range(i + 1, len(lines) + 1)
                           if lines[j - 1].strip() and not lines[j - 1].lstrip().startswith("#")), i)
        form = _FORM.match(m.group("rest").strip())
        problem = None
        verdicts: frozenset[str] = frozenset()
        reason = None
        if form is None:
            problem = "name the verdicts it covers: # golden-al: ignore[VERDICT] -- reason"
        else:
            verdicts = frozenset(v.strip() for v in form.group("verdicts").split(",") if v.strip())
            reason = (form.group("reason") or "").strip() or None
            bad = sorted(verdicts - set(VERDICTS)) or sorted(verdicts & {"match"})
            if not verdicts:
                problem = "it names no verdict"
            elif bad:
                problem = f"{bad[0]!r} is not a verdict it can cover"
            elif reason is None:
                problem = "a suppression needs its reason after ' -- '"
        out.append(Suppression(file, i, target, verdicts, reason, problem))
    return out


def apply_suppressions(findings: list[Finding], suppressions: Iterable[Suppression]) -> tuple[list[Finding], list[str]]:
    """(findings with the covered ones waived and one ``bad-suppression`` per malformed comment, notes on unused
    suppressions)."""
    sups = list(suppressions)
    used: set[tuple[str, int]] = set()
    out: list[Finding] = []
    for f in findings:
        hit = next((s for s in sups if s.file == f.file and s.covers(f)), None) if f.verdict != "match" else None
        if hit is not None and f.waived is None:
            used.add((hit.file, hit.line))
            f = dataclasses.replace(f, waived=f"suppressed: {hit.reason} ({hit.file}:{hit.line})")
        out.append(f)
    for s in sups:
        if s.problem is not None:
            out.append(Finding(file=s.file, line=s.line, engine="-", algorithm=None, model=None, thinking=None,
                               thinking_source="", draft_len=None, pinned_value=None, implied_al=None,
                               expected_al=None, verdict="bad-suppression",
                               message=f"malformed suppression: {s.problem}"))
    notes = [f"{s.file}:{s.line}: suppression of {', '.join(sorted(s.verdicts))} covers no finding (stale?)"
             for s in sups if s.problem is None and (s.file, s.line) not in used]
    return out, notes


# ---------------------------------------------------------------------------- baseline


def _key(f: Finding | Mapping[str, Any]) -> tuple[Any, ...]:
    get = f.get if isinstance(f, Mapping) else (lambda k: getattr(f, k))
    return (get("file"), get("verdict"), get("engine"), get("pinned_value"), get("draft_len"))


def baseline_document(findings: Sequence[Finding], *, failing: frozenset[str], provenance: Mapping[str, Any]
                      ) -> dict[str, Any]:
    """The baseline of the failing, unwaived findings (``check --write-baseline``)."""
    rows = [{"file": f.file, "line": f.line, "verdict": f.verdict, "engine": f.engine,
             "pinned_value": f.pinned_value, "draft_len": f.draft_len}
            for f in findings if f.verdict in failing and f.waived is None]
    return {"golden_al_baseline": 1, "provenance": dict(provenance), "findings": rows}


def apply_baseline(findings: list[Finding], document: Any, *, path: Path) -> list[Finding]:
    """Findings with those the baseline knows waived (one entry waives one finding).

    Raises:
        InputFileError: not a baseline written by ``--write-baseline``.
    """
    rows = document.get("findings") if isinstance(document, Mapping) and document.get("golden_al_baseline") == 1 \
        else None
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
        raise InputFileError("not a golden-al baseline (expected {\"golden_al_baseline\": 1, \"findings\": [...]})",
                             path=path, hint="write one with golden-al check ... --write-baseline FILE")
    budget = Counter(_key(r) for r in rows)
    out = []
    for f in findings:
        k = _key(f)
        if f.verdict != "match" and f.waived is None and budget[k] > 0:
            budget[k] -= 1
            f = dataclasses.replace(f, waived=f"baseline: known in {path.name}")
        out.append(f)
    return out


# ---------------------------------------------------------------------------- changed since


def changed_files(ref: str, cwd: Path) -> set[Path]:
    """Files changed since ``ref`` in the git repository around ``cwd``: committed since, uncommitted, and new
    (untracked, not ignored), as resolved paths.

    Raises:
        UsageError: not a git repository, or an unknown ``ref``.
    """
    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=60,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"--changed-since {ref}: git did not run ({exc})") from None
        if done.returncode != 0:
            raise UsageError(f"--changed-since {ref}: git {args[0]} failed: {done.stderr.strip()[:200]}",
                             hint="run it inside the repository, with a ref that exists (fetch it first in CI)")
        return done.stdout

    top = Path(git("rev-parse", "--show-toplevel").strip())
    names = git("diff", "--name-only", "-z", ref, "--").split("\0")
    names += git("ls-files", "--others", "--exclude-standard", "-z").split("\0")
    return {(top / n).resolve() for n in names if n}


def apply_changed_since(findings: list[Finding], changed: set[Path], ref: str) -> list[Finding]:
    """Findings of files not changed since ``ref`` waived (they are reported, and fail only once touched)."""
    out = []
    for f in findings:
        if f.verdict != "match" and f.waived is None and Path(f.file).resolve() not in changed:
            f = dataclasses.replace(f, waived=f"unchanged: not changed since {ref}")
        out.append(f)
    return out


# ---------------------------------------------------------------------------- the no-pins policy


@dataclass
class SelectProblem:
    """A recipe ``select`` cannot plan (its refusal), for the ``unselectable`` finding."""

    file: str
    line: int
    engine: str
    message: str
    hint: str | None = field(default=None)


def apply_no_pins(findings: list[Finding], problems: Iterable[SelectProblem]) -> list[Finding]:
    """The ``no-pins`` policy: every matching pin becomes ``pinned`` (naming what ``select`` chooses), and every
    recipe ``select`` refuses an ``unselectable`` finding. The other verdicts fail already and stay."""
    out = []
    for f in findings:
        if f.verdict == "match":
            chosen = format_value(f.expected_al) if f.expected_al is not None else "?"
            f = dataclasses.replace(
                f, verdict="pinned",
                message=(f"hard-coded {f.pinned_value!s} (it matches: {f.message}); policy no-pins: the golden AL is "
                         f"selected at launch (golden-al select {f.file}) and would be {chosen}: remove the pin"))
        out.append(f)
    for p in problems:
        out.append(Finding(file=p.file, line=p.line, engine=p.engine, algorithm=None, model=None, thinking=None,
                           thinking_source="", draft_len=None, pinned_value=None, implied_al=None, expected_al=None,
                           verdict="unselectable",
                           message=f"policy no-pins: select cannot plan this agentic speculative recipe: {p.message}"
                                   + (f" (hint: {p.hint})" if p.hint else "")))
    return out


def dumps_baseline(document: Mapping[str, Any]) -> str:
    """The baseline file's text (stable key order, one finding per entry)."""
    return json.dumps(document, indent=2, sort_keys=False) + "\n"
