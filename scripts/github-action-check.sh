#!/usr/bin/env bash
# The steps of action.yml after installation: `golden-al check --format github` (annotations on the
# pinned lines; the markdown job summary of every finding goes to $GITHUB_STEP_SUMMARY), then the
# optional check-run lines. Inputs come as INPUT_* environment variables, as the action passes them;
# tests/unit/test_github_action.py runs this script on a fixture tree without GitHub.
set -euo pipefail

read -r -a paths <<< "${INPUT_PATHS:-.}"
args=(--format github)
if [[ -n "${INPUT_GOLDEN_DIR:-}" ]]; then args+=(--golden-dir "$INPUT_GOLDEN_DIR"); fi
if [[ -n "${INPUT_ALLOW:-}" ]]; then args+=(--allow "$INPUT_ALLOW"); fi
if [[ -n "${INPUT_POLICY:-}" ]]; then args+=(--policy "$INPUT_POLICY"); fi
if [[ "${INPUT_STRICT_SUPPRESSIONS:-}" == "true" ]]; then args+=(--strict-suppressions); fi
read -r -a excludes <<< "${INPUT_EXCLUDE:-}"
for glob in "${excludes[@]}"; do args+=(--exclude "$glob"); done

status=0
golden-al check "${paths[@]}" "${args[@]}" || status=$?

while IFS= read -r line; do
  [[ -z "${line// }" ]] && continue
  if [[ "$line" == args:* ]]; then
    read -r -a run_args <<< "${line#args:}"
  else
    read -r engine thinking rest <<< "$line"
    read -r -a files <<< "$rest"
    run_args=("${files[@]}" --engine "$engine" --thinking "$thinking")
    if [[ -n "${INPUT_GOLDEN_DIR:-}" ]]; then run_args+=(--golden-dir "$INPUT_GOLDEN_DIR"); fi
  fi
  echo "== golden-al check-run ${run_args[*]}"
  out=$(golden-al check-run "${run_args[@]}") || status=$((status > 0 ? status : $?))
  echo "$out"
  if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
    { echo; echo "### golden-al check-run ${run_args[*]}"; echo; echo '```'; echo "$out"; echo '```'; } >> "$GITHUB_STEP_SUMMARY"
  fi
done <<< "${INPUT_CHECK_RUN:-}"
exit "$status"
