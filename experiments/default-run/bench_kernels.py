"""Candidate float32 CPU products for the reference engine's linear layers, side by side.

For each layer shape of the Qwen2.5-Coder pair at the row counts the default run meets
(a lone request's single row, the draft's 16 decoding rows, the target's 128 verify rows,
a 160-token prefill), times in one process, interleaved over 3 rounds:

* ``linear``: ``nn.Linear`` (torch's BLAS, MKL in the official wheels; ``--cpu-kernels torch``);
* ``transposed``: ``(W x^T)^T`` through the same BLAS (the engine's ``TransposedLinear``,
  ``--cpu-kernels transposed``);
* ``onednn``: oneDNN's float32 inner product on the plain weights (the engine's
  ``OneDNNLinear``, ``--cpu-kernels onednn``, the default);
* ``onednn_reordered``: the same on a weight reordered once for 16 rows
  (``torch.ops.mkldnn._reorder_linear_weight``), used at every row count: the form measured and
  not adopted before (the reorder doubles memory and moves time into loading);
* ``bfloat16``: ``nn.Linear`` on bfloat16 copies of the weights and inputs (float32 out): another
  rounding of the model, not an option for the float32 default; timed for reference only.

Writes ``kernels.json`` (or ``--out``) with the CPU's model and instruction sets. Run it on a
quiet machine:

    python experiments/default-run/bench_kernels.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from golden_al.provenance import cpu_info
from golden_al.reference.kernels import OneDNNLinear, TransposedLinear

HERE = Path(__file__).resolve().parent
SHAPES = [  # (in, out, what)
    (896, 1152, "draft q/k/v"), (896, 4864, "draft gate/up"), (4864, 896, "draft down"),
    (896, 151936, "draft lm_head"), (1536, 2048, "target q/k/v"), (1536, 8960, "target gate/up"),
    (8960, 1536, "target down"), (1536, 151936, "target lm_head"),
]
ROWS = (1, 16, 128, 160)
HINT = 16


def _time(f, n: int) -> float:
    f()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n


def _layer(w: torch.Tensor, cls: type[torch.nn.Linear]) -> torch.nn.Linear:
    """A bias-free linear layer over ``w`` (no copy) computing in the engine's form ``cls``."""
    layer = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
    layer.weight = torch.nn.Parameter(w, requires_grad=False)
    layer.__class__ = cls
    return layer


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "kernels.json")
    args = ap.parse_args()
    torch.manual_seed(0)
    out = []
    load0 = os.getloadavg()
    with torch.inference_mode():
        for i, o, what in SHAPES:
            w = torch.randn(o, i) / i**0.5
            packed = torch.ops.mkldnn._reorder_linear_weight(w, HINT)
            w_bf16 = w.bfloat16()
            forms = {
                "linear": _layer(w, torch.nn.Linear),
                "transposed": _layer(w, TransposedLinear),
                "onednn": _layer(w, OneDNNLinear),
                "onednn_reordered": lambda x, p=packed: torch.ops.mkldnn._linear_pointwise(
                    x, p, None, "none", [], ""),
                "bfloat16": lambda x, wb=w_bf16: torch.nn.functional.linear(x.bfloat16(), wb).float(),
            }
            for m in ROWS:
                if o == 151936 and m == 160:
                    continue  # a prefill keeps only the last position's logits
                x = torch.randn(m, i)
                n = max(2, int(2e8 / (o * i)))
                acc = dict.fromkeys(forms, 0.0)
                for _ in range(3):
                    for name, f in forms.items():
                        acc[name] += _time(lambda f=f, x=x: f(x), n) / 3
                ref = forms["linear"](x)
                diff = {name: float((f(x) - ref).abs().max() / ref.abs().max()) for name, f in forms.items()}
                row = {"what": what, "in": i, "out": o, "rows": m,
                       **{f"{k}_ms": round(v * 1e3, 3) for k, v in acc.items()},
                       **{f"{k}_vs_linear": round(acc["linear"] / v, 3) for k, v in acc.items() if k != "linear"},
                       "max_rel_diff": diff}
                out.append(row)
                print(f"{what:15s} {m:4d} rows  " + "  ".join(f"{k} {v * 1e3:8.2f} ms" for k, v in acc.items()),
                      flush=True)
    doc = {"what": __doc__.splitlines()[0], "torch": torch.__version__, "threads": torch.get_num_threads(),
           "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpus": os.cpu_count(), "cpu": cpu_info(),
           "python": platform.python_version(), "onednn_weight_hint_rows": HINT,
           "load_before": [round(x, 2) for x in load0], "load_after": [round(x, 2) for x in os.getloadavg()],
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "shapes": out}
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
