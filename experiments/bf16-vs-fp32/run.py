"""bfloat16 against float32 on the committed HumanEval curve's first N prompts, side by side in one run.

    flock /tmp/golden-al-heavy.lock python experiments/bf16-vs-fp32/run.py [--num-prompts 16]

Runs the committed curve's command (experiments/qwen-coder-curve: replay with a k = 6
trajectory, 256 tokens, batch 16, greedy, seed 0) on the first N HumanEval prompts twice, one
after the other in one process tree: float32 (the GGUF's dequantized values exactly) and
``--dtype bfloat16`` (the same weights rounded to bf16, bf16 arithmetic). Then ``compare.py``
pairs requests by index: bf16 against this run's fp32 (``results.json``) and bf16 against the
committed fp32 curve (``results_vs_committed.json``). Each AL difference has a paired bootstrap
interval over requests, next to the token agreement and the decoding time of both, measured side
by side. Writes the runs under ``runs/`` and ``timing.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _run(cmd: list[str]) -> dict:
    print("+", " ".join(cmd), flush=True)
    load0 = [round(x, 2) for x in os.getloadavg()]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True)
    return {"wall_s": round(time.monotonic() - t0, 1), "load_before": load0,
            "load_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--num-prompts", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    common = ["golden-al", "measure", "--draft-lens", "1-8", "--mode", "replay", "--replay-trajectory-k", "6",
              "--prompts", "humaneval", "--num-prompts", str(args.num_prompts), "--max-tokens", str(args.max_tokens),
              "--batch-size", "16", "--thinking", "off", "--seed", "0"]
    runs = HERE / "runs"
    timing = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": os.cpu_count(),
              "num_prompts": args.num_prompts, "max_tokens": args.max_tokens,
              "float32": _run([*common, "--dtype", "float32", "--out", str(runs / "fp32")]),
              "bfloat16": _run([*common, "--dtype", "bfloat16", "--out", str(runs / "bf16")])}
    timing["wall_ratio_bf16_over_fp32"] = round(timing["bfloat16"]["wall_s"] / timing["float32"]["wall_s"], 3)
    (HERE / "timing.json").write_text(json.dumps(timing, indent=2) + "\n")
    compare = [sys.executable, str(HERE / "compare.py"), str(runs / "bf16")]
    subprocess.run([*compare, "--fp32-run", str(runs / "fp32"), "--out", str(HERE / "results.json")], check=True)
    subprocess.run([*compare, "--out", str(HERE / "results_vs_committed.json")], check=True)
    print(json.dumps(timing, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
