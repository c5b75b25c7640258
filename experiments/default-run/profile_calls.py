"""Where the default run's time goes: every forward call of both models, timed by kind.

Runs the default workload (`golden-al measure --draft-len 7`: the first 16 HumanEval prompts,
greedy, 128 tokens, live decoding, batch 16, shared prefix) in one process, once per
``--kernels`` form, and times each ``BatchedKV.forward`` call, grouped by model (target, draft)
and kind: ``prefill`` (prompt tokens), ``verify`` (the target's k + 1 tokens per row) and
``draft step`` (the draft's proposals). FLOPs count 2 per weight per token row, the output layer
only on the rows whose logits are kept, so GFLOP/s is the matrix products' rate (attention and
bookkeeping are in the time, not in the count). Writes ``profile.json`` (or ``--out``).

    python experiments/default-run/profile_calls.py [--kernels onednn,transposed] [--max-tokens 128]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path
from typing import Any

from golden_al.measure.reference import ReferenceSettings, load_inputs
from golden_al.provenance import cpu_info, now_iso
from golden_al.reference import ReferenceEngine, SamplingParams, batch_cache, make_generator
from golden_al.reference.kernels import use_cpu_kernels

HERE = Path(__file__).resolve().parent


def _weights(model: Any) -> tuple[int, int]:
    """(weights of the linear layers below the output layer, weights of the output layer)."""
    import torch

    head = model.get_output_embeddings().weight
    body = sum(m.weight.numel() for m in model.modules()
               if isinstance(m, torch.nn.Linear) and m.weight is not head)
    return body, head.numel()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="onednn", help="comma-separated --cpu-kernels forms (default: onednn)")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("GOLDEN_AL_CACHE") or
                                                           Path.home() / ".cache" / "golden-al"))
    ap.add_argument("--out", type=Path, default=HERE / "profile.json")
    args = ap.parse_args()
    settings = ReferenceSettings(draft_lens=[7], max_tokens=args.max_tokens)
    inputs = load_inputs(settings, cache_dir=args.cache_dir)
    pair = inputs.pair
    models = {"target": pair.target.model, "draft": pair.draft.model}
    role = {id(m): name for name, m in models.items()}
    sizes = {name: _weights(m) for name, m in models.items()}
    stats: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0, 0, 0.0])
    original = batch_cache.BatchedKV.forward

    def timed(self: Any, ids: Any, valid: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        out = original(self, ids, valid, **kw)
        dt = time.perf_counter() - t0
        name = role[id(self.model)]
        rows, n = ids.shape
        kind = "verify" if name == "target" and n == 8 and not kw.get("logits_to_keep") else (
            "prefill" if kw.get("logits_to_keep") and n > 2 else "draft step")
        kept = rows * (kw.get("logits_to_keep") or n)
        body, head = sizes[name]
        s = stats[(name, kind)]
        s[0] += 1
        s[1] += dt
        s[2] += rows * n
        s[3] += 2.0 * (body * rows * n + head * kept)
        return out

    batch_cache.BatchedKV.forward = timed  # type: ignore[method-assign]
    engine = ReferenceEngine(pair.target.model, pair.draft.model, eos_token_ids=pair.target.eos_token_ids)
    doc: dict[str, Any] = {"what": __doc__.splitlines()[0], "started": now_iso(), "cpu": cpu_info(),
                           "cpus": os.cpu_count(), "load_before": [round(x, 2) for x in os.getloadavg()],
                           "max_tokens": args.max_tokens, "shared_prefix_tokens": inputs.shared_prefix, "runs": []}
    for kind in args.kernels.split(","):
        for m in models.values():
            use_cpu_kernels(m, kind)
        stats.clear()
        t0 = time.perf_counter()
        outs = list(engine.iter_generate([r.token_ids for r in inputs.rendered], draft_len=7,
                                         sampling=SamplingParams(max_tokens=args.max_tokens),
                                         generator=make_generator(0), batch_size=settings.batch_size,
                                         shared_prefix=inputs.shared_prefix))
        total = time.perf_counter() - t0
        calls = [{"model": m, "kind": k, "calls": int(v[0]), "seconds": round(v[1], 2), "token_rows": int(v[2]),
                  "share_of_decoding": round(v[1] / total, 3), "gflop_per_s": round(v[3] / v[1] / 1e9, 1)}
                 for (m, k), v in sorted(stats.items())]
        doc["runs"].append({"kernels": kind, "decoding_s": round(total, 1),
                            "output_tokens": sum(len(o.output_token_ids) for o in outs), "calls": calls})
        print(f"{kind}: {total:.1f} s", flush=True)
        for c in calls:
            print(f"  {c['model']:6s} {c['kind']:10s} {c['calls']:4d} calls {c['seconds']:7.1f} s "
                  f"({c['share_of_decoding']:.0%}) {c['gflop_per_s']:6.1f} GFLOP/s", flush=True)
    doc["load_after"] = [round(x, 2) for x in os.getloadavg()]
    doc["ended"] = now_iso()
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
