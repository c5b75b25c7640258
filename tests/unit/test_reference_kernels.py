"""The reference engine's transposed linear layers (``--cpu-kernels transposed``, the CPU float32 default).

Tiny models built from a config, in float32 (the dtype the switch applies to). The switch must
cover every linear layer, keep outputs to float32 rounding (with and without bias, on both
sides of the row bounds), leave other dtypes alone, be undone by ``use_torch_linear``, and
keep greedy live decoding equal to replay.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from golden_al.engines.offline_reference import ReferenceEngine, SamplingParams  # noqa: E402
from golden_al.engines.offline_reference.kernels import (  # noqa: E402
    MAX_ROWS,
    MIN_ROWS,
    TransposedLinear,
    use_torch_linear,
    use_transposed_linear,
)
from golden_al.engines.offline_reference.tiny import tiny_pair  # noqa: E402

pytestmark = pytest.mark.torch
MAX_TOKENS = 24
KS = (1, 2, 4, 8)


def _count(model, cls) -> int:
    return sum(type(m) is cls for m in model.modules())


@pytest.fixture(scope="module")
def pair32():
    target, draft = tiny_pair(vocab_size=96, seed=4, noise=0.05)
    return target.float(), draft.float()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows", [1, MIN_ROWS, 7, MAX_ROWS, MAX_ROWS + 1])
def test_transposed_product_equals_linear(bias, rows):
    gen = torch.Generator().manual_seed(rows + bias)
    lin = torch.nn.Linear(48, 80, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(80, 48, generator=gen))
        if bias:
            lin.bias.copy_(torch.randn(80, generator=gen))
    x = torch.randn(1, rows, 48, generator=gen)
    want = lin(x)
    lin.__class__ = TransposedLinear
    got = lin(x)
    assert got.shape == want.shape
    assert got.is_contiguous()
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), float((got - want).abs().max())


def test_every_float32_linear_switches_and_back(pair32):
    target, _ = pair32
    model = copy.deepcopy(target)
    n = _count(model, torch.nn.Linear)
    assert n > 0
    ids = torch.tensor([[5, 9, 17, 33, 2, 40, 41]])
    with torch.inference_mode():
        want = model(input_ids=ids).logits
        assert use_transposed_linear(model) == n
        assert _count(model, torch.nn.Linear) == 0
        assert _count(model, TransposedLinear) == n
        got = model(input_ids=ids).logits
        assert use_torch_linear(model) == n
        assert _count(model, torch.nn.Linear) == n
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), float((got - want).abs().max())


def test_other_dtypes_are_left_alone(pair32):
    target, _ = pair32
    t64 = copy.deepcopy(target).double()
    n = _count(t64, torch.nn.Linear)
    assert use_transposed_linear(t64) == 0
    assert _count(t64, torch.nn.Linear) == n


def test_live_equals_replay_on_transposed_layers(pair32):
    target, draft = (copy.deepcopy(m) for m in pair32)
    use_transposed_linear(target)
    use_transposed_linear(draft)
    rng = np.random.default_rng(7)
    prompts = [rng.integers(4, 96, size=int(rng.integers(2, 10))).tolist() for _ in range(5)]
    engine = ReferenceEngine(target, draft, eos_token_ids=[3])
    sampling = SamplingParams(max_tokens=MAX_TOKENS)
    replay = engine.replay(prompts, draft_lens=KS, sampling=sampling, batch_size=4)
    spread = set()
    for k in KS:
        live = engine.generate(prompts, draft_len=k, sampling=sampling, batch_size=3)
        for lo, ro in zip(live, replay, strict=True):
            assert lo.output_token_ids == ro.output_token_ids, f"k={k} prompt {lo.index}"
            assert lo.accepted == ro.accepted(k), f"k={k} prompt {lo.index}"
            spread.update(lo.accepted)
    assert len(spread) > 2  # acceptance varies, so the comparison can fail


def test_settings_refuse_unknown_kernels():
    from golden_al.errors import UsageError
    from golden_al.measure.reference import ReferenceSettings

    assert ReferenceSettings(draft_lens=[3]).cpu_kernels == "transposed"
    assert ReferenceSettings(draft_lens=[3], cpu_kernels="torch").cpu_kernels == "torch"
    with pytest.raises(UsageError, match="cpu kernels"):
        ReferenceSettings(draft_lens=[3], cpu_kernels="blas")
