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


def _wait(source: Any) -> tuple[FakeClock, BaseException | None]:
    clock = FakeClock()
    source.clock, source.sleep = clock, clock.sleep
    try:
        asyncio.run(source.wait_idle(MovingServer(), "unit 1"))
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
    assert "kept moving for 60 s" in str(exc) and "another client" in str(exc)
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
    assert said in err and "requests.jsonl:81" in err
