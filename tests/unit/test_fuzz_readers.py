"""Hypothesis fuzzing of every reader (``_fuzz_readers.py``) in a child process whose time
and peak memory are asserted: no generated input may hang, exhaust memory, or end in an
exception other than a named golden-al error."""

from __future__ import annotations

import sys
from pathlib import Path

from _bounded import run_bounded

HERE = Path(__file__).resolve().parent
EXAMPLES = 25  # per reader; ~19 readers, a few minutes of one core in all
LIMIT_MB = 500.0


def test_every_reader_survives_fuzzing_within_bounds() -> None:
    from _fuzz_readers import readers

    ran = run_bounded([sys.executable, str(HERE / "_fuzz_readers.py"), "--examples", str(EXAMPLES)], timeout=840)
    assert not ran.timed_out, ran.stdout[-2000:] + ran.stderr[-4000:]
    assert ran.rc == 0, ran.stdout[-2000:] + ran.stderr[-4000:]
    assert ran.peak_rss_mb < LIMIT_MB
    done = [line.split(" ", 1)[1].rsplit(" ", 1)[0] for line in ran.stdout.splitlines() if line.startswith("ok ")]
    assert done == [name for name, _, _ in readers()]
