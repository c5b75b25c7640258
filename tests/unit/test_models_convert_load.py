"""GGUF conversion and model loading with tiny models built here (no download).

A tiny Qwen2 GGUF (Q8_0 + F32 tensors, byte-level BPE tokenizer, ChatML template)
is written with gguf-py's writer; tiny Hugging Face directories come from a
random Qwen2 config saved as safetensors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

from golden_al.errors import ModelError  # noqa: E402
from golden_al.models import convert as convert_mod  # noqa: E402
from golden_al.models import load as load_mod  # noqa: E402
from golden_al.models import load_model, load_pair  # noqa: E402
from golden_al.models.convert import CONVERSION_MANIFEST, convert_gguf, gguf_metadata  # noqa: E402
from golden_al.prompts import Conversation, render  # noqa: E402

CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _bytes_to_unicode() -> dict[int, str]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs], strict=True))


def write_tiny_gguf(path: Path, *, seed: int = 0, hidden: int = 64, layers: int = 2, ffn: int = 128) -> int:
    """A tiny qwen2 GGUF; returns its vocabulary size (eos = V-1, bos/pad = V-3)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    b2u = _bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)] + ["de", "def", "Ġd"]
    merges = [f"{b2u[ord('d')]} {b2u[ord('e')]}", "de f", "Ġ d"]
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [1] * len(tokens) + [3] * len(specials)
    tokens += specials
    vocab = len(tokens)
    heads, kv_heads = 4, 2
    head_dim = hidden // heads
    w = gguf.GGUFWriter(str(path), "qwen2")
    w.add_name("tiny qwen2 test")
    w.add_context_length(128)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(vocab - 3)
    w.add_eos_token_id(vocab - 1)
    w.add_pad_token_id(vocab - 3)
    w.add_chat_template(CHATML)
    q8 = gguf.GGMLQuantizationType.Q8_0

    def quantized(name: str, shape: tuple[int, int]) -> None:
        w.add_tensor(name, gguf.quants.quantize((rng.standard_normal(shape) * 0.1).astype(np.float32), q8),
                     raw_dtype=q8)

    def dense(name: str, size: int, base: float = 0.0) -> None:
        w.add_tensor(name, (base + rng.standard_normal(size) * 0.01).astype(np.float32))

    quantized("token_embd.weight", (vocab, hidden))
    for i in range(layers):
        quantized(f"blk.{i}.attn_q.weight", (hidden, hidden))
        dense(f"blk.{i}.attn_q.bias", hidden)
        for kv in ("k", "v"):
            quantized(f"blk.{i}.attn_{kv}.weight", (kv_heads * head_dim, hidden))
            dense(f"blk.{i}.attn_{kv}.bias", kv_heads * head_dim)
        quantized(f"blk.{i}.attn_output.weight", (hidden, hidden))
        quantized(f"blk.{i}.ffn_gate.weight", (ffn, hidden))
        quantized(f"blk.{i}.ffn_up.weight", (ffn, hidden))
        quantized(f"blk.{i}.ffn_down.weight", (hidden, ffn))
        dense(f"blk.{i}.attn_norm.weight", hidden, 1.0)
        dense(f"blk.{i}.ffn_norm.weight", hidden, 1.0)
    dense("output_norm.weight", hidden, 1.0)
    quantized("output.weight", (vocab, hidden))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return vocab


def tiny_tokenizer(vocab_words: list[str]):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<|endoftext|>": 3}
    for word in vocab_words:
        vocab.setdefault(word, len(vocab))
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", eos_token="<|im_end|>",
                                  pad_token="<|endoftext|>", additional_special_tokens=["<|im_start|>"])
    tok.chat_template = CHATML
    return tok


def tiny_hf_dir(path: Path, *, dtype=None, vocab_words=("user", "assistant", "hello", "world"), seed: int = 0,
                layers: int = 2) -> Path:
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    tok = tiny_tokenizer(list(vocab_words))
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      tie_word_embeddings=False)
    model = Qwen2ForCausalLM(cfg).eval()
    if dtype is not None:
        model = model.to(dtype)
    model.generation_config = GenerationConfig(eos_token_id=[2, 3], pad_token_id=3)
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path


# ------------------------------------------------------------------------------------- conversion

@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf")
    gguf_path = root / "tiny.gguf"
    vocab = write_tiny_gguf(gguf_path)
    manifest = convert_gguf(gguf_path, root / "out", eos_token_ids=[vocab - 1, vocab - 3],
                            extra_files={"LICENSE": "license text", "NOTICE": "notice text"})
    return {"root": root, "gguf": gguf_path, "out": root / "out", "manifest": manifest, "vocab": vocab}


def test_conversion_manifest_and_files(converted):
    m, out = converted["manifest"], converted["out"]
    assert m["file_type"] == "Q8_0"
    assert m["shipped_dtype"] == "Q8_0"
    assert m["dtype"] == "float32"
    assert m["gguf_architecture"] == "qwen2"
    assert m["gguf_size"] == converted["gguf"].stat().st_size
    assert m["tensor_check"]["bit_identical"] is True
    assert m["tensor_check"]["tensors_checked"] == 27
    assert m["tokenizer_check"]["identical"] is True
    assert json.loads((out / CONVERSION_MANIFEST).read_text()) == m
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "generation_config.json", "LICENSE", "NOTICE"):
        assert (out / name).is_file(), name
        assert m["files"][name]["size"] == (out / name).stat().st_size
    gen = json.loads((out / "generation_config.json").read_text())
    assert gen["eos_token_id"] == [converted["vocab"] - 1, converted["vocab"] - 3]
    assert gen["do_sample"] is False
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config
    assert not list(converted["root"].glob(".out.tmp-*"))


def test_converted_model_equals_the_gguf_load_bit_for_bit(converted):
    from transformers import AutoModelForCausalLM
    from transformers.utils.quantization_config import GgufConfig

    ref = AutoModelForCausalLM.from_pretrained(str(converted["root"]), gguf_file="tiny.gguf", dtype=torch.float32,
                                               quantization_config=GgufConfig(dequantize=True)).eval()
    loaded = load_model(str(converted["out"]), cache_dir=converted["root"] / "cache")
    ids = torch.tensor([[1, 5, 200, 17, 259, 260]])
    with torch.no_grad():
        assert torch.equal(ref(ids).logits, loaded.model(ids).logits)
    info = loaded.info
    assert info.dtype == "float32"
    assert info.shipped_dtype == "Q8_0"
    assert info.source == "safetensors"
    assert info.sha256 == converted["manifest"]["gguf_sha256"]
    assert info.num_parameters == converted["manifest"]["num_parameters"]
    assert loaded.eos_token_ids == [converted["vocab"] - 1, converted["vocab"] - 3]
    assert loaded.chat_family == "qwen2"
    r = render(loaded.tokenizer, Conversation(id="x", messages=[{"role": "user", "content": "def f"}]),
               preset=loaded.chat_family)
    assert r.text == "<|im_start|>user\ndef f<|im_end|>\n<|im_start|>assistant\n"
    assert r.token_ids[0] == converted["vocab"] - 2  # <|im_start|>, no BOS added


@pytest.fixture(scope="module")
def converted_gguf(converted):
    """The same GGUF converted to the ``gguf`` layout, laid out as the registry cache is (GGUF beside)."""
    import shutil

    mdir = converted["root"] / "models" / "tiny"
    mdir.mkdir(parents=True)
    gguf_path = mdir / "tiny.gguf"
    shutil.copy(converted["gguf"], gguf_path)
    vocab = converted["vocab"]
    manifest = convert_gguf(gguf_path, mdir / "gguf-float32", eos_token_ids=[vocab - 1, vocab - 3], weights="gguf")
    return {"dir": mdir, "gguf": gguf_path, "out": mdir / "gguf-float32", "manifest": manifest}


def test_gguf_layout_writes_no_weights_and_indexes_every_tensor(converted, converted_gguf):
    m, out = converted_gguf["manifest"], converted_gguf["out"]
    w = m["weights"]
    assert w["format"] == "gguf"
    assert w["gguf_relpath"] == "../tiny.gguf"
    assert w["gguf_size"] == converted_gguf["gguf"].stat().st_size
    assert len(w["tensors"]) == 27
    assert {t["type"] for t in w["tensors"]} == {"Q8_0", "F32"}
    assert w["check"]["bit_identical"] is True
    assert w["check"]["tensors_checked"] == 27
    assert w["check"]["parameters_covered"] == 27
    assert m["num_parameters"] == converted["manifest"]["num_parameters"]
    assert not list(out.glob("*.safetensors"))
    assert json.loads((out / "config.json").read_text())["architectures"] == ["Qwen2ForCausalLM"]
    assert "quantization_config" not in json.loads((out / "config.json").read_text())
    assert set(m["files"]) >= {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"}
    assert converted["manifest"]["weights"] == {"format": "safetensors"}


def test_gguf_layout_loads_bit_identical_to_the_safetensors_layout(converted, converted_gguf):
    cache = converted["root"] / "cache"
    a = load_model(str(converted["out"]), cache_dir=cache)
    seen: list[tuple[tuple, dict]] = []
    b = load_model(str(converted_gguf["out"]), cache_dir=cache, progress=lambda *x, **k: seen.append((x, k)))
    sa, sb = a.model.state_dict(), b.model.state_dict()
    assert set(sa) == set(sb)
    for name, value in sa.items():
        assert torch.equal(value.view(torch.int32), sb[name].view(torch.int32)), name
    ids = torch.tensor([[1, 5, 200, 17, 259, 260]])
    with torch.no_grad():
        assert torch.equal(a.model(ids).logits, b.model(ids).logits)
    assert b.info.num_parameters == a.info.num_parameters
    assert b.eos_token_ids == a.eos_token_ids
    start = next(i for i, (_, k) in enumerate(seen) if "dequantizing" in (k.get("description") or ""))
    assert (seen[start][1]["total"], seen[start][1]["unit"]) == (27, "tensors")  # the load's phase, in tensors
    assert sum(x[0] for x, _ in seen[start + 1:] if x) == 27
    half = load_model(str(converted_gguf["out"]), cache_dir=cache, dtype="bfloat16")
    assert {p.dtype for p in half.model.parameters()} == {torch.bfloat16}
    assert torch.equal(half.model.lm_head.weight, sb["lm_head.weight"].to(torch.bfloat16))


def test_gguf_layout_fails_loudly_when_the_gguf_is_missing_or_changed(converted_gguf, tmp_path):
    import shutil

    mdir = tmp_path / "tiny"
    shutil.copytree(converted_gguf["dir"], mdir)
    out = mdir / "gguf-float32"
    (mdir / "tiny.gguf").unlink()
    with pytest.raises(ModelError, match="which is missing"):
        load_model(str(out), cache_dir=tmp_path / "cache")
    (mdir / "tiny.gguf").write_bytes(converted_gguf["gguf"].read_bytes() + b"x")
    with pytest.raises(ModelError, match="indexed"):
        load_model(str(out), cache_dir=tmp_path / "cache")


def test_gguf_layout_refuses_what_it_cannot_hold_exactly(converted, tmp_path, monkeypatch):
    with pytest.raises(ModelError, match="float32"):
        convert_gguf(converted["gguf"], tmp_path / "bf", dtype="bfloat16", weights="gguf")
    with pytest.raises(ModelError, match="unknown weight layout"):
        convert_gguf(converted["gguf"], tmp_path / "zip", weights="zip")
    # a value the dequantizer got wrong is caught against gguf-py, tensor by tensor
    from golden_al.models import gguf_weights

    real = gguf_weights._q8_0
    monkeypatch.setitem(gguf_weights._KERNELS, "Q8_0", lambda b: real(b) * 1.0000001)
    with pytest.raises(ModelError, match=r"16 tensors differ from gguf-py's dequantization"):
        convert_gguf(converted["gguf"], tmp_path / "off", weights="gguf")
    monkeypatch.setitem(gguf_weights._KERNELS, "Q8_0", real)
    monkeypatch.setitem(convert_mod._TOP_NAMES, "output.weight", "model.embed_tokens.weight")
    with pytest.raises(ModelError, match=r"cannot read the weights from the GGUF exactly: .*1 parameters are named "
                                         r"twice \(model.embed_tokens.weight\), 1 parameters are not in the GGUF "
                                         r"\(lm_head.weight\)"):
        convert_gguf(converted["gguf"], tmp_path / "bad", weights="gguf")
    assert not (tmp_path / "bad").exists()


def test_fast_tokenizer_is_verified_and_used(converted, tmp_path):
    import shutil

    from golden_al.models.load import load_tokenizer
    from golden_al.models.tokenizer import check_fast_equivalent

    fast = converted["manifest"]["fast_tokenizer"]
    assert fast["verified"] is True
    assert fast["normalizer"] == "NFC"
    tok = load_tokenizer(converted["out"])
    assert type(tok).__name__ == "TokenizersBackend"
    assert tok.name_or_path == str(converted["out"])
    from transformers import AutoTokenizer

    auto = AutoTokenizer.from_pretrained(str(converted["out"]))
    text = "cafe\u0301 def de"
    assert tok(text, add_special_tokens=False)["input_ids"] == auto(text, add_special_tokens=False)["input_ids"]
    # the check can fail: a tokenizer.json without the NFC normalizer the Qwen2 class adds on load
    bad = tmp_path / "bad"
    shutil.copytree(converted["out"], bad)
    data = json.loads((bad / "tokenizer.json").read_text())
    data["normalizer"] = None
    (bad / "tokenizer.json").write_text(json.dumps(data))
    with pytest.raises(ModelError, match=r"fast tokenizer .* differs from AutoTokenizer: encoding 'cafe"):
        check_fast_equivalent(bad, ("def de",))


def test_tensor_check_catches_a_wrong_mapping(converted, tmp_path, monkeypatch):
    monkeypatch.setitem(convert_mod._TOP_NAMES, "output.weight", "model.embed_tokens.weight")
    with pytest.raises(ModelError, match="tensors differ from gguf-py's dequantization"):
        convert_gguf(converted["gguf"], tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_dense_check_refuses_packed_modules():
    class GgufLinear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(2, 2))

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), GgufLinear())
    with pytest.raises(ModelError, match="packed modules"):
        convert_mod._check_dense(model, torch.float32)
    with pytest.raises(ModelError, match=r"expected a plain torch\.bfloat16"):
        convert_mod._check_dense(torch.nn.Linear(2, 2), torch.bfloat16)


def test_load_a_gguf_file_converts_once_keyed_by_sha256(converted, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = load_model(str(converted["gguf"]), cache_dir=cache)
    digest = converted["manifest"]["gguf_sha256"]
    assert first.path == cache / "converted" / digest[:16] / "safetensors-float32"
    assert first.info.source == "gguf"
    assert first.info.shipped_dtype == "Q8_0"
    assert first.info.sha256 == digest
    # a second load neither re-hashes (index by path/size/mtime) nor re-converts
    monkeypatch.setattr(load_mod, "sha256_file", lambda *_a, **_k: pytest.fail("re-hashed"))
    monkeypatch.setattr(convert_mod, "convert_gguf", lambda *_a, **_k: pytest.fail("re-converted"))
    second = load_model(str(converted["gguf"]), cache_dir=cache, dtype="bfloat16")  # Q8_0 -> bf16 is not below
    assert second.path == first.path
    assert second.info.dtype == "bfloat16"
    assert next(second.model.parameters()).dtype == torch.bfloat16


def test_a_conversion_parses_the_gguf_once(converted, tmp_path, monkeypatch):
    """Metadata, tokenizer, configuration, tensor index and reference tensors share one parse."""
    import shutil

    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    gguf_path = tmp_path / "m" / "tiny.gguf"
    gguf_path.parent.mkdir()
    shutil.copy(converted["gguf"], gguf_path)
    parsed: list[str] = []
    real_reader = gguf.GGUFReader

    def counting(path, *args, **kwargs):
        parsed.append(str(path))
        return real_reader(path, *args, **kwargs)

    monkeypatch.setattr(gguf, "GGUFReader", counting)
    original_load = gguf_utils.load_gguf_checkpoint
    seen: list[str] = []
    manifest = convert_gguf(gguf_path, gguf_path.parent / "gguf-float32", weights="gguf",
                            progress=lambda *_a, description=None, **_k: seen.append(description or ""))
    assert [Path(p).name for p in parsed] == ["tiny.gguf"]
    assert manifest["weights"]["check"]["bit_identical"] is True
    assert manifest["tokenizer_check"]["identical"] is True
    assert gguf.GGUFReader is counting
    assert gguf_utils.load_gguf_checkpoint is original_load
    for step in ("reading the header", "parsing the tokenizer", "reading the configuration", "checking"):
        assert any(d.startswith(step) for d in seen), step


def test_a_silent_library_call_gets_a_heartbeat_and_its_error_back():
    import threading

    beats: list[str] = []
    two = threading.Event()

    def progress(_n=0, *, description=None, **_k):
        beats.append(description)
        if sum("(" in d for d in beats) >= 2:
            two.set()

    def slow():  # returns only once the caller has shown two heartbeats: no timing assumption
        assert two.wait(30)
        return 42

    assert convert_mod._with_heartbeat(progress, "parsing", slow, every_s=0.01) == 42
    assert beats[0] == "parsing"
    assert beats[1].startswith("parsing (")

    def broken():
        raise ModelError("bad header")

    with pytest.raises(ModelError, match="bad header"):
        convert_mod._with_heartbeat(progress, "parsing", broken, every_s=0.01)


def test_gguf_metadata_of_a_non_gguf(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"not a gguf at all")
    with pytest.raises(ModelError, match="not a readable GGUF file"):
        gguf_metadata(bad)


# ------------------------------------------------------------------------------------- loading

def test_load_model_from_a_local_dir(tmp_path):
    from transformers import AutoModelForCausalLM

    d = tiny_hf_dir(tmp_path / "m")
    loaded = load_model(str(d), cache_dir=tmp_path / "cache")
    ref = AutoModelForCausalLM.from_pretrained(str(d), dtype=torch.float32).eval()
    ids = torch.tensor([[1, 4, 5, 6, 2]])
    with torch.no_grad():
        assert torch.equal(ref(ids).logits, loaded.model(ids).logits)
    assert not loaded.model.training
    info = loaded.info
    assert (info.name, info.source, info.dtype, info.shipped_dtype) == (str(d), "safetensors", "float32", "float32")
    assert info.num_parameters == sum(p.numel() for p in ref.parameters())
    assert loaded.eos_token_ids == [2, 3]
    assert loaded.chat_family == "qwen2"
    assert set(loaded.load_seconds) >= {"tokenizer", "weights", "total"}


def test_load_pair_shares_an_identical_tokenizer_and_guards_draft_precision(tmp_path):
    target = tiny_hf_dir(tmp_path / "t", layers=3, seed=1)
    draft = tiny_hf_dir(tmp_path / "d", layers=1, seed=2)
    pair = load_pair(str(target), str(draft), cache_dir=tmp_path / "cache")
    assert pair.tokenizer_check["shared_tokenizer"] is True
    assert pair.draft.tokenizer is pair.target.tokenizer
    assert pair.tokenizer_check["chat_templates_identical"] is True
    with pytest.raises(ModelError, match=r"draft .* would be loaded as bfloat16, below .* float32"):
        load_pair(str(target), str(draft), cache_dir=tmp_path / "cache", draft_dtype="bfloat16")
    forced = load_pair(str(target), str(draft), cache_dir=tmp_path / "cache", draft_dtype="bfloat16",
                       allow_lower_precision=True)
    assert forced.draft.info.dtype == "bfloat16"
    assert forced.draft.info.shipped_dtype == "float32"
    assert forced.target.info.dtype == "float32"


def test_bf16_draft_loaded_as_float32_is_fine(tmp_path):
    target = tiny_hf_dir(tmp_path / "t")
    draft = tiny_hf_dir(tmp_path / "d", dtype=torch.bfloat16, seed=3)
    pair = load_pair(str(target), str(draft), cache_dir=tmp_path / "cache")
    assert pair.draft.info.shipped_dtype == "bfloat16"
    assert pair.draft.info.dtype == "float32"
    assert next(pair.draft.model.parameters()).dtype == torch.float32


def test_load_pair_refuses_different_vocabularies(tmp_path):
    target = tiny_hf_dir(tmp_path / "t")
    draft = tiny_hf_dir(tmp_path / "d", vocab_words=("user", "assistant", "goodbye", "world"))
    with pytest.raises(ModelError, match=r"tokenizers of .* differ: only in target \['hello'\], only in draft \['goodbye'\]"):
        load_pair(str(target), str(draft), cache_dir=tmp_path / "cache")


def test_bad_dtype_and_unloadable_dir(tmp_path):
    d = tiny_hf_dir(tmp_path / "m")
    with pytest.raises(ModelError, match="cannot load weights as dtype 'int8'"):
        load_model(str(d), cache_dir=tmp_path, dtype="int8", allow_lower_precision=True)
    (d / "model.safetensors").unlink()
    with pytest.raises(ModelError, match="cannot load model weights"):
        load_model(str(d), cache_dir=tmp_path)


def test_hub_unreachable_gives_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(load_mod, "_hub_reachable", lambda *a, **k: False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    with pytest.raises(ModelError) as err:
        load_model("SomeOrg/some-model-that-is-not-cached", cache_dir=tmp_path)
    msg = str(err.value)
    assert "hub (huggingface.co) is unreachable" in msg
    assert "local directory" in msg
