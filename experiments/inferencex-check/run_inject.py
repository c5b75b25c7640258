"""Dry-run ``golden-al inject`` over every srt-slurm recipe of SemiAnalysisAI/InferenceX.

Extracts one commit of the InferenceX mirror into a temporary directory (nothing in it is
executed), then plans the injection of every YAML recipe under
``benchmarks/multi_node/srt-slurm-recipes/`` exactly as ``golden-al inject FILE --model M
--thinking T --dry-run --force`` would, and tallies the outcomes. The curves are golden-al's
shipped store by default (InferenceX's curves converted, values identical, plus the aliases
that map served names and repo ids to them); ``--golden-dir inferencex`` uses the tree's own
``golden_al_distribution/`` instead, where only the file keys name a model. Model and thinking mode come from ``check``'s finding for the file
when it has one (the same rules CI uses), else from the recipe's model names with thinking
on (InferenceX's injector default), else from the recipe's folder (InferenceX's model prefix). Writes ``inject_counts.json`` next to this script.

    python experiments/inferencex-check/run_inject.py \\
        --mirror /work/.mirror/SemiAnalysisAI+InferenceX/repo --commit 843c6254f

Outcomes: ``rewritten`` (the recipe gets the golden values), ``already-golden`` (nothing
to change), ``conflict`` (a different value is pinned: ``inject`` exits 1 without
``--force``), ``no-speculation`` (no speculative role: nothing to inject), ``no-golden``
(no committed value for that model, mode and k: exit 2), ``refused`` (a usage error the
tool names: exit 2) and ``crash`` (anything else; must be 0).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from run_check import extract

from golden_al.checks.static import check_paths
from golden_al.errors import GoldenALError, InputFileError, NoGoldenValueError
from golden_al.golden import SHIPPED_CURVES_DIR, load_store
from golden_al.injection.inject import plan_injection
from golden_al.provenance import atomic_write_text, collect, now_iso
from golden_al.recipes.srt_slurm import read_recipe, recipe_document

HERE = Path(__file__).resolve().parent
RECIPES = "benchmarks/multi_node/srt-slurm-recipes"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--golden-dir", default="shipped", help="'shipped' (default), 'inferencex', or a directory")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    started = now_iso()
    tmp = Path(tempfile.mkdtemp(prefix="infx-inject-"))
    outcomes: dict[str, dict[str, str]] = {}
    try:
        sha = extract(args.mirror, args.commit, tmp)
        golden = {"shipped": SHIPPED_CURVES_DIR, "inferencex": tmp / "golden_al_distribution"}.get(
            args.golden_dir, Path(args.golden_dir))
        store = load_store(golden)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            report = check_paths([RECIPES], store=store)
        finally:
            os.chdir(cwd)
        found: dict[str, tuple[str, str]] = {}
        for f in report.findings:
            if f.model and f.thinking:
                found.setdefault(f.file.removeprefix("./"), (f.model, f.thinking.removeprefix("thinking_")))
        recipes = sorted(p for p in (tmp / RECIPES).rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        for path in recipes:
            rel = str(path.relative_to(tmp))
            text = path.read_text(encoding="utf-8", errors="replace")
            try:
                recipe = read_recipe(recipe_document(text, rel)[0])
                if recipe is None or recipe.base.target is None:
                    outcomes[rel] = {"outcome": "no-speculation"}
                    continue
                # InferenceX's injector names the model by the recipe folder (<engine>/<model>/...).
                folder = rel.split("/")[4] if rel.count("/") > 4 else ""
                recipe_names = [m.name for m in recipe.base.models]
                names = [*recipe_names, folder]
                model, thinking = found.get(rel) or ("", "on")
                if not store.resolve_model(model):
                    model = next((m for m in names if m and store.resolve_model(m)), "")
                if not model:
                    outcomes[rel] = {"outcome": "no-golden",
                                     "why": f"no curve for any model name {recipe_names}"}
                    continue
                res = plan_injection(text, path=rel, store=store, model=model, thinking=thinking)
                outcome = "conflict" if res.conflicts else "rewritten" if res.changed else "already-golden"
                outcomes[rel] = {"outcome": outcome, "model": model, "thinking": thinking, "k": str(res.k),
                                 "al": f"{res.point.al:g}", "curve": res.point.curve}
            except NoGoldenValueError as exc:
                outcomes[rel] = {"outcome": "no-golden", "why": str(exc).splitlines()[0]}
            except (InputFileError, GoldenALError) as exc:
                outcomes[rel] = {"outcome": "refused", "why": str(exc).splitlines()[0]}
            except Exception as exc:  # a crash is a finding of this experiment, not a stop
                outcomes[rel] = {"outcome": "crash", "why": f"{type(exc).__name__}: {exc}"}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    counts = collections.Counter(o["outcome"] for o in outcomes.values())
    doc = {
        "provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
        "inferencex_commit": sha,
        "golden_dir": args.golden_dir,
        "recipes": len(outcomes),
        "counts": dict(sorted(counts.items())),
        "outcomes": outcomes,
    }
    atomic_write_text(args.out / "inject_counts.json", json.dumps(doc, indent=2) + "\n")
    print(f"InferenceX {sha[:9]}: {len(outcomes)} recipes; "
          + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return 1 if counts.get("crash") else 0


if __name__ == "__main__":
    raise SystemExit(main())
