"""The census of ``golden-al check``: every knob occurrence, in every form a consumer decodes, ends as a
finding; the gate passes only what it proves.

* hostile forms (issues 22, 38, 51) as unit tests: escaped YAML/JSON keys, quoted shell exports, names
  assembled from parts or variables, dynamic exports, brace expansion, ``env -S"..."``, a ``for`` variable
  exported after its loop; ``_forms`` is the corpus of every form, one pin each;
* a property test: a pin written in any form the census knows (generated) is found, and the check
  does not pass;
* the shortcut lemma (:func:`golden_al.knobs.census.may_hold_knob`) against the full census;
* run-time draft-length settings beside a pin are ``unsafe-value``;
* an engine added to the registry is covered without a line changed in ``golden_al/checks/``.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.golden import load_store
from golden_al.knobs import census

pytestmark = pytest.mark.hostile

GOLDEN = str(Path(__file__).resolve().parents[1] / "fixtures" / "check" / "golden")
SGL = "SGLANG_SIMULATE_ACC_LEN"


def _check(tmp_path: Path, name: str, text: str) -> list:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    report = check_paths([path], store=load_store(GOLDEN))
    return report.findings


# ------------------------------------------------------------------------------ hostile forms

@pytest.mark.parametrize(("name", "text"), [
    ("a.yaml", '"SGLANG_SIMULATE_ACC_\\x4cEN": "2.22"\n'),
    ("b.yaml", 'env:\n  "\\u0053GLANG_SIMULATE_ACC_LEN": "2.22"\n'),
    ("c.json", '{"env": {"SGLANG_SIMULATE_ACC_\\u004cEN": "2.22"}}\n'),
    ("d.yaml", "cfg:\n  speculative-config: '{\"rejection_sample_method\": \"synthetic\", "
               "\"synthetic_acceptance_l\\u0065ngth\": 2.2, \"num_speculative_tokens\": 3}'\n"),
    ("e.sh", 'export "SGLANG_SIMULATE_ACC_LEN"="2.22"\npython -m sglang.launch_server\n'),
    ("f.sh", "export 'SGLANG_SIMULATE_ACC_LEN=2.22'\npython -m sglang.launch_server\n"),
    ("g.sh", "A=SGLANG_SIMULATE_ACC\nexport ${A}_LEN=2.22\n"),
    ("h.sh", "export ${PREFIX}_ACC_LEN=2.22\n"),
    ("i.sh", "X=$'\\x53GLANG_SIMULATE_ACC_LEN=2.22'\nexport \"$X\"\n"),
    ("j.sh", 'for kv in "$@"; do export "$kv"; done\n'),
    ("k.sh", 'SGLANG_SIMULATE_"ACC"_LEN=2.22 python -m sglang.launch_server\n'),
    ("l.yaml", 'command: ["sh", "-c", "export SGLANG_SIMULATE_ACC_\'LEN\'=2.22; exec server"]\n'),
    ("m.sh", "cat > cfg.json <<'EOF'\n{\"synthetic_acceptance_l\\u0065ngth\": 2.2}\nEOF\n"),
    ("n.sh", "vllm serve m --speculative-config \"{\\\"rejection_sample_method\\\": \\\"synthetic\\\"}\"\n"),
    # issue 38: a name assigned by a builtin, then exported; a name quoted in parts inside the name
    ("o.sh", "printf -v SGLANG_SIMULATE_ACC_LEN '%s' 2.22\nexport SGLANG_SIMULATE_ACC_LEN\n"),
    ("p.sh", "read -r SGLANG_SIMULATE_ACC_LEN <<< 2.22\nexport SGLANG_SIMULATE_ACC_LEN\n"),
    ("q.sh", 'export SGLANG_SIMU"LATE_ACC_LEN"=2.22\n'),
    ("r.sh", 'typeset -x SGLANG_SIM"ULATE_ACC_"LEN\nSGLANG_SIMULATE_ACC_LEN=2.22\n'),
    ("s.sh", "mapfile -t SGLANG_SIMULATE_ACC_LEN <<< 2.22\nexport SGLANG_SIMULATE_ACC_LEN\n"),
    # issue 51 item 6: brace expansion in the name, env -S with its string attached, a for loop's variable exported
    ("t.sh", "export SGLANG_SIMULATE_ACC_{LEN,METHOD}=2.22\n"),
    ("u.sh", "export SGLANG_SIMU{LATE_ACC_LEN,X}=2.22\n"),
    ("v.sh", 'env -S"SGLANG_SIMULATE_ACC_LEN=2.22 python -m sglang.launch_server"\n'),
    ("w.sh", "/usr/bin/env -S'SGLANG_SIMULATE_ACC_LEN=2.22' python -m sglang.launch_server\n"),
    ("x.sh", "for SGLANG_SIMULATE_ACC_LEN in 2.22; do :; done\nexport SGLANG_SIMULATE_ACC_LEN\n"),
])
def test_hostile_forms_are_found_and_fail(tmp_path: Path, name: str, text: str) -> None:
    findings = _check(tmp_path, name, text)
    assert findings, "a pin passed as 'no pinned value'"
    assert any(f.verdict != "match" for f in findings)


def test_hostile_forms_through_the_cli_exit_1(tmp_path: Path, capsys) -> None:
    (tmp_path / "run.sh").write_text("export 'SGLANG_SIMULATE_ACC_LEN=2.22'\n")
    assert main(["check", str(tmp_path), "--golden-dir", GOLDEN]) == 1
    out = capsys.readouterr().out
    assert "run.sh:1:" in out


@pytest.mark.parametrize("text", [
    "export SGLANG_SIMULATE_ACC_LEN\n",                                  # set by the caller, exported here
    "printf -v SGLANG_SIMULATE_ACC_LEN %s 2.2\nexport SGLANG_SIMULATE_ACC_LEN\n",
])
def test_a_name_exported_without_a_value_in_the_file_needs_a_pin(text: str) -> None:
    last = text.count("\n")
    sites = [o for o in census.iter_pin_sites(census.census_shell(text)) if o.line == last]
    assert sites
    assert sites[0].term.spelling == SGL


def test_a_bare_export_of_a_name_the_file_assigns_is_a_copy() -> None:
    occ = census.census_shell("SGLANG_SIMULATE_ACC_LEN=2.2\nexport SGLANG_SIMULATE_ACC_LEN\n")
    assert [o.line for o in census.iter_pin_sites(occ)] == [1]


@pytest.mark.parametrize(("text", "inert"), [
    ('echo "SGLANG_SIMULATE_ACC_LEN=$X"\n', True),           # to the terminal
    ('echo "SGLANG_SIMULATE_ACC_LEN=2" >&2\n', True),
    ('echo "SGLANG_SIMULATE_ACC_LEN=2" >> env.sh\n', False),  # written to a file
    ('echo "SGLANG_SIMULATE_ACC_LEN=2" | sh\n', False),       # piped into a shell
    ('X=$(echo "SGLANG_SIMULATE_ACC_LEN=2")\n', False),       # captured
    ("sed -i '/TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS/d' r.yaml\n", True),
    ("sed -i 's/x/TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: 2/' r.yaml\n", False),
    ("SIMULATE_ACC_LEN=2.99\n", True),                        # a shell variable never exported
    ("SIMULATE_ACC_LEN=2.99\nexport SIMULATE_ACC_LEN\n", False),
    ("set -a\nSIMULATE_ACC_LEN=2.99\n", False),
    ("printf -v SIMULATE_ACC_LEN %s 2.99\n", False),        # printf -v assigns, it prints nothing
    ("printf 'SIMULATE_ACC_LEN=%s' 2.99\n", True),
    ('declare SIMU"LATE_ACC_LEN"=2.99\n', True),             # declared, never exported
    ('declare -x SIMU"LATE_ACC_LEN"=2.99\n', False),
])
def test_only_provably_inert_shell_uses_are_left_alone(text: str, inert: bool) -> None:
    occ = [o for o in census.census_shell(text) if o.term.role == "value" and not o.derived]
    assert occ
    assert all((o.inert is not None) == inert for o in occ), [(o.line, o.inert) for o in occ]


# ------------------------------------------------------------------------------ property test

_VALUE_SPELLINGS = sorted({t.spelling for t in census.vocabulary()
                           if t.role == "value" and t.engine != census.HARNESS and not t.flag})
_FLAGS = sorted({t.spelling for t in census.vocabulary() if t.role == "value" and t.flag
                 and t.spelling.startswith("--")})


def _yaml_escape(name: str, picks: list[int]) -> str:
    return "".join(f"\\x{ord(c):02x}" if i in picks else c for i, c in enumerate(name))


def _json_escape(name: str, picks: list[int]) -> str:
    return "".join(f"\\u{ord(c):04x}" if i in picks else c for i, c in enumerate(name))


def _shell_split(name: str, picks: list[int]) -> str:
    """The name with some characters quoted (bash joins the pieces)."""
    return "".join(f"'{c}'" if i in picks else c for i, c in enumerate(name))


def _forms(name: str, value: str, picks: list[int]) -> list[tuple[str, str]]:
    """(file name, text) for a pin of ``name`` = ``value`` written in each form the census knows."""
    cut = max(1, min(len(name) - 1, len(picks) + 3))
    head, tail = name[:cut], name[cut:]
    return [
        ("p.yaml", f"{name}: \"{value}\"\n"),
        ("p.yaml", f"\"{_yaml_escape(name, picks)}\": \"{value}\"\n"),
        ("p.yaml", f"env:\n  - name: {name}\n    value: \"{value}\"\n"),
        ("p.yaml", f"environment:\n  - {name}={value}\n"),
        ("p.yaml", f"command: [\"sh\", \"-c\", \"export {_shell_split(name, picks)}={value}; exec srv\"]\n"),
        ("p.json", json.dumps({"env": {"K": "x"}}).replace('"K"', f'"{_json_escape(name, picks)}"')
         .replace('"x"', f'"{value}"') + "\n"),
        ("p.json", json.dumps({"cfg": json.dumps({name: value})}) + "\n"),
        ("p.sh", f"export {name}={value}\n"),
        ("p.sh", f"export \"{name}\"=\"{value}\"\n"),
        ("p.sh", f"export '{name}={value}'\n"),
        ("p.sh", f"{_shell_split(name, picks)}={value} exec server\n"),
        ("p.sh", f"A={head}\nexport ${{A}}{tail}={value}\n"),
        ("p.sh", f"P={name}={value}\nenv \"$P\" server\n"),
        ("p.sh", f"cat > c.json <<'EOF'\n{{\"{_json_escape(name, picks)}\": {value}}}\nEOF\n"),
        ("p.sh", f"export {head}{{{tail},OTHER}}={value}\n"),
        ("p.sh", f"env -S'{name}={value} server'\n"),
        ("p.sh", f"for {name} in {value}; do :; done\nexport {name}\n" if name.isidentifier() else
         f"for kv in {name}={value}; do export \"$kv\"; done\n"),
        # Python launchers (PY_FORMS: indices from here on)
        ("p.py", f"import os\nos.environ[\"{_yaml_escape(name, picks)}\"] = \"{value}\"\n"),
        ("p.py", f"import os\nenv = {{**os.environ, \"{head}\" \"{tail}\": \"{value}\"}}\n"),
        ("p.py", f"import os\nkey = (\"{head}\"\n       + \"{tail}\")\nos.environ[key] = \"{value}\"\n"),
        ("p.py", f"import os\nos.environ[f\"{{prefix}}{tail}\"] = \"{value}\"\n"),
        ("p.py", f"import os\nos.environ[\"\".join([\"{head}\", \"{tail}\"])] = \"{value}\"\n"),
        ("p.py", f"import subprocess\nsubprocess.run(\"export {_shell_split(name, picks)}={value}; exec srv\", "
                 "shell=True)\n"),
        ("p.py", f"import os\nos.environ[\"%s{tail}\" % prefix] = \"{value}\"\n"),
    ]


PY_FORMS = 17  #: the index of the first Python form in _forms


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(name=st.sampled_from(_VALUE_SPELLINGS), value=st.sampled_from(["2.22", "3.5", "1.75"]),
       picks=st.lists(st.integers(min_value=0, max_value=12), max_size=3, unique=True),
       form=st.integers(min_value=0, max_value=PY_FORMS + 6))
def test_a_pin_in_any_form_is_found(tmp_path: Path, name: str, value: str, picks: list[int], form: int) -> None:
    file, text = _forms(name, value, picks)[form]
    folder = tmp_path / f"f{abs(hash((name, value, tuple(picks), form))) % 10**8}"
    findings = _check(folder, file, text)
    assert findings, f"not found: {text!r}"
    assert any(f.verdict != "match" for f in findings)  # no model, no k: never a pass
    assert any(f.line >= 1 for f in findings)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(name=st.sampled_from(_VALUE_SPELLINGS + _FLAGS),
       picks=st.lists(st.integers(min_value=0, max_value=12), max_size=3, unique=True),
       form=st.integers(min_value=0, max_value=6),
       noise=st.sampled_from(["", "# comment\n", "other: 'quoted'\n", "x: \"a\\tb\"\n"]))
def test_the_shortcut_lemma_never_skips_a_knob_the_census_finds(name: str, picks: list[int], form: int,
                                                                 noise: str) -> None:
    """``may_hold_knob`` says False only for texts in which the full census finds nothing."""
    from golden_al import safeio

    file, text = _forms(name, "2.5", picks)[form]
    text = noise + text
    if file.endswith(".json"):
        found = census.census_json(text)
    else:
        found = [o for _, node in safeio.load_yaml_documents(text) for o in census.census_data(node)]
    if found:
        assert census.may_hold_knob(text), text


@settings(max_examples=150, deadline=None, derandomize=True)
@given(name=st.sampled_from(_VALUE_SPELLINGS), picks=st.lists(st.integers(min_value=0, max_value=12), max_size=3,
                                                              unique=True),
       form=st.integers(min_value=PY_FORMS, max_value=PY_FORMS + 6),
       noise=st.sampled_from(["", "# a comment\n", "x = 'quoted' + y\n", "s = f'{a}-{b}_{c}'\n", "r = r'\\d+'\n"]))
def test_the_python_shortcut_never_skips_a_knob_the_census_finds(name: str, picks: list[int], form: int,
                                                                 noise: str) -> None:
    """``python_may_set_knob`` (issue 52) says False only for texts in which the census finds no pin site, on
    the Python forms of the corpus."""
    text = noise + _forms(name, "2.5", picks)[form][1]
    assert list(census.iter_pin_sites(census.census_python(text)))
    assert census.python_may_set_knob(text), text


#: What joins two pieces of a name inside one Python literal, or between two literals (issue 52's shortcut).
_INSIDE = ["{x}", "$X", "${Y}", "'", '\\"', "%s", "{}", "$(c d)", "`e f`", "%(n)s", "\\\\", "\\\n", "%5.2f", "",
           "\\n", "\\\\n", "%-5s", "$1", "$X-", "\\t", "{{", "}}", "%%"]
_BETWEEN = [" + ", " ", " + x + ", "\n    ", " + str(n) + "]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(data=st.data())
def test_the_python_shortcut_on_names_cut_into_pieces(data: st.DataObject) -> None:
    """A pin spelling cut into pieces (a piece may be left out: an unknown part stands for it), joined inside a
    literal or between literals in every way the census reads, formatted or not: wherever the census finds a
    pin site, the shortcut says so."""
    name = data.draw(st.sampled_from(_VALUE_SPELLINGS))
    cuts = sorted(data.draw(st.lists(st.integers(1, len(name) - 1), max_size=4, unique=True)))
    pieces = [name[a:b] for a, b in zip([0, *cuts], [*cuts, len(name)], strict=True)]
    if data.draw(st.booleans()):
        pieces[data.draw(st.integers(0, len(pieces) - 1))] = "{z}"
    literals: list[str] = [""]
    ops: list[str] = []
    for i, piece in enumerate(pieces):
        if i and data.draw(st.booleans()):
            literals[-1] += data.draw(st.sampled_from(_INSIDE))
        elif i:
            ops.append(data.draw(st.sampled_from(_BETWEEN)))
            literals.append("")
        literals[-1] += piece
    parts = []
    for i, body in enumerate(literals):
        prefix = data.draw(st.sampled_from(["f", "f", ""] if "{" in body else ["", "r"]))
        if "f" not in prefix:
            body = body.replace("{z}", "{}").replace("{x}", "{}")
        body = data.draw(st.sampled_from(["", "--", " ", "a", "_"])) + body + data.draw(st.sampled_from(["", "=2.5", " x", "-"]))
        parts.append(f'{prefix}"{body}"' + (ops[i] if i < len(ops) else ""))
    text = "v = (" + data.draw(st.sampled_from(["{}", "({}) % (a, b, c)", "({}).format(a, b, c, d)"])).format(
        "".join(parts)) + ")\n"
    try:
        found = list(census.iter_pin_sites(census.census_python(text)))
    except (SyntaxError, ValueError):
        return
    if found:
        assert census.python_may_set_knob(text), text


@pytest.mark.parametrize("text", [
    'v = "SGLANG_SIM" + "ULATE_ACC_LEN"\n',            # composed
    'v = ("SGLANG_SIM"\n     f"ULATE_ACC_{x}")\n',       # implicit concatenation over a line, an f-string's prefix
    'v = x + "-acceptance-length"\n',                  # an unknown part before a piece
    'v = "_".join([a, b, c, d, e])\n',                 # a receiver repeated between the items
    'v = "{}-acceptance-rate".format(a)\n',            # a .format field
    'v = "%(n)s_ACC_LEN" % d\n',                        # a % placeholder
    'v = "%spec" + y\n',                                # a placeholder's letter read as text: "spec" + ...
    'v = f"SGLANG_{a}_ACC_LEN"\n',                      # an f-string's field
    "v = 'SGLANG_SIMULATE_\"$X\"'\n",                   # read as shell words: quotes removed, an expansion
    'v = ("syn$Xtheti" "ac-ac" f"{z}")\n',              # an expansion that goes on into the next literal
    'v = f"a{z}}}spec-synth-le{x}n" % (a, b)\n',        # "}}" after a field: the field ends first
])
def test_the_python_shortcut_on_each_way_of_building_a_name(text: str) -> None:
    assert list(census.iter_pin_sites(census.census_python(text)))
    assert census.python_may_set_knob(text)


def test_the_python_shortcut_skips_launchers_that_build_no_name(tmp_path: Path) -> None:
    """Plain code, f-strings, formatting and joins that cannot spell a knob: not parsed at all, so not even a
    syntax error in such a file is a finding (as for YAML and JSON files that name no knob)."""
    plain = ('import os, subprocess\nport = os.environ.get("PORT", "8000")\nname = f"{model}-{tp}x{dp}.json"\n'
             'cmd = ["python3", "-m", "sglang.launch_server", "--port", port]\nlog = "%s: %d" % (name, 3)\n'
             'msg = ", ".join(cmd) + " done"\n')
    assert not census.python_may_set_knob(plain)
    assert not census.python_may_set_knob(plain + "def broken(:\n")
    (tmp_path / "launch.py").write_text(plain + "def broken(:\n")
    (tmp_path / "other.sh").write_text("echo hi\n")
    assert check_paths([tmp_path], store=load_store(GOLDEN)).findings == []
    assert census.python_may_set_knob(plain + 'x = "--spec-" + part\n')   # a piece of an ATOM flag, composed
    assert census.python_may_set_knob(plain + 'os.environ["SGLANG_" "SIMULATE_ACC_LEN"] = v\n')


def test_the_shortcut_lemma_skips_plain_files() -> None:
    assert not census.may_hold_knob("a: 1\nb: 'x'\nc: [1, 2]\n")
    assert census.may_hold_knob("a: '$X_LEN'\n")            # an expansion may assemble a name
    assert census.may_hold_knob('a: "\\x41"\n')              # an escape may make any character
    assert census.may_hold_knob("k: SGLANG_SIMULATE_'ACC'_LEN\n")


# ------------------------------------------------------------------------------ run-time draft lengths

VLLM_AGENTIC = """\
name: r
model: {path: deepseek-ai/DeepSeek-V4-Pro}
backend:
  type: vllm
  vllm_config:
    aggregated:
      speculative-config: '{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.49@EXTRA@}'
benchmark: {type: custom, command: bash agentic_srt.sh}
"""


@pytest.mark.parametrize(("extra", "verdict"), [
    ("", "match"),
    (', "num_speculative_tokens_per_batch_size": [[1, 8, 3], [9, 64, 1]]', "unsafe-value"),
    (', "enable_adaptive_verification": true', "unsafe-value"),
    (', "enable_adaptive_verification": false', "match"),
])
def test_vllm_run_time_draft_lengths_beside_a_pin(tmp_path: Path, extra: str, verdict: str) -> None:
    (f,) = _check(tmp_path, "agentic/r.yaml", VLLM_AGENTIC.replace("@EXTRA@", extra))
    assert f.verdict == verdict, f.message
    if verdict == "unsafe-value":
        assert "vllm/config/speculative.py at 0.34.0" in f.message


@pytest.mark.parametrize(("script", "verdict"), [
    ("--spec-draft-p-min 0", "match"),
    ("--spec-draft-p-min 0.5", "unsafe-value"),
])
def test_llamacpp_p_min_is_a_run_time_draft_length(tmp_path: Path, script: str, verdict: str) -> None:
    text = ("#!/bin/bash\nMODEL=qwen2.5-coder-1.5b-instruct\nllama-server -m /m/t.gguf -md /m/d.gguf --spec-type "
            f"draft-simple --spec-draft-n-max 3 --spec-draft-n-min 3 {script} --spec-synth-len 3.85 "
            "--chat-template-kwargs '{\"enable_thinking\": false}'\n")
    path = tmp_path / "agentic" / "serve.sh"
    path.parent.mkdir()
    path.write_text(text)
    (f,) = check_paths([path], store=load_store()).findings
    assert f.verdict == verdict, f.message


def test_sglang_adaptive_and_trtllm_schedule_beside_a_pin(tmp_path: Path) -> None:
    sgl = ("#!/bin/bash\nexport SGLANG_SIMULATE_ACC_LEN=2.49 SGLANG_SIMULATE_ACC_METHOD=match-expected "
           "SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token\npython3 -m sglang.launch_server --model-path "
           "deepseek-ai/DeepSeek-V4-Pro --speculative-algorithm EAGLE --speculative-num-steps 3 "
           "--speculative-num-draft-tokens 4 --speculative-adaptive\n")
    (f,) = _check(tmp_path, "agentic/s.sh", sgl)
    assert f.verdict == "unsafe-value"
    assert "--speculative-adaptive" in f.message
    trt = ("name: t\nmodel: {path: deepseek-ai/DeepSeek-V4-Pro}\nbackend:\n  type: trtllm\n  decode_environment:\n"
           "    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: '1.49'\n  trtllm_config:\n    decode:\n"
           "      speculative_config: {decoding_type: MTP, max_draft_len: 3, draft_len_schedule: {1: 3, 64: 1}}\n"
           "benchmark: {type: custom, command: bash agentic_srt.sh}\n")
    found = _check(tmp_path, "agentic/t.yaml", trt)
    assert {f.verdict for f in found} == {"unsafe-value"}
    assert "draft_len_schedule" in found[0].message


_TRT_RECIPE = ("name: t\nmodel: {{path: deepseek-ai/DeepSeek-V4-Pro}}\nbackend:\n  type: trtllm\n  decode_environment:\n"
               "    TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: '1.49'\n  trtllm_config:\n    decode:\n"
               "      speculative_config: {{decoding_type: MTP, max_draft_len: 3{extra}}}\n"
               "benchmark: {{type: custom, command: bash agentic_srt.sh}}\n")


@pytest.mark.parametrize(("extra", "unsafe"), [
    (", max_concurrency: 16", True),                       # speculation off above batch 16 (issue 35)
    (", max_concurrency: 0", False),
    (", acceptance_window: 8, acceptance_length_threshold: 3.5", True),  # off for good below a rolling AL of 3.5
    (", acceptance_window: 8, acceptance_length_threshold: 1.0", False),  # decoded tokens per step are >= 1
    ("", False),
])
def test_trtllm_speculation_gates_beside_a_pin(tmp_path: Path, extra: str, unsafe: bool) -> None:
    found = _check(tmp_path, "agentic/t.yaml", _TRT_RECIPE.format(extra=extra))
    assert found
    assert ({f.verdict for f in found} == {"unsafe-value"}) == unsafe, [(f.verdict, f.message) for f in found]
    if unsafe:
        assert extra.rsplit(",", 1)[-1].split(":")[0].strip() in found[0].message


def test_sglang_dspark_ragged_verify_other_than_static_beside_a_simulated_length(tmp_path: Path) -> None:
    """dspark_worker_v2.py raises ValueError at start for a simulated length other than 1.0 unless the verify
    planner is static (issue 35)."""
    script = ("#!/bin/bash\nexport SGLANG_SIMULATE_ACC_LEN=2.49 SGLANG_SIMULATE_ACC_METHOD=match-expected "
              "SGLANG_RAGGED_VERIFY_MODE={mode}\npython3 -m sglang.launch_server --model-path "
              "deepseek-ai/DeepSeek-V4-Pro --speculative-algorithm DSPARK --speculative-num-steps 1 "
              "--speculative-num-draft-tokens 4\n")
    (bad,) = _check(tmp_path, "agentic/a.sh", script.format(mode="cap-accept"))
    assert bad.verdict == "unsafe-value"
    assert "SGLANG_RAGGED_VERIFY_MODE=cap-accept" in bad.message
    (ok,) = _check(tmp_path, "agentic/b.sh", script.format(mode="static"))
    assert ok.verdict != "unsafe-value"


# ------------------------------------------------------------------------------ a new engine


def test_an_engine_added_to_the_registry_is_counted_without_touching_checks(tmp_path: Path, monkeypatch) -> None:
    """A sixth engine's knob in a shell script: the census (vocabulary from the registry) finds it, and
    as no reader turns it into a pin the check fails with 'unresolved', never 'no pinned value'."""
    from golden_al.plugin import registry
    from golden_al.plugin.profile import CheckSupport, EngineProfile, Source, SyntheticKnob

    module = types.ModuleType("toy_engine_for_census")
    module.PROFILE = EngineProfile(
        name="toy",
        display_name="Toy",
        algorithms=("draft",),
        draft_len_rules=(),
        check=CheckSupport(
            synthetic_knobs=(SyntheticKnob("TOY_FORCE_ACCEPT_LEN", "env", "al",
                                           source=Source("toy/toy", "toy/env.py", "1.0")),),
            synthetic_settings=lambda al, k, **kw: {"TOY_FORCE_ACCEPT_LEN": str(al)},
        ),
    )
    monkeypatch.setitem(sys.modules, "toy_engine_for_census", module)
    monkeypatch.setitem(registry.REGISTRY, "toy", "toy_engine_for_census")
    registry.ENGINES.reset()  # the registry validates its plugins once; this one came late
    caches = [f for f in vars(census).values() if hasattr(f, "cache_clear")]  # all derive from the vocabulary
    for f in caches:
        f.cache_clear()
    try:
        findings = _check(tmp_path, "run.sh", "export TOY_FORCE_ACCEPT_LEN=2.5\ntoy-server --k 3\n")
    finally:
        for f in caches:
            f.cache_clear()
        registry.ENGINES.reset()
    (f,) = findings
    assert (f.engine, f.verdict, f.pinned_value) == ("toy", "unresolved", "2.5")


def test_a_dotenv_file_is_read_as_assignments(tmp_path: Path) -> None:
    """compose ``env_file:`` holds KEY=VALUE lines: a knob there is a pin (a plain assignment, noted), not silence."""
    (f,) = _check(tmp_path, "bench.env", "SGLANG_SIMULATE_ACC_LEN=2.49\nOTHER=1\n")
    assert f.verdict != "match"
    assert f.pinned_value == "2.49"


def _pieces() -> st.SearchStrategy[str]:
    names = sorted(census._by_spelling())
    piece = st.builds(lambda n, i, j: n[min(i, j):max(i, j)], st.sampled_from(names), st.integers(0, 45),
                      st.integers(0, 45))
    return st.lists(st.one_of(piece, st.sampled_from(names), st.text("-_ aS=", max_size=2)), max_size=8).map("".join)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_pieces())
def test_trie_patterns_match_as_the_plain_alternation(text: str) -> None:
    """The census's spelling patterns are tries (speed, issue 52): every match (where, and which spelling) is the
    one the plain alternation, longest spelling first, gives."""
    import re

    plain = "|".join(map(re.escape, sorted(census._by_spelling(), key=len, reverse=True)))
    bounded = re.compile(r"(?<![A-Za-z0-9_\-])(" + plain + r")(?![A-Za-z0-9_\-])")
    assert [m.span(1) for m in census._pattern().finditer(text)] == [m.span(1) for m in bounded.finditer(text)]
    assert [m.span() for m in census._substring_rx().finditer(text)] == [m.span() for m in re.finditer(plain, text)]
    pin_names = sorted({t.spelling for t in census.vocabulary() if t.role in ("value", "switch")}, key=len,
                       reverse=True)
    pins = census._pin_parts()[0]
    assert [m.span() for m in pins.finditer(text)] == [m.span() for m in re.finditer(
        "|".join(map(re.escape, pin_names)), text)]
