"""Issue 51: readers that refuse what they cannot read, waits that end, cross-checks on both sides, evidence counted
once. Each test here failed before the change it names."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from golden_al.errors import ServerError

pytestmark = pytest.mark.hostile


# ---------------------------------------------------------------------------- 4. every wait has a deadline
class FakeClock:
    """An injected clock: ``sleep`` advances it, nothing waits for real."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


class MovingServer:
    """Answers every GET with counters that grow on each read (another client keeps it busy), no busy gauge."""

    base_url = "http://moving.test"

    def __init__(self) -> None:
        self.reads = 0

    async def get_json(self, path: str, *, label: str, optional: bool = False) -> Any:
        self.reads += 1
        n = self.reads
        if path == "/debug/mtp_stats":
            return {"enabled": True, "total_draft_tokens": 3 * n, "total_accepted_tokens": n,
                    "distribution": {"1": n}}
        if path == "/metrics":  # TensorRT-LLM: one more iteration row per drain
            return [{"iter": n, "numCompletedRequests": 0, "specDecodingStats": {
                "numDraftTokens": 3, "numAcceptedTokens": 1, "numRequestsWithDraftTokens": 1,
                "acceptanceLength": 2.0}}]
        return []


class IdleServer(MovingServer):
    """Its counters stay where they are (TensorRT-LLM: nothing left to drain)."""

    async def get_json(self, path: str, *, label: str, optional: bool = False) -> Any:
        return [] if path != "/debug/mtp_stats" else await MovingServer.get_json(self, path, label=label)


def _wait(source: Any, server: Any = None) -> tuple[FakeClock, BaseException | None]:
    clock = FakeClock()
    source.clock, source.sleep = clock, clock.sleep
    try:
        asyncio.run(source.wait_idle(server or MovingServer(), "unit 1"))
    except ServerError as exc:
        return clock, exc
    return clock, None


@pytest.mark.timeout(20)
@pytest.mark.parametrize("engine", ["atom", "trtllm"])
def test_counters_that_never_settle_without_a_busy_gauge_are_refused_within_a_minute(engine):
    from golden_al.engines.atom.server import AtomMtpStatsSource
    from golden_al.engines.trtllm.server import TrtllmIterationSource

    source = AtomMtpStatsSource() if engine == "atom" else TrtllmIterationSource()
    clock, exc = _wait(source)
    assert exc is not None
    assert 60 <= clock.now <= 62  # the documented bound, on the injected clock
    assert "kept moving for 60 s" in str(exc)
    assert "another client" in str(exc)
    assert exc.exit_code == 1


# ---------------------------------------------------------------------------- 5. evidence counted once
CELL = __import__("pathlib").Path(__file__).resolve().parents[2] / "experiments" / "qwen-coder-curve" / "humaneval" / "k4"


@pytest.mark.parametrize("edit", ["repeat-rows", "same-id"])
def test_a_record_whose_request_rows_repeat_is_refused_by_verify_naming_the_lines(tmp_path, capsys, edit):
    import json
    import shutil

    from golden_al.cli.main import main

    cell = tmp_path / "cell"
    shutil.copytree(CELL, cell)
    lines = (cell / "requests.jsonl").read_text().splitlines()
    if edit == "repeat-rows":  # the rows held twice: 160 "requests" where the run made 80
        lines += lines
        said = f"prompt {json.loads(lines[0])['index']} has two results at k=4 (lines 1 and 81)"
    else:  # a row under another index but the same request id
        row = json.loads(lines[0])
        row["index"] = 999
        lines.append(json.dumps(row))
        said = f"request id {row['request_id']!r} has two results at k=4 (lines 1 and 81)"
    (cell / "requests.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["verify", str(cell)]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert "requests.jsonl:81" in err


# ---------------------------------------------------------------------------- 1. one policy for every reader
def _trtllm_rows(*, al: float, k: int, rows: int, batch: int = 8, seed: int = 0,
                 iterations: bool = True) -> tuple[list[str], list[int]]:
    """``trtllm-bench --iteration_log`` JSON rows of ``batch`` requests each (true AL ``al``), and their accepted."""
    import json

    import numpy as np
    from _recorded_runs import rate_for_al

    rng = np.random.default_rng(seed)
    p = rate_for_al(al, k)
    lines, accepted = [], []
    for i in range(rows):
        a = int(np.minimum(rng.geometric(1.0 - p, batch) - 1, k).sum())
        row = {"timestamp": f"12-05-2026 10:{i // 60 % 60:02d}:{i % 60:02d}", **({"iter": i} if iterations else {}),
               "numActiveRequests": batch, "specDecodingStats": {
                   "numDraftTokens": batch * k, "numAcceptedTokens": a, "numRequestsWithDraftTokens": batch,
                   "acceptanceLength": (a + batch) / batch}}
        lines.append(json.dumps(row))
        accepted.append(a)
    return lines, accepted


def _engine_log(engine: str, path: Any) -> list[str]:
    from _recorded_runs import write_log

    if engine == "trtllm":
        return _trtllm_rows(al=2.5, k=3, rows=40)[0]
    return write_log(engine, path, al=2.5, k=3, windows=40, steps=40).read_text().splitlines()


ENGINES = ["sglang", "vllm", "atom", "llamacpp", "trtllm"]


def _check_run(capsys: Any, engine: str, *files: Any, expect: str = "2.5", k: int = 3) -> tuple[int, str]:
    from golden_al.cli.main import main

    code = main(["check-run", *map(str, files), "--engine", engine, "--expect-al", expect, "--draft-len", str(k),
                 "--format", "json"])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.fixture(params=ENGINES)
def engine(request: Any) -> str:
    return request.param


def test_a_line_cut_inside_the_log_is_refused_naming_the_count_and_the_first(engine, tmp_path, capsys):
    lines = _engine_log(engine, tmp_path / "x.log")
    cut = [ln if i not in (10, 25) else ln[: len(ln) - 12] for i, ln in enumerate(lines)]
    log = tmp_path / "run.log"
    log.write_text("\n".join(cut) + "\n")
    code, said = _check_run(capsys, engine, log)
    assert code == 2, said
    assert "run.log:11: 2 " in said
    assert "line(s) name its fields but do not parse (first: " in said


def test_only_a_cut_last_line_is_left_out_and_that_is_said(engine, tmp_path, capsys):
    lines = _engine_log(engine, tmp_path / "x.log")
    log = tmp_path / "run.log"
    log.write_text("\n".join([*lines[:-1], lines[-1][: len(lines[-1]) - 12]]))  # a crash cut the last write
    code, said = _check_run(capsys, engine, log)
    assert code in (0, 1), said
    assert f"its last line ({{}}, line {len(lines)}) is cut short and was left out" .format(
        {"sglang": "SGLang", "vllm": "vLLM", "atom": "ATOM", "llamacpp": "llama.cpp server",
         "trtllm": "TensorRT-LLM iteration"}[engine]) in said


def test_a_log_held_twice_is_refused_not_summed_twice(engine, tmp_path, capsys):
    lines = _engine_log(engine, tmp_path / "x.log")
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    copy = tmp_path / "copy.log"
    copy.write_text("\n".join(lines) + "\n")
    code, said = _check_run(capsys, engine, log, copy)  # the same run passed twice
    assert code == 2, said
    assert "copy.log:1: this row appears twice, word for word (first at " in said
    both = tmp_path / "both.log"
    both.write_text("\n".join(lines + lines) + "\n")  # concatenated with itself
    code, said = _check_run(capsys, engine, both)
    twice = "iteration 0 appears twice (lines 1 and 41)" if engine == "trtllm" else \
        f"both.log:{len(lines) + 1}: this row appears twice"
    assert code == 2, said
    assert twice in said


def test_a_trtllm_log_without_iteration_numbers_held_twice_is_refused(tmp_path, capsys):
    lines, _ = _trtllm_rows(al=2.5, k=3, rows=40, iterations=False)
    log = tmp_path / "rows.log"
    log.write_text("\n".join(lines + lines) + "\n")
    code, said = _check_run(capsys, "trtllm", log)
    assert code == 2, said
    assert "rows.log:41: this row appears twice" in said


def test_trtllm_rows_cut_short_no_longer_lift_a_run_to_the_golden(tmp_path, capsys):
    """Issue 51's case: true AL 2.2, its lowest rows cut short; the reader skipped them and the run passed at 2.49."""
    lines, accepted = _trtllm_rows(al=2.2, k=3, rows=300, seed=5)
    low = set(sorted(range(len(lines)), key=accepted.__getitem__)[:110])
    kept = [a for i, a in enumerate(accepted) if i not in low]
    lifted = 1 + sum(kept) / (8 * len(kept))
    assert lifted > 2.4  # what the old reader measured
    log = tmp_path / "iteration.log"
    log.write_text("\n".join(ln[: len(ln) // 2] if i in low else ln for i, ln in enumerate(lines)) + "\n")
    code, said = _check_run(capsys, "trtllm", log, expect=f"{lifted:.2f}")
    assert code == 2, said
    assert "110 TensorRT-LLM iteration line(s) name its fields but do not parse" in said


# ---------------------------------------------------------------------------- 2. the k the rows show is the k
def _k2_rows(tmp_path: Any) -> tuple[Any, float]:
    """A TensorRT-LLM iteration log whose requests never propose more than 2 drafts (true AL 2.2)."""
    lines, accepted = _trtllm_rows(al=2.2, k=2, rows=120, seed=3)
    log = tmp_path / "k2.log"
    log.write_text("\n".join(lines) + "\n")
    return log, 1 + sum(accepted) / (8 * len(accepted))


def test_check_run_refuses_rows_that_show_another_k_naming_both(tmp_path, capsys):
    log, al = _k2_rows(tmp_path)
    code, said = _check_run(capsys, "trtllm", log, expect=f"{al:.2f}", k=3)
    assert code == 2, said
    assert "propose at most 2 drafts per verify step: the engine ran k = 2, not the claimed k = 3" in said
    assert _check_run(capsys, "trtllm", log, expect=f"{al:.2f}", k=2)[0] == 0


def test_an_import_files_the_observed_k_and_refuses_another(tmp_path, capsys):
    import json

    from golden_al.cli.main import main

    log, _ = _k2_rows(tmp_path)
    base = ["import", "trtllm-iteration-log", str(log), "--thinking", "off", "--temperature", "0", "--max-tokens",
            "64", "--model", "m"]
    assert main([*base, "--draft-len", "3", "--out", str(tmp_path / "k3")]) == 2
    assert "the engine ran k = 2, not the claimed k = 3" in capsys.readouterr().err
    assert not (tmp_path / "k3" / "measurement.json").exists()
    assert main([*base, "--draft-len", "2", "--out", str(tmp_path / "k2")]) == 0
    rec = json.loads((tmp_path / "k2" / "measurement.json").read_text())
    assert (rec["draft_len"], rec["draft_len_observed"]) == (2, 2)


def test_a_server_measurement_is_not_filed_at_a_k_its_rows_never_reach():
    """The iteration source's units carry the most drafts a step proposed; the record's one builder refuses a run
    whose units never reach the claimed k (a short request may stop below it; the run may not)."""
    from golden_al.engines.trtllm.server import TrtllmIterationSource
    from golden_al.engines.trtllm.tests._drained import unit_delta
    from golden_al.errors import CounterSemanticsError
    from golden_al.measure.imported.common import imported_record
    from golden_al.plugin.imported import ImportedDataset, ImportedRun, ImportedWindows, ImportOptions

    rows = [{"iter": i, "numCompletedRequests": int(i == 4), "specDecodingStats": {
        "numDraftTokens": 2 * (i > 0), "numAcceptedTokens": i % 2, "numRequestsWithDraftTokens": int(i > 0)}}
        for i in range(5)]
    _, counts = unit_delta(TrtllmIterationSource(), "/metrics", [[], rows], 3)
    assert counts.most_drafts == 2
    opts = ImportOptions(thinking="off", temperature=0.0, max_tokens=8)
    with pytest.raises(CounterSemanticsError, match="the engine ran k = 2, not the claimed k = 3"):
        imported_record(ImportedRun(ImportedWindows([counts, counts], 3, "unit", []), k=3, opts=opts, engine="trtllm",
                                    source="trtllm-iteration-stats", files=[CELL / "measurement.json"], model="m",
                                    num_requests=2, dataset=ImportedDataset("d", 2, "d", "d"), warnings=[]))


# ---------------------------------------------------------------------------- 3. two sources of one count agree
def _trtllm_request(accepted: list[int], *, k: int = 3) -> tuple[list[dict], dict]:
    """One request as trtllm-serve drains it: its iteration rows (context, then one step each) and its
    /perf_metrics entry."""
    rows = [{"iter": 0, "numCompletedRequests": 0, "specDecodingStats": {
        "numDraftTokens": 0, "numAcceptedTokens": 0, "numRequestsWithDraftTokens": 0}}]
    rows += [{"iter": i + 1, "numCompletedRequests": int(i == len(accepted) - 1), "specDecodingStats": {
        "numDraftTokens": k, "numAcceptedTokens": n, "numRequestsWithDraftTokens": 1}} for i, n in enumerate(accepted)]
    drafted, acc = k * len(accepted), sum(accepted)
    entry = {"request_id": "r1", "perf_metrics": {"first_iter": 0, "last_iter": len(accepted), "speculative_decoding": {
        "acceptance_rate": acc / drafted, "total_accepted_draft_tokens": acc, "total_draft_tokens": drafted}}}
    return rows, entry


def _lying(entry: dict, accepted: int) -> dict:
    """The entry with another accepted count, its acceptance rate made to match (a consistent lie)."""
    spec = dict(entry["perf_metrics"]["speculative_decoding"], total_accepted_draft_tokens=accepted)
    spec["acceptance_rate"] = accepted / spec["total_draft_tokens"]
    return {**entry, "perf_metrics": {**entry["perf_metrics"], "speculative_decoding": spec}}


@pytest.mark.parametrize("primary", ["/perf_metrics", "/metrics"])
def test_trtllm_perf_metrics_and_iteration_rows_are_both_read_and_must_agree(primary):
    from golden_al.engines.trtllm.server import TrtllmIterationSource, TrtllmPerfMetricsSource
    from golden_al.engines.trtllm.tests._drained import unit_delta
    from golden_al.errors import CountsDisagreeError
    from golden_al.plugin import checks_ran

    def delta(rows: list[dict], entry: dict) -> Any:
        drains = {"/metrics": [[], rows], "/perf_metrics": [[], [entry]]}
        source = TrtllmPerfMetricsSource() if primary == "/perf_metrics" else TrtllmIterationSource()
        return unit_delta(source, primary, drains.pop(primary), 3, drains)[1]

    rows, entry = _trtllm_request([3, 1, 0, 2, 2])
    with checks_ran.recording():
        counts = delta(rows, entry)
        assert checks_ran.current() == {"two-sources-agree": 1}
    assert (counts.num_verify_steps, counts.num_accepted_drafts, counts.num_draft_tokens) == (5, 8, 15)
    with pytest.raises(CountsDisagreeError, match=r"two sources of the same counts disagree.*8 accepted of 15.*says "
                                                  r"14 of 15 in 5 iterations"):
        delta(rows, _lying(entry, 14))  # /perf_metrics claims AL 3.8 where the rows say 2.6


@pytest.mark.timeout(20)
def test_an_idle_trtllm_server_settles_at_once():
    """Drains without rows leave the source's sums equal (a per-drain history would never settle)."""
    from golden_al.engines.trtllm.server import TrtllmIterationSource

    clock, exc = _wait(TrtllmIterationSource(), IdleServer())
    assert exc is None
    assert clock.now == 1.0  # one settle interval: two equal snapshots


@pytest.mark.parametrize("engine", ["vllm", "atom"])
def test_a_log_of_another_k_is_refused_naming_both(engine, tmp_path, capsys):
    """vLLM prints a rate per draft position and ATOM's toks/fwd is 1 + accepted / (draft tokens / K): a k=2 log read
    at --draft-len 3 was judged (and passed) at the AL its draft tokens give under k = 3."""
    from _recorded_runs import write_log

    from golden_al.formats.logs import scan_log_text

    log = write_log(engine, tmp_path / "k2.log", al=2.2, k=2, windows=60, steps=60, seed=4)
    recs = scan_log_text(log.read_text()).records
    drafted = sum(getattr(r, "drafted_tokens", 0) or getattr(r, "draft_tokens", 0) for r in recs)
    as_k3 = 1 + sum(r.accepted_tokens for r in recs) * 3 / drafted  # what the old reader judged
    code, said = _check_run(capsys, engine, log, expect=f"{as_k3:.2f}", k=3)
    assert code == 2, said
    assert "drafts per verify step: the engine ran k = 2, not the claimed k = 3" in said
