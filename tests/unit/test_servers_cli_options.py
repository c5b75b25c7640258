"""Server options of measure/sweep: defaults told apart from explicit values, thinking kwargs, errors."""

from __future__ import annotations

import argparse
import json

import pytest

from golden_al.cli._servers import (
    SERVER_MAX_TOKENS,
    add_prompt_arguments,
    add_server_arguments,
    build_modes,
    server_options_from_args,
)
from golden_al.errors import UsageError


def _parser(*, measure_like: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    add_server_arguments(p, with_engine=False)
    if measure_like:  # the options measure shares with the reference engine: None unless given
        p.add_argument("--prompts", default="humaneval")
        p.add_argument("--num-prompts", type=int, default=12)
        for name, kind in (("--max-tokens", int), ("--temperature", float), ("--top-p", float), ("--seed", int),
                           ("--target", str), ("--draft", str)):
            p.add_argument(name, type=kind)
    else:
        add_prompt_arguments(p)
        p.add_argument("--target")
        p.add_argument("--draft")
    return p


@pytest.fixture
def prompt_file(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}]}) + "\n" for i in range(3)))
    return f"chat-jsonl:{path}"


def test_measure_defaults_become_server_defaults(prompt_file):
    p = _parser(measure_like=True)
    modes = build_modes(p.parse_args(["--prompts", prompt_file]), ["off"], target_name=None)
    assert modes[0].sampling.max_tokens == SERVER_MAX_TOKENS
    assert modes[0].sampling.seed is None
    modes = build_modes(p.parse_args(["--prompts", prompt_file, "--max-tokens", "64", "--seed", "5"]), ["off"],
                        target_name=None)
    assert modes[0].sampling.max_tokens == 64
    assert modes[0].sampling.seed == 5


def test_thinking_presets_and_overrides(prompt_file):
    p = _parser()
    on, off = build_modes(p.parse_args(["--prompts", prompt_file, "--model-family", "qwen3"]), ["on", "off"],
                          target_name=None)
    assert on.chat_template_kwargs == {"enable_thinking": True}
    assert off.chat_template_kwargs == {"enable_thinking": False}
    assert on.prompts[0].prompt_hash != off.prompts[0].prompt_hash  # kwargs are part of what was sent
    assert on.dataset.count == 3
    assert on.dataset.source == prompt_file
    (forced,) = build_modes(p.parse_args(["--prompts", prompt_file, "--model-family", "qwen3", "--temperature", "0.3"]),
                            ["on"], target_name=None)
    assert forced.sampling.temperature == 0.3
    per_mode = '{"on": {"thinking": true}, "off": {"thinking": false}}'
    on, off = build_modes(p.parse_args(["--prompts", prompt_file, "--chat-template-kwargs", per_mode]), ["on", "off"],
                          target_name="some/unknown-model")
    assert on.chat_template_kwargs == {"thinking": True}
    assert off.chat_template_kwargs == {"thinking": False}
    with pytest.raises(UsageError, match="no thinking mode"):
        build_modes(p.parse_args(["--prompts", prompt_file]), ["on"], target_name="some/unknown-model")
    with pytest.raises(UsageError, match="no kwargs for thinking off"):
        build_modes(p.parse_args(["--prompts", prompt_file, "--chat-template-kwargs", '{"on": {"a": 1}}']),
                    ["on", "off"], target_name=None)


@pytest.mark.parametrize(("argv", "message"), [
    ([], "needs --server URL or --launch"),
    (["--launch"], "--launch needs --target"),
    (["--server", "http://x", "--env", "A=1"], "only apply with --launch"),
    (["--launch", "--target", "t", "--env", "NOEQUALS"], "KEY=VALUE"),
    (["--launch", "--target", "t", "--speculative-extra", "[1]"], "must be a JSON object"),
    (["--server", "http://x", "--retries", "-1"], "--retries must be >= 0"),
])
def test_option_errors(argv, message):
    args = _parser().parse_args(argv)
    with pytest.raises(UsageError, match=message):
        server_options_from_args(args, "vllm")


def test_options_from_args():
    args = _parser().parse_args(["--launch", "--target", "/m", "--algorithm", "ngram", "--retries", "2",
                                 "--backoff", "0.5", "--engine-args", "--dtype bfloat16", "--engine-arg=--enforce-eager",
                                 "--env", "VLLM_CPU_KVCACHE_SPACE=2", "--command-prefix", "srun -N1"])
    opts = server_options_from_args(args, "vllm")
    assert opts.policy.max_attempts == 3
    assert opts.policy.backoff_initial_s == 0.5
    assert opts.launch.engine_args == ["--enforce-eager", "--dtype", "bfloat16"]
    assert opts.launch.env == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    assert opts.launch.command_prefix == ["srun", "-N1"]
    assert opts.source_name() == "vllm-prometheus"
