"""Replay vs live speculative decoding vs transformers' assisted generation, k = 1..8.

Question: do the three ways of measuring greedy acceptance give the same accept
length at every verify step, and what does a whole k = 1..8 curve cost with each?

* replay: one target generation + one teacher-forced draft pass, every k at once
  (golden_al.reference, ``iter_replay``);
* live: our speculative decoding loop, once per k (batch size 1, like transformers);
* assisted: ``target.generate(assistant_model=draft)`` with ``num_assistant_tokens=k``,
  schedule ``constant``, ``assistant_confidence_threshold=0``, once per k; its per-step
  ``num_matches`` recorded from the candidate generator and recounted under our
  last-step rule (golden_al.reference.assisted.recount).

All three use transformers' step convention here (the first verify step drafts the
first output token), so their steps line up one to one; the default convention's AL
(prefill token not a verify step) is reported from replay as well. Wall times are
measured side by side in one run on the same machine; the ratios are what matters.

Run (about 30-40 minutes on 2 CPU cores; needs ``golden-al models fetch qwen2.5-coder-pair``)::

    flock /tmp/golden-al-heavy.lock python experiments/replay-live-assisted/compare.py
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from golden_al.models import load_pair
from golden_al.prompts import dataset_hash, load_prompts, render_all
from golden_al.provenance import atomic_write_text, collect, now_iso
from golden_al.reference import (
    ReferenceEngine,
    SamplingParams,
    counts_from_accept_counts,
    greedy_accept_counts,
    quiet_transformers,
)
from golden_al.reference.assisted import assisted_generate, recount

HERE = Path(__file__).resolve().parent


def al(accepted: list[list[int]]) -> float:
    steps = sum(len(a) for a in accepted)
    return 1.0 + sum(sum(a) for a in accepted) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "golden-al"))
    ap.add_argument("--target", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--draft", default="qwen2.5-coder-0.5b-instruct")
    ap.add_argument("--humaneval", type=int, default=2, help="first N HumanEval prompts")
    ap.add_argument("--mt-bench-coding", type=int, default=2, help="first N MT-Bench coding prompts")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--draft-lens", default="1-8")
    ap.add_argument("--out", default=str(HERE / "results.json"))
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.draft_lens.split("-"))
    ks = list(range(lo, hi + 1))
    M = args.max_tokens
    started = now_iso()
    quiet_transformers()

    pair = load_pair(args.target, args.draft, cache_dir=args.cache_dir)
    tok = pair.target.tokenizer
    convs = (load_prompts("humaneval", cache_dir=args.cache_dir, limit=args.humaneval).conversations
             + load_prompts("mt-bench:coding", cache_dir=args.cache_dir, limit=args.mt_bench_coding).conversations)
    rendered = render_all(tok, convs, thinking="off", preset=pair.target.chat_family)
    prompts = [r.token_ids for r in rendered]
    eos = pair.target.eos_token_ids
    target, draft = pair.target.model, pair.draft.model
    sampling = SamplingParams(max_tokens=M)
    engine = ReferenceEngine(target, draft, eos_token_ids=eos, prefill_emits_token=False)

    # 1. replay: one target generation + one draft pass gives every k
    t0 = time.perf_counter()
    replay = engine.replay(prompts, draft_lens=ks, sampling=sampling, batch_size=1)
    wall_replay = time.perf_counter() - t0
    replay_acc = {k: [r.accepted(k) for r in replay] for k in ks}
    # the default convention (the prefill token is not a verify step), from the same agreement
    replay_default = {k: [greedy_accept_counts([a > 0.5 for a in r.agreement], k, start=1) for r in replay]
                      for k in ks}

    # 2. live, once per k; 3. transformers' assisted generation, once per k
    live_acc, hf_acc, hf_native, wall_live, wall_hf = {}, {}, {}, {}, {}
    outputs_equal = {"live": True, "assisted": True}
    first_diff: list[dict[str, object]] = []
    for k in ks:
        t0 = time.perf_counter()
        live = engine.generate(prompts, draft_len=k, sampling=sampling, batch_size=1)
        wall_live[k] = time.perf_counter() - t0
        live_acc[k] = [o.accepted for o in live]
        t0 = time.perf_counter()
        hf = [assisted_generate(target, draft, p, num_assistant_tokens=k, max_new_tokens=M + 1, eos_token_ids=eos)
              for p in prompts]
        wall_hf[k] = time.perf_counter() - t0
        hf_acc[k] = [recount(h, eos_token_ids=eos, max_tokens=M) for h in hf]
        hf_native[k] = [[n for n, s in zip(h.num_matches, h.step_starts, strict=True) if s < M] for h in hf]
        for i, (r, lo_, h) in enumerate(zip(replay, live, hf, strict=True)):
            outputs_equal["live"] &= lo_.output_token_ids == r.output_token_ids
            outputs_equal["assisted"] &= h.output_token_ids[:M] == r.output_token_ids
            if not (replay_acc[k][i] == live_acc[k][i] == hf_acc[k][i]):
                first_diff.append({"k": k, "prompt": i, "replay": replay_acc[k][i], "live": live_acc[k][i],
                                   "assisted": hf_acc[k][i]})
        print(f"k={k}: AL replay {al(replay_acc[k]):.4f} live {al(live_acc[k]):.4f} "
              f"assisted {al(hf_acc[k]):.4f} (native {al(hf_native[k]):.4f}); "
              f"live {wall_live[k]:.1f}s assisted {wall_hf[k]:.1f}s", flush=True)

    rows = []
    for k in ks:
        per_step_equal = replay_acc[k] == live_acc[k] == hf_acc[k]
        c = [counts_from_accept_counts(a, k) for a in replay_acc[k]]
        rows.append({
            "k": k,
            "al_replay": al(replay_acc[k]),
            "al_live": al(live_acc[k]),
            "al_assisted": al(hf_acc[k]),
            "al_assisted_native": al(hf_native[k]),
            "al_replay_default_convention": al(replay_default[k]),
            "steps": sum(x.num_verify_steps for x in c),
            "accepted": sum(x.num_accepted_drafts for x in c),
            "per_step_equal": per_step_equal,
            "last_step_differs_native": sum(
                1 for a, b in zip(hf_acc[k], hf_native[k], strict=True) if a != b),
            "wall_live_s": round(wall_live[k], 2),
            "wall_assisted_s": round(wall_hf[k], 2),
        })
    total_live, total_hf = sum(wall_live.values()), sum(wall_hf.values())
    result = {
        "question": "replay vs live vs transformers assisted generation: AL per k and wall time for k=1..8",
        "pair": {"target": pair.target.info.model_dump(), "draft": pair.draft.info.model_dump()},
        "prompts": {"ids": [c.id for c in convs], "num_tokens": [len(p) for p in prompts],
                    "dataset_hash": dataset_hash(rendered)},
        "max_tokens": M,
        "greedy": True,
        "step_convention": "transformers' (the first verify step drafts the first output token); "
                           "al_replay_default_convention: the prefill token is not a verify step",
        "rows": rows,
        "all_per_step_equal": all(r["per_step_equal"] for r in rows),
        "outputs_equal_target_greedy": outputs_equal,
        "differences": first_diff[:20],
        "output_lengths": [len(r.output_token_ids) for r in replay],
        "finish_reasons": [r.finish_reason for r in replay],
        "wall_s": {"replay": round(wall_replay, 2), "live_all_k": round(total_live, 2),
                   "assisted_all_k": round(total_hf, 2)},
        "wall_ratio_to_replay": {"live": round(total_live / wall_replay, 2),
                                 "assisted": round(total_hf / wall_replay, 2)},
        "provenance": collect(started=started, ended=now_iso()),
    }
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(json.dumps({"wall_s": result["wall_s"], "ratio": result["wall_ratio_to_replay"],
                      "all_per_step_equal": result["all_per_step_equal"], "outputs": outputs_equal}))


if __name__ == "__main__":
    main()
