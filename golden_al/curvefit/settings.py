"""The settings that records of one golden curve must share, and the refusal when they don't.

AL depends on everything that shapes the token stream, so records measured under
different settings are never averaged into one golden value. Two scopes:

* **curve** (every record of the curve, both thinking modes): ``engine``,
  ``engine_version``, ``server.image``, ``server.curve_selectors``, ``draft_method``, ``block_draft.algorithm`` (DFlash or
  DFlash2), the target and draft
  identity (``sha256`` when every record has one, else the name, case-insensitive),
  ``target.dtype``, ``draft.dtype``, ``draft.shipped_dtype``, ``dataset.name``,
  ``dataset.category``;
* **mode** (the records of one thinking mode): ``sampling.temperature``,
  ``sampling.top_p``, ``sampling.top_k``, ``sampling.max_tokens``,
  ``chat_template_kwargs``, ``dataset.hash`` (the rendered prompts, so the same
  prompts at every k; for shards of one set, ``dataset.source_hash``: the set they are
  drawn from, their selections checked by :func:`golden_al.curvefit.pool.check_shards`),
  ``dataset.chat_template_hash`` and ``estimate`` (expected
  counts from sampled replay are not mixed with observed counts).

Not compared: ``sampling.seed`` (different seeds of one setting may be pooled), ``mode``
(greedy replay is exact, so live and replay records of a greedy setting agree), file
paths, host and times. :func:`check_agreement` raises :class:`SettingsMismatchError`
naming the field, each value seen and the record files that carry it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from golden_al.curvefit.errors import SettingsMismatchError
from golden_al.measure.records import LoadedRecord
from golden_al.measure.schema import MeasurementRecord, ModelInfo

__all__ = ["SETTINGS", "Setting", "check_agreement", "settings_of"]

Scope = Literal["curve", "mode"]


@dataclass(frozen=True)
class Setting:
    """One setting compared across records."""

    name: str
    scope: Scope
    get: Callable[[MeasurementRecord], Any]


def _identity(which: str) -> Callable[[MeasurementRecord], Any]:
    def get(r: MeasurementRecord) -> Any:
        m: ModelInfo = getattr(r, which)
        return {"name": m.name, "sha256": m.sha256}

    return get


SETTINGS: tuple[Setting, ...] = (
    Setting("engine", "curve", lambda r: r.engine),
    Setting("engine_version", "curve", lambda r: r.engine_version),
    Setting("server.image", "curve", lambda r: r.server.image if r.server else None),
    # settings that change real AL (a quantized draft head, block verification): one curve, one set of them
    Setting("server.curve_selectors", "curve", lambda r: r.server.curve_selectors if r.server else None),
    Setting("draft_method", "curve", lambda r: r.draft_method),
    # DFlash and DFlash2 share the method ``dflash`` (vLLM's spelling for both): the draft tells them apart
    Setting("block_draft.algorithm", "curve", lambda r: r.block_draft.algorithm if r.block_draft else None),
    Setting("target", "curve", _identity("target")),
    Setting("target.dtype", "curve", lambda r: r.target.dtype),
    Setting("draft", "curve", _identity("draft")),
    Setting("draft.dtype", "curve", lambda r: r.draft.dtype),
    Setting("draft.shipped_dtype", "curve", lambda r: r.draft.shipped_dtype),
    Setting("dataset.name", "curve", lambda r: r.dataset.name),
    Setting("dataset.category", "curve", lambda r: r.dataset.category),
    Setting("sampling.temperature", "mode", lambda r: r.sampling.temperature),
    Setting("sampling.top_p", "mode", lambda r: r.sampling.top_p),
    Setting("sampling.top_k", "mode", lambda r: r.sampling.top_k),
    Setting("sampling.max_tokens", "mode", lambda r: r.sampling.max_tokens),
    Setting("chat_template_kwargs", "mode", lambda r: r.chat_template_kwargs),
    Setting("dataset.hash", "mode", lambda r: r.dataset.prompt_set_key()),
    Setting("dataset.chat_template_hash", "mode", lambda r: r.dataset.chat_template_hash),
    Setting("estimate", "mode", lambda r: r.estimate),
)


def _canonical(setting: Setting, records: Sequence[LoadedRecord]) -> list[Any]:
    """Comparable values; model identity is the sha256 when all records have one, else the name."""
    values = [setting.get(lr.record) for lr in records]
    if setting.name in ("target", "draft"):
        if all(v["sha256"] for v in values):
            return [f"sha256 {v['sha256']}" for v in values]
        return [str(v["name"]).strip().casefold() for v in values]
    return values


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def settings_of(record: MeasurementRecord, scope: Scope | None = None) -> dict[str, Any]:
    """``{setting name: value}`` of one record (both scopes unless ``scope`` is given)."""
    return {s.name: s.get(record) for s in SETTINGS if scope is None or s.scope == scope}


def check_agreement(records: Sequence[LoadedRecord], scope: Scope, *, context: str = "") -> None:
    """Raise :class:`SettingsMismatchError` if ``records`` disagree on a setting of ``scope``.

    The message names the field, every value seen and (up to three of) the records
    holding it.
    """
    if len(records) < 2:
        return
    for setting in SETTINGS:
        if setting.scope != scope:
            continue
        values = _canonical(setting, records)
        groups: dict[str, list[str]] = {}
        for value, lr in zip(values, records, strict=True):
            groups.setdefault(_text(value), []).append(lr.label())
        if len(groups) < 2:
            continue
        parts = []
        for value, labels in groups.items():
            shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
            parts.append(f"{value} in {shown}")
        where = f" ({context})" if context else ""
        raise SettingsMismatchError(
            f"records disagree on {setting.name}{where}: " + "; ".join(parts)
            + ". Refusing to average records measured with different settings",
            field=setting.name,
            groups=groups,
            hint="fit the records of one setting at a time (one target/draft/engine/dataset per curve; "
                 "one sampling, chat template and prompt set per thinking mode), or re-measure",
        )
