"""Why the smoke run (`measure --draft-len 3 --num-prompts 2 --max-tokens 32`) is not faster than the default.

Each run is a fresh interpreter (as a user's command is) that does what ``golden-al measure`` does, in the same
calls, and times every phase in wall seconds *and* CPU seconds of the process (``time.process_time``): on a shared
machine the wall time of a phase grows with the load, its CPU time much less, so phases are compared by CPU time
and by their share of the run, never by wall totals. Phases: imports (torch, transformers), prompts (the prompt
set and the checks), each model's load (resolve, tokenizer, weights: read from the GGUF and dequantized), the
linear layers' kernels, rendering, decoding (with the first forward call apart: oneDNN builds its kernels
there), and the records. The configurations run interleaved (smoke, default, smoke, default, ...) so both meet the
same machine. The load average is recorded beside every number. Models must be cached (run the default once).

    python experiments/smoke-run/profile_phases.py [--repeats 2] [--out results.json]
    python experiments/smoke-run/profile_phases.py --profile-load > profile_load.txt

``--profile-load`` loads the pair once under cProfile, timed in CPU seconds, and prints where the load goes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONFIGS = {
    "smoke": {"draft_lens": [3], "num_prompts": 2, "max_tokens": 32},
    "default": {"draft_lens": [7], "num_prompts": 16, "max_tokens": 128},
}


class Phases:
    """Wall and CPU seconds per phase, and the load average when each ended."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def mark(self, name: str, **extra: Any) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.rows[name] = {"wall_s": round(wall - self.wall, 3), "cpu_s": round(cpu - self.cpu, 3),
                           "load": [round(x, 2) for x in os.getloadavg()], **extra}
        self.wall, self.cpu = wall, cpu


def child(config: str, cache: Path, out: Path) -> dict[str, Any]:
    """One run of ``config`` in this process: the phases of ``golden-al measure``."""
    phases = Phases()
    import torch
    import transformers  # noqa: F401

    phases.mark("imports", torch_threads=torch.get_num_threads())
    from golden_al.measure.reference import ReferenceSettings, check_inputs, load_inputs, run_measurement
    from golden_al.reference import batch_cache

    settings = ReferenceSettings(**CONFIGS[config])
    prompt_set = check_inputs(settings, cache_dir=cache, out_dir=out)
    phases.mark("prompts")
    inputs = load_inputs(settings, cache_dir=cache, prompt_set=prompt_set)
    for role in ("target", "draft"):
        phases.rows[f"load {role}"] = getattr(inputs.pair, role).load_seconds
    phases.mark("models, kernels, render", load_seconds=inputs.load_seconds)
    original = batch_cache.BatchedKV.forward
    first: dict[str, float] = {}

    def timed(self: Any, *a: Any, **kw: Any) -> Any:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return original(self, *a, **kw)
        finally:
            if "wall_s" not in first:
                first.update(wall_s=round(time.perf_counter() - t0, 3), cpu_s=round(time.process_time() - c0, 3))

    batch_cache.BatchedKV.forward = timed  # type: ignore[method-assign]
    records = run_measurement(inputs, settings, out_dir=out)
    phases.mark("decode and records", first_forward=first, al=records[0].al)
    return {"config": config, **CONFIGS[config], "phases": phases.rows}


def profile_load(cache: Path) -> None:
    """The pair's load under cProfile on the process's CPU clock: the functions that take the time."""
    import cProfile
    import pstats

    import torch  # noqa: F401 - imported before timing: every run pays it once
    import transformers  # noqa: F401

    from golden_al.measure.reference import DEFAULT_DRAFT, DEFAULT_TARGET
    from golden_al.models import load_pair

    prof = cProfile.Profile(time.process_time)
    wall, cpu = time.perf_counter(), time.process_time()
    prof.enable()
    pair = load_pair(DEFAULT_TARGET, DEFAULT_DRAFT, cache_dir=cache, auto_fetch=False)
    prof.disable()
    print(f"load_pair: wall {time.perf_counter() - wall:.1f} s, CPU {time.process_time() - cpu:.1f} s, load "
          f"{[round(x, 2) for x in os.getloadavg()]}, target {pair.target.load_seconds}, draft {pair.draft.load_seconds}")
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--configs", default="smoke,default")
    ap.add_argument("--cache-dir", type=Path, default=Path(os.environ.get("GOLDEN_AL_CACHE") or
                                                           Path.home() / ".cache" / "golden-al"))
    ap.add_argument("--out", type=Path, default=HERE / "results.json")
    ap.add_argument("--profile-load", action="store_true", help="profile the pair's load alone (CPU seconds)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.profile_load:
        profile_load(args.cache_dir)
        return 0
    if args.child:
        print(json.dumps(child(args.child, args.cache_dir, args.child_out)))
        return 0
    runs = []
    work = Path(tempfile.mkdtemp(prefix="smoke-phases-"))
    for rep in range(args.repeats):
        for config in args.configs.split(","):
            load_before = [round(x, 2) for x in os.getloadavg()]
            t0 = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--child", config, "--cache-dir", str(args.cache_dir),
                                   "--child-out", str(work / f"{config}-{rep}")], capture_output=True, text=True,
                                  check=False)
            wall = round(time.perf_counter() - t0, 1)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                return 1
            run = json.loads(done.stdout.strip().splitlines()[-1])
            run.update(repeat=rep, process_wall_s=wall, load_before=load_before)
            runs.append(run)
            print(json.dumps(run), flush=True)
    from golden_al.provenance import collect

    args.out.write_text(json.dumps({"runs": runs, "provenance": collect(argv=sys.argv)}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
