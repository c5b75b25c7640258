"""``golden-al check PATH...``: every pinned synthetic-acceptance value against the golden store.

Reads recipe YAML, master-config YAML, shell scripts and JSON submissions statically
(no script is ever executed) and reports one finding per pinned value of SGLang,
vLLM, TensorRT-LLM and ATOM. Exit 1 if any finding is ``mismatch``,
``missing-companion``, ``non-agentic-simulation``, ``unsafe-value`` or ``unreadable`` (a
file that could not be read, decoded or parsed in full: fail closed); 0 otherwise; 2 on
usage errors. Control characters from the files are escaped in every format.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable

from golden_al.checks.context import MASTER_LENGTH_KEY
from golden_al.cli._common import add_golden_dir_option, escape_control, golden_dir, parse_size

__all__ = ["DESCRIPTION", "EXAMPLES", "add_arguments", "run"]

def _knobs() -> str:
    """Every engine's pinned-value knobs, from the profiles: ``SGLang X; vLLM Y/Z; ...``."""
    from golden_al.engines import engine_names, get_profile

    parts = []
    for name in engine_names():
        profile = get_profile(name)
        knobs = [k.name for k in profile.synthetic_knobs if k.role == "value"]
        parts.append(f"{profile.display_name} {'/'.join(knobs)}")
    return "; ".join(parts)


DESCRIPTION = (
    f"Statically validate every pinned synthetic-acceptance value ({_knobs()}; InferenceX "
    f"{MASTER_LENGTH_KEY}) against the golden "
    "AL for the model, thinking mode and draft length the files configure. Verdicts: match, mismatch, "
    "no-golden, undetermined, missing-companion, non-agentic-simulation, unsafe-value, unreadable. Exit 1 on "
    "mismatch, missing-companion, non-agentic-simulation, unsafe-value or unreadable (a file that cannot be "
    "read, decoded or parsed in full fails the check, never skipped); no script is ever run."
)

EXAMPLES = """\
examples:
  golden-al check benchmarks/ configs/                  # text report, exit 1 on a bad pin
  golden-al check . --golden-dir golden_al_distribution --format json > findings.json
  golden-al check recipes/ --format github              # GitHub Actions annotations
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="files or directories (YAML, JSON, shell scripts; others are skipped)")
    add_golden_dir_option(parser)
    parser.add_argument("--format", choices=("text", "json", "github"), default="text",
                        help="text report, a JSON list of findings, or GitHub workflow annotations (default: text)")
    parser.add_argument("--max-file-size", default="2M", metavar="SIZE",
                        help="largest file read (e.g. 2M, 512k); a larger file is 'unreadable', a failure "
                             "(default: 2M, five times the largest config of InferenceX)")


def _escape_data(text: str) -> str:
    return escape_control(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _text(findings: Iterable[object]) -> None:
    for f in findings:
        k = f.draft_len if f.draft_len is not None else "?"  # type: ignore[attr-defined]
        exp = f"{f.expected_al:g}" if f.expected_al is not None else "-"  # type: ignore[attr-defined]
        line = (f"{f.file}:{f.line}: {f.verdict}: {f.engine} k={k} thinking={f.thinking or '?'} "  # type: ignore[attr-defined]
                f"pinned={f.pinned_value} expected={exp}: {f.message}")  # type: ignore[attr-defined]
        sys.stdout.write(escape_control(line) + "\n")


def _github(findings: Iterable[object]) -> None:
    from golden_al.checks.findings import FAILING_VERDICTS

    for f in findings:
        verdict = f.verdict  # type: ignore[attr-defined]
        if verdict == "match":
            continue
        level = "error" if verdict in FAILING_VERDICTS else "warning"
        props = f"file={_escape_prop(f.file)},line={f.line},title={_escape_prop('golden-al check: ' + verdict)}"  # type: ignore[attr-defined]
        sys.stdout.write(f"::{level} {props}::{_escape_data(f.message)}\n")  # type: ignore[attr-defined]


def run(args: argparse.Namespace) -> int:
    from golden_al.checks.static import check_paths
    from golden_al.golden import load_store

    max_size = parse_size(args.max_file_size)
    store = load_store(golden_dir(args.golden_dir))
    report = check_paths(args.paths, store=store, max_file_size=max_size)
    for d in report.diagnostics:
        sys.stderr.write(f"golden-al: note: {escape_control(d)}\n")
    counts = report.counts()
    summary = (f"golden-al check: {len(report.findings)} pinned value(s) in {report.files_with_pins} file(s) "
               f"({report.files_scanned} scanned): "
               + ", ".join(f"{v} {n}" for v, n in counts.items() if n) if report.findings
               else f"golden-al check: no pinned synthetic-acceptance value in {report.files_scanned} file(s)")
    if args.format == "json":
        sys.stdout.write(json.dumps([f.to_dict() for f in report.findings], indent=2) + "\n")
        sys.stderr.write(summary + "\n")
    elif args.format == "github":
        _github(report.findings)
        sys.stdout.write(summary + "\n")
    else:
        _text(report.findings)
        sys.stdout.write(summary + "\n")
    return 1 if report.failed else 0
