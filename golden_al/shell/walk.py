"""Path-sensitive walk of a parsed script: every feasible path, its assumptions and its values.

* ``if``/``elif`` and ``case`` whose condition can be decided from known values take one
  branch; otherwise the walk forks (each path remembers the assumption it made, e.g.
  ``CONC -le 8``), and a condition ``[ "$X" = lit ]`` assumed true binds ``X``;
* a ``case`` arm over a subject such as ``"$MODEL:$K"`` binds the parts its pattern fixes
  (``*DeepSeek-V4*:1)`` binds ``K=1``) and records the glob the others must match
  (:attr:`State.globs`); :meth:`Walker.run` can be given such bindings up front
  (``assume``) so that a value computed *before* the ``case`` (``--speculative-num-steps
  $K``) is read under the same condition (see :func:`hoistable`);
* ``exit`` ends a path (what it pinned so far is kept); functions run where called.

Nothing is ever executed. The walk is capped (:data:`MAX_STATES` paths); the caller
learns when a cap was hit.
"""

from __future__ import annotations

import fnmatch
import operator
import re
from collections.abc import Callable, Iterable

from golden_al.shell.expand import (
    Expander,
    State,
    _placeholder,
    harden,
    has_unknown,
    is_soft,
    show,
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

__all__ = ["MAX_STATES", "Visitor", "Walker", "origin_of"]

MAX_STATES = 128
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?=)")

# ---------------------------------------------------------------------- conditions


def _split_at(words: list[str], seps: tuple[str, ...]) -> int | None:
    """Index of the first of ``seps`` outside parentheses."""
    depth = 0
    for i, w in enumerate(words):
        if w == "(":
            depth += 1
        elif w == ")":
            depth -= 1
        elif depth == 0 and w in seps:
            return i
    return None


def _test(words: list[str]) -> bool | None:
    """Evaluate ``[ ... ]`` / ``[[ ... ]]`` / ``test ...`` words (None when undecidable)."""
    if not words:
        return None
    if any(is_soft(w) for w in words):
        return None
    # split on -o / || (lowest), then -a / && (outside parentheses), then !
    for seps, absorbing in ((("-o", "||"), True), (("-a", "&&"), False)):
        i = _split_at(words, seps)
        if i is not None:
            left, right = _test(words[:i]), _test(words[i + 1:])
            if left is absorbing or right is absorbing:
                return absorbing
            if left is (not absorbing) and right is (not absorbing):
                return not absorbing
            return None
    if words[0] == "!":
        r = _test(words[1:])
        return None if r is None else not r
    if words[0] == "(" and words[-1] == ")":
        return _test(words[1:-1])
    if len(words) == 1:
        return None if has_unknown(words[0]) else words[0] != ""
    if len(words) == 2:
        op, a = words
        if has_unknown(a):
            return None
        if op == "-n":
            return a != ""
        if op == "-z":
            return a == ""
        return None
    if len(words) == 3:
        a, op, b = words
        if has_unknown(a) or has_unknown(b):
            return None
        if op in ("=", "=="):
            return fnmatch.fnmatchcase(a, b)
        if op == "!=":
            return not fnmatch.fnmatchcase(a, b)
        if op == "=~":
            try:
                return re.search(b, a) is not None
            except re.error:
                return None
        nums = {"-eq": operator.eq, "-ne": operator.ne, "-gt": operator.gt, "-ge": operator.ge,
                "-lt": operator.lt, "-le": operator.le}
        if op in nums:
            try:
                return nums[op](int(a), int(b))
            except ValueError:
                return None
        if op in ("<", ">"):
            return (a < b) if op == "<" else (a > b)
    return None


def _refinements(words: list[str], raw_words: list[str], truth: bool) -> list[tuple[str, str]]:
    """Variables a condition pins when assumed ``truth``: ``[ "$X" = lit ]`` true binds X."""
    if truth and len(raw_words) == 3 and raw_words[1] in ("=", "==", "-eq"):
        m = re.fullmatch(r'"?\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::?-[^}]*)?\}?"?', raw_words[0])
        lit = harden(words[2])
        if m and not has_unknown(lit) and not any(ch in lit for ch in "*?["):
            return [(m.group(1), lit)]
    if not truth and len(raw_words) == 3 and raw_words[1] == "!=":
        m = re.fullmatch(r'"?\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::?-[^}]*)?\}?"?', raw_words[0])
        lit = harden(words[2])
        if m and not has_unknown(lit) and not any(ch in lit for ch in "*?["):
            return [(m.group(1), lit)]
    return []


# --------------------------------------------------------------------------- walker

Visitor = Callable[[Cmd, State, "Walker"], None]


class Walker:
    """Walk statements over every feasible path, calling ``visit`` on each simple command.

    ``assume`` fixes variables the caller wants decided (e.g. ``EVAL_ONLY=false``)
    without making them known values for messages.
    """

    def __init__(self, nodes: list[Node], visit: Visitor, *, assume: dict[str, str] | None = None,
                 max_states: int = MAX_STATES, relevant: Callable[[Node], bool] | None = None,
                 relevant_vars: set[str] | None = None,
                 same_output: Callable[[str], object] | None = None) -> None:
        self.nodes = nodes
        self.visit = visit
        self.assume = dict(assume or {})
        self.max_states = max_states
        self.relevant = relevant
        self.relevant_vars = relevant_vars
        self._relevant_sorted = sorted(relevant_vars) if relevant_vars is not None else []
        self.functions: dict[str, list[Node]] = {}
        self.truncated = False
        self.call_depth = 0
        #: ``$(f ...)`` whose paths print different texts is still one value when this key of
        #: the texts agrees (the caller's notion of "the same launch flags"); None: exact text
        self.same_output = same_output
        self.capturing = 0

    def run(self, initial: State | None = None) -> list[State]:
        state = initial or State()
        for k, v in self.assume.items():
            state.env.setdefault(k, v)
        return self.walk(self.nodes, [state])

    # -- helpers
    def _key(self, s: State) -> tuple[object, ...]:
        if self.relevant_vars is None:
            return s.key()
        env, origins = s.env, s.origins
        if len(env) < len(self._relevant_sorted):
            values = tuple(sorted((k, v, origins.get(k)) for k, v in env.items() if k in self.relevant_vars))
        else:
            values = tuple((k, env[k], origins.get(k)) for k in self._relevant_sorted if k in env)
        return (values, s.done, tuple(s.notes), s.globs, s.stdout)

    def _cap(self, states: list[State]) -> list[State]:
        seen: dict[tuple[object, ...], State] = {}
        for s in states:
            seen.setdefault(self._key(s), s)
        out = list(seen.values())
        if len(out) > self.max_states:
            self.truncated = True
            out = out[: self.max_states]
        return out

    def walk(self, nodes: Iterable[Node], states: list[State]) -> list[State]:
        for node in nodes:
            live = [s for s in states if not s.done]
            dead = [s for s in states if s.done]
            if not live:
                return states
            live = self.exec(node, live)
            states = self._cap(dead + live)
        return states

    def exec(self, node: Node, states: list[State]) -> list[State]:
        if self.relevant is not None and isinstance(node, (If, Case, Loop, AndOr)) and not self.relevant(node):
            return states  # changes nothing the caller looks at: not worth a fork
        if isinstance(node, Cmd):
            out: list[State] = []
            for s in states:
                out.extend(self.exec_cmd(node, s))
            return out
        if isinstance(node, AndOr):
            return self.exec_andor(node, states)
        if isinstance(node, If):
            return self.exec_if(node, states)
        if isinstance(node, Case):
            return self.exec_case(node, states)
        if isinstance(node, Loop):
            # the body may run (once, for our purposes) or not at all
            ran = self.walk(node.body, [s.fork() for s in states])
            return self._cap(states + ran)
        if isinstance(node, FuncDef):
            self.functions[node.name] = node.body
            return states
        if isinstance(node, Group):
            return self.walk(node.body, states)
        return states

    def exec_andor(self, node: AndOr, states: list[State]) -> list[State]:
        # a && b: b runs when a succeeds; a || b: b runs when a fails. Commands other
        # than tests always "may" succeed, so the assignments of b are one more path.
        result = self.exec(node.items[0], states)
        for op, item in zip(node.ops, node.items[1:], strict=False):
            if op in ("|", "|&"):
                result = self.exec(item, result)
                continue
            truth = _cond_value(node.items[0], result[0]) if len(result) == 1 and not result[0].done else None
            if truth is None or (truth if op == "&&" else not truth):
                ran = self.exec(item, [s.fork() for s in result if not s.done])
                if truth is None and not _is_test(item):
                    result = self._cap(result + ran)
                else:
                    result = self._cap([s for s in result if s.done] + ran)
        return result

    def exec_if(self, node: If, states: list[State]) -> list[State]:
        out: list[State] = []
        for s in states:
            pending = [s]
            for cond, body in node.branches:
                nxt: list[State] = []
                for p in pending:
                    p2 = self.walk(cond, [p])[0] if cond and not _only_tests(cond) else p
                    truth, text, refine_true, refine_false = _decide(cond, p2)
                    if truth is True:
                        out.extend(self.walk(body, [p2]))
                    elif truth is False:
                        nxt.append(p2)
                    else:
                        yes = p2.fork(text)
                        for k, v in refine_true:
                            yes.env[k] = v
                        out.extend(self.walk(body, [yes]))
                        no = p2.fork(f"not ({text})")
                        for k, v in refine_false:
                            no.env[k] = v
                        nxt.append(no)
                pending = nxt
            if node.orelse is not None:
                out.extend(self.walk(node.orelse, pending))
            else:
                out.extend(pending)
        return self._cap(out)

    def exec_case(self, node: Case, states: list[State]) -> list[State]:
        out: list[State] = []
        for s in states:
            subject = Expander(s).expand_text(node.subject.raw, quoted=False) if node.subject else ""
            matched_any = False
            undecided: list[State] = []
            rest = [s]
            for patterns, body in node.arms:
                pats = [Expander(s).expand_text(p.raw, quoted=False) for p in patterns]
                if not has_unknown(subject) and not is_soft(subject) and not any(has_unknown(p) for p in pats):
                    if any(fnmatch.fnmatchcase(subject, p) for p in pats):
                        out.extend(self.walk(body, rest))
                        matched_any = True
                        rest = []
                        break
                    continue
                text = f"{show(subject)} matches {'|'.join(show(p) for p in pats)}"
                parts = _case_parts(node.subject.raw if node.subject else "", pats)
                line = patterns[0].line if patterns else node.line
                feasible = [r for r in rest if _feasible(parts, r)]  # else a known part cannot match the arm
                for r in feasible:
                    arm = r.fork(text)
                    for name, piece in parts:
                        if _is_glob(piece):
                            arm.globs = (*arm.globs, (name, piece, line))
                            continue
                        old = arm.env.get(name)
                        hoist = old is None or (isinstance(old, str) and (has_unknown(old) or is_soft(old)))
                        arm.env[name] = piece
                        arm.origins[name] = (piece, line)
                        arm.bound = (*arm.bound, (name, piece, line, hoist))
                    undecided.extend(self.walk(body, [arm]))
                rest = [r.fork(f"not ({text})") if r in feasible else r for r in rest]
            out.extend(undecided)
            if not matched_any:
                out.extend(rest)
        return self._cap(out)

    def substitute(self, name: str, args: list[str], state: State) -> str | None:
        """The output of ``$(name args...)`` when ``name`` is a function of the script.

        The body runs on a copy of the path (a command substitution is a subshell) with
        ``$1``... set, every branch followed; what its ``echo``/``printf`` print is the value
        when all paths print the same (or the same by :attr:`same_output`). None otherwise,
        or when the function prints nothing, is unknown, or the walk would go too deep.
        """
        body = self.functions.get(name)
        if body is None or self.call_depth >= 8 or self.capturing >= 2 or not _prints(body):
            return None
        sub = state.fork()
        sub.stdout = ()
        for i in range(1, 10):
            sub.env.pop(str(i), None)
        for i, arg in enumerate(args[:9], 1):
            sub.env[str(i)] = arg
        saved = (self.relevant, self.truncated)
        self.relevant = None  # every branch: what the function prints depends on all of them
        self.capturing += 1
        self.call_depth += 1
        try:
            finals = self.walk(body, [sub])
            truncated = self.truncated
        finally:
            self.relevant, self.truncated = saved
            self.capturing -= 1
            self.call_depth -= 1
        outs = sorted({"".join(s.stdout) for s in finals})
        if truncated or not outs:
            return None
        if len(outs) > 1 and (self.same_output is None or len({repr(self.same_output(o)) for o in outs}) > 1):
            return None
        return outs[0].rstrip("\n")

    def exec_cmd(self, cmd: Cmd, state: State) -> list[State]:
        ex = Expander(state, self.substitute)
        words_raw = [w.raw for w in cmd.words]
        # assignments (before the command name, or the whole statement)
        temp_env = not words_raw or words_raw[0] in ("export", "local", "declare", "typeset", "readonly")
        for name, append, value in cmd.assigns:
            if isinstance(value, ArrayAssign):
                items: list[str] = []
                for w in value.items:
                    items.extend(ex.expand_word_list(w.raw))
                old = state.env.get(name)
                if append and old is not None:
                    base = old if isinstance(old, tuple) else (old,)
                    state.env[name] = tuple(base) + tuple(items)
                else:
                    state.env[name] = tuple(items)
                state.origins[name] = (" ".join(w.raw for w in value.items), value.line)
            else:
                text = ex.expand_text(value.raw, quoted=False)
                if append:
                    old = state.env.get(name)
                    if isinstance(old, tuple):
                        state.env[name] = (*old, text)
                    else:
                        state.env[name] = (old if old is not None else _placeholder(name)) + text
                else:
                    state.env[name] = text
                state.origins[name] = (value.raw, value.line)
            if not temp_env and words_raw:
                state.exported.add(name)
        self.visit(cmd, state, self)
        if not words_raw:
            return [state]
        head = ex.expand_text(words_raw[0], quoted=False)
        if self.capturing and head in ("echo", "printf") and not cmd.stdout_redirected:
            words: list[str] = []
            for raw in words_raw:
                words.extend(ex.expand_word_list(raw))
            out = ex._command(words) if words[1:] or head == "echo" else ""
            newline = head == "echo" and "-n" not in words[1:2]
            state.stdout = (*state.stdout, out + ("\n" if newline else ""))
            return [state]
        if head in ("export", "local", "declare", "typeset", "readonly"):
            for word in cmd.words[1:]:
                raw = word.raw
                if raw.startswith("-"):
                    continue
                m = _ASSIGN.match(raw)
                if m:
                    state.env[m.group(1)] = ex.expand_text(raw[m.end():], quoted=False)
                    state.origins[m.group(1)] = (raw[m.end():], word.line)
                    if head == "export" or "x" in "".join(words_raw[1:2]):
                        state.exported.add(m.group(1))
                elif _NAME.fullmatch(raw) and head == "export":
                    state.exported.add(raw)
            return [state]
        if head == "unset":
            for raw in words_raw[1:]:
                state.env.pop(raw, None)
            return [state]
        if head == ":" and len(words_raw) > 1:
            for raw in words_raw[1:]:
                ex.expand_text(raw, quoted=False)  # ${X:=default}
            return [state]
        if head in ("exit", "exec") or (head == "return" and self.call_depth == 0):
            if head != "exec" or not words_raw[1:]:
                state.done = True
            return [state]
        if head in self.functions and self.call_depth < 8:
            self.call_depth += 1
            try:
                return self.walk(self.functions[head], [state])
            finally:
                self.call_depth -= 1
        return [state]


_REFS = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def origin_of(raw: str, line: int, state: State, value: str | None) -> int:
    """The line where the literal of a pinned ``value`` is written, seen from the word ``raw``
    at ``line`` that uses it: ``line`` when the value is written there, else (following
    assignments back) the line of the one variable whose value holds it."""
    for _ in range(16):
        if not value or re.search(rf"(?<![\w.$]){re.escape(value)}(?![\w.])", raw):
            return line
        names = [n for n in dict.fromkeys(_REFS.findall(raw))
                 if isinstance(state.env.get(n), str) and value in harden(str(state.env[n]))]
        if len(names) != 1 or names[0] not in state.origins:
            return line
        raw, line = state.origins[names[0]]
    return line


def _prints(body: list[Node]) -> bool:
    """Whether a function body has an ``echo``/``printf`` whose output is not redirected."""
    return any(c.words and c.words[0].raw in ("echo", "printf") and not c.stdout_redirected for c in iter_cmds(body))


def _is_test(node: Node) -> bool:
    return isinstance(node, Cmd) and bool(node.words) and node.words[0].raw in ("[", "[[", "test")


def _only_tests(nodes: list[Node]) -> bool:
    return all(_is_test(n) or (isinstance(n, AndOr) and all(_is_test(i) or isinstance(i, AndOr) for i in n.items))
               for n in nodes)


def _test_words(cmd: Cmd, state: State) -> tuple[list[str], list[str]] | None:
    if not cmd.words or cmd.words[0].raw not in ("[", "[[", "test"):
        return None
    raw = [w.raw for w in cmd.words[1:]]
    if raw and raw[-1] in ("]", "]]"):
        raw = raw[:-1]
    ex = Expander(state)
    return [ex.expand_text(r, quoted=False) for r in raw], raw


def _cond_value(node: Node, state: State) -> bool | None:
    truth, _, _, _ = _decide([node], state)
    return truth


def _decide(cond: list[Node], state: State) -> tuple[bool | None, str, list[tuple[str, str]], list[tuple[str, str]]]:
    """Truth of an if-condition (last command decides), its text, and what it binds."""
    if not cond:
        return None, "?", [], []
    node = cond[-1]
    if isinstance(node, AndOr) and all(op in ("&&", "||") for op in node.ops):
        vals = [_decide([i], state) for i in node.items]
        texts = [v[1] for v in vals]
        text = ""
        for i, v in enumerate(vals):
            text += (f" {node.ops[i - 1]} " if i else "") + v[1]
        # left-to-right evaluation of a && b || c
        acc = vals[0][0]
        for op, v in zip(node.ops, vals[1:], strict=False):
            if op == "&&":
                acc = False if acc is False or v[0] is False else (True if acc is True and v[0] is True else None)
            else:
                acc = True if acc is True or v[0] is True else (False if acc is False and v[0] is False else None)
        bind_true = vals[0][2] if all(op == "&&" for op in node.ops) else []
        if all(op == "&&" for op in node.ops):
            bind_true = [b for v in vals for b in v[2]]
        return acc, text or " ".join(texts), bind_true, []
    if isinstance(node, Cmd):
        negate = False
        cmd = node
        if cmd.words and cmd.words[0].raw == "!":
            negate = True
            cmd = Cmd(cmd.assigns, cmd.words[1:], cmd.heredocs, cmd.line)
        tw = _test_words(cmd, state)
        if tw is None:
            text = " ".join(show(Expander(state).expand_text(w.raw, quoted=False)) for w in cmd.words)[:80]
            return None, ("! " if negate else "") + text, [], []
        words, raw = tw
        truth = _test(words)
        text = " ".join(show(w) for w in words)
        if negate:
            truth = None if truth is None else not truth
            return truth, f"! {text}", _refinements(words, raw, False), _refinements(words, raw, True)
        return truth, text, _refinements(words, raw, True), _refinements(words, raw, False)
    if isinstance(node, Group):
        return _decide(node.body, state)
    return None, "?", [], []


def _is_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def _feasible(parts: list[tuple[str, str]], state: State) -> bool:
    """Whether a ``case`` arm can match, given the subject's parts whose values are known."""
    for name, piece in parts:
        v = state.env.get(name)
        if isinstance(v, str) and not has_unknown(v) and not is_soft(v) and not fnmatch.fnmatchcase(v, piece):
            return False
    return True


def _case_parts(subject_raw: str, patterns: list[str]) -> list[tuple[str, str]]:
    """``case "${A}:${B}" in *x*:1)`` -> ``[("A", "*x*"), ("B", "1")]`` (what the one pattern says of each part)."""
    if len(patterns) != 1:
        return []
    subj = subject_raw.strip('"')
    parts = re.split(r"(\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*)", subj)
    seps = [p for i, p in enumerate(parts) if i % 2 == 0]
    names = [re.sub(r"[${}]", "", p) for i, p in enumerate(parts) if i % 2 == 1]
    if not names or any(not s for s in seps[1:-1]):
        return []
    pat = patterns[0]
    if seps[0] and not pat.startswith(seps[0]):
        return []
    body = pat[len(seps[0]):] if seps[0] else pat
    if seps[-1]:
        if not body.endswith(seps[-1]):
            return []
        body = body[: len(body) - len(seps[-1])]
    pieces = [body]
    for sep in seps[1:-1]:
        last = pieces.pop()
        if sep not in last:
            return []
        a, b = last.split(sep, 1)
        pieces += [a, b]
    if len(pieces) != len(names):
        return []
    return [(name, piece) for name, piece in zip(names, pieces, strict=False) if piece and piece != "*"]



