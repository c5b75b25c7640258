"""Can InferenceX adopt ``check --policy no-pins`` today, with configuration and reviewed suppressions only?

On a copy of an InferenceX checkout (nothing in it is executed; the checkout itself is not touched):

1. ``check . --policy no-pins``: every hard-coded value must be listed (``pinned`` where it matches, its own
   failing verdict otherwise), and no agentic speculative recipe may be ``unselectable``;
2. the adoption, with no code edit: a ``.golden-al.toml`` (policy, golden dir, baseline, and ``exclude`` for the
   harness's Python injectors, which write the value selected at launch), a reviewed suppression
   comment on each remaining dynamic knob (the ``export "$pair"`` loops whose names come from the environment),
   and a baseline of today's pins (the list of pins to remove, reviewed once); then ``check .`` must exit 0;
3. a new hard-coded pin must then fail (exit 1), as must a suppression without a reason;
4. the YAML files that repeat a key in one mapping (srtctl's PyYAML keeps the last value), and how many of
   them repeat a key ``check`` reads (those files ``check`` refuses as unreadable).

Writes ``adoption.json`` beside this script.

    git clone https://github.com/SemiAnalysisAI/InferenceX /tmp/InferenceX
    git -C /tmp/InferenceX checkout 843c6254f
    python experiments/inferencex-select/run_adoption.py --tree /tmp/InferenceX
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from golden_al.provenance import atomic_write_text, now_iso

HERE = Path(__file__).resolve().parent
REASON = "the variable names come from MODEL_ENVS at run time (harness-owned model environment), reviewed"
#: The harness's own injectors write the value selected at launch (the selector, not a pin): left out, reviewed.
INJECTORS = "runners/synthetic_injectors/*.py"
INJECTORS_REASON = "the injectors write the golden value selected at launch from the committed store; reviewed"


def check(tree: Path, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run([sys.executable, "-m", "golden_al", "check", ".", "--format", "json", *args], cwd=tree,
                          capture_output=True, text=True, check=False)
    rows = json.loads(done.stdout) if done.stdout.strip() else []
    return done.returncode, rows, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    return dict(collections.Counter(r["verdict"] for r in rows if r["waived"] is None))


def repeated_keys(tree: Path) -> dict[str, Any]:
    """YAML files of the tree that repeat a key in one mapping, and those whose repeat is a key check reads."""
    from golden_al import safeio
    from golden_al.errors import UnreadableInputError
    from golden_al.recipes.srt_slurm import relevant_duplicates

    files = sorted(p for p in tree.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file() and ".git" not in p.parts)
    repeats: dict[str, list[str]] = {}
    read: list[str] = []
    for p in files:
        try:
            docs = safeio.load_yaml_documents(safeio.read_text(p))
        except UnreadableInputError:
            continue
        found = [kv for _, node in docs for kv in safeio.repeated_keys(node)]
        if found:
            rel = str(p.relative_to(tree))
            repeats[rel] = sorted({k for k, _ in found})
            if relevant_duplicates(found, engine_prefixes=False):
                read.append(rel)
    return {"yaml_files": len(files), "with_repeated_keys": len(repeats), "repeating_a_key_check_reads": len(read),
            "files": repeats}


def suppress(tree: Path, rows: list[dict[str, Any]]) -> list[str]:
    """A reviewed suppression comment above each unresolved dynamic export (a comment, no code edit)."""
    done = []
    by_file: dict[str, set[int]] = collections.defaultdict(set)
    for r in rows:
        if r["verdict"] == "unresolved" and r["waived"] is None and "named outside the file" in r["message"]:
            by_file[r["file"]].add(r["line"])
    for rel, lines in by_file.items():
        path = tree / rel
        text = path.read_text().splitlines(keepends=True)
        for line in sorted(lines, reverse=True):
            indent = text[line - 1][: len(text[line - 1]) - len(text[line - 1].lstrip())]
            text.insert(line - 1, f"{indent}# golden-al: ignore[unresolved] -- {REASON}\n")
            done.append(f"{rel}:{line}")
        path.write_text("".join(text))
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True, help="an InferenceX checkout (copied, never changed)")
    ap.add_argument("--out", type=Path, default=HERE / "adoption.json")
    args = ap.parse_args(argv)
    commit = subprocess.run(["git", "-C", str(args.tree), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip() or None
    result: dict[str, Any] = {"created": now_iso(), "tree_commit": commit}
    with tempfile.TemporaryDirectory(prefix="infx-adopt-") as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(args.tree, tree, ignore=shutil.ignore_patterns(".git"))
        (tree / ".git").mkdir()  # the configuration search stops at the repository root
        result["repeated_keys"] = repeated_keys(tree)
        rc, rows, summary = check(tree, "--golden-dir", "golden_al_distribution")
        result["default_policy"] = {"exit": rc, "failing": counts(rows), "summary": summary}
        rc, rows, summary = check(tree, "--golden-dir", "golden_al_distribution", "--policy", "no-pins")
        pins = [r for r in rows if r["pinned_value"] is not None or r["verdict"] == "pinned"]
        result["no_pins"] = {"exit": rc, "failing": counts(rows), "summary": summary,
                             "hard_coded_values_listed": len(pins),
                             "unselectable": sum(r["verdict"] == "unselectable" for r in rows)}
        result["launcher_code"] = [f"{r['file']}:{r['line']}" for r in rows if r["file"].endswith(".py")]
        (tree / ".golden-al.toml").write_text(
            'policy = "no-pins"\ngolden-dir = "golden_al_distribution"\nbaseline = ".golden-al-baseline.json"\n'
            f'# {INJECTORS_REASON}\nexclude = ["{INJECTORS}"]\n')
        result["suppressed"] = suppress(tree, rows)
        rc_write, _, summary = check(tree, "--write-baseline", ".golden-al-baseline.json")
        baseline = json.loads((tree / ".golden-al-baseline.json").read_text())
        result["baseline"] = {"exit": rc_write, "entries": len(baseline["findings"]),
                              "verdicts": dict(collections.Counter(r["verdict"] for r in baseline["findings"]))}
        rc, rows, summary = check(tree)
        result["adopted"] = {"exit": rc, "failing": counts(rows), "summary": summary}
        script = tree / "benchmarks" / "single_node" / "new_pin.sh"
        script.write_text("#!/bin/bash\nexport SGLANG_SIMULATE_ACC_LEN=2.49\nexport SGLANG_SIMULATE_ACC_METHOD=match-expected\n"
                          "export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token\npython3 -m sglang.launch_server "
                          "--model-path deepseek-ai/DeepSeek-V4-Pro --speculative-algorithm EAGLE "
                          "--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4\n")
        rc, rows, summary = check(tree)
        result["new_pin"] = {"exit": rc, "failing": counts(rows)}
        script.write_text("#!/bin/bash\n# golden-al: ignore[unresolved]\nexport \"$pair\"\n")
        rc, rows, summary = check(tree)
        result["suppression_without_reason"] = {"exit": rc, "failing": counts(rows)}
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ok = (result["adopted"]["exit"] == 0 and result["new_pin"]["exit"] == 1
          and result["suppression_without_reason"]["exit"] == 1 and result["no_pins"]["unselectable"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
