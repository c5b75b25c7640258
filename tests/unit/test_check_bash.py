"""The static bash reader (``golden_al.shell``): parsing, expansion, branches, here-documents,
value and use lines, case arms as path conditions, parse errors (nothing is executed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from golden_al.checks.static import check_paths
from golden_al.engines import sglang
from golden_al.golden import load_store
from golden_al.plugin.pins import DraftInfo
from golden_al.plugin.spec import settings_draft_any_algorithm
from golden_al.shell import (
    MAX_NESTING,
    Cmd,
    ShellSyntaxError,
    State,
    Walker,
    expand_word,
    harden,
    has_unknown,
    iter_cmds,
    parse_script,
    safe_arith,
    show,
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


def test_parse_heredoc_arrays_and_continuations() -> None:
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
    assert all("#" not in w.raw for c in cmds for w in c.words)  # comments are not words


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


# ------------------------------------------------ issue 12: tree-sitter, value lines, case arms

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "check"
COMPANIONS = ("export SGLANG_SIMULATE_ACC_METHOD=match-expected\n"
              "export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token\n")


def _findings(tmp_path: Path, text: str, name: str = "agentic/run.sh", golden: Path | None = None) -> list[dict]:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    report = check_paths([p], store=load_store(golden or FIX / "golden"))
    return [f.to_dict() for f in report.findings]


def test_line_is_where_the_value_is_written_use_line_where_it_reaches_the_engine(tmp_path) -> None:
    script = ("#!/bin/bash\nACC=2.49\nK=3\nAL=$ACC\n"            # the literal sits on line 2
              "export SGLANG_SIMULATE_ACC_LEN=$AL\n" + COMPANIONS +  # ... and reaches SGLang on line 5
              "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Pro --speculative-algorithm EAGLE "
              "--speculative-num-steps $K --speculative-eagle-topk 1 --speculative-num-draft-tokens 4\n")
    (f,) = _findings(tmp_path, script)
    assert (f["line"], f["use_line"], f["verdict"]) == (2, 5, "match"), f["message"]
    assert list(f)[:3] == ["file", "line", "use_line"]
    assert "written at line 2 and reaches the engine at line 5" in f["message"]
    inline = script.replace("ACC=2.49\n", "ACC=unused\n").replace("SGLANG_SIMULATE_ACC_LEN=$AL", "SGLANG_SIMULATE_ACC_LEN=2.49")
    (g,) = _findings(tmp_path, inline)
    assert (g["line"], g["use_line"]) == (5, 5)  # written where it is used: both the same


def test_value_line_through_printf_and_a_string_prefix(tmp_path) -> None:
    vllm = ("#!/bin/bash\nAL=2.78\nK=3\n"
            "SPEC=$(printf '{\"method\":\"eagle3\",\"model\":\"Inferact/MiniMax-M3-EAGLE3-GQA\",\"num_speculative_tokens\""
            ":%s,\"rejection_sample_method\":\"synthetic\",\"synthetic_acceptance_length\":%s}' \"$K\" \"$AL\")\n"
            "vllm serve nvidia/MiniMax-M3-NVFP4 --speculative-config \"$SPEC\"\n")
    (f,) = _findings(tmp_path, vllm, "agentic/v.sh")
    assert (f["line"], f["use_line"], f["verdict"]) == (2, 4, "match"), f["message"]
    prefix = ("#!/bin/bash\nGOLDEN=2.27\nSIM=\"SGLANG_SIMULATE_ACC_LEN=${GOLDEN} SGLANG_SIMULATE_ACC_METHOD=match-expected "
              "SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token\"\n"
              "CMD=\"$SIM python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V4-Pro "
              "--speculative-algorithm EAGLE --speculative-num-steps 2 --speculative-num-draft-tokens 3\"\n")
    (g,) = _findings(tmp_path, prefix)
    assert (g["line"], g["use_line"], g["verdict"]) == (2, 3, "match"), g["message"]


CASE_ARMS = """#!/bin/bash
MODEL_NAME="${MODEL_NAME:-}"
DECODE_MTP_SIZE="${DECODE_MTP_SIZE:-0}"
build_flags() {
    local mode="$1"
    local mtp="$2"
    local out="--tp-size 8"
    if [[ "$ENABLE_EP" == "true" ]]; then
        out="$out --ep-size 8"
    fi
    if [ "$mtp" -gt 0 ]; then
        out="$out ${MODEL_MTP_FLAGS} --speculative-num-steps ${mtp} --speculative-num-draft-tokens $((mtp + 1))"
    fi
    echo "warning" >&2
    echo "$out"
}
CONFIG=$(build_flags decode "$DECODE_MTP_SIZE")
SIM=""
AL=""
case "${MODEL_NAME}:${DECODE_MTP_SIZE}" in
    *DeepSeek-V4*:1) AL=1.79 ;;
    *DeepSeek-V4*:3) AL=2.49 ;;
esac
if [[ -n "$AL" ]]; then
    SIM="SGLANG_SIMULATE_ACC_LEN=${AL} SGLANG_SIMULATE_ACC_METHOD=match-expected SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token"
fi
CMD="${SIM} python3 -m sglang.launch_server --model-path ${MODEL_DIR}/${MODEL_NAME} ${CONFIG}"
bash -c "$CMD"
"""


def test_case_arms_are_path_conditions_for_model_and_k(tmp_path) -> None:
    found = sorted(_findings(tmp_path, CASE_ARMS), key=lambda f: f["line"])
    assert [(f["line"], f["use_line"], f["draft_len"], f["model"], f["verdict"]) for f in found] == [
        (21, 25, 1, "deepseek-v4-pro", "match"), (22, 25, 3, "deepseek-v4-pro", "match")], [f["message"] for f in found]
    assert "DECODE_MTP_SIZE = 1 (the case arm at line 21)" in found[0]["message"]
    assert "every --speculative-algorithm reads k=1" in found[0]["message"]  # the algorithm is in $MODEL_MTP_FLAGS


def test_a_case_glob_that_fits_two_models_is_undetermined_and_says_why(tmp_path) -> None:
    golden = tmp_path / "golden"
    shutil.copytree(FIX / "golden", golden)
    (golden / "dsv4_0813.yaml").write_text(
        "schema_version: 1\nmodel: deepseek-v4-pro-0813\ndraft:\n  method: dspark\n"
        "thinking_on:\n  points:\n    1: {al: 1.84}\n    3: {al: 3.01}\nprovenance:\n  notes: test\n")
    found = sorted(_findings(tmp_path, CASE_ARMS, golden=golden), key=lambda f: f["line"])
    assert [(f["draft_len"], f["verdict"]) for f in found] == [(1, "undetermined"), (3, "undetermined")]
    assert "deepseek-v4-pro: match, golden 1.79; deepseek-v4-pro-0813: mismatch, golden 1.84" in found[0]["message"]


def test_an_arm_that_a_known_value_cannot_match_is_not_walked() -> None:
    script = 'K=2\ncase "$M:$K" in\n  *x*:1) R=one ;;\n  *x*:2) R=two ;;\nesac\nOUT=$R\n'
    seen = _run(script, ["OUT"])
    assert sorted({harden(v["OUT"]) for _, _, v in seen if v["OUT"] and not has_unknown(v["OUT"])}) == ["two"]


def test_function_output_in_a_command_substitution() -> None:
    script = 'f() {\n  local n="$1"\n  echo "--speculative-num-steps $n" >&2\n  printf -- "--k %s" "$n"\n}\nX=$(f 3)\n'
    seen = _run(script, ["X"])
    assert [v["X"] for _, _, v in seen] == ["--k 3"]


def _hidden(flags: dict[str, str]) -> DraftInfo:
    spec = sglang.read_recipe_role(flags)
    assert spec is not None
    return settings_draft_any_algorithm(sglang.PROFILE.name, spec, "flags", "$F")


def test_hidden_algorithm_rule() -> None:
    ok = _hidden({"speculative-num-steps": "2", "speculative-num-draft-tokens": "3"})
    assert ok.k == 2
    tree = _hidden({"speculative-num-steps": "2", "speculative-num-draft-tokens": "8"})
    assert tree.k is None
    assert "different k by algorithm" in (tree.problem or "")


@pytest.mark.parametrize(("script", "line"), [
    ("A=1\nif [ \"$A\" = 1 ]; then\n  B=2\n", 2),        # no fi
    ("A=1\nB=$(echo\nC=3\n", 2),                          # unterminated $(
    ("A=1\ncase $A in\n  1) B=2\n", 2),                   # no esac
])
def test_parse_errors_raise_with_their_line(script: str, line: int) -> None:
    with pytest.raises(ShellSyntaxError) as err:
        parse_script(script)
    assert 1 <= err.value.line <= line + 2


def test_nesting_is_bounded() -> None:
    deep = "{ " * (MAX_NESTING + 5) + "A=1; " + "}; " * (MAX_NESTING + 5) + "\n"
    with pytest.raises(ShellSyntaxError, match="nested more than"):
        parse_script(deep)
    parse_script("{ " * 10 + "A=1; " + "}; " * 10 + "\n")  # ordinary nesting is fine


def test_a_script_that_does_not_parse_is_unreadable_with_its_pins(tmp_path) -> None:
    broken = "#!/bin/bash\nexport SGLANG_SIMULATE_ACC_LEN=2.49\nif [ \"$X\" = 1 ]; then\n  echo\n"
    found = _findings(tmp_path, broken)
    assert {f["verdict"] for f in found} == {"unreadable"}
    head = next(f for f in found if f["engine"] == "unknown")
    assert head["line"] >= 3
    assert "bash syntax error" in head["message"]
    pin = next(f for f in found if f["engine"] == "sglang")
    assert (pin["line"], pin["pinned_value"]) == (2, "2.49")  # the text scan still names the pinned value


def test_parse_time_is_bounded(monkeypatch) -> None:
    import golden_al.shell.parse as parse

    monkeypatch.setattr(parse, "MAX_PARSE_SECONDS", 0.0)
    with pytest.raises(ShellSyntaxError, match="did not finish parsing"):
        parse_script("A=1\n" * 200_000)
    monkeypatch.setattr(parse, "MAX_PARSE_SECONDS", 5.0)
    (cmd,) = parse_script("B=2\n")  # the cancelled parse left nothing behind
    assert isinstance(cmd, Cmd)
    assert cmd.assigns[0][0] == "B"


def test_test_words_and_heredoc_arguments() -> None:
    script = ('[[ " $MODES " == *" on "* || -n $X ]]\n'
              "python3 - <<'PY' \"$ARG\"\nprint(1)\nPY\n")
    test, py = iter_cmds(parse_script(script))
    assert [w.raw for w in test.words] == ["[[", '" $MODES "', "==", '*" on "*', "||", "-n", "$X", "]]"]
    assert py.words[-1].raw == '"$ARG"'
    assert py.heredocs[0].body == "print(1)"
    assert not py.heredocs[0].expand
    seen = _run('MODES="off on"\nif [[ " $MODES " == *" on "* ]]; then R=yes; else R=no; fi\nOUT=$R\n', ["OUT"])
    assert [v["OUT"] for _, _, v in seen] == ["yes"]


@pytest.mark.parametrize(("cond", "expected"), [
    ('[[ "$A" = 1 && ( "$B" = x || "$B" = 2 ) ]]', "yes"),
    ('[[ ( "$A" = 1 || "$B" = x ) && "$B" = 3 ]]', "no"),
    ('[ "$A" = 0 -o "$B" = 2 ]', "yes"),
])
def test_and_or_inside_a_test_respect_parentheses(cond: str, expected: str) -> None:
    seen = _run(f"A=1\nB=2\nif {cond}; then R=yes; else R=no; fi\nOUT=$R\n", ["OUT"])
    assert [v["OUT"] for _, _, v in seen] == [expected]
