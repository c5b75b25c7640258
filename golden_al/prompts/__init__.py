"""Prompts as chat-templated traces: loaders, thinking presets, rendering and hashes.

Torch-free (server clients use it too). Public API::

    load_prompts(spec, *, cache_dir, limit=None, seed=None, turns="first", pip=None) -> PromptSet
    render(tokenizer, conversation, *, thinking="off", preset=None, chat_template_kwargs=None) -> RenderedPrompt
    render_all(tokenizer, conversations, *, thinking="off", preset=None, ...) -> list[RenderedPrompt]
    dataset_hash(rendered_prompts) -> str          prompt_hash(text) -> str
    family_for(model_name_or_config) -> str        preset_for(model_or_family) -> ThinkingPreset
"""

from __future__ import annotations

from typing import Any

from golden_al.prompts.conversation import Conversation, PromptSet
from golden_al.prompts.render import (
    RenderedPrompt,
    chat_template_hash,
    check_thinking_switch,
    dataset_hash,
    prompt_hash,
    render,
    render_all,
)
from golden_al.prompts.thinking import (
    family_for,
    load_presets,
    preset_for,
)

#: Names of the prompt loaders, imported on first use: they load the model registry, which ``golden_al.prompts.
#: thinking`` (read by the golden store and ``select``) must not pay for.
_LOADERS = ("HUMANEVAL_TEMPLATE", "MT_BENCH_CATEGORIES", "SPEC_FORMS", "load_prompts")


def __getattr__(name: str) -> Any:
    if name not in _LOADERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from golden_al.prompts import loaders

    return getattr(loaders, name)


__all__ = [
    "HUMANEVAL_TEMPLATE",
    "MT_BENCH_CATEGORIES",
    "SPEC_FORMS",
    "Conversation",
    "PromptSet",
    "RenderedPrompt",
    "chat_template_hash",
    "check_thinking_switch",
    "dataset_hash",
    "family_for",
    "load_presets",
    "load_prompts",
    "preset_for",
    "prompt_hash",
    "render",
    "render_all",
]
