"""Does the fail-closed ``check`` (issue 10) give InferenceX the same verdicts as before?

Runs ``golden-al check`` over the InferenceX tree now (as ``run_check.py`` does) and compares
every finding, keyed by (file, line, draft length, pinned value, engine), with the
``findings.json`` committed at ``--baseline-rev`` (the last revision before the change).
Writes ``verdicts_fail_closed.json``: both verdict counts, the number of findings whose
verdict changed, appeared or disappeared (each listed), and the ``unreadable`` findings.

    python experiments/inferencex-check/same_verdicts.py --baseline-rev 04073b0
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from golden_al.checks.static import check_paths
from golden_al.golden import load_store
from golden_al.provenance import atomic_write_text, collect, now_iso

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
from run_check import extract  # noqa: E402


def _key(f: dict) -> tuple:
    # ``use_line`` (issue 12) is the line the finding was reported at before ``line`` became the
    # line where the value is written; findings from before it have only ``line``.
    return (f["file"], f.get("use_line", f["line"]), f["draft_len"], f["pinned_value"], f["engine"])


def _base_key(f: dict) -> tuple:
    """The key without the draft length, to pair a finding whose k became known with its old self."""
    return (f["file"], f.get("use_line", f["line"]), f["pinned_value"], f["engine"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--baseline-rev", default="04073b0", help="golden-al revision whose findings.json is the baseline")
    ap.add_argument("--out", type=Path, default=HERE / "verdicts_fail_closed.json")
    args = ap.parse_args(argv)
    started = now_iso()
    old = json.loads(subprocess.run(["git", "-C", str(REPO), "show",
                                     f"{args.baseline_rev}:experiments/inferencex-check/findings.json"],
                                    check=True, capture_output=True, text=True).stdout)["findings"]
    tmp = Path(tempfile.mkdtemp(prefix="infx-verdicts-"))
    cwd = os.getcwd()
    try:
        sha = extract(args.mirror, args.commit, tmp)
        os.chdir(tmp)
        report = check_paths(["."], store=load_store("golden_al_distribution"))
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
    new = [f.to_dict() for f in report.findings]
    for f in new:
        f["file"] = f["file"][2:] if f["file"].startswith("./") else f["file"]
    before = {_key(f): f["verdict"] for f in old}
    after = {_key(f): f["verdict"] for f in new}
    changed = [{"finding": list(k), "before": before[k], "after": after[k]}
               for k in sorted(set(before) & set(after), key=str) if before[k] != after[k]]
    old_by_base = {_base_key(f): f for f in old}
    resolved = [{"finding": list(_key(f)), "before": {k: old_by_base[_base_key(f)][k] for k in ("draft_len", "verdict",
                                                                                              "model")},
                 "after": {k: f[k] for k in ("draft_len", "verdict", "model")}}
                for f in new if _key(f) not in before and _base_key(f) in old_by_base]
    moved = [{"file": f["file"], "use_line": f["use_line"], "line": f["line"], "pinned_value": f["pinned_value"]}
             for f in new if f.get("use_line", f["line"]) != f["line"]]
    doc = {
        "provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
        "inferencex_commit": sha,
        "baseline_rev": args.baseline_rev,
        "findings_before": len(old),
        "findings_after": len(new),
        "counts_before": dict(collections.Counter(before.values())),
        "counts_after": dict(collections.Counter(after.values())),
        "changed": changed,
        "appeared": [list(k) for k in sorted(set(after) - set(before), key=str)],
        "disappeared": [list(k) for k in sorted(set(before) - set(after), key=str)],
        "unreadable": [f for f in new if f["verdict"] == "unreadable"],
        "draft_len_now_known": resolved,
        "value_line_differs_from_use_line": moved,
        "same_verdicts": not changed and set(before) == set(after),
    }
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"InferenceX {sha[:9]}: {len(old)} findings before, {len(new)} after; {len(changed)} changed, "
          f"{len(doc['appeared'])} appeared, {len(doc['disappeared'])} disappeared, "
          f"{len(doc['unreadable'])} unreadable; {len(resolved)} with a draft length found now; {len(moved)} whose "
          f"value is written on another line than its use; same verdicts: {doc['same_verdicts']}")
    return 0 if doc["same_verdicts"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
