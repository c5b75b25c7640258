"""Compare two measurements of the same prompts: token agreement and AL difference (this experiment's tool).

Used to set a serving engine (e.g. llama.cpp on Q4_K_M GGUF files) against the reference
engine (the dequantized fp32 model) on the same prompts. Greedy outputs agree only as far
as the two arithmetics pick the same argmax, so the comparison reports how far they agree
rather than demanding equality:

* per prompt, the length of the common prefix of the output token ids, as a fraction of
  the shorter output (server texts are re-tokenized with the target's tokenizer);
* the AL of each run and their difference (prompts are paired by index).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError
from golden_al.measure.records import load_record, read_request_results

__all__ = ["common_prefix", "compare_runs"]


def common_prefix(a: list[int], b: list[int]) -> int:
    """Number of leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _token_ids(row: Any, tokenizer: Any | None) -> list[int] | None:
    extra = row.extra or {}
    if isinstance(extra.get("output_token_ids"), list):
        return [int(t) for t in extra["output_token_ids"]]
    if row.text is not None and tokenizer is not None:
        return [int(t) for t in tokenizer(row.text, add_special_tokens=False)["input_ids"]]
    return None


def compare_runs(reference_dir: str | Path, other_dir: str | Path, *, tokenizer: Any | None = None) -> dict[str, Any]:
    """Token agreement and AL difference between two measurement directories (same prompts, same k).

    Args:
        tokenizer: turns a server's saved ``text`` into token ids (the target's tokenizer);
            default: the tokenizer of the reference record's target directory.

    Raises:
        InputFileError: the runs measured different draft lengths or no common prompt.
    """
    ref_dir, oth_dir = Path(reference_dir), Path(other_dir)
    ref, oth = load_record(ref_dir / "measurement.json"), load_record(oth_dir / "measurement.json")
    if ref.draft_len != oth.draft_len:
        raise InputFileError(f"the runs measured k={ref.draft_len} and k={oth.draft_len}", path=oth_dir)
    if tokenizer is None and ref.target.path:
        from golden_al.models.tokenizer import load_tokenizer

        tokenizer = load_tokenizer(ref.target.path)
    rows_ref = {r.index: r for r in read_request_results(ref_dir / "requests.jsonl")}
    rows_oth = {r.index: r for r in read_request_results(oth_dir / "requests.jsonl")}
    common = sorted(set(rows_ref) & set(rows_oth))
    if not common:
        raise InputFileError("the two runs share no prompt index", path=oth_dir)
    per_prompt: list[dict[str, Any]] = []
    for i in common:
        a, b = _token_ids(rows_ref[i], tokenizer), _token_ids(rows_oth[i], tokenizer)
        if a is None or b is None:
            per_prompt.append({"index": i, "agreement": None})
            continue
        n = common_prefix(a, b)
        shorter = max(1, min(len(a), len(b)))
        per_prompt.append({"index": i, "common_prefix_tokens": n, "reference_tokens": len(a), "other_tokens": len(b),
                           "agreement": n / shorter, "identical": a == b})
    scored = [p["agreement"] for p in per_prompt if p["agreement"] is not None]
    return {
        "draft_len": ref.draft_len,
        "num_prompts": len(common),
        "reference": {"engine": ref.engine, "al": ref.al, "al_ci95": list(ref.al_ci95),
                      "num_verify_steps": ref.num_verify_steps},
        "other": {"engine": oth.engine, "al": oth.al, "al_ci95": list(oth.al_ci95),
                  "num_verify_steps": oth.num_verify_steps},
        "al_difference": oth.al - ref.al,
        "token_agreement": sum(scored) / len(scored) if scored else 0.0,
        "identical_outputs": sum(1 for p in per_prompt if p.get("identical")),
        "per_prompt": per_prompt,
    }
