#!/usr/bin/env bash
# The whole loop against a REAL llama.cpp server on the real Qwen2.5-Coder GGUF pair:
# build llama-server from the hash-pinned llama-cpp-python sdist (cached in ~/.cache/golden-al,
# keyed by the source hash), fetch the pair (cached), then tests/integration/test_llamacpp.py:
# measure k=3 greedy (AL == the server's own counters), compare with the reference engine on the
# same prompts, fit + commit into a temporary store, run llama-server with `golden-al env`'s
# setting, and check-run on its log and /metrics (pass, and fail for a wrong target).
#
#   .ci/llamacpp_e2e.sh          # from the repository root, with .venv built by the README test command
#
# Cold cost on a 2-core machine (measured, see README "Tests and CI"): the build dominates.
# GOLDEN_AL_LLAMACPP_JOBS sets the compile jobs (default 2). GOLDEN_AL_LLAMACPP_PROMPTS x
# GOLDEN_AL_LLAMACPP_MAX_TOKENS (default 8 HumanEval prompts x 128 tokens) is enough text that
# the real AL is below k+1, so the synthetic leg checks a sample, not an identity.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
. .venv/bin/activate
start=$(date +%s)
stamp() { echo "== llamacpp e2e: $1 ($(( $(date +%s) - start )) s)"; }

stamp "build llama-server (cached after the first run)"
golden-al engines build llamacpp --jobs "${GOLDEN_AL_LLAMACPP_JOBS:-2}" --format json
stamp "fetch the Qwen2.5-Coder pair (cached after the first run)"
golden-al models fetch qwen2.5-coder-pair
stamp "integration tests"
artifacts="${GOLDEN_AL_LLAMACPP_ARTIFACTS:-$(mktemp -d)}"
export GOLDEN_AL_LLAMACPP_PROMPTS="${GOLDEN_AL_LLAMACPP_PROMPTS:-8}"
export GOLDEN_AL_LLAMACPP_MAX_TOKENS="${GOLDEN_AL_LLAMACPP_MAX_TOKENS:-128}"
GOLDEN_AL_LLAMACPP_ARTIFACTS="$artifacts" python -m pytest --run-llamacpp -m llamacpp \
  tests/integration/test_llamacpp.py -v -p no:cacheprovider
for f in "$artifacts"/*.json; do echo "-- $f"; cat "$f"; done
stamp "done"
