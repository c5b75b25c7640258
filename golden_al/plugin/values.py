"""Small value checks shared by the engine profiles (no engine knowledge here)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from distributions import units
from golden_al.errors import UsageError

__all__ = ["format_value", "int_flag", "json_object", "parse_number", "parse_rates", "scalar_text", "selector_text",
           "set_flag"]


def format_value(x: float) -> str:
    """A number as the harnesses print it (``f"{x:g}"``), without float noise.

    ``4.05 -> "4.05"``, ``4.0 -> "4"``, ``4.05 - 1 -> "3.05"`` (not 3.0499999999999998).
    """
    if not math.isfinite(x):
        raise UsageError(f"cannot format non-finite value {x!r}")
    return units.format_number(x)


def int_flag(value: Any, name: str) -> int | None:
    """An integer flag value (``"3"``, ``3``, ``3.0``), ``None`` when absent.

    Raises:
        UsageError: not an integer.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise UsageError(f"{name} must be an integer, got {value!r}")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be an integer, got {value!r}") from None
    if not f.is_integer():
        raise UsageError(f"{name} must be an integer, got {value!r}")
    return int(f)


def json_object(value: Any) -> tuple[Mapping[str, Any] | None, str | None]:
    """A JSON object given as a mapping or as JSON text, and None with why when it is neither (``not valid JSON:
    ...``, ``not a JSON object (a list)``, ``neither JSON text nor a mapping (...)``)."""
    if isinstance(value, Mapping):
        return value, None
    if not isinstance(value, str):
        return None, f"neither JSON text nor a mapping ({value!r})"
    try:
        loaded = json.loads(value)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON: {exc.msg} (column {exc.colno})"
    return (loaded, None) if isinstance(loaded, dict) else (None, f"not a JSON object (a {type(loaded).__name__})")


_NUM = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


def parse_number(text: str | None) -> float | None:
    """A plain decimal number as written in a config, or None (no expressions, no units)."""
    if text is None:
        return None
    t = str(text).strip().strip("'\"").strip()
    if not _NUM.match(t):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_rates(text: str, flag: str = "--rates") -> list[float]:
    """Comma-separated per-position rates (``'0.9,0.5,0.2'``) as finite floats; range checks are the sampler's."""
    out: list[float] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise UsageError(
                f"{flag}: cannot parse {part!r} as a number; expected comma-separated rates like '0.9,0.5,0.2'"
            ) from None
        if not math.isfinite(value):
            raise UsageError(f"{flag}: {part!r} is not a finite number")
        out.append(value)
    if not out:
        raise UsageError(f"{flag} is empty; expected comma-separated rates like '0.9,0.5,0.2'")
    return out


def set_flag(args: Sequence[str], flags: Sequence[str]) -> tuple[str, str] | None:
    """The first of ``flags`` (in their order) set among command-line ``args`` (``--x v`` or ``--x=v``), as
    ``(flag, value)``; a flag that ends the arguments has the value ``""``. None: none is set."""
    for flag in flags:
        for i, arg in enumerate(args):
            if arg == flag or arg.startswith(flag + "="):
                return flag, arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
    return None


def selector_text(value: Any, name: str) -> str:
    """A curve selector's value as curves store it: ``True -> "true"``, ``8 -> "8"``, ``8.0 -> "8"``,
    ``0.3 -> "0.3"``, strings stripped and lower-cased (the engines' enums are lower case).

    Raises:
        UsageError: an empty value, or one that is not a scalar (naming ``name`` and the value).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return units.format_number(value)
    if isinstance(value, str) and value.strip():
        return value.strip().lower()
    raise UsageError(f"curve selector {name}: expected a number, a boolean or a word, got {value!r}")


def scalar_text(v: Any) -> str | None:
    """A config scalar as text (``true``/``false`` for booleans); None for a mapping, list or null."""
    if v is None or isinstance(v, (dict, list)):
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
