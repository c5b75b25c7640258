"""Helpers shared by the subcommands: common options, env-var defaults, output (progress: :mod:`golden_al.cli.progress`).

Only the CLI reads environment variables; it resolves them here and passes plain
values down to library code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from golden_al.errors import UsageError

__all__ = [
    "DEFAULT_MAX_SECONDS",
    "ENV_CACHE",
    "ENV_GOLDEN_DIR",
    "add_format_option",
    "add_golden_dir_option",
    "add_max_seconds_option",
    "cache_dir",
    "clusters_text",
    "escape_control",
    "golden_dir",
    "parse_int_list",
    "parse_size",
    "print_json",
    "require_extra",
    "stderr_console",
    "thinking_mode",
    "time_limit",
    "warn_few_clusters",
]

#: Environment variable overriding the model/data cache (default ``~/.cache/golden-al``).
ENV_CACHE = "GOLDEN_AL_CACHE"
#: Environment variable naming a golden directory used instead of the shipped curves.
ENV_GOLDEN_DIR = "GOLDEN_AL_GOLDEN_DIR"


def draft_len_help(prefix: str = "draft length k") -> str:
    """``draft length k (...)``: how each engine spells k, from each profile's first draft-length rule (help text;
    ``golden-al engines show ENGINE`` lists every rule)."""
    from golden_al.plugin.registry import engine_names, get_profile

    rules = []
    for name in engine_names():
        p = get_profile(name)
        if p.draft_len_rules:
            rules.append(f"{p.display_name} {p.draft_len_rules[0].rule}")
    return f"{prefix} (" + "; ".join(rules) + "; all rules: golden-al engines show ENGINE)"


def cache_dir(explicit: str | Path | None = None) -> Path:
    """The cache root: ``explicit``, else ``$GOLDEN_AL_CACHE``, else ``~/.cache/golden-al``."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "golden-al"


def golden_dir(explicit: str | Path | None = None) -> Path | None:
    """A golden directory to use instead of the shipped curves, or None for the shipped ones."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_GOLDEN_DIR)
    return Path(env).expanduser() if env else None


def add_golden_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--golden-dir DIR``: read curves from DIR (ours or InferenceX's format) instead."""
    parser.add_argument(
        "--golden-dir",
        metavar="DIR",
        default=None,
        help="read golden curves from DIR instead of the shipped store (our schema or the "
        f"InferenceX golden_al_distribution shape; default: ${ENV_GOLDEN_DIR} or shipped curves)",
    )


def add_selector_option(parser: Any, what: str) -> None:
    """``--selector KEY=VALUE`` (repeatable): a curve selector (:attr:`golden_al.golden.schema.Draft.selectors`)."""
    parser.add_argument("--selector", action="append", default=[], metavar="KEY=VALUE",
                        help=f"{what} (repeatable; the engine's keys: golden-al engines show ENGINE)")


def parse_selectors(items: list[str], engine: str | None) -> dict[str, str]:
    """``--selector`` pairs as curves store them; a key the engine does not declare is a usage error.

    Raises:
        UsageError: not KEY=VALUE, a repeated key, or a key ``engine``'s profile does not declare.
    """
    from golden_al.plugin.registry import engine_names, get_profile
    from golden_al.plugin.values import selector_text

    keys = get_profile(engine).check.selector_keys if engine is not None and engine in engine_names() else None
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key or not value.strip():
            raise UsageError(f"--selector {item!r}: expected KEY=VALUE")
        if key in out:
            raise UsageError(f"--selector {key} given twice")
        if keys is not None and key not in keys:
            have = ", ".join(keys) or "none"
            raise UsageError(f"--selector {key}: {engine} has no curve selector {key!r} (its selectors: {have})")
        out[key] = selector_text(value, key)
    return out


def add_format_option(parser: argparse.ArgumentParser, choices: tuple[str, ...], default: str) -> None:
    """``--format`` with the given choices."""
    parser.add_argument("--format", choices=choices, default=default, help=f"output format (default: {default})")


_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")


def thinking_mode(text: str) -> str:
    """argparse type of ``--thinking``: ``on``, ``off`` or a named level such as ``reasoning_effort_high``."""
    from golden_al.prompts.thinking import normalize_mode

    try:
        return normalize_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_int_list(text: str, *, name: str = "value") -> list[int]:
    """Parse ``"1-8"``, ``"1,2,5"`` or ``"1-3,7"`` into a sorted list of unique ints."""
    out: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        m = _RANGE.match(part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise UsageError(f"{name}: range {part!r} is empty (expected LO-HI with LO <= HI)")
            out.update(range(lo, hi + 1))
        elif part.isdigit():
            out.add(int(part))
        else:
            raise UsageError(f"{name}: cannot parse {part!r}; expected e.g. '1-8' or '1,3,7'")
    if not out:
        raise UsageError(f"{name}: no values in {text!r}")
    return sorted(out)


#: C0 and C1 control characters, DEL, and the Unicode bidirectional overrides/isolates
#: (which can reorder what a terminal or a GitHub annotation shows).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_control(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character from inputs escaped (``\\x1b``, ``\\u202e``).

    Newlines and tabs are escaped too unless ``keep_newlines`` (tabs stay then). Every
    output format goes through this or ``json.dumps`` (which escapes them itself).
    """
    s = str(text)

    def esc(m: re.Match[str]) -> str:
        c = m.group(0)
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"

    s = _CONTROL.sub(esc, s)
    if not keep_newlines:
        s = s.replace("\n", "\\n").replace("\t", "\\t")
    return s


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"16M"``, ``"16MiB"``, ``"500k"``, ``"1048576"`` -> bytes (K/M/G/T are powers of 1024)."""
    m = _SIZE.match(str(text))
    if not m:
        raise UsageError(f"cannot read the size {text!r}", hint="e.g. 16M, 512k, 1G or a number of bytes")
    scale = 1024 ** "_kmgt".index(m.group(2).lower() or "_")
    value = int(float(m.group(1)) * scale)
    if value < 1:
        raise UsageError(f"size {text!r} must be at least 1 byte")
    return value


#: The modules each optional extra brings (``pyproject.toml``), as imported.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "engine": ("torch", "transformers", "safetensors", "gguf"),
    "plot": ("matplotlib", "matplotlib.figure"),  # the figure module is what plots import
}


def require_extra(extra: str, what: str, *, modules: tuple[str, ...] | None = None) -> None:
    """Refuse (exit 2, with the install line) before any download or model load when ``extra`` is not installed.

    Raises:
        UsageError: a module of the extra cannot be found.
    """
    import importlib.util

    missing = []
    for name in modules or EXTRA_MODULES[extra]:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    if missing:
        from golden_al.errors import UsageError

        torch_first = "pip install torch (a CPU wheel will do), then " if "torch" in missing else ""
        raise UsageError(f"{what} needs the '{extra}' extra ({', '.join(missing)} not installed)",
                         hint=f"{torch_first}pip install 'golden-al[{extra}]'")


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def note(line: str) -> None:
    """One ``golden-al: ...`` line on stderr (a build's or a run's progress note)."""
    sys.stderr.write(f"golden-al: {line}\n")


def stderr_console() -> Any:
    """A rich Console on stderr (progress and diagnostics never go to stdout)."""
    from rich.console import Console

    return Console(stderr=True)


def clusters_text(record: Any) -> str:
    """What a record's interval rests on, e.g. ``16 clusters (request)`` or ``24 clusters (counter window batch)``.

    Records written before ``uncertainty`` existed say ``N requests`` (their interval was over requests).
    """
    u = getattr(record, "uncertainty", None)
    if u is None:
        return f"{record.num_requests} requests"
    return f"{u.clusters} cluster{'s' if u.clusters != 1 else ''} ({u.unit or 'cluster'})"


def warn_few_clusters(records: Any) -> None:
    """One stderr warning per record whose interval rests on too few clusters, and one per record whose requests are
    too few or too uneven to hold the population's rare kinds (the record's own warning,
    :func:`distributions.uncertainty.representation_warning`)."""
    from distributions.uncertainty import few_clusters_warning

    for r in records:
        u = getattr(r, "uncertainty", None)
        notes = [few_clusters_warning(u.clusters) if u is not None else None,
                 *(w for w in r.warnings if w.startswith(("too few to hold", "too uneven to hold")))]
        for w in filter(None, notes):
            sys.stderr.write(f"golden-al: warning: k={r.draft_len} thinking {r.thinking}: {w}\n")


_ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc):`~?([^`]+)`")


def plain_text(doc: str) -> str:
    """A docstring as help text: reST roles and literal markup removed.

    ``:func:`golden_al.golden.curve_method_for``` -> ``curve_method_for``; ````x```` -> ``x``.
    """
    text = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1], doc)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    return re.sub(r"(?<![`\w])`([^`]+)`(?![`\w])", r"\1", text)


#: Default ``--max-seconds`` of the commands that read a run's files (``check-run``, ``import``).
DEFAULT_MAX_SECONDS = 600.0


def add_max_seconds_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS, metavar="S",
                        help=f"time cap on reading the run's files (default {DEFAULT_MAX_SECONDS:g}); past it the "
                             "command stops with exit 2 and writes nothing")


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    """Stop the block with :class:`~golden_al.errors.TimeLimitError` after ``seconds`` of wall time (a real-time
    timer of the main thread: it interrupts any loop, in Python or in a parser)."""
    import signal
    import threading

    from golden_al.errors import TimeLimitError, UsageError

    if not seconds > 0:
        raise UsageError(f"--max-seconds must be > 0, got {seconds:g}")
    if threading.current_thread() is not threading.main_thread():
        raise UsageError("--max-seconds needs the main thread (run the command in a process of its own)")

    def expired(_signum: int, _frame: Any) -> None:
        raise TimeLimitError(f"{what} took longer than {seconds:g} s", hint="raise --max-seconds, or pass fewer or "
                                                                            "smaller files")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
