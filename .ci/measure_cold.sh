#!/usr/bin/env bash
# CI's cost on this machine, cold and warm, as CI meets it: a fresh clone of HEAD and an EMPTY
# HOME (no pip cache, no ~/.cache/golden-al), then .ci/run; then a second fresh clone with the
# same HOME (the caches the first run filled), .ci/run again. Writes each run's stage times
# (.ci/run's CI_TIMINGS), the load average and the machine to OUT (default
# experiments/ci-cost/cold_warm.json) and keeps the full logs next to it in the scratch folder.
#
#   bash .ci/measure_cold.sh [OUT]      # about 1.5 hours on 2 cores; run it on a quiet machine
#
# System packages are the machine's: Slurm is apt-installed by the cold run if missing (and
# then stays); cmake, ninja and a C++ compiler are assumed, as in CI.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/experiments/ci-cost/cold_warm.json}"
work="$(mktemp -d -t golden-al-cold.XXXXXX)"
chmod 755 "$work"  # the suite runs permission cases as nobody, who must reach the clone
mkdir -p "$work/home" "$(dirname "$out")"
commit="$(git -C "$repo" rev-parse HEAD)"
echo "measure_cold: scratch $work, commit $commit"
results=()
for run in cold warm; do
  git clone -q "$repo" "$work/$run"
  git -C "$work/$run" checkout -q "$commit"
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
  t0=$(date +%s)
  rc=0
  ( cd "$work/$run" && env -u GOLDEN_AL_CACHE -u XDG_CACHE_HOME HOME="$work/home" CI_LOGS="$work/logs-$run" \
      CI_TIMINGS="$work/$run.timings.json" bash .ci/run ) > "$work/$run.out" 2>&1 || rc=$?
  secs=$(( $(date +%s) - t0 ))
  echo "measure_cold: $run run exited $rc after $secs s (log $work/$run.out)"
  python3 - "$run" "$rc" "$secs" "$load_before" "$work" > "$work/$run.result.json" <<'PY'
import json, sys
run, rc, secs, load_before, work = sys.argv[1:]
try:
    timings = json.load(open(f"{work}/{run}.timings.json"))
except (OSError, ValueError):
    timings = None
lines = [l.rstrip() for l in open(f"{work}/{run}.out", errors="replace")
         if " passed" in l or "done in" in l or "finished" in l or "failed" in l]
print(json.dumps({"run": run, "exit": int(rc), "wall_s": int(secs), "load_before": load_before,
                  "load_after": open("/proc/loadavg").read().split()[:3], "timings": timings, "log_lines": lines[-20:]}))
PY
  results+=("$(cat "$work/$run.result.json")")
  [ "$rc" -eq 0 ] || break
done
python3 - "$out" "$commit" "${results[@]}" <<'PY'
import json, os, platform, sys
out, commit, *runs = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), None)
doc = {"what": "CI (.ci/run) on a fresh clone with an empty HOME (cold), then a fresh clone with the caches (warm)",
       "commit": commit, "cpu_count": os.cpu_count(), "cpu": cpu,
       "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
       "platform": platform.platform(), "script": ".ci/measure_cold.sh",
       "runs": [json.loads(r) for r in runs]}
open(out, "w").write(json.dumps(doc, indent=2) + "\n")
print(json.dumps(doc, indent=2))
PY
