"""Build small synthetic measurement records (measurement.json + requests.jsonl) for fit/commit/report tests.

Requests draw their accepted length per verify step from a chain-draft profile
(conditional rates ``c``), so AL(k) = 1 + sum_j prod_{i<=j} c_i in expectation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from distributions.acceptance import AcceptanceDistribution
from golden_al.measure.records import append_request_result, write_record
from golden_al.measure.schema import (
    REQUESTS_FILE,
    DatasetInfo,
    MeasurementRecord,
    ModelInfo,
    RequestResult,
    SamplingInfo,
    Timing,
    Uncertainty,
)
from golden_al.measure.totals import counts_from_requests, interval_from_requests

PROFILE = (0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45)


def make_requests(k: int, *, rng: np.random.Generator, num_requests: int = 12, steps: int = 40,
                  profile: tuple[float, ...] = PROFILE) -> list[RequestResult]:
    """``num_requests`` requests of ``steps`` verify steps each at draft length ``k``."""
    dist = AcceptanceDistribution.from_conditional_rates(profile[:k])
    out = []
    for i in range(num_requests):
        lengths = dist.rvs(steps, rng)
        accepted = lengths - 1
        hist = np.bincount(accepted, minlength=k + 1)
        pos = [int(np.sum(accepted >= j)) for j in range(1, k + 1)]
        out.append(RequestResult(
            index=i, request_id=f"r{i}", draft_len=k, prompt_hash=f"h{i}", num_output_tokens=int(lengths.sum()),
            num_verify_steps=steps, num_accepted_drafts=int(accepted.sum()), histogram=[int(x) for x in hist],
            per_position_accepted=pos, accept_lengths=[int(x) for x in lengths],
        ))
    return out


def make_record(out_dir: Path, k: int, *, rng: np.random.Generator, thinking: str = "off",
                temperature: float = 0.0, top_p: float = 1.0, max_tokens: int = 256,
                chat_template_kwargs: dict[str, Any] | None = None, dataset_name: str = "humaneval",
                dataset_category: str | None = None, dataset_hash: str = "d" * 64, engine: str = "reference",
                engine_version: str | None = "0.1.0", target_name: str = "qwen2.5-coder-1.5b-instruct",
                draft_name: str = "qwen2.5-coder-0.5b-instruct", target_dtype: str = "float32",
                draft_dtype: str = "float32", shipped_dtype: str = "Q4_K_M", derived: bool = False,
                derived_from: int | None = None, num_requests: int = 12, steps: int = 40,
                profile: tuple[float, ...] = PROFILE, with_requests: bool = True, timing: Timing | None = None) -> Path:
    """Write ``out_dir/measurement.json`` (+ requests.jsonl) and return the record path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    reqs = make_requests(k, rng=rng, num_requests=num_requests, steps=steps, profile=profile)
    if with_requests:
        for r in reqs:
            append_request_result(out_dir / REQUESTS_FILE, r)
    cell = counts_from_requests(reqs, k)
    interval, unit = interval_from_requests(reqs, k)
    rec = MeasurementRecord(
        engine=engine, engine_version=engine_version, mode="replay", derived=derived,
        derived_from_draft_len=derived_from, derivation_exact=True if derived else None,
        target=ModelInfo(name=target_name, dtype=target_dtype, shipped_dtype="Q4_K_M"),
        draft=ModelInfo(name=draft_name, dtype=draft_dtype, shipped_dtype=shipped_dtype),
        draft_method="draft-model", draft_len=k, thinking=thinking,  # type: ignore[arg-type]
        chat_template_kwargs=chat_template_kwargs or {},
        sampling=SamplingInfo(temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=0),
        dataset=DatasetInfo(name=dataset_name, category=dataset_category, count=num_requests, hash=dataset_hash),
        al=interval.al, al_ci95=interval.ci, uncertainty=Uncertainty.of(interval, unit), al_source="reference-steps", num_requests=num_requests,
        num_verify_steps=cell.num_verify_steps, num_accepted_drafts=cell.num_accepted_drafts,
        per_position_accepted=cell.per_position_accepted, histogram=cell.histogram,
        per_request_file=REQUESTS_FILE if with_requests else None,
        provenance={"tool_version": "test", "started": "2026-01-01T00:00:00+00:00"}, timing=timing,
    )
    return write_record(rec, out_dir)


def make_curve_dir(root: Path, ks: range | list[int], *, seed: int = 7, **kwargs: Any) -> Path:
    """Records at every k in ``ks`` under ``root/k{K}/`` (one rng stream)."""
    rng = np.random.default_rng(seed)
    for k in ks:
        make_record(root / f"k{k}", k, rng=rng, **kwargs)
    return root
