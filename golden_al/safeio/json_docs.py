"""JSON within bounds: a depth limit, errors that name the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from golden_al.errors import UnreadableInputError
from golden_al.safeio.limits import DEFAULT_MAX_BYTES, JSON_MAX_DEPTH
from golden_al.safeio.read import read_text

__all__ = ["check_depth", "duplicate_key_of", "load_json", "no_duplicate_keys", "read_json"]


def check_depth(obj: Any, *, path: str | Path | None = None, max_depth: int = JSON_MAX_DEPTH) -> None:
    """Refuse plain data (dicts/lists) nested deeper than ``max_depth`` (iterative)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            kids: Any = node.values()
        elif isinstance(node, list):
            kids = node
        else:
            continue
        if depth > max_depth:
            raise UnreadableInputError(f"nested deeper than {max_depth} levels", path=path, reason="too-deep")
        stack.extend((c, depth + 1) for c in kids)


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` that refuses an object holding a key twice (``json`` keeps the last
    silently, so a second value could hide the first from a reviewer)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def duplicate_key_of(exc: BaseException) -> str | None:
    """The key :func:`no_duplicate_keys` refused, if ``exc`` is that refusal."""
    return exc.key if isinstance(exc, _DuplicateKey) else None


def load_json(text: str, *, path: str | Path | None = None, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """``json.loads`` with a depth limit, refusing duplicate keys; errors name the line.

    Raises:
        UnreadableInputError: not JSON (``parse-error``), a key twice in one object
            (``duplicate-key``), or too deep.
    """
    try:
        obj = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except _DuplicateKey as exc:
        raise UnreadableInputError(f"the key {exc.key!r} appears twice in one object; which value counts depends "
                                   "on the reader", path=path, reason="duplicate-key") from None
    except json.JSONDecodeError as exc:
        raise UnreadableInputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno,
                                   reason="parse-error") from None
    except RecursionError:
        raise UnreadableInputError("not valid JSON: nested too deep", path=path, reason="too-deep") from None
    except (ValueError, OverflowError) as exc:
        raise UnreadableInputError(f"not valid JSON: {exc}", path=path, reason="parse-error") from None
    check_depth(obj, path=path, max_depth=max_depth)
    return obj


def read_json(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """:func:`read_text` then :func:`load_json`."""
    return load_json(read_text(path, max_bytes=max_bytes), path=path, max_depth=max_depth)
