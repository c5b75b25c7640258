"""Write the golden AL into a recipe file in place (``golden-al inject``): ``select``'s overrides, applied to its text.

The plan is the one ``select`` makes (:func:`golden_al.recipes.plan.plan_document`, the one derivation ``check``
judges pins with, the recipe's own pins allowed): every variant srtctl runs must need the same overrides. Each
override is written where srtctl's ``--set``/``--unset`` puts it, and nothing else changes:

* a flat recipe takes it at its path; a ``base:`` recipe in ``base``, and an ``override_*``/``zip_override_*``
  section that already sets the key is corrected there (never given new keys);
* a value a merge key (``<<``) brings is checked where it is defined (one that must change there, or go, while
  another mapping shares it is refused); a key that a merge source gets is not written again where it is merged;
* an existing different value is a *conflict* (nothing is written unless ``force``; a switch such as vLLM's
  ``rejection_sample_method`` is not one); an equal one (``2.5`` vs ``'2.50'``) is left as written; a speculative
  config held as JSON text keeps its separators and key order;
* only the replaced scalars and inserted or deleted lines change (:class:`golden_al.textedit.YamlEdit`); the result
  must be what srtctl makes of the recipe with the overrides, variant by variant, and need no further change.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import GoldenALError, InjectionConflictError, InputFileError, UsageError
from golden_al.golden.store import GoldenPoint, GoldenStore
from golden_al.plugin import registry
from golden_al.prompts.thinking import REQUEST
from golden_al.provenance import atomic_write_text
from golden_al.recipes.derive import Identity
from golden_al.recipes.srt_slurm import OVERRIDE_RE, recipe_document
from golden_al.recipes.srtctl import Override, apply_overrides, expand_variants
from golden_al.textedit import YamlEdit, json_separators

__all__ = ["Change", "InjectionResult", "inject_file", "plan_injection"]


@dataclass(frozen=True)
class Change:
    """One value the injection writes."""

    line: int  #: 1-based line in the original text
    where: str  #: dotted key path, e.g. ``backend.decode_environment.SGLANG_SIMULATE_ACC_LEN``
    old: str | None  #: the value seen (None: the key is added)
    new: str  #: ``(removed)`` for a setting taken out
    conflict: bool  #: an existing different value (needs ``force``)


class Rewrite:
    """A file's text before and after a rewrite (:class:`InjectionResult`, ``restore``'s result)."""

    path: Path
    old_text: str
    new_text: str

    @property
    def changed(self) -> bool:
        return self.new_text != self.old_text

    def diff(self, *, context: int = 3) -> str:
        """A unified diff of the change (empty when nothing changes)."""
        name = str(self.path)
        a, b = (name, name) if self.path.is_absolute() else (f"a/{name}", f"b/{name}")
        return "".join(difflib.unified_diff(self.old_text.splitlines(keepends=True),
                                            self.new_text.splitlines(keepends=True), fromfile=a, tofile=b, n=context))


@dataclass(frozen=True)
class InjectionResult(Rewrite):
    """The planned (or written) injection of one recipe."""

    path: Path
    engine: str
    k: int
    point: GoldenPoint
    overrides: tuple[Override, ...]  #: what ``select`` would pass srtctl
    changes: tuple[Change, ...]
    old_text: str
    new_text: str
    written: bool = False

    @property
    def conflicts(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.conflict)


@functools.lru_cache(maxsize=1)
def _knobs() -> dict[str, Any]:
    """Every engine's synthetic knobs by the key a recipe spells them with (a flag without its dashes)."""
    return {k.name.lstrip("-"): k for n in registry.engine_names() for k in registry.get_profile(n).check.synthetic_knobs}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _same(key: str, old: Any, new: Any) -> bool:
    """Whether a recipe's value already equals the one to write (an AL or a rate as a number: ``4.0`` = ``4``; JSON
    objects key by key)."""
    if (a := _json_object(old)) is not None and (b := _json_object(new)) is not None:
        return a.keys() == b.keys() and all(_same(k, a[k], b[k]) for k in a)
    knob = _knobs().get(key)
    if knob is not None and knob.unit in ("al", "al-1", "rate"):
        try:
            return abs(float(old) - float(new)) < 1e-9
        except (TypeError, ValueError):
            return False
    return _text(old).strip() == _text(new)


def _conflict(key: str) -> bool:
    """A different value there is a conflict, unless the key is a switch (vLLM ``rejection_sample_method``)."""
    knob = _knobs().get(key)
    return knob is None or knob.switch_value is None


def _json_object(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _is_merge(key: Any) -> bool:
    return bool(key.tag == "tag:yaml.org,2002:merge")


def _sources(node: Any) -> list[Any]:
    """The mappings a mapping merges (``<<: *a`` or ``<<: [*a, *b]``), in precedence order."""
    import yaml

    out: list[Any] = []
    for k, v in node.value if isinstance(node, yaml.MappingNode) else ():
        if _is_merge(k):
            out += [v] if isinstance(v, yaml.MappingNode) else [s for s in getattr(v, "value", []) if
                                                                  isinstance(s, yaml.MappingNode)]
    return out


def _find(node: Any, key: str, depth: int = 0) -> tuple[Any, Any, Any] | None:
    """(the mapping that defines ``key`` for ``node``: itself or a merge source, its key node, its value node)."""
    import yaml

    if not isinstance(node, yaml.MappingNode) or depth > 50:
        return None
    own = [(k, v) for k, v in node.value if not _is_merge(k) and k.value == key]
    if own:
        return node, *own[-1]
    return next((hit for src in _sources(node) if (hit := _find(src, key, depth + 1)) is not None), None)


def _null(node: Any) -> bool:
    return bool(node.tag == "tag:yaml.org,2002:null")


@dataclass
class _Writer:
    """The edits one set of overrides makes to one recipe text."""

    edit: YamlEdit
    owners: dict[int, tuple[Any, tuple[str, ...]]]  #: id(node) -> (its key node, its key path), first appearance
    mappings: list[Any]  #: every mapping of the document
    changes: list[Change] = field(default_factory=list)
    #: id(target) -> (the mapping or empty value, its key node, the keys to add (nested: new blocks))
    planned: dict[int, tuple[Any, Any, dict[str, Any]]] = field(default_factory=dict)
    written: dict[int, Any] = field(default_factory=dict)  #: id(scalar) -> the value written there
    through_merge: list[tuple[Any, Any, Any]] = field(default_factory=list)

    def where(self, node: Any, *keys: Any) -> str:
        return ".".join(map(str, (*self.owners.get(id(node), (None, ()))[1], *keys)))

    def set(self, node: Any, path: Sequence[str], value: Any, create: bool) -> None:
        """srtctl's ``--set``: ``path`` from ``node``, created where missing when ``create``."""
        import yaml

        for i, key in enumerate(path):
            hit = _find(node, key)
            if hit is None or (_null(hit[2]) and (i < len(path) - 1 or isinstance(value, Mapping))):
                if create and hit is not None and node.flow_style:
                    raise InputFileError(f"{self.where(hit[0], key)} is empty inside a flow mapping; golden-al "
                                         "does not fill it in place", path=self.edit.path,
                                         line=hit[1].start_mark.line + 1, hint="write it as a block mapping")
                if create:
                    target, under, rest = (node, None, path[i:]) if hit is None else (hit[2], hit[1], path[i + 1:])
                    self._plan(target, under, rest, value)
                return
            if i == len(path) - 1:
                return self._put(node, hit, value, create)
            node = hit[2]
            if not isinstance(node, yaml.MappingNode):
                raise InputFileError(f"{self.where(hit[0], key)} is not a mapping, so {'.'.join(path)} cannot be "
                                     "set in it", path=self.edit.path, line=node.start_mark.line + 1)

    def unset(self, node: Any, path: Sequence[str]) -> None:
        """srtctl's ``--unset``: the key and its lines taken out (a key a merge source brings is refused)."""
        for key in path[:-1]:
            hit = _find(node, key)
            if hit is None:
                return
            node = hit[2]
        hit = _find(node, path[-1])
        if hit is None:
            return
        holder, k, v = hit
        shared = [m for m in self.mappings if m is not node and (f := _find(m, k.value)) is not None and f[2] is v]
        if holder is not node or shared:
            raise InputFileError(f"{self.where(holder, k.value)} is shared through a merge key (<<) with "
                                 f"{self.where(shared[0] if shared else node)}; golden-al does not remove it there",
                                 path=self.edit.path, line=k.start_mark.line + 1, hint="remove it by hand")
        self.edit.delete(k.start_mark, v, flow=bool(node.flow_style))
        self.changes.append(Change(k.start_mark.line + 1, self.where(holder, k.value),
                                   v.value if isinstance(v.value, str) else None, "(removed)", True))

    def _put(self, node: Any, hit: tuple[Any, Any, Any], value: Any, create: bool) -> None:
        import yaml

        holder, k, v = hit
        if isinstance(value, Mapping) and isinstance(v, yaml.MappingNode):  # a speculative config as a mapping
            for key, sub in value.items():
                self.set(v, [key], sub, create)
            for stale in [kk.value for kk, _ in v.value if kk.value in _knobs() and kk.value not in value]:
                self.unset(v, [stale])
            return
        if not isinstance(v, yaml.ScalarNode) or isinstance(value, Mapping):
            raise InputFileError(f"{self.where(holder, k.value)} holds a {type(v).__name__.removesuffix('Node')} "
                                 f"where golden-al writes {_text(value)!r}", path=self.edit.path,
                                 line=v.start_mark.line + 1, hint="write the setting by hand")
        if holder is not node:  # through a merge key: after the mappings' own values are written
            self.through_merge.append((holder, k, (v, value)))
            return
        self._scalar(holder, k, v, value)

    def _scalar(self, holder: Any, k: Any, v: Any, value: Any) -> None:
        where, line, new = self.where(holder, k.value), v.start_mark.line + 1, _json_object(value)
        if id(v) in self.written:  # an alias: one value for every place it stands
            prev = self.written[id(v)]
            if not _same(k.value, prev, value):
                raise InputFileError(f"{where} is one value (an alias) where the roles need {_text(value)} and "
                                     f"{_text(prev)}", path=self.edit.path, line=line, hint="give each role its own value")
            return
        self.written[id(v)] = value
        old = _json_object(v.value)
        if old is not None and new is not None:
            return self._json(v, old, new, where)
        if _same(k.value, v.value, value):
            return
        self.edit.replace(v, value)
        self.changes.append(Change(line, where, None if _null(v) else v.value, _text(value), _conflict(k.value)))

    def _json(self, v: Any, old: dict[str, Any], new: dict[str, Any], where: str) -> None:
        """A speculative config held as JSON text (vLLM's): its keys compared one by one, written in its own style."""
        line, changes = v.start_mark.line + 1, []
        for key in dict.fromkeys([*old, *new]):
            if key not in new:
                changes.append(Change(line, f"{where}.{key}", _text(old[key]), "(removed)", True))
            elif key not in old or not _same(key, old[key], new[key]):
                changes.append(Change(line, f"{where}.{key}", None if key not in old else _text(old[key]),
                                      _text(new[key]), key in old and _conflict(key)))
        if not changes:
            return
        if not v.style:
            raise InputFileError(f"{where}: a plain (unquoted) JSON value cannot be rewritten safely",
                                 path=self.edit.path, line=line, hint="quote it: speculative-config: '{...}'")
        kept = {key: old[key] if key in old and _same(key, old[key], val) else val for key, val in new.items()}
        self.edit.replace(v, json.dumps(kept, separators=json_separators(v.value), ensure_ascii=False))
        self.changes += changes

    def _plan(self, target: Any, key: Any, path: Sequence[str], value: Any) -> None:
        """Keys to add to ``target`` (a mapping, or the empty value of ``key``), nested where blocks are missing."""
        items = self.planned.setdefault(id(target), (target, key, {}))[2]
        for part in path[:-1]:
            items = items.setdefault(part, {})
        items.update({path[-1]: value} if path else value)

    def finish(self) -> None:
        """The values through merge keys checked, then the planned keys inserted (none that a merge source gets)."""
        for holder, k, (v, value) in self.through_merge:
            if id(v) not in self.written and not _same(k.value, v.value, value):
                raise InputFileError(f"{self.where(holder, k.value)} comes through a merge key (<<) that other "
                                     f"settings may share, and is {v.value} where {_text(value)} is needed",
                                     path=self.edit.path, line=v.start_mark.line + 1,
                                     hint="set it in each mapping that needs it, by hand")
            self._scalar(holder, k, v, value)
        for target, key, items in self.planned.values():
            for name in [n for n, val in items.items() if self._merged(target, n, val)]:
                del items[name]
            if not items:
                continue
            header = self.owners.get(id(target), (None, ()))[0]
            line = header.start_mark.line + 1 if header is not None else 1
            self.changes += [Change(line, self.where(target, *p), None, _text(val), False) for p, val in _leaves(items)]
            self.edit.insert(target, items, key=key)

    def _merged(self, target: Any, name: str, value: Any) -> bool:
        """Whether a merge source of ``target`` gets ``name`` = ``value`` planned already."""
        return any((name in (got := self.planned.get(id(src), (None, None, {}))[2]) and _same(name, got[name], value))
                   or self._merged(src, name, value) for src in _sources(target))


def _leaves(items: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for k, v in items.items():
        yield from _leaves(v, (*prefix, k)) if isinstance(v, Mapping) else [((*prefix, k), v)]


def _owners(root: Any) -> tuple[dict[int, tuple[Any, tuple[str, ...]]], list[Any]]:
    """Each node's key and key path where it first appears (an anchor where it is defined), and every mapping."""
    import yaml

    out: dict[int, tuple[Any, tuple[str, ...]]] = {id(root): (None, ())}
    mappings: list[Any] = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, loc = stack.pop(0)
        if isinstance(node, yaml.MappingNode):
            mappings.append(node)
            kids = [(k, v, (*loc, str(k.value))) for k, v in node.value if not _is_merge(k)]
        elif isinstance(node, yaml.SequenceNode):
            kids = [(None, v, (*loc, str(i))) for i, v in enumerate(node.value)]
        else:
            continue
        for k, v, at in kids:
            if id(v) not in out:
                out[id(v)] = (k, at)
                stack.append((v, at))
    return out, mappings


def _write(text: str, path: Path, overrides: Sequence[Override]) -> tuple[str, list[Change]]:
    """The text with ``overrides`` applied where srtctl applies them (module docstring), and the changes."""
    import yaml

    from golden_al import safeio

    root = safeio.load_yaml_documents(text, path=path, construct=False)[0][1]  # merge keys kept, not flattened
    w = _Writer(YamlEdit(text, path), *_owners(root))
    base = _find(root, "base")
    roots = [(root, True)]
    if base is not None and base[0] is root and isinstance(base[2], yaml.MappingNode):
        roots = [(base[2], True), *((v, False) for k, v in root.value if isinstance(k.value, str)
                                    and OVERRIDE_RE.match(k.value) and isinstance(v, yaml.MappingNode))]
    for o in overrides:
        for node, create in roots:
            if o.op == "set":
                w.set(node, o.path, o.value, create)
            else:
                w.unset(node, o.path)
    w.finish()
    return w.edit.result(), w.changes


def _norm(x: Any) -> Any:
    """Plain data compared by value: JSON text as its object, numbers (and numeric text) as floats."""
    if isinstance(x, Mapping):
        return {str(k): _norm(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_norm(v) for v in x]
    if (obj := _json_object(x)) is not None:
        return _norm(obj)
    if isinstance(x, bool) or x is None:
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return x


def _selected(data: Mapping[str, Any], path: Path, store: Any, model: str, thinking: str,
              engine: str | None) -> tuple[Any, tuple[Override, ...]]:
    """``select``'s plan of the recipe for this model and thinking mode (the recipe's own pins allowed): the first
    variant's, and the overrides every variant needs."""
    from golden_al.recipes.plan import SelectionPlan, plan_document

    identity = Identity(model=model, thinking=thinking, thinking_priority=REQUEST + 1, framework=engine,
                        framework_source="--engine", agentic=True)
    plans = plan_document(data, path=str(path), selector=None, identity=identity, store=store, allow_pins=True)
    if plans[0].mode != "throughput":
        raise UsageError(f"{path}: {plans[0].reason}; nothing to inject")
    return plans[0], SelectionPlan(str(path), plans).common_overrides()


def plan_injection(text: str, *, path: str | Path, store: GoldenStore, model: str, thinking: str,
                   engine: str | None = None) -> InjectionResult:
    """What :func:`inject_file` would write (conflicting values replaced as with ``force``).

    Raises:
        UsageError: ``select``'s refusal (an engine the recipe contradicts, no speculative role, no committed golden
            value, variants that need different values, a value the engine's review refuses, ...).
        InputFileError: invalid YAML, or a layout the rewrite cannot change in place (file and line).
    """
    p = Path(path)
    data = recipe_document(text, p)[0]
    plan, overrides = _selected(data, p, store, model, thinking, engine)
    new_text, changes = _write(text, p, overrides)
    if new_text != text:  # re-read: srtctl's variants of the recipe with the overrides, and nothing left to do
        try:
            new_data = recipe_document(new_text, p)[0]
            again = _write(new_text, p, overrides)[0]
        except GoldenALError as exc:  # pragma: no cover - an injector bug, not a user error
            raise GoldenALError(f"{p}: internal error: the rewritten recipe does not read back: {exc}") from None
        want = [_norm(v.data) for v in expand_variants(apply_overrides(data, overrides))]
        if again != new_text or want != [_norm(v.data) for v in expand_variants(new_data)]:  # pragma: no cover
            raise GoldenALError(f"{p}: internal error: the rewrite is not srtctl's overrides applied, or not "
                                "idempotent; the file was not written")
    return InjectionResult(p, plan.engine, plan.k, plan.derivation.point, overrides,
                           tuple(sorted(changes, key=lambda c: c.line)), text, new_text)


def inject_file(path: str | Path, *, store: GoldenStore, model: str, thinking: str, engine: str | None = None,
                force: bool = False, dry_run: bool = False) -> InjectionResult:
    """Rewrite the recipe at ``path`` in place with the golden AL (atomically).

    Raises:
        InjectionConflictError: (exit 1) the recipe pins a different value and not ``force``; nothing is written.
        the errors of :func:`plan_injection`.
    """
    from golden_al import safeio

    p = Path(path)
    with locked_recipe(p, purpose="inject", dry_run=dry_run):
        text = safeio.read_text(p)  # regular file, byte cap, BOM/UTF-16, no NUL
        result = plan_injection(text, path=p, store=store, model=model, thinking=thinking, engine=engine)
        if result.conflicts and not force:
            first = result.conflicts[0]
            raise InjectionConflictError(
                f"{p}:{first.line}: {first.where} is {first.old}, the golden value is {first.new} "
                f"({result.point.model} {result.point.thinking} k={result.k}, curve {result.point.curve})"
                + (f" and {len(result.conflicts) - 1} more" if len(result.conflicts) > 1 else ""),
                hint="--force replaces it",
            )
        if result.changed and not dry_run:
            write_if_unchanged(p, text, result.new_text, force=force)
            result = InjectionResult(result.path, result.engine, result.k, result.point, result.overrides,
                                     result.changes, result.old_text, result.new_text, written=True)
    return result


@contextlib.contextmanager
def locked_recipe(path: Path, *, purpose: str, dry_run: bool = False) -> Iterator[None]:
    """Hold the lock ``commit`` takes (:func:`golden_al.locks.directory_lock`) on the recipe's folder while it is
    read, planned and written, so two golden-al writers never interleave (a dry run only reads: no lock; a folder
    that cannot hold the lock file is written, if at all, in place)."""
    if dry_run:
        yield
        return
    from golden_al.locks import directory_lock

    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(directory_lock(path.parent, purpose=f"{purpose} {path.name}"))
        except InputFileError:
            pass  # a folder no lock file can be made in (read-only): no golden-al writer makes files there either;
            # the unchanged-since-read check still guards the write, and the writer names the file's own problem
        yield


def write_if_unchanged(path: Path, read_text: str, new_text: str, *, force: bool = False) -> None:
    """Write ``new_text`` atomically only if the file still holds what was read (an editor that saved in between
    loses nothing: the write is refused, exit 1, and the run can be repeated).

    Raises:
        InjectionConflictError: the file changed since it was read.
    """
    from golden_al import safeio

    if safeio.read_text(path) != read_text:
        raise InjectionConflictError(f"{path} changed while it was being rewritten; nothing was written",
                                     hint="run the command again on the new content")
    atomic_write_text(path, new_text, force=force)  # keeps mode and symlink; read-only needs --force
