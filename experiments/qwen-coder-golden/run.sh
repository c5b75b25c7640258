#!/usr/bin/env bash
# The Qwen2.5-Coder-1.5B/0.5B golden curve, end to end with golden-al's own commands:
# measured records (experiments/qwen-coder-curve, HumanEval) -> fit -> commit (+ InferenceX
# export) -> env -> check -> report. Run from the repository root (light: seconds, no lock):
#   bash experiments/qwen-coder-golden/run.sh
# Re-running reproduces every output; the commit step then reports "nothing to write".
set -euo pipefail
GA=${GOLDEN_AL:-golden-al}
HERE=experiments/qwen-coder-golden
RECORDS=experiments/qwen-coder-curve/humaneval
CURVE=$HERE/qwen2.5-coder-1.5b-instruct_draft-model.yaml

# 1. fit: one curve (thinking off, k = 1..8) from the eight per-k records, diagnostics beside it
$GA fit "$RECORDS" --out "$CURVE" \
    --provenance-note "Qwen2.5-Coder-1.5B-Instruct target with the Qwen2.5-Coder-0.5B-Instruct draft (official Q4_K_M GGUFs, dequantized to float32), golden-al reference engine, greedy replay, first 80 HumanEval prompts, chat template, max 256 output tokens; records in experiments/qwen-coder-curve/humaneval, fit in experiments/qwen-coder-golden; 95% intervals recomputed by fit from the records' requests.jsonl (studentized cluster bootstrap over the 80 prompts, 2026-12-03; values unchanged)." \
    | tee "$HERE/fit.txt"
# 2. commit into the shipped store (golden_al/golden/curves/) and export the InferenceX shape
$GA commit "$CURVE" --export inferencex | tee "$HERE/commit.txt"
# 3. what an SGLang benchmark point at k = 7 must inject
$GA env --model qwen2.5-coder-1.5b-instruct --thinking off --draft-len 7 --engine sglang --format json \
    | tee "$HERE/env.json"
# 4. CI: the recipe that pins that value passes; one with a stale value fails (exit 1)
$GA check "$HERE/recipes/agentic/qwen-coder-sglang.yaml" --verbose | tee "$HERE/check.txt"
if $GA check "$HERE/recipes/stale/agentic/qwen-coder-sglang-stale.yaml" --verbose > "$HERE/check-stale.txt"; then
    echo "expected the stale recipe to fail" >&2; exit 1
fi
cat "$HERE/check-stale.txt"
# 5. the report: AL against k with CIs, per-position acceptance, histograms vs engine samplers, per-cell acceptance
$GA report "$RECORDS" --out "$HERE/report" --title "Qwen2.5-Coder-1.5B/0.5B golden curve (HumanEval)"
mkdir -p "$HERE/comparison"
# 6. for comparison only (not committed): the same pair on the MT-Bench coding questions
$GA fit experiments/qwen-coder-curve/mt-bench-coding --out "$HERE/comparison/mt-bench-coding.yaml" \
    | tee "$HERE/comparison/fit-mt-bench-coding.txt"
