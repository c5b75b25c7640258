"""SGLang's simulated acceptance: ``SGLANG_SIMULATE_ACC_LEN`` / ``SGLANG_SIMULATE_ACC_METHOD``.

Reproduces ``sample_simulated_acc_len(simulate_acc_len, simulate_acc_method, max_len)``
in ``python/sglang/srt/speculative/spec_utils.py`` (SGLang 0.5.23 wheel; same code
at sgl-project/sglang commit 00731f0bc9fa; ``_sample_simulated_acc_len`` in
0.5.15.post1):

* ``match-expected``: ``a = clamp(AL, 1, max_len)``, ``lower = floor(a)``,
  ``upper = lower + 1`` unless ``lower == max_len``; ``L = upper`` with probability
  ``a - lower`` (one CPU ``torch.multinomial`` over ``[1 - frac, frac]``), else
  ``lower``. ``E[L] = a`` exactly.
* ``multinomial`` (a misnomer: it is a **clamped, rounded normal**): ``x ~
  Normal(AL, 1)`` (one float32 ``torch.normal``), ``L = int(round(clamp(x, 1,
  max_len)))`` with torch's round-half-even. Its mean is biased towards the middle
  near either bound.

**One draw per verify step for the whole batch**: the draw has ``size=(1,)`` and
every request in that step's (rank-local) batch gets the same ``L``
(``generate_simulated_accept_index`` fills ``num_correct_drafts`` with ``L - 1``
for all rows; DSPARK's ``begin_simulated_step`` ``.repeat(bs)``-s it).

The clamp ``max_len`` depends on the algorithm (the call sites of ``sample_simulated_acc_len`` in ``python/sglang/srt/speculative/``):
EAGLE / EAGLE3 / NEXTN / STANDALONE (and FROZEN_KV_MTP): ``speculative_num_steps
+ 1``; NGRAM and linear UNO: ``speculative_num_draft_tokens``; DFLASH: the block size
(= ``speculative_num_draft_tokens``); DSPARK: ``gamma + 1``. With golden-al's draft
length ``k`` (drafts per step) it is ``k + 1`` for every algorithm.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from golden_al import plugin

__all__ = ["SGLANG_ALGORITHMS", "SGLangMatchExpected", "SGLangMultinomial", "multinomial_pmf",
           "sglang_engine_flags", "sglang_max_len", "sglang_max_len_for_draft_len"]

_UPSTREAM = (
    "sgl-project/sglang python/sglang/srt/speculative/spec_utils.py sample_simulated_acc_len "
    "(SGLang 0.5.23; commit 00731f0bc9fa)"
)

#: Algorithms (lower case) and the family whose clamp rule applies.
SGLANG_ALGORITHMS: dict[str, str] = {
    "eagle": "eagle",
    "eagle3": "eagle",
    "nextn": "eagle",
    "standalone": "eagle",
    "frozen_kv_mtp": "eagle",
    "uno": "ngram",  # linear UNO verifies num_draft_tokens slots (k = num_draft_tokens - 1), num_steps forced to 1
    "ngram": "ngram",
    "dflash": "dflash",
    "dspark": "dspark",
}


def _family(algorithm: str) -> str:
    fam = SGLANG_ALGORITHMS.get(str(algorithm).lower())
    if fam is None:
        raise plugin.SamplerError(
            f"unknown SGLang algorithm {algorithm!r} (allowed: {', '.join(SGLANG_ALGORITHMS)})"
        )
    return fam


def _positive(name: str, value: int | None) -> int:
    if value is None or isinstance(value, bool) or int(value) != value or value < 1:
        raise plugin.SamplerError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def sglang_max_len(
    algorithm: str,
    *,
    num_steps: int | None = None,
    num_draft_tokens: int | None = None,
    dflash_block_size: int | None = None,
    dspark_block_size: int | None = None,
) -> int:
    """SGLang's clamp ``max_len`` for an algorithm and its server flags.

    Args:
        algorithm: ``--speculative-algorithm`` (any case).
        num_steps: ``--speculative-num-steps`` (EAGLE family: ``max_len = steps + 1``,
            whatever ``--speculative-eagle-topk``; the tree depth is ``steps``).
        num_draft_tokens: ``--speculative-num-draft-tokens`` (NGRAM: ``max_len =
            num_draft_tokens``; DFLASH: the block size).
        dflash_block_size: ``--speculative-dflash-block-size`` (DFLASH alias of
            num_draft_tokens; when both are given they must agree).
        dspark_block_size: ``--speculative-dspark-block-size`` = gamma (DSPARK:
            ``max_len = gamma + 1``).

    Raises:
        SamplerError: a flag the algorithm needs is missing or inconsistent.
    """
    fam = _family(algorithm)
    if fam == "eagle":
        return _positive("--speculative-num-steps", num_steps) + 1
    if fam == "ngram":
        return _positive("--speculative-num-draft-tokens", num_draft_tokens)
    if fam == "dflash":
        if dflash_block_size is not None and num_draft_tokens is not None and dflash_block_size != num_draft_tokens:
            raise plugin.SamplerError(
                f"DFLASH: --speculative-dflash-block-size {dflash_block_size} must equal "
                f"--speculative-num-draft-tokens {num_draft_tokens}"
            )
        block = dflash_block_size if dflash_block_size is not None else num_draft_tokens
        block = _positive("DFLASH block size (--speculative-num-draft-tokens)", block)
        if block < 2:
            raise plugin.SamplerError(f"DFLASH block size must be >= 2 (current token + drafts), got {block}")
        return block
    return _positive("--speculative-dspark-block-size (gamma)", dspark_block_size) + 1


def sglang_engine_flags(algorithm: str, k: int) -> dict[str, str]:
    """The SGLang server flags that give draft length ``k`` for ``algorithm``."""
    k = units.check_draft_len(k)
    fam = _family(algorithm)
    algo = str(algorithm).upper()
    if fam == "eagle":
        return {
            "--speculative-algorithm": algo,
            "--speculative-num-steps": str(k),
            "--speculative-eagle-topk": "1",
            "--speculative-num-draft-tokens": str(k + 1),
        }
    if fam == "ngram":
        return {"--speculative-algorithm": algo, "--speculative-num-draft-tokens": str(k + 1)}
    if fam == "dflash":
        return {"--speculative-algorithm": algo, "--speculative-num-draft-tokens": str(k + 1)}
    return {
        "--speculative-algorithm": algo,
        "--speculative-dspark-block-size": str(k),
        "--speculative-num-draft-tokens": str(k + 1),
    }


def sglang_max_len_for_draft_len(algorithm: str, k: int) -> int:
    """``max_len`` for draft length ``k``, through the flags :func:`sglang_engine_flags` gives."""
    flags = sglang_engine_flags(algorithm, k)
    fam = _family(algorithm)
    if fam == "eagle":
        return sglang_max_len(algorithm, num_steps=int(flags["--speculative-num-steps"]))
    if fam == "dspark":
        return sglang_max_len(algorithm, dspark_block_size=int(flags["--speculative-dspark-block-size"]))
    return sglang_max_len(algorithm, num_draft_tokens=int(flags["--speculative-num-draft-tokens"]))


def multinomial_pmf(al: float, max_len: int) -> NDArray[np.float64]:
    """Exact pmf of ``round_half_even(clamp(Normal(al, 1), 1, max_len))`` on ``1..max_len``.

    ``P(L=1) = Phi(1.5 - al)``; ``P(L=j) = Phi(j + .5 - al) - Phi(j - .5 - al)`` for
    ``1 < j < max_len``; ``P(L=max_len) = 1 - Phi(max_len - .5 - al)``. Ties at
    ``j + .5`` have probability zero, so round-half-even only matters in float32
    (an effect below 1e-7). Away from the bounds the mean is AL up to rounding's own
    periodic bias, below 2e-9 for a unit-variance normal.
    """
    if max_len < 1:
        raise plugin.SamplerError(f"max_len must be >= 1, got {max_len}")
    if max_len == 1:
        return np.ones(1)
    edges = np.arange(1, max_len) + 0.5 - float(al)  # boundaries between L=j and L=j+1
    cdf = norm.cdf(edges)
    sf = norm.sf(edges)  # accurate upper tail
    probs = np.empty(max_len)
    probs[0] = cdf[0]
    probs[1:-1] = np.where(edges[1:] > 0, sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
    probs[-1] = sf[-1]
    return np.clip(probs, 0.0, 1.0)


class _SGLangBase(plugin.EngineSampler):
    engine: ClassVar[str] = "sglang"
    draw_unit = "batch-step"
    upstream = _UPSTREAM

    def __init__(self, algorithm: str = "eagle") -> None:
        _family(algorithm)
        self.algorithm = str(algorithm).lower()

    def max_len(self, k: int) -> int:
        """The clamp for draft length ``k`` under this sampler's algorithm."""
        return sglang_max_len_for_draft_len(self.algorithm, k)

    def _pad(self, probs: NDArray[np.float64], k: int) -> AcceptanceDistribution:
        full = np.zeros(k + 1)
        full[: probs.size] = probs
        return AcceptanceDistribution(full)

    def _common_warnings(self, al: float, k: int) -> list[str]:
        out = [
            "SGLang draws ONE length per verify step for the whole batch: every request in a step "
            "gets the same L, so per-step batch tokens vary B times more than with per-request "
            "draws and concurrent requests are perfectly correlated"
        ]
        fam = _family(self.algorithm)
        if fam == "dspark" and al != 1.0:
            out.append(
                "DSPARK refuses SGLANG_SIMULATE_ACC_LEN > 0 and != 1.0 unless the verify planner is "
                "verify-all: set SGLANG_RAGGED_VERIFY_MODE=static"
            )
        if fam == "dspark":  # dspark_components/dspark_worker_v2.py; the draw stays dspark_verify.py's
            out.append(
                "SGLANG_SIMULATE_ACC_GREEDY=1 leaves this law as it is: temperature-only requests then draft and "
                "accept greedily and only the bonus token is temperature-sampled"
            )
        if fam == "dflash":
            out.append(
                "DFLASH honours SGLANG_SIMULATE_ACC_LEN only in newer SGLang (present in 0.5.23, "
                "absent in 0.5.15.post1): on older images the value is silently ignored"
            )
        if fam == "ngram":
            out.append(
                "NGRAM supports only SGLANG_SIMULATE_ACC_TOKEN_MODE=fixed (real-draft-token needs topk 1)"
            )
        return out


class SGLangMatchExpected(_SGLangBase):
    """SGLang ``match-expected``: ``floor(a)`` or ``floor(a) + 1``, mean exactly ``a``."""

    method: ClassVar[str] = "match-expected"
    guarantees_mean = True
    summary = "two-point floor/ceil draw with E[L] = AL, one draw per verify step for the whole batch"

    def _two_point(self, al: float, k: int) -> tuple[int, int, float]:
        al, k = self.check(al, k)
        max_len = self.max_len(k)
        a = max(1.0, min(float(max_len), al))
        lower = int(a // 1)
        upper = lower + 1 if lower < max_len else lower
        return lower, upper, (a - lower if upper != lower else 0.0)

    def pmf(self, al: float, k: int) -> AcceptanceDistribution:
        lower, upper, w_upper = self._two_point(al, k)
        probs = np.zeros(k + 1)
        probs[lower - 1] += 1.0 - w_upper
        probs[upper - 1] += w_upper
        return AcceptanceDistribution(probs)

    def simulate(self, al: float, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        lower, upper, w_upper = self._two_point(al, k)
        # torch.multinomial over [1 - w, w]: index 1 (upper) with probability w.
        pick_upper = rng.random(size) < w_upper
        return np.where(pick_upper, upper, lower).astype(np.int64)

    def warnings(self, al: float, k: int) -> list[str]:
        al, k = self.check(al, k)
        return self._common_warnings(al, k)


class SGLangMultinomial(_SGLangBase):
    """SGLang ``multinomial``: a clamped, rounded ``Normal(AL, 1)`` (not a multinomial)."""

    method: ClassVar[str] = "multinomial"
    guarantees_mean = False
    summary = (
        "misnomer: L = round_half_even(clamp(Normal(AL, 1), 1, max_len)); biased near the bounds; "
        "one draw per verify step for the whole batch"
    )

    def pmf(self, al: float, k: int) -> AcceptanceDistribution:
        al, k = self.check(al, k)
        return self._pad(multinomial_pmf(al, self.max_len(k)), k)

    def bias(self, al: float, k: int) -> float:
        """Exact ``E[L] - AL``."""
        return self.pmf(al, k).mean() - float(al)

    def simulate(self, al: float, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        al, k = self.check(al, k)
        max_len = self.max_len(k)
        # torch.normal(mean=AL, std=1.0) in float32, clamp to [1, max_len], .round()
        # (half to even, as np.rint), int().
        x = rng.standard_normal(size, dtype=np.float32)
        x += np.float32(al)
        np.clip(x, np.float32(1.0), np.float32(max_len), out=x)
        np.rint(x, out=x)
        return x.astype(np.int64)

    def warnings(self, al: float, k: int) -> list[str]:
        al, k = self.check(al, k)
        dist = self.pmf(al, k)
        mean = dist.mean()
        bias = mean - al
        rel = bias / al
        out = [
            f"SGLang 'multinomial' is a clamped, rounded Normal(AL, 1), not a multinomial: at AL={al:g}, "
            f"k={k} (clamp [1, {self.max_len(k)}]) its exact mean is {mean:.4f}, a bias of {bias:+.4f} "
            f"tokens/step ({rel:+.2%}), and its std is {dist.std():.3f}; use match-expected to hit the AL"
        ]
        if math.isclose(bias, 0.0, abs_tol=1e-9):
            out[0] = (
                f"SGLang 'multinomial' is a clamped, rounded Normal(AL, 1), not a multinomial: at AL={al:g}, "
                f"k={k} the clamp is symmetric so the mean is unbiased, but its std is {dist.std():.3f}"
            )
        return out + self._common_warnings(al, k)
