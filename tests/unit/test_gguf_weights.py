"""The GGUF dequantizer (``golden_al.models.gguf_weights``) against gguf-py's, bit for bit.

Random blocks of every supported type (random bytes, with finite random fp16 scales in the
scale fields, subnormals and negatives included) must dequantize to exactly gguf-py's
``gguf.quants.dequantize`` float32 values; gguf-py is what transformers' GGUF loader uses.
Then the index and the file reader: a GGUF written by gguf-py's writer reads back through
:func:`tensor_index` and :func:`load_state_dict` to the same values, and bad files fail loudly.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
gguf = pytest.importorskip("gguf")

from golden_al.errors import ModelError  # noqa: E402
from golden_al.models.gguf_weights import BLOCKS, GGUFTensor, dequantize, load_state_dict, tensor_index  # noqa: E402

pytestmark = pytest.mark.torch

#: Byte offsets of the fp16 fields in each block type (ggml-common.h's block_* structs).
FP16_FIELDS = {
    "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,),
    "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,),
}


def _random_blocks(type_name: str, n_blocks: int, rng: np.random.Generator) -> np.ndarray:
    _per_block, block_bytes = BLOCKS[type_name]
    blocks = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    for off in FP16_FIELDS.get(type_name, ()):
        # finite fp16 values over the whole range: exponents 0 (subnormal) .. 30, both signs
        bits = rng.integers(0, 0x7C00, size=n_blocks, dtype=np.uint16) | (
            rng.integers(0, 2, size=n_blocks, dtype=np.uint16) << 15)
        blocks[:, off:off + 2] = bits.view(np.uint8).reshape(n_blocks, 2)
    return blocks


@pytest.mark.parametrize("type_name", sorted(t for t in BLOCKS if t not in ("F32", "F16", "BF16")))
def test_quantized_blocks_equal_gguf_py_bit_for_bit(type_name):
    rng = np.random.default_rng(sum(map(ord, type_name)))
    n_blocks = 3000 if BLOCKS[type_name][0] == 32 else 400  # more than one chunk for the 32-value types
    blocks = _random_blocks(type_name, n_blocks, rng)
    want = np.asarray(gguf.quants.dequantize(blocks, getattr(gguf.GGMLQuantizationType, type_name)),
                      dtype=np.float32).reshape(-1)
    got = dequantize(torch.from_numpy(blocks.reshape(-1).copy()), type_name).numpy()
    assert got.shape == want.shape
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (
        f"{type_name}: {int((got.view(np.uint32) != want.view(np.uint32)).sum())} values differ")
    assert np.isfinite(got).all()
    assert len(np.unique(got)) > 100  # not a constant: the comparison can fail


@pytest.mark.parametrize("type_name", ["F32", "F16", "BF16"])
def test_float_types_convert_exactly(type_name):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(1000).astype(np.float32)
    if type_name == "F32":
        raw = x
    elif type_name == "F16":
        raw = x.astype(np.float16)
    else:
        raw = (x.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bfloat16's bits
    want = raw.astype(np.float32) if type_name != "BF16" else (raw.astype(np.uint32) << 16).view(np.float32)
    got = dequantize(torch.from_numpy(raw.view(np.uint8).copy()), type_name).numpy()
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_bad_inputs_are_refused():
    with pytest.raises(ModelError, match="not supported"):
        dequantize(torch.zeros(32, dtype=torch.uint8), "IQ2_XXS")
    with pytest.raises(ModelError, match="whole 144-byte blocks"):
        dequantize(torch.zeros(145, dtype=torch.uint8), "Q4_K")


def _write_gguf(path, tensors: dict[str, np.ndarray], types: dict[str, object]):
    w = gguf.GGUFWriter(str(path), arch="qwen2")
    for name, data in tensors.items():
        qtype = types[name]
        if qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, data)
        else:
            q = gguf.quants.quantize(data, qtype)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_index_and_reader_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    q8 = gguf.GGMLQuantizationType.Q8_0
    f32 = gguf.GGMLQuantizationType.F32
    tensors = {"a.weight": rng.standard_normal((48, 64)).astype(np.float32),
               "b.bias": rng.standard_normal(48).astype(np.float32)}
    path = tmp_path / "t.gguf"
    _write_gguf(path, tensors, {"a.weight": q8, "b.bias": f32})
    index = tensor_index(path, lambda n: "p." + n)
    assert [(t.param, t.type, t.shape) for t in index] == [("p.a.weight", "Q8_0", (48, 64)),
                                                           ("p.b.bias", "F32", (48,))]
    assert [GGUFTensor.from_json(t.to_json()) for t in index] == index
    seen: list[tuple[tuple, dict]] = []
    state = load_state_dict(path, index, progress=lambda *a, **k: seen.append((a, k)))
    ref = gguf.GGUFReader(str(path))
    for t in ref.tensors:
        want = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        assert np.array_equal(state["p." + t.name].numpy().reshape(-1), want.reshape(-1))
    assert torch.equal(state["p.b.bias"], torch.from_numpy(tensors["b.bias"]))
    assert seen[0][1] == {"total": 2, "unit": "tensors", "description": f"dequantizing {path.name}"}
    assert [a for a, _ in seen[1:]] == [(1,), (1,)]  # the count moves tensor by tensor
    # an unmapped name and a truncated file are errors, not silent gaps
    with pytest.raises(ModelError, match="no parameter name"):
        tensor_index(path, lambda n: None)
    short = tmp_path / "short.gguf"
    short.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ModelError, match="ends inside tensor"):
        load_state_dict(short, index)


def test_reader_alternating_buffers_keep_every_tensor(tmp_path):
    """The read-ahead thread fills one buffer while the other is dequantized: with sizes that
    shrink and grow, every tensor must still come out as gguf-py dequantizes it."""
    rng = np.random.default_rng(11)
    q8, q4, f32 = (gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0,
                   gguf.GGMLQuantizationType.F32)
    rows = [64, 8, 96, 16, 32, 8, 128]
    tensors = {f"t{i}.weight": rng.standard_normal((r, 64)).astype(np.float32) for i, r in enumerate(rows)}
    kinds = {name: (q8, q4, f32)[i % 3] for i, name in enumerate(tensors)}
    path = tmp_path / "many.gguf"
    _write_gguf(path, tensors, kinds)
    index = tensor_index(path, lambda n: n)
    state = load_state_dict(path, index)
    assert list(state) == [t.param for t in index]
    for t in gguf.GGUFReader(str(path)).tensors:
        want = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        assert np.array_equal(state[t.name].numpy().reshape(-1), want.reshape(-1)), t.name
