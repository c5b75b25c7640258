"""Rendering through a tokenizer's own chat template with thinking presets; hashes.

Uses a tiny WordLevel tokenizer built here (``tokenizers`` + transformers'
PreTrainedTokenizerFast, neither of which imports torch).
"""

from __future__ import annotations

import hashlib

import pytest

from golden_al.errors import UsageError
from golden_al.prompts import (
    Conversation,
    chat_template_hash,
    check_thinking_switch,
    dataset_hash,
    prompt_hash,
    render,
    render_all,
)

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

# A Qwen3-style ChatML template: BOS first, thinking switched off by an empty think block.
THINKING_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)
# Plain ChatML (Qwen2.5 style): no thinking switch at all.
PLAIN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
WORDS = ["system", "user", "assistant", "what", "is", "2", "+", "?", "you", "are", "terse", "4", "and", "times",
         "3", "hello", "world", "."]
SPECIALS = ["<s>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]


def tiny_tokenizer(template: str, name: str = "tiny-qwen3-test"):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0}
    for tok in SPECIALS + WORDS:
        vocab[tok] = len(vocab)
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    # add_special_tokens=True would prepend BOS: the renderer must not let that double the template's BOS
    core.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", vocab["<s>"])])
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", bos_token="<s>", eos_token="<|im_end|>",
                                  additional_special_tokens=SPECIALS[1:])
    tok.chat_template = template
    tok.name_or_path = name
    return tok


CONV = Conversation(id="c1", messages=[{"role": "system", "content": "you are terse ."},
                                       {"role": "user", "content": "what is 2 + 2 ?"}])


def test_thinking_kwargs_reach_the_template():
    tok = tiny_tokenizer(THINKING_TEMPLATE)
    on = render(tok, CONV, thinking="on", preset="qwen3")
    off = render(tok, CONV, thinking="off", preset="qwen3")
    assert on.chat_template_kwargs == {"enable_thinking": True}
    assert off.chat_template_kwargs == {"enable_thinking": False}
    assert on.text.endswith("<|im_start|>assistant\n")
    assert off.text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert on.hash != off.hash
    assert on.thinking == "on"
    assert off.thinking == "off"
    assert on.conversation_id == "c1"
    think_ids = {tok.convert_tokens_to_ids("<think>"), tok.convert_tokens_to_ids("</think>")}
    assert think_ids <= set(off.token_ids)
    assert not think_ids & set(on.token_ids)


def test_token_ids_match_the_text_and_bos_is_not_doubled():
    tok = tiny_tokenizer(THINKING_TEMPLATE)
    r = render(tok, CONV, thinking="off", preset="qwen3")
    bos = tok.bos_token_id
    assert r.token_ids == tok(r.text, add_special_tokens=False)["input_ids"]
    assert r.token_ids[0] == bos
    assert r.token_ids[1] != bos
    assert r.token_ids.count(bos) == 1
    assert tok(r.text)["input_ids"][:2] == [bos, bos]  # what the naive call would have sent
    assert r.num_tokens == len(r.token_ids)
    assert 0 not in r.token_ids  # every word of the conversation is in the tiny vocab


def test_apply_chat_template_tokenize_true_agrees():
    tok = tiny_tokenizer(THINKING_TEMPLATE)
    r = render(tok, CONV, thinking="on", preset="qwen3")
    ids = tok.apply_chat_template(CONV.messages, tokenize=True, add_generation_prompt=True, enable_thinking=True,
                                  return_dict=False)
    assert list(ids) == r.token_ids


def test_family_without_thinking_refuses_on_and_renders_off():
    tok = tiny_tokenizer(PLAIN_TEMPLATE, name="Qwen/Qwen2.5-Coder-1.5B-Instruct")
    with pytest.raises(UsageError, match="has no thinking mode"):
        render(tok, CONV, thinking="on", preset="qwen2")
    r = render(tok, CONV, thinking="off")  # preset inferred from name_or_path -> qwen2
    assert r.chat_template_kwargs == {}
    assert r.text == ("<|im_start|>system\nyou are terse .<|im_end|>\n<|im_start|>user\nwhat is 2 + 2 ?<|im_end|>\n"
                      "<|im_start|>assistant\n")


def test_explicit_kwargs_override_the_preset():
    tok = tiny_tokenizer(THINKING_TEMPLATE)
    r = render(tok, CONV, thinking="on", preset="qwen3", chat_template_kwargs={"enable_thinking": False, "x": 1})
    assert r.chat_template_kwargs == {"enable_thinking": False, "x": 1}
    assert "</think>" in r.text
    with pytest.raises(UsageError, match="may not set"):
        render(tok, CONV, preset="qwen3", chat_template_kwargs={"add_generation_prompt": False})


def test_template_that_ignores_the_switch_is_caught():
    tok = tiny_tokenizer(PLAIN_TEMPLATE, name="some/Qwen3-clone")
    with pytest.raises(UsageError, match="renders the same with thinking on"):
        check_thinking_switch(tok, "qwen3")
    with pytest.raises(UsageError, match="ignores the qwen3 switch"):
        render_all(tok, [CONV], thinking="on")
    check_thinking_switch(tiny_tokenizer(THINKING_TEMPLATE), "qwen3")  # honours it: no error
    check_thinking_switch(tok, "qwen2")  # nothing to check for a family without thinking


def test_multi_turn_context_is_rendered():
    tok = tiny_tokenizer(THINKING_TEMPLATE)
    conv = Conversation(id="m", messages=[*CONV.messages, {"role": "assistant", "content": "4 ."},
                                          {"role": "user", "content": "and times 3 ?"}])
    r = render(tok, conv, thinking="on", preset="qwen3")
    assert r.text.count("<|im_start|>") == 5
    assert "<|im_start|>assistant\n4 .<|im_end|>\n<|im_start|>user\nand times 3 ?<|im_end|>" in r.text


def test_no_chat_template_is_an_error():
    tok = tiny_tokenizer(PLAIN_TEMPLATE)
    tok.chat_template = None
    with pytest.raises(UsageError, match="has no chat template"):
        render(tok, CONV)


def test_hashes():
    tok = tiny_tokenizer(THINKING_TEMPLATE)
    convs = [CONV, Conversation(id="c2", messages=[{"role": "user", "content": "hello world"}])]
    rendered = render_all(tok, convs, thinking="off", preset="qwen3")
    assert rendered[0].hash == hashlib.sha256(rendered[0].text.encode()).hexdigest() == prompt_hash(rendered[0].text)
    expected = hashlib.sha256("".join(r.hash + "\n" for r in rendered).encode()).hexdigest()
    assert dataset_hash(rendered) == expected == dataset_hash([r.text for r in rendered])
    assert dataset_hash(rendered[::-1]) != expected
    assert dataset_hash([]) == hashlib.sha256(b"").hexdigest()
    assert chat_template_hash(tok) == prompt_hash(THINKING_TEMPLATE)
