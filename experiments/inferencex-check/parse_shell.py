"""How many of InferenceX's shell scripts does ``check``'s bash reader parse, and how fast?

Extracts the InferenceX commit (as ``run_check.py`` does), parses every ``*.sh``/``*.bash``/
``*.slurm`` file with :func:`golden_al.shell.parse_script` (tree-sitter-bash), and writes
``parse_shell.json``: the number parsed, each file that does not parse with the line and
problem and whether it spells a synthetic-acceptance knob (:func:`golden_al.knobs.census.names_knob_in_parts`),
and the total parse time.

    python experiments/inferencex-check/parse_shell.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from golden_al.knobs.census import names_knob_in_parts
from golden_al.provenance import atomic_write_text, collect, now_iso
from golden_al.shell import ShellSyntaxError, parse_script

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_check import extract  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--out", type=Path, default=HERE / "parse_shell.json")
    args = ap.parse_args(argv)
    started = now_iso()
    tmp = Path(tempfile.mkdtemp(prefix="infx-parse-"))
    failed = []
    total = 0
    seconds = 0.0
    try:
        sha = extract(args.mirror, args.commit, tmp)
        for path in sorted(tmp.rglob("*")):
            if path.suffix not in (".sh", ".bash", ".slurm") or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            total += 1
            t0 = time.perf_counter()
            try:
                parse_script(text)
            except ShellSyntaxError as exc:
                failed.append({"file": str(path.relative_to(tmp)), "line": exc.line, "problem": exc.problem,
                               "names_a_knob": names_knob_in_parts(text)})
            seconds += time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    doc = {"provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
           "inferencex_commit": sha, "scripts": total, "parsed": total - len(failed), "not_parsed": failed,
           "parse_seconds_total": round(seconds, 3)}
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"InferenceX {sha[:9]}: {total - len(failed)} of {total} shell scripts parse ({seconds:.2f} s in all); "
          f"not parsed: {', '.join(f['file'] + ':' + str(f['line']) for f in failed) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
