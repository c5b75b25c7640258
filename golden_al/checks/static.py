"""``golden-al check``: every pinned synthetic-acceptance value in a tree, against the golden store.

:func:`check_paths` walks files and directories (recipe and master-config YAML, shell
scripts, JSON submissions, Dockerfiles, Python launchers, Jinja templates: the kinds of
:mod:`golden_al.checks.file_kinds`; any other file that names a knob is ``unread``; nothing is
ever executed),
collects every :class:`~golden_al.checks.findings.Pin` (:mod:`~golden_al.checks.yaml_configs`,
:mod:`~golden_al.knobs.scripts`) and turns each into a
:class:`~golden_al.checks.findings.Finding` with :func:`evaluate`:

* **implied AL** of the pinned value: SGLang and ATOM length and vLLM length as is;
  TensorRT-LLM value + 1 (:func:`distributions.units.al_from_drafts`); ATOM rate
  ``1 + k * rate`` (:func:`distributions.units.al_from_acceptance_rate`); vLLM rates
  ``1 + sum(rates)``;
* **expected AL**: the store's golden value for (model, thinking mode, k) on the curve
  of the engine's draft method (:meth:`GoldenStore.lookup`);
* **verdict** (the most severe that applies, in this order): ``unsafe-value`` (the
  engine would reject, clamp, bias or silently ignore the value), ``missing-companion``
  (a setting the value needs is absent), ``non-agentic-simulation`` (simulated
  acceptance on a benchmark that is not agentic), ``mismatch``, ``undetermined`` (the
  files do not fix the value, k, model or thinking mode), ``no-golden`` (no committed
  value for what the files say), ``match``.

Thinking mode comes from the strongest setting found (per-request kwargs >
server/front-end defaults > engine environment defaults > chat-template file name >
the harness's ``THINKING_MODE``); when nothing says, thinking on is assumed and the
finding says so. A file that cannot be read, decoded or parsed in full (malformed
YAML/JSON, too large, not a regular file, permission denied, NUL bytes) gives an
``unreadable`` finding (a failure; :mod:`golden_al.checks.unreadable`) at the line of the
problem, and one per knob line found by a plain text scan; the rest of the tree is still
checked.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributions.errors import DistributionError
from golden_al import safeio
from golden_al.checks.cache import ResultCache
from golden_al.checks.file_kinds import (
    dockerfile_as_shell,
    file_kind,
    jinja_as_text,
    jinja_inner_kind,
    python_env_as_shell,
)
from golden_al.checks.findings import SEVERITY, Finding, failing_verdicts
from golden_al.checks.unreadable import unread_findings, unreadable_findings
from golden_al.errors import UnreadableInputError, UsageError
from golden_al.knobs.census import (
    ANY_KNOB,
    HARNESS,
    PROSE_PREFIX,
    Occurrence,
    census_data,
    census_json,
    census_python,
    census_shell,
    census_text,
    iter_pin_sites,
    may_hold_knob,
    names_knob_in_parts,
    python_may_set_knob,
)
from golden_al.knobs.names import MASTER_LENGTH_KEY
from golden_al.plugin.pins import ModelName, Pin
from golden_al.plugin.profile import PinContext, PinReview
from golden_al.plugin.registry import engine_names, get_profile
from golden_al.plugin.values import format_value, parse_number
from golden_al.recipes.derive import derive
from golden_al.safeio.inputs import Input, merge_inputs, shown_path, text_input

__all__ = ["DEFAULT_MAX_FILE_SIZE", "CheckReport", "check_paths", "evaluate", "excluded", "iter_candidate_files"]

_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache",
              ".hypothesis", ".ruff_cache", ".eggs", "site-packages"}
#: Default ``--max-file-size``: a larger file is ``unreadable`` (a failure, never a skip).
DEFAULT_MAX_FILE_SIZE = safeio.DEFAULT_MAX_BYTES


@dataclass
class CheckReport:
    """Findings of one run, with what was scanned."""

    findings: list[Finding] = field(default_factory=list)
    files_scanned: int = 0
    diagnostics: list[str] = field(default_factory=list)
    #: failing verdicts the caller relaxed (``check --allow``; see :data:`ALLOWABLE_VERDICTS`)
    allowed: frozenset[str] = frozenset()
    #: knob occurrences the census found (each one covered by a finding)
    occurrences: int = 0
    #: files left out by ``--exclude`` (never read)
    excluded: list[str] = field(default_factory=list)
    #: ``file:line`` of knob names in documentation text (a changelog's ``description``): census entries that set
    #: nothing, listed in the summary, never pins (:data:`golden_al.knobs.census.PROSE_KEYS`)
    prose: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether any finding has a verdict that fails (every verdict but ``match``, less :attr:`allowed`) and is
        not waived (an inline suppression with its reason, the baseline, ``--changed-since``)."""
        failing = failing_verdicts(self.allowed)
        return any(f.verdict in failing and f.waived is None for f in self.findings)

    def waived_counts(self) -> dict[str, int]:
        """Waived findings per reason kind (``suppressed``, ``baseline``, ``unchanged``)."""
        out: dict[str, int] = {}
        for f in self.findings:
            if f.waived is not None:
                kind = f.waived.split(":", 1)[0]
                out[kind] = out.get(kind, 0) + 1
        return out

    def allowed_counts(self) -> dict[str, int]:
        """Findings per relaxed verdict (those that would have failed without ``--allow``)."""
        return {v: n for v, n in self.counts().items() if v in self.allowed and n}

    def counts(self) -> dict[str, int]:
        """Findings per verdict (every verdict listed, zeros included)."""
        out = {v: 0 for v in reversed(SEVERITY)}
        for f in self.findings:
            out[f.verdict] = out.get(f.verdict, 0) + 1
        return out


# ------------------------------------------------------------------------ walking


def _head(path: Path) -> bytes | UnreadableInputError:
    """The first bytes of a regular file (never opening a FIFO or device), or why not."""
    try:
        fd = safeio.open_regular(path)
    except UnreadableInputError as exc:
        return exc
    with os.fdopen(fd, "rb") as fh:
        try:
            return fh.read(64)
        except OSError as exc:
            return UnreadableInputError(f"cannot read: {exc.strerror or exc}", path=path, reason="os-error")


def excluded(path: Path, root: Path, patterns: Sequence[str]) -> bool:
    """Whether ``path`` (found under ``root``) matches an ``--exclude`` glob: its path relative to
    ``root`` (``benchmarks/*/speedbench/*``; ``**`` spans directories) or its name (``perf-changelog.yaml``)."""
    if not patterns:
        return False
    import fnmatch

    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    for pat in patterns:
        if fnmatch.fnmatchcase(path.name, pat) or fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(
                rel, pat.replace("**/", "*/")) or fnmatch.fnmatchcase(rel, pat.replace("/**", "")):
            return True
    return False


def iter_candidate_files(paths: Sequence[str | Path], *, exclude: Sequence[str] = (),
                         skipped: list[Path] | None = None) -> Iterable[tuple[Path, str]]:
    """(file, kind) for every file under ``paths`` that ``check`` reads (:func:`file_kind`; given files always).

    Fail closed: inside a directory, an entry that is not a regular file or directory (a
    FIFO, socket, device, or a symbolic link to one, or a dangling link) and a file whose
    first bytes cannot be read are yielded with kind ``"unreadable"``; nothing but a
    regular file is ever opened. A symbolic link to a directory is followed when it stays inside
    the checked directory (each folder read once), and yielded with kind ``"link-outside"`` (an
    ``unreadable`` finding) when it leads out of it. A file
    found in a directory that matches an ``exclude`` glob (:func:`excluded`) is not yielded
    but appended to ``skipped``; a file given by name is always read.
    """
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            root = p.resolve()
            walked: set[Path] = set()
            for dirpath, dirnames, filenames in os.walk(p, followlinks=True):
                here = Path(dirpath).resolve()
                if here in walked:  # a link back into what was walked: a cycle, or the same folder twice
                    dirnames[:] = []
                    continue
                walked.add(here)
                keep = []
                for d in sorted(d for d in dirnames if d not in _SKIP_DIRS):
                    link = Path(dirpath) / d
                    target = link.resolve()
                    if link.is_symlink() and target != root and root not in target.parents:
                        yield link, "link-outside"  # its files are what a consumer reads: refused, never skipped
                        continue
                    keep.append(d)
                dirnames[:] = keep
                for name in sorted(filenames):
                    f = Path(dirpath) / name
                    if excluded(f, p, exclude):
                        if skipped is not None:
                            skipped.append(f)
                        continue
                    head = _head(f)
                    if isinstance(head, UnreadableInputError):
                        yield f, "unreadable"
                        continue
                    kind = file_kind(f, head)
                    if kind:
                        yield f, kind
        else:
            head = _head(p)
            if isinstance(head, UnreadableInputError):
                yield p, file_kind(p, b"") or "unreadable"
                continue
            yield p, file_kind(p, head) or "other"  # a file given by name is read, whatever its kind


# ---------------------------------------------------------------------- evaluation


def _context(pin: Pin) -> PinContext:
    """The pin as its engine's review reads it."""
    raw = pin.raw_value or ""
    return PinContext(knob=pin.knob, raw=raw, value=parse_number(raw), k=pin.draft.k, algorithm=pin.algorithm,
                      spec=pin.spec, companions=pin.companions, two_model=pin.draft.two_model,
                      version=None if pin.version is None else pin.version.version)


def _version_problems(pin: Pin) -> tuple[list[tuple[str, str]], list[str]]:
    """What the judged version's facts say of the pin's algorithm (a version that refuses it does not start),
    and the note naming the version judged by."""
    if pin.version is None or pin.version.version is None:
        return [], []
    profile = get_profile(pin.engine)
    version = pin.version.version
    notes = [f"judged by {profile.display_name} {version.version} facts ({pin.version.how})"]
    algorithm = (pin.algorithm or "").strip().lower()
    if algorithm and algorithm in version.refused_algorithms:
        src = version.source
        return [("unsafe-value", f"{profile.display_name} {version.version} refuses {pin.algorithm!r} ({src.repo} "
                                 f"{src.path} at {src.version}): the server does not start, so the pin is never "
                                 "applied")], notes
    return [], notes


def _implied(pin: Pin) -> tuple[float | None, list[tuple[str, str]], list[str]]:
    """(implied AL, problems, notes) of the pinned value, by the engine's own review (its profile's
    ``review_pin``, ``golden_al/engines/``). A master-config value is the golden AL itself, whatever
    the engine: the benchmark's injector turns it into the engine's knob."""
    problems: list[tuple[str, str]] = []
    retired = get_profile(pin.engine).retired_problem(pin.knob) if pin.knob != MASTER_LENGTH_KEY else None
    if retired:
        problems.append(("unsafe-value", retired))
    if pin.raw_value is None:
        return None, problems, []
    ctx = _context(pin)
    if pin.knob == MASTER_LENGTH_KEY:
        review = PinReview(al=ctx.value)
        if ctx.value is None:
            review.problems.append(("unsafe-value", f"{pin.knob}={ctx.raw!r} is not a number"))
        elif ctx.k is not None and not 1.0 <= ctx.value <= ctx.k + 1:
            review.problems.append(("unsafe-value", f"AL {ctx.raw} is outside [1, k+1] = [1, {ctx.k + 1}]"))
    else:
        review = get_profile(pin.engine).review(ctx)
    return review.al, problems + review.problems, review.notes


def _tolerance(pin: Pin) -> float:
    """How close the implied AL must be: the engine's own tolerance (exact unless it rounds)."""
    if pin.knob == MASTER_LENGTH_KEY or pin.raw_value is None:
        return 1e-9
    return get_profile(pin.engine).tolerance(_context(pin))


def evaluate(pin: Pin, store: Any, *, store_problem: str | None = None) -> Finding:
    """The finding for one pin (see the module docstring for the rules): the engine's review of the pinned value
    against the golden point of its settings (:func:`golden_al.recipes.derive.derive`, the derivation ``select``
    writes)."""
    problems: list[tuple[str, str]] = list(pin.problems)
    notes: list[str] = []
    implied, vproblems, vnotes = _implied(pin)
    problems += vproblems
    notes += vnotes
    version_problems, version_notes = _version_problems(pin)
    problems += version_problems
    notes += version_notes
    if pin.agentic.agentic is False:
        problems.append(("non-agentic-simulation", f"simulated acceptance on a benchmark that is not agentic: "
                                                   f"{pin.agentic.reason}"))
    d = derive(pin, store, store_problem=store_problem)
    expected: float | None = None
    golden: tuple[str, str]
    if pin.raw_value is None:
        golden = ("undetermined", f"the value cannot be read statically: {pin.unresolved}")
    elif d.point is None:
        golden = (d.verdict, d.reason)
        glob = next((m for m in pin.models if m.pattern and m.name == d.model_shown), None)
        if glob is not None and d.thinking is not None and d.k is not None and d.model_how.startswith("ambiguous"):
            golden = (d.verdict, f"the glob {glob.name!r} fits several models and the files do not say which runs: "
                                 + _per_model(pin, store, glob.name, implied))
    else:
        where = f"golden {d.point.model} {d.point.thinking} k={d.k} = {format_value(d.point.al)} [{d.point.curve}]"
        expected = float(d.point.al)
        if implied is None:
            golden = ("undetermined", "the implied AL cannot be computed")
        else:
            golden = ("match" if abs(implied - d.point.al) <= _tolerance(pin) else "mismatch", where)
    problems.append(golden)
    verdict = min((p[0] for p in problems), key=SEVERITY.index)
    message = _message(pin, implied, expected, golden[1], problems, verdict, notes + pin.notes, d.model_how, d.k)
    return Finding(
        file=pin.file, line=pin.line, engine=pin.engine, algorithm=pin.algorithm,
        model=d.model_shown, thinking=d.thinking, thinking_source=d.thinking_how,
        draft_len=d.k, pinned_value=pin.raw_value,
        implied_al=None if implied is None else round(implied, 12),
        expected_al=expected, verdict=verdict, message=message, use_line=pin.use_line,
        engine_version=None if pin.version is None else pin.version.name, inputs=merge_inputs(pin.inputs, d.inputs),
    )


def _per_model(pin: Pin, store: Any, glob: str, implied: float | None) -> str:
    """What each store model a glob admits would say of the pin."""
    out = []
    for key in store.models_matching(glob):
        d = derive(dataclasses.replace(pin, models=[ModelName(key, "")]), store)
        if d.point is None:
            out.append(f"{key}: {d.verdict}")
            continue
        same = implied is not None and abs(implied - d.point.al) <= _tolerance(pin)
        out.append(f"{key}: {'match' if same else 'mismatch'}, golden {format_value(d.point.al)}")
    return "; ".join(out)


def _message(pin: Pin, implied: float | None, expected: float | None, golden_text: str,
             problems: list[tuple[str, str]], verdict: str, notes: list[str], model_how: str, k: int | None) -> str:
    parts = []
    value = f"{pin.knob}={pin.raw_value}" if pin.raw_value is not None else f"{pin.knob} (unresolved)"
    head = value
    if implied is not None and pin.raw_value is not None and parse_number(pin.raw_value) != implied:
        head += f" (AL {format_value(implied)})"
    if verdict == "match":
        parts.append(f"{head} matches {golden_text}")
    elif verdict == "mismatch":
        parts.append(f"{head} differs from {golden_text}")
    else:
        parts.append(head)
    for v, text in problems:
        if v in ("match", "mismatch"):
            continue
        parts.append(f"[{v}] {text}")
    if k is not None and pin.draft.rule:
        parts.append(f"k={k} from {pin.draft.rule}")
    parts.append(model_how)
    parts += notes
    return "; ".join(p for p in parts if p)


# ------------------------------------------------------------------------ orchestration


class _Reader:
    """Reads each file once, bounded; remembers why a file could not be read."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._cache: dict[Path, str | UnreadableInputError] = {}
        self.raw_text: dict[Path, str] = {}  # text of files that read but do not decode

    def __call__(self, path: Path) -> str | UnreadableInputError:
        if path not in self._cache:
            try:
                data = safeio.read_bytes(path, max_bytes=self.max_bytes)
            except UnreadableInputError as exc:
                self._cache[path] = exc
                return exc
            try:
                self._cache[path] = safeio.decode_text(data, path=path)
            except UnreadableInputError as exc:
                self._cache[path] = exc
                self.raw_text[path] = data.decode("utf-8", errors="replace").replace("\x00", "")
        return self._cache[path]


def check_paths(paths: Sequence[str | Path], *, store: Any = None, store_problem: str | None = None,
                max_file_size: int = DEFAULT_MAX_FILE_SIZE, allow: Iterable[str] = (),
                exclude: Sequence[str] = (), policy: str = "default",
                baseline: Path | None = None, changed_since: str | None = None,
                inputs: Sequence[Input] = (), strict_suppressions: bool = False, cache: Path | None = None) -> CheckReport:
    """Check every file under ``paths`` against ``store`` (a :class:`GoldenStore`).

    Every knob occurrence the census finds (:mod:`golden_al.knobs.census`) ends as a finding:
    the finding of the pin that covers it, or an ``unresolved`` one. A file that cannot be read,
    decoded or parsed in full gives ``unreadable`` findings (:mod:`golden_al.checks.unreadable`);
    ``max_file_size`` is the byte cap of one file. ``allow`` relaxes ``no-golden`` and/or
    ``undetermined`` (:data:`~golden_al.checks.findings.ALLOWABLE_VERDICTS`); ``exclude``: globs of
    files under the given directories that are not read (listed in :attr:`CheckReport.excluded`).
    ``policy`` ``no-pins``, inline suppressions (a stale one fails with ``strict_suppressions``), ``baseline`` and
    ``changed_since``: :mod:`golden_al.checks.adoption` (a waived finding stays, with its reason). ``inputs``: what
    every verdict read besides its files (the gate's configuration); each finding carries them after its own.
    ``cache``: a file of per-file results kept between runs, keyed on content (:mod:`golden_al.checks.cache`).

    Raises:
        UsageError: a path does not exist, ``allow`` names another verdict, or nothing was
            scanned ("nothing to check").
    """
    from golden_al.checks.findings import ALLOWABLE_VERDICTS
    from golden_al.checks.yaml_configs import clear_path_cache

    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"{p}: no such file or directory")
    allowed = frozenset(allow)
    bad = sorted(allowed - set(ALLOWABLE_VERDICTS))
    if bad:
        raise UsageError(f"--allow {','.join(bad)}: only {', '.join(ALLOWABLE_VERDICTS)} can be allowed",
                         hint="every other verdict but match fails the check")
    clear_path_cache()
    skipped: list[Path] = []
    files = list(iter_candidate_files(paths, exclude=exclude, skipped=skipped))
    if baseline is not None:  # the gate's own record of known findings is not a config
        files = [(p, k) for p, k in files if p.resolve() != baseline.resolve()]
    checker = _Checker(_Reader(max_file_size), [Path(p).resolve() for p in paths if Path(p).is_dir()], store,
                       store_problem)
    checker.report = CheckReport(allowed=allowed, excluded=[str(p) for p in skipped])
    checker.find_master_refs(files)
    if cache is not None:
        checker.cache = ResultCache(cache, run=[list(map(str, checker.roots)), max_file_size, os.getcwd(), store_problem,
                                                store and [i.to_dict() for i in store.inputs()]])
    for path, kind in files:
        checker.check_file(path, kind)
    if checker.cache is not None:
        checker.cache.save()
    report = checker.report
    if report.files_scanned == 0:
        why = f" ({len(skipped)} excluded by --exclude)" if skipped else ""
        raise UsageError("nothing to check: no YAML, JSON or shell file under " + ", ".join(map(str, paths)) + why,
                         hint="give the recipe, config or script files (or the directories that hold them)")
    report.findings = _dedupe(report.findings)
    _adopt(checker, files, policy=policy, baseline=baseline, changed_since=changed_since, shared=inputs,
           strict_suppressions=strict_suppressions)
    report.findings.sort(key=lambda f: (f.file, f.line, f.draft_len or 0))
    return report


def _adopt(checker: _Checker, files: Sequence[tuple[Path, str]], *, policy: str, baseline: Path | None,
           changed_since: str | None, shared: Sequence[Input], strict_suppressions: bool) -> None:
    """The adoption layer over the findings: the policy, inline suppressions, the baseline, changed files."""
    from golden_al.checks import adoption

    report = checker.report
    if policy not in adoption.POLICIES:
        raise UsageError(f"policy {policy!r} is not one of {', '.join(adoption.POLICIES)}")
    if policy == "no-pins":
        report.findings = adoption.apply_no_pins(report.findings, _select_problems(checker, files))
    sups = [s for path, kind in files if kind in adoption.SUPPRESSIBLE
            and isinstance(text := checker.read(path), str) and "golden-al" in text
            for s in adoption.read_suppressions(str(path), text, adoption.comment_test(kind, text, _nodes(
                checker.parse(path, text) if kind == "yaml" else [])))]
    report.findings = adoption.apply_suppressions(report.findings, sups, strict=strict_suppressions)
    for i, f in enumerate(report.findings):  # the gate's configuration judged every finding
        own = () if f.inputs else checker.file_inputs(Path(f.file), t if isinstance(t := checker.read(Path(f.file)),
                                                                                      str) else None)
        report.findings[i] = dataclasses.replace(f, inputs=merge_inputs(own, f.inputs, shared))
    if baseline is not None:
        report.findings = adoption.apply_baseline(report.findings, safeio.read_json(baseline), path=baseline)
    if changed_since is not None:
        root = next((Path(p) for p, _ in files), Path("."))
        report.findings = adoption.apply_changed_since(
            report.findings, adoption.changed_files(changed_since, root.parent if root.is_file() else root),
            changed_since)


def _nodes(docs: Any) -> list[Any]:
    """The composed nodes of a YAML file's documents (none when it did not parse)."""
    return [d.node for d in docs] if isinstance(docs, list) else []


def _select_problems(checker: _Checker, files: Sequence[tuple[Path, str]]) -> list[Any]:
    """Every agentic speculative recipe ``select`` cannot plan (its pins aside: they are findings of their own),
    with the model prefix of a master config that runs it as the run's model: the refusal ``select`` would give."""
    from golden_al.checks.adoption import SelectProblem
    from golden_al.checks.yaml_configs import YamlError
    from golden_al.recipes.derive import Identity
    from golden_al.recipes.plan import plan_document
    from golden_al.recipes.srt_slurm import read_recipe

    out: list[SelectProblem] = []
    if checker.store is None:
        return out
    for path, kind in files:
        text = checker.read(path) if kind == "yaml" else None
        if not isinstance(text, str) or "speculative" not in text:
            continue
        docs = checker.parse(path, text)
        if isinstance(docs, YamlError):
            continue
        refs = checker.refs.get(path.resolve()) or []
        model = next((r.model_prefix or r.model for r in refs if r.model_prefix or r.model), None)
        kinds = {r.agentic.agentic for r in refs}
        agentic = kinds.pop() if len(kinds) == 1 else None
        for doc in docs:
            try:
                recipe = read_recipe(doc.data)
                if recipe is None:
                    continue
                identity = Identity(model=model, model_source="the master config that runs it", agentic=agentic)
                plan_document(doc.data, path=str(path), selector=None, identity=identity, store=checker.store,
                              allow_pins=True, lines=doc.lines, refs=refs)
            except UsageError as exc:  # a SelectionError, or a malformed variant section srtctl would refuse too
                out.append(SelectProblem(str(path), 1, (recipe.engine if recipe else None) or "-", exc.message, exc.hint))
    return out


class _Checker:
    """One run of :func:`check_paths`: the bounded reader, each YAML file parsed once, the master
    configs' references to recipes, and the report."""

    def __init__(self, read: _Reader, roots: list[Path], store: Any, store_problem: str | None) -> None:
        self.read = read
        self.roots = roots
        self.store = store
        self.store_problem = store_problem
        self.report = CheckReport()
        self.parsed: dict[Path, Any] = {}  # resolved path -> its YAML documents or YamlError
        self.refs: dict[Path, list[Any]] = {}
        self.ref_files: dict[Path, list[Path]] = {}  # recipe -> the master configs that run it
        self.recipes: dict[Path, Any] = {}
        self.digested: dict[tuple[Path, str | None], Input] = {}
        self.cache: ResultCache | None = None

    def parse(self, path: Path, text: str) -> Any:
        """The YAML documents of ``path`` (or its YamlError), parsed once per run."""
        from golden_al.checks.yaml_configs import YamlError, load_yaml_docs

        key = path.resolve()
        if key not in self.parsed:
            try:
                self.parsed[key] = load_yaml_docs(text)
            except YamlError as exc:
                self.parsed[key] = exc
        return self.parsed[key]

    def find_master_refs(self, files: Sequence[tuple[Path, str]]) -> None:
        """Master configs first: which recipes they run, for which model (context only, never a pin)."""
        from golden_al.checks.yaml_configs import YamlError, master_refs

        for path, kind in files:
            if kind != "yaml":
                continue
            text = self.read(path)
            if isinstance(text, UnreadableInputError) or "CONFIG_FILE" not in text or "scenarios" not in text:
                continue  # not a master config (a narrowing for speed: masters only add context)
            docs = self.parse(path, text)
            if isinstance(docs, YamlError):
                continue
            for doc in docs:
                for rp, lst in master_refs(doc, str(path), self.roots).items():
                    self.refs.setdefault(rp, []).extend(r for r in lst if r not in self.refs.get(rp, []))
                    if path not in (masters := self.ref_files.setdefault(rp, [])):
                        masters.append(path)

    def load_recipe(self, path: Path) -> tuple[Any, Input]:
        """The recipe context of a recipe a master config runs (or why it cannot be read), and its input."""
        from golden_al.checks.yaml_configs import YamlError, recipe_contexts

        key = path.resolve()
        text = self.read(key)
        if key not in self.recipes:
            if isinstance(text, UnreadableInputError):
                self.recipes[key] = f"unreadable ({text.reason}): {text.problem}"
            elif isinstance(docs := self.parse(key, text), YamlError):
                self.recipes[key] = f"{docs} (line {docs.line})" if docs.line else str(docs)
            else:
                self.recipes[key] = next((c for d in docs for c in recipe_contexts(d, str(path), self.refs.get(key))),
                                         None)
        return self.recipes[key], self.file_input(path, text if isinstance(text, str) else None)

    def file_inputs(self, path: Path, text: str | None) -> tuple[Input, ...]:
        """A file's own input, then the master configs that run it (their model and scenario judge its pins)."""
        masters = tuple(self.file_input(m, t if isinstance(t := self.read(m), str) else None)
                        for m in self.ref_files.get(path.resolve(), ()))
        return (self.file_input(path, text), *masters)

    def file_input(self, path: Path, text: str | None) -> Input:
        """A file's input, its digest taken once per run (a master config is an input of every file it runs)."""
        if (path, text) not in self.digested:
            self.digested[path, text] = text_input("file", shown_path(path), text)
        return self.digested[path, text]

    def check_file(self, path: Path, kind: str) -> None:
        """One file's findings (:meth:`_check_file`), each carrying the file's inputs before its own; the last run's
        when :mod:`~golden_al.checks.cache` holds them for this text."""
        r = self.report
        text = self.read(path) if kind not in ("unreadable", "link-outside") else None
        cache, key = self.cache, self._cache_key(path, kind, text)
        if cache is not None and key is not None and (hit := cache.get(key)) is not None:
            r.findings += hit["findings"]
            r.prose += hit["prose"]
            r.diagnostics += hit["diagnostics"]
            r.files_scanned, r.occurrences = r.files_scanned + hit["scanned"], r.occurrences + hit["occurrences"]
            return
        marks = (len(r.findings), r.files_scanned, r.occurrences, len(r.prose), len(r.diagnostics))
        self._check_file(path, kind)
        start = marks[0]
        if len(r.findings) == start and key is None:
            return
        own = self.file_inputs(path, text if isinstance(text, str) else None)
        r.findings[start:] = [dataclasses.replace(f, inputs=merge_inputs(own, f.inputs)) for f in r.findings[start:]]
        names = {i.name for i in own}  # a verdict that read another file (a master config's recipe) is not kept
        if cache is not None and key is not None and all(f.verdict != "unreadable" and all(
                i.kind != "file" or i.name in names for i in f.inputs) for f in r.findings[start:]):
            cache.put(key, r.findings[start:], scanned=r.files_scanned - marks[1], occurrences=r.occurrences - marks[2],
                      prose=r.prose[marks[3]:], diagnostics=r.diagnostics[marks[4]:])

    def _cache_key(self, path: Path, kind: str, text: Any) -> str | None:
        """The cache key of a file (:mod:`~golden_al.checks.cache`): its text, and for a recipe master configs run,
        those entries and the masters' digests (they judge its pins); None when there is no text."""
        if self.cache is None or not isinstance(text, str):
            return None
        runs = self.refs.get(path.resolve())
        own, *masters = self.file_inputs(path, text)
        return self.cache.key(str(path), kind, str(own.digest), repr(runs) + repr(masters) if runs else "")

    def _check_file(self, path: Path, kind: str) -> None:
        """One file: its census, its pins where the census finds settings, and the findings."""
        from golden_al.checks.yaml_configs import YamlError
        from golden_al.shell import ShellSyntaxError

        report = self.report
        report.files_scanned += 1
        shown = str(path)
        if kind == "link-outside":
            self._unreadable(shown, UnreadableInputError(
                f"a directory link that leads outside the checked path (to {path.resolve()})", path=path,
                reason="link-outside", hint="check the folder it leads to as well, or replace the link by the files"),
                None)
            return
        got: str | bytes | UnreadableInputError = self.read(path) if kind != "unreadable" else _head(path)
        if kind == "unreadable" or not isinstance(got, str):
            err = got if isinstance(got, UnreadableInputError) else UnreadableInputError(
                "cannot read", path=path, reason="os-error")
            self._unreadable(shown, err, self.read.raw_text.get(path))
            return
        text = got
        if kind in ("yaml", "json") and not may_hold_knob(text):
            return  # proven: no reading of this text holds a knob (census.may_hold_knob)
        try:
            read = self._read_pins(path, kind, text)
        except YamlError as exc:
            self._unreadable(shown, UnreadableInputError(
                str(exc), path=path, line=exc.line, reason="parse-error",
                hint="fix the file; golden-al reads plain YAML/JSON (no tabs in indentation, no language tags "
                     "such as !!python/...)"), text)
            return
        except ShellSyntaxError as exc:
            self._unreadable(shown, UnreadableInputError(
                exc.problem, path=path, line=exc.line or None, reason="parse-error",
                hint="fix the script so that bash (and tree-sitter-bash) can parse it"), text)
            return
        except SyntaxError as exc:
            self._unreadable(shown, UnreadableInputError(
                f"Python: {exc.msg}", path=path, line=exc.lineno, reason="parse-error",
                hint="fix the file so that Python's own parser reads it"), text)
            return
        except _Unread as exc:
            report.findings.extend(unread_findings(shown, exc.occurrences, exc.text, kind))
            return
        except UsageError as exc:  # a recipe srtctl would refuse (a malformed zip group, too many variants)
            self._unreadable(shown, UnreadableInputError(exc.message, path=path, reason="parse-error",
                                                         hint=exc.hint), text)
            return
        except (RecursionError, ValueError, IndexError, KeyError, TypeError, OverflowError,
                DistributionError) as exc:
            self._unreadable(shown, UnreadableInputError(f"cannot analyse ({type(exc).__name__}: {exc})",
                                                         path=path, reason="parse-error"), text)
            return
        if read is None:
            if kind == "other":  # a text file no launcher is known to consume, and it names no knob
                report.files_scanned -= 1
            return
        occurrences, pins = read
        report.occurrences += sum(1 for _ in iter_pin_sites(occurrences))
        report.prose.extend(f"{shown}:{o.line}" for o in occurrences if o.inert and o.inert.startswith(PROSE_PREFIX))
        _runtime_draft_len(pins, occurrences)
        for pin in pins:
            if pin.engine in engine_names():
                pin.version = get_profile(pin.engine).version_facts(text)
        report.findings.extend(evaluate(pin, self.store, store_problem=self.store_problem) for pin in pins)
        loose = _uncovered(shown, occurrences, pins, kind)
        report.findings.extend(loose)

    def _unreadable(self, shown: str, err: UnreadableInputError, text: str | None) -> None:
        self.report.findings.extend(unreadable_findings(shown, err, text))

    def _read_pins(self, path: Path, kind: str, text: str) -> tuple[
            list[Occurrence], list[Pin]] | None:
        """(census, pins) of one file; None when it is provably free of knobs.

        Raises:
            YamlError / ShellSyntaxError / ValueError ...: the file does not parse or analyse.
        """
        from golden_al.checks.yaml_configs import (
            YamlError,
            extract_json_pins,
            extract_yaml_pins,
            shadowed_lines,
        )
        from golden_al.knobs.census import _Sink
        from golden_al.knobs.scripts import extract_shell_pins

        shown = str(path)
        pins: list[Pin] = []
        if kind == "yaml":
            cached = self.parse(path, text)
            if isinstance(cached, YamlError):
                if _census_composed(text) == []:
                    return None  # composed in full, no knob: a tag only its own reader defines (lm-eval's !function)
                raise cached
            occurrences = [o for doc in cached for o in census_data(doc.node)]
            if occurrences and (shadow := shadowed_lines(cached)):
                occurrences = [dataclasses.replace(o, inert="a base: value every override_* section replaces "
                                                            "(srtctl runs only the overrides)")
                               if o.line in shadow and o.inert is None else o for o in occurrences]
            if _needs_pins(occurrences):
                pins = extract_yaml_pins(text, shown, load_recipe=self.load_recipe, roots=self.roots,
                                         refs=self.refs.get(path.resolve()), docs=cached)
        elif kind == "json":
            _parse_json(text)  # refuses a text that is not JSON (unreadable) before anything else
            occurrences = census_json(text)
            if _needs_pins(occurrences):
                pins = extract_json_pins(text, shown)
        elif kind in ("shell", "dotenv"):
            occurrences = census_shell(text, allexport=kind == "dotenv")
            if _needs_pins(occurrences):
                pins, diags = extract_shell_pins(text, shown, census=occurrences)
                self.report.diagnostics.extend(diags)
        elif kind == "dockerfile":
            return self._read_pins(path, "shell", dockerfile_as_shell(text))
        elif kind == "python":
            if not python_may_set_knob(text):
                return None  # proven: no string the census reads can set or build a knob (not parsed)
            occurrences = census_python(text)  # a SyntaxError is the file's unreadable finding
            if _needs_pins(occurrences):
                pins, diags = extract_shell_pins(python_env_as_shell(text), shown, census=occurrences)
                self.report.diagnostics.extend(diags)
        elif kind == "jinja" and (inner := jinja_inner_kind(path)) is not None:
            rendered, tags = jinja_as_text(text, inner)
            inner_read = self._read_pins(path, inner, rendered)
            occurrences, pins = inner_read if inner_read is not None else ([], [])
            sink = _Sink()
            for line, tag in tags:  # a name a tag computes or prints is a census entry of its own
                census_text(tag, line=line, end_line=line + tag.count("\n"), context="Jinja tag", sink=sink)
            occurrences = sorted([*occurrences, *sink.result()], key=lambda o: o.line)
            if not occurrences:
                return None
        else:  # other, or a template of an unknown kind: read only when it provably names no knob
            occurrences = _census_plain(text)
            if not occurrences and not names_knob_in_parts(text):
                return None
            if path.suffix == "" and kind == "other" and _parses_as_shell(text):
                return self._read_pins(path, "shell", text)  # an extension-less script, no shebang
            raise _Unread(occurrences, text)
        return occurrences, pins


def _needs_pins(occurrences: Sequence[Occurrence]) -> bool:
    """Whether a file's pins must be read: an occurrence that sets a value (not a copy, not inert)."""
    return any(True for _ in iter_pin_sites(occurrences))


def _parse_json(text: str) -> None:
    """Raises :class:`YamlError` when ``text`` is not one bounded JSON document."""
    from golden_al.checks.yaml_configs import YamlError

    try:
        safeio.load_json(text)
    except UnreadableInputError as exc:
        raise YamlError(exc.problem, exc.line) from None


def _census_composed(text: str) -> list[Occurrence] | None:
    """The census of a YAML text composed but not constructed (tags outside the safe schema are kept as
    plain nodes), or None when it does not even compose."""
    try:
        nodes = safeio.load_yaml_documents(text, construct=False)
    except UnreadableInputError:
        return None
    out: list[Occurrence] = []
    for _, node in nodes:
        out.extend(census_data(node))
    return out


class _Unread(Exception):
    """A file of a kind ``check`` does not read whose text names a knob (an ``unread`` finding)."""

    def __init__(self, occurrences: list[Occurrence], text: str) -> None:
        super().__init__("unread")
        self.occurrences = occurrences
        self.text = text


def _parses_as_shell(text: str) -> bool:
    from golden_al.shell import ShellSyntaxError
    from golden_al.shell.parse import parse_script

    try:
        parse_script(text)
    except ShellSyntaxError:
        return False
    return True


def _census_plain(text: str) -> list[Occurrence]:
    """A file given by name that is not YAML, JSON or shell: every line as plain text."""
    from golden_al.knobs.census import _Sink

    sink = _Sink()
    for i, line in enumerate(text.splitlines(), 1):
        census_text(line, line=i, end_line=i, context="a line of a file golden-al does not parse", sink=sink)
    return sink.result()


def _covers(pin: Pin, occ: Occurrence) -> bool:
    if occ.engine == HARNESS:
        if pin.knob != MASTER_LENGTH_KEY:
            return False
    elif pin.engine != occ.engine:
        return False
    lines = occ.lines()
    return pin.line in lines or (pin.use_line is not None and pin.use_line in lines) or any(
        c in lines for c in pin.covers)


def _uncovered(shown: str, occurrences: Sequence[Occurrence], pins: Sequence[Pin], kind: str) -> list[Finding]:
    """``unresolved`` findings: knob occurrences no pin covers (the census's proof obligation)."""
    out: list[Finding] = []
    for occ in occurrences:
        if occ.term.role == "runtime-k" or occ.derived or occ.inert or any(_covers(p, occ) for p in pins):
            continue
        if occ.term == ANY_KNOB:
            why = ("this exports a variable whose whole name is set outside the file (e.g. pairs loaded at run "
                   "time), so it can be any engine's knob; pin the values in a file golden-al reads")
        elif occ.term.role == "switch" and not occ.value_known:
            why = (f"its value is set outside this file, and {occ.term.spelling}={occ.term.switch_value} turns "
                   "synthetic acceptance on")
        elif occ.certain:
            why = ("no reader of golden-al turned it into a checked pin" +
                   (" (the shell reader follows every feasible path with EVAL_ONLY=false, RUN_EVAL=false, and "
                    "reaches no use of it there)" if kind == "shell" else ""))
        else:
            why = "part of the name is set outside this file, so what it sets cannot be read"
        value = f"={occ.value}" if occ.value_known and not isinstance(occ.value, (dict, list)) else ""
        how = f"; {occ.how}" if occ.how else ""
        out.append(Finding(
            file=shown, line=occ.line, engine=occ.engine if occ.engine != HARNESS else "unknown", algorithm=None,
            model=None, thinking=None, thinking_source="not read", draft_len=None,
            pinned_value=str(occ.value) if occ.value_known and not isinstance(occ.value, (dict, list)) else None,
            implied_al=None, expected_al=None, verdict="unresolved",
            message=f"{occ.term.spelling}{value} ({occ.context}{how}): {why}; it cannot be proven to match a "
                    f"golden value: {occ.text!r}",
        ))
    return out


def _runtime_draft_len(pins: Sequence[Pin], occurrences: Sequence[Occurrence]) -> None:
    """A setting that changes the draft length at run time, in the file of a pin of the same engine:
    ``unsafe-value`` (a golden AL is per fixed k)."""
    for occ in occurrences:
        setting = occ.term.runtime
        if setting is None or occ.inert:  # inert: a base value every variant replaces never reaches an engine
            continue
        on = setting.unsafe(occ.value) if occ.value_known else None
        if on is False:
            continue
        shown = f"{occ.term.spelling}={occ.value}" if occ.value_known and not isinstance(occ.value, (dict, list)) \
            else occ.term.spelling
        src = setting.source
        for pin in pins:
            if pin.engine != occ.engine or any(setting.what in text for _, text in pin.problems):
                continue  # another engine's, or the recipe's derivation already names it (recipes.derive)
            pin.problems.append(("unsafe-value", f"{shown} at line {occ.line} {setting.what}"
                                                 f"{'' if on else ' (its value is not known here)'}: the pinned AL "
                                                 f"belongs to one fixed draft length ({src.repo} {src.path} at "
                                                 f"{src.version})"))


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per (file, line, value, k, model, thinking, verdict): several code paths of
    a script can reach the same pin with the same outcome."""
    seen: dict[tuple[Any, ...], Finding] = {}
    for f in findings:
        key = (f.file, f.line, f.use_line, f.engine, f.pinned_value, f.draft_len, f.model, f.thinking, f.verdict,
               f.implied_al, f.expected_al)
        seen.setdefault(key, f)
    return list(seen.values())
