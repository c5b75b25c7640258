"""``check`` on llama.cpp pins kept in YAML and JSON configs (compose, Kubernetes, JSON args arrays).

The reader (:mod:`golden_al.checks.command_lines`) is engine-neutral; what it finds comes
from ``golden_al.engines.llamacpp.PROFILE.check.command_line``. The committed Qwen coder curve
(thinking off) has AL 3.85 at k = 3 and 4.73 at k = 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden_al.cli.main import main

from .. import FLAG_DRAFT_MODEL, FLAG_SYNTH_LEN, PROFILE, SPEC_TYPES, read_command_line

OFF = '{"enable_thinking": false}'

COMPOSE = f"""\
services:
  llama:
    image: ghcr.io/ggml-org/llama.cpp:server
    command:
      - --model
      - /models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
      - --spec-draft-model
      - /models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
      - --spec-type
      - draft-simple
      - --spec-draft-n-max
      - "3"
      - --spec-draft-n-min
      - "3"
      - --spec-synth-len
      - "@AL@"
      - --chat-template-kwargs
      - '{OFF}'
"""

K8S = f"""\
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: llama-server
          image: ghcr.io/ggml-org/llama.cpp:server
          command: ["/app/llama-server"]
          args:
            - "--alias=qwen2.5-coder-1.5b-instruct"
            - "-m"
            - "/models/target.gguf"
@DRAFT@            - "--spec-draft-n-max=4"
            - "--spec-draft-n-min=4"
            - "--chat-template-kwargs"
            - '{OFF}'
          env:
            - name: LLAMA_ARG_SPEC_SYNTH_LEN
              value: "@AL@"
"""
K8S_DRAFT = '            - "-md"\n            - "/models/draft.gguf"\n            - "--spec-type=draft-simple"\n'


def _fill(template: str, al: str, draft: str = "") -> str:
    return template.replace("@AL@", al).replace("@DRAFT@", draft)


def _json_config(al: str, *, draft: bool = True, rates: str | None = None) -> str:
    args = ["-m", "/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "--chat-template-kwargs", OFF]
    if draft:
        args += ["--model-draft", "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "--spec-type", "draft-simple"]
    env = {"LLAMA_ARG_SPEC_DRAFT_N_MAX": "3", "LLAMA_ARG_SPEC_DRAFT_N_MIN": "3"}
    if rates is not None:
        env["LLAMA_ARG_SPEC_SYNTH_RATES"] = rates
    else:
        args += ["--spec-synth-len", al]
    return json.dumps({"name": "llama-bench-point", "server": {"args": args, "env": env}}, indent=2) + "\n"


def _check(tmp_path: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict]]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    rc = main(["check", str(tmp_path), "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_compose_command_list_match_and_mismatch(tmp_path, capsys):
    rc, rows = _check(tmp_path, {"compose.yaml": _fill(COMPOSE, "3.85")}, capsys)
    assert rc == 0
    (row,) = rows
    assert (row["engine"], row["draft_len"], row["thinking"], row["model"]) == (
        "llamacpp", 3, "off", "qwen2.5-coder-1.5b-instruct")
    assert (row["pinned_value"], row["expected_al"], row["verdict"]) == ("3.85", 3.85, "match")
    assert row["line"] == _line_of(COMPOSE, '"@AL@"')  # the line of the value, not of the flag
    (tmp_path / "compose.yaml").write_text(_fill(COMPOSE, "3.2"))
    assert main(["check", str(tmp_path), "--format", "json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["verdict"], row["implied_al"], row["expected_al"]) == ("mismatch", 3.2, 3.85)


def test_kubernetes_env_pin_takes_k_from_the_args_next_to_it(tmp_path, capsys):
    text = _fill(K8S, "4.73", K8S_DRAFT)
    rc, rows = _check(tmp_path, {"deploy.yaml": text}, capsys)
    (row,) = rows
    assert rc == 0, row["message"]
    assert (row["engine"], row["draft_len"], row["verdict"], row["pinned_value"]) == ("llamacpp", 4, "match", "4.73")
    assert row["line"] == _line_of(text, 'value: "4.73"')
    assert row["model"] == "qwen2.5-coder-1.5b-instruct"  # from --alias=


def test_kubernetes_pin_without_a_draft_model_is_a_missing_companion(tmp_path, capsys):
    rc, rows = _check(tmp_path, {"deploy.yaml": _fill(K8S, "4.73", "")}, capsys)
    (row,) = rows
    assert rc == 1
    assert row["verdict"] == "missing-companion"
    assert FLAG_DRAFT_MODEL in row["message"]


def test_json_args_array_match_mismatch_and_missing_companion(tmp_path, capsys):
    rc, rows = _check(tmp_path, {"a.json": _json_config("3.85"), "b.json": _json_config("3.9"),
                                 "c.json": _json_config("3.85", draft=False)}, capsys)
    by = {Path(r["file"]).name: r for r in rows}
    assert rc == 1
    assert (by["a.json"]["verdict"], by["a.json"]["draft_len"]) == ("match", 3)  # k from LLAMA_ARG_SPEC_DRAFT_N_MAX
    assert by["a.json"]["line"] == _line_of(_json_config("3.85"), '"3.85"')
    assert (by["b.json"]["verdict"], by["b.json"]["expected_al"]) == ("mismatch", 3.85)
    assert by["c.json"]["verdict"] == "missing-companion"


def test_json_env_rates_are_read_as_unconditional_rates(tmp_path, capsys):
    rc, rows = _check(tmp_path, {"r.json": _json_config("", rates="0.95,0.95,0.95")}, capsys)
    (row,) = rows
    assert (row["implied_al"], row["verdict"], rc) == (pytest.approx(3.85), "match", 0)


def test_sh_c_script_in_a_command_list_is_split_into_words(tmp_path, capsys):
    text = ("services:\n  llama:\n    entrypoint: [\"/bin/sh\", \"-c\"]\n    command:\n"
            "      - >-\n        llama-server -m /models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf -md /models/d.gguf"
            " --spec-type draft-simple\n"
            "        --spec-draft-n-max 3 --spec-draft-n-min 3 --spec-synth-len 3.85\n"
            f"        --chat-template-kwargs '{OFF}'\n")
    rc, rows = _check(tmp_path, {"compose.yml": text}, capsys)
    (row,) = rows
    assert (row["verdict"], row["draft_len"], rc) == ("match", 3, 0)


def test_unsafe_and_undetermined_llamacpp_settings(tmp_path, capsys):
    both = _json_config("3.85").replace('"LLAMA_ARG_SPEC_DRAFT_N_MIN": "3"',
                                        '"LLAMA_ARG_SPEC_DRAFT_N_MIN": "3", "LLAMA_ARG_SPEC_SYNTH_RATES": "0.9,0.9,0.9"')
    varying = _fill(COMPOSE, "3.85").replace('      - --spec-draft-n-min\n      - "3"\n', "")
    from_env = _fill(COMPOSE, "${SYNTH_LEN}")
    no_k = _fill(COMPOSE, "3.85").replace('      - --spec-draft-n-max\n      - "3"\n', "").replace(
        '      - --spec-draft-n-min\n      - "3"\n', "")
    rc, rows = _check(tmp_path, {"both.json": both, "varying.yaml": varying, "env.yaml": from_env,
                                 "nok.yaml": no_k}, capsys)
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(Path(r["file"]).name, []).append(r)
    assert rc == 1
    assert {r["verdict"] for r in by["both.json"]} == {"unsafe-value"}
    assert "mutually exclusive" in by["both.json"][0]["message"]
    (v,) = by["varying.yaml"]
    assert (v["verdict"], v["draft_len"]) == ("undetermined", None)
    assert "--spec-draft-n-min 0 != --spec-draft-n-max 3" in v["message"]
    (e,) = by["env.yaml"]
    assert (e["verdict"], e["pinned_value"]) == ("undetermined", None)
    assert "set outside this file" in e["message"]
    (n,) = by["nok.yaml"]
    assert n["verdict"] == "undetermined"
    assert "default of 3 is not pinned" in n["message"]


def test_reader_is_driven_by_the_profile(monkeypatch):
    """Without the profile's command_line declaration, the same config yields no llama.cpp pin."""
    import dataclasses

    from golden_al.checks import command_lines

    assert command_lines.command_line_pins(lambda: [((), {})], lambda p: 1, "x.yaml") == []
    data = {"args": ["-md", "d.gguf", "--spec-type", "draft-simple", "--spec-draft-n-max", "2", "--spec-draft-n-min",
                     "2", "--spec-synth-len", "2"]}
    nodes = [((), data), (("args",), data["args"])]
    (pin,) = command_lines.command_line_pins(lambda: nodes, lambda p: len(p), "x.yaml")
    assert (pin.engine, pin.knob, pin.raw_value, pin.draft.k) == ("llamacpp", FLAG_SYNTH_LEN, "2", 2)
    bare = dataclasses.replace(PROFILE, check=dataclasses.replace(PROFILE.check, command_line=None))
    monkeypatch.setattr(command_lines, "get_profile", lambda name: bare if name == "llamacpp" else
                        dataclasses.replace(PROFILE, check=dataclasses.replace(PROFILE.check, command_line=None)))
    assert command_lines.command_line_pins(lambda: nodes, lambda p: 1, "x.yaml") == []


@pytest.mark.parametrize(("spec_type", "verdict", "method", "said"), [
    (None, "undetermined", None, "infers the speculative type from the draft GGUF"),
    ("draft-mtp", "wrong-method", "mtp", "draft method 'mtp'"),
    ("draft-dflash", "undetermined", "dflash", "clamps --spec-draft-n-max 3 to the draft's block size"),
    ("ngram-mod", "undetermined", "ngram", "variable number of tokens per step"),
    ("draft-simple,ngram-mod", "undetermined", None, "several speculative types"),
])
def test_llamacpp_spec_types_map_to_methods_and_clamps(tmp_path, capsys, spec_type, verdict, method, said):
    """llama.cpp 0.3.36 ``common/speculative.cpp``: each ``--spec-type`` is its own draft method; without
    one the type comes from the draft GGUF's metadata; a block draft (DFlash, DSpark) clamps n_max to its
    block size, which the draft file holds."""
    text = _fill(COMPOSE, "3.85")
    text = text.replace("      - --spec-type\n      - draft-simple\n",
                        "" if spec_type is None else f"      - --spec-type\n      - {spec_type}\n")
    rc, rows = _check(tmp_path, {"compose.yaml": text}, capsys)
    (row,) = rows
    assert (row["verdict"], rc) == (verdict, 1), row["message"]
    assert row["algorithm"] == (spec_type if method else None)
    assert said in row["message"]
    if method:
        assert SPEC_TYPES[spec_type] == method


def test_llamacpp_block_draft_of_one_token_is_fixed():
    """n_max = 1 is below any block limit: k = 1 whatever the draft's block size."""
    args = ["-md", "d.gguf", "--spec-type", "draft-dflash", "--spec-draft-n-max", "1", "--spec-draft-n-min", "1"]
    reading = read_command_line(args, {})
    assert reading.draft is not None
    assert (reading.draft.k, reading.algorithm) == (1, "draft-dflash")
