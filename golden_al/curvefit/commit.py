"""Add or update a golden curve in a store: the diff against what is committed, and the write.

:func:`plan_commit` compares a new curve with the committed curve of the same model,
draft method and variant in a golden directory and classifies every value:

* per (thinking mode, k): ``added`` (a new point), ``unchanged``, ``changed`` (the AL
  differs), ``removed`` (committed, absent from the new curve), ``revised`` (same AL,
  but a committed CI, count or origin differs) or ``completed`` (same AL; the new curve
  adds a CI or counts the committed point lacked);
* the settings (aliases, draft, engine, dataset, per-mode sampling and output length):
  a change is guarded, except aliases that are only added; provenance changes are shown
  and never guarded.

The new curve replaces the committed one. Changing, removing or revising a committed
value, or changing a setting, is refused (:class:`CommitRefusedError`, exit 1) unless
``force``; adding points is always allowed. :func:`apply_commit` writes the curve
atomically (nothing is written when the bytes are unchanged, so a re-commit is a
no-op) and, optionally, the InferenceX legacy shape (:func:`golden_al.golden.write_legacy`).

A new curve goes to ``<model>_<method>[_<variant>].yaml``. A committed curve of the same
model in the InferenceX legacy shape, or an alias that already names another model, is
a usage error: the store must stay unambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from golden_al import safeio
from golden_al.curvefit.errors import CommitRefusedError
from golden_al.errors import GoldenALError, UsageError
from golden_al.golden import (
    GoldenCurve,
    GoldenStore,
    Point,
    StoredCurve,
    dump_curve,
    load_store,
    save_curve,
    write_legacy,
)
from golden_al.provenance import atomic_write_text

__all__ = [
    "CommitPlan",
    "CommitResult",
    "FieldChange",
    "PointChange",
    "apply_commit",
    "curve_file_name",
    "display_path",
    "plan_commit",
]

PointKind = Literal["added", "unchanged", "changed", "removed", "revised", "completed"]
_GUARDED_POINT_KINDS = ("changed", "removed", "revised")
_DETAIL_FIELDS = ("ci95", "uncertainty", "num_verify_steps", "num_accepted_drafts", "per_position_accepted", "origin")


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it (stable output), else as is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def curve_file_name(curve: GoldenCurve) -> str:
    """``<model>_<method>[_<variant>].yaml`` (the InferenceX naming, with our model key)."""
    parts = [curve.model, curve.draft.method] + ([curve.draft.variant] if curve.draft.variant else [])
    return "_".join(parts) + ".yaml"


_IMPORTED_FROM = re.compile(r"golden_al_distribution/([A-Za-z0-9._-]+\.ya?ml)\b")


def export_file_name(curve: GoldenCurve, export_dir: Path | None = None, export_name: str | None = None) -> str:
    """The file name ``--export inferencex`` writes: the one InferenceX would name for this curve.

    ``export_name`` when given; else, for a curve imported from InferenceX, the file it came
    from (its provenance notes name ``golden_al_distribution/<file>``); else the file of
    ``export_dir`` that already holds this model, method and variant. A new curve has no
    such name: InferenceX names files by its own model prefix (``dsv4_mtp.yaml`` for
    ``deepseek-v4-pro``), which golden-al cannot derive, so it must be given.

    Raises:
        UsageError: ``export_name`` is not a plain ``*.yaml`` file name, or the curve is new
            and no ``export_name`` is given.
    """
    if export_name is not None:
        if Path(export_name).name != export_name or not export_name.endswith((".yaml", ".yml")):
            raise UsageError(f"--export-name must be a file name ending in .yaml, got {export_name!r}",
                             hint="e.g. --export-name dsv4_mtp.yaml (InferenceX names files <model prefix>_<method>)")
        return export_name
    notes = (curve.provenance.notes if curve.provenance else None) or ""
    m = _IMPORTED_FROM.search(notes)
    if m:
        return m.group(1)
    there = _exported_file(curve, export_dir) if export_dir is not None else None
    if there is not None:
        return there.name
    where = f" in {display_path(export_dir)}" if export_dir is not None else ""
    what = f"{curve.draft.method}{', ' + curve.draft.variant if curve.draft.variant else ''}"
    suffix = "_".join([curve.draft.method, *([curve.draft.variant] if curve.draft.variant else [])])
    raise UsageError(f"{curve.model} ({what}) has no file{where} yet, and golden-al cannot know the name "
                     "InferenceX would give it",
                     hint=f"name it: --export-name <model prefix>_{suffix}.yaml, with the model prefix InferenceX "
                          "uses (e.g. dsv4_mtp.yaml for deepseek-v4-pro)")


def _exported_file(curve: GoldenCurve, export_dir: Path, dest: Path | None = None) -> Path | None:
    """The file of ``export_dir`` (other than ``dest``) that holds this model's curve of the same method and variant."""
    if not export_dir.is_dir():
        return None
    try:
        store = load_store(export_dir)
    except GoldenALError:
        return None
    keys = {store.resolve_model(n) for n in (curve.model, *curve.aliases) if _resolves(store, n)}
    for sc in store.curves:
        if (sc.model in keys and sc.method == curve.draft.method and sc.variant == curve.draft.variant
                and (dest is None or sc.path.resolve() != dest.resolve())):
            return sc.path
    return None


def _resolves(store: GoldenStore, name: str) -> bool:
    try:
        return store.resolve_model(name) is not None
    except GoldenALError:
        return False


def _fmt(v: Any) -> str:
    if isinstance(v, str) and len(v) > 72:
        return repr(v[:60] + "…")
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return "null" if v is None else str(v)


def _point_text(p: Point) -> str:
    bits = [f"{p.al:.2f}"]
    if p.ci95 is not None:
        bits.append(f"ci95 [{p.ci95[0]:g}, {p.ci95[1]:g}]")
    if p.num_verify_steps is not None:
        bits.append(f"{p.num_verify_steps} steps")
    bits.append(p.origin)
    return " ".join(bits[:1]) + (" (" + ", ".join(bits[1:]) + ")" if len(bits) > 1 else "")


@dataclass(frozen=True)
class PointChange:
    """What happens to one (thinking mode, k) value."""

    mode: str
    k: int
    kind: PointKind
    old: Point | None
    new: Point | None
    details: tuple[str, ...] = ()

    @property
    def guarded(self) -> bool:
        """True when the change needs ``--force``."""
        return self.kind in _GUARDED_POINT_KINDS

    def body(self) -> str:
        """What changes, without the diff marker and the ``--force`` note."""
        where = f"{self.mode} k={self.k}"
        if self.kind == "added":
            assert self.new is not None
            return f"{where}: added {_point_text(self.new)}"
        if self.kind == "removed":
            assert self.old is not None
            return f"{where}: {self.old.al:.2f} -> removed"
        assert self.old is not None
        assert self.new is not None
        if self.kind == "changed":
            return f"{where}: {self.old.al:.2f} -> {self.new.al:.2f} ({self.new.al - self.old.al:+.2f})"
        if self.kind in ("revised", "completed"):
            return f"{where}: {self.new.al:.2f} unchanged; {'; '.join(self.details)}"
        return f"{where}: {self.new.al:.2f} unchanged"

    def describe(self) -> str:
        """One diff line: ``+`` added, ``-`` removed, ``~`` changed, two spaces unchanged."""
        mark = {"added": "+", "removed": "-", "unchanged": " "}.get(self.kind, "~")
        return f"{mark} {self.body()}" + ("  (needs --force)" if self.guarded else "")


@dataclass(frozen=True)
class FieldChange:
    """A curve-level field that differs (``path`` is dotted, e.g. ``thinking_off.sampling``)."""

    path: str
    old: Any
    new: Any
    guarded: bool

    def body(self) -> str:
        """What changes, without the diff marker and the ``--force`` note."""
        return f"{self.path}: {_fmt(self.old)} -> {_fmt(self.new)}"

    def describe(self) -> str:
        """One diff line."""
        return f"~ {self.body()}" + ("  (needs --force)" if self.guarded else "")


@dataclass(frozen=True)
class CommitPlan:
    """The diff and what would be written."""

    curve: GoldenCurve
    golden_dir: Path
    target: Path
    existing: StoredCurve | None
    points: tuple[PointChange, ...]
    fields: tuple[FieldChange, ...]
    text: str
    old_text: str | None

    @property
    def is_new(self) -> bool:
        return self.existing is None

    @property
    def unchanged(self) -> bool:
        """True when the file would be written byte for byte as it is."""
        return self.old_text == self.text

    @property
    def guarded(self) -> list[str]:
        """Descriptions of every change that needs ``--force``."""
        changes: list[PointChange | FieldChange] = [*self.points, *self.fields]
        return [c.body() for c in changes if c.guarded]

    def counts(self) -> dict[str, int]:
        out = {k: 0 for k in ("added", "changed", "removed", "revised", "completed", "unchanged")}
        for c in self.points:
            out[c.kind] += 1
        out["settings"] = sum(1 for f in self.fields if f.guarded)
        return out

    def lines(self, *, show_unchanged: bool = True) -> list[str]:
        """The diff, one line per value."""
        head = (f"{self.curve.model} ({self.curve.draft.method}) -> {display_path(self.target)}"
                + (" (new file)" if self.is_new else f" (committed: {self.existing.name})" if self.existing else ""))
        out = [head]
        out += [c.describe() for c in self.points if show_unchanged or c.kind != "unchanged"]
        out += [f.describe() for f in self.fields]
        return out


@dataclass(frozen=True)
class CommitResult:
    """What :func:`apply_commit` wrote."""

    written: Path | None
    exported: Path | None
    plan: CommitPlan
    notes: list[str] = field(default_factory=list)


def _existing_store(golden_dir: Path) -> GoldenStore | None:
    if not golden_dir.exists():
        return None
    if not golden_dir.is_dir():
        raise UsageError(f"golden directory {str(golden_dir)!r} is not a directory")
    if not any(p.suffix in (".yaml", ".yml") and p.is_file() for p in golden_dir.iterdir()):
        return None
    return load_store(golden_dir)


def _mode_union(old: GoldenCurve | None, new: GoldenCurve) -> list[str]:
    """thinking_on, thinking_off, then every named level either curve has (in file order)."""
    levels = list(dict.fromkeys([*(old.levels if old is not None else {}), *new.levels]))
    return ["thinking_on", "thinking_off", *levels]


def _diff_points(old: GoldenCurve | None, new: GoldenCurve) -> list[PointChange]:
    out: list[PointChange] = []
    for mode in _mode_union(old, new):
        ob = old.mode(mode) if old is not None else None
        nb = new.mode(mode)
        opts: Mapping[int, Point] = ob.points if ob is not None else {}
        npts: Mapping[int, Point] = nb.points if nb is not None else {}
        for k in sorted(set(opts) | set(npts)):
            o, n = opts.get(k), npts.get(k)
            if o is None:
                out.append(PointChange(mode, k, "added", None, n))
            elif n is None:
                out.append(PointChange(mode, k, "removed", o, None))
            elif o.al != n.al:
                out.append(PointChange(mode, k, "changed", o, n))
            else:
                revised: list[str] = []
                completed: list[str] = []
                for name in _DETAIL_FIELDS:
                    ov, nv = getattr(o, name), getattr(n, name)
                    if ov == nv:
                        continue
                    text = f"{name} {_fmt(ov)} -> {_fmt(nv)}"
                    (completed if ov is None and name != "origin" else revised).append(text)
                if revised:
                    out.append(PointChange(mode, k, "revised", o, n, tuple(revised + completed)))
                elif completed:
                    out.append(PointChange(mode, k, "completed", o, n, tuple(completed)))
                else:
                    out.append(PointChange(mode, k, "unchanged", o, n))
    return out


def _plain(model: Any) -> Any:
    return None if model is None else model.model_dump(mode="json", exclude_none=True)


def _diff_fields(old: GoldenCurve, new: GoldenCurve) -> list[FieldChange]:
    out: list[FieldChange] = []
    if old.aliases != new.aliases:
        dropped = [a for a in old.aliases if a.casefold() not in {x.casefold() for x in new.aliases}]
        out.append(FieldChange("aliases", old.aliases, new.aliases, guarded=bool(dropped)))
    for name in ("draft", "engine", "dataset"):
        o, n = _plain(getattr(old, name)), _plain(getattr(new, name))
        if o != n:
            for key in sorted(set(o or {}) | set(n or {})):
                ov, nv = (o or {}).get(key), (n or {}).get(key)
                if ov != nv:
                    out.append(FieldChange(f"{name}.{key}", ov, nv, guarded=True))
    for mode in _mode_union(old, new):
        ob, nb = old.mode(mode), new.mode(mode)
        if ob is None or nb is None:
            continue
        o, n = _plain(ob.sampling) or {}, _plain(nb.sampling) or {}
        for key in sorted(set(o) | set(n)):
            if o.get(key) != n.get(key):
                out.append(FieldChange(f"{mode}.sampling.{key}", o.get(key), n.get(key), guarded=True))
        if ob.output_len != nb.output_len:
            out.append(FieldChange(f"{mode}.output_len", ob.output_len, nb.output_len, guarded=True))
    o, n = _plain(old.provenance), _plain(new.provenance)
    for key in sorted(set(o) | set(n)):
        if o.get(key) != n.get(key):
            out.append(FieldChange(f"provenance.{key}", o.get(key), n.get(key), guarded=False))
    return out


def plan_commit(curve: GoldenCurve, golden_dir: str | Path) -> CommitPlan:
    """Compare ``curve`` with what ``golden_dir`` commits for its model, method and variant.

    Raises:
        UsageError: the committed curve is in the InferenceX legacy shape; an alias of
            ``curve`` already names another model; the target file holds another curve.
        SchemaError: a committed file is malformed.
    """
    root = Path(golden_dir)
    store = _existing_store(root)
    existing: StoredCurve | None = None
    if store is not None:
        for name in (curve.model, *curve.aliases):
            try:
                key = store.resolve_model(name)
            except GoldenALError as exc:
                raise UsageError(f"name {name!r} of the new curve is ambiguous in {root}: {exc}") from None
            if key is not None and key != curve.model:
                owner = next(sc for sc in store.curves if sc.model == key)
                raise UsageError(
                    f"{'model key' if name == curve.model else 'alias'} {name!r} of the new curve already names "
                    f"model {key!r} in {owner.path}",
                    hint=f"fit with --model-key {key} to update that curve, or drop the alias",
                )
        same = [sc for sc in store.curves
                if sc.model == curve.model and sc.method == curve.draft.method and sc.variant == curve.draft.variant]
        if len(same) > 1:
            raise UsageError(f"{root} holds {len(same)} curves of {curve.model} ({curve.draft.method}): "
                             + ", ".join(str(sc.path) for sc in same), hint="remove the duplicate first")
        if same:
            existing = same[0]
            if existing.format != "golden-al":
                raise UsageError(
                    f"{existing.path} holds {curve.model} ({curve.draft.method}) in the InferenceX legacy shape; "
                    "commit writes golden-al's schema",
                    hint="commit into a golden-al store and use --export inferencex for their shape",
                )
    target = existing.path if existing is not None else root / curve_file_name(curve)
    old_text: str | None = None
    if target.exists():
        old_text = safeio.read_text(target)
        if existing is None:
            raise UsageError(f"{target} exists but does not hold {curve.model} ({curve.draft.method})",
                             hint="move it away or choose another --golden-dir")
    points = _diff_points(existing.curve if existing else None, curve)
    fields = _diff_fields(existing.curve, curve) if existing else []
    return CommitPlan(curve=curve, golden_dir=root, target=target, existing=existing, points=tuple(points),
                      fields=tuple(fields), text=dump_curve(curve), old_text=old_text)


def apply_commit(plan: CommitPlan, *, force: bool = False, dry_run: bool = False,
                 export_dir: str | Path | None = None, export_name: str | None = None) -> CommitResult:
    """Write what ``plan`` describes (and the legacy export) unless refused or a dry run.

    Raises:
        CommitRefusedError: the plan changes committed values or settings and not ``force``
            (also for a dry run, so CI can use ``--dry-run`` as a check).
        UsageError: the export would add a second file for a model, method and variant the
            export folder already holds (every lookup of that model would become ambiguous).
    """
    dest = None
    if export_dir is not None:
        write_legacy(plan.curve)  # refuses what the legacy shape cannot express, before naming the file
        dest = Path(export_dir) / export_file_name(plan.curve, Path(export_dir), export_name)
        other = _exported_file(plan.curve, Path(export_dir), dest)
        if other is not None:
            raise UsageError(
                f"{display_path(other)} already holds {plan.curve.model} ({plan.curve.draft.method}"
                f"{', ' + plan.curve.draft.variant if plan.curve.draft.variant else ''}); exporting to "
                f"{dest.name} would add a second file and make the model ambiguous",
                hint=f"--export-name {other.name} replaces that file",
            )
    guarded = plan.guarded
    if guarded and not force:
        shown = "; ".join(guarded[:4]) + (f"; and {len(guarded) - 4} more" if len(guarded) > 4 else "")
        raise CommitRefusedError(
            f"refusing to change {len(guarded)} committed value(s) of {plan.curve.model} in "
            f"{display_path(plan.target)}: {shown}",
            hint="re-run with --force to replace them (the diff above lists every value)",
        )
    notes: list[str] = []
    written = exported = None
    if dry_run:
        notes.append("dry run: nothing written")
        return CommitResult(None, None, plan, notes)
    if plan.unchanged:
        notes.append(f"{display_path(plan.target)} already holds this curve byte for byte; not rewritten")
    else:
        written = save_curve(plan.curve, plan.target, force=force)
    if dest is not None:
        legacy = write_legacy(plan.curve)
        if dest.exists() and safeio.read_text(dest) == legacy:
            notes.append(f"{display_path(dest)} already up to date; not rewritten")
        else:
            exported = atomic_write_text(dest, legacy, force=force)
    return CommitResult(written, exported, plan, notes)
