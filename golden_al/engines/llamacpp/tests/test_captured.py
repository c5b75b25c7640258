"""llama.cpp formats against output captured from a real llama-server (fixtures/llamacpp-0c1e570/).

Captured once with ``_capture.py`` (the Qwen2.5-Coder GGUF pair, k=3);
these tests need neither the binary nor the models.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from golden_al.errors import SyntheticAcceptanceActiveError
from golden_al.formats import prometheus as prom
from golden_al.servers import synthetic

from .. import logs as flc
from ..counters import read as read_counters
from ..sampler import resolve_rates
from ..server import LlamaCppPrometheusSource
from . import fixture

FIXTURES = fixture("llamacpp-0c1e570")


def _fixture(name: str) -> str:
    path = FIXTURES / name
    if not path.exists():
        pytest.fail(f"{path} is missing: capture it with python -m golden_al.engines.llamacpp.tests._capture")
    return path.read_text()


def test_real_metrics_deltas_equal_each_responses_timings():
    snaps = [read_counters(prom.parse_metrics_text(_fixture(f"metrics.{i}.txt"), source=f"metrics.{i}"))
             for i in range(3)]
    assert snaps[0].num_drafts == 0
    for i in range(2):
        resp = json.loads(_fixture(f"response.{i}.json"))
        drafted, accepted = flc.timings_counts(resp)  # type: ignore[misc]
        d = snaps[i + 1].minus(snaps[i])
        assert (d.num_draft_tokens, d.num_accepted_tokens) == (drafted, accepted)
        assert d.num_draft_tokens == 3 * d.num_drafts  # n_min = n_max = 3: every verify step drafts 3
        counts = d.to_counts(3)
        assert sum(counts.histogram) == d.num_drafts
        source = LlamaCppPrometheusSource()
        source.cross_check([resp], counts, 3, f"response {i}")


def test_real_log_lines_agree_with_the_counters():
    lines = flc.scan_log(_fixture("server.log")).requests
    assert len(lines) == 2
    first, last = (read_counters(prom.parse_metrics_text(_fixture(f"metrics.{i}.txt"))) for i in (0, 2))
    d = last.minus(first)
    assert sum(r.accepted for r in lines) == d.num_accepted_tokens
    assert sum(r.generated for r in lines) == d.num_draft_tokens
    for r in lines:
        steps = r.verify_steps(3)
        assert steps is not None
        assert r.mean_len == pytest.approx(1 + r.accepted / steps, abs=0.005)
    synthetic.check_server_log("llamacpp", _fixture("server.log"))  # a real run is not refused


def test_real_synthetic_startup_lines_match_our_schedule():
    text = _fixture("synthetic.log")
    with pytest.raises(SyntheticAcceptanceActiveError, match="synthetic acceptance"):
        synthetic.check_server_log("llamacpp", text)
    (info,) = [s for s in flc.scan_log(text).synthetic if s.n_max is not None]
    assert info.n_max == 3
    assert info.mean_len == pytest.approx(2.5, abs=1e-6)
    # the server prints its rates with %.6g: ours must agree to that precision
    np.testing.assert_allclose(info.rates, resolve_rates(2.5, 3), rtol=1e-5)
