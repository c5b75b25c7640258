"""nn.Linear's product against the transposed form (W x^T)^T, at the reference engine's shapes.

The Qwen2.5-Coder pair's layer shapes (in_features, out_features) at the row counts of the
default run: the draft decoding 16 rows, the target verifying 16 x 8 = 128 rows, and a
prefill of 160 rows. Each pair of timings is interleaved in one process (3 rounds), so the
ratio compares like with like under the same load. Writes ``linear_shapes.json``.

    python experiments/default-run/bench_linear.py
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import torch

from golden_al.reference.kernels import TransposedLinear

HERE = Path(__file__).resolve().parent
SHAPES = [  # (in, out, rows, what)
    (896, 1152, 16, "draft q/k/v, decode"), (896, 4864, 16, "draft gate/up, decode"),
    (4864, 896, 16, "draft down, decode"), (896, 151936, 16, "draft lm_head, decode"),
    (1536, 2048, 128, "target q/k/v, verify"), (1536, 8960, 128, "target gate/up, verify"),
    (8960, 1536, 128, "target down, verify"), (1536, 151936, 128, "target lm_head, verify"),
    (1536, 8960, 160, "target gate/up, prefill"), (8960, 1536, 160, "target down, prefill"),
]


def _time(f, n: int) -> float:
    f()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n


def main() -> int:
    torch.manual_seed(0)
    rows_out = []
    load0 = os.getloadavg()
    with torch.inference_mode():
        for i, o, m, what in SHAPES:
            plain = torch.nn.Linear(i, o, bias=False)
            trans = torch.nn.Linear(i, o, bias=False)
            trans.weight = plain.weight
            trans.__class__ = TransposedLinear
            x = torch.randn(m, i)
            n = max(3, int(3e8 / (o * i)))
            a = b = 0.0
            for _ in range(3):
                a += _time(lambda p=plain, x=x: p(x), n)
                b += _time(lambda t=trans, x=x: t(x), n)
            err = float((plain(x) - trans(x)).abs().max() / plain(x).abs().max())
            rows_out.append({"in": i, "out": o, "rows": m, "what": what, "linear_ms": round(a / 3e-3, 3),
                             "transposed_ms": round(b / 3e-3, 3), "speedup": round(a / b, 3),
                             "max_rel_diff": err})
            print(f"{what:26s} {m:4d} rows  linear {a / 3e-3:8.2f} ms  transposed {b / 3e-3:8.2f} ms  "
                  f"x{a / b:.2f}", flush=True)
    doc = {"what": __doc__.splitlines()[0], "torch": torch.__version__, "threads": torch.get_num_threads(),
           "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpus": os.cpu_count(),
           "python": platform.python_version(), "load_before": [round(x, 2) for x in load0],
           "load_after": [round(x, 2) for x in os.getloadavg()],
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "shapes": rows_out}
    (HERE / "linear_shapes.json").write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
