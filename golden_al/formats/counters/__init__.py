"""Spec-decode counters out of a Prometheus snapshot: the generic part, one reader per engine.

An engine that exposes spec-decode counters names, in its profile, the metric whose presence says its
counters are in a snapshot (:attr:`~golden_al.plugin.profile.ServerSupport.counter_marker`) and its
reader (:attr:`~golden_al.plugin.profile.ServerSupport.counter_reader`, a hook,
``(snapshot, labels) -> SpecCounters``). The built-in readers sit beside this module, one per engine
(:mod:`.vllm`, :mod:`.sglang`, :mod:`.atom`, :mod:`.llamacpp`); this module names none of them.

A metric with no sample raises :class:`~golden_al.errors.MetricMissingError`; it is never read as
zero. A counter that went down between two snapshots raises
:class:`~golden_al.errors.CounterResetError`. Zero verify steps in a window is an explicit state
(:attr:`SpecCounters.num_verify_steps` is 0, and asking for the AL raises
:class:`~golden_al.errors.NoVerifyStepsError`), never an AL of 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from distributions.counts import AcceptanceCounts
from distributions.errors import DistributionError
from golden_al.errors import (
    CounterResetError,
    InputFileError,
    MetricMissingError,
    NoVerifyStepsError,
    UsageError,
)
from golden_al.formats.prometheus import MetricsSnapshot
from golden_al.plugin import registry

__all__ = [
    "DraftCounters",
    "SpecCounters",
    "check_not_backwards",
    "counter",
    "counters_delta",
    "detect_engine",
    "int_label",
    "no_steps",
    "optional",
    "order_snapshots",
    "spec_counters",
    "to_counts",
    "validate_counters",
]


_C = TypeVar("_C", bound="DraftCounters")
#: how :meth:`DraftCounters.counts` names its counters in messages
_COUNTER_FIELDS = {"num_verify_steps": "num_drafts", "num_accepted_drafts": "num_accepted_tokens",
                   "num_draft_tokens": "num_draft_tokens", "per_position_accepted": "accepted-per-position counters"}


@dataclass(frozen=True)
class DraftCounters:
    """Spec-decode counters of the shape vLLM exposes and llama-server copies (or a delta of two snapshots):
    request-steps that carried drafts, draft tokens, accepted draft tokens (the bonus excluded) and accepted tokens
    per draft position. An engine's subclass names its metrics (:attr:`names`), its display name and turns the totals
    into counts (:meth:`counts`)."""

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_position: tuple[float, ...] = ()
    source: str | None = None

    #: the engine's name (its ``--engine``)
    engine: ClassVar[str] = ""
    #: the engine's name as people write it, for messages
    display: ClassVar[str] = ""
    #: the metrics of drafts, draft tokens, accepted tokens and accepted tokens per position, and the position label
    names: ClassVar[tuple[str, str, str, str, str]] = ("", "", "", "", "position")
    #: the engine's setting that fixes k (vLLM's ``num_speculative_tokens``), for hints
    k_setting: ClassVar[str] = "k"

    @classmethod
    def from_snapshot(cls: type[_C], snap: MetricsSnapshot, labels: Mapping[str, str] | None = None,
                      **extra: Any) -> _C:
        """The counters :attr:`names` names in a snapshot (``validate``d); ``extra``: a subclass's own fields.

        Raises:
            MetricMissingError: a counter is absent.
            InputFileError: a value is not a finite count, or a position label is not an integer.
        """
        drafts, draft_tokens, accepted, per_pos_name, position = cls.names
        per_pos: tuple[float, ...] = ()
        if snap.select(per_pos_name, labels):
            idx = {int_label(snap, per_pos_name, position, key): v
                   for key, v in snap.by_label(per_pos_name, position, labels).items()}
            if not all(math.isfinite(v) and v >= 0 for v in idx.values()):
                raise InputFileError(f"counter {per_pos_name} has a value that is not a finite count",
                                     path=snap.source)
            per_pos = tuple(idx.get(i, 0.0) for i in range(max(idx) + 1))
        out = cls(counter(snap, drafts, labels), counter(snap, draft_tokens, labels), counter(snap, accepted, labels),
                  per_pos, source=snap.source, **extra)
        out.validate()
        return out

    def counts(self, k: int | None) -> AcceptanceCounts:
        """Counts of these totals (one snapshot, or a delta of two), as vLLM's ``SpecDecodingProm`` (vllm-project/vllm
        ``vllm/v1/spec_decode/metrics.py``, 0.33.0) and llama-server (ggml-org/llama.cpp ``server-context.cpp``,
        0c1e570) count them: ``num_drafts`` +1 per request-step with drafts, accepted tokens without the bonus, and
        position ``j`` the steps that accepted at least ``j + 1`` drafts, which fixes the histogram of a chain draft.
        ``k`` defaults to the number of positions.

        Raises:
            DistributionError: unless ``0 <= accepted <= draft_tokens <= k*drafts``, the per-position counts sum to
                the accepted ones and do not increase (each message says which law was broken).
        """
        from distributions import units
        from distributions.counts import as_count, fit_length, format_count, position_counts

        src = f"{self.engine}-counters"
        per_pos = self.accepted_per_position
        pos = position_counts(per_pos, f"{src}: accepted-per-position") if per_pos else None
        if k is None:
            if not pos:
                raise DistributionError(f"{src}: the draft length k is unknown (no per-position counters given)",
                                        hint=f"pass k={self.k_setting}")
            k = len(pos)
        k = units.check_draft_len(k)
        if pos is not None:
            pos = fit_length(pos, k, f"{src}: accepted-per-position", f"k={k} positions")
        drafts = as_count(self.num_drafts, f"{src}: num_drafts")
        drafted = as_count(self.num_draft_tokens, f"{src}: num_draft_tokens")
        if drafted > k * drafts * (1 + 1e-9):
            raise DistributionError(
                f"{src}: num_draft_tokens={format_count(drafted)} exceeds k*num_drafts={k}*{format_count(drafts)}"
                f"={format_count(k * drafts)}", hint=f"a request-step drafts at most k tokens; is k ({self.k_setting}) right?")
        return AcceptanceCounts(k=k, num_verify_steps=drafts, num_accepted_drafts=self.num_accepted_tokens,
                                num_draft_tokens=drafted, per_position_accepted=None if pos is None else tuple(pos),
                                source=src, field_names=_COUNTER_FIELDS)

    @property
    def num_verify_steps(self) -> float:
        """Request-steps with drafts (``num_drafts``)."""
        return self.num_drafts

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted draft tokens (bonus excluded)."""
        return self.num_accepted_tokens

    @property
    def al(self) -> float:
        """``1 + accepted / drafts``; raises NoVerifyStepsError when no drafts were seen."""
        from distributions import units

        if self.num_drafts <= 0:
            raise no_steps(self.display, f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.num_accepted_tokens, self.num_drafts)

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted / drafted tokens, or None without draft tokens."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens > 0 else None

    @property
    def per_position_rates(self) -> tuple[float, ...]:
        """Unconditional per-position rates ``accepted_pos / num_drafts``."""
        if self.num_drafts <= 0:
            raise no_steps(self.display, f"{self.source}: " if self.source else "")
        return tuple(a / self.num_drafts for a in self.accepted_per_position)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """:class:`~distributions.counts.AcceptanceCounts` (``k`` defaults to the positions seen)."""
        return to_counts(lambda: self.counts(k), self.source)

    def minus(self: _C, before: DraftCounters) -> _C:
        """``self - before``, checking that no counter went backwards (CounterResetError: a restart)."""
        where = f"{self.source}: " if self.source else ""
        drafts, draft_tokens, accepted, per_pos, position = self.names
        for name, b, a in ((drafts, before.num_drafts, self.num_drafts),
                           (draft_tokens, before.num_draft_tokens, self.num_draft_tokens),
                           (accepted, before.num_accepted_tokens, self.num_accepted_tokens)):
            check_not_backwards(name, b, a, where)
        n = max(len(before.accepted_per_position), len(self.accepted_per_position))
        pb = list(before.accepted_per_position) + [0.0] * (n - len(before.accepted_per_position))
        pa = list(self.accepted_per_position) + [0.0] * (n - len(self.accepted_per_position))
        for i, (b, a) in enumerate(zip(pb, pa, strict=True)):
            check_not_backwards(f'{per_pos}{{{position}="{i}"}}', b, a, where)
        return type(self)(self.num_drafts - before.num_drafts, self.num_draft_tokens - before.num_draft_tokens,
                          self.num_accepted_tokens - before.num_accepted_tokens,
                          tuple(a - b for a, b in zip(pa, pb, strict=True)), source=self.source)

    def order_key(self) -> float:
        """Draft plus accepted tokens (they grow whenever a step with drafts runs)."""
        return self.num_draft_tokens + self.num_accepted_tokens

    def validate(self, k: int | None = None) -> None:
        """:func:`~golden_al.formats.validate.check_counts` on these counters."""
        from golden_al.formats.validate import check_counts

        check_counts(what=f"{self.engine} Prometheus counters" + (" (delta)" if self.source is None else ""),
                     accepted=self.num_accepted_tokens, drafted=self.num_draft_tokens, drafts=self.num_drafts, k=k,
                     per_position=self.accepted_per_position or None, path=self.source)

    def independent_draws(self, batch_size: float | None) -> tuple[float, list[str]]:
        """Every request-step is its own draw."""
        return self.num_verify_steps, []


class SpecCounters(Protocol):
    """One engine's cumulative spec-decode counters (or a delta of two snapshots)."""

    @property
    def engine(self) -> str:
        """The engine's ``--engine`` name."""

    @property
    def source(self) -> str | None:
        """The snapshot they were read from (None: a delta)."""

    @property
    def num_verify_steps(self) -> float:
        """Request-steps that verified drafts."""

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted draft tokens (bonus excluded)."""

    @property
    def al(self) -> float:
        """``1 + accepted / verify steps``; NoVerifyStepsError when there were none."""

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """:class:`~distributions.counts.AcceptanceCounts` of these counters."""

    def minus(self, before: Any) -> SpecCounters:
        """``self - before``; CounterResetError when a counter went backwards."""

    def order_key(self) -> float:
        """A second monotone total that orders two snapshots whose verify steps tie."""

    def validate(self, k: int | None = None) -> None:
        """:func:`golden_al.formats.validate.check_counts` on these counters."""

    def independent_draws(self, batch_size: float | None) -> tuple[float, list[str]]:
        """How many independent draws the AL rests on, and notes saying how that was counted."""


def check_not_backwards(name: str, before: float, after: float, where: str) -> None:
    if after < before:
        raise CounterResetError(
            f"{where}counter {name} went backwards: {before:g} before, {after:g} after",
            hint="the server restarted (or the snapshots come from different servers) between the two scrapes; "
            "re-run the window on one server",
        )


def to_counts(build: object, source: str | None) -> AcceptanceCounts:
    try:
        return build()  # type: ignore[operator,no-any-return]
    except DistributionError as exc:
        raise InputFileError(f"inconsistent spec-decode counters: {exc.message}", path=source, hint=exc.hint) from None


def no_steps(engine: str, where: str) -> NoVerifyStepsError:
    return NoVerifyStepsError(
        f"{where}{engine} recorded zero verify steps: AL is undefined",
        hint="no request reached a decode step with drafts in this window; send more or longer requests",
    )


def counter(snap: MetricsSnapshot, name: str, labels: Mapping[str, str] | None) -> float:
    value = snap.total(name, labels)
    if not math.isfinite(value) or value < 0:
        raise InputFileError(f"counter {name} is {value!r}", path=snap.source,
                             hint="a cumulative counter is a finite number >= 0")
    return value


def optional(snap: MetricsSnapshot, name: str, labels: Mapping[str, str] | None) -> float | None:
    return snap.total(name, labels) if snap.select(name, labels) else None


def int_label(snap: MetricsSnapshot, name: str, label: str, value: str) -> int:
    try:
        out = int(value)
    except ValueError:
        out = -1
    if out < 0:
        raise InputFileError(
            f"metric {name} has a non-integer {label} label {value!r}",
            path=snap.source,
            hint=f"expected {label}=\"0\", \"1\", ...",
        )
    return out


def validate_counters(c: SpecCounters, k: int | None = None) -> None:
    """:func:`golden_al.formats.validate.check_counts` on a snapshot's (or a delta's) counters."""
    c.validate(k)


def _markers() -> list[tuple[str, str]]:
    """(engine, the metric that says its counters are there) for every engine that has counters."""
    out = []
    for name in registry.engine_names():
        profile = registry.get_profile(name)
        if profile.server.counter_marker is not None and profile.server.counter_reader is not None:
            out.append((name, profile.server.counter_marker))
    return out


def detect_engine(snapshot: MetricsSnapshot) -> str | None:
    """Which engine's spec-decode counters the snapshot holds (None if none, or several)."""
    found = [engine for engine, marker in _markers() if snapshot.has(marker)]
    return found[0] if len(found) == 1 else None


def spec_counters(snapshot: MetricsSnapshot, engine: str | None = None,
                  labels: Mapping[str, str] | None = None) -> SpecCounters:
    """The spec-decode counters of ``engine`` (auto-detected when None), read by its profile's reader.

    Raises:
        MetricMissingError: the engine's counters are absent (speculation off, or
            another engine's /metrics).
        UsageError: an engine without counters, or several engines' counters and no engine named.
    """
    markers = _markers()
    if engine is None:
        engine = detect_engine(snapshot)
        if engine is None:
            where = snapshot._where()
            present = [e for e, m in markers if snapshot.has(m)]
            if present:
                raise UsageError(f"{where}holds counters of several engines ({', '.join(present)})",
                                 hint="name the engine")
            raise MetricMissingError(
                f"{where}no speculative-decoding counters ({', '.join(m for _, m in markers)}) found",
                hint="was the server started with speculative decoding (and SGLang with --enable-metrics)?",
            )
    profile = registry.get_profile(engine) if engine in registry.engine_names() else None
    if profile is None or profile.server.counter_reader is None:
        raise UsageError(f"no Prometheus spec-decode counters are known for engine {engine!r}",
                         hint="one of " + ", ".join(e for e, _ in markers))
    reader: Callable[[MetricsSnapshot, Mapping[str, str] | None], SpecCounters] = registry.load_hook(
        profile.server.counter_reader)
    return reader(snapshot, labels)


def counters_delta(before: SpecCounters, after: SpecCounters) -> SpecCounters:
    """``after - before`` for two snapshots of one engine.

    Raises:
        CounterResetError: a counter went backwards (server restarted in between).
        UsageError: the two snapshots come from different engines.
    """
    if type(before) is not type(after):
        raise UsageError(f"cannot subtract {before.engine} counters from {after.engine} counters")
    return after.minus(before)


def order_snapshots(snapshots: Iterable[tuple[MetricsSnapshot, SpecCounters]]
                    ) -> list[tuple[MetricsSnapshot, SpecCounters]]:
    """Order snapshots of one server in time by their monotone counters (earliest first).

    Used to auto-detect which of two files is "before": the one whose verify-step
    counter is smaller. Ties keep the given order.
    """
    return sorted(snapshots, key=lambda pair: (pair[1].num_verify_steps, pair[1].order_key()))
