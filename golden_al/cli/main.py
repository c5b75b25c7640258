"""The ``golden-al`` command: a table of subcommands, each imported only when used.

Every subcommand lives in its own module under :mod:`golden_al.cli` and exposes:

* ``EXAMPLES``: an epilog of real example invocations (shown by ``--help``);
* ``add_arguments(parser)``: declares its options;
* ``run(args) -> int``: does the work and returns the exit code;
* optionally ``needs(args)``: the optional extras this invocation needs, ``[(extra, what)]``, each checked before
  ``run`` starts (a missing one is exit 2 with the install line, before anything is read or written).

Exit codes: 0 ok; 1 a check or measurement failed; 2 usage or input error.
Errors are one line on stderr; ``--debug`` (anywhere on the line) shows the traceback.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["COMMANDS", "main"]

#: name -> (module, one-line help). Order is the order shown by ``golden-al --help``.
COMMANDS: dict[str, tuple[str, str]] = {
    "measure": ("golden_al.cli.measure", "measure real AL (the reference engine, or a serving engine over HTTP)"),
    "sweep": ("golden_al.cli.sweep", "measure every (thinking, k) cell on a server, resumably"),
    "models": ("golden_al.cli.models", "fetch, verify, convert and list cached models"),
    "fit": ("golden_al.cli.fit", "fit measurement records into a golden curve"),
    "pool": ("golden_al.cli.pool", "pool records of disjoint prompt shards into one cell"),
    "import": ("golden_al.cli.import_records", "write records from vLLM bench results, server logs, InferenceX"),
    "commit": ("golden_al.cli.commit", "add or update a curve in the store, showing the diff"),
    "report": ("golden_al.cli.report", "write report.md and plots for records or curves"),
    "curves": ("golden_al.cli.curves", "list and show the committed golden curves"),
    "env": ("golden_al.cli.env", "print the synthetic-acceptance settings for an engine"),
    "select": ("golden_al.cli.select", "select a recipe's golden AL at launch, as srtctl overrides"),
    "inject": ("golden_al.cli.inject", "write the golden AL into a recipe, keeping comments"),
    "check": ("golden_al.cli.check", "validate pinned values in configs and scripts (CI)"),
    "check-run": ("golden_al.cli.check_run", "check that a run's logs or metrics hit the target AL"),
    "verify": ("golden_al.cli.verify", "does a real run still reproduce its golden AL?"),
    "simulate": ("golden_al.cli.simulate", "reproduce an engine's synthetic sampler: pmf and bias"),
    "draft-lengths": ("golden_al.cli.draft_lengths", "model throughput and speedup against draft length"),
    "serve-reference": ("golden_al.cli.serve_reference", "serve the reference engine like SGLang or vLLM"),
    "engines": ("golden_al.cli.engines", "what golden-al knows of an engine (show), and build (once) an engine binary"),
}

#: Short batch commands that run with Python's cyclic garbage collector off: what they build (parsed files, node
#: graphs) is acyclic and freed by reference counting, and every collection walks all of it again (a quarter of
#: ``check``'s CPU over InferenceX, issue 52; the same peak memory).
NO_CYCLIC_GC = frozenset({"check", "select"})

_TOP_EPILOG = """\
examples:
  golden-al measure --draft-len 7                      # real AL of the Qwen2.5-Coder pair on HumanEval
  golden-al env --model muse-spark-open-816b-a42b-nvfp4 --thinking on \\
      --engine sglang --algorithm dflash --num-draft-tokens 8 --format json
  golden-al check recipes/ --format github             # CI: every pinned value is the golden one
  golden-al simulate --engine sglang --method multinomial --al 7.5 --draft-len 7

Run 'golden-al COMMAND --help' for a command's options and examples.
"""


class _TopHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps each command's help on one line: a wide name column and no narrow wrapping."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=24, width=100)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):  # argparse has no public name for it
            # argparse measures subcommand names before indenting them; leave room for the indent.
            names = [len(name) for name in action.choices]
            self._action_max_length = max(self._action_max_length, max(names, default=0) + 6)


class _OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are a single line on stderr (exit 2)."""

    def error(self, message: str) -> NoReturn:
        m = re.search(r"invalid choice: '([^']*)' \(choose from ", message)
        if m and self.prog == "golden-al":
            import difflib

            close = difflib.get_close_matches(m.group(1), list(COMMANDS), n=1, cutoff=0.6)
            if close:
                message = f"unknown command {m.group(1)!r}; did you mean {close[0]!r}?"
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _version() -> str:
    from golden_al import __version__

    return __version__


#: Options every command takes, before or after its name (``golden-al --progress none curves`` is ``golden-al curves
#: --progress none``): name -> argparse keywords. Absent from the namespace unless given, so that a command's parser
#: does not overwrite what was given before its name. One rule for both places.
GLOBAL_OPTIONS: dict[str, dict[str, object]] = {
    "--debug": {"action": "store_true", "help": "show tracebacks on errors"},
    "--progress": {"choices": ("auto", "rich", "plain", "none"),
                   "help": "progress on stderr: rich bars, plain lines every 15 s (for CI logs), none; auto: rich on a "
                           "terminal, plain otherwise (default: GOLDEN_AL_PROGRESS, else auto)"},
}


def _add_global_options(parser: argparse.ArgumentParser) -> None:
    for flag, keywords in GLOBAL_OPTIONS.items():
        parser.add_argument(flag, default=argparse.SUPPRESS, **keywords)  # type: ignore[arg-type]


def _build_parser(selected: str | None) -> argparse.ArgumentParser:
    from golden_al.cli._common import plain_text

    parser = _OneLineErrorParser(
        prog="golden-al",
        description="Speculative-decoding acceptance length (AL): measure it, fit and commit "
        "golden curves, generate per-engine synthetic-acceptance settings, check them in CI, "
        "and simulate engines and draft lengths.",
        epilog=_TOP_EPILOG,
        formatter_class=_TopHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"golden-al {_version()}")
    _add_global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                parser_class=_OneLineErrorParser)
    for name, (module_name, help_line) in COMMANDS.items():
        if name != selected:
            sub.add_parser(name, help=help_line, add_help=False)
            continue
        module = importlib.import_module(module_name)
        cmd_parser = sub.add_parser(
            name,
            help=help_line,
            description=plain_text(getattr(module, "DESCRIPTION", None) or (help_line[0].upper() + help_line[1:] + ".")),
            epilog=getattr(module, "EXAMPLES", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_global_options(cmd_parser)
        module.add_arguments(cmd_parser)
        cmd_parser.set_defaults(_run=module.run, _needs=getattr(module, "needs", lambda _args: ()))
    return parser


def _selected_command(argv: Sequence[str]) -> str | None:
    """The command named in ``argv``: its first word that is neither an option nor a global option's value."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token.startswith("-"):
            skip = "choices" in GLOBAL_OPTIONS.get(token, {})
        else:
            return token if token in COMMANDS else None
    return None


def _print_error(message: str) -> None:
    from golden_al.cli._common import escape_control

    sys.stderr.write(f"golden-al: error: {escape_control(message)}\n")


def _input_problem(err: BaseException) -> str:
    if isinstance(err, OSError):
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        return f"{where}{err.strerror or err} (hint: check the file's path and permissions)"
    if isinstance(err, UnicodeError):
        return f"an input is not valid text ({err}) (hint: save it as UTF-8)"
    if isinstance(err, RecursionError):
        return "an input is nested too deeply to read (hint: flatten it)"
    if isinstance(err, OverflowError):
        return f"a number in the input is out of range ({err})"
    return "out of memory reading an input (hint: is it far larger than expected?)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (the console script passes it to ``sys.exit``). Ctrl-C at any
    moment, while the command's modules load included, is exit 130 with one line, no traceback."""
    collecting = gc.isenabled()
    if _selected_command(list(sys.argv[1:] if argv is None else argv)) in NO_CYCLIC_GC:
        gc.disable()
    try:
        return _main(argv)
    except KeyboardInterrupt:
        _print_error("interrupted")
        return 130
    finally:
        if collecting:
            gc.enable()


def _warn_skipped_plugins() -> None:
    """One warning per installed plugin engine that failed the conformance kit: it is not an engine here,
    and only a command that names it fails (exit 2)."""
    from golden_al.plugin.registry import skipped_plugins

    for skipped in skipped_plugins():
        sys.stderr.write(f"golden-al: warning: {skipped.sentence()}\n")


def _main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    selected = _selected_command(args_list)
    _warn_skipped_plugins()
    try:
        parser = _build_parser(selected)
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if getattr(args, "command", None) is None:
        parser.print_help()
        return 2
    from distributions.errors import Error
    from golden_al.cli._common import require_extra
    from golden_al.cli.progress import PROGRESS_MODES, set_progress_mode

    mode = getattr(args, "progress", None) or os.environ.get("GOLDEN_AL_PROGRESS") or "auto"
    if mode not in PROGRESS_MODES:
        _print_error(f"GOLDEN_AL_PROGRESS={mode!r} is not one of {', '.join(PROGRESS_MODES)}")
        return 2
    set_progress_mode(mode)
    try:
        for extra, what in args._needs(args):
            require_extra(extra, what)
        return int(args._run(args))
    except Error as err:  # the one root: golden-al's errors and the math layer's
        return _failed(str(err), err.exit_code, debug)
    except KeyboardInterrupt:
        return _failed("interrupted", 130, False)
    except BrokenPipeError:
        return 0
    except (OSError, UnicodeError, RecursionError, OverflowError, MemoryError) as err:
        # Bad input that a reader did not name itself: still exit 2 with the file, never "internal".
        return _failed(_input_problem(err), 2, debug)
    except Exception as err:  # last-resort handler: the CLI only
        return _failed(f"internal error: {type(err).__name__}: {err} (run with --debug for the traceback)", 1, debug)


def _failed(message: str, code: int, debug: bool) -> int:
    """The error's one line on stderr (after the traceback with ``--debug``); returns the exit code."""
    if debug:
        import traceback

        traceback.print_exc()
    _print_error(message)
    return code


def console_main() -> None:
    """Entry point of the ``golden-al`` console script."""
    try:
        code = main()
    except KeyboardInterrupt:  # a second Ctrl-C while the first one's cleanup runs
        code = 130
    raise SystemExit(code)
