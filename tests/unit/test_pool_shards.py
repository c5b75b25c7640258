"""Shards of one prompt set: measured with --shard over real HTTP, pooled by `golden-al pool` and `fit`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _inproc import InProcessServer

from golden_al.cli.main import main

K = 3
N = 9


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The full set and its three shards, measured against one fake SGLang server."""
    root = tmp_path_factory.mktemp("shards")
    prompts = root / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"Task {i}."}]})
                               + "\n" for i in range(N)))
    srv = InProcessServer("sglang", k=K)
    try:
        for name, extra in (("full", []), ("s0", ["--shard", "0/3"]), ("s1", ["--shard", "1/3"]),
                            ("s2", ["--shard", "2/3"])):
            code = main(["measure", "--engine", "sglang", "--server", srv.url, "--draft-len", str(K), "--prompts",
                         f"chat-jsonl:{prompts}", "--max-tokens", "48", "--out", str(root / name), *extra])
            assert code == 0
    finally:
        srv.close()
    return root


def _rec(d: Path) -> dict:
    return json.loads((d / "measurement.json").read_text())


def test_a_shard_says_which_prompts_of_which_set_it_holds(measured):
    full, s1 = _rec(measured / "full"), _rec(measured / "s1")
    assert full["dataset"]["selection"] == list(range(N))
    assert s1["dataset"]["selection"] == [1, 4, 7]
    assert s1["dataset"]["count"] == 3
    assert s1["dataset"]["source_hash"] == full["dataset"]["source_hash"]
    assert s1["dataset"]["hash"] != full["dataset"]["hash"]


def test_pool_of_disjoint_shards_equals_the_full_run(measured, capsys):
    out = measured / "pooled"
    assert main(["pool", str(measured / "s0"), str(measured / "s1"), str(measured / "s2"), "--out", str(out)]) == 0
    assert "pooled 3 records" in capsys.readouterr().out
    full, pooled = _rec(measured / "full"), _rec(out)
    for key in ("num_requests", "num_verify_steps", "num_accepted_drafts", "histogram", "per_position_accepted"):
        assert pooled[key] == full[key], key
    assert pooled["al"] == pytest.approx(full["al"])
    assert pooled["dataset"]["selection"] == list(range(N))
    assert len((out / "requests.jsonl").read_text().splitlines()) == N  # every cluster of every shard
    assert [p["path"] for p in pooled["provenance"]["pooled_from"]] == [
        str(measured / s / "measurement.json") for s in ("s0", "s1", "s2")]
    lo, hi = pooled["al_ci95"]
    assert lo < pooled["al"] < hi


def test_overlapping_shards_are_refused(measured, capsys):
    code = main(["pool", str(measured / "full"), str(measured / "s1"), "--out", str(measured / "bad")])
    assert code == 2
    err = capsys.readouterr().err
    assert "overlap" in err
    assert "[1, 4, 7]" in err
    assert not (measured / "bad" / "measurement.json").exists()


def test_fit_pools_shards_and_refuses_overlap(measured, capsys):
    out = measured / "curve.yaml"
    shards = [str(measured / s) for s in ("s0", "s1", "s2")]
    assert main(["fit", *shards, "--method", "draft-model", "--out", str(out)]) == 0
    text = out.with_suffix(".fit.json").read_text()
    full = _rec(measured / "full")
    assert f'"num_verify_steps": {full["num_verify_steps"]}' in text
    assert f'"num_accepted_drafts": {full["num_accepted_drafts"]}' in text
    assert f'"num_requests": {N}' in text
    capsys.readouterr()
    code = main(["fit", str(measured / "full"), str(measured / "s0"), "--method", "draft-model",
                 "--out", str(measured / "c2.yaml")])
    assert code == 2
    assert "overlap" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["3/3", "1", "a/b", "-1/2"])
def test_bad_shard_is_a_usage_error(measured, capsys, bad):
    code = main(["measure", "--engine", "sglang", "--server", "http://127.0.0.1:9", "--draft-len", "3", "--prompts",
                 f"chat-jsonl:{measured / 'prompts.jsonl'}", "--shard", bad, "--out", str(measured / "x")])
    assert code == 2
    assert "--shard" in capsys.readouterr().err
