"""llama.cpp's server as an engine: profile, sampler, formats, AL source, synthetic refusal, build cache.

Fast and offline: responses, ``/metrics`` texts and log lines are captured from a real
llama-server build (fixtures/llamacpp-0c1e570/, see _capture.py) or written here in
the exact formats of the llama.cpp source (commit 0c1e570).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from golden_al.cli.main import main
from golden_al.errors import (
    CounterResetError,
    HashMismatchError,
    InputFileError,
    ServerError,
    SyntheticAcceptanceActiveError,
    UsageError,
)
from golden_al.formats import counters as fcounters
from golden_al.formats import prometheus as prom
from golden_al.plugin.registry import get_profile, get_sampler
from golden_al.plugin.sources import make_source
from golden_al.servers import launch, synthetic
from simulators.base import SamplerError

from .. import BUILD, PROFILE, build, counted_steps, draft_len_from_args, launch_args, synthetic_shell_env
from .. import logs as flc
from ..counters import read as read_counters
from ..sampler import conditional_probs, geometric_rate, resolve_rates
from ..server import LlamaCppPrometheusSource
from . import fixture

FIXTURES = fixture("llamacpp-0c1e570")
MUSE = ["--model", "muse-spark-open-816b-a42b-nvfp4", "--thinking", "on"]


def metrics_text(drafts: int, draft_tokens: int, accepted: int, per_pos: list[int] | None,
                 processing: int = 0) -> str:
    """A /metrics body in the shape of server-task.cpp ``to_metrics``."""
    lines = []
    for name, typ, value in (("spec_decode_num_draft_tokens_total", "counter", draft_tokens),
                             ("spec_decode_num_accepted_tokens_total", "counter", accepted),
                             ("spec_decode_num_drafts_total", "counter", drafts),
                             ("n_tokens_max", "counter", 300),
                             ("requests_processing", "gauge", processing),
                             ("requests_deferred", "gauge", 0)):
        lines += [f"# HELP llamacpp:{name} x", f"# TYPE llamacpp:{name} {typ}", f"llamacpp:{name} {value}"]
    if per_pos is not None:
        lines += ["# HELP llamacpp:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position",
                  "# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos_total counter"]
        lines += [f'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {v}'
                  for i, v in enumerate(per_pos)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- profile
def test_profile_is_registered_and_env_contract():
    p = get_profile("llamacpp")
    assert p is PROFILE
    assert p.check.synthetic_settings(4.05, 7) == {"--spec-synth-len": "4.05"}
    assert synthetic_shell_env(p.check.synthetic_settings(4.05, 7)) == {"LLAMA_ARG_SPEC_SYNTH_LEN": "4.05"}
    assert p.knob("LLAMA_ARG_SPEC_SYNTH_RATES").name == "--spec-synth-rates"
    with pytest.raises(Exception, match="AL"):
        p.check.synthetic_settings(8.5, 7)  # above k + 1


def test_fixed_draft_length_flags_and_their_reading_back():
    args = launch_args(target="t.gguf", draft="d.gguf", k=5, host="127.0.0.1", port=8080, alias="m")
    assert args[args.index("--spec-draft-n-max") + 1] == "5"
    assert args[args.index("--spec-draft-n-min") + 1] == "5"
    assert args[args.index("--spec-draft-p-min") + 1] == "0"
    assert "--metrics" in args
    assert args[args.index("--spec-type") + 1] == "draft-simple"
    assert draft_len_from_args(args) == (5, "--spec-draft-n-max 5")
    with pytest.raises(ValueError, match="n-min 0 != --spec-draft-n-max 5"):
        draft_len_from_args(["--spec-draft-n-max", "5"])
    with pytest.raises(ValueError, match=r"p-min 0\.75"):
        draft_len_from_args(["--spec-draft-n-max", "5", "--spec-draft-n-min", "5", "--draft-p-min", "0.75"])
    assert draft_len_from_args([], {"LLAMA_ARG_SPEC_DRAFT_N_MAX": "4", "LLAMA_ARG_SPEC_DRAFT_N_MIN": "4"})[0] == 4


def test_launch_command(tmp_path):
    spec = launch.LaunchSpec(engine="llamacpp", target="/m/t.gguf", draft="/m/d.gguf", draft_len=3, port=1234,
                             binary="/opt/llama-server", engine_args=["--threads", "2"])
    cmd = launch.build_command(spec)
    assert cmd[0] == "/opt/llama-server"
    assert cmd[-2:] == ["--threads", "2"]
    assert spec.draft_method() == "draft-model"
    assert launch.build_command(launch.LaunchSpec(**{**spec.__dict__, "binary": None}))[0] == "llama-server"
    served = launch.build_command(launch.LaunchSpec(**{**spec.__dict__, "served_model_name": "qwen"}))
    assert served[served.index("--alias") + 1] == "qwen"
    for bad, match in ((dict(draft=None), "needs --draft"),
                       (dict(target="/m/t"), "not a .gguf"), (dict(tp=2), "--tp 2"),
                       (dict(engine_args=["--spec-draft-n-max", "7"]), "sets --spec-draft-n-max"),
                       (dict(engine_args=["--spec-synth-len", "3"]), "synthetic acceptance is active")):
        with pytest.raises((UsageError, SyntheticAcceptanceActiveError), match=match):
            launch.build_command(launch.LaunchSpec(**{**spec.__dict__, **bad}))


# ---------------------------------------------------------------------------- sampler
@pytest.mark.parametrize(("al", "k"), [(4.05, 7), (2.5, 3), (1.3, 1), (8.9, 8), (1.0, 3), (4.0, 3)])
def test_geometric_rate_solves_the_length(al, k):
    p = geometric_rate(al, k)
    assert sum(p ** j for j in range(1, k + 1)) == pytest.approx(al - 1, abs=1e-8)
    rates = resolve_rates(al, k)
    np.testing.assert_allclose(rates, [p ** j for j in range(1, k + 1)], rtol=1e-12)
    dist = get_sampler("llamacpp", "synthetic").pmf(al, k)
    assert dist.mean() == pytest.approx(al, abs=1e-8)


@pytest.fixture
def rng():
    """A fixed-seed generator (tests/conftest.py's, which a folder of its own does not have)."""
    return np.random.default_rng(20261130)


def test_geometric_schedule_differs_from_vllms_two_point_at_the_same_mean(rng):
    s = get_sampler("llamacpp", "synthetic")
    mine, vllm = s.pmf(4.05, 7), get_sampler("vllm", "synthetic").pmf(4.05, 7)
    assert mine.mean() == pytest.approx(vllm.mean(), abs=1e-8)
    assert mine.var() > 100 * vllm.var()
    assert float(mine.probs[0]) > 0.2  # one in five steps accepts nothing
    (warning,) = s.warnings(4.05, 7)
    assert "geometric" in warning
    assert "two-point" in warning
    n = 200_000
    draws = s.simulate(4.05, 7, n, rng)
    assert abs(draws.mean() - 4.05) < 5 * math.sqrt(mine.var() / n)


def test_explicit_rates_validated_like_llamacpp():
    with pytest.raises(SamplerError, match="must contain 3 values, got 2"):
        resolve_rates(None, 3, [0.5, 0.2])
    with pytest.raises(SamplerError, match="non-increasing"):
        resolve_rates(None, 3, [0.5, 0.6, 0.1])
    with pytest.raises(SamplerError, match="mutually exclusive"):
        resolve_rates(2.0, 3, [0.5, 0.4, 0.1])
    with pytest.raises(SamplerError, match=r"within \[1, 4\]"):
        resolve_rates(4.5, 3)
    np.testing.assert_allclose(conditional_probs(np.array([0.9, 0.45, 0.0])), [0.9, 0.5, 0.0])
    assert get_sampler("llamacpp", "synthetic", rates=[0.9, 0.5, 0.2]).pmf(None, 3).mean() == pytest.approx(2.6)


# ---------------------------------------------------------------------------- formats
def test_metrics_counters_delta_and_histogram():
    before = prom.parse_metrics_text(metrics_text(10, 30, 15, [8, 5, 2]), source="a")
    after = prom.parse_metrics_text(metrics_text(20, 60, 33, [17, 11, 5]), source="b")
    assert fcounters.detect_engine(after) == "llamacpp"
    d = fcounters.counters_delta(fcounters.spec_counters(before), fcounters.spec_counters(after))
    assert (d.num_verify_steps, d.num_accepted_drafts, d.al) == (10, 18, 2.8)
    counts = d.to_counts(3)
    assert list(counts.histogram) == [1, 3, 3, 3]
    with pytest.raises(CounterResetError, match="went backwards"):
        fcounters.counters_delta(fcounters.spec_counters(after), fcounters.spec_counters(before))


def test_metrics_without_per_position_series_before_the_first_draft():
    c = read_counters(prom.parse_metrics_text(metrics_text(0, 0, 0, None)))
    assert c.accepted_per_position == ()
    assert c.busy == 0


LOG = """\
srv  load_model: loading draft model '/m/d.gguf'
slot print_timings: id  0 | task 0 | draft acceptance = 0.61111 (   33 accepted /    54 generated), mean len =  2.83
slot print_timings: id  0 | task 19 | draft acceptance = 0.50000 (    9 accepted /    18 generated), mean len =  2.50
"""


def test_log_lines_and_synthetic_lines():
    scan = flc.scan_log(LOG + "spec common_specul: synthetic speculative acceptance is enabled for benchmarking; "
                        "generated output is not valid\n"
                        "spec common_specul: synthetic acceptance: n_max = 3, mean length = 3.850000, "
                        "rates = [0.967, 0.935, 0.904]\n")
    assert [(r.line, r.accepted, r.generated, r.mean_len) for r in scan.requests] == [(2, 33, 54, 2.83),
                                                                                      (3, 9, 18, 2.5)]
    assert scan.requests[0].verify_steps(3) == 18
    assert [(s.line, s.n_max, s.mean_len) for s in scan.synthetic] == [(4, None, None), (5, 3, 3.85)]


def test_timings_counts():
    assert flc.timings_counts({"timings": {"predicted_n": 5}}) is None
    assert flc.timings_counts({"timings": {"draft_n": 6, "draft_n_accepted": 4}}) == (6, 4)
    with pytest.raises(InputFileError, match="not counts"):
        flc.timings_counts({"timings": {"draft_n": 6, "draft_n_accepted": "4"}})
    with pytest.raises(InputFileError, match="> draft_n"):
        flc.timings_counts({"timings": {"draft_n": 3, "draft_n_accepted": 4}})


# ---------------------------------------------------------------------------- AL source
class _FakeClient:
    base_url = "http://fake"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    async def get_text(self, path: str, **_: object) -> str:
        return self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]


def test_counter_source_delta_and_cross_check_with_timings():
    source = make_source("llamacpp-prometheus", "llamacpp")
    assert isinstance(source, LlamaCppPrometheusSource)
    client = _FakeClient([metrics_text(10, 30, 15, [8, 5, 2])])
    before = asyncio.run(source.snapshot(client))  # type: ignore[arg-type]
    # the closing snapshot waits while the slot is still processing
    client.texts = [metrics_text(10, 30, 15, [8, 5, 2], processing=1), metrics_text(16, 48, 25, [14, 9, 2])]
    after = asyncio.run(source.after_unit(client, before, 1, "request 0"))  # type: ignore[arg-type]
    counts = source.delta_counts(before, after, 3, "request 0")
    assert (counts.num_verify_steps, counts.num_accepted_drafts) == (6, 10)
    source.cross_check([{"timings": {"draft_n": 18, "draft_n_accepted": 10}}], counts, 3, "request 0")
    with pytest.raises(ServerError, match="disagrees with the responses' timings"):
        source.cross_check([{"timings": {"draft_n": 24, "draft_n_accepted": 10}}], counts, 3, "request 0")
    # a reply without timings.draft_n is missing evidence, named, never a skipped check
    for resp in ({"timings": {"predicted_n": 20}}, {}):
        with pytest.raises(ServerError, match=r"no response carries timings.draft_n \(missing in 1 of 1\)"):
            source.cross_check([resp], counts, 3, "request 0")


def test_decode_time_of_a_captured_answer_makes_the_step_timing():
    """A captured answer (48 tokens, 35 drafts accepted, predicted_ms 53103.444): its decode steps emit the 47 tokens
    after the prefill's, one step per token not accepted as a draft, so 12 steps of 53103.444 / 12 ms."""
    from golden_al.measure.cell_rows import reported_al
    from golden_al.measure.schema import RequestResult
    from golden_al.measure.totals import request_timing

    resp = json.loads((FIXTURES / "response.0.json").read_text())
    assert reported_al(resp, "llamacpp", "decode_ms") == pytest.approx(53103.444)
    assert reported_al(resp, "sglang", "decode_ms") is None  # an engine whose profile names no such field

    def row(index: int, decode_ms: float, **extra: object) -> RequestResult:
        return RequestResult(index=index, request_id=f"r{index}", draft_len=3, prompt_hash="h", num_output_tokens=48,
                             num_verify_steps=12, num_accepted_drafts=35, histogram=[0, 0, 1, 11],
                             per_position_accepted=[12, 12, 11], decode_ms=decode_ms, load1=1.5, extra=extra or None)

    timing = request_timing([row(0, 53103.444), row(1, 24000.0)], batch=1, source="llamacpp-response-decode-ms")
    assert timing is not None
    (g,) = timing.groups
    assert (timing.unit, g.batch, g.units, g.steps, g.tokens) == ("request", 1, 2, 24, 94)
    assert g.step_ms[1] == pytest.approx((53103.444 / 12 + 2000.0) / 2)
    assert g.load1 == (1.5, 1.5)
    # a window of two requests at concurrency 2 sums their answers: 2 first tokens come from the prefills
    (w,) = request_timing([RequestResult(**{**row(0, 0.0).model_dump(exclude={"extra"}), "num_output_tokens": 96,
                                            "num_verify_steps": 24, "num_accepted_drafts": 70, "histogram": [0, 0, 2, 22],
                                            "per_position_accepted": [24, 24, 22], "decode_ms": 4800.0,
                                            "extra": {"unit": [0, 1]}})],
                          batch=2, source="x").groups  # type: ignore[union-attr]
    assert (w.steps, w.tokens, w.step_ms[1]) == (24, 94, pytest.approx(200.0))


# ---------------------------------------------------------------------------- synthetic refusal
def test_synthetic_acceptance_is_refused_from_flags_env_and_log():
    for args in (["--spec-synth-len", "3"], ["--spec-synth-rates=0.9,0.5,0.2"]):
        with pytest.raises(SyntheticAcceptanceActiveError, match="spec-synth"):
            synthetic.check_engine_args(args)
    for name in ("LLAMA_ARG_SPEC_SYNTH_LEN", "LLAMA_ARG_SPEC_SYNTH_RATES"):
        with pytest.raises(SyntheticAcceptanceActiveError, match=name):
            synthetic.check_launch_env({name: "2.5"})
    with pytest.raises(SyntheticAcceptanceActiveError, match="line 2"):
        synthetic.check_server_log("llamacpp", "x\nspec common_specul: synthetic speculative acceptance is enabled "
                                   "for benchmarking; generated output is not valid\n")
    synthetic.check_server_log("llamacpp", LOG)  # a real run passes


# ---------------------------------------------------------------------------- CLI: env, check-run, simulate
def test_env_json_and_shell(capsys):
    assert main(["env", *MUSE, "--engine", "llamacpp", "--draft-len", "7", "--format", "json"]) == 0
    out, _ = capsys.readouterr()
    assert out == '{"--spec-synth-len": "4.05"}\n'
    assert main(["env", *MUSE, "--engine", "llamacpp", "--draft-len", "7", "--format", "shell"]) == 0
    out, _ = capsys.readouterr()
    assert out == "export LLAMA_ARG_SPEC_SYNTH_LEN=4.05\n"


def test_check_run_on_request_log_lines(tmp_path, capsys):
    log = tmp_path / "server.log"
    log.write_text(LOG)
    # 42 accepted over (54 + 18) / 3 = 24 verify steps: AL 2.75
    assert main(["check-run", str(log), "--engine", "llamacpp", "--expect-al", "2.75", "--draft-len", "3",
                 "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["realized_al"] == pytest.approx(2.75)
    assert result["request_steps"] == 24
    assert main(["check-run", str(log), "--engine", "llamacpp", "--expect-al", "1.2", "--draft-len", "3"]) == 1
    capsys.readouterr()
    assert main(["check-run", str(log), "--engine", "llamacpp", "--expect-al", "2.75", "--draft-len", "4"]) == 2
    assert "not a multiple of k=4" in capsys.readouterr().err


def test_check_run_on_two_metrics_snapshots(tmp_path, capsys):
    a, b = tmp_path / "before.txt", tmp_path / "after.txt"
    a.write_text(metrics_text(10, 30, 15, [8, 5, 2]))
    b.write_text(metrics_text(110, 330, 300, [103, 100, 97]))  # out of order is fine; AL 1 + 285/100
    assert main(["check-run", str(b), str(a), "--engine", "llamacpp", "--expect-al", "3.85", "--draft-len", "3",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["realized_al"] == pytest.approx(3.85)


# ---------------------------------------------------------------------------- build cache
def _fake_build(cache: Path) -> Path:
    d = build.build_dir(cache)
    binary = d / "build" / "bin" / "llama-server"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    (d / "build.json").write_text(json.dumps({"binary": str(binary), "source_sha256": BUILD["sha256"],
                                              "cmake_options": list(build.CMAKE_OPTIONS),
                                              "built_at": "2026-12-01T00:00:00Z", "build_seconds": 1.0}))
    return binary


def test_second_build_call_returns_the_cached_binary_at_once(tmp_path):
    binary = _fake_build(tmp_path)
    result = build.build_llama_server(tmp_path, pip=["/nonexistent-pip"])  # never called
    assert result.cached
    assert result.binary == str(binary)
    assert result.elapsed_s < 1.0
    assert build.cached_binary(tmp_path) == binary
    (build.build_dir(tmp_path) / "build.json").write_text(json.dumps({"binary": str(binary), "source_sha256": "x"}))
    assert build.cached_binary(tmp_path) is None  # a build of another source is not ours


class _FakeBuild:
    """cmake stand-in on a fake clock: configure takes ``configure_s``; each compile run takes the
    next of ``compile_s`` and either finishes the binary or fails/is interrupted (``outcomes``)."""

    def __init__(self, monkeypatch, cache: Path, compile_s, outcomes, configure_s: float = 12.0) -> None:
        self.now, self.cache = 1000.0, cache
        self.compile_s, self.outcomes, self.configure_s = list(compile_s), list(outcomes), configure_s
        monkeypatch.setattr(build, "_clock", lambda: self.now)
        monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/" + name)
        monkeypatch.setattr(build, "_fetch_sdist", lambda root, pip, note: root / "src" / BUILD["filename"])
        monkeypatch.setattr(build, "_extract", lambda sdist, dest: dest / "source")
        monkeypatch.setattr(build, "_run_logged", self.run)

    def run(self, cmd, log, progress, steps=None):
        d = build.build_dir(self.cache) / "build"
        if "-S" in cmd:
            self.now += self.configure_s
            d.mkdir(parents=True, exist_ok=True)
            (d / "CMakeCache.txt").write_text("")
            return
        self.now += self.compile_s.pop(0)
        outcome = self.outcomes.pop(0)
        if steps is not None:
            steps.done, steps.total = (212, 212) if outcome == "built" else (90, 212)
        if outcome == "interrupted":
            raise KeyboardInterrupt
        if outcome == "failed":
            raise build.BuildError("ninja failed")
        (d / "bin").mkdir(exist_ok=True)
        (d / "bin" / "llama-server").write_text("#!/bin/sh\n")
        (d / "bin" / "llama-server").chmod(0o755)


def test_build_record_times_configure_and_compile(tmp_path, monkeypatch):
    _FakeBuild(monkeypatch, tmp_path, [4000.0], ["built"])
    result = build.build_llama_server(tmp_path)
    assert not result.cached
    assert result.build_seconds == pytest.approx(4012.0)  # configure (12 s) + compile (4000 s)
    record = json.loads((build.build_dir(tmp_path) / "build.json").read_text())
    assert record["build_seconds"] == pytest.approx(4012.0)
    assert [a["outcome"] for a in record["build_attempts"]] == ["built"]
    assert build.build_llama_server(tmp_path).build_seconds == pytest.approx(4012.0)  # the cached record says so


def test_build_record_sums_interrupted_and_failed_attempts(tmp_path, monkeypatch):
    """An interrupted build resumes where ninja stopped: the record is the whole build, not the last run."""
    _FakeBuild(monkeypatch, tmp_path, [3000.0, 200.0, 0.3], ["interrupted", "failed", "built"])
    with pytest.raises(KeyboardInterrupt):
        build.build_llama_server(tmp_path)
    with pytest.raises(build.BuildError):
        build.build_llama_server(tmp_path)
    result = build.build_llama_server(tmp_path)
    assert result.build_seconds == pytest.approx(12.0 + 3000.0 + 200.0 + 0.3)
    assert result.attempts == 3
    record = json.loads((build.build_dir(tmp_path) / "build.json").read_text())
    assert [(a["outcome"], a["configured"], a["steps_run"]) for a in record["build_attempts"]] == [
        ("interrupted", True, 90), ("failed", False, 90), ("built", False, 212)]


def test_build_record_says_unknown_when_the_build_directory_was_not_timed(tmp_path, monkeypatch):
    """A build directory configured by a run that kept no attempts: the time is not known, so null."""
    d = build.build_dir(tmp_path) / "build"
    d.mkdir(parents=True)
    (d / "CMakeCache.txt").write_text("")
    (d.parent / "configure.json").write_text(json.dumps({"cmake_options": list(build.CMAKE_OPTIONS)}))
    _FakeBuild(monkeypatch, tmp_path, [0.3], ["built"])
    result = build.build_llama_server(tmp_path)
    assert result.build_seconds is None
    record = json.loads((build.build_dir(tmp_path) / "build.json").read_text())
    assert record["build_seconds"] is None
    assert "0.3 s" in record["build_seconds_note"]


def test_a_cached_record_of_the_old_format_has_no_build_time(tmp_path):
    _fake_build(tmp_path)  # build.json with build_seconds but no build_attempts (timed only the last run)
    assert build.build_llama_server(tmp_path, pip=["/nonexistent-pip"]).build_seconds is None


def test_x86_builds_turn_amx_off_and_other_machines_do_not():
    """ggml's AMX kernels crash llama-server (SIGSEGV) on AMX-reporting VMs; -march=native enables them."""
    x86 = build.cmake_options("x86_64")
    assert f"-DCMAKE_C_FLAGS={build.X86_NO_AMX}" in x86
    assert f"-DCMAKE_CXX_FLAGS={build.X86_NO_AMX}" in x86
    assert set(build.X86_NO_AMX.split()) == {"-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16"}
    assert not any("amx" in o for o in build.cmake_options("aarch64"))
    assert "-DCMAKE_BUILD_TYPE=Release" in build.cmake_options("aarch64")


@pytest.mark.parametrize("recorded", [None, ["-DCMAKE_BUILD_TYPE=Release"]], ids=["unrecorded", "other-options"])
def test_a_build_made_with_other_cmake_options_is_rebuilt_from_scratch(tmp_path, monkeypatch, recorded):
    """The AMX build that crashed CI must not be served from the cache, nor resumed: it is deleted and rebuilt."""
    binary = _fake_build(tmp_path)
    d = build.build_dir(tmp_path)
    record = json.loads((d / "build.json").read_text())
    record.pop("cmake_options")
    if recorded is not None:
        record["cmake_options"] = recorded
        (d / "configure.json").write_text(json.dumps({"cmake_options": recorded}))
    (d / "build.json").write_text(json.dumps(record))
    (d / "build" / "CMakeCache.txt").write_text("")
    (d / "build" / "stale.o").write_text("")
    assert build.cached_binary(tmp_path) is None
    fake = _FakeBuild(monkeypatch, tmp_path, [100.0], ["built"])
    result = build.build_llama_server(tmp_path)
    assert not result.cached
    assert result.binary == str(binary)
    assert not (d / "build" / "stale.o").exists()
    assert json.loads((d / "configure.json").read_text())["cmake_options"] == list(build.CMAKE_OPTIONS)
    assert json.loads((d / "build.json").read_text())["cmake_options"] == list(build.CMAKE_OPTIONS)
    assert result.build_seconds == pytest.approx(fake.configure_s + 100.0)  # configured again, all timed
    assert build.cached_binary(tmp_path) == binary


def test_downloaded_sdist_with_another_hash_is_refused(tmp_path, monkeypatch):
    pip = tmp_path / "fake-pip"
    pip.write_text(f"#!/bin/sh\nwhile [ \"$1\" != -d ]; do shift; done\necho tampered > \"$2/{BUILD['filename']}\"\n")
    pip.chmod(0o755)
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/bin/" + name)
    with pytest.raises(HashMismatchError, match="expected 832db069"):
        build.build_llama_server(tmp_path, pip=[str(pip)])
    assert not (tmp_path / "engines" / "llamacpp" / "src" / BUILD["filename"]).exists()


def test_given_binary_is_checked(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        build.check_binary(tmp_path / "nope")
    f = tmp_path / "llama-server"
    f.write_text("x")
    os.chmod(f, 0o644)
    with pytest.raises(UsageError, match="not executable"):
        build.check_binary(f)


# ---------------------------------------------------------------------------- check (scripts)
CHECK_FIXTURES = fixture("check")


def test_check_finds_llamacpp_pins_in_flags_and_env(capsys):
    assert main(["check", str(CHECK_FIXTURES), "--format", "json"]) == 1  # one mismatch fails the check
    rows = {Path(r["file"]).name: r for r in json.loads(capsys.readouterr().out)}
    flag, env = rows["bench_llamacpp.sh"], rows["bench_env.sh"]
    assert (flag["engine"], flag["draft_len"], flag["thinking"], flag["verdict"]) == ("llamacpp", 3, "off", "match")
    assert flag["pinned_value"] == "3.85"
    assert flag["expected_al"] == 3.85
    assert (env["line"], env["pinned_value"], env["verdict"]) == (3, "3.2", "mismatch")


def test_check_reads_llamacpp_rates_and_refuses_a_varying_draft_length(tmp_path, capsys):
    head = ("MODEL=qwen2.5-coder-1.5b-instruct\nllama-server -m /m/t.gguf -md /m/d.gguf --spec-type draft-simple "
            "--spec-draft-n-max 3 ")
    tail = " --chat-template-kwargs '{\"enable_thinking\": false}'\n"
    (tmp_path / "rates.sh").write_text(head + "--spec-draft-n-min 3 --spec-synth-rates 0.95,0.95,0.95" + tail)
    (tmp_path / "varying.sh").write_text(head + "--spec-synth-len 3.85" + tail)
    main(["check", str(tmp_path), "--format", "json"])
    rows = {Path(r["file"]).name: r for r in json.loads(capsys.readouterr().out)}
    assert rows["rates.sh"]["implied_al"] == pytest.approx(3.85)
    assert rows["rates.sh"]["verdict"] == "match"
    assert rows["varying.sh"]["draft_len"] is None
    assert "n-min 0 != --spec-draft-n-max 3" in rows["varying.sh"]["message"]


def test_counted_steps_drop_the_plain_decode_tail_of_a_budgeted_request():
    # k = 3, budget 10, one token from the prefill: steps start at 1 and 5 tokens out; at 9 out
    # only n_remaining - 1 = 0 drafts fit, below n_min = 3, so llama-server decodes plainly
    assert counted_steps([4, 4, 1], 3, 10) == [4, 4]
    assert counted_steps([4, 4, 1], 3, 11) == [4, 4]  # 11 - 9 - 1 = 1 < 3
    assert counted_steps([4, 4, 4], 3, 13) == [4, 4, 4]  # 13 - 9 - 1 = 3: a full draft fits
    assert counted_steps([2, 1], 3, 128) == [2, 1]  # an early end of sequence keeps every step
    assert counted_steps([2, 2, 2], 1, 6) == [2, 2]  # at k = 1 the last token is plain decode
    assert counted_steps([], 4, 16) == []
