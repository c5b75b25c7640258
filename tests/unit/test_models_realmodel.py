"""The real Qwen2.5-Coder pair from the cache (opt-in: ``--run-realmodel``; needs ``golden-al models fetch``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.realmodel, pytest.mark.torch]


@pytest.fixture(scope="module")
def cache() -> Path:
    from golden_al.cli._common import cache_dir

    return cache_dir()


def test_cached_pair_is_verified_and_complete(cache):
    from golden_al.models.cache import cached_models

    rows = {r.name: r for r in cached_models(cache)}
    for name in ("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"):
        assert rows[name].gguf_status == "verified", rows[name]
        assert rows[name].converted_status == "ok", rows[name]
        conv = json.loads((Path(rows[name].converted_dir) / "golden_al_conversion.json").read_text())
        assert conv["file_type"] == "Q4_K_M"
        assert conv["tensor_check"]["bit_identical"] is True


def test_pair_loads_and_target_answers_humaneval_greedily(cache):
    import torch

    from golden_al.models import load_pair
    from golden_al.prompts import load_prompts, render

    pair = load_pair("qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct", cache_dir=cache)
    assert pair.tokenizer_check["shared_tokenizer"] is True
    assert pair.target.info.shipped_dtype == pair.draft.info.shipped_dtype == "Q4_K_M"
    assert pair.target.info.dtype == "float32"
    assert pair.target.eos_token_ids == [151645, 151643]
    assert pair.target.info.num_parameters == 1_777_088_000
    assert pair.draft.info.num_parameters == 630_167_424
    conv = load_prompts("humaneval", cache_dir=cache, limit=1)[0]
    prompt = render(pair.target.tokenizer, conv, thinking="off", preset=pair.target.chat_family)
    ids = torch.tensor([prompt.token_ids])
    with torch.no_grad():
        out = pair.target.model.generate(ids, max_new_tokens=12, do_sample=False,
                                         eos_token_id=pair.target.eos_token_ids)
    text = pair.target.tokenizer.decode(out[0, ids.shape[1]:])
    assert text.startswith("```python\nfrom typing import List"), text
