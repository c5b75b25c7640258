"""How long does loading the converted Qwen2.5-Coder pair take, and in which dtype should we store it?

Each scenario runs in a fresh interpreter (so one-time imports are counted
separately from loading) ``--reps`` times; wall and CPU seconds per phase, resident
memory, and the first and second forward pass on a rendered HumanEval prompt
(the first one pages the mmap-ed weights in) are recorded. A bfloat16 copy of
each converted directory is written to a temporary folder to compare storing
bfloat16 against float32, and the fraction of dequantized weights that bfloat16
cannot hold exactly is counted.

Run (heavy: about 12 GB of RAM at peak and a few minutes of CPU)::

    flock /tmp/golden-al-heavy.lock /work/venv/bin/python experiments/model-load-time/bench_load.py

Writes ``results.json`` next to this file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODELS = ("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct")

CHILD = r"""
import json, os, resource, sys, time
T, C = time.perf_counter, time.process_time
def rss_gb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1e6
out = {}
t, c = T(), C()
import torch, transformers
from transformers import AutoModelForCausalLM
torch.set_num_threads(2)
out["import_torch_transformers"] = [T() - t, C() - c]
t, c = T(), C()
import transformers.models.qwen2.modeling_qwen2  # one-time per process, paid by the first load otherwise
out["import_modeling"] = [T() - t, C() - c]
from golden_al.models import load_model, load_pair
from golden_al.prompts import load_prompts, render
spec, kind, dtype, cache = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
t, c = T(), C()
if kind == "pair":
    pair = load_pair(MODEL_T, MODEL_D, cache_dir=cache, dtype=dtype)
    lm = pair.target
    out["phases"] = {"target": pair.target.load_seconds, "draft": pair.draft.load_seconds}
else:
    lm = load_model(spec, cache_dir=cache, dtype=dtype)
    out["phases"] = lm.load_seconds
out["load"] = [T() - t, C() - c]
out["rss_after_load_gb"] = rss_gb()
conv = load_prompts("humaneval", cache_dir=cache, limit=1)[0]
ids = torch.tensor([render(lm.tokenizer, conv, preset="qwen2").token_ids])
out["prompt_tokens"] = ids.shape[1]
for name in ("first_forward", "second_forward"):
    t, c = T(), C()
    with torch.no_grad():
        logits = lm.model(ids).logits
    out[name] = [T() - t, C() - c]
out["rss_after_forward_gb"] = rss_gb()
out["max_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
out["logits_checksum"] = float(logits.double().sum())
print("RESULT " + json.dumps(out))
""".replace("MODEL_T", repr(MODELS[0])).replace("MODEL_D", repr(MODELS[1]))


def run_child(spec: str, kind: str, dtype: str, cache: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", CHILD, spec, kind, dtype, str(cache)], capture_output=True,
                          text=True, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"child failed ({proc.returncode}): {proc.stderr[-2000:]}")


def make_bf16_copy(src: Path, dst: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name != "model.safetensors" and f.is_file() and f.name != "golden_al_conversion.json":
            shutil.copy(f, dst / f.name)
    state = load_file(str(src / "model.safetensors"))
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in state.items()}, str(dst / "model.safetensors"),
              metadata={"format": "pt"})
    cfg = json.loads((dst / "config.json").read_text())
    cfg["dtype"] = "bfloat16"
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    # keep the conversion facts (shipped Q4_K_M, verified fast tokenizer) so only the weights' dtype differs
    manifest = json.loads((src / "golden_al_conversion.json").read_text())
    manifest.update(dtype="bfloat16", files={})
    (dst / "golden_al_conversion.json").write_text(json.dumps(manifest, indent=2))


def bf16_exactness(src: Path) -> dict[str, Any]:
    import torch
    from safetensors import safe_open

    total = changed = 0
    worst = 0.0
    with safe_open(str(src / "model.safetensors"), framework="pt") as f:
        for key in f.keys():
            w = f.get_tensor(key)
            r = w.to(torch.bfloat16).to(torch.float32)
            diff = (w != r)
            total += w.numel()
            changed += int(diff.sum())
            if diff.any():
                rel = ((w - r).abs() / w.abs().clamp_min(1e-30))[diff].max().item()
                worst = max(worst, rel)
    return {"parameters": total, "changed_by_bf16_rounding": changed, "fraction_changed": changed / total,
            "max_relative_error": worst}


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    def med(path: list[str], idx: int | None = None) -> float:
        vals = []
        for s in samples:
            v: Any = s
            for p in path:
                v = v[p]
            vals.append(v[idx] if idx is not None else v)
        return round(statistics.median(vals), 3)

    out = {
        "reps": len(samples),
        "import_torch_transformers_wall_s": med(["import_torch_transformers"], 0),
        "import_modeling_wall_s": med(["import_modeling"], 0),
        "load_wall_s": med(["load"], 0),
        "load_cpu_s": med(["load"], 1),
        "first_forward_wall_s": med(["first_forward"], 0),
        "second_forward_wall_s": med(["second_forward"], 0),
        "rss_after_load_gb": med(["rss_after_load_gb"]),
        "rss_after_forward_gb": med(["rss_after_forward_gb"]),
        "prompt_tokens": samples[0]["prompt_tokens"],
    }
    phases = samples[0]["phases"]
    if "target" in phases:
        for role in ("target", "draft"):
            for k in ("tokenizer", "weights"):
                out[f"{role}_{k}_wall_s"] = med(["phases", role, k])
    else:
        for k in ("tokenizer", "weights"):
            out[f"{k}_wall_s"] = med(["phases", k])
    out["logits_checksums"] = sorted({round(s["logits_checksum"], 4) for s in samples})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "golden-al"))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "results.json"))
    args = parser.parse_args()
    sys.path.insert(0, str(HERE.parent.parent))
    from golden_al.models.fetch import converted_dir_for
    from golden_al.provenance import collect, now_iso

    started = now_iso()
    cache = Path(args.cache_dir)
    dirs = {m: converted_dir_for(cache, m) for m in MODELS}
    for m, d in dirs.items():
        if not (d / "model.safetensors").is_file():
            raise SystemExit(f"{m} is not converted in {cache}; run 'golden-al models fetch qwen2.5-coder-pair'")
    results: dict[str, Any] = {"question": "load time and memory of the converted pair; float32 vs bfloat16 storage"}
    with tempfile.TemporaryDirectory(prefix="golden-al-bf16-") as tmp:
        bf16 = {m: Path(tmp) / m for m in MODELS}
        results["bf16_exactness"] = {}
        for m in MODELS:
            make_bf16_copy(dirs[m], bf16[m])
            results["bf16_exactness"][m] = bf16_exactness(dirs[m])
        sizes = {f"{m}/{kind}": round((d / "model.safetensors").stat().st_size / 2**30, 3)
                 for m in MODELS for kind, d in (("float32", dirs[m]), ("bfloat16", bf16[m]))}
        results["file_size_gib"] = sizes
        scenarios = [
            ("target fp32-stored -> float32 (default)", MODELS[0], "model", "float32"),
            ("draft fp32-stored -> float32 (default)", MODELS[1], "model", "float32"),
            ("pair fp32-stored -> float32, shared tokenizer (load_pair)", "", "pair", "float32"),
            ("target fp32-stored -> bfloat16 (cast on load)", MODELS[0], "model", "bfloat16"),
            ("target bf16-stored -> bfloat16", str(bf16[MODELS[0]]), "model", "bfloat16"),
            ("target bf16-stored -> float32 (cast on load)", str(bf16[MODELS[0]]), "model", "float32"),
        ]
        results["scenarios"] = {}
        for label, spec, kind, dtype in scenarios:
            samples = [run_child(spec, kind, dtype, cache) for _ in range(args.reps)]
            results["scenarios"][label] = summarize(samples)
            print(label, json.dumps(results["scenarios"][label]), flush=True)
    results["load_average_at_end"] = os.getloadavg()
    results["provenance"] = collect(started=started)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
