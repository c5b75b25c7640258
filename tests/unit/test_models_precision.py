"""Precision ranking and refusal, spec resolution and missing-model errors. Torch-free."""

from __future__ import annotations

import json
import struct
import sys

import pytest

from golden_al.errors import ModelError
from golden_al.models import load_model, resolve_model
from golden_al.models.precision import canonical_dtype, check_precision, is_below, precision_rank


@pytest.mark.parametrize(("higher", "lower"), [
    ("float32", "bfloat16"), ("fp32", "fp16"), ("torch.bfloat16", "fp8"), ("float8_e4m3fn", "int8"),
    ("int8", "Q6_K"), ("Q8_0", "Q5_0"), ("MOSTLY_Q5_K_M", "Q4_K_M"), ("Q4_K_M", "Q3_K_S"), ("nvfp4", "Q2_K"),
    ("float64", "float32"), ("ALL_F32", "MOSTLY_BF16"),
])
def test_ranking_order(higher, lower):
    assert precision_rank(higher) > precision_rank(lower)
    assert is_below(lower, higher)
    assert not is_below(higher, lower)


def test_equal_ranks_and_unknowns():
    assert precision_rank("bf16") == precision_rank("float16")
    assert not is_below("float16", "bfloat16")
    assert not is_below("bfloat16", "float16")
    assert precision_rank("Q4_K_M") == precision_rank("awq") == precision_rank("int4") == precision_rank("mxfp4")
    assert precision_rank("mystery") is None
    assert not is_below("mystery", "float32")
    assert not is_below("int8", None)
    assert canonical_dtype("bf16") == "bfloat16"
    assert canonical_dtype("torch.float32") == "float32"
    assert canonical_dtype("mostly_q4_k_m") == "Q4_K_M"


def test_dequantized_gguf_is_not_below_its_shipped_precision():
    for loaded in ("float32", "bfloat16", "float16"):
        check_precision("qwen-draft", loaded, "Q4_K_M", role="draft")  # no error


def test_refusal_names_model_dtypes_and_the_override():
    with pytest.raises(ModelError) as err:
        check_precision("my-draft", "bf16", "float32", role="draft")
    msg = str(err.value)
    assert "draft my-draft would be loaded as bfloat16, below the precision it ships in (float32)" in msg
    assert "allow-lower-precision" in msg
    check_precision("my-draft", "bf16", "float32", role="draft", allow_lower=True)
    with pytest.raises(ModelError, match="below"):
        check_precision("d", "int8", "bfloat16")


# ---------------------------------------------------------------- resolution

def _write_safetensors_header(path, dtype: str) -> None:
    header = json.dumps({"w": {"dtype": dtype, "shape": [1], "data_offsets": [0, 2]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0\0")


def test_resolve_registry_names(tmp_path):
    r = resolve_model("qwen2.5-coder-pair:draft", cache_dir=tmp_path)
    assert r.kind == "registry"
    assert r.name == "qwen2.5-coder-0.5b-instruct"
    assert r.shipped_dtype == "Q4_K_M"
    assert r.path == tmp_path / "models" / "qwen2.5-coder-0.5b-instruct" / "gguf-float32"
    assert r.sha256.startswith("1d961463")
    assert r.source == "gguf"
    assert resolve_model("Qwen2.5-Coder-1.5B-Instruct", cache_dir=tmp_path).entry.gguf_sha256.startswith("cc324af0")
    with pytest.raises(ModelError, match="names a pair; load its members"):
        resolve_model("qwen2.5-coder-pair", cache_dir=tmp_path)


def test_resolve_local_dir_reads_shipped_dtype_from_headers(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "qwen2", "torch_dtype": "float32"}))
    _write_safetensors_header(d / "model.safetensors", "BF16")
    r = resolve_model(str(d), cache_dir=tmp_path)
    assert r.kind == "dir"
    assert r.source == "safetensors"
    assert r.shipped_dtype == "bfloat16"
    assert r.sha256 is None
    (d / "config.json").write_text(json.dumps({"model_type": "qwen2",
                                               "quantization_config": {"quant_method": "fp8"}}))
    assert resolve_model(str(d), cache_dir=tmp_path).shipped_dtype == "fp8"
    (d / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "bitsandbytes", "bits": 4}}))
    assert resolve_model(str(d), cache_dir=tmp_path).shipped_dtype == "4bit"


@pytest.mark.parametrize(("spec", "pattern"), [
    ("gpt2", r"unknown model 'gpt2': not a known name \(qwen2.5-coder-1.5b-instruct"),
    ("/no/such/dir", "model path /no/such/dir does not exist"),
    ("./weights.gguf", "model path ./weights.gguf does not exist"),
    ("", "empty model spec"),
])
def test_resolve_errors(spec, pattern, tmp_path):
    with pytest.raises(ModelError, match=pattern):
        resolve_model(spec, cache_dir=tmp_path)


def test_resolve_directory_without_config(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(ModelError, match=r"directory without config\.json or a \.gguf file"):
        resolve_model(str(tmp_path / "d"), cache_dir=tmp_path)
    (tmp_path / "x.bin").write_bytes(b"x")
    with pytest.raises(ModelError, match=r"not a \.gguf file"):
        resolve_model(str(tmp_path / "x.bin"), cache_dir=tmp_path)


def test_resolve_hub_id(tmp_path):
    r = resolve_model("Qwen/Qwen3-8B", cache_dir=tmp_path)
    assert r.kind == "hub"
    assert r.path is None


def test_missing_registry_model_names_the_fix_without_importing_torch(tmp_path):
    import subprocess

    code = (
        "import sys\n"
        "from golden_al.models import load_model\n"
        "from golden_al.errors import ModelError\n"
        f"try:\n    load_model('qwen2.5-coder-1.5b-instruct', cache_dir={str(tmp_path)!r})\n"
        "except ModelError as e:\n    print(e)\n"
        "assert 'torch' not in sys.modules\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "model qwen2.5-coder-1.5b-instruct is not in the cache (looked for" in out
    assert str(tmp_path / "models" / "qwen2.5-coder-1.5b-instruct" / "gguf-float32") in out
    assert "golden-al models fetch qwen2.5-coder-pair" in out


def test_precision_refused_before_any_loading(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text("{}")
    _write_safetensors_header(d / "model.safetensors", "F32")
    with pytest.raises(ModelError, match="would be loaded as bfloat16, below"):
        load_model(str(d), cache_dir=tmp_path, dtype="bfloat16", role="draft")
