"""The shared prompt prefix of the reference engine (golden_al.reference.prefix).

* which prefix is shared (common tokens, two kept per prompt, a minimum length);
* a forked prefix cache plus the rest of the prompt gives the logits of a full forward;
* with a shared prefix, live == replay step for step at every k in both step conventions,
  greedy stays lossless against the target's own output, and the trajectory check holds;
* a subset of the prompts given the full set's prefix (a resumed run) decodes exactly as
  the full run did, a lone prompt included.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from golden_al.reference import ReferenceEngine, SamplingParams  # noqa: E402
from golden_al.reference.batch_cache import BatchedKV  # noqa: E402
from golden_al.reference.prefix import SharedPrefix, shared_prefix_len  # noqa: E402
from golden_al.reference.tiny import tiny_pair  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("torch_one_thread")]

MAX_TOKENS = 32
PREFIX = [5, 17, 9, 33, 21, 8]


@pytest.fixture(scope="module")
def pair():
    return tiny_pair(vocab_size=128, seed=0, noise=0.04)


@pytest.fixture(scope="module")
def prompts() -> list[list[int]]:
    rng = np.random.default_rng(7)
    # the shared prefix, then 2..9 tokens of each prompt's own (one starts like another)
    out = [PREFIX + rng.integers(40, 128, size=int(rng.integers(2, 10))).tolist() for _ in range(6)]
    out[3] = PREFIX + out[2][len(PREFIX):len(PREFIX) + 1] + [77, 78]
    return out


def test_shared_prefix_len_rules():
    assert shared_prefix_len([[1, 2, 3, 4, 5, 6, 7]]) == 0  # one prompt shares with nothing
    assert shared_prefix_len([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 9, 9]]) == 6
    # two tokens of the shortest prompt are kept out of the prefix
    assert shared_prefix_len([[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 7]]) == 5
    assert shared_prefix_len([[1, 2, 3, 9, 9], [1, 2, 3, 8, 8]]) == 0  # under MIN_SHARED_PREFIX
    assert shared_prefix_len([[2, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]]) == 0
    assert shared_prefix_len([]) == 0


def test_shared_prefix_refuses_a_prompt_without_it():
    with pytest.raises(ValueError, match="shared prefix"):
        SharedPrefix([[*PREFIX, 1, 2], [5, 17, 9, 0, 0, 0, 1, 2]], len(PREFIX))
    with pytest.raises(ValueError, match="fewer than 2"):
        SharedPrefix([[*PREFIX, 1, 2], [*PREFIX, 1]], len(PREFIX))


def test_forked_prefix_plus_rest_matches_a_full_forward(pair, prompts):
    target, _ = pair
    prefix = SharedPrefix(prompts, None)
    assert len(prefix) == len(PREFIX)
    with torch.inference_mode():
        rows = [prefix.rest(p) for p in prompts[:3]]
        kv = prefix.cache(target, 3)
        from golden_al.reference.batch_cache import left_pad

        ids, valid = left_pad(rows)
        logits = kv.forward(ids, valid, logits_to_keep=1)[:, -1]
        for b, p in enumerate(prompts[:3]):
            full = target(torch.tensor([p])).logits[0, -1]
            torch.testing.assert_close(logits[b], full, rtol=0, atol=1e-5)
        # the one-row prefix cache is untouched by its forks' forwards
        again = prefix.cache(target, 1)
        assert again.length == len(PREFIX)
        with pytest.raises(ValueError, match="one-row"):
            kv.fork(2)
    assert isinstance(again, BatchedKV)


def _target_greedy(target, prompt: list[int], max_tokens: int) -> list[int]:
    out = target.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                          max_new_tokens=max_tokens, do_sample=False, eos_token_id=[], pad_token_id=0)
    return out[0, len(prompt):].tolist()


@pytest.mark.slow
@pytest.mark.parametrize("prefill_emits_token", [True, False])
def test_live_equals_replay_with_a_shared_prefix(pair, prompts, prefill_emits_token):
    target, draft = pair
    engine = ReferenceEngine(target, draft, eos_token_ids=[], prefill_emits_token=prefill_emits_token)
    sampling = SamplingParams(max_tokens=MAX_TOKENS)
    replay = engine.replay(prompts, draft_lens=range(1, 9), sampling=sampling, batch_size=4)
    for o, p in zip(replay, prompts, strict=True):
        assert o.output_token_ids == _target_greedy(target, p, MAX_TOKENS)  # lossless
    for k in range(1, 9):
        live = engine.generate(prompts, draft_len=k, sampling=sampling, batch_size=4)
        for lo, ro in zip(live, replay, strict=True):
            assert lo.output_token_ids == ro.output_token_ids
            assert lo.accepted == ro.accepted(k), f"k={k} prompt {lo.index}"
    spec = engine.replay(prompts, draft_lens=range(1, 9), sampling=sampling, batch_size=4, trajectory_draft_len=4)
    assert all(o.trajectory_check is True for o in spec)
    assert [o.output_token_ids for o in spec] == [o.output_token_ids for o in replay]


@pytest.mark.parametrize("mode", ["live", "replay"])
def test_a_resumed_subset_decodes_as_the_full_run(pair, prompts, mode):
    target, draft = pair
    engine = ReferenceEngine(target, draft, eos_token_ids=[])
    sampling = SamplingParams(max_tokens=MAX_TOKENS)
    n = shared_prefix_len(prompts)

    def run(ps: list[list[int]], idx: list[int], shared: int | None):
        if mode == "live":
            outs = engine.iter_generate(ps, draft_len=3, sampling=sampling, batch_size=2, indices=idx,
                                        shared_prefix=shared)
            return {o.index: (o.output_token_ids, o.accepted) for o in outs}
        outs = engine.iter_replay(ps, draft_lens=[3], sampling=sampling, batch_size=2, indices=idx,
                                  shared_prefix=shared)
        return {o.index: (o.output_token_ids, o.accepted(3)) for o in outs}

    full = run(prompts, list(range(len(prompts))), None)
    for subset in ([4], [1, 5]):
        part = run([prompts[i] for i in subset], subset, n)
        assert part == {i: full[i] for i in subset}


def test_admission_groups_bound_tokens_and_padding():
    from collections import deque

    from golden_al.reference.live import admission_group

    q = deque([(0, [1] * 100), (1, [1] * 95), (2, [1] * 40), (3, [1] * 40)])
    assert [i for i, _ in admission_group(q, 4, 256)] == [0, 1]  # a third would pad past 256 tokens
    assert [i for i, _ in admission_group(q, 4, 256)] == [2, 3]
    q = deque([(0, [1] * 100), (1, [1] * 50)])
    assert [i for i, _ in admission_group(q, 4, 256)] == [0]  # 50 padding slots on 150 tokens: too many
    q = deque([(0, [1] * 30 + [2] * 70), (1, [1] * 30 + [3] * 64)])
    assert [i for i, _ in admission_group(q, 4, 150, skip=30)] == [0, 1]  # only the rest is prefilled
    q = deque([(0, [1] * 300), (1, [1] * 300)])
    assert [i for i, _ in admission_group(q, 4, 256)] == [0]  # one prompt always goes, however long
    assert [i for i, _ in admission_group(q, 1, 4096)] == [1]  # never more than the free rows
