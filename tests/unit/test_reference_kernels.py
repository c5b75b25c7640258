"""The reference engine's CPU linear-layer forms (``--cpu-kernels onednn|transposed|torch``).

Tiny models built from a config, in float32 (the dtype the switch applies to). Each form must
cover every linear layer, keep outputs to float32 rounding (with and without bias, on both
sides of the row bounds, for 2D and 3D inputs), leave other dtypes alone, be undone by
``use_cpu_kernels(model, "torch")``, and keep greedy live decoding equal to replay. ``onednn`` (the default)
falls back to ``transposed`` on a torch without oneDNN, and the run records what it used.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from golden_al.reference import ReferenceEngine, SamplingParams  # noqa: E402
from golden_al.reference.kernels import (  # noqa: E402
    MAX_ROWS,
    MIN_ROWS,
    OneDNNLinear,
    TransposedLinear,
    onednn_available,
    use_cpu_kernels,
)
from golden_al.reference.tiny import tiny_pair  # noqa: E402

pytestmark = pytest.mark.torch
needs_onednn = pytest.mark.skipif(not onednn_available(), reason="this torch build has no oneDNN")
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


@needs_onednn
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (3, 16), (2, 130), (600,)])
def test_onednn_product_equals_linear(bias, shape):
    gen = torch.Generator().manual_seed(len(shape) * 100 + shape[-1] + bias)
    lin = torch.nn.Linear(48, 80, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(80, 48, generator=gen))
        if bias:
            lin.bias.copy_(torch.randn(80, generator=gen))
    x = torch.randn(*shape, 48, generator=gen)
    want = (x.double() @ lin.weight.double().t() + (lin.bias.double() if bias else 0.0))
    lin.__class__ = OneDNNLinear
    got = lin(x)
    assert got.shape == want.shape
    assert got.dtype == torch.float32
    assert got.is_contiguous()
    # float32 accumulation: |error| <= K * eps * sum|x w| (a loose bound; bfloat16 math would miss it 100x)
    bound = 48 * 2.0**-23 * (x.double().abs() @ lin.weight.double().abs().t() + 1.0)
    assert bool(((got.double() - want).abs() <= bound).all()), float((got.double() - want).abs().max())
    # and it is not bit-identical garbage: the same call twice gives the same bits
    assert torch.equal(got, lin(x))


@needs_onednn
def test_onednn_handles_noncontiguous_and_empty_inputs():
    lin = torch.nn.Linear(16, 8)
    lin.__class__ = OneDNNLinear
    x = torch.randn(16, 5).t()  # (5, 16), not contiguous
    assert torch.allclose(lin(x), torch.nn.functional.linear(x, lin.weight, lin.bias), rtol=1e-5, atol=1e-6)
    assert lin(torch.randn(0, 16)).shape == (0, 8)


@pytest.mark.parametrize("kind", ["onednn", "transposed"])
def test_every_float32_linear_switches_to_each_form_and_back(pair32, kind):
    if kind == "onednn" and not onednn_available():
        pytest.skip("this torch build has no oneDNN")
    target, _ = pair32
    model = copy.deepcopy(target)
    n = _count(model, torch.nn.Linear)
    cls = {"onednn": OneDNNLinear, "transposed": TransposedLinear}[kind]
    ids = torch.tensor([[5, 9, 17, 33, 2, 40, 41]])
    with torch.inference_mode():
        want = model(input_ids=ids).logits
        assert use_cpu_kernels(model, kind) == n
        assert _count(model, cls) == n
        assert use_cpu_kernels(model, kind) == 0  # already in that form
        got = model(input_ids=ids).logits
        other = "transposed" if kind == "onednn" else "onednn"
        if onednn_available():
            assert use_cpu_kernels(model, other) == n  # one form to another directly
        assert use_cpu_kernels(model, "torch") == n
        assert _count(model, torch.nn.Linear) == n
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), float((got - want).abs().max())


def test_unknown_form_is_refused(pair32):
    with pytest.raises(ValueError, match="unknown cpu kernels"):
        use_cpu_kernels(pair32[0], "blas")


def test_onednn_is_not_switched_on_without_onednn(pair32, monkeypatch):
    from golden_al.reference import kernels

    model = copy.deepcopy(pair32[0])
    monkeypatch.setattr(kernels, "onednn_available", lambda: False)
    assert use_cpu_kernels(model, "onednn") == 0
    assert _count(model, OneDNNLinear) == 0


def test_every_float32_linear_switches_and_back(pair32):
    target, _ = pair32
    model = copy.deepcopy(target)
    n = _count(model, torch.nn.Linear)
    assert n > 0
    ids = torch.tensor([[5, 9, 17, 33, 2, 40, 41]])
    with torch.inference_mode():
        want = model(input_ids=ids).logits
        assert use_cpu_kernels(model, "transposed") == n
        assert _count(model, torch.nn.Linear) == 0
        assert _count(model, TransposedLinear) == n
        got = model(input_ids=ids).logits
        assert use_cpu_kernels(model, "torch") == n
        assert _count(model, torch.nn.Linear) == n
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5), float((got - want).abs().max())


def test_other_dtypes_are_left_alone(pair32):
    target, _ = pair32
    t64 = copy.deepcopy(target).double()
    n = _count(t64, torch.nn.Linear)
    assert use_cpu_kernels(t64, "transposed") == 0
    assert _count(t64, torch.nn.Linear) == n


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["onednn", "transposed"])
def test_live_equals_replay_on_each_form(pair32, kind):
    if kind == "onednn" and not onednn_available():
        pytest.skip("this torch build has no oneDNN")
    target, draft = (copy.deepcopy(m) for m in pair32)
    assert use_cpu_kernels(target, kind) > 0
    assert use_cpu_kernels(draft, kind) > 0
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

    assert ReferenceSettings(draft_lens=[3]).cpu_kernels == "onednn"
    assert ReferenceSettings(draft_lens=[3], cpu_kernels="torch").cpu_kernels == "torch"
    assert ReferenceSettings(draft_lens=[3], cpu_kernels="transposed").cpu_kernels == "transposed"
    with pytest.raises(UsageError, match="cpu kernels"):
        ReferenceSettings(draft_lens=[3], cpu_kernels="blas")
