"""Run ``golden-al check`` over the whole SemiAnalysisAI/InferenceX tree with its own golden directory.

Extracts one commit of the InferenceX mirror into a temporary directory (outside this
repository; nothing in it is executed), runs ``check`` in-process from the tree's root
with ``--golden-dir <tree>/golden_al_distribution``, cross-checks it against the CLI run
as a subprocess, and writes ``findings.json`` (the CLI's JSON list plus provenance and
counts) and ``counts.json`` next to this script.

    python experiments/inferencex-check/run_check.py \\
        --mirror /work/.mirror/SemiAnalysisAI+InferenceX/repo --commit 843c6254f
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


def extract(mirror: Path, commit: str, dest: Path) -> str:
    """``git archive COMMIT | tar -x -C dest``; returns the full commit id."""
    sha = subprocess.run(["git", "-C", str(mirror), "rev-parse", commit], check=True, capture_output=True,
                         text=True).stdout.strip()
    archive = subprocess.Popen(["git", "-C", str(mirror), "archive", sha], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {sha} failed")
    return sha


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    started = now_iso()
    tmp = Path(tempfile.mkdtemp(prefix="infx-check-"))
    try:
        sha = extract(args.mirror, args.commit, tmp)
        golden = tmp / "golden_al_distribution"
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            report = check_paths(["."], store=load_store(golden))
        finally:
            os.chdir(cwd)
        findings = [f.to_dict() for f in report.findings]
        for f in findings:  # paths as the CLI prints them from the tree root
            f["file"] = f["file"][2:] if f["file"].startswith("./") else f["file"]
        cli = subprocess.run([sys.executable, "-m", "golden_al", "check", ".", "--golden-dir",
                              "golden_al_distribution", "--format", "json"], cwd=tmp, capture_output=True, text=True)
        cli_findings = json.loads(cli.stdout)
        for f in cli_findings:
            f["file"] = f["file"][2:] if f["file"].startswith("./") else f["file"]
        if cli_findings != findings:
            raise SystemExit("the CLI and the in-process run disagree")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    counts = {v: n for v, n in report.counts().items()}
    by_group = collections.Counter((f["verdict"], f["engine"]) for f in findings)
    command = (f"git -C {args.mirror} archive {sha} | tar -x -C $TREE && cd $TREE && "
               "golden-al check . --golden-dir golden_al_distribution --format json")
    meta = {
        "provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
        "inferencex_commit": sha,
        "command": command,
        "cli_exit_code": cli.returncode,
        "files_scanned": report.files_scanned,
        "files_with_pins": len({f.file for f in report.findings}),  # the files that have findings
        "counts": counts,
        "counts_by_engine": {f"{v}/{e}": n for (v, e), n in sorted(by_group.items())},
        "diagnostics": report.diagnostics,
    }
    atomic_write_text(args.out / "findings.json", json.dumps({**meta, "findings": findings}, indent=2) + "\n")
    atomic_write_text(args.out / "counts.json", json.dumps(meta, indent=2) + "\n")
    print(f"InferenceX {sha[:9]}: {len(findings)} findings in {meta['files_with_pins']} files "
          f"({report.files_scanned} scanned); " + ", ".join(f"{v} {n}" for v, n in counts.items() if n)
          + f"; CLI exit code {cli.returncode}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
