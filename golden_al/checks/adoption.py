"""Adopting the gate on a real tree: configuration, inline suppressions, a baseline, changed files, policies.

None of these hides a finding: a waived finding stays in every output with the reason it does not fail
(:attr:`~golden_al.checks.findings.Finding.waived`), and the summary counts them.

* **Configuration**: ``.golden-al.toml`` (top-level keys) or ``[tool.golden-al]`` in ``pyproject.toml``, the
  nearest one from the working directory up to the repository root: ``exclude`` (globs), ``policy``
  (``default`` or ``no-pins``), ``golden-dir``, ``allow`` (verdicts), ``baseline`` (a file), ``strict-suppressions``
  (true: a stale suppression fails); paths are relative to the configuration file. Flags on the command line win
  (``--exclude`` adds to the list). Its settings (all but ``baseline``) are an input of every verdict.
* **Inline suppressions**: ``# golden-al: ignore[unresolved] -- reason`` in a comment, by the file kind's own
  syntax (shell, dotenv and YAML ``#`` comments, a Dockerfile's ``#`` lines, Python comments; never text inside a
  string or a here-document). The verdicts are named (no blanket ignore) and the reason is required; a trailing
  comment covers its own line, a comment on a line of its own the next line that is not blank or a comment. A
  malformed one is a ``bad-suppression`` finding; so is a stale one (it covers no finding), which fails only under
  ``strict-suppressions`` / ``--strict-suppressions`` (else it is waived, and listed).
* **Baseline** (``--baseline FILE``, written by ``--write-baseline FILE``): the failing findings known when it was
  written, keyed on the verdict's own facts (file, verdict, engine, value, k, thinking mode, model, golden value)
  and the digest of everything it read (:attr:`~golden_al.checks.findings.Finding.inputs`): an entry waives its
  finding only while none of its inputs changed (not its line: a line number alone is not an input). One entry
  waives one finding, so a second identical pin is new. It holds no message (no knob name for the census to find
  in it), and the baseline file itself is never checked.
* **Changed since** (``--changed-since REF``): the whole tree is still checked, but only findings that read
  something changed since ``REF`` (committed, uncommitted or new) fail: their own file, the recipe a master config
  points to (changed, deleted or renamed), a submodule holding one of them (bumped), a curve judged against (edited,
  or a curve file added to or removed from the store), the configuration.
* **Policy** ``no-pins`` (InferenceX's rule since 2026-09: the golden AL is selected at launch, never written): a
  hard-coded value is a ``pinned`` finding even when it matches, naming the value ``select`` chooses; a recipe that
  speculates on an agentic benchmark must be selectable, else an ``unselectable`` finding.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.checks.findings import VERDICTS, Finding
from golden_al.errors import InputFileError, UsageError
from golden_al.plugin.values import format_value
from golden_al.safeio import yaml_docs
from golden_al.safeio.inputs import Input, digest_of, shown_path, text_input

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
_KEYS = ("exclude", "policy", "golden-dir", "allow", "baseline", "strict-suppressions")


# ---------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class CheckConfig:
    """The gate's settings from a configuration file (empty when there is none)."""

    path: Path | None = None
    exclude: tuple[str, ...] = ()
    policy: str = "default"
    golden_dir: Path | None = None
    allow: tuple[str, ...] = ()
    baseline: Path | None = None
    strict_suppressions: bool = False

    def input(self) -> Input | None:
        """The configuration as an input of every verdict: its settings but the baseline (writing a baseline and
        then naming it in the file re-judges nothing); None without a file."""
        if self.path is None:
            return None
        settings = [self.exclude, self.policy, str(self.golden_dir), self.allow, self.strict_suppressions]
        return text_input("config", shown_path(self.path), json.dumps(settings))


def _tool_table(data: Mapping[str, Any]) -> Any:
    tool = data.get("tool", {})
    return tool.get("golden-al") if isinstance(tool, Mapping) else None


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
                if "golden-al" in text and _tool_table(_toml(pyproject, text)) is not None:
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


def _strings(value: Any, key: str, path: Path, choices: Sequence[str] = ()) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InputFileError(f"{key} must be a string or a list of strings, got {value!r}", path=path)
    bad = [v for v in values if choices and v not in choices]
    if bad:
        raise InputFileError(f"{key}: entry {bad[0]!r} is not one of {', '.join(choices)}", path=path,
                             hint="every other verdict but match fails the check: fix the file instead")
    return tuple(values)


def load_config(path: Path) -> CheckConfig:
    """Read a configuration file (see the module docstring).

    Raises:
        InputFileError: not TOML, an unknown key, or a value (or a list's entry) of the wrong type or outside its
            choices, naming the file and the key.
    """
    from golden_al.checks.findings import ALLOWABLE_VERDICTS

    data = _toml(path)
    table = _tool_table(data) if path.name == "pyproject.toml" else data
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
    strict = table.get("strict-suppressions", False)
    if not isinstance(strict, bool):
        raise InputFileError(f"strict-suppressions must be true or false, got {strict!r}", path=path)
    return CheckConfig(path=path, exclude=_strings(table.get("exclude", []), "exclude", path), policy=policy,
                       golden_dir=base / golden if golden else None,
                       allow=_strings(table.get("allow", []), "allow", path, ALLOWABLE_VERDICTS),
                       baseline=base / baseline if baseline else None, strict_suppressions=strict)


# ---------------------------------------------------------------------------- suppressions


_SUPPRESS = re.compile(r"(?:^|\s)#\s*golden-al:\s*ignore(?P<rest>.*)$")
_FORM = re.compile(r"^\[(?P<verdicts>[^\]]*)\]\s*(?:--\s*(?P<reason>.*))?$")
#: File kinds with comments, so suppressions (:func:`comment_test`).
SUPPRESSIBLE = ("yaml", "shell", "dotenv", "dockerfile", "python")


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


def comment_test(kind: str, text: str, yaml_nodes: Sequence[Any] = ()) -> Callable[[int, int], bool]:
    """Whether (line, column) of ``text`` lies in a comment, by the file kind's own syntax: shell and dotenv by
    tree-sitter-bash's comment nodes (never a string or a here-document), YAML outside every scalar of its composed
    ``yaml_nodes`` (a quoted or block string holds no comment; none given: the text did not parse, no comment),
    Python by its tokenizer, a Dockerfile's lines that begin with ``#``; other kinds have none."""
    spans: dict[int, list[tuple[int, int]]] = {}
    if kind in ("shell", "dotenv"):
        from golden_al.shell.parse import ShellSyntaxError, comment_spans

        try:
            spans = comment_spans(text)
        except ShellSyntaxError:  # not parsed within its bound: no comment is known
            pass
    elif kind == "python":
        import io
        import tokenize

        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    spans.setdefault(tok.start[0], []).append((tok.start[1], tok.end[1]))
        except (tokenize.TokenError, SyntaxError):  # the comments before the error stay comments
            pass
    elif kind == "dockerfile":
        lines = text.splitlines()
        return lambda line, _col: 0 < line <= len(lines) and lines[line - 1].lstrip().startswith("#")
    elif kind == "yaml" and yaml_nodes:
        scalars = [((n.start_mark.line + 1, n.start_mark.column), (n.end_mark.line + 1, n.end_mark.column))
                   for n in yaml_docs.yaml_nodes(yaml_nodes) if isinstance(n.value, str)]
        return lambda line, col: not any(a <= (line, col) < b for a, b in scalars)
    return lambda line, col: any(a <= col < b for a, b in spans.get(line, ()))


def read_suppressions(file: str, text: str, in_comment: Callable[[int, int], bool]) -> list[Suppression]:
    """Every suppression comment of a text, well-formed or not; ``in_comment`` (:func:`comment_test`) tells a
    comment from the same characters in a string."""
    lines = text.splitlines()
    out: list[Suppression] = []
    for i, line in enumerate(lines, start=1):
        if "golden-al" not in line:
            continue
        m = _SUPPRESS.search(line)
        if m is None or not in_comment(i, line.index("#", m.start())):
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


def apply_suppressions(findings: list[Finding], suppressions: Iterable[Suppression], *, strict: bool = False
                       ) -> list[Finding]:
    """Findings with the covered ones waived, and a ``bad-suppression`` finding per malformed comment and per stale
    one (it covers no finding: it would waive a later finding on its line unseen); a stale one is waived unless
    ``strict``."""
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
        stale = s.problem is None and (s.file, s.line) not in used
        if s.problem is None and not stale:
            continue
        message = (f"malformed suppression: {s.problem}" if not stale else
                   f"stale suppression: ignore[{', '.join(sorted(s.verdicts))}] covers no finding on line {s.target}")
        out.append(Finding(file=s.file, line=s.line, engine="-", algorithm=None, model=None, thinking=None,
                           thinking_source="", draft_len=None, pinned_value=None, implied_al=None,
                           expected_al=None, verdict="bad-suppression", message=message,
                           waived="lenient: a stale suppression fails under --strict-suppressions"
                           if stale and not strict else None))
    return out


# ---------------------------------------------------------------------------- baseline


#: A baseline entry's fields and their types: the verdict's own facts, then the digest of what it read.
_ENTRY: dict[str, tuple[type, ...]] = {
    "file": (str,), "line": (int,), "verdict": (str,), "engine": (str,), "pinned_value": (str, type(None)),
    "draft_len": (int, type(None)), "thinking": (str, type(None)), "model": (str, type(None)),
    "expected_al": (int, float, type(None)), "inputs_digest": (str,)}
_REWRITE = "write it again with golden-al check ... --write-baseline FILE"


def _key(f: Finding) -> tuple[Any, ...]:
    return (f.file, f.verdict, f.engine, f.pinned_value, f.draft_len, f.thinking, f.model, f.expected_al,
            digest_of(f.inputs))


def baseline_document(findings: Sequence[Finding], *, failing: frozenset[str], provenance: Mapping[str, Any]
                      ) -> dict[str, Any]:
    """The baseline of the failing, unwaived findings (``check --write-baseline``)."""
    names = [name for name in _ENTRY if name != "line"]
    rows = [{**dict(zip(names, _key(f), strict=True)), "line": f.line}
            for f in findings if f.verdict in failing and f.waived is None]
    return {"golden_al_baseline": 2, "provenance": dict(provenance), "findings": rows}


def _entry(row: Any, i: int, path: Path) -> tuple[Any, ...]:
    """One baseline entry's key, or the reason it is malformed (naming the file and the entry)."""
    def bad(what: str) -> InputFileError:
        return InputFileError(f"findings[{i}]: {what}", path=path, hint=_REWRITE)

    if not isinstance(row, Mapping):
        raise bad(f"an entry must be an object, got {type(row).__name__}")
    odd = sorted(set(row) ^ set(_ENTRY))
    if odd:
        raise bad(f"{'unknown' if odd[0] in row else 'missing'} field {odd[0]!r}")
    for name, types in _ENTRY.items():
        value = row[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise bad(f"{name} must be {' or '.join('null' if t is type(None) else t.__name__ for t in types)}, "
                      f"got {value!r}")
    if row["verdict"] not in VERDICTS or not re.fullmatch(r"[0-9a-f]{64}", row["inputs_digest"]):
        raise bad(f"verdict {row['verdict']!r} or inputs_digest {row['inputs_digest']!r} is not one golden-al writes")
    return tuple(row[name] for name in _ENTRY if name != "line")


def apply_baseline(findings: list[Finding], document: Any, *, path: Path) -> list[Finding]:
    """Findings with those the baseline knows waived (one entry waives one finding, while nothing it read changed).

    Raises:
        InputFileError: not a baseline written by ``--write-baseline`` (version 2), or a malformed entry (named).
    """
    version = document.get("golden_al_baseline") if isinstance(document, Mapping) else None
    rows = document.get("findings") if version == 2 else None  # type: ignore[union-attr]
    if not isinstance(rows, list):
        raise InputFileError("not a golden-al baseline (expected {\"golden_al_baseline\": 2, \"findings\": [...]})"
                             + (": version 1 did not key entries on what their verdicts read" if version == 1 else ""),
                             path=path, hint=_REWRITE)
    budget = Counter(_entry(r, i, path) for i, r in enumerate(rows))
    out = []
    for f in findings:
        k = _key(f)
        if f.verdict != "match" and f.waived is None and budget[k] > 0:
            budget[k] -= 1
            f = dataclasses.replace(f, waived=f"baseline: known in {path.name}")
        out.append(f)
    return out


# ---------------------------------------------------------------------------- changed since


def changed_files(ref: str, cwd: Path) -> dict[Path, str]:
    """Files changed since ``ref`` in the git repository around ``cwd`` (resolved paths) -> ``A`` (added, also
    untracked and not ignored, and a rename's new path), ``D`` (deleted, and a rename's old path), ``M`` and git's
    other letters; a bumped submodule is its folder.

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
    fields = git("diff", "--name-status", "-z", ref, "--").split("\0")
    out: dict[Path, str] = {}
    while len(fields) > 1:
        status, *fields = fields
        paths = [fields.pop(0) for _ in range(2 if status[:1] in ("R", "C") else 1)]
        if status[:1] == "R":
            out[(top / paths[0]).resolve()] = "D"
        out[(top / paths[-1]).resolve()] = "A" if status[:1] in ("R", "C") else status[:1]
    for name in git("ls-files", "--others", "--exclude-standard", "-z").split("\0"):
        if name:
            out[(top / name).resolve()] = "A"
    return out


def apply_changed_since(findings: list[Finding], changed: Mapping[Path, str], ref: str) -> list[Finding]:
    """Findings none of whose inputs changed since ``ref`` waived (they are reported, and fail once touched); a
    failing finding whose own file did not change names the input that did."""
    @functools.cache
    def moved(name: str) -> bool:
        p = Path(name.rstrip("/")).resolve()
        if name.endswith("/"):  # a folder's listing: a file added to it or removed from it
            return any(status in "AD" and p in c.parents for c, status in changed.items())
        return p in changed or any(parent in changed for parent in p.parents)  # a bumped submodule holds it

    out = []
    for f in findings:
        if f.verdict != "match" and f.waived is None:
            names = [i.name for i in f.inputs if i.kind != "env" and not i.name.startswith("<") and moved(i.name)]
            if not names and not moved(f.file):
                f = dataclasses.replace(f, waived=f"unchanged: nothing it read changed since {ref}")
            elif names and not moved(f.file):
                f = dataclasses.replace(f, message=f"{f.message}; changed since {ref}: {', '.join(names)}")
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
