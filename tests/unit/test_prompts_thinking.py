"""Thinking presets: family detection and the kwargs/sampling each family sends. Torch-free."""

from __future__ import annotations

import pytest

from golden_al.errors import InputFileError, UsageError
from golden_al.prompts import family_for, load_presets, preset_for
from golden_al.prompts.thinking import normalize_thinking


@pytest.mark.parametrize(("model", "family"), [
    ("qwen2.5-coder-1.5b-instruct", "qwen2"),
    ("/root/.cache/golden-al/models/qwen2.5-coder-0.5b-instruct/safetensors-float32", "qwen2"),
    ("Qwen/Qwen2-7B-Instruct", "qwen2"),
    ("Qwen/Qwen3-8B", "qwen3"),
    ("Qwen/Qwen3.5-397B-A17B", "qwen3.5"),
    ("qwen3.5-397b-a17b-nvfp4", "qwen3.5"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek-r1"),
    ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3"),
    ("deepseek-ai/DeepSeek-V4-Pro", "deepseek-v4"),
    ("openai/gpt-oss-120b", "gpt-oss"),
    ("moonshotai/Kimi-K2.5", "kimi"),
    ("zai-org/GLM-5.2-FP8", "glm"),
    ("MiniMaxAI/MiniMax-M3", "minimax"),
    ("meta-llama/Llama-3.1-8B-Instruct", "generic"),
    ({"model_type": "qwen3_moe"}, "qwen3"),
    ({"model_type": "gpt_oss", "_name_or_path": "/models/x"}, "gpt-oss"),
    ({"model_type": "llama"}, "generic"),
])
def test_family_for(model, family):
    assert family_for(model) == family


def test_family_for_config_object_prefers_the_name():
    class Config:
        model_type = "qwen2"
        name_or_path = "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"

    assert family_for(Config()) == "deepseek-r1"


def test_inferencex_kwargs_and_sampling():
    # golden_al_distribution/*.yaml headers and speedbench collectors (InferenceX mirror HEAD)
    assert preset_for("deepseek-v4").kwargs_for("on") == {"thinking": True, "reasoning_effort": "high"}
    assert preset_for("deepseek-v4").kwargs_for("off") == {}
    assert preset_for("glm").kwargs_for("off") == {"enable_thinking": False}
    assert preset_for("kimi").kwargs_for(True) == {"thinking": True}
    assert preset_for("minimax").kwargs_for("thinking_off") == {"thinking_mode": "disabled"}
    assert preset_for("Qwen/Qwen3.5-397B-A17B").kwargs_for("on") == {"enable_thinking": True}
    assert preset_for("qwen3.5").sampling_for("on") == {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "presence_penalty": 0.0}
    assert preset_for("qwen3.5").sampling_for("off") == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5}
    assert preset_for("kimi").sampling_for("off")["temperature"] == 0.6
    assert preset_for("minimax").sampling_for("on") == {"temperature": 1.0, "top_p": 0.95, "top_k": 40}
    assert preset_for("qwen2").sampling_for("off") == {}


def test_modes_that_do_not_exist():
    with pytest.raises(UsageError, match="has no thinking mode"):
        preset_for("qwen2.5-coder-1.5b-instruct").kwargs_for("on")
    with pytest.raises(UsageError, match="no thinking-off mode"):
        preset_for("deepseek-r1").kwargs_for("off")
    assert preset_for("deepseek-r1").kwargs_for(None) == {}  # None = the template's default mode
    assert load_presets()["qwen3"].default == "on"
    assert "on" not in load_presets()["qwen2"].modes


def test_kwargs_are_copies():
    a = preset_for("deepseek-v4").kwargs_for("on")
    a["thinking"] = False
    assert preset_for("deepseek-v4").kwargs_for("on")["thinking"] is True


def test_normalize_thinking():
    assert [normalize_thinking(v) for v in ("on", "OFF", True, False, "thinking_on", "1", "disabled")] == \
        ["on", "off", "on", "off", "on", "on", "off"]
    with pytest.raises(UsageError):
        normalize_thinking("maybe")


def test_every_shipped_family_is_well_formed():
    presets = load_presets()
    assert list(presets)[-1] == "generic"
    for p in presets.values():
        assert p.default in p.modes
        assert p.source
        for mode in p.modes.values():
            assert isinstance(dict(mode.chat_template_kwargs), dict)


def test_bad_presets_file(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("families:\n  x:\n    modes: {}\n")
    with pytest.raises(InputFileError, match="non-empty 'modes'"):
        load_presets(f)
    f.write_text("families:\n  x:\n    default: 'on'\n    modes:\n      'off': {chat_template_kwargs: {}}\n")
    with pytest.raises(InputFileError, match="default mode 'on'"):
        load_presets(f)
