#!/usr/bin/env bash
# Copy the InferenceX legacy golden files, byte for byte, from a git mirror into the
# test fixtures (the converter's input). Usage:
#   experiments/import-inferencex-curves/extract_from_mirror.sh MIRROR_GIT_DIR [REF]
# e.g. MIRROR_GIT_DIR=/work/.mirror/SemiAnalysisAI+InferenceX/repo REF=843c6254ff69b567f772f6a5fd97675af3d04431
set -euo pipefail
mirror="${1:?usage: $0 MIRROR_GIT_DIR [REF]}"
ref="${2:-843c6254ff69b567f772f6a5fd97675af3d04431}"
out="$(cd "$(dirname "$0")/../.." && pwd)/tests/fixtures/inferencex/golden_al_distribution"
mkdir -p "$out"
git -C "$mirror" ls-tree --name-only "$ref" golden_al_distribution/ | grep -E '\.ya?ml$' | while read -r f; do
    git -C "$mirror" show "$ref:$f" > "$out/$(basename "$f")"
    echo "copied $f"
done
