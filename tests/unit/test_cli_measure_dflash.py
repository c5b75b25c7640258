"""``golden-al measure --engine reference --algorithm dflash``: the contract, end to end.

A tiny target saved to disk (no download) and DFlash / DFlash2 drafts trained for it here and
saved in the z-lab layout (``config.json`` with ``dflash_config`` + ``model.safetensors``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from golden_al.cli.main import main  # noqa: E402
from golden_al.curvefit.errors import SettingsMismatchError  # noqa: E402
from golden_al.curvefit.settings import check_agreement  # noqa: E402
from golden_al.measure.records import (  # noqa: E402
    load_record,
    load_records,
    read_request_results,
)

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("torch_one_thread")]

NUM_PROMPTS = 4


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    from golden_al.reference import ReferenceEngine, SamplingParams
    from golden_al.reference.block_draft import save_block_draft
    from golden_al.reference.block_train import sequence_features, train_block_draft
    from golden_al.reference.tiny import save_tiny_pair, tiny_block_draft

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("dflash-cli")
    target_dir, _ = save_tiny_pair(root / "models", seed=3)
    target = AutoModelForCausalLM.from_pretrained(target_dir, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(4, 100, (8,), generator=g).tolist() for _ in range(16)]
    outs = ReferenceEngine(target, target, eos_token_ids=[]).target_generate(prompts,
                                                                              sampling=SamplingParams(max_tokens=32))
    seqs = [p + o.output_token_ids for p, o in zip(prompts, outs, strict=True)]
    drafts = {}
    for algo in ("dflash", "dflash2"):
        draft = tiny_block_draft(target, algorithm=algo, block_size=8, seed=2)
        train_block_draft(draft, target, seqs, sequence_features(target, draft, seqs), starts=[8] * len(seqs),
                          steps=150, lr=3e-3, generator=torch.Generator().manual_seed(1))
        drafts[algo] = save_block_draft(draft, root / f"T-{algo}-b8", num_target_layers=2)
    prompt_file = root / "prompts.jsonl"
    prompt_file.write_text("".join(json.dumps({"id": f"q{i}", "messages": [
        {"role": "user", "content": f"def f{i}(x): return x*{i}"}]}) + "\n" for i in range(NUM_PROMPTS)))
    return {"target": str(target_dir), "drafts": drafts, "prompts": f"chat-jsonl:{prompt_file}",
            "cache": str(root / "cache")}


def _measure(s, out: Path, *extra: str, algo: str = "dflash", draft: str | None = None) -> int:
    return main(["measure", "--engine", "reference", "--algorithm", algo, "--target", s["target"],
                 "--draft", draft or str(s["drafts"]["dflash"]), "--prompts", s["prompts"], "--cache-dir", s["cache"],
                 "--out", str(out), "--max-tokens", "24", "--cpu-kernels", "torch", *extra])


@pytest.mark.slow
def test_the_contract_writes_a_block_draft_record(setup, tmp_path, capsys):
    out = tmp_path / "k7"
    assert _measure(setup, out, "--draft-len", "7") == 0
    assert "k=7" in capsys.readouterr().out
    r = load_record(out)
    assert (r.engine, r.mode, r.draft_method, r.draft_len) == ("reference", "live", "dflash", 7)
    assert r.block_draft is not None
    assert r.block_draft.model_dump() == {"algorithm": "dflash", "layout": "z-lab", "block_size": 8, "verify_block": 8,
                                          "mask_token_id": 127, "target_layer_ids": [0, 1], "num_draft_layers": 1}
    assert r.draft.sha256 is not None
    assert r.draft.num_parameters is not None
    results = read_request_results(out / "requests.jsonl")
    assert len(results) == NUM_PROMPTS
    assert sum(x.num_verify_steps for x in results) == r.num_verify_steps
    assert r.provenance["reference_engine"]["algorithm"] == "dflash"


def test_each_k_is_measured_live_and_derivation_needs_allow_derived(setup, tmp_path):
    live = tmp_path / "live"
    assert _measure(setup, live, "--draft-lens", "3,7") == 0
    for k in (3, 7):
        r = load_record(live / f"k{k}")
        assert (r.derived, r.mode, r.block_draft.verify_block) == (False, "live", k + 1)
    derived = tmp_path / "derived"
    assert _measure(setup, derived, "--draft-lens", "3,7", "--allow-derived") == 0
    d3 = load_record(derived / "k3")
    assert (d3.derived, d3.derived_from_draft_len, d3.derivation_exact) == (True, 7, False)
    assert any("block draft's drafts depend on the block size" in w for w in d3.warnings)
    assert load_record(derived / "k7").al == load_record(live / "k7").al  # the measured point is the same run


def test_dflash_and_dflash2_curves_stay_apart(setup, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _measure(setup, a, "--draft-len", "3") == 0
    assert _measure(setup, b, "--draft-len", "3", draft=str(setup["drafts"]["dflash2"])) == 0
    assert load_record(b).block_draft.algorithm == "dflash2"
    with pytest.raises(SettingsMismatchError, match=r"block_draft\.algorithm"):
        check_agreement(load_records([a / "measurement.json", b / "measurement.json"]), "curve")


@pytest.mark.parametrize(("extra", "algo", "needle"), [
    (["--draft-len", "8"], "dflash", "exceed this draft's block: block_size 8 proposes at most 7"),
    (["--draft-len", "3", "--mode", "replay"], "dflash", "a block draft's drafts depend on the block size"),
    (["--draft-len", "3"], "dflash2", "holds a DFlash draft (no candidate selector)"),
    (["--draft-len", "3"], "draft-model", "is a block draft (DFlash), not a chain draft model"),
    (["--draft-lens", "3,7", "--allow-derived"], "draft-model", "--allow-derived applies to block drafts"),
    (["--draft-len", "3"], "eagle3", "not one the reference engine runs"),
])
def test_bad_combinations_are_one_line_errors(setup, tmp_path, capsys, extra, algo, needle):
    assert _measure(setup, tmp_path / "x", *extra, algo=algo) == 2
    assert needle in capsys.readouterr().err


def test_a_broken_checkpoint_names_its_file(setup, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    cfg = json.loads((setup["drafts"]["dflash"] / "config.json").read_text())
    del cfg["dflash_config"]["mask_token_id"]
    (bad / "config.json").write_text(json.dumps(cfg))
    assert _measure(setup, tmp_path / "x", "--draft-len", "3", draft=str(bad)) == 2
    err = capsys.readouterr().err
    assert f"{bad / 'config.json'}: mask_token_id is missing" in err


def test_the_readme_command_runs(setup, tmp_path):
    """The researchers' guide's published-draft example, with the tiny models in place of the hub's (and on the
    CPU)."""
    import shlex

    from _docs import code

    block = code("measure-dflash-hub")
    command = block[block.index("golden-al measure"):].replace("\\\n", " ")
    argv = shlex.split(command)[1:]
    swap = {"models/Qwen3-4B": setup["target"], "models/Qwen3-4B-DFlash-b16": str(setup["drafts"]["dflash"]),
            "cuda": "cpu", "runs/qwen3-4b-dflash": str(tmp_path / "run"), "3,7,15": "3,7"}
    argv = [swap.get(a, a) for a in argv]
    assert main([*argv, "--prompts", setup["prompts"], "--cache-dir", setup["cache"], "--max-tokens", "8"]) == 0
    assert load_record(tmp_path / "run" / "k7").block_draft.verify_block == 8
