"""Fuzz ``check``'s readers: random and truncated scripts, YAML and JSON never crash."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golden_al.checks.static import check_paths, evaluate
from golden_al.checks.yaml_configs import YamlError, extract_json_pins, extract_yaml_pins
from golden_al.golden import load_store
from golden_al.knobs.scripts import extract_shell_pins
from golden_al.shell import ShellSyntaxError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "check"
TREE_FILES = sorted(p for p in (FIX / "tree").rglob("*") if p.is_file())
STORE = load_store(FIX / "golden")
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])

SHELL_BITS = st.sampled_from([
    "if [ \"$CONC\" -le 8 ]; then", "elif [ -n \"$X\" ]; then", "else", "fi", "case \"$A:$B\" in", "*x*:1) K=1 ;;",
    "esac", "for i in 1 2; do", "done", "while true; do", "f() {", "}", "f", "export SGLANG_SIMULATE_ACC_LEN=2.49",
    "export SGLANG_SIMULATE_ACC_METHOD=match-expected", "SPEC='{\"num_speculative_tokens\": $K, "
    "\"rejection_sample_method\": \"synthetic\", \"synthetic_acceptance_length\": 2.5}'", "K=3",
    "--speculative-num-steps \"$K\" \\", "python -m sglang.launch_server --speculative-algorithm EAGLE",
    "ARGS=(--num-speculative-tokens 3", ")", "ARGS+=(--spec-decode-acceptance-length 2.49)", "cat <<EOF",
    "max_draft_len: 3", "EOF", "X=$(printf '%s' \"$(awk \"BEGIN{print 1/3}\")\")", "echo \"${A:-${B:-c}}\"",
    "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.5 trtllm-serve m", "exit 1", "$((1/0))", "\"unterminated",
    "'single", "${", "$(", "`", "((", "[[ $A == b* ]] && B=1 || B=2", "{ set +x; } 2>/dev/null",
])


@FUZZ
@given(st.lists(SHELL_BITS, max_size=25))
def test_shell_soup(bits: list[str]) -> None:
    try:
        pins, _ = extract_shell_pins("\n".join(bits) + "\n", "agentic/x_fp8_h100_mtp.sh")
    except ShellSyntaxError:  # check reports it as `unreadable` (tests/unit/test_check_bash.py)
        return
    for pin in pins:
        evaluate(pin, STORE)


@FUZZ
@given(st.text(max_size=300))
def test_random_shell_text(text: str) -> None:
    try:
        pins = extract_shell_pins(text, "s.sh")[0]
    except ShellSyntaxError:
        return
    for pin in pins:
        evaluate(pin, STORE)


@FUZZ
@given(path=st.sampled_from(TREE_FILES), cut=st.floats(0, 1), junk=st.text(max_size=20))
def test_truncated_fixture_files(tmp_path_factory, path: Path, cut: float, junk: str) -> None:
    text = path.read_text()
    n = int(len(text) * cut)
    out = tmp_path_factory.mktemp("t") / path.name
    out.write_text(text[:n] + junk)
    report = check_paths([out], store=STORE)  # never raises for a file that exists
    assert all(f.verdict for f in report.findings)


@FUZZ
@given(st.text(max_size=300))
def test_random_yaml_and_json(text: str) -> None:
    for fn in (lambda t: extract_yaml_pins(t, "r.yaml", load_recipe=lambda p: None, roots=[]),
               lambda t: extract_json_pins(t, "r.json")):
        try:
            for pin in fn(text):
                evaluate(pin, STORE)
        except YamlError:
            pass


VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 20), st.floats(allow_nan=True), st.text(max_size=6),
                   st.lists(st.floats(0, 1), max_size=4))


@FUZZ
@given(env=st.dictionaries(st.sampled_from(["SGLANG_SIMULATE_ACC_LEN", "SIMULATE_ACC_LEN", "SGLANG_SIMULATE_ACC_METHOD",
                                            "SGLANG_SIMULATE_ACC_TOKEN_MODE", "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",
                                            "SGLANG_DEFAULT_THINKING"]), VALUES, max_size=5),
       spec=st.dictionaries(st.sampled_from(["speculative-algorithm", "speculative-num-steps", "speculative-eagle-topk",
                                             "speculative-num-draft-tokens", "speculative_config", "speculative-config"]),
                            VALUES, max_size=4),
       btype=st.sampled_from(["sglang", "vllm", "trtllm", "x", None]))
def test_random_recipes(env, spec, btype) -> None:
    import yaml

    doc = {"model": {"path": "deepseek-ai/DeepSeek-V4-Pro"},
           "backend": {"type": btype, "decode_environment": env, f"{btype}_config": {"decode": spec}}}
    text = yaml.safe_dump(doc)
    for pin in extract_yaml_pins(text, "agentic/r.yaml", load_recipe=lambda p: None, roots=[]):
        evaluate(pin, STORE)
