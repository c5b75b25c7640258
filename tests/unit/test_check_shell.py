"""The static bash reader: tokens, expansion, branches, here-documents (nothing is executed)."""

from __future__ import annotations

import pytest

from golden_al.checks.shell import (
    Cmd,
    State,
    Walker,
    expand_word,
    harden,
    has_unknown,
    iter_cmds,
    parse_script,
    safe_arith,
    show,
    tokenize,
)


def _run(script: str, names: list[str], assume: dict[str, str] | None = None):
    """(line, conds, {name: value}) at every command that assigns one of ``names``."""
    seen = []

    def visit(cmd: Cmd, state: State, _w: Walker) -> None:
        if any(n in names for n, _, _ in cmd.assigns):
            seen.append((cmd.line, state.conds, {n: state.env.get(n) for n in names}))

    Walker(parse_script(script), visit, assume=assume).run()
    return seen


@pytest.mark.parametrize(("word", "env", "expected"), [
    ('"$A"', {"A": "x y"}, "x y"),
    ("'$A'", {"A": "x"}, "$A"),
    ('"${A:-d}"', {"A": "set"}, "set"),
    ('"${N}"', {"N": "3"}, "3"),
    ("$((N + 1))", {"N": "3"}, "4"),
    ("$((N * (N + 1)))", {"N": "3"}, "12"),
    ('$(printf "%s-%d-%.2f" a 3 2.5)', {}, "a-3-2.50"),
    ('$(awk "BEGIN{print (2.99-1)/3}")', {}, "0.663333"),
    ("${P##*/}", {"P": "org/dir/Model-X"}, "Model-X"),
    ("${P%/*}", {"P": "org/dir/Model-X"}, "org/dir"),
    ('"{\\"k\\": $N}"', {"N": "2"}, '{"k": 2}'),
    ("$(dirname /a/b/c)", {}, "/a/b"),
])
def test_expansion(word: str, env: dict[str, str], expected: str) -> None:
    assert harden(expand_word(word, State(env=dict(env)))) == expected


def test_unknown_and_default_values() -> None:
    s = State()
    assert has_unknown(expand_word("$CONC", s))
    assert show(expand_word("$CONC", s)) == "$CONC"
    soft = expand_word('"${SPEC:-none}"', s)
    assert harden(soft) == "none"
    assert show(soft) == "${SPEC:-none}"
    assert has_unknown(expand_word("$(curl http://x)", s))  # never run


def test_safe_arith_refuses_anything_else() -> None:
    assert safe_arith("2*(3+4)") == 14
    assert safe_arith("__import__('os')") is None
    assert safe_arith("1/0") is None


def test_tokenize_heredoc_arrays_and_continuations() -> None:
    script = ("A=(\n  --x 1   # comment\n  --y \"two words\"\n)\ncat <<EOF > f.yaml\nmax_draft_len: 3\nEOF\n"
              "cmd --flag \\\n  value\n")
    nodes = parse_script(script)
    cmds = list(iter_cmds(nodes))
    arr = cmds[0].assigns[0][2]
    assert [w.raw for w in arr.items] == ["--x", "1", "--y", '"two words"']  # type: ignore[union-attr]
    assert cmds[1].heredocs
    assert "max_draft_len: 3" in cmds[1].heredocs[0].body
    assert [w.raw for w in cmds[2].words] == ["cmd", "--flag", "value"]
    assert cmds[2].line == 8
    assert all(t.kind != "word" or "#" not in t.text for t in tokenize(script))


def test_if_elif_forks_and_decides() -> None:
    script = """
if [ "$CONC" -le 8 ]; then
    K=7; AL=3.84
elif [ "$CONC" -le 16 ]; then
    K=3; AL=3.00
else
    K=0
fi
if [ "$K" -gt 0 ]; then
    OUT="$K:$AL"
fi
"""
    seen = _run(script, ["OUT"])
    outs = sorted(v["OUT"] for _, _, v in seen)
    assert outs == ["3:3.00", "7:3.84"]  # the K=0 path is decided false and never sets OUT


def test_eval_only_assumption_and_exit() -> None:
    script = """
if [ "${SPEC:-none}" != "mtp" ]; then
    echo error; exit 1
fi
if [ "${EVAL_ONLY:-false}" = "true" ]; then
    X=eval
else
    X=throughput
fi
"""
    seen = _run(script, ["X"], assume={"EVAL_ONLY": "false"})
    assert [v["X"] for _, _, v in seen] == ["throughput"]
    (_line, conds, _), = seen
    assert any("SPEC" in c for c in conds)  # the path that did not exit assumed SPEC == mtp


def test_case_binds_variables_from_patterns() -> None:
    script = """
case "${MODEL_NAME}:${MTP}" in
    *DeepSeek*:1) AL=1.79 ;;
    *DeepSeek*:3) AL=2.49 ;;
esac
R="$MTP=$AL"
"""
    seen = _run(script, ["R"])
    assert sorted(v["R"] for _, _, v in seen if v["R"] and not has_unknown(v["R"])) == ["1=1.79", "3=2.49"]


def test_functions_run_where_called() -> None:
    script = """
setup() {
    K=5
}
setup
R=$K
"""
    seen = _run(script, ["R"])
    assert [v["R"] for _, _, v in seen] == ["5"]


def test_and_or_conditions() -> None:
    script = '[ "$A" = "1" ] && B=yes\nR="${B:-no}"\n'
    seen = _run(script, ["R"])
    assert sorted({harden(v["R"]) for _, _, v in seen}) == ["no", "yes"]  # both paths
