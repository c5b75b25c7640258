"""``golden-al measure`` with the reference engine, on tiny models saved to disk (no download)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from distributions import units
from golden_al.cli.main import main
from golden_al.measure.records import load_record, read_request_results

pytestmark = pytest.mark.torch

NUM_PROMPTS = 5


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from golden_al.reference.tiny import save_tiny_pair

    root = tmp_path_factory.mktemp("tiny")
    target, draft = save_tiny_pair(root / "models")
    prompts = root / "prompts.jsonl"
    with prompts.open("w") as fh:
        for i in range(NUM_PROMPTS):
            fh.write(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": f"def f{i}(x): return x*{i}"}]})
                     + "\n")
    return {"target": str(target), "draft": str(draft), "prompts": f"chat-jsonl:{prompts}",
            "cache": str(root / "cache"), "root": root}


def _measure(tiny, out: Path, *extra: str) -> int:
    return main(["measure", "--target", tiny["target"], "--draft", tiny["draft"], "--prompts", tiny["prompts"],
                 "--cache-dir", tiny["cache"], "--out", str(out), "--max-tokens", "24", *extra])


@pytest.mark.slow
def test_single_k_writes_a_valid_record(tiny, tmp_path, capsys):
    out = tmp_path / "run"
    assert _measure(tiny, out, "--draft-len", "3") == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("AL ")
    assert "k=3" in lines[0]
    assert "over 5 clusters (request)" in lines[0]
    record = load_record(out)
    assert record.uncertainty is not None
    assert record.uncertainty.clusters == 5
    assert record.uncertainty.method == "studentized-cluster-bootstrap+logit-cr2-bm"
    assert any("fewer than 10" in w for w in record.warnings)
    assert "fewer than 10" in captured.err
    assert record.engine == "reference"
    from golden_al.reference.kernels import onednn_available

    assert record.provenance["reference_engine"]["linear_kernels"] == (
        "onednn" if onednn_available() else "transposed")
    assert record.mode == "live"
    assert not record.estimate
    assert record.draft_len == 3
    assert record.thinking == "off"
    assert record.draft.dtype == "float32"
    assert record.draft.shipped_dtype == "float32"
    assert record.sampling.temperature == 0.0
    assert record.sampling.max_tokens == 24
    assert record.dataset.name
    assert record.dataset.count == NUM_PROMPTS
    assert len(record.dataset.hash) == 64
    assert record.provenance["started"] <= record.provenance["ended"]
    assert record.per_request_file == "requests.jsonl"
    results = read_request_results(out / "requests.jsonl", strict=True)
    assert sorted(r.index for r in results) == list(range(NUM_PROMPTS))
    assert sum(r.num_verify_steps for r in results) == record.num_verify_steps
    assert sum(r.num_accepted_drafts for r in results) == record.num_accepted_drafts
    assert record.al == pytest.approx(units.al_from_counts(record.num_accepted_drafts, record.num_verify_steps))
    assert record.al_ci95[0] <= record.al <= record.al_ci95[1]
    assert sum(record.histogram) == record.num_verify_steps
    for r in results:
        assert r.accept_lengths is not None
        assert len(r.accept_lengths) == r.num_verify_steps
        assert sum(L - 1 for L in r.accept_lengths) == r.num_accepted_drafts
        assert len(r.extra["output_token_ids"]) == r.num_output_tokens


@pytest.mark.slow
def test_curve_live_equals_replay(tiny, tmp_path, capsys):
    live, replay = tmp_path / "live", tmp_path / "replay"
    assert _measure(tiny, live, "--draft-lens", "1-3") == 0
    assert _measure(tiny, replay, "--draft-lens", "1-3", "--mode", "replay") == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert table[0].split()[:2] == ["k", "AL"]
    assert len(table) == 8
    for k in (1, 2, 3):
        a, b = load_record(live / f"k{k}"), load_record(replay / f"k{k}")
        assert b.mode == "replay"
        assert not b.estimate
        assert (a.num_verify_steps, a.num_accepted_drafts, a.histogram) == (
            b.num_verify_steps, b.num_accepted_drafts, b.histogram)
        assert b.timing is None  # a replay times no speculative step


@pytest.mark.slow
def test_live_steps_are_timed(tiny, tmp_path, capsys):
    """Every row of every timed step is one verify step of a request; the steps emit every token after the
    prefill's; the draft phase is part of the step."""
    out = tmp_path / "live"
    assert _measure(tiny, out, "--draft-lens", "1-2", "--mode", "live", "--batch-size", "2") == 0
    for k in (1, 2):
        rec = load_record(out / f"k{k}")
        assert rec.timing is not None
        assert rec.timing.unit == "step"
        assert rec.timing.source == "reference-steps"
        assert sum(g.batch * g.steps for g in rec.timing.groups) == rec.num_verify_steps
        rows = read_request_results(out / f"k{k}" / "requests.jsonl")
        assert sum(g.tokens for g in rec.timing.groups) == sum(r.num_output_tokens - 1 for r in rows)
        assert {g.batch for g in rec.timing.groups} <= {1, 2}
        for g in rec.timing.groups:
            assert g.units == g.steps
            assert g.draft_ms is not None
            assert g.cpu_ms is not None
            assert g.cpu_ms[1] > 0
            assert 0 < g.draft_ms[1] < g.step_ms[1]
            assert g.step_ms[0] <= g.step_ms[1] <= g.step_ms[2]
            assert g.load1[0] <= g.load1[1]


@pytest.mark.slow
def test_sampled_replay_is_marked_as_an_estimate(tiny, tmp_path, capsys):
    out = tmp_path / "s"
    assert _measure(tiny, out, "--draft-len", "2", "--mode", "replay", "--temperature", "0.8",
                    "--top-p", "0.9", "--seed", "3") == 0
    assert "(estimate)" in capsys.readouterr().out
    record = load_record(out)
    assert record.estimate
    assert record.mode == "replay"
    assert record.al_source == "reference-replay-expected"
    assert record.sampling.top_p == 0.9
    assert record.sampling.seed == 3


@pytest.mark.slow
def test_resume_does_not_double_count(tiny, tmp_path, capsys):
    fresh, partial = tmp_path / "fresh", tmp_path / "partial"
    assert _measure(tiny, fresh, "--draft-len", "2") == 0
    # an interrupted run: two finished requests and a torn third line
    partial.mkdir()
    lines = (fresh / "requests.jsonl").read_text().splitlines(keepends=True)
    (partial / "requests.jsonl").write_text("".join(lines[:2]) + lines[2][:40])
    # without --resume the directory is refused
    assert _measure(tiny, partial, "--draft-len", "2") == 2
    assert "--resume" in capsys.readouterr().err
    (partial / "requests.jsonl").write_text("".join(lines[:2]))
    assert _measure(tiny, partial, "--draft-len", "2", "--resume") == 0
    results = read_request_results(partial / "requests.jsonl", strict=True)
    assert sorted(r.index for r in results) == list(range(NUM_PROMPTS))
    a, b = load_record(fresh), load_record(partial)
    assert (a.num_requests, a.num_verify_steps, a.num_accepted_drafts, a.histogram) == (
        b.num_requests, b.num_verify_steps, b.num_accepted_drafts, b.histogram)
    assert b.provenance["reference_engine"]["resumed_requests"] == 2
    # resuming a finished run adds nothing
    assert _measure(tiny, partial, "--draft-len", "2", "--resume") == 0
    assert len(read_request_results(partial / "requests.jsonl")) == NUM_PROMPTS
    # resuming with other settings is refused
    assert _measure(tiny, partial, "--draft-len", "2", "--resume", "--temperature", "0.5") == 2
    assert "other settings" in capsys.readouterr().err
    # ... and so is resuming with the other form of the linear layers (another rounding)
    assert _measure(tiny, partial, "--draft-len", "2", "--resume", "--cpu-kernels", "torch") == 2
    assert "other settings" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "needle"), [
    (["--draft-len", "0"], "out of range"),
    (["--draft-len", "17"], "1..16"),
    (["--draft-lens", "1-20"], "out of range"),
    (["--draft-len", "3", "--thinking", "on"], "no thinking mode"),
    (["--draft-len", "3", "--top-p", "0.5"], "temperature"),
])
def test_bad_options_give_one_line_errors(tiny, tmp_path, capsys, args, needle):
    assert _measure(tiny, tmp_path / "x", *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("golden-al: error:")
    assert needle in err[0]


def test_missing_model_and_bad_prompt_file(tiny, tmp_path, capsys):
    missing = tmp_path / "nope"
    code = main(["measure", "--draft-len", "3", "--target", str(missing), "--draft", tiny["draft"],
                 "--prompts", tiny["prompts"], "--out", str(tmp_path / "a"), "--cache-dir", tiny["cache"]])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert str(missing) in err[0]
    assert "does not exist" in err[0]

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{"messages": [oops\n')
    code = main(["measure", "--draft-len", "3", "--target", tiny["target"], "--draft", tiny["draft"],
                 "--prompts", f"chat-jsonl:{bad}", "--out", str(tmp_path / "b"), "--cache-dir", tiny["cache"]])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1, err
    assert f"{bad}:2" in err[0]

    code = main(["measure", "--draft-len", "3", "--resume", "--target", tiny["target"]])
    assert code == 2
    assert "--resume needs --out" in capsys.readouterr().err


@pytest.mark.slow
def test_ci_half_width_adds_prompts_until_exhausted_or_reached(tiny, tmp_path, capsys):
    out = tmp_path / "prec"
    assert _measure(tiny, out, "--draft-len", "2", "--ci-half-width", "0.00001", "--prompt-batch", "2") == 0
    captured = capsys.readouterr()
    assert "prompt set exhausted" in captured.out
    assert "2 prompts: 95% half-width" in captured.err
    assert "4 prompts: 95% half-width" in captured.err
    rows = read_request_results(out / "requests.jsonl")
    assert sorted(r.index for r in rows) == list(range(NUM_PROMPTS))  # resumed between batches, none twice
    record = load_record(out)
    assert record.uncertainty is not None
    assert record.uncertainty.clusters == NUM_PROMPTS
    assert record.dataset.count == NUM_PROMPTS
    doc = json.loads((out / "precision.json").read_text())
    assert doc["reached"] is False
    assert doc["prompts"] == NUM_PROMPTS
    assert doc["batches"] == 3
    wide = tmp_path / "wide"
    assert _measure(tiny, wide, "--draft-len", "2", "--ci-half-width", "10", "--prompt-batch", "2") == 0
    assert "target reached" in capsys.readouterr().out
    assert len(read_request_results(wide / "requests.jsonl")) == 2


@pytest.mark.slow
def test_shared_prefix_is_recorded_and_can_be_switched_off(tiny, tmp_path):
    shared, whole = tmp_path / "shared", tmp_path / "whole"
    assert _measure(tiny, shared, "--draft-len", "3") == 0
    assert _measure(tiny, whole, "--draft-len", "3", "--no-prefix-sharing") == 0
    a, b = load_record(shared), load_record(whole)
    # the chat template's opening and "def f" are common to every prompt of the tiny set
    assert a.provenance["reference_engine"]["shared_prefix_tokens"] > 0
    assert a.provenance["reference_engine"]["share_prefix"] is True
    assert b.provenance["reference_engine"]["shared_prefix_tokens"] == 0
    assert b.provenance["reference_engine"]["share_prefix"] is False
    assert a.num_requests == b.num_requests == NUM_PROMPTS


def test_precision_batches_share_the_full_sets_prefix(tiny, tmp_path, monkeypatch):
    """--ci-half-width measures growing slices of the loaded prompts; each slice must prefill the
    prefix of the whole set (not its own, longer one), so every request is computed alike."""
    from golden_al.reference import engine as engine_mod
    from golden_al.reference.prefix import shared_prefix_len

    prompts = tmp_path / "p.jsonl"
    texts = ["def f1(x): return x*1", "def f1(x): return x*2", "def g(y): return y-3", "def g(y): return y-4"]
    prompts.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": t}]}) + "\n"
                               for i, t in enumerate(texts)))
    seen: list[tuple[int | None, int]] = []
    original = engine_mod.ReferenceEngine.iter_generate

    def spy(self, prompt_ids, **kw):
        seen.append((kw.get("shared_prefix"), shared_prefix_len(prompt_ids)))
        return original(self, prompt_ids, **kw)

    monkeypatch.setattr(engine_mod.ReferenceEngine, "iter_generate", spy)
    out = tmp_path / "prec"
    assert main(["measure", "--target", tiny["target"], "--draft", tiny["draft"], "--prompts",
                 f"chat-jsonl:{prompts}", "--cache-dir", tiny["cache"], "--out", str(out), "--max-tokens", "8",
                 "--draft-len", "2", "--ci-half-width", "0.00001", "--prompt-batch", "2"]) == 0
    whole = load_record(out).provenance["reference_engine"]["shared_prefix_tokens"]
    assert whole > 0
    assert [passed for passed, _ in seen] == [whole, whole]  # both batches: the whole set's prefix
    assert seen[0][1] > whole  # the first slice alone ("def f1(x): return x*") would share more


def test_onednn_default_falls_back_to_transposed_and_says_so(tiny, tmp_path, monkeypatch):
    """A torch without oneDNN runs the default on MKL's transposed product; the record says which."""
    from golden_al.reference import kernels

    monkeypatch.setattr(kernels, "onednn_available", lambda: False)
    assert _measure(tiny, tmp_path / "run", "--draft-len", "2", "--num-prompts", "2") == 0
    ref = load_record(tmp_path / "run").provenance["reference_engine"]
    assert (ref["cpu_kernels"], ref["linear_kernels"]) == ("onednn", "transposed")
