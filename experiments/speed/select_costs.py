"""Where ``golden-al select``'s CPU goes (issue 52): cumulative import stages, each a fresh process, then the whole
command; the difference between two stages is what the later one adds. Stages alternate sample by sample so that
all see the same machine; the load average stands beside the medians.

    python experiments/speed/select_costs.py [--repeats 15]      # ~1 min; writes select_costs.json beside it
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RECIPE = "tests/fixtures/select/inferencex/sglang__glm5.2__gb300-fp4__agentic__glm5.2-agentx.yaml"
RUN = ("import io, sys; from golden_al.cli.main import main; sys.stdout = io.StringIO(); "
       f"main(['select', '{RECIPE}', '--format', 'srtctl'])")
#: (stage, what it imports beyond the stages before it); the last stage is the whole command
STEPS = (
    ("interpreter", "pass"),
    ("stdlib the CLI uses", "import argparse, dataclasses, gc, hashlib, json, pathlib, re, typing"),
    ("yaml", "import yaml"),
    ("pydantic", "import pydantic.main"),
    ("importlib.metadata (pydantic's plugin loader imports it)", "import importlib.metadata"),
    ("the engine contract's records (plugin.profile, plugin.pins: dataclasses)", "import golden_al.plugin.pins"),
    ("golden_al.golden (pydantic curve models, store)", "import golden_al.golden"),
    ("select's modules (CLI, recipes floor, engine profiles)",
     "import golden_al.cli.main, golden_al.cli.select, golden_al.selection"),
    ("the select run", RUN),
)
STAGES = {name: "; ".join(code for _, code in STEPS[:n + 1]) for n, (name, _) in enumerate(STEPS)}
#: our dataclasses' definition time inside one select run (dataclasses._process_class, CPU)
DATACLASSES = ("import dataclasses, sys, time\n_p, _t = dataclasses._process_class, [0.0, 0]\n"
               "def _timed(cls, *a):\n    t = time.process_time(); r = _p(cls, *a)\n"
               "    if cls.__module__.split('.')[0] in ('golden_al', 'simulators', 'distributions'):\n"
               "        _t[0] += time.process_time() - t; _t[1] += 1\n    return r\n"
               f"dataclasses._process_class = _timed\n{RUN}\nsys.__stdout__.write(f'{{_t[0]}} {{_t[1]}}')")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT)
    samples: dict[str, list[float]] = {name: [] for name in STAGES}
    loads = [os.getloadavg()[0]]
    for code in STAGES.values():  # one unmeasured round: bytecode written, files cached
        _sample(code, env)
    for _ in range(args.repeats):
        for name, code in STAGES.items():
            samples[name].append(_sample(code, env)[0])
        loads.append(os.getloadavg()[0])
    dc = [tuple(map(float, _sample(DATACLASSES, env)[1].split())) for _ in range(5)]
    medians = {name: round(statistics.median(v), 4) for name, v in samples.items()}
    names = list(STAGES)
    result = {"repeats": args.repeats, "load_1min": [round(x, 2) for x in loads], "median_cpu_s": medians,
              "added_s": {n: round(medians[n] - medians[p], 4) for p, n in itertools.pairwise(names)},
              "our_dataclasses_s": round(statistics.median(t for t, _ in dc), 4), "our_dataclasses": int(dc[0][1])}
    (HERE / "select_costs.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


def _sample(code: str, env: dict[str, str]) -> tuple[float, str]:
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    usage = os.wait4(proc.pid, 0)[2]
    proc.returncode = 0
    return usage.ru_utime + usage.ru_stime, out


if __name__ == "__main__":
    main()
