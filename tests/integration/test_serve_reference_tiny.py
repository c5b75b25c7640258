"""The real reference engine behind serve-reference, on tiny models built from a config.

Measuring through the HTTP server (SGLang or vLLM flavor) must give exactly the counts
the offline reference engine gives for the same prompts (greedy): the server path adds
transport, not numbers.
"""

from __future__ import annotations

import sys

import pytest
from _servers import cell_counts, cli, record, serve_reference, shim_env, write_prompts

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    from golden_al.reference.tiny import save_tiny_pair

    root = tmp_path_factory.mktemp("tiny")
    return save_tiny_pair(root, seed=3, noise=0.3)


def _prompt_args(tmp_path):
    prompts = write_prompts(tmp_path / "prompts.jsonl", 4)
    return ["--prompts", f"chat-jsonl:{prompts}", "--num-prompts", "4", "--max-tokens", "24"]


@pytest.mark.slow
@pytest.mark.parametrize("flavor", ["sglang", "vllm"])
def test_server_counts_equal_offline_counts(tmp_path, capsys, tiny_pair, flavor):
    target, draft = tiny_pair
    common = _prompt_args(tmp_path)
    with serve_reference(["--flavor", flavor, "--target", str(target), "--draft", str(draft), "--draft-len", "3"],
                         tmp_path / "server.log") as url:
        code, _, err = cli(["measure", "--engine", flavor, "--server", url, "--draft-len", "3", *common,
                            "--out", str(tmp_path / "server")], capsys)
    assert code == 0, err
    code, _, err = cli(["measure", "--engine", "reference", "--target", str(target), "--draft", str(draft),
                        "--draft-len", "3", *common, "--batch-size", "1", "--out", str(tmp_path / "offline")], capsys)
    assert code == 0, err
    served, offline = record(tmp_path / "server"), record(tmp_path / "offline")
    assert served["num_verify_steps"] > 0
    assert cell_counts(served) == cell_counts(offline)
    assert served["al"] == pytest.approx(offline["al"], abs=1e-12)


@pytest.mark.slow
def test_generate_source_with_local_rendering(tmp_path, capsys, tiny_pair):
    """SGLang /generate with prompts rendered here: same counts, and the same dataset hash, as offline."""
    target, draft = tiny_pair
    common = _prompt_args(tmp_path)
    with serve_reference(["--flavor", "sglang", "--target", str(target), "--draft", str(draft), "--draft-len", "2"],
                         tmp_path / "server.log") as url:
        code, _, err = cli(["measure", "--engine", "sglang", "--server", url, "--draft-len", "2", *common,
                            "--al-source", "sglang-generate", "--tokenizer", str(target),
                            "--out", str(tmp_path / "server")], capsys)
    assert code == 0, err
    code, _, err = cli(["measure", "--engine", "reference", "--target", str(target), "--draft", str(draft),
                        "--draft-len", "2", *common, "--batch-size", "1", "--out", str(tmp_path / "offline")], capsys)
    assert code == 0, err
    served, offline = record(tmp_path / "server"), record(tmp_path / "offline")
    assert served["al_source"] == "sglang-generate"
    assert cell_counts(served) == cell_counts(offline)
    assert served["dataset"]["hash"] == offline["dataset"]["hash"]


@pytest.mark.slow
def test_sweep_launch_tiny_models(tmp_path, capsys, tiny_pair):
    target, draft = tiny_pair
    out = tmp_path / "out"
    code, stdout, err = cli(["sweep", "--engine", "sglang", "--launch", "--target", str(target), "--draft", str(draft),
                             "--algorithm", "standalone", "--python", sys.executable, *shim_env(tmp_path),
                             "--draft-lens", "2,3", "--thinking", "off", *_prompt_args(tmp_path),
                             "--out", str(out)], capsys)
    assert code == 0, err
    for k in (2, 3):
        rec = record(out / "thinking_off" / f"k{k}")
        assert rec["draft_len"] == k
        assert rec["server"]["launched"]
        assert rec["num_verify_steps"] > 0
        assert rec["draft_method"] == "standalone"
    assert stdout.count("AL ") == 2
