"""Loading tokenizers fast: straight from ``tokenizer.json`` when a conversion verified it is equivalent.

``AutoTokenizer`` on a Qwen2 directory re-parses ``tokenizer.json`` in Python and
rebuilds the BPE (about 0.9 s of CPU for a 152K vocabulary). For directories we
converted, ``tokenizer.json`` holds the complete backend (normalizer included) and
the conversion checked that :func:`fast_tokenizer` encodes, decodes, renders the
chat template and reports special tokens exactly like ``AutoTokenizer``; then
``PreTrainedTokenizerFast(tokenizer_file=...)`` loads in about 0.3 s. Any other
directory goes through ``AutoTokenizer``. transformers is imported lazily.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from golden_al.errors import ModelError

__all__ = ["EQUIVALENCE_SAMPLES", "check_fast_equivalent", "fast_tokenizer", "load_tokenizer"]

#: Extra texts for the equivalence check: NFC normalization, ligatures, whitespace edge cases.
EQUIVALENCE_SAMPLES: tuple[str, ...] = (
    "cafe\u0301 \ufb01le \u212b and e\u0301\u0301",
    "  leading spaces, trailing  \n\n\t",
    "",
    "<|endoftext|> inside <|im_start|>text<|im_end|> and <|fim_prefix|>",
    "```python\nprint('hi')\n```",
)
_DROP_CONFIG_KEYS = {"backend", "is_local", "local_files_only", "tokenizer_class", "auto_map", "tokenizer_file",
                     "name_or_path"}


def fast_tokenizer(path: str | Path) -> Any:
    """A ``PreTrainedTokenizerFast`` built directly from ``path/tokenizer.json`` and its config."""
    from transformers import PreTrainedTokenizerFast

    directory = Path(path)
    config_path = directory / "tokenizer_config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    except ValueError as err:
        raise ModelError(f"{config_path} is not valid JSON: {err}") from err
    kwargs = {k: v for k, v in config.items() if k not in _DROP_CONFIG_KEYS}
    template = directory / "chat_template.jinja"
    if template.is_file():
        kwargs["chat_template"] = template.read_text(encoding="utf-8")
    return PreTrainedTokenizerFast(tokenizer_file=str(directory / "tokenizer.json"), name_or_path=str(directory),
                                   **kwargs)


def load_tokenizer(path: str | Path, *, fast: bool = False) -> Any:
    """The tokenizer of a model directory: :func:`fast_tokenizer` when ``fast``, else ``AutoTokenizer``."""
    try:
        from transformers import AutoTokenizer
    except ImportError as err:
        raise ModelError("loading a tokenizer needs transformers", hint="pip install 'golden-al[engine]'") from err
    try:
        return fast_tokenizer(path) if fast else AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as err:
        raise ModelError(f"cannot load the tokenizer from {path}: {err}",
                         hint="the directory needs tokenizer.json (or tokenizer files) and tokenizer_config.json") from err


def check_fast_equivalent(directory: str | Path, samples: tuple[str, ...]) -> dict[str, Any]:
    """Check :func:`fast_tokenizer` against ``AutoTokenizer`` on ``samples``; ModelError on a difference."""
    from transformers import AutoTokenizer

    ref = AutoTokenizer.from_pretrained(str(directory))
    fast = fast_tokenizer(directory)

    def differ(what: str) -> ModelError:
        return ModelError(f"the fast tokenizer of {directory} differs from AutoTokenizer: {what}",
                          hint="it will not be used; loads fall back to AutoTokenizer")

    if ref.get_vocab() != fast.get_vocab() or len(ref) != len(fast):
        raise differ("vocabulary")
    for attr in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id"):
        if getattr(ref, attr) != getattr(fast, attr):
            raise differ(f"{attr} {getattr(fast, attr)} != {getattr(ref, attr)}")
    if sorted(ref.all_special_ids) != sorted(fast.all_special_ids):
        raise differ("special token ids")
    texts = (*samples, *EQUIVALENCE_SAMPLES)
    for text in texts:
        for special in (False, True):
            a = ref(text, add_special_tokens=special)["input_ids"]
            b = fast(text, add_special_tokens=special)["input_ids"]
            if a != b:
                raise differ(f"encoding {text[:30]!r} (add_special_tokens={special})")
            for skip in (False, True):
                if ref.decode(a, skip_special_tokens=skip) != fast.decode(b, skip_special_tokens=skip):
                    raise differ(f"decoding {text[:30]!r} (skip_special_tokens={skip})")
    if ref.chat_template:
        for msgs in ([{"role": "user", "content": texts[0]}],
                     [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi"},
                      {"role": "assistant", "content": "hello"}, {"role": "user", "content": texts[1]}]):
            a = ref.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            b = fast.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            if a != b:
                raise differ("chat template rendering")
    normalizer = ref.backend_tokenizer.normalizer
    return {"verified": True, "samples": len(texts),
            "normalizer": type(normalizer).__name__ if normalizer is not None else None}
