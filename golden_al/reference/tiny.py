"""Tiny random target/draft pairs built from a config, for tests (no download).

The draft is the target with Gaussian noise added to every weight, so the two
agree often but not always: acceptance lengths spread over ``1..k+1``.
:func:`save_tiny_pair` also writes a character-level tokenizer with a ChatML
chat template, so the directories load like real checkpoints
(``AutoModelForCausalLM`` / ``AutoTokenizer``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

__all__ = ["CHATML_TEMPLATE", "save_tiny_pair", "tiny_model", "tiny_pair", "tiny_tokenizer"]

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_SPECIALS = ["<pad>", "<|im_start|>", "<|im_end|>", "<|endoftext|>"]


def tiny_model(*, vocab_size: int = 128, num_layers: int = 2, hidden_size: int = 32, seed: int = 0,
               dtype: torch.dtype = torch.float64, family: str = "qwen2", init_std: float = 0.2) -> Any:
    """A random causal LM (Qwen2 or Llama architecture) from a small config."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    cfg_cls: Any = Qwen2Config if family == "qwen2" else LlamaConfig
    model_cls: Any = Qwen2ForCausalLM if family == "qwen2" else LlamaForCausalLM
    cfg = cfg_cls(
        vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=1024, tie_word_embeddings=False, initializer_range=init_std,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )
    torch.manual_seed(seed)
    return model_cls(cfg).to(dtype).eval()


def tiny_pair(*, vocab_size: int = 128, seed: int = 0, noise: float = 0.04, dtype: torch.dtype = torch.float64,
              family: str = "qwen2", init_std: float = 0.2) -> tuple[Any, Any]:
    """``(target, draft)``: the draft is the target plus noise of ``noise`` x each tensor's std."""
    target = tiny_model(vocab_size=vocab_size, seed=seed, dtype=dtype, family=family, init_std=init_std)
    draft = copy.deepcopy(target)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in draft.parameters():
            if p.numel() > 1:
                p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * noise * p.std())
    return target, draft


def tiny_tokenizer(vocab_size: int = 128) -> Any:
    """A byte-level fast tokenizer (one token per printable ASCII character, space and
    newline; no merges) with ChatML specials and template; at most ``vocab_size`` ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    # GPT-2 byte-to-unicode: printable ASCII maps to itself, space to U+0120, newline to U+010A
    chars = ["\u010a", "\u0120"] + [chr(c) for c in range(33, 127)]
    vocab: dict[str, int] = {}
    for tok in _SPECIALS + chars:
        if len(vocab) >= vocab_size:
            break
        vocab.setdefault(tok, len(vocab))
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<|endoftext|>",
                                   bos_token=None, unk_token="<pad>")
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    fast.chat_template = CHATML_TEMPLATE
    return fast


def save_tiny_pair(root: str | Path, *, vocab_size: int = 128, seed: int = 0, noise: float = 0.04,
                   dtype: torch.dtype = torch.float32) -> tuple[Path, Path]:
    """Write ``root/target`` and ``root/draft`` (safetensors + tokenizer); returns both paths."""
    target, draft = tiny_pair(vocab_size=vocab_size, seed=seed, noise=noise, dtype=dtype)
    tok = tiny_tokenizer(vocab_size)
    out = []
    for name, model in (("target", target), ("draft", draft)):
        d = Path(root) / name
        model.generation_config.eos_token_id = [tok.convert_tokens_to_ids("<|im_end|>"), tok.eos_token_id]
        model.save_pretrained(d)
        tok.save_pretrained(d)
        out.append(d)
    return out[0], out[1]


def tiny_block_draft(target: Any, *, algorithm: str = "dflash", block_size: int = 8, num_layers: int = 1,
                     seed: int = 0, target_layer_ids: list[int] | None = None) -> Any:
    """A random DFlash (or DFlash2) draft for ``target`` (its hidden size and vocabulary), built from a config."""
    from golden_al.models.block_config import BlockDraftConfig
    from golden_al.reference.block_draft import BlockDraft

    tc = target.config
    hidden, vocab = int(tc.hidden_size), int(tc.vocab_size)
    extra: dict[str, Any] = dict(conv_kernel_size=2, conv_group_size=8, selector_rank=8, selector_top_k=4) if algorithm == "dflash2" else {}
    cfg = BlockDraftConfig(
        path="<tiny>", algorithm=algorithm, layout="z-lab", block_size=block_size, mask_token_id=vocab - 1,
        target_layer_ids=tuple(target_layer_ids if target_layer_ids is not None else range(tc.num_hidden_layers)),
        hidden_size=hidden, num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
        head_dim=hidden // 4, intermediate_size=2 * hidden, rms_norm_eps=1e-6, rope_theta=10000.0,
        vocab_size=vocab, **extra)
    torch.manual_seed(seed)
    return BlockDraft(cfg).to(next(target.parameters()).dtype).eval()
