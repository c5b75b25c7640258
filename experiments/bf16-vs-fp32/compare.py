"""bfloat16 against float32 on the committed HumanEval curve: per-k AL difference, token agreement, time.

The float32 side is the committed curve (experiments/qwen-coder-curve/humaneval, 80 prompts,
256 tokens, greedy, replay with a k = 6 trajectory). The bfloat16 side is the same command
with ``--dtype bfloat16`` (over the first N of those prompts). Requests are paired by index; the interval of each AL difference is a
paired percentile bootstrap over requests (the independent units: each resample draws the same
requests on both sides), 4,000 resamples, seed 0.

    golden-al measure --draft-lens 1-8 --mode replay \
        --replay-trajectory-k 6 --prompts humaneval --num-prompts 40 --max-tokens 256 --batch-size 16 \
        --thinking off --seed 0 --dtype bfloat16 --out runs/humaneval-bf16
    python experiments/bf16-vs-fp32/compare.py runs/humaneval-bf16
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FP32 = HERE.parent / "qwen-coder-curve" / "humaneval"


def common_prefix(a: list[int], b: list[int]) -> int:
    """Number of leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _requests(run: Path, k: int) -> dict[int, dict]:
    lines = (run / f"k{k}" / "requests.jsonl").read_text().splitlines()
    return {r["index"]: r for r in (json.loads(x) for x in lines if x.strip())}


def _record(run: Path, k: int) -> dict:
    return json.loads((run / f"k{k}" / "measurement.json").read_text())


def _timing_note(r32: dict, r16: dict) -> str:
    """Whether the decoding times were measured side by side (runs started within two hours)."""
    from datetime import datetime

    try:
        gap = abs((datetime.fromisoformat(r16["provenance"]["started"])
                   - datetime.fromisoformat(r32["provenance"]["started"])).total_seconds())
    except (KeyError, TypeError, ValueError):
        gap = float("inf")
    if gap <= 7200:
        return "the two runs ran one after the other (run.py): the time ratio is measured side by side"
    return "the two runs were made at different times on a shared machine: the time ratio is indicative only"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bf16_run", type=Path)
    ap.add_argument("--fp32-run", type=Path, default=FP32)
    ap.add_argument("--resamples", type=int, default=4000)
    ap.add_argument("--out", type=Path, default=HERE / "results.json")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    ks = list(range(1, 9))
    per_k = []
    agreement = None
    for k in ks:
        a, b = _requests(args.fp32_run, k), _requests(args.bf16_run, k)
        idx = sorted(set(a) & set(b))
        acc = np.array([[a[i]["num_accepted_drafts"], a[i]["num_verify_steps"],
                         b[i]["num_accepted_drafts"], b[i]["num_verify_steps"]] for i in idx], dtype=float)
        al32 = 1 + acc[:, 0].sum() / acc[:, 1].sum()
        al16 = 1 + acc[:, 2].sum() / acc[:, 3].sum()
        draws = rng.integers(0, len(idx), size=(args.resamples, len(idx)))
        s = acc[draws].sum(axis=1)  # (resamples, 4)
        diff = (s[:, 2] / s[:, 3]) - (s[:, 0] / s[:, 1])
        lo, hi = np.percentile(diff, [2.5, 97.5])
        per_k.append({"k": k, "requests": len(idx), "al_fp32": round(al32, 4), "al_bf16": round(al16, 4),
                      "diff_bf16_minus_fp32": round(al16 - al32, 4), "diff_ci95": [round(lo, 4), round(hi, 4)]})
        if agreement is None:  # outputs are the same at every k (one target generation per run)
            out32 = {i: a[i]["extra"]["output_token_ids"] for i in idx}
            out16 = {i: b[i]["extra"]["output_token_ids"] for i in idx}
            prefix = [common_prefix(out32[i], out16[i]) for i in idx]
            tokens32 = sum(len(out32[i]) for i in idx)
            agreement = {
                "requests_compared": len(idx),
                "requests_identical": sum(out32[i] == out16[i] for i in idx),
                "tokens_fp32": tokens32,
                "tokens_in_common_prefix": int(sum(prefix)),
                "common_prefix_fraction": round(sum(prefix) / tokens32, 4),
                "median_first_divergence": float(np.median([p for p, i in zip(prefix, idx, strict=True)
                                                            if out32[i] != out16[i]] or [0])),
                "finish_reason_changed": sum(a[i]["finish_reason"] != b[i]["finish_reason"] for i in idx),
            }
    r32, r16 = _record(args.fp32_run, 7), _record(args.bf16_run, 7)
    # each run's decoding time (one replay for all k) per 1,000 output tokens of that whole run
    tok32 = sum(r["num_output_tokens"] for r in _requests(args.fp32_run, 7).values())
    tok16 = sum(r["num_output_tokens"] for r in _requests(args.bf16_run, 7).values())
    t32 = round(r32["provenance"]["reference_engine"]["measure_wall_s"] / tok32 * 1000, 2)
    t16 = round(r16["provenance"]["reference_engine"]["measure_wall_s"] / tok16 * 1000, 2)
    doc = {
        "what": "bfloat16 vs float32, Qwen2.5-Coder-1.5B/0.5B, HumanEval (the bf16 run's prompts), 256 tokens, "
                "greedy, k = 1..8",
        "fp32_run": str(args.fp32_run), "bf16_run": str(args.bf16_run),
        "fp32_started": r32["provenance"].get("started"), "bf16_started": r16["provenance"].get("started"),
        "per_k": per_k, "token_agreement": agreement,
        "decode_s_per_1000_output_tokens": {"float32": t32, "bfloat16": t16,
                          "ratio_fp32_over_bf16": round(t32 / t16, 2) if t32 and t16 else None},
        "note": _timing_note(r32, r16),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    for row in per_k:
        print(f"k={row['k']}: fp32 {row['al_fp32']:.3f}  bf16 {row['al_bf16']:.3f}  diff {row['diff_bf16_minus_fp32']:+.3f} "
              f"[{row['diff_ci95'][0]:+.3f}, {row['diff_ci95'][1]:+.3f}]  n={row['requests']}")
    print(json.dumps(agreement), doc["decode_s_per_1000_output_tokens"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
