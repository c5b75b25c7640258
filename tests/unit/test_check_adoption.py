"""Adopting ``check`` on a real tree (issue 34, items 3-4): the no-pins policy, configuration, inline
suppressions with reasons, a baseline, and ``--changed-since``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from golden_al.checks.adoption import comment_test, find_config, load_config, read_suppressions
from golden_al.checks.static import check_paths
from golden_al.cli.main import main
from golden_al.errors import InputFileError
from golden_al.golden import load_store

FIX = Path(__file__).resolve().parents[1] / "fixtures"
STORE = load_store(None)
DFLASH = FIX / "select" / "sglang_roles_dflash.yaml"


def _pinned(folder: Path) -> Path:
    """The DFlash roles recipe with the golden value (4.05) hard-coded: a pin that matches."""
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "pinned.yaml"
    f.write_text(DFLASH.read_text().replace('      SGLANG_ENABLE_SPEC_V2: "1"\n', '      SGLANG_ENABLE_SPEC_V2: "1"\n'
                                            '      SGLANG_SIMULATE_ACC_LEN: "4.05"\n'
                                            '      SGLANG_SIMULATE_ACC_METHOD: match-expected\n'
                                            '      SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token\n'))
    return f


def _tree(tmp_path: Path) -> Path:
    """A small tree: a recipe with a matching pin, a pin-free selectable recipe, a script with a dynamic knob."""
    root = tmp_path / "tree"
    _pinned(root / "recipes")
    shutil.copy(DFLASH, root / "recipes" / "dflash.yaml")
    (root / "launch.sh").write_text("#!/bin/bash\nfor pair in $PAIRS; do\n  export \"$pair\"\ndone\n"
                                    "export SGLANG_SIMULATE_ACC_LEN=$AL\n")
    return root


def _run(args: list[str], capsys: pytest.CaptureFixture[str], cwd: Path, monkeypatch: pytest.MonkeyPatch
         ) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    rc = main(["check", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_no_pins_turns_a_matching_pin_into_a_finding_naming_the_selected_value(tmp_path: Path) -> None:
    pinned = _pinned(tmp_path)
    default = check_paths([str(pinned)], store=STORE)
    assert {f.verdict for f in default.findings} == {"match"}
    assert not default.failed
    report = check_paths([str(pinned)], store=STORE, policy="no-pins")
    assert {f.verdict for f in report.findings} == {"pinned"}
    assert report.failed
    f = report.findings[0]
    assert f"golden-al select {pinned}" in f.message
    assert "would be 4.05" in f.message


def test_no_pins_requires_every_agentic_speculative_recipe_to_be_selectable(tmp_path: Path) -> None:
    doc = DFLASH.read_text().replace("      speculative-num-draft-tokens: 8\n", "")
    (tmp_path / "r.yaml").write_text(doc)
    assert not check_paths([str(tmp_path)], store=STORE).findings  # nothing pinned: the default policy is silent
    report = check_paths([str(tmp_path)], store=STORE, policy="no-pins")
    (f,) = report.findings
    assert f.verdict == "unselectable"
    assert "draft length is unknown" in f.message
    ok = check_paths([str(DFLASH)], store=STORE, policy="no-pins")
    assert ok.findings == []


def test_the_summary_counts_the_files_that_have_findings_pinned_or_not(tmp_path: Path) -> None:
    """A no-pins finding sits in a file without a pin: the summary counts it (it said "in 0 file(s)")."""
    from golden_al.cli.check import summary_line

    doc = DFLASH.read_text().replace("      speculative-num-draft-tokens: 8\n", "")
    (tmp_path / "a.yaml").write_text(doc)
    (tmp_path / "b.yaml").write_text(doc)
    _pinned(tmp_path / "c")
    report = check_paths([str(tmp_path)], store=STORE, policy="no-pins")
    assert summary_line(report).startswith("golden-al check: 3 finding(s) in 3 file(s) (3 scanned)")


@pytest.mark.parametrize(("comment", "problem"), [
    ("# golden-al: ignore[unresolved] -- loops over pairs set by the harness, reviewed", None),
    ("# golden-al: ignore[unresolved]", "needs its reason"),
    ("# golden-al: ignore -- no verdicts", "name the verdicts"),
    ("# golden-al: ignore[match] -- nothing to cover", "not a verdict it can cover"),
    ("# golden-al: ignore[typo] -- x", "not a verdict"),
])
def test_suppressions_need_verdicts_and_a_reason(comment: str, problem: str | None) -> None:
    text = f"a=1\n{comment}\n\n# other comment\nexport X=1\n"
    (s,) = read_suppressions("f.sh", text, comment_test("shell", text))
    assert s.line == 2
    assert s.target == 5
    if problem is None:
        assert s.problem is None
        assert s.reason == "loops over pairs set by the harness, reviewed"
    else:
        assert s.problem is not None
        assert problem in s.problem


def test_a_suppression_waives_only_its_line_and_verdict_and_is_listed(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    script = root / "launch.sh"
    before = check_paths([str(script)], store=STORE)
    assert before.failed
    assert {f.verdict for f in before.findings} == {"unresolved", "undetermined"}
    text = script.read_text().replace('  export "$pair"', '  export "$pair"  # golden-al: ignore[unresolved] -- '
                                                          'pairs come from MODEL_ENVS, reviewed in PR 1')
    script.write_text(text)
    after = check_paths([str(script)], store=STORE)
    waived = [f for f in after.findings if f.waived]
    assert len(waived) == 1
    assert waived[0].waived is not None
    assert "reviewed in PR 1" in waived[0].waived
    assert after.failed  # the export of $AL two lines below is still undetermined
    text = text.replace("export SGLANG_SIMULATE_ACC_LEN=$AL", "# golden-al: ignore[pinned] -- wrong verdict\n"
                        "export SGLANG_SIMULATE_ACC_LEN=$AL")
    script.write_text(text)
    still = check_paths([str(script)], store=STORE)
    assert still.failed
    (stale,) = [f for f in still.findings if f.verdict == "bad-suppression"]
    assert "covers no finding" in stale.message
    assert stale.waived is not None  # listed, not failing, unless strict


def test_a_malformed_suppression_is_a_failing_finding(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text(DFLASH.read_text().replace("backend:", "# golden-al: ignore[pinned]\nbackend:", 1))
    report = check_paths([str(f)], store=STORE)
    assert "bad-suppression" in {x.verdict for x in report.findings}
    assert report.failed


def test_configuration_file_sets_policy_exclude_golden_dir_and_baseline(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / ".git").mkdir()
    (root / ".golden-al.toml").write_text('policy = "no-pins"\nexclude = ["launch.sh"]\ngolden-dir = "golden"\n'
                                          'baseline = "known.json"\n')
    (root / "recipes" / "deep").mkdir()
    found = find_config(root / "recipes" / "deep")
    assert found == root / ".golden-al.toml"
    cfg = load_config(found)
    assert cfg.policy == "no-pins"
    assert cfg.exclude == ("launch.sh",)
    assert cfg.golden_dir == root / "golden"
    assert cfg.baseline == root / "known.json"
    (root / ".golden-al.toml").write_text('polcy = "no-pins"\n')
    with pytest.raises(InputFileError, match="unknown key 'polcy'"):
        load_config(root / ".golden-al.toml")
    (root / ".golden-al.toml").unlink()
    (root / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.golden-al]\npolicy = "no-pins"\n')
    assert load_config(find_config(root)).policy == "no-pins"  # type: ignore[arg-type]
    (root / "pyproject.toml").write_text('[tool.golden-al]\npolicy = "lenient"\n')
    with pytest.raises(InputFileError, match="policy 'lenient'"):
        load_config(root / "pyproject.toml")


def test_the_cli_reads_the_configuration_and_a_baseline_makes_only_new_findings_fail(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    (root / ".git").mkdir()
    (root / ".golden-al.toml").write_text('policy = "no-pins"\n')
    rc, out, err = _run(["."], capsys, root, monkeypatch)
    assert rc == 1
    assert "pinned" in out
    assert "configuration" in err
    rc, _, err = _run([".", "--write-baseline", "known.json"], capsys, root, monkeypatch)
    assert rc == 0
    doc = json.loads((root / "known.json").read_text())
    assert doc["golden_al_baseline"] == 2
    assert {r["verdict"] for r in doc["findings"]} == {"pinned", "unresolved", "undetermined"}
    rc, out, _ = _run([".", "--baseline", "known.json"], capsys, root, monkeypatch)
    assert rc == 0
    assert "not failing: baseline" in out
    # a new pin (a second script) is not in the baseline: it fails
    (root / "more.sh").write_text("#!/bin/bash\nexport SGLANG_SIMULATE_ACC_LEN=$AL2\n")
    rc, out, _ = _run([".", "--baseline", "known.json", "--format", "json"], capsys, root, monkeypatch)
    assert rc == 1
    rows = json.loads(out)
    failing = [r for r in rows if r["waived"] is None and r["verdict"] != "match"]
    assert [r["file"] for r in failing] == ["more.sh"]
    rc, _, _ = _run([".", "--no-config"], capsys, root, monkeypatch)
    assert rc == 1  # the default policy still sees the unresolved script
    rc, _, err = _run([".", "--baseline", "nope.json"], capsys, root, monkeypatch)
    assert rc == 2


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_changed_since_fails_only_findings_of_changed_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    env = ["-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), *env, "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-qm", "base"], check=True)
    rc, out, _ = _run([".", "--changed-since", "HEAD", "--verbose"], capsys, root, monkeypatch)
    assert rc == 0
    assert "not failing: unchanged" in out
    (root / "new.sh").write_text("#!/bin/bash\nexport SGLANG_SIMULATE_ACC_LEN=$X\n")
    rc, out, _ = _run([".", "--changed-since", "HEAD", "--format", "json"], capsys, root, monkeypatch)
    assert rc == 1
    assert [r["file"] for r in json.loads(out) if r["waived"] is None and r["verdict"] != "match"] == ["new.sh"]
    rc, _, err = _run([".", "--changed-since", "no-such-ref"], capsys, root, monkeypatch)
    assert rc == 2
    assert "--changed-since no-such-ref" in err


def test_knob_names_in_documentation_text_are_listed_not_read_as_config(tmp_path: Path) -> None:
    (tmp_path / "perf-changelog.yaml").write_text(
        "- config-keys: [glm5.2-fp4-b300-sglang-agentic-mtp]\n"
        "  description:\n"
        "    - \"Throughput runs pin SGLANG_SIMULATE_ACC_LEN=2.99 (GLM-5.2 MTP curve at K=3)\"\n"
        "  title: SGLANG_SIMULATE_ACC_LEN=3 in prose\n")
    report = check_paths([str(tmp_path)], store=STORE)
    assert report.findings == []
    assert [p.rsplit(":", 1)[1] for p in report.prose] == ["3", "4"]
    # the same text where a process reads it is configuration: a finding
    (tmp_path / "compose.yaml").write_text(
        "services:\n  s:\n    command: sh -c 'SGLANG_SIMULATE_ACC_LEN=2.99 python -m sglang.launch_server'\n"
        "    description:\n      env: {SGLANG_SIMULATE_ACC_LEN: '2.99'}\n")
    again = check_paths([str(tmp_path)], store=STORE)
    assert sorted(f.line for f in again.findings if f.file.endswith("compose.yaml")) == [3, 5]


SCRIPT = "#!/bin/bash\nexport SGLANG_SIMULATE_ACC_LEN=$AL{tail}\n"


@pytest.mark.hostile
@pytest.mark.parametrize(("name", "text"), [
    ("a.sh", SCRIPT.format(tail=' ; echo "x # golden-al: ignore[undetermined] -- in a string"')),
    ("b.sh", SCRIPT.format(tail=" ; echo 'x # golden-al: ignore[undetermined] -- in a string'")),
    ("c.sh", "#!/bin/bash\necho \"a\nb # golden-al: ignore[undetermined] -- in a string\"; export SGLANG_SIMULATE_ACC_LEN=$AL\n"),
    ("d.yaml", "env: {SGLANG_SIMULATE_ACC_LEN: '2.5', X: \"y # golden-al: ignore[missing-companion] -- a string\"}\n"),
    ("e.yaml", "env:\n  NOTE: |\n    # golden-al: ignore[missing-companion] -- a block string's text\n"
               "  SGLANG_SIMULATE_ACC_LEN: '2.5'\n"),
    ("Dockerfile", "FROM x\nENV SGLANG_SIMULATE_ACC_LEN=2.5 # golden-al: ignore[missing-companion] -- not a comment here\n"),
    ("f.py", "import os\nos.environ['SGLANG_SIMULATE_ACC_LEN'] = '2.5'; s = '# golden-al: ignore[missing-companion] -- x'\n"),
])
def test_suppression_text_inside_a_string_waives_nothing(name: str, text: str, tmp_path: Path) -> None:
    (tmp_path / name).write_text(text)
    report = check_paths([str(tmp_path / name)], store=STORE)
    assert report.failed
    assert [f.waived for f in report.findings] == [None] * len(report.findings)


@pytest.mark.parametrize(("name", "text"), [
    ("a.sh", SCRIPT.format(tail="  # golden-al: ignore[undetermined] -- set by the harness, reviewed")),
    ("d.yaml", "env:\n  SGLANG_SIMULATE_ACC_LEN: '2.5'  # golden-al: ignore[missing-companion] -- reviewed\n"),
    ("Dockerfile", "FROM x\n# golden-al: ignore[missing-companion] -- reviewed\nENV SGLANG_SIMULATE_ACC_LEN=2.5\n"),
    ("f.py", "import os\nos.environ['SGLANG_SIMULATE_ACC_LEN'] = '2.5'  # golden-al: ignore[missing-companion] -- ok\n"),
])
def test_a_suppression_in_each_kinds_comment_syntax_waives_its_line(name: str, text: str, tmp_path: Path) -> None:
    (tmp_path / name).write_text(text)
    report = check_paths([str(tmp_path / name)], store=STORE)
    assert not report.failed, [(f.verdict, f.message) for f in report.findings]
    assert any(f.waived and f.waived.startswith("suppressed:") for f in report.findings)


@pytest.mark.hostile
def test_a_stale_suppression_fails_under_the_strict_setting_and_shows_in_the_github_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "r.yaml").write_text(_pinned(tmp_path).read_text().replace(
        '"4.05"\n', '"4.05"  # golden-al: ignore[mismatch] -- an old reason, the value matches now\n'))
    (tmp_path / "pinned.yaml").unlink()
    rc, out, _ = _run(["r.yaml"], capsys, tmp_path, monkeypatch)
    assert rc == 0  # listed, not failing
    assert "r.yaml: 1 bad-suppression (lenient), 1 match" in out
    rc, out, _ = _run(["r.yaml", "--strict-suppressions"], capsys, tmp_path, monkeypatch)
    assert rc == 1
    assert "bad-suppression (1):" in out
    (tmp_path / ".golden-al.toml").write_text("strict-suppressions = true\n")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, out, _ = _run(["r.yaml", "--format", "github"], capsys, tmp_path, monkeypatch)
    assert rc == 1
    assert "::error file=r.yaml" in out
    assert "stale suppression" in summary.read_text()


@pytest.mark.hostile
@pytest.mark.parametrize(("entry", "named"), [
    ({"file": "a.sh", "verdict": "unresolved", "pinned_value": [1]}, "missing field"),
    ("just text", "an entry must be an object"),
    ({"file": {"a": 1}}, "missing field"),
])
def test_a_malformed_baseline_entry_is_exit_2_naming_the_file_and_entry(
        entry: object, named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    (root / ".git").mkdir()
    rc, _, _ = _run([".", "--write-baseline", "known.json"], capsys, root, monkeypatch)
    doc = json.loads((root / "known.json").read_text())
    good = doc["findings"][0]
    wrong_type = {**good, "draft_len": [1]}
    for bad, why in ((entry, named), (wrong_type, "draft_len must be int or null, got [1]"),
                     ({**good, "inputs_digest": "x"}, "inputs_digest 'x'")):
        doc["findings"] = [good, bad]
        (root / "known.json").write_text(json.dumps(doc))
        rc, _, err = _run([".", "--baseline", "known.json"], capsys, root, monkeypatch)
        assert rc == 2
        assert "known.json" in err
        assert "findings[1]" in err
        assert why in err
    doc["golden_al_baseline"] = 1
    (root / "known.json").write_text(json.dumps(doc))
    rc, _, err = _run([".", "--baseline", "known.json"], capsys, root, monkeypatch)
    assert rc == 2
    assert "version 1" in err


@pytest.mark.hostile
def test_a_malformed_configuration_entry_is_exit_2_naming_the_file_and_entry(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    (root / ".git").mkdir()
    (root / ".golden-al.toml").write_text('allow = ["no-golden", "mismatch"]\n')
    rc, _, err = _run(["."], capsys, root, monkeypatch)
    assert rc == 2
    assert ".golden-al.toml" in err
    assert "allow: entry 'mismatch'" in err
    (root / ".golden-al.toml").write_text("strict-suppressions = 1\n")
    rc, _, err = _run(["."], capsys, root, monkeypatch)
    assert (rc, "strict-suppressions must be true or false" in err) == (2, True)
    (root / ".golden-al.toml").unlink()
    (root / "pyproject.toml").write_text("# golden-al reads [tool.golden-al]\ntool = 3\n")
    rc, _, err = _run(["."], capsys, root, monkeypatch)
    assert rc == 1  # no configuration there: the tree is checked
    assert "internal error" not in err
