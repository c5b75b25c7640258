"""check, select and the fast test lane: this tree and the previous release side by side, in one run (issue 52).

* ``check``: ``golden-al check . --golden-dir golden_al_distribution --format json`` over an InferenceX checkout,
  this tree with its results cache (``GOLDEN_AL_CHECK_CACHE``: warm after the unmeasured first round, as in a
  pre-commit hook or a CI job that keeps the folder) and, as ``check_cold``, with ``--no-cache`` (a fresh CI runner);
* ``select``: ``golden-al select RECIPE --format srtctl`` on one InferenceX recipe (a fixture of this repository);
* the test lanes: this tree's fast lane (README's ``<!-- fast-test-command -->``) and the previous release's only
  lane, its whole suite (README's test command then).

Every sample is a fresh subprocess with its tree first on ``PYTHONPATH``; CPU is user + system time of the process
and all its descendants (``getrusage(RUSAGE_CHILDREN)``). The two trees alternate sample by sample so that both see
the same machine; each first runs once unmeasured, which writes its bytecode (into a folder per tree, as an
installed package has it) and warms the file cache. The load average and the CPUs are recorded beside every
sample. The previous release is a git worktree of ``--base``, removed at the end.

    python experiments/speed/bench.py --inferencex /tmp/InferenceX      # ~15 min on a quiet 2-core machine
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RECIPE = "tests/fixtures/select/inferencex/sglang__glm5.2__gb300-fp4__agentic__glm5.2-agentx.yaml"


def _machine() -> dict[str, Any]:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown") if Path("/proc/cpuinfo").exists() else "unknown"
    return {"nproc": len(os.sched_getaffinity(0)), "cpu_count": os.cpu_count(), "cpu_model": model}


def _sample(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """One run: CPU and wall seconds, exit code, the load average before it, the tail of its output."""
    load = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "code": done.returncode,
            "load_1min": round(load[0], 2), "stdout": done.stdout, "tail": (done.stdout + done.stderr)[-300:]}


def _fast_lane(readme: Path) -> list[str]:
    """The pytest command of README's fast-test-command block (after its last ``&&``), for this interpreter."""
    text = readme.read_text()
    block = text[text.index("<!-- fast-test-command -->"):].split("```", 2)[1]
    command = block.split("\n", 1)[1].strip().split("&&")[-1].strip()
    words = shlex.split(command)
    return [sys.executable if words[0] == "python" else words[0], *words[1:]]


def _findings(stdout: str) -> list[tuple[str, int, str]]:
    return sorted((f["file"], f["line"], f["verdict"]) for f in json.loads(stdout))


def _summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cpu_s_median": round(statistics.median(s["cpu_s"] for s in samples), 3),
            "wall_s_median": round(statistics.median(s["wall_s"] for s in samples), 3),
            "cpu_s": [s["cpu_s"] for s in samples], "load_1min": [s["load_1min"] for s in samples],
            "exit_codes": sorted({s["code"] for s in samples})}


def _suite_counts(tail: str) -> str:
    found = re.findall(r"(\d+ (?:passed|failed|skipped|deselected|errors?))", tail)
    return ", ".join(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inferencex", type=Path, required=True, help="an InferenceX checkout at --inferencex-commit")
    ap.add_argument("--inferencex-commit", default="843c6254f", help="recorded; the checkout must be at it")
    ap.add_argument("--base", default="9e1c49b", help="the previous release (a commit of this repository)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-suites", action="store_true", help="time check and select only")
    ap.add_argument("--out", type=Path, default=HERE / "results.json")
    args = ap.parse_args(argv)
    tree = args.inferencex.resolve()
    result: dict[str, Any] = {"base": args.base, "this": subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "inferencex_commit": args.inferencex_commit, "repeats": args.repeats, "machine": _machine(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="bench-speed-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True,
                       capture_output=True)
        try:
            trees = {"base": base, "this": ROOT}
            envs = {name: {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                           "PYTHONPATH": str(src), "PYTHONPYCACHEPREFIX": str(Path(tmp) / f"pyc-{name}"),
                           "GOLDEN_AL_CHECK_CACHE": str(Path(tmp) / "check-cache")}
                    for name, src in trees.items()}
            check = [sys.executable, "-m", "golden_al", "check", ".", "--golden-dir", "golden_al_distribution",
                     "--format", "json"]
            commands = {"check": (check, tree), "check_cold": (check, tree),
                        "select": ([sys.executable, "-m", "golden_al", "select", str(ROOT / RECIPE), "--format",
                                    "srtctl"], ROOT)}
            samples: dict[str, dict[str, list[dict[str, Any]]]] = {c: {"base": [], "this": []} for c in commands}
            for repeat in range(args.repeats + 1):  # the first round writes bytecode and warms the caches
                for what, (cmd, cwd) in commands.items():
                    for name in ("base", "this"):
                        cold = ["--no-cache"] if what == "check_cold" and name == "this" else []
                        got = _sample(cmd + cold, cwd=cwd, env=envs[name], timeout=600)
                        if repeat:
                            samples[what][name].append(got)
            for what in commands:
                result[what] = {name: _summary(s) for name, s in samples[what].items()}
                result[what]["ratio_cpu"] = round(result[what]["this"]["cpu_s_median"]
                                                  / result[what]["base"]["cpu_s_median"], 3)
            for what in ("check", "check_cold"):  # every sample of both trees reports the same findings
                found = {json.dumps(_findings(got["stdout"])) for s in samples[what].values() for got in s}
                result[what]["same_findings"] = len(found) == 1
                result[what]["findings"] = len(_findings(samples[what]["this"][0]["stdout"]))
            if not args.no_suites:
                lanes = {"base": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                         "this": _fast_lane(ROOT / "README.md")}
                result["tests"] = {}
                for name, cmd in lanes.items():
                    got = _sample(cmd, cwd=trees[name], env=envs[name], timeout=3600)
                    result["tests"][name] = {"command": shlex.join(cmd[1:] if cmd[0] == sys.executable else cmd),
                                             "cpu_s": got["cpu_s"], "wall_s": got["wall_s"], "code": got["code"],
                                             "load_1min": got["load_1min"], "counts": _suite_counts(got["tail"])}
                result["tests"]["ratio_wall"] = round(result["tests"]["this"]["wall_s"]
                                                      / result["tests"]["base"]["wall_s"], 3)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False,
                           capture_output=True)
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(readme_line(result))
    return 0


def readme_line(result: dict[str, Any]) -> str:
    """The figures README states (tests/unit/test_speed_bench.py holds README to the committed results)."""
    c, cold, s = result["check"], result["check_cold"], result["select"]
    line = (f"`check` over InferenceX {result['inferencex_commit']}: {c['this']['cpu_s_median']:.2f} s CPU with its "
            f"results cache, {cold['this']['cpu_s_median']:.2f} s without ({c['base']['cpu_s_median']:.2f} s in the "
            f"previous release, x{c['ratio_cpu']:.2f} and x{cold['ratio_cpu']:.2f}); `select` on one "
            f"recipe: {s['this']['cpu_s_median']:.2f} s ({s['base']['cpu_s_median']:.2f} s, x{s['ratio_cpu']:.2f})")
    if "tests" in result:
        t = result["tests"]
        line += (f"; the fast test lane: {t['this']['wall_s'] / 60:.1f} min (the whole suite, the previous "
                 f"release's only lane: {t['base']['wall_s'] / 60:.1f} min)")
    return line + f" (medians, {result['machine']['nproc']} CPUs, load average {result['load_average_start'][0]:.1f})"


if __name__ == "__main__":
    raise SystemExit(main())
