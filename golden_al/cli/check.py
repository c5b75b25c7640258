"""``golden-al check PATH...``: every pinned synthetic-acceptance value against the golden store.

Reads recipe YAML, master-config YAML, shell scripts, JSON submissions, Dockerfiles, Python
launchers and Jinja templates statically (nothing is ever executed); any other file whose text
names a knob is ``unread``. Every occurrence of every registered engine's knob, as the file's
consumer decodes it (:mod:`golden_al.knobs.census`), ends as a finding. Exit 0 only when
every finding is ``match`` (``--allow no-golden,undetermined`` relaxes those two for
adoption); 1 otherwise; 2 on usage errors and when nothing was scanned. Control characters
from the files are escaped in every format.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from golden_al.cli._common import add_golden_dir_option, cache_dir, escape_control, golden_dir, parse_size
from golden_al.knobs.names import MASTER_LENGTH_KEY

if TYPE_CHECKING:
    from pathlib import Path

    from golden_al.checks.adoption import CheckConfig
    from golden_al.checks.findings import Finding
    from golden_al.checks.static import CheckReport

__all__ = ["DESCRIPTION", "EXAMPLES", "add_arguments", "job_summary", "run", "summary_line"]

def _knobs() -> str:
    """Every engine's pinned-value knobs, from the profiles: ``SGLang X; vLLM Y/Z; ...``."""
    from golden_al.plugin.registry import engine_names, get_profile

    parts = []
    for name in engine_names():
        profile = get_profile(name)
        knobs = [k.name for k in profile.check.synthetic_knobs if k.role == "value"]
        parts.append(f"{profile.display_name} {'/'.join(knobs)}")
    return "; ".join(parts)


def _verdicts() -> str:
    from golden_al.checks.findings import VERDICTS

    return ", ".join(VERDICTS)


DESCRIPTION = (
    f"Statically validate every pinned synthetic-acceptance value ({_knobs()}; InferenceX "
    f"{MASTER_LENGTH_KEY}) against the golden AL for the model, thinking mode and draft length the files "
    "configure. Every occurrence of any engine's knob, in any form the file's consumer decodes (escapes, "
    "quotes, names assembled from variables), becomes a finding; one no reader can check is 'unresolved'. "
    f"Verdicts: {_verdicts()}. Exit 0 only when every finding is a match (pass means proven); no script is "
    "ever run."
)

EXAMPLES = """\
examples:
  golden-al check benchmarks/ configs/                  # text report, exit 1 unless every pin is proven
  golden-al check . --golden-dir golden_al_distribution --format json > findings.json
  golden-al check recipes/ --format github              # GitHub Actions annotations
  golden-al check . --allow no-golden,undetermined      # adoption: curves not all committed yet
  golden-al check . --exclude perf-changelog.yaml       # a file of prose that names knobs
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="files or directories (YAML, JSON, shell scripts; others are skipped)")
    add_golden_dir_option(parser)
    parser.add_argument("--format", choices=("text", "json", "github"), default="text",
                        help="text report, a JSON list of findings, or GitHub workflow annotations plus a markdown "
                             "job summary appended to $GITHUB_STEP_SUMMARY (default: text)")
    parser.add_argument("--max-file-size", default="2M", metavar="SIZE",
                        help="largest file read (e.g. 2M, 512k); a larger file is 'unreadable', a failure "
                             "(default: 2M, five times the largest config of InferenceX)")
    parser.add_argument("--allow", default="", metavar="VERDICTS",
                        help="comma-separated verdicts that do not fail the check: no-golden and/or undetermined "
                             "(for adopting the gate before every curve is committed); the summary counts them")
    parser.add_argument("--policy", choices=("default", "no-pins"),
                        help="no-pins: every hard-coded value is a 'pinned' finding even when it matches, and every "
                             "agentic speculative recipe must be selectable by 'golden-al select' (default: the "
                             "configuration's policy, else default)")
    parser.add_argument("--config", metavar="FILE",
                        help="configuration file (default: the nearest .golden-al.toml, or pyproject.toml with "
                             "[tool.golden-al], from here up to the repository root)")
    parser.add_argument("--no-config", action="store_true", help="read no configuration file")
    parser.add_argument("--baseline", metavar="FILE",
                        help="findings recorded in FILE do not fail (only new ones do); they are still listed")
    parser.add_argument("--write-baseline", metavar="FILE",
                        help="write the failing findings of this run to FILE as a baseline (exit 0)")
    parser.add_argument("--changed-since", metavar="REF",
                        help="pull requests: the whole tree is checked, but only findings in files changed since "
                             "the git REF (committed, uncommitted or new) fail")
    parser.add_argument("--strict-suppressions", action="store_true",
                        help="a stale inline suppression (one that covers no finding) fails the check; without it "
                             "it is listed, not failing (default: the configuration's strict-suppressions)")
    parser.add_argument("--verbose", action="store_true",
                        help="text: every finding on one line with its whole reasoning (default: failing findings "
                             "first, one short line each; matches folded per file)")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="where per-file results are kept between runs, keyed on each file's content and on "
                             "golden-al's code, so a re-run reads again only what changed (default: "
                             "$GOLDEN_AL_CHECK_CACHE, else the 'check' folder of $GOLDEN_AL_CACHE or ~/.cache/golden-al)")
    parser.add_argument("--no-cache", action="store_true",
                        help="keep no results between runs (also GOLDEN_AL_CHECK_CACHE=off)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files under the given directories whose path (relative to that directory) or "
                             "name matches GLOB, e.g. a changelog whose prose names knobs (repeatable; the "
                             "summary lists what was skipped; a file named on the command line is always read)")


def _escape_data(text: str) -> str:
    return escape_control(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _long(f: Finding) -> str:
    """A finding with its whole reasoning (``--verbose``)."""
    k = f.draft_len if f.draft_len is not None else "?"
    exp = f"{f.expected_al:g}" if f.expected_al is not None else "-"
    line = (f"{f.file}:{f.line}: {f.verdict}: {f.engine} k={k} thinking={f.thinking or '?'} "
            f"pinned={f.pinned_value} expected={exp}: {f.message}")
    return line + (f" [not failing: {f.waived}]" if f.waived else "")


def _short(f: Finding) -> str:
    """One short line: where, verdict, engine, k, pinned vs golden, and why in a few words."""
    k = f.draft_len if f.draft_len is not None else "?"
    from golden_al.plugin.values import parse_number

    al = f" (AL {f.implied_al:g})" if f.implied_al not in (None, parse_number(f.pinned_value or "")) else ""
    values = f" pinned {f.pinned_value}{al}" if f.pinned_value is not None else ""
    values += f" vs golden {f.expected_al:g}" if f.expected_al is not None else ""
    why = "" if f.verdict == "mismatch" else f.message.split(f"[{f.verdict}] ", 1)[-1].split("; ")[0]
    why = f": {why[:57]}..." if len(why) > 60 else f": {why}" if why else ""
    return f"  {f.file}:{f.line}: {f.verdict}: {f.engine} k={k}{values}{why}"


def _text(findings: Sequence[Finding], failing: frozenset[str], verbose: bool) -> None:
    """Failing findings first, grouped by verdict, one short line each; then the rest folded per file (``match``,
    ``pinned``, and what does not fail: waived or allowed); ``--verbose``: every finding with its reasoning."""
    def folds(f: Finding) -> bool:
        return f.verdict in ("match", "pinned") or f.waived is not None or f.verdict not in failing

    lines = [_long(f) for f in findings] if verbose else []
    if not verbose:
        from golden_al.checks.findings import SEVERITY

        for verdict in SEVERITY:
            group = [_short(f) for f in findings if f.verdict == verdict and not folds(f)]
            lines += [f"{verdict} ({len(group)}):", *group] if group else []
        per_file: dict[str, Counter[str]] = {}
        for f in filter(folds, findings):
            why = f.waived.split(":", 1)[0] if f.waived else "allowed" if f.verdict not in failing | {"match"} else ""
            per_file.setdefault(f.file, Counter())[f"{f.verdict} ({why})" if why else f.verdict] += 1
        if per_file:
            lines.append(f"folded: {sum(c.total() for c in per_file.values())} match, pinned or not failing (--verbose lists "
                         "them):")
            lines += [f"  {file}: " + ", ".join(f"{n} {v}" for v, n in sorted(c.items())) for file, c in per_file.items()]
    sys.stdout.write("".join(escape_control(line) + "\n" for line in lines))


def _github(findings: Iterable[Finding], failing: frozenset[str]) -> None:
    for f in findings:
        if f.verdict == "match":
            continue
        level = "error" if f.verdict in failing and f.waived is None else "warning"
        props = f"file={_escape_prop(f.file)},line={f.line},title={_escape_prop('golden-al check: ' + f.verdict)}"
        sys.stdout.write(f"::{level} {props}::{_escape_data(f.message)}\n")


def _cell(text: object) -> str:
    """A markdown table cell: control characters escaped, pipes and line breaks neutralised."""
    return escape_control(str(text)).replace("|", "\\|").replace("\n", " ")


def job_summary(r: CheckReport) -> str:
    """The markdown ``check --format github`` appends to ``$GITHUB_STEP_SUMMARY``: the verdict counts,
    then every finding that is not a match (file and line, verdict, engine, k, pinned and golden value,
    why; stale suppressions too), then the matches folded away."""
    from golden_al.checks.findings import failing_verdicts

    failing = failing_verdicts(r.allowed)
    out = [f"## golden-al check: {'FAIL' if r.failed else 'pass'}", "", summary_line(r)]
    out += ["", "| verdict | findings |", "|---|---:|"]
    out += [f"| {v}{' (allowed)' if v in r.allowed else ''} | {n} |" for v, n in r.counts().items() if n]
    rows = [f for f in r.findings if f.verdict != "match"]
    if rows:
        out += ["", "| file:line | verdict | engine | k | pinned | golden | why |", "|---|---|---|---:|---|---|---|"]
        for f in rows:
            mark = "**" if f.verdict in failing and f.waived is None else ""
            out.append(f"| `{_cell(f.file)}:{f.line}` | {mark}{f.verdict}{mark} | {f.engine} | "
                       f"{'' if f.draft_len is None else f.draft_len} | {_cell(f.pinned_value or '')} | "
                       f"{'' if f.expected_al is None else f'{f.expected_al:g}'} | {_cell(f.message[:300])}"
                       + (f" *(not failing: {_cell(f.waived)})*" if f.waived else "") + " |")
    matches = [f for f in r.findings if f.verdict == "match"]
    if matches:
        out += ["", f"<details><summary>{len(matches)} match(es)</summary>", "",
                "| file:line | engine | k | pinned | golden |", "|---|---|---:|---|---|"]
        out += [f"| `{_cell(f.file)}:{f.line}` | {f.engine} | {f.draft_len} | {_cell(f.pinned_value)} | "
                f"{f.expected_al:g} |" for f in matches]
        out += ["", "</details>"]
    return "\n".join(out) + "\n"


def summary_line(r: CheckReport) -> str:
    """The one-line summary: findings per verdict, what was allowed and excluded."""
    text = (f"golden-al check: {len(r.findings)} finding(s) in {len({f.file for f in r.findings})} file(s) ({r.files_scanned} "
            "scanned): " + ", ".join(f"{v} {n}" for v, n in r.counts().items() if n) if r.findings else
            f"golden-al check: no synthetic-acceptance knob in {r.files_scanned} file(s)")
    if waived := r.waived_counts():
        text += "; not failing: " + ", ".join(f"{kind} {n}" for kind, n in waived.items())
    if r.allowed:
        text += "; allowed by --allow: " + (", ".join(f"{v} {n}" for v, n in r.allowed_counts().items())
                                            or "none occurred")
    if r.prose:
        shown = ", ".join(dict.fromkeys(p.rsplit(":", 1)[0] for p in r.prose))
        text += f"; {len(r.prose)} knob name(s) in documentation text, not configuration ({shown[:200]})"
    if r.excluded:
        shown = ", ".join(r.excluded[:3]) + (", ..." if len(r.excluded) > 3 else "")
        text += f"; {len(r.excluded)} file(s) not read (--exclude): {shown}"
    return text


def _cache_file(args: argparse.Namespace) -> Path | None:
    """The results cache file (:mod:`golden_al.checks.cache`), or None with ``--no-cache``."""
    from pathlib import Path

    env = os.environ.get("GOLDEN_AL_CHECK_CACHE", "")
    if args.no_cache or (env == "off" and not args.cache_dir):
        return None
    return Path(args.cache_dir or env or cache_dir() / "check").expanduser() / "results.json"


def _config(args: argparse.Namespace) -> CheckConfig:
    """The configuration file's settings (an empty configuration with ``--no-config`` or none found)."""
    from pathlib import Path

    from golden_al.checks.adoption import CheckConfig, find_config, load_config
    from golden_al.errors import UsageError

    if args.no_config:
        if args.config:
            raise UsageError("--config and --no-config contradict each other")
        return CheckConfig()
    if args.config:
        path = Path(args.config)
        if not path.is_file():
            raise UsageError(f"--config {args.config}: no such file")
        return load_config(path)
    found = find_config(Path.cwd())
    return load_config(found) if found is not None else CheckConfig()


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from golden_al import __version__
    from golden_al.checks.adoption import baseline_document, dumps_baseline
    from golden_al.checks.findings import failing_verdicts
    from golden_al.checks.static import check_paths
    from golden_al.golden import load_store
    from golden_al.provenance import atomic_write_text, now_iso

    cfg = _config(args)
    max_size = parse_size(args.max_file_size)
    allowed = frozenset(v.strip() for v in (args.allow or ",".join(cfg.allow)).split(",") if v.strip())
    store = load_store(golden_dir(args.golden_dir) or cfg.golden_dir)
    policy = args.policy or cfg.policy
    baseline = Path(args.baseline) if args.baseline else cfg.baseline
    if args.write_baseline:
        baseline = None  # a new baseline records every failing finding
    report = check_paths(args.paths, store=store, max_file_size=max_size, allow=allowed,
                         exclude=[*cfg.exclude, *args.exclude], policy=policy,
                         baseline=baseline, changed_since=args.changed_since,
                         inputs=[i for i in (cfg.input(),) if i is not None],
                         strict_suppressions=args.strict_suppressions or cfg.strict_suppressions,
                         cache=_cache_file(args))
    if cfg.path is not None:
        report.diagnostics.insert(0, f"configuration {cfg.path}")
    if args.write_baseline:
        doc = baseline_document(report.findings, failing=failing_verdicts(allowed),
                                provenance={"golden_al_version": __version__, "created": now_iso(),
                                            "paths": list(args.paths), "policy": policy})
        atomic_write_text(args.write_baseline, dumps_baseline(doc))
        sys.stderr.write(f"golden-al check: wrote {len(doc['findings'])} finding(s) to {args.write_baseline}\n")
        return 0
    for d in report.diagnostics:
        sys.stderr.write(f"golden-al: note: {escape_control(d)}\n")
    summary = escape_control(summary_line(report))
    if args.format == "json":
        sys.stdout.write(json.dumps([f.to_dict() for f in report.findings], indent=2) + "\n")
        sys.stderr.write(summary + "\n")
    elif args.format == "github":
        _github(report.findings, failing_verdicts(allowed))
        sys.stdout.write(summary + "\n")
        summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary_file:  # GitHub Actions: the job summary of every finding
            with open(summary_file, "a", encoding="utf-8") as fh:
                fh.write(job_summary(report))
    else:
        _text(report.findings, failing_verdicts(allowed), args.verbose)
        sys.stdout.write(summary + "\n")
    return 1 if report.failed else 0
