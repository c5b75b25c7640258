"""``check`` covers the files a launcher consumes (issue 38, item 3): Dockerfiles, Python launchers, Jinja
templates and extension-less scripts are read; any other file whose text names a knob is ``unread`` (a
failing verdict) unless excluded. Each case here found nothing before: the file was skipped without a word.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from golden_al.checks.file_kinds import dockerfile_as_shell, file_kind, jinja_as_text, python_env_as_shell
from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.golden import load_store
from golden_al.knobs import census

pytestmark = pytest.mark.hostile

GOLDEN = str(Path(__file__).resolve().parents[1] / "fixtures" / "check" / "golden")


def _findings(tmp_path: Path, files: dict[str, str]) -> list:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return check_paths([tmp_path], store=load_store(GOLDEN)).findings


DOCKERFILE = """\
# syntax=docker/dockerfile:1
FROM lmsysorg/sglang:v0.5.9
ARG AL=2.2
ENV SGLANG_SIMULATE_ACC_LEN=${AL} \\
    SGLANG_SIMULATE_ACC_METHOD=match-expected
ENV SGLANG_SIMULATE_ACC_TOKEN_MODE real-draft-token
CMD ["python3", "-m", "sglang.launch_server", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"]
"""


def test_a_dockerfile_env_is_a_checked_pin(tmp_path: Path) -> None:
    findings = _findings(tmp_path, {"Dockerfile": DOCKERFILE})
    assert len(findings) == 1
    f = findings[0]
    assert (f.line, f.pinned_value, f.draft_len) == (3, "2.2", 3)  # written in ARG, used by ENV; k from CMD
    assert f.verdict not in ("unresolved", "unread")


def test_dockerfile_as_shell_keeps_lines_and_reads_every_form() -> None:
    shell = dockerfile_as_shell(DOCKERFILE)
    assert shell.count("\n") == DOCKERFILE.count("\n")
    lines = shell.split("\n")
    assert lines[2] == "export AL=2.2"
    assert lines[5] == "export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token"  # the legacy form
    assert lines[6].startswith("python3 -m sglang.launch_server --speculative-algorithm EAGLE")
    assert dockerfile_as_shell("# escape=`\nFROM x\nRUN export A=1 && `\n  run\n").split("\n")[2] == \
        "export A=1 && \\"


@pytest.mark.parametrize("name", ["Dockerfile", "Containerfile", "sglang.dockerfile", "Dockerfile.b200"])
def test_dockerfile_names(name: str) -> None:
    assert file_kind(Path(name), b"FROM x\n") == "dockerfile"


LAUNCHER = '''\
"""Launch SGLang with SGLANG_SIMULATE_ACC_LEN set (a docstring sets nothing)."""
import os
import subprocess
import sys

if os.environ.get("SGLANG_SIMULATE_ACC_LEN") or "SGLANG_SIMULATE_ACC_LEN" in os.environ:
    sys.exit("SGLANG_SIMULATE_ACC_LEN is set already")
os.environ["SGLANG_SIMULATE_ACC_LEN"] = "2.2"
env = {**os.environ, "SGLANG_SIMULATE_ACC_METHOD": "match-expected"}
subprocess.run(["python3", "-m", "sglang.launch_server"], env=env, check=True)
'''


def test_a_python_launchers_environment_write_is_a_checked_pin(tmp_path: Path) -> None:
    findings = _findings(tmp_path, {"launch.py": LAUNCHER})
    assert [(f.line, f.pinned_value) for f in findings] == [(8, "2.2")]
    assert findings[0].verdict == "missing-companion"  # TOKEN_MODE is not set: read as the pin's companions


@pytest.mark.parametrize("text", [
    'import os\nPREFIX = os.environ["P"]\nos.environ[PREFIX + "_ACC_LEN"] = "2.2"\n',   # a name assembled
    'import os\nos.environ.update(SGLANG_SIMULATE_ACC_LEN=str(al))\n',                  # a keyword, computed
    'cmd = f"SGLANG_SIMULATE_ACC_LEN={al} python -m sglang.launch_server"\n',
    'import os\nos.environ["_".join(["SGLANG", "SIMULATE", "ACC", "LEN"])] = "2.2"\n',
])
def test_a_python_knob_the_readers_cannot_prove_fails(tmp_path: Path, text: str) -> None:
    findings = _findings(tmp_path, {"gen.py": text})
    assert findings
    assert all(f.verdict in ("unresolved", "undetermined", "missing-companion") for f in findings)


def test_python_env_as_shell_writes_each_export_on_its_line() -> None:
    shell = python_env_as_shell(LAUNCHER)
    lines = shell.split("\n")
    assert lines[7] == "export SGLANG_SIMULATE_ACC_LEN=2.2"
    assert lines[8] == "export SGLANG_SIMULATE_ACC_METHOD=match-expected"
    assert python_env_as_shell('import os\nos.putenv("A", x)\n').split("\n")[1] == 'export A="$__python_value"'


def test_python_strings_that_set_nothing_are_inert() -> None:
    occ = census.census_python(LAUNCHER)
    assert [o.line for o in census.iter_pin_sites(occ)] == [8]
    reasons = {o.inert for o in occ if o.line in (1, 6, 7)}
    assert None not in reasons
    assert reasons >= {"a docstring", "the message of sys.exit (standard error)"}


def test_a_jinja_template_is_read_as_its_inner_kind(tmp_path: Path) -> None:
    template = ("#!/bin/bash\n{# a comment naming SGLANG_SIMULATE_ACC_LEN sets nothing #}\n"
                "{% if fast %}\nexport SGLANG_SIMULATE_ACC_LEN={{ al }}\n{% endif %}\n")
    findings = _findings(tmp_path, {"launch.sh.j2": template})
    assert [(f.line, f.verdict) for f in findings] == [(4, "undetermined")]  # the value is the template's


def test_a_name_a_jinja_tag_computes_is_a_census_entry(tmp_path: Path) -> None:
    template = 'env:\n  {{ "SGLANG_SIMULATE_ACC_" ~ "LEN" }}: "2.2"\n  {{ "SGLANG_SIMULATE_ACC_LEN" }}: "2.2"\n'
    findings = _findings(tmp_path, {"recipe.yaml.j2": template})
    assert [f.line for f in findings] == [3]
    rendered, tags = jinja_as_text(template, "yaml")
    assert rendered.count("\n") == template.count("\n")
    assert [line for line, _ in tags] == [2, 3]


def test_an_extension_less_script_without_a_shebang_is_read_as_shell(tmp_path: Path) -> None:
    findings = _findings(tmp_path, {"run_server": "export SGLANG_SIMULATE_ACC_LEN=2.2\npython3 -m sglang.launch_server\n"})
    assert [(f.line, f.pinned_value) for f in findings] == [(1, "2.2")]
    assert findings[0].verdict != "unread"


@pytest.mark.parametrize(("name", "text"), [
    ("deploy.toml", '[env]\nSGLANG_SIMULATE_ACC_LEN = "2.2"\n'),
    ("values.ini", "[server]\nSGLANG_SIMU'LATE_ACC_LEN'=2.2\n"),   # named in parts
    ("settings.txt", "SGLANG_SIMULATE_ACC_LEN 2.2\n"),
    ("launch.j2", "SGLANG_SIMULATE_ACC_LEN={{ al }}\n"),            # a template of no known kind
])
def test_a_file_of_a_kind_check_does_not_read_that_names_a_knob_is_unread(tmp_path: Path, name: str,
                                                                          text: str) -> None:
    findings = _findings(tmp_path, {name: text})
    assert findings
    assert {f.verdict for f in findings} == {"unread"}
    assert "exclude" in findings[0].message


def test_unread_fails_the_gate_unless_excluded(tmp_path: Path, capsys) -> None:
    (tmp_path / "deploy.toml").write_text('SGLANG_SIMULATE_ACC_LEN = "2.2"\n')
    (tmp_path / "README.md").write_text("Set SGLANG_SIMULATE_ACC_LEN=2.2 to simulate.\n")  # documentation
    (tmp_path / "notes.cfg").write_text("nothing to see\n")
    (tmp_path / "run.sh").write_text("python3 -m sglang.launch_server\n")
    assert main(["check", str(tmp_path), "--golden-dir", GOLDEN, "--no-config"]) == 1
    out = capsys.readouterr().out
    assert "deploy.toml:1: unread" in out
    assert "README.md" not in out
    assert main(["check", str(tmp_path), "--golden-dir", GOLDEN, "--no-config", "--exclude", "*.toml"]) == 0
