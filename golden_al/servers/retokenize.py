"""The answers' own text, re-tokenized: evidence of how many tokens a server generated that does not rest on
the count the server reports (``usage.completion_tokens``).

The acceptance counts are checked against the completion token count
(:mod:`golden_al.servers.crosscheck`). A server that inflates that count together with its acceptance claim
passes that check; the text it returned does not grow with the lie. With ``measure --retokenize --tokenizer PATH`` (the
served model's tokenizer, the one that renders prompts) every answer's text (its reasoning included) is
re-tokenized and must give the reported count within ``2 + 5 %``: the end-of-sequence token and a reasoning
marker are counted by the server but not written, and re-encoding a decoded text may merge a token or two
differently. A random model breaks that premise (its tokens re-encode to fewer: 24 to 18 on a tiny random
Qwen), so the check is opt-in, for trained models. An answer without text is refused, naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from golden_al.errors import UsageError
from golden_al.plugin.checks_ran import ran

__all__ = ["check_text_tokens", "load_tokenizer", "text_and_finish", "token_allowance"]


@lru_cache(maxsize=4)
def load_tokenizer(path: str) -> Callable[[str], int]:
    """A token counter for ``path``: a ``tokenizer.json`` (or a folder holding one) through the ``tokenizers``
    library, else a model folder through ``transformers`` (its ``AutoTokenizer``); no special tokens added.

    Raises:
        UsageError: nothing there, a file neither library reads, or neither library installed.
    """
    p = Path(path).expanduser()
    file = p / "tokenizer.json" if p.is_dir() else p
    if file.is_file():
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise UsageError("--tokenizer needs the tokenizers library", hint="pip install 'golden-al[engine]'") from None
        try:
            tok = Tokenizer.from_file(str(file))
        except Exception as exc:  # the library raises its own Exception type for a malformed file
            raise UsageError(f"--tokenizer {path}: not a tokenizer ({exc})") from None
        return lambda text: len(tok.encode(text, add_special_tokens=False).ids)
    if not p.is_dir():
        raise UsageError(f"--tokenizer {path}: no such tokenizer",
                         hint="the served model's folder, or its tokenizer.json")
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UsageError("--tokenizer needs transformers", hint="pip install 'golden-al[engine]'") from None
    try:
        auto = AutoTokenizer.from_pretrained(str(p))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--tokenizer {path}: cannot load it ({exc})") from None
    return lambda text: len(auto.encode(text, add_special_tokens=False))


def token_allowance(reported: int, retokenized: int) -> int:
    """How far a reported count may lie from the re-tokenized text's (module docstring)."""
    return 2 + math.ceil(0.05 * max(reported, retokenized))


def check_text_tokens(tokenizer: str, responses: Sequence[Mapping[str, Any]], reported: Sequence[int],
                      label: str) -> None:
    """Each answer's text, re-tokenized, against its reported completion token count.

    Raises:
        CountsDisagreeError: an answer without text, or a count the text does not bear out.
    """
    from golden_al.errors import CountsDisagreeError
    from golden_al.servers.retokenize import text_and_finish

    count_tokens = load_tokenizer(tokenizer)
    for i, (resp, count) in enumerate(zip(responses, reported, strict=True)):
        text, _ = text_and_finish(resp)
        if text is None:
            raise CountsDisagreeError(f"{label}: answer {i + 1} carries no text (choices[0].message.content or "
                                      "text), so its token count cannot be checked against what it wrote",
                                      hint="a server that generates returns its text; is a proxy stripping it?")
        n = count_tokens(text)
        if abs(count - n) > token_allowance(count, n):
            raise CountsDisagreeError(
                f"{label}: the server reports {count} completion tokens, but the answer's text re-tokenizes to {n} "
                f"(at most {token_allowance(count, n)} apart): its counts are not the tokens it wrote",
                hint="is --tokenizer the served model's tokenizer? if so, the server's counts are made up")
    ran("tokens-retokenized", len(responses))


def text_and_finish(resp: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(generated text, finish reason) of one answer (None: absent)."""
    choices = resp.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        c = choices[0]
        msg: Mapping[str, Any] = c["message"] if isinstance(c.get("message"), Mapping) else {}
        content = msg.get("content")
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        text = content if isinstance(content, str) else None
        if isinstance(reasoning, str) and reasoning:
            text = f"<think>{reasoning}</think>{text or ''}"
        return text, (str(c["finish_reason"]) if c.get("finish_reason") is not None else None)
    meta: Mapping[str, Any] = resp["meta_info"] if isinstance(resp.get("meta_info"), Mapping) else {}
    fr = meta.get("finish_reason")
    if isinstance(fr, Mapping):
        fr = fr.get("type")
    return (resp.get("text") if isinstance(resp.get("text"), str) else None), (str(fr) if fr else None)
