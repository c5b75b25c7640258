"""``golden-al commit``: add or update a golden curve in the store, showing the diff.

Prints every value (per thinking mode and k: committed -> new, added, removed, and the
settings that change), refuses to change or remove a committed value or setting without
``--force`` (exit 1; adding points is always allowed), writes atomically (a re-commit of
the same curve writes nothing), and with ``--export inferencex`` also writes the
maintainers' legacy YAML (model -> thinking mode -> k -> AL, provenance in the header
comment) to ``<golden-dir>/golden_al_distribution/`` or ``--export-dir``.
See :mod:`golden_al.curvefit.commit`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from golden_al.cli._common import ENV_GOLDEN_DIR, golden_dir, note
from golden_al.errors import UsageError

DESCRIPTION = (
    "Add or update a golden curve in the store. Shows every value against what is committed (per "
    "thinking mode and k: committed -> new, added, removed; changed settings), refuses to change or "
    "remove a committed value or setting without --force (exit 1; adding points is allowed), writes "
    "atomically, and with --export inferencex also writes the maintainers' legacy YAML."
)

EXAMPLES = f"""\
examples:
  golden-al commit qwen-coder.yaml --dry-run                 # show the diff against the shipped store
  golden-al commit qwen-coder.yaml --export inferencex       # commit + write the InferenceX legacy YAML
  golden-al commit curve.yaml --golden-dir my-golden/ --force  # replace committed values

default store: the shipped curves (golden_al/golden/curves/ in the source tree), or
${ENV_GOLDEN_DIR}; --golden-dir overrides both. The legacy export goes to
<store>/golden_al_distribution/<file> unless --export-dir is given.
exit codes: 0 written (or nothing to do); 1 refused (a committed value would change); 2 bad input.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``golden-al commit``."""
    parser.add_argument("curve", metavar="CURVE.yaml", help="a curve in golden-al's schema (e.g. from golden-al fit)")
    parser.add_argument("--golden-dir", default=None, metavar="DIR",
                        help=f"the store to commit into (default: ${ENV_GOLDEN_DIR} or the shipped curves)")
    parser.add_argument("--export", choices=("inferencex",), default=None,
                        help="also write the curve in the InferenceX golden_al_distribution shape")
    parser.add_argument("--export-dir", default=None, metavar="DIR",
                        help="where --export writes (default: <golden-dir>/golden_al_distribution)")
    parser.add_argument("--export-name", default=None, metavar="FILE.yaml",
                        help="the file name --export writes, as InferenceX names it (e.g. dsv4_mtp.yaml); "
                             "default: the file an imported curve came from, else the export folder's file for "
                             "this model; a new curve needs it (exit 2 without)")
    parser.add_argument("--force", action="store_true", help="allow changing or removing committed values and settings")
    parser.add_argument("--dry-run", action="store_true", help="show the diff, write nothing (exit 1 if it would be refused)")
    parser.add_argument("--quiet-unchanged", action="store_true", help="leave unchanged points out of the diff")


def run(args: argparse.Namespace) -> int:
    """Plan, print the diff, then write (or refuse)."""
    from golden_al.curvefit import apply_commit, plan_commit
    from golden_al.curvefit.commit import display_path
    from golden_al.golden import SHIPPED_CURVES_DIR, read_curve_file
    from golden_al.locks import directory_lock

    if (args.export_dir or args.export_name) and not args.export:
        raise UsageError("--export-dir and --export-name need --export inferencex")
    read = read_curve_file(args.curve)
    if len(read) != 1 or read[0].format != "golden-al":
        raise UsageError(f"{args.curve}: commit takes one curve in golden-al's schema (golden-al fit writes it), "
                         f"found {len(read)} {read[0].format} curve(s)")
    curve = read[0].curve
    store = golden_dir(args.golden_dir) or SHIPPED_CURVES_DIR
    export_dir = None
    if args.export:
        export_dir = Path(args.export_dir) if args.export_dir else Path(store) / "golden_al_distribution"
    # One lock across read-diff-write: two commits at once cannot both pass the --force rule.
    with directory_lock(store, purpose="commit", shared=args.dry_run):
        plan = plan_commit(curve, store)
        for line in plan.lines(show_unchanged=not args.quiet_unchanged):
            print(line)
        result = apply_commit(plan, force=args.force, dry_run=args.dry_run, export_dir=export_dir,
                              export_name=args.export_name)
    for line in result.notes:
        note(line)
    c = plan.counts()
    summary = (f"{c['added']} added, {c['changed']} changed, {c['removed']} removed, {c['revised']} revised, "
               f"{c['completed']} completed, {c['unchanged']} unchanged, {c['settings']} setting change(s)")
    action = ("dry run" if args.dry_run else f"wrote {display_path(result.written)}" if result.written
              else "nothing to write")
    if result.exported:
        action += f"; exported {display_path(result.exported)}"
    print(f"{summary}; {action}")
    return 0
