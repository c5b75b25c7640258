"""Render conversations through the tokenizer's own chat template, with a thinking preset.

``render(tokenizer, conversation, thinking="off", preset="qwen2")`` calls
``tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
**chat_template_kwargs)`` and tokenizes the text with ``add_special_tokens=False``:
the template already writes every special token it wants (BOS included, where a
template has one), so adding them again would double the BOS. This is exactly
what ``apply_chat_template(tokenize=True)`` does, and what vLLM's and SGLang's
benchmark clients do when they pre-render prompts.

Hashes: a prompt's hash is the SHA-256 of its rendered text (UTF-8).
:func:`dataset_hash` is the SHA-256 of the prompt hashes in order, each followed by
a newline, so a server client that sends the same rendered texts gets the same
value. Torch-free: a tokenizer is any object with ``apply_chat_template`` and
``__call__`` (transformers tokenizers load without torch).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from golden_al.errors import UsageError
from golden_al.plugin.profile import Record
from golden_al.prompts.conversation import Conversation
from golden_al.prompts.thinking import ThinkingPreset, family_for, normalize_thinking, preset_for

__all__ = [
    "RenderedPrompt",
    "chat_template_hash",
    "check_thinking_switch",
    "dataset_hash",
    "prompt_hash",
    "render",
    "render_all",
    "render_messages",
]


@dataclass(frozen=True, eq=False, repr=False)
class RenderedPrompt(Record):
    """A conversation rendered for one model: token ids, text, hash, and the kwargs that made it."""

    token_ids: list[int]
    text: str
    hash: str
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    conversation_id: str | None = None
    thinking: str | None = None

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)


def prompt_hash(text: str) -> str:
    """SHA-256 (hex) of a rendered prompt's UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dataset_hash(rendered_prompts: Iterable[RenderedPrompt | str]) -> str:
    """SHA-256 over the rendered prompts in order: ``sha256(''.join(prompt_hash + '\\n'))``.

    Accepts RenderedPrompt objects or the rendered texts themselves.
    """
    h = hashlib.sha256()
    for item in rendered_prompts:
        digest = item.hash if isinstance(item, RenderedPrompt) else prompt_hash(str(item))
        h.update(digest.encode("ascii") + b"\n")
    return h.hexdigest()


def chat_template_hash(tokenizer: Any) -> str | None:
    """SHA-256 of the tokenizer's chat template string (None when it has none)."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # named templates
        template = "\n".join(f"{k}\n{v}" for k, v in sorted(template.items()))
    return prompt_hash(template) if isinstance(template, str) and template else None


def _resolve_preset(tokenizer: Any, preset: str | ThinkingPreset | None) -> ThinkingPreset:
    if preset is not None:
        return preset_for(preset)
    name = getattr(tokenizer, "name_or_path", None) or ""
    return preset_for(family_for(str(name)))


def _kwargs(preset: ThinkingPreset, thinking: str | bool | None,
            chat_template_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    kwargs = preset.kwargs_for(thinking)
    if chat_template_kwargs:
        kwargs.update(dict(chat_template_kwargs))
    reserved = {"add_generation_prompt", "tokenize", "conversation", "messages", "return_dict"} & set(kwargs)
    if reserved:
        raise UsageError(f"chat_template_kwargs may not set {sorted(reserved)}")
    return kwargs


def render_messages(tokenizer: Any, messages: list[dict[str, Any]], *, kwargs: Mapping[str, Any],
                    add_generation_prompt: bool = True) -> tuple[str, list[int]]:
    """(text, token ids) of ``messages`` through the tokenizer's chat template."""
    if not getattr(tokenizer, "chat_template", None):
        raise UsageError(
            f"tokenizer {getattr(tokenizer, 'name_or_path', '?')!r} has no chat template",
            hint="use an instruct/chat model, or a tokenizer directory with chat_template.jinja",
        )
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt,
                                         **dict(kwargs))
    if not isinstance(text, str):
        raise UsageError(f"apply_chat_template returned {type(text).__name__}, expected the rendered text")
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return text, [int(i) for i in ids]


def render(
    tokenizer: Any,
    conversation: Conversation,
    *,
    thinking: str | bool | None = "off",
    preset: str | ThinkingPreset | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
    add_generation_prompt: bool = True,
) -> RenderedPrompt:
    """Render ``conversation`` for generation.

    ``preset`` is a family name (``qwen2``, ``qwen3``, ``deepseek-v4``, ...), a
    :class:`ThinkingPreset`, or None to infer it from ``tokenizer.name_or_path``.
    ``thinking="on"`` for a family without a thinking mode is a UsageError.
    ``chat_template_kwargs`` are merged over the preset's (explicit wins).
    """
    chosen = _resolve_preset(tokenizer, preset)
    kwargs = _kwargs(chosen, thinking, chat_template_kwargs)
    text, ids = render_messages(tokenizer, conversation.messages, kwargs=kwargs,
                                add_generation_prompt=add_generation_prompt)
    mode = chosen.default if thinking is None else normalize_thinking(thinking)
    return RenderedPrompt(token_ids=ids, text=text, hash=prompt_hash(text), chat_template_kwargs=kwargs,
                          conversation_id=conversation.id, thinking=mode)


_PROBE = [{"role": "user", "content": "What is 2 + 2?"}]


def check_thinking_switch(tokenizer: Any, preset: str | ThinkingPreset) -> None:
    """Raise UsageError when the template renders identically with thinking on and off.

    That happens when the template ignores the preset's kwargs: every "thinking on"
    prompt would silently be a thinking-off prompt (InferenceX guards the same way).
    """
    chosen = preset_for(preset)
    if not ("on" in chosen.modes and "off" in chosen.modes):
        return
    on, _ = render_messages(tokenizer, _PROBE, kwargs=chosen.kwargs_for("on"))
    off, _ = render_messages(tokenizer, _PROBE, kwargs=chosen.kwargs_for("off"))
    if on == off:
        raise UsageError(
            f"the chat template of {getattr(tokenizer, 'name_or_path', '?')!r} renders the same with thinking on "
            f"({chosen.kwargs_for('on')}) and off ({chosen.kwargs_for('off')}); it ignores the {chosen.family} switch",
            hint="check the model family (pass the right preset) or the template",
        )


def render_all(
    tokenizer: Any,
    conversations: Iterable[Conversation],
    *,
    thinking: str | bool | None = "off",
    preset: str | ThinkingPreset | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> list[RenderedPrompt]:
    """Render every conversation (first checking that the template honours the thinking switch)."""
    chosen = _resolve_preset(tokenizer, preset)
    if not chat_template_kwargs:
        check_thinking_switch(tokenizer, chosen)
    return [render(tokenizer, c, thinking=thinking, preset=chosen, chat_template_kwargs=chat_template_kwargs)
            for c in conversations]
