"""Conversations (chat traces) and prompt sets: what every prompt loader returns. Torch-free."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Conversation", "PromptSet"]


@dataclass
class Conversation:
    """One chat trace to continue.

    ``messages`` is the context to render, ending with the user turn the model
    answers next (``[{"role": ..., "content": ...}, ...]``; recorded assistant
    turns of a multi-turn trace are context). ``followups`` are later user turns
    whose preceding assistant turn the model itself must generate (MT-Bench's
    second turn, SPEED-Bench multi-turn rows with ``turns="all"``); engines that
    only do single turns ignore them, as vLLM and SGLang do.
    """

    id: str
    messages: list[dict[str, Any]]
    category: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    followups: list[str] = field(default_factory=list)

    @property
    def last_user_message(self) -> str:
        """The content of the last user message (what the model answers)."""
        for msg in reversed(self.messages):
            if msg.get("role") == "user":
                return str(msg.get("content") or "")
        return ""

    @property
    def num_turns(self) -> int:
        """User turns the model answers: 1 + len(followups)."""
        return 1 + len(self.followups)

    def next_turn(self, assistant_reply: str) -> Conversation | None:
        """The conversation for the next follow-up, given the model's reply; None when done."""
        if not self.followups:
            return None
        messages = [*self.messages, {"role": "assistant", "content": assistant_reply},
                    {"role": "user", "content": self.followups[0]}]
        turn = int(self.metadata.get("turn", 0)) + 1
        return replace(self, messages=messages, followups=list(self.followups[1:]),
                       metadata={**self.metadata, "turn": turn})


@dataclass
class PromptSet:
    """Conversations from one source (``name``), optionally filtered to one ``category``."""

    name: str
    category: str | None
    source: str
    conversations: list[Conversation]
    metadata: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.conversations)

    def __iter__(self) -> Iterator[Conversation]:
        return iter(self.conversations)

    def __getitem__(self, index: int) -> Conversation:
        return self.conversations[index]
