"""A static reader of bash scripts: parsed on tree-sitter-bash, walked path by path.

``golden-al check`` must find the synthetic-acceptance value a benchmark script pins,
together with the draft length and settings in force on the same code path, *without
running the script*:

* :mod:`.parse` maps tree-sitter-bash's syntax tree onto the typed statements of
  :mod:`.nodes` (bounded in time and nesting; a syntax error raises
  :class:`ShellSyntaxError` with its line, which ``check`` reports as ``unreadable``);
* :mod:`.expand` gives words their values on one path (unknown and default-only parts
  kept as such, a few command substitutions evaluated statically, the line where each
  value's literal is written);
* :mod:`.walk` walks every feasible path (``if``/``case`` forks and bindings, ``case`` arms
  as path conditions, functions, ``exit``), capped at :data:`MAX_STATES` paths.

Nothing is ever executed.
"""

from golden_al.shell.expand import (
    UNKNOWN_MARK,
    Expander,
    State,
    expand_word,
    harden,
    has_unknown,
    is_soft,
    safe_arith,
    show,
    unknown_names,
)
from golden_al.shell.nodes import (
    AndOr,
    ArrayAssign,
    Case,
    Cmd,
    FuncDef,
    Group,
    If,
    Loop,
    Node,
    iter_cmds,
)
from golden_al.shell.parse import MAX_NESTING, ShellSyntaxError, parse_script
from golden_al.shell.walk import MAX_STATES, Walker, origin_of

__all__ = [
    "MAX_NESTING",
    "MAX_STATES",
    "UNKNOWN_MARK",
    "AndOr",
    "ArrayAssign",
    "Case",
    "Cmd",
    "Expander",
    "FuncDef",
    "Group",
    "If",
    "Loop",
    "Node",
    "ShellSyntaxError",
    "State",
    "Walker",
    "expand_word",
    "harden",
    "has_unknown",
    "is_soft",
    "iter_cmds",
    "origin_of",
    "parse_script",
    "safe_arith",
    "show",
    "unknown_names",
]
