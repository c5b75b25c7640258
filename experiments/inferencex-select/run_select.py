"""Differential test of ``golden-al select`` against ``golden-al check`` on InferenceX's real recipes.

For every srt-slurm recipe of an InferenceX checkout in which ``check`` finds synthetic-acceptance pins
whose golden value it can name (``match`` or ``mismatch``), this script

1. removes every pin (each engine's synthetic variables from every environment block, the synthetic
   keys from every vLLM ``speculative-config``): the recipe as InferenceX's no-pins rule wants it;
2. runs ``select`` on the pin-free recipe (every variant srtctl would run), with the tree's own
   ``golden_al_distribution/`` and no identity beyond what the recipe says;
3. compares the AL values ``select`` writes with the golden values ``check`` expected for the original
   pins (``expected_al``: what a wrong pin should have been);
4. applies the overrides to each pin-free variant and runs ``check`` on the result: every finding must
   be ``match``.

Nothing in the checkout is executed. Writes ``results.json`` (per recipe: check's expected values,
select's values or refusal, the round-trip verdicts) and ``summary.json`` beside this script.

    git clone https://github.com/SemiAnalysisAI/InferenceX /tmp/InferenceX
    git -C /tmp/InferenceX checkout 843c6254f
    python experiments/inferencex-select/run_select.py --tree /tmp/InferenceX
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from golden_al.checks.static import check_paths
from golden_al.engines import vllm
from golden_al.errors import GoldenALError
from golden_al.golden import load_store
from golden_al.plugin import registry
from golden_al.provenance import atomic_write_text, now_iso
from golden_al.recipes.srtctl import apply_overrides, expand_variants
from golden_al.selection import select_recipe

HERE = Path(__file__).resolve().parent
RECIPES = "benchmarks/multi_node/srt-slurm-recipes"
#: every environment spelling of every engine's synthetic knobs (values and companions)
ENV_NAMES = {s for p in map(registry.get_profile, registry.engine_names()) for k in p.check.synthetic_knobs
             if k.kind == "env" for s in k.spellings()}
VLLM_SYNTHETIC = (vllm.LENGTH_KEY, vllm.RATES_KEY, vllm.LEGACY_RATE_KEY)


def _strip_config(value: Any) -> Any:
    """A vLLM speculative-config without its synthetic keys (a JSON string stays a string)."""
    obj = json.loads(value) if isinstance(value, str) else value
    if not isinstance(obj, dict):
        return value
    obj = {k: v for k, v in obj.items() if k not in VLLM_SYNTHETIC}
    if obj.get(vllm.METHOD_KEY) == vllm.SYNTHETIC_METHOD:
        del obj[vllm.METHOD_KEY]
    return json.dumps(obj) if isinstance(value, str) else obj


def strip_pins(node: Any) -> Any:
    """The document with every synthetic-acceptance pin removed (any depth: base and override sections)."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if str(k) in ENV_NAMES:
                continue
            out[k] = _strip_config(v) if str(k) in vllm.RECIPE_SPEC_KEYS else strip_pins(v)
        return out
    if isinstance(node, list):
        return [strip_pins(v) for v in node]
    return node


def _written_als(overrides: list[dict[str, Any]]) -> set[float]:
    """The AL values a plan writes (an environment AL, TensorRT-LLM's AL - 1 + 1, a vLLM config's length)."""
    out: set[float] = set()
    for o in overrides:
        name = o["path"].rsplit(".", 1)[-1]
        if o["op"] != "set":
            continue
        if name in registry.env_knobs():
            knob = registry.env_knobs()[name].knob
            out.add(round(float(o["value"]) + (1.0 if knob.unit == "al-1" else 0.0), 9))
        elif name in vllm.RECIPE_SPEC_KEYS:
            cfg = json.loads(o["value"]) if isinstance(o["value"], str) else o["value"]
            out.add(round(float(cfg[vllm.LENGTH_KEY]), 9))
    return out


def round_trip(stripped: dict[str, Any], plan: Any, store: Any, tmp: Path) -> list[str]:
    """``check`` verdicts of each pin-free variant with its overrides applied (all must be ``match``)."""
    verdicts: list[str] = []
    variants = {v.selector: v for v in expand_variants(stripped)}
    for vp in plan.variants:
        applied = apply_overrides(variants[vp.selector].data, list(vp.overrides))
        f = tmp / "applied.yaml"
        f.write_text(yaml.safe_dump(applied, sort_keys=False))
        report = check_paths([str(f)], store=store)
        verdicts += [x.verdict for x in report.findings]
    return verdicts


def strip_script(text: str) -> str:
    """A launch script with every line that sets an environment engine's knob replaced by ``:`` (a no-op, so an
    ``if`` whose body was the pin still parses)."""
    from golden_al.knobs.census import census_shell, iter_pin_sites

    lines = text.split("\n")
    for occ in iter_pin_sites(census_shell(text)):
        if occ.engine in ENV_ENGINES and not occ.inert:
            for n in occ.lines():
                lines[n - 1] = lines[n - 1][: len(lines[n - 1]) - len(lines[n - 1].lstrip())] + ":"
    return "\n".join(lines)


#: engines whose synthetic settings are environment variables (a script can take them from the launcher)
ENV_ENGINES = {p.name for p in map(registry.get_profile, registry.engine_names()) if p.check.command_line is None
               and any(k.kind == "env" and k.role == "value" for k in p.check.synthetic_knobs)}


def scripts(tree: Path, store: Any, tmp: Path) -> dict[str, Any]:
    """Launch scripts whose environment-engine pins ``check`` can name a golden value for: pins removed, does
    ``select`` give the same value?"""
    cwd = os.getcwd()
    os.chdir(tree)
    try:
        report = check_paths(["benchmarks"], store=store)
    finally:
        os.chdir(cwd)
    by_file: dict[str, set[float]] = collections.defaultdict(set)
    for f in report.findings:
        if f.file.endswith(".sh") and f.engine in ENV_ENGINES and f.verdict in ("match", "mismatch"):
            by_file[f.file].add(round(f.expected_al, 9))
    rows = []
    for rel, expected in sorted(by_file.items()):
        target = tmp / Path(rel).name
        target.write_text(strip_script((tree / rel).read_text()))
        row: dict[str, Any] = {"file": rel, "check_expected": sorted(expected)}
        try:
            plan = select_recipe(target, store=store)
            row["select_values"] = sorted({round(v.al, 9) for v in plan.variants if v.al is not None})
            row["outcome"] = "same" if set(row["select_values"]) == expected else "different"
        except GoldenALError as exc:
            row.update(outcome="refused", reason=str(exc).replace(str(target), rel))
        rows.append(row)
    return {"counts": dict(collections.Counter(r["outcome"] for r in rows)), "rows": rows}


def survey(tree: Path, store: Any, tmp: Path) -> dict[str, Any]:
    """``select`` on every recipe of the tree, pins removed: how many variants it plans (throughput: the golden
    AL; off: not agentic or not speculative) and why it refuses the rest (reasons grouped)."""
    counts: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    for path in sorted((tree / RECIPES).rglob("*.yaml")):
        try:
            doc = yaml.safe_load(path.read_text())
        except yaml.YAMLError:
            counts["not yaml"] += 1
            continue
        if not isinstance(doc, dict):
            continue
        target = tmp / "survey.yaml"
        target.write_text(yaml.safe_dump(strip_pins(doc), sort_keys=False))
        try:
            plan = select_recipe(target, store=store)
        except GoldenALError as exc:
            counts["recipes refused"] += 1
            text = str(exc).split("]: ", 1)[-1]
            reasons[text.split(" (hint")[0][:120]] += 1
            continue
        counts["recipes planned"] += 1
        for v in plan.variants:
            counts[f"variants {v.mode}"] += 1
    return {"counts": dict(counts), "reasons": dict(reasons.most_common())}


#: recipes copied (pins removed) as the select tests' differential fixtures: every engine and format
FIXTURES = (
    "sglang/deepseek-v4/agentic/agg-gb300-tp4-mtp-kvoffload.yaml",
    "sglang/glm5.2/gb200-fp4/agentic/disagg-gb200-1p4d-dep8-tp4-c48-mtp.yaml",
    "sglang/glm5.2/gb300-fp4/agentic/glm5.2-agentx.yaml",
    "trtllm/deepseek-v4/agentx-gb300-20260811/dynamo-disagg-gb300-1p4d-dep4-tep8-c4-b1-mtp.yaml",
    "trtllm/glm5.2/gb300-fp4/agentic/dynamo-agg-gb300-tp8-c1-b2-mtp8.yaml",
    "trtllm/qwen3.5/gb300-fp4/disagg/agentx/disagg-gb300-1p7d-dep4-tep8-c7-b1-mtp-kvoffload.yaml",
    "vllm/kimi-k3/agentic/agg-gb200-tp16-latency-agentic.yaml",
    "vllm/minimax-m3/agentic/gb300-fp4/1p1d-tep4-tp4-c1-agentic.yaml",
)


#: launch scripts copied (pins replaced by ``:``) beside them: TensorRT-LLM with the GQA draft variant, SGLang
FIXTURE_SCRIPTS = (
    "benchmarks/single_node/agentic/minimaxm3_fp4_b200_trt_mtp.sh",
    "benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh",
)


def write_fixtures(tree: Path, commit: str | None, results: list[dict[str, Any]], out: Path,
                   script_rows: list[dict[str, Any]] | None = None) -> None:
    """The :data:`FIXTURES` recipes with their pins removed, and ``expected.json``: check's golden values."""
    out.mkdir(parents=True, exist_ok=True)
    by_file = {r["file"]: r for r in results}
    expected = {}
    for rel in FIXTURES:
        full = f"{RECIPES}/{rel}"
        row = by_file[full]
        name = rel.replace("/", "__")
        body = yaml.safe_dump(strip_pins(yaml.safe_load((tree / full).read_text())), sort_keys=False)
        head = (f"# Generated by experiments/inferencex-select/run_select.py --write-fixtures from\n"
                f"# SemiAnalysisAI/InferenceX {full} at {commit}: its synthetic-acceptance pins removed.\n")
        (out / name).write_text(head + body)
        expected[name] = {"source": full, "check_verdicts": row["check_verdicts"], "golden": row["check_expected"]}
    scripts_expected = {}
    by_script = {r["file"]: r for r in script_rows or []}
    for rel in FIXTURE_SCRIPTS:
        name = Path(rel).name
        text = strip_script((tree / rel).read_text())
        head, _, rest = text.partition("\n")
        note = (f"# Generated by experiments/inferencex-select/run_select.py --write-fixtures from\n# SemiAnalysisAI/InferenceX "
                f"{rel} at {commit}: its synthetic-acceptance pins replaced by ':'.\n")
        (out / name).write_text(f"{head}\n{note}{rest}" if head.startswith("#!") else note + text)
        scripts_expected[name] = {"source": rel, "golden": by_script[rel]["check_expected"]}
    (out / "expected.json").write_text(json.dumps({"tree_commit": commit, "recipes": expected,
                                                   "scripts": scripts_expected}, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True, help="an InferenceX checkout")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--write-fixtures", type=Path, metavar="DIR",
                    help="also write a few pin-free recipes and check's expected values as test fixtures")
    args = ap.parse_args(argv)
    tree = args.tree.resolve()
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip() or None
    store = load_store(tree / "golden_al_distribution")
    cwd = os.getcwd()
    os.chdir(tree)
    try:
        report = check_paths([RECIPES], store=store)
    finally:
        os.chdir(cwd)
    by_file: dict[str, list[Any]] = collections.defaultdict(list)
    for f in report.findings:
        by_file[f.file].append(f)
    results = []
    counts: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="infx-select-") as tmpdir:
        tmp = Path(tmpdir)
        for rel, findings in sorted(by_file.items()):
            expected = {round(f.expected_al, 9) for f in findings if f.verdict in ("match", "mismatch")}
            if not expected:
                continue
            doc = yaml.safe_load((tree / rel).read_text())
            stripped = strip_pins(doc)
            target = tmp / "recipe.yaml"
            target.write_text(yaml.safe_dump(stripped, sort_keys=False))
            row: dict[str, Any] = {"file": rel, "check_verdicts": sorted({f.verdict for f in findings}),
                                   "check_expected": sorted(expected)}
            try:
                plan = select_recipe(target, store=store)
            except GoldenALError as exc:
                row.update(outcome="refused", reason=str(exc).replace(str(target), rel))
                counts["refused"] += 1
                results.append(row)
                continue
            selected = set().union(*(_written_als([o.to_dict() for o in v.overrides]) for v in plan.variants))
            row["select_values"] = sorted(selected)
            row["variants"] = [{"selector": v.selector, "k": v.k, "al": v.al, "curve": v.curve, "mode": v.mode}
                               for v in plan.variants]
            verdicts = round_trip(stripped, plan, store, tmp)
            row["round_trip_verdicts"] = dict(collections.Counter(verdicts))
            same = selected == expected
            row["outcome"] = "same" if same else "different"
            row["round_trip_ok"] = bool(verdicts) and all(v == "match" for v in verdicts)
            counts[row["outcome"]] += 1
            counts["round_trip_ok" if row["round_trip_ok"] else "round_trip_not_ok"] += 1
            results.append(row)
        every = survey(tree, store, tmp)
        launch_scripts = scripts(tree, store, tmp)
    summary = {"created": now_iso(), "tree_commit": commit, "recipes_with_golden_pins": len(results),
               "counts": dict(counts), "every_recipe": every["counts"], "refusal_reasons": every["reasons"],
               "launch_scripts": launch_scripts["counts"]}
    if args.write_fixtures is not None:
        write_fixtures(tree, commit, results, args.write_fixtures, launch_scripts["rows"])
    atomic_write_text(args.out / "results.json", json.dumps(results, indent=2) + "\n")
    atomic_write_text(args.out / "results_scripts.json", json.dumps(launch_scripts["rows"], indent=2) + "\n")
    atomic_write_text(args.out / "summary.json", json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
