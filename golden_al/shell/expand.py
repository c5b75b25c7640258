"""Values of bash words on one path: known strings and arrays, unknown and default-only parts.

A variable never assigned in the file (set by the CI workflow, e.g. ``$CONC``) is *unknown*
(a placeholder that keeps its name); ``${X:-default}`` of such a variable is a *soft*
value (the default is the likely reading, but a condition on it is undecidable). A small
set of command substitutions is evaluated without running anything: ``printf FORMAT
ARGS``, ``echo``, ``awk "BEGIN{print EXPR}"``, ``dirname``/``basename`` and ``$(( EXPR ))``
with arithmetic on known numbers only. Each variable also remembers the line where the
literal text of its current value was written (:attr:`State.origins`), so a finding can
point at the line a person edits.
"""

from __future__ import annotations

import ast
import fnmatch
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from golden_al.shell.parse import command_words

__all__ = ["UNKNOWN_MARK", "Expander", "State", "Value", "expand_word", "harden", "has_unknown", "is_soft",
           "safe_arith", "show", "unknown_names"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Value = str | tuple[str, ...]


@dataclass
class State:
    """One path through the script: variable values and the assumptions that led here."""

    env: dict[str, Value] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    conds: tuple[str, ...] = ()
    done: bool = False
    notes: list[tuple[object, ...]] = field(default_factory=list)  # hashable records of the caller
    #: variable -> (raw text, line) of the assignment that gave it its current value
    origins: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: ``case`` arms taken on this path that fix a variable only by a glob: (name, glob, line)
    globs: tuple[tuple[str, str, int], ...] = ()
    #: ``case`` arms taken on this path that fix a variable: (name, value, line, the variable was
    #: unknown or a default there, i.e. an input of the script that the arm constrains)
    bound: tuple[tuple[str, str, int, bool], ...] = ()
    #: what ``echo``/``printf`` wrote on this path inside a ``$(function ...)`` being evaluated
    stdout: tuple[str, ...] = ()

    def fork(self, cond: str | None = None) -> State:
        """A copy for one branch (``cond``: the assumption the branch makes)."""
        return State(dict(self.env), set(self.exported), self.conds + ((cond,) if cond else ()), self.done,
                     list(self.notes), dict(self.origins), self.globs, self.bound, self.stdout)

    def key(self) -> tuple[object, ...]:
        """What makes two paths different (paths with equal keys are merged)."""
        return (tuple(sorted(self.env.items())), self.done, tuple(self.notes), self.globs)


UNKNOWN_MARK = "\x00"
_UNKNOWN_MARK = UNKNOWN_MARK


def _placeholder(name: str) -> str:
    return f"{_UNKNOWN_MARK}${name}{_UNKNOWN_MARK}"


#: ``${X:-default}`` of a variable the file never sets: bash uses the caller's value
#: when there is one, so the default is only the likely reading. It is kept as a value
#: (between these marks) but makes a condition undecidable.
_SOFT_OPEN = "\x02"
_SOFT_CLOSE = "\x03"


def has_unknown(text: str) -> bool:
    """Whether an expanded text still holds an unknown part."""
    return _UNKNOWN_MARK in text


_SOFT_SEP = "\x01"
_SOFT_RE = re.compile(f"{_SOFT_OPEN}([^{_SOFT_SEP}]*){_SOFT_SEP}([^{_SOFT_CLOSE}]*){_SOFT_CLOSE}")


def _soft(name: str, default: str) -> str:
    return f"{_SOFT_OPEN}{name}{_SOFT_SEP}{harden(default)}{_SOFT_CLOSE}"


def is_soft(text: str) -> bool:
    """Whether an expanded text holds a default of a variable the file never sets."""
    return _SOFT_OPEN in text


def harden(text: str) -> str:
    """The text with soft-default marks removed (the default taken as the value)."""
    return _SOFT_RE.sub(r"\2", text) if _SOFT_OPEN in text else text


def unknown_names(text: str) -> list[str]:
    """The variables (``$NAME``) left unknown in an expanded text."""
    return re.findall(rf"{_UNKNOWN_MARK}\$([^{_UNKNOWN_MARK}]*){_UNKNOWN_MARK}", text)


def show(text: str) -> str:
    """An expanded text for messages (unknown parts as ``$NAME``, defaults as ``${NAME:-x}``)."""
    text = _SOFT_RE.sub(lambda m: "${" + m.group(1) + ":-" + m.group(2) + "}", text)
    return re.sub(rf"{_UNKNOWN_MARK}\$([^{_UNKNOWN_MARK}]*){_UNKNOWN_MARK}", r"$\1", text)


def _strip_glob(pattern: str, value: str, mode: str) -> str:
    """``${v#p}`` ``${v##p}`` ``${v%p}`` ``${v%%p}``."""
    n = len(value)
    if mode in ("#", "##"):
        rng = range(0, n + 1) if mode == "#" else range(n, -1, -1)
        for i in rng:
            if fnmatch.fnmatchcase(value[:i], pattern):
                return value[i:]
        return value
    rng = range(n, -1, -1) if mode == "%" else range(0, n + 1)
    for i in rng:
        if fnmatch.fnmatchcase(value[i:], pattern):
            return value[:i]
    return value



def _skip_quoted(text: str, i: int, quote: str) -> int:
    """Index just past the closing ``quote`` starting at ``text[i] == quote``."""
    n = len(text)
    j = i + 1
    if quote == "'":
        k = text.find("'", j)
        return n if k < 0 else k + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == quote:
            return j + 1
        if quote == '"' and c == "$" and j + 1 < n and text[j + 1] in "({":
            j = _skip_dollar(text, j)
            continue
        if quote == '"' and c == "`":
            j = _skip_quoted(text, j, "`")
            continue
        j += 1
    return n


def _skip_dollar(text: str, i: int) -> int:
    """Index just past ``$(...)``, ``$((...))`` or ``${...}`` starting at ``text[i] == '$'``."""
    n = len(text)
    open_c = text[i + 1]
    close_c = ")" if open_c == "(" else "}"
    depth = 0
    j = i + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c in "'\"":
            j = _skip_quoted(text, j, c)
            continue
        if c == "`":
            j = _skip_quoted(text, j, "`")
            continue
        if c == "$" and j + 1 < n and text[j + 1] in "({":
            j = _skip_dollar(text, j)
            continue
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return j + 1
        elif c == "#" and open_c == "(" and (j == 0 or text[j - 1] in " \t\n"):
            k = text.find("\n", j)
            j = n if k < 0 else k
            continue
        j += 1
    return n


class Expander:
    """Expand words against one :class:`State` (unknown variables become placeholders)."""

    def __init__(self, state: State, call: Callable[[str, list[str], State], str | None] | None = None) -> None:
        self.state = state
        self.depth = 0
        self.call = call  # ``$(f args)`` of a function defined in the script (the walker evaluates it)

    def var(self, name: str) -> str:
        v = self.state.env.get(name)
        if v is None:
            return _placeholder(name)
        if isinstance(v, tuple):
            return v[0] if v else ""
        return v

    def param(self, inner: str) -> list[str] | str:
        """``${...}`` contents."""
        if inner.startswith("#"):
            name = inner[1:]
            v = self.state.env.get(name.split("[")[0])
            if v is None:
                return _placeholder("#" + name)
            return str(len(v)) if isinstance(v, tuple) and "[" in name else str(len(v if isinstance(v, str) else v[0] if v else ""))
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(\[[^\]]*\])?", inner)
        if not m:
            return _placeholder(inner)
        name, index = m.group(1), m.group(2)
        rest = inner[m.end():]
        raw = self.state.env.get(name)
        if index in ("[@]", "[*]"):
            if raw is None:
                return _placeholder(name + index)
            return list(raw) if isinstance(raw, tuple) else [raw]
        if index:
            if raw is None:
                return _placeholder(name + index)
            try:
                idx = int(index[1:-1])
            except ValueError:
                return _placeholder(name + index)
            seq = raw if isinstance(raw, tuple) else (raw,)
            return seq[idx] if 0 <= idx < len(seq) else ""
        value: str | None
        if raw is None:
            value = None
        elif isinstance(raw, tuple):
            value = raw[0] if raw else ""
        else:
            value = raw
        if not rest:
            return value if value is not None else _placeholder(name)
        for op in (":-", ":=", ":+", ":?", "-", "=", "+", "?"):
            if rest.startswith(op):
                arg = rest[len(op):]
                empty_counts = op.startswith(":")
                is_set = value is not None and (value != "" or not empty_counts)
                if op.endswith("-") or op.endswith("="):
                    if is_set:
                        return value  # type: ignore[return-value]
                    out = self.expand_text(arg, quoted=False)
                    if raw is None and name not in self.state.env:
                        out = _soft(name, out)  # the caller may set it
                    if op.endswith("="):
                        self.state.env[name] = out
                    return out
                if op.endswith("+"):
                    if value is None:
                        return _placeholder(name)
                    return self.expand_text(arg, quoted=False) if is_set else ""
                return value if value is not None else _placeholder(name)
        for op in ("##", "#", "%%", "%"):
            if rest.startswith(op):
                if value is None:
                    return _placeholder(name)
                pat = harden(self.expand_text(rest[len(op):], quoted=False))
                if has_unknown(pat) or has_unknown(value):
                    return _placeholder(name)
                if is_soft(value):  # a default: keep it marked as one
                    return _soft(name, _strip_glob(pat, harden(value), op))
                return _strip_glob(pat, value, op)
        if rest.startswith("/") or rest.startswith(":"):
            return _placeholder(name)
        return _placeholder(name)

    def command(self, inner: str) -> str:
        """``$( ... )``: a few commands are evaluated statically, the rest are unknown."""
        self.depth += 1
        try:
            if self.depth > 8:
                return _placeholder("(...)")
            raws = command_words(inner)
            if raws is None:  # a pipeline, a list or a compound statement: not evaluated
                return _placeholder("(" + " ".join(inner.split())[:60] + ")")
            if not raws:
                return ""
            words: list[str] = []
            for raw in raws:
                words.extend(self.expand_word_list(raw))
            if not words:
                return ""
            if self.call is not None and (out := self.call(words[0], words[1:], self.state)) is not None:
                return out
            if any(is_soft(w) for w in words):  # computed from defaults: the result is one too
                out = self._command([harden(w) for w in words])
                return out if has_unknown(out) else _soft(words[0], out)
            return self._command(words)
        finally:
            self.depth -= 1

    def _command(self, words: list[str]) -> str:
        cmd = words[0]
        if cmd == "printf" and len(words) >= 2 and words[1:] != ["--"]:
            args = words[1:]
            if args and args[0] == "--":
                args = args[1:]
            if args and args[0] == "-v":
                return _placeholder("(printf -v)")
            return _printf(args[0], args[1:])
        if cmd == "echo":
            args = [w for w in words[1:] if w not in ("-n", "-e")]
            return " ".join(args)
        if cmd == "awk" and len(words) == 2:
            return _awk_begin_print(words[1])
        if cmd in ("dirname", "basename") and len(words) == 2 and not has_unknown(words[1]):
            p = words[1].rstrip("/") or "/"
            return (p.rsplit("/", 1)[0] or "/") if cmd == "dirname" and "/" in p else (
                "." if cmd == "dirname" else p.rsplit("/", 1)[-1])
        return _placeholder("(" + " ".join(show(w) for w in words)[:60] + ")")

    def arith(self, expr: str) -> str:
        text = self.expand_text(expr, quoted=False, bare_names=True)
        if has_unknown(text):
            return _placeholder("((" + show(text) + "))")
        value = safe_arith(text)
        if value is None:
            return _placeholder("((" + text + "))")
        return str(int(value)) if float(value).is_integer() else str(value)

    def expand_text(self, raw: str, *, quoted: bool, bare_names: bool = False) -> str:
        """Expand ``raw`` into one string (quote removal, parameter and command expansion)."""
        parts = self._expand(raw, quoted=quoted, bare_names=bare_names)
        return "".join(p if isinstance(p, str) else " ".join(p) for p, _ in parts)

    def expand_word_list(self, raw: str) -> list[str]:
        """Expand one word into the words bash would produce (arrays and word splitting)."""
        parts = self._expand(raw, quoted=False)
        words: list[str] = [""]
        started = False
        for piece, quoted in parts:
            if isinstance(piece, list):
                if not piece:
                    started = True
                    continue
                words[-1] += piece[0]
                for extra in piece[1:]:
                    words.append(extra)
                started = True
                continue
            if quoted:
                words[-1] += piece
                started = True
                continue
            chunks = re.split(r"[ \t\n]+", piece)
            for j, ch in enumerate(chunks):
                if j > 0:
                    if words[-1] or started:
                        words.append("")
                        started = False
                words[-1] += ch
                if ch:
                    started = True
        return [w for w in words if w != "" or started] or ([] if not raw else [""] if raw in ('""', "''") else [])

    def _expand(self, raw: str, *, quoted: bool, bare_names: bool = False) -> list[tuple[str | list[str], bool]]:
        """Kept whole: one character scanner of shell quoting and expansions; its states (quotes, ``$`` forms,
        escapes) share the cursor and the word buffer, which every piece would otherwise have to pass back and
        forth."""
        out: list[tuple[str | list[str], bool]] = []
        i = 0
        n = len(raw)
        buf: list[str] = []

        def flush(q: bool) -> None:
            if buf:
                out.append(("".join(buf), q))
                buf.clear()

        in_dq = False
        while i < n:
            c = raw[i]
            if c == "'" and not in_dq and not quoted:
                j = raw.find("'", i + 1)
                j = n if j < 0 else j
                flush(in_dq or quoted)
                out.append((raw[i + 1:j], True))
                i = j + 1
                continue
            if c == '"' and not quoted:
                flush(in_dq)
                in_dq = not in_dq
                i += 1
                continue
            if c == "\\":
                if i + 1 < n:
                    nxt = raw[i + 1]
                    if in_dq or quoted:
                        if nxt in '$`"\\\n':
                            buf.append(nxt)
                        else:
                            buf.append(c + nxt)
                    else:
                        buf.append(nxt)
                    i += 2
                else:
                    i += 1
                continue
            if c == "$" and i + 1 < n:
                nxt = raw[i + 1]
                if raw.startswith("$((", i):
                    j = _skip_dollar(raw, i)
                    flush(in_dq or quoted)
                    out.append((self.arith(raw[i + 3:j - 2]), True))
                    i = j
                    continue
                if nxt == "(":
                    j = _skip_dollar(raw, i)
                    flush(in_dq or quoted)
                    out.append((self.command(raw[i + 2:j - 1]), in_dq or quoted))
                    i = j
                    continue
                if nxt == "{":
                    j = _skip_dollar(raw, i)
                    flush(in_dq or quoted)
                    val = self.param(raw[i + 2:j - 1])
                    out.append((val, in_dq or quoted) if isinstance(val, str) else (val, True))
                    i = j
                    continue
                if nxt == "'" and not in_dq:
                    j = raw.find("'", i + 2)
                    j = n if j < 0 else j
                    flush(in_dq or quoted)
                    out.append((raw[i + 2:j].encode().decode("unicode_escape", errors="replace"), True))
                    i = j + 1
                    continue
                m = _NAME.match(raw, i + 1)
                if m:
                    flush(in_dq or quoted)
                    out.append((self.var(m.group(0)), in_dq or quoted))
                    i = m.end()
                    continue
                if nxt in "0123456789@*#?$!-":
                    flush(in_dq or quoted)
                    positional = self.state.env.get(nxt) if nxt.isdigit() else None
                    out.append((positional if isinstance(positional, str) else _placeholder(nxt), in_dq or quoted))
                    i += 2
                    continue
            if c == "`":
                j = _skip_quoted(raw, i, "`")
                flush(in_dq or quoted)
                out.append((self.command(raw[i + 1:j - 1]), in_dq or quoted))
                i = j
                continue
            if bare_names and (m := _NAME.match(raw, i)) and (i == 0 or not raw[i - 1].isalnum()):
                name = m.group(0)
                v = self.state.env.get(name)
                buf.append(v if isinstance(v, str) else _placeholder(name))
                i = m.end()
                continue
            buf.append(c)
            i += 1
        flush(in_dq or quoted)
        return out


def expand_word(word: str, state: State) -> str:
    """Expand one raw word into a single string against ``state``."""
    return Expander(state).expand_text(word, quoted=False)


# ------------------------------------------------------------------ safe arithmetic

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}


def safe_arith(expr: str, *, integer: bool = True) -> float | None:
    """Evaluate ``+ - * / % ( )`` on number literals only (None if anything else appears)."""
    text = expr.strip()
    if not text or len(text) > 200 or not re.fullmatch(r"[0-9.eE+\-*/%() \t]+", text):
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if integer and isinstance(node.op, ast.Div):
                if b == 0:
                    raise ZeroDivisionError
                return float(int(a / b))
            return _BINOPS[type(node.op)](a, b)
        raise ValueError("not arithmetic")

    try:
        value = ev(tree)
    except (ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    return value if math.isfinite(value) else None


def _awk_begin_print(program: str) -> str:
    """``awk "BEGIN{print EXPR}"`` with numeric EXPR, printed like awk's ``%.6g``."""
    m = re.fullmatch(r"\s*BEGIN\s*\{\s*print\s+(.*?);?\s*\}\s*", program, re.S)
    if not m or has_unknown(m.group(1)):
        return _placeholder("(awk)")
    value = safe_arith(m.group(1), integer=False)
    if value is None:
        return _placeholder("(awk)")
    if float(value).is_integer() and abs(value) < 1e16:
        return str(int(value))
    return f"{value:.6g}"


_PRINTF = re.compile(r"%([-+ 0#]*)(\d+)?(?:\.(\d+))?([sdifgeExXc%])")


def _printf(fmt: str, args: Sequence[str]) -> str:
    """bash ``printf`` for ``%s %d %i %f %g %e %x %c %%`` and ``\\n`` escapes."""
    out: list[str] = []
    args = list(args)
    idx = 0
    pos = 0
    for m in _PRINTF.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        conv = m.group(4)
        if conv == "%":
            out.append("%")
            continue
        arg = args[idx] if idx < len(args) else ""
        idx += 1
        if has_unknown(arg):
            out.append(arg)
            continue
        spec = "%" + m.group(1) + (m.group(2) or "") + ("." + m.group(3) if m.group(3) is not None else "")
        try:
            if conv == "s":
                out.append((spec + "s") % arg)
            elif conv == "c":
                out.append(arg[:1])
            elif conv in "dixX":
                out.append((spec + conv.replace("i", "d")) % int(float(arg or 0)))
            else:
                out.append((spec + conv) % float(arg or 0))
        except (ValueError, TypeError, OverflowError):
            out.append(_placeholder("(printf)"))
    out.append(fmt[pos:])
    return "".join(out).replace("\\n", "\n").replace("\\t", "\t")


