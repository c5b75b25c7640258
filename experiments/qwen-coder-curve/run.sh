#!/usr/bin/env bash
# Measure the Qwen2.5-Coder-1.5B/0.5B greedy AL curve, k = 1..8, thinking off, on HumanEval
# and on the MT-Bench coding questions, then plot it. Run from the repository root:
#   flock /tmp/golden-al-heavy.lock bash experiments/qwen-coder-curve/run.sh
# Needs the pair in the cache (golden-al models fetch qwen2.5-coder-pair; measure fetches it too).
set -euo pipefail
HERE=experiments/qwen-coder-curve
golden-al measure --draft-lens 1-8 --mode replay --replay-trajectory-k 5 \
    --prompts mt-bench:coding --num-prompts all --max-tokens 512 --batch-size 10 \
    --thinking off --seed 0 --out "$HERE/mt-bench-coding"
golden-al measure --draft-lens 1-8 --mode replay --replay-trajectory-k 6 \
    --prompts humaneval --num-prompts 80 --max-tokens 256 --batch-size 16 \
    --thinking off --seed 0 --out "$HERE/humaneval"
python "$HERE/plot.py"
