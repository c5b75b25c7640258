"""TensorRT-LLM's forced acceptance: ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``.

Reproduces ``tensorrt_llm/_torch/speculative/interface.py`` (NVIDIA/TensorRT-LLM,
index commit 00b6d5a25c30). The variable counts **draft tokens
only**, so the injected value is ``F = AL - 1``
(:func:`distributions.units.drafts_from_al`). ``F = 0`` means *off*.

* **one-model** path (MTP, Eagle3 one-model, PARD, DFlash, DSpark, ...):
  ``get_force_num_accepted_tokens_float`` parses ``float(env)``;
  ``SpecWorkerBase._apply_force_accepted_tokens`` sets, per generation request per
  iteration, ``base = min(int(F) + 1, k + 1)`` target+draft tokens and, when
  ``frac = F - int(F) > 0`` and ``base < k + 1``, one more when a uniform from a
  fixed pool is ``< frac``. The pool is 65536 float32 uniforms from a CPU
  ``torch.Generator`` seeded ``0xACCE9D`` indexed by ``(counter * 6007 + slot * 1009)
  & 65535``; the sampler here draws independent uniforms, and
  :func:`force_pool_fraction` gives the fraction the fixed pool really realizes
  over a long run.
* **two-model** path (``TorchSampler``, ``tensorrt_llm/_torch/pyexecutor/sampler.py``):
  ``get_force_num_accepted_tokens`` parses ``int(env)``; a value that is not an
  integer literal (``"2.5"``, also ``"2.0"``) fails, logs a warning and becomes 0,
  which silently **disables** forcing. An integer ``F`` forces ``min(F, #drafts)``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.units import format_number
from golden_al import plugin

__all__ = ["ENV_VAR", "TRTLLM_PATHS", "TrtllmForce", "force_pool", "force_pool_fraction", "parse_one_model",
           "parse_two_model", "trtllm_env_value"]

ENV_VAR = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
TRTLLM_PATHS: tuple[str, ...] = ("one-model", "two-model")
TrtllmPath = Literal["one-model", "two-model"]

_POOL_SIZE = 1 << 16
_POOL_SEED = 0xACCE9D


def trtllm_env_value(al: float) -> str:
    """The env-var string for a target AL: ``F = AL - 1`` written as ``"3.05"`` or ``"2"``.

    Integers are written without a decimal point so the two-model path's
    ``int()`` can parse them (``int("2.0")`` fails).
    """
    return format_number(units.drafts_from_al(al))


def parse_one_model(env_value: str) -> float:
    """``get_force_num_accepted_tokens_float``: ``float(env)``, 0.0 when invalid."""
    try:
        return float(env_value)
    except ValueError:
        return 0.0


def parse_two_model(env_value: str) -> int:
    """``get_force_num_accepted_tokens``: Python ``int(env)``, 0 when invalid (e.g. ``"2.5"``)."""
    try:
        return int(env_value)
    except ValueError:
        return 0


@lru_cache(maxsize=1)
def force_pool() -> NDArray[np.float32]:
    """The one-model path's fixed pool of 65536 float32 uniforms (seed ``0xACCE9D``).

    ``torch.rand(65536, dtype=float32, generator=cpu_gen.manual_seed(0xACCE9D))``
    takes the low 24 bits of each 32-bit MT19937 output times ``2**-24``; numpy's
    legacy ``RandomState(seed)`` runs the same MT19937 with the same seeding, so
    the pool is rebuilt here without torch (a torch test checks equality).
    """
    raw = np.random.RandomState(_POOL_SEED).randint(0, 2**32, size=_POOL_SIZE, dtype=np.uint64)
    pool = (raw & np.uint64(0xFFFFFF)).astype(np.float32) * np.float32(2.0**-24)
    pool.setflags(write=False)
    return pool


def force_pool_fraction(frac: float) -> float:
    """Share of the fixed pool below ``frac``: the long-run chance of the extra token.

    Each request slot walks the whole pool once every 65536 iterations (the
    counter stride 6007 is odd), so a long run realizes this fraction rather than
    ``frac`` itself; the two differ by at most about 0.002.
    """
    return float(np.mean(force_pool() < np.float32(frac)))


class TrtllmForce(plugin.EngineSampler):
    """TensorRT-LLM ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` (value = AL - 1).

    Args:
        path: ``"one-model"`` (float reader, fractional values work) or
            ``"two-model"`` (``int()`` reader: only integer values force anything).
    """

    engine: ClassVar[str] = "trtllm"
    method: ClassVar[str] = "force"
    draw_unit = "request-step"
    upstream = (
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/interface.py "
        "SpecWorkerBase._apply_force_accepted_tokens, get_force_num_accepted_tokens[_float]; "
        "tensorrt_llm/_torch/pyexecutor/sampler.py TorchSampler (index commit 00b6d5a25c30)"
    )

    def __init__(self, path: str = "one-model") -> None:
        if path not in TRTLLM_PATHS:
            raise plugin.SamplerError(f"unknown TensorRT-LLM path {path!r} (allowed: {', '.join(TRTLLM_PATHS)})")
        self.path: str = path

    @property
    def guarantees_mean(self) -> bool:  # type: ignore[override]
        # two-model honours only integer AL values; fractional ones turn forcing off
        return self.path == "one-model"

    @property
    def summary(self) -> str:  # type: ignore[override]
        if self.path == "one-model":
            return "value F = AL-1: int(F) drafts always accepted, one more with probability frac(F), per request"
        return "value parsed with int(): an integer F forces min(F, drafts); a fractional F disables forcing"

    def _forced(self, al: float, k: int) -> tuple[str, float, int]:
        al, k = self.check(al, k)
        env = trtllm_env_value(al)
        return env, parse_one_model(env), k

    def _disabled(self, al: float, env: str, why: str) -> plugin.ForcingDisabledError:
        return plugin.ForcingDisabledError(
            f"TensorRT-LLM {self.path}: {ENV_VAR}={env} (AL {al:g}) {why}, so the engine runs REAL "
            "acceptance and no synthetic pmf exists",
            hint="on the one-model path any AL in (1, k+1] can be forced; on the two-model path only "
            "integer ALs 2..k+1",
        )

    def _one_model_step(self, al: float, k: int) -> tuple[int, float, int]:
        """``(base, extra, k)`` on the one-model path: L = base, plus one with probability ``extra``.

        ``extra`` is frac(F) below the cap k+1 and 0 at it (the engine clamps to k+1).
        """
        env, forced, k = self._forced(al, k)
        if forced == 0:
            raise self._disabled(al, env, "is 0, which means off")
        base = min(int(forced) + 1, k + 1)
        extra = forced - int(forced) if base < k + 1 else 0.0
        return base, extra, k

    def pmf(self, al: float, k: int) -> AcceptanceDistribution:
        if self.path == "two-model":
            env, forced, k = self._forced(al, k)
            f_int = parse_two_model(env)
            if f_int == 0:
                why = "is 0, which means off" if forced == 0 else "fails int() and is read as 0 (off)"
                raise self._disabled(al, env, why)
            probs = np.zeros(k + 1)
            probs[min(f_int, k)] = 1.0  # L = min(F, drafts) + 1
            return AcceptanceDistribution(probs)
        base, extra, k = self._one_model_step(al, k)
        probs = np.zeros(k + 1)
        probs[base - 1] = 1.0 - extra
        if extra > 0:
            probs[base] = extra
        return AcceptanceDistribution(probs)

    def simulate(self, al: float, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        if self.path == "two-model":
            return fast_point(self.pmf(al, k), size)
        base, extra, k = self._one_model_step(al, k)
        out = np.full(size, base, dtype=np.int64)
        if extra > 0:
            # extra = (rand < frac) with float32 rands, then clamp to k+1
            out += rng.random(size, dtype=np.float32) < extra
            np.minimum(out, k + 1, out=out)
        return out

    def long_run_mean(self, al: float, k: int) -> float:
        """Mean the one-model path realizes over a long run from its fixed uniform pool."""
        if self.path == "two-model":
            return self.pmf(al, k).mean()
        base, extra, _ = self._one_model_step(al, k)
        if extra > 0:
            return base + force_pool_fraction(extra)
        return float(base)

    def warnings(self, al: float, k: int) -> list[str]:
        env, forced, k = self._forced(al, k)
        out: list[str] = []
        if forced == 0:
            out.append(
                f"AL 1.0 cannot be forced on TensorRT-LLM: {ENV_VAR}=0 means off, so the engine runs real acceptance"
            )
            return out
        fractional = parse_two_model(env) == 0
        if self.path == "two-model" and fractional:
            out.append(
                f"the two-model path parses {ENV_VAR}={env} with int(), which fails: forcing is silently "
                "DISABLED and the engine runs real acceptance"
            )
            return out
        if self.path == "one-model" and fractional:
            out.append(
                f"{ENV_VAR}={env} works on the one-model path only: the two-model path (TorchSampler) parses "
                "it with int(), which fails, and silently DISABLES forcing (real acceptance)"
            )
            frac = forced - int(forced)
            long_run = self.long_run_mean(al, k)
            if abs(long_run - float(al)) >= 5e-4 and min(int(forced) + 1, k + 1) < k + 1 and frac > 0:
                out.append(
                    f"the extra token is drawn from a fixed pool of 65536 float32 uniforms (seed 0xACCE9D); "
                    f"over a long run it realizes AL {long_run:.4f}, not {al:g}"
                )
        if not fractional:
            out.append(
                f"integer AL: L = {int(forced) + 1} on every step (zero variance); write {ENV_VAR}={env}, not "
                f"{env}.0 (int('{env}.0') fails on the two-model path)"
            )
        return out


def fast_point(dist: AcceptanceDistribution, size: int) -> NDArray[np.int64]:
    """``size`` copies of the single value of a point-mass pmf."""
    return np.full(size, int(np.argmax(dist.probs)) + 1, dtype=np.int64)
