"""Block drafts (DFlash, DFlash2) in the reference engine, on tiny models built from a config.

* greedy: our engine's output equals the published reference loop (z-lab ``dflash``
  0.1.0 ``dflash_generate``, the test oracle) and the target's own greedy decode recomputed
  without a KV cache, token for token, with the same tokens emitted at every verify step,
  at several block sizes, with end-of-sequence and token-budget endings;
* sampled: the first step's accepted count has the same law as the oracle's (two-sample
  chi-square), and the output follows the target's own distribution (chi-square against the
  exact law of the second token);
* checkpoints: z-lab configs with missing or inconsistent fields are named errors; the
  speculators layout is read and refused by name; weights that do not fit are named.

The drafts are trained for a few hundred steps here (seconds), so acceptance is neither
always nor never: a random draft is never accepted, which would prove nothing.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from golden_al.models.block_config import (  # noqa: E402
    BlockDraftConfigError,
    BlockDraftFormatError,
    read_block_draft_config,
)
from golden_al.reference.block_draft import load_block_draft, save_block_draft  # noqa: E402
from golden_al.reference.block_live import iter_block_generate  # noqa: E402
from golden_al.reference.block_train import sequence_features, train_block_draft  # noqa: E402
from golden_al.reference.engine import ReferenceEngine  # noqa: E402
from golden_al.reference.sampling import SamplingParams, warp  # noqa: E402
from golden_al.reference.tiny import tiny_block_draft, tiny_model  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("torch_one_thread")]

VOCAB = 64
EOS = 5  # a token the tiny target emits often, so requests also end on it
MAX_TOKENS = 40


def _oracle():
    try:
        import dflash.model as oracle
    except ImportError:  # the README test command installs it; a missing oracle must not pass silently
        pytest.fail("the DFlash test oracle is missing: pip install --no-deps dflash==0.1.0 (README, Set up on a fresh machine)")
    return oracle


def _prompts(n: int, seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(6, VOCAB - 2, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
            for _ in range(n)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny target and a trained DFlash and DFlash2 draft for it, saved in the z-lab layout."""
    torch.set_num_threads(1)
    target = tiny_model(vocab_size=VOCAB, dtype=torch.float32, seed=3)
    prompts = _prompts(24, 0)
    outs = ReferenceEngine(target, target, eos_token_ids=[]).target_generate(
        prompts, sampling=SamplingParams(max_tokens=48))
    seqs = [p + o.output_token_ids for p, o in zip(prompts, outs, strict=True)]
    folders = {}
    for algo in ("dflash", "dflash2"):
        draft = tiny_block_draft(target, algorithm=algo, block_size=8, num_layers=1, seed=1)
        train_block_draft(draft, target, seqs, sequence_features(target, draft, seqs),
                          starts=[len(p) for p in prompts], steps=300, lr=3e-3,
                          generator=torch.Generator().manual_seed(1))
        folders[algo] = save_block_draft(draft, tmp_path_factory.mktemp(algo), num_target_layers=2)
    return target, folders


def _no_cache_greedy(target, prompt: list[int], eos: int, max_tokens: int) -> list[int]:
    """The target's greedy decode, recomputed from scratch for every token (no KV cache)."""
    ids = list(prompt)
    out: list[int] = []
    device = next(target.parameters()).device
    with torch.no_grad():
        while len(out) < max_tokens:
            tok = int(target(torch.tensor([ids], device=device), use_cache=False).logits[0, -1].argmax())
            out.append(tok)
            ids.append(tok)
            if tok == eos:
                break
    return out


def _emitted(out) -> list[int]:
    """Tokens each verify step added to the output (the oracle's ``acceptance_lengths``)."""
    per, total = [], 1
    for n in out.accepted:
        e = min(n + 1, len(out.output_token_ids) - total)
        per.append(e)
        total += e
    return per


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
@pytest.mark.parametrize("algo", ["dflash", "dflash2"])
@pytest.mark.parametrize("k", [7, 3, 1])
def test_greedy_equals_reference_loop_and_exact_decode(trained, algo, k, device, monkeypatch):
    oracle = _oracle()
    monkeypatch.setattr(oracle, "_cuda_time", lambda: 0.0)  # it synchronises CUDA to time itself
    target64 = tiny_model(vocab_size=VOCAB, dtype=torch.float32, seed=3)
    target64.load_state_dict(trained[0].state_dict())
    target64 = target64.double().to(device)
    ours = load_block_draft(trained[1][algo], target64)
    cls = oracle.DFlash2DraftModel if algo == "dflash2" else oracle.DFlashDraftModel
    theirs = cls.from_pretrained(str(trained[1][algo])).double().to(device).eval()
    accepted = 0
    for i, prompt in enumerate(_prompts(10, 7)):
        budget = MAX_TOKENS - 3 * i  # several budgets, so some requests end on the budget mid-block
        mine = next(iter_block_generate(target64, ours, [prompt], draft_len=k, eos_token_ids=[EOS],
                                        sampling=SamplingParams(max_tokens=budget),
                                        generator=torch.Generator().manual_seed(0)))
        ref = oracle.dflash_generate(theirs, target64, torch.tensor([prompt], device=device), max_new_tokens=budget,
                                     stop_token_ids=[EOS], block_size=k + 1, return_stats=True)
        assert mine.output_token_ids == ref.output_ids[0, len(prompt):].tolist(), (algo, k, i)
        assert _emitted(mine) == ref.acceptance_lengths, (algo, k, i)
        assert mine.output_token_ids == _no_cache_greedy(target64, prompt, EOS, budget), (algo, k, i)
        assert all(0 <= n <= d <= k for n, d in zip(mine.accepted, mine.drafted, strict=True))
        assert mine.finish_reason == ("stop" if mine.output_token_ids[-1] == EOS else "length")
        accepted += sum(mine.accepted)
    assert accepted > 0, "the trained draft was never accepted: the comparison would prove nothing"


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["dflash", "dflash2"])
def test_continuous_batching_equals_one_request_at_a_time(trained, algo):
    """Rows of different lengths, budgets and endings, refilled as they finish: the same tokens and steps."""
    target64 = tiny_model(vocab_size=VOCAB, dtype=torch.float32, seed=3)
    target64.load_state_dict(trained[0].state_dict())
    target64 = target64.double()
    draft = load_block_draft(trained[1][algo], target64)
    prompts = _prompts(9, 21)

    def run(batch_size: int) -> dict[int, tuple[list[int], list[int], str]]:
        outs = iter_block_generate(target64, draft, prompts, draft_len=5, eos_token_ids=[EOS], batch_size=batch_size,
                                   sampling=SamplingParams(max_tokens=30), generator=torch.Generator().manual_seed(0))
        return {o.index: (o.output_token_ids, o.accepted, o.finish_reason) for o in outs}

    alone, batched = run(1), run(4)
    assert batched == alone
    assert {reason for _, _, reason in alone.values()} == {"stop", "length"}  # both endings happen
    assert sum(sum(acc) for _, acc, _ in alone.values()) > 0


@pytest.mark.slow
def test_sampled_first_step_has_the_oracles_law(trained, monkeypatch):
    """The accepted count of the first verify step (k = 7, temperature 1): ours vs the oracle."""
    oracle = _oracle()
    monkeypatch.setattr(oracle, "_cuda_time", lambda: 0.0)
    target = trained[0]
    ours = load_block_draft(trained[1]["dflash"], target)
    theirs = oracle.DFlashDraftModel.from_pretrained(str(trained[1]["dflash"])).eval()
    prompt = _prompts(1, 11)[0]
    n_runs = 400
    gen = torch.Generator().manual_seed(5)
    mine = [next(iter_block_generate(target, ours, [prompt], draft_len=7, eos_token_ids=[],
                                     sampling=SamplingParams(temperature=1.0, max_tokens=9),
                                     generator=gen)).accepted[0] for _ in range(n_runs)]
    torch.manual_seed(5)
    ref = [oracle.dflash_generate(theirs, target, torch.tensor([prompt]), max_new_tokens=9, stop_token_ids=None,
                                  temperature=1.0, return_stats=True).acceptance_lengths[0] - 1
           for _ in range(n_runs)]
    cats = sorted(set(mine) | set(ref))
    table = np.array([[mine.count(c) for c in cats], [ref.count(c) for c in cats]])
    table = table[:, table.sum(0) >= 10]  # pool nothing rare into a cell too small for chi-square
    assert table.shape[1] >= 2, "the first step's accepted count does not vary: nothing to compare"
    p = stats.chi2_contingency(table).pvalue
    assert p > 1e-3, (p, table)


@pytest.mark.slow
def test_sampled_output_is_the_targets_law(trained):
    """Rejection sampling keeps the target's law: the second output token against its exact marginal."""
    target = trained[0]
    draft = load_block_draft(trained[1]["dflash2"], target)
    prompt = _prompts(1, 13)[0]
    sampling = SamplingParams(temperature=1.0, max_tokens=2)
    with torch.no_grad():
        p0 = warp(target(torch.tensor([prompt])).logits[0, -1], sampling).double()
        rows = torch.tensor([[*prompt, t] for t in range(VOCAB)])
        p1 = warp(target(rows).logits[:, -1], sampling).double()
    exact = (p0[:, None] * p1).sum(0).numpy()
    n = 1500
    gen = torch.Generator().manual_seed(9)
    seen = np.zeros(VOCAB)
    for _ in range(n):
        out = next(iter_block_generate(target, draft, [prompt], draft_len=7, eos_token_ids=[], sampling=sampling,
                                       generator=gen))
        seen[out.output_token_ids[1]] += 1
    big = exact * n >= 5
    obs = np.append(seen[big], seen[~big].sum())
    exp = np.append(exact[big], exact[~big].sum())
    exp = exp / exp.sum() * obs.sum()
    p = stats.chisquare(obs, exp).pvalue
    assert p > 1e-3, p


def test_draft_len_beyond_the_block_is_refused(trained):
    draft = load_block_draft(trained[1]["dflash"], trained[0])
    with pytest.raises(ValueError, match=r"outside 1\.\.7"):
        next(iter_block_generate(trained[0], draft, [[7, 8]], draft_len=8, eos_token_ids=[],
                                 sampling=SamplingParams(), generator=torch.Generator()))


# ------------------------------------------------------------------------------------------ checkpoints
def _edit(folder, tmp_path, change):
    out = tmp_path / "edited"
    out.mkdir()
    cfg = json.loads((folder / "config.json").read_text())
    change(cfg)
    (out / "config.json").write_text(json.dumps(cfg))
    (out / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes())
    return out


def test_zlab_config_is_read(trained):
    cfg = read_block_draft_config(trained[1]["dflash2"])
    assert (cfg.algorithm, cfg.layout, cfg.block_size, cfg.mask_token_id) == ("dflash2", "z-lab", 8, VOCAB - 1)
    assert cfg.target_layer_ids == (0, 1)
    assert (cfg.selector_top_k, cfg.max_draft_len) == (4, 7)
    assert read_block_draft_config(trained[1]["dflash"]).algorithm == "dflash"


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c["dflash_config"].pop("mask_token_id"), "mask_token_id is missing"),
    (lambda c: c["dflash_config"].update(block_size=1), r"block_size is 1; expected an integer >= 2"),
    (lambda c: c["dflash_config"].update(target_layer_ids="0,1"), "target_layer_ids is '0,1'"),
    (lambda c: c.update(num_key_value_heads=3), "num_key_value_heads is 3; expected a divisor"),
    (lambda c: c["dflash_config"].update(conv_group_size=7), "conv_group_size is 7; expected a divisor"),
    (lambda c: c.update(rope_parameters={"rope_type": "yarn", "factor": 4.0}), "rope_type is 'yarn'"),
])
def test_bad_configs_are_named(trained, tmp_path, change, message):
    folder = _edit(trained[1]["dflash2"], tmp_path, change)
    with pytest.raises(BlockDraftConfigError, match=message) as info:
        read_block_draft_config(folder)
    assert str(folder / "config.json") in str(info.value)


def test_a_draft_for_another_target_is_refused(trained, tmp_path):
    folder = _edit(trained[1]["dflash"], tmp_path, lambda c: c["dflash_config"].update(target_layer_ids=[0, 5]))
    with pytest.raises(BlockDraftConfigError, match=r"name layer\(s\) \[5\], but the target has 2 layers"):
        load_block_draft(folder, trained[0])


def test_weights_that_do_not_fit_are_named(trained, tmp_path):
    folder = _edit(trained[1]["dflash"], tmp_path, lambda c: c.update(intermediate_size=200))
    with pytest.raises(BlockDraftConfigError, match=r"tensor layers\.0\.mlp\.\w+_proj\.weight has shape"):
        load_block_draft(folder, trained[0])
    folder2 = tmp_path / "as-dflash"
    folder2.mkdir()
    cfg = json.loads((trained[1]["dflash2"] / "config.json").read_text())
    cfg["architectures"] = ["DFlashDraftModel"]
    for key in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"):
        cfg["dflash_config"].pop(key)
    (folder2 / "config.json").write_text(json.dumps(cfg))
    (folder2 / "model.safetensors").write_bytes((trained[1]["dflash2"] / "model.safetensors").read_bytes())
    with pytest.raises(BlockDraftConfigError, match=r"unexpected e\.g\."):
        load_block_draft(folder2, trained[0])


def _speculators(zlab, out, **changes):
    """The z-lab draft re-written in the speculators layout (with the tensors speculators adds beside the draft)."""
    from safetensors.torch import load_file, save_file

    z = json.loads((zlab / "config.json").read_text())
    d = z["dflash_config"]
    layer = {key: z[key] for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                     "head_dim", "intermediate_size", "rms_norm_eps", "vocab_size", "rope_parameters",
                                     "layer_types", "hidden_act")}
    cfg = {"speculators_model_type": "dflash", "architectures": ["DFlashSpeculator"], "block_size": d["block_size"],
           "mask_token_id": d["mask_token_id"], "aux_hidden_state_layer_ids": d["target_layer_ids"],
           "draft_vocab_size": z["vocab_size"], "transformer_layer_config": layer, **changes}
    out.mkdir()
    (out / "config.json").write_text(json.dumps(cfg))
    state = load_file(str(zlab / "model.safetensors"))
    state["verifier_norm.weight"] = torch.ones(z["hidden_size"])
    state["d2t"] = torch.zeros(z["vocab_size"], dtype=torch.long)
    save_file(state, str(out / "model.safetensors"))
    return out


def test_speculators_layout_loads_as_the_same_draft(trained, tmp_path):
    folder = _speculators(trained[1]["dflash"], tmp_path / "spec")
    cfg = read_block_draft_config(folder)
    assert (cfg.layout, cfg.algorithm, cfg.block_size, cfg.target_layer_ids) == ("speculators", "dflash", 8, (0, 1))
    prompts = _prompts(3, 31)

    def run(path):
        draft = load_block_draft(path, trained[0])
        return [o.output_token_ids for o in iter_block_generate(
            trained[0], draft, prompts, draft_len=7, eos_token_ids=[], sampling=SamplingParams(max_tokens=20),
            generator=torch.Generator())]

    assert run(folder) == run(trained[1]["dflash"])


@pytest.mark.parametrize(("changes", "needle"), [
    ({"draft_vocab_size": 32}, "draft_vocab_size 32 is a reduced vocabulary"),
    ({"sample_from_anchor": True}, "sample_from_anchor is true"),
    ({"speculators_model_type": "dflash2"}, "the speculators DFlash2 layout is not loaded"),
])
def test_speculators_drafts_this_engine_cannot_run_are_refused_by_name(trained, tmp_path, changes, needle):
    folder = _speculators(trained[1]["dflash"], tmp_path / "spec", **changes)
    with pytest.raises(BlockDraftFormatError, match=re.escape(needle)) as info:
        read_block_draft_config(folder)
    assert "speculators-format" in str(info.value)
    assert "block 8, mask token 63, target layers [0, 1]" in str(info.value)


def test_a_chain_draft_is_not_a_block_draft(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 32}))
    with pytest.raises(BlockDraftConfigError, match="describes no block draft"):
        read_block_draft_config(tmp_path)
