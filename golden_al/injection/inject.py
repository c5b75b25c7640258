"""Write the golden AL into an srt-slurm recipe in place, keeping everything else.

What is written: the engine's synthetic settings (``golden-al env``'s, :func:`golden_al.plugin.registry.
synthetic_settings`), in the form its recipe format declares: SGLang's and TensorRT-LLM's variables in every worker
environment block (the generating role's value, InferenceX: "generation defines the AL target"; the generating role
gets a block if it has none); vLLM's synthetic fields in every ``speculative-config`` and ATOM's
``spec-decode-acceptance-length`` in every speculating role's arguments, each at its role's *own* k (its server
refuses a length above its k + 1). Rules:

* merge keys and anchors are honoured: an inherited value is checked (and changed) where it is defined;
* override sections are checked and corrected where they already set a value, never given new keys;
* an existing different value is a *conflict*: nothing is written unless ``force``; an equal one (``2.5`` vs
  ``'2.50'``) is left as written; a value the engine's review refuses is never written;
* only the replaced scalars and inserted lines change (:mod:`golden_al.textedit`); the result is re-parsed and must
  differ from the original only in the injected keys and need no further change.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import (
    GoldenALError,
    InjectionConflictError,
    InputFileError,
    UsageError,
)
from golden_al.golden.schema import to_plain
from golden_al.golden.store import GoldenPoint, GoldenStore
from golden_al.injection.recipe import RecipeAnalysis, analyze_recipe, iter_own_items, load_recipe
from golden_al.plugin import registry
from golden_al.prompts.thinking import REQUEST
from golden_al.provenance import atomic_write_text
from golden_al.recipes.derive import Identity, derive, review_written
from golden_al.recipes.srt_slurm import ENV_BLOCK_RE, canonical_role, config_keys, env_block_role
from golden_al.textedit import (
    Edit,
    apply_edits,
    block_indent,
    flow_mapping_end,
    format_scalar,
    quote_style,
    requote,
    scalar_span,
)

__all__ = ["Change", "InjectionResult", "inject_file", "plan_injection"]

_OVERRIDE_RE = re.compile(r"^(zip_)?override_")
_ENV_NAME = {"decode": "decode_environment", "aggregated": "aggregated_environment",
             "agg": "aggregated_environment", "prefill": "prefill_environment"}


@dataclass(frozen=True)
class Change:
    """One value the injection writes."""

    line: int  #: 1-based line in the original text
    where: str  #: dotted key path, e.g. ``backend.decode_environment.SGLANG_SIMULATE_ACC_LEN``
    old: str | None  #: the value seen (None: the key is added)
    new: str
    conflict: bool  #: an existing different value (needs ``force``)


@dataclass(frozen=True)
class InjectionResult:
    """The planned (or written) injection of one recipe."""

    path: Path
    engine: str
    k: int
    point: GoldenPoint
    settings: Mapping[str, Any]
    changes: tuple[Change, ...]
    old_text: str
    new_text: str
    written: bool = False

    @property
    def conflicts(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.conflict)

    @property
    def changed(self) -> bool:
        return self.new_text != self.old_text

    def diff(self, *, context: int = 3) -> str:
        """A unified diff of the change (empty when nothing changes)."""
        name = str(self.path)
        a, b = (name, name) if self.path.is_absolute() else (f"a/{name}", f"b/{name}")
        return "".join(difflib.unified_diff(self.old_text.splitlines(keepends=True),
                                            self.new_text.splitlines(keepends=True),
                                            fromfile=a, tofile=b, n=context))


@functools.lru_cache(maxsize=1)
def _numeric_knobs() -> frozenset[str]:
    """Every engine's knobs whose value is a number (an AL or a count): compared as numbers, ``4.0`` = ``4``."""
    return frozenset(k.name for n in registry.engine_names() for k in registry.get_profile(n).check.synthetic_knobs
                     if k.unit in ("al", "al-1", "rate"))


@functools.lru_cache(maxsize=1)
def _config_keys() -> frozenset[str]:
    """The recipe keys that hold a JSON speculative config an engine's ``config_writer`` edits."""
    return frozenset(key for n in registry.engine_names() if (r := registry.get_profile(n).recipe) is not None
                     and r.config_writer is not None for key in r.spec_keys)


def values_equal(var: str, old: Any, new: str) -> bool:
    """Whether a recipe's value of ``var`` already equals the one to write (numbers as numbers)."""
    if var in _numeric_knobs():
        try:
            return abs(float(str(old)) - float(new)) < 1e-9
        except (TypeError, ValueError):
            return False
    return str(old).strip() == new


@dataclass
class Planner:
    text: str
    path: Path
    doc: Any
    lines: list[str] = field(init=False)
    nl: str = field(init=False)
    #: id(mapping) -> (parent, key, loc) of its first appearance (its definition)
    owner: dict[int, tuple[Any, Any, tuple[Any, ...]]] = field(default_factory=dict)
    edits: list[Edit] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    #: id(mapping) -> var names planned for insertion
    inserts: dict[int, list[str]] = field(default_factory=dict)
    done: set[tuple[int, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.lines = self.text.split("\n")
        self.lines = [s[:-1] if s.endswith("\r") else s for s in self.lines]
        self.nl = "\r\n" if "\r\n" in self.text else "\n"
        self._walk(self.doc, ())

    # -- document structure
    def _walk(self, node: Any, loc: tuple[Any, ...]) -> None:
        children: Iterator[tuple[Any, Any]]
        if isinstance(node, Mapping):
            children = iter_own_items(node)
        elif isinstance(node, list):
            children = iter(enumerate(node))
        else:
            return
        for key, value in children:
            if isinstance(value, (Mapping, list)) and id(value) not in self.owner:
                self.owner[id(value)] = (node, key, (*loc, key))
                self._walk(value, (*loc, key))

    def occurrences(self, match: Any) -> list[tuple[Any, Any, Any, tuple[Any, ...]]]:
        """Every ``(parent, key, value, loc)`` whose key satisfies ``match``, in document order
        (aliases included, each object's subtree visited once)."""
        out: list[tuple[Any, Any, Any, tuple[Any, ...]]] = []
        seen: set[int] = set()

        def walk(node: Any, loc: tuple[Any, ...]) -> None:
            if id(node) in seen:
                return
            seen.add(id(node))
            items: Iterator[tuple[Any, Any]]
            if isinstance(node, Mapping):
                items = iter_own_items(node)
            elif isinstance(node, list):
                items = iter(enumerate(node))
            else:
                return
            for key, value in items:
                if isinstance(node, Mapping) and match(key, (*loc, key)):
                    out.append((node, key, value, (*loc, key)))
                walk(value, (*loc, key))

        walk(self.doc, ())
        return out

    def key_pos(self, parent: Any, key: Any) -> tuple[int, int]:
        line, col = parent.lc.key(key)
        return int(line), int(col)

    def value_pos(self, mapping: Any, key: Any) -> tuple[int, int]:
        line, col = mapping.lc.value(key)
        return int(line), int(col)

    def where(self, loc: tuple[Any, ...]) -> str:
        return ".".join(str(p) for p in loc)

    def own_items(self, mapping: Any) -> list[tuple[Any, Any]]:
        """A mapping's own items (merged ``<<`` keys excluded), in document order."""
        return list(iter_own_items(mapping))

    def equal(self, var: str, old: Any, new: str) -> bool:
        """Whether a recipe's value of ``var`` already equals the one to write (:func:`values_equal`)."""
        return values_equal(var, old, new)

    def rewrite_json(self, parent: Any, key: Any, loc: tuple[Any, ...], raw: str, new: Mapping[str, Any],
                     changes: list[tuple[tuple[Any, ...], str | None, str, bool]]) -> None:
        """Replace the JSON text ``raw`` held at ``parent[key]`` by ``new``, in its own separators and quotes, and
        record ``changes`` (``(loc, old, new, conflict)`` each) at its line.

        Raises:
            InputFileError: the JSON is a plain (unquoted) scalar, which cannot be rewritten safely.
        """
        vline, vcol = self.value_pos(parent, key)
        item, sep = json_separators(raw)
        text = json.dumps(new, separators=(item, sep), ensure_ascii=False)
        end = scalar_span(self.lines, vline, vcol, path=str(self.path), flow=bool(parent.fa.flow_style()))
        token = self.lines[vline][vcol:end]
        if quote_style(token) == "":
            raise InputFileError(f"{self.where(loc)}: a plain (unquoted) JSON value cannot be rewritten safely",
                                 path=self.path, line=vline + 1, hint="quote it: speculative-config: '{...}'")
        self.edits.append(Edit(vline, vcol, vline, end, requote(token, text)))
        self.changes.extend(Change(vline + 1, self.where(at), old, value, conflict) for at, old, value, conflict in changes)

    # -- primitives
    def replace_scalar(self, mapping: Any, key: str, new: str, loc: tuple[Any, ...], old: Any, conflict: bool,
                       *, typed: bool = False) -> None:
        if (id(mapping), key) in self.done:
            return
        self.done.add((id(mapping), key))
        line, col = self.value_pos(mapping, key)
        flow = bool(mapping.fa.flow_style())
        end = scalar_span(self.lines, line, col, path=str(self.path), flow=flow)
        token = self.lines[line][col:end]
        text = new if typed and quote_style(token) == "" else requote(token, new)
        self.edits.append(Edit(line, col, line, end, text))
        self.changes.append(Change(line + 1, self.where((*loc, key)), str(old), new, conflict))

    def style_of(self, mapping: Any) -> str:
        counts = {"'": 0, '"': 0}
        for key, value in iter_own_items(mapping):
            if isinstance(value, (Mapping, list)) or value is None:
                continue
            try:
                line, col = self.value_pos(mapping, key)
            except (KeyError, TypeError):
                continue
            ch = self.lines[line][col:col + 1] if line < len(self.lines) else ""
            if ch in counts:
                counts[ch] += 1
        if counts["'"] > counts['"']:
            return "'"
        return '"'

    def insert_keys(self, mapping: Any, items: list[tuple[str, str]], loc: tuple[Any, ...], *,
                    typed: bool = False, after: list[str] | None = None) -> None:
        """Add ``items`` (key, value) to ``mapping`` (block or one-line flow)."""
        parent, key, _ = self.owner[id(mapping)]
        style = self.style_of(mapping)

        def fmt(v: str) -> str:
            return v if typed and format_scalar(v, "") == v else format_scalar(v, style)

        header_line, header_col = self.key_pos(parent, key)
        for k, v in items:
            self.changes.append(Change(header_line + 1, self.where((*loc, k)), None, v, False))
        if mapping.fa.flow_style():
            line = header_line
            col = self.lines[line].find("{", header_col)
            if col < 0:
                raise InputFileError("cannot find the '{' of this flow mapping", path=self.path, line=line + 1)
            end = flow_mapping_end(self.lines, line, col, path=str(self.path))
            body = ", ".join(f"{k}: {fmt(v)}" for k, v in items)
            inner = self.lines[line][col + 1:end]
            if inner.strip():
                pos = col + 1 + len(inner.rstrip())
                self.edits.append(Edit(line, pos, line, pos, ", " + body))
            else:
                self.edits.append(Edit(line, col + 1, line, end, body))
            return
        own = [k for k, _ in iter_own_items(mapping)]
        present = [k for k in (after or []) if k in own]
        if present:
            at = max(self.value_pos(mapping, k)[0] for k in present) + 1
        else:
            at = header_line + 1
        indent = self.key_pos(mapping, own[0])[1] if own else block_indent(self.lines, header_line, header_col)
        self._insert_lines(at, [" " * indent + f"{k}: {fmt(v)}" for k, v in items])

    def _insert_lines(self, at: int, new_lines: list[str]) -> None:
        """Insert whole lines before line ``at`` (0-based); past the end, append them."""
        if at < len(self.lines):
            self.edits.append(Edit(at, 0, at, 0, "".join(s + self.nl for s in new_lines)))
            return
        last = len(self.lines) - 1
        end = len(self.lines[last])
        self.edits.append(Edit(last, end, last, end, "".join(self.nl + s for s in new_lines)))

    def fill_null(self, parent: Any, key: Any, items: list[tuple[str, str]], loc: tuple[Any, ...]) -> None:
        """Give ``key: (null)`` a block mapping holding ``items``."""
        line, col = self.key_pos(parent, key)
        s = self.lines[line]
        m = re.match(r"^(.*?:)([ \t]*(?:~|null|Null|NULL)?)([ \t]*(?:#.*)?)$", s[col:])
        if m is None:
            raise InputFileError(f"cannot rewrite the empty value of {key}", path=self.path, line=line + 1)
        if m.group(2).strip():
            start = col + len(m.group(1))
            self.edits.append(Edit(line, start, line, start + len(m.group(2)), ""))
        for k, v in items:
            self.changes.append(Change(line + 1, self.where((*loc, k)), None, v, False))
        self._insert_lines(line + 1, [" " * (col + 2) + f"{k}: {format_scalar(v, chr(34))}" for k, v in items])

    def create_block(self, backend: Any, before_key: str, name: str, items: list[tuple[str, str]],
                     loc: tuple[Any, ...]) -> None:
        """Add ``name:`` with ``items`` to ``backend`` just above ``before_key`` (and its comments)."""
        line, col = self.key_pos(backend, before_key)
        at = line
        while at - 1 >= 0 and self.lines[at - 1].strip().startswith("#") and \
                len(self.lines[at - 1]) - len(self.lines[at - 1].lstrip()) == col:
            at -= 1
        new = [" " * col + f"{name}:"] + [" " * (col + 2) + f"{k}: {format_scalar(v, chr(34))}" for k, v in items]
        for k, v in items:
            self.changes.append(Change(at + 1, self.where((*loc, name, k)), None, v, False))
        self._insert_lines(at, new)


def _merge_sources(mapping: Any) -> list[Any]:
    merged = getattr(mapping, "merge", None) or []
    out = []
    for m in merged:
        src = m[1] if isinstance(m, tuple) else m
        out.append(src)
    return out


def _defining(mapping: Any, var: str) -> Any:
    """The mapping that defines ``var`` for ``mapping`` (itself, or a ``<<`` source)."""
    own = dict(iter_own_items(mapping))
    if var in own:
        return mapping
    for src in _merge_sources(mapping):
        found = _defining(src, var)
        if found is not None:
            return found
    return None


def _planned_in_sources(p: Planner, mapping: Any, var: str) -> bool:
    for src in _merge_sources(mapping):
        if var in p.inserts.get(id(src), []) or _planned_in_sources(p, src, var):
            return True
    return False


def _plan_args(p: Planner, a: RecipeAnalysis, golden: Any) -> set[str]:
    """Server flags among each speculating role's arguments (a recipe format that injects ``args``, ATOM's), the
    golden AL at the role's own k (its server validates its own value); the names written."""
    names: set[str] = set()
    for role in a.roles:
        k = role.settings.draft.k
        if k is None:
            continue
        args: Any = a.doc
        for part in role.loc:
            args = args[part]
        for name, value in registry.synthetic_settings(role.settings.engine, golden(k), k).items():
            key, text = name.lstrip("-"), str(value)
            names.add(key)
            if key not in args:
                p.insert_keys(args, [(key, text)], role.loc, typed=True)
            elif not values_equal(name, args[key], text):
                p.replace_scalar(args, key, text, role.loc, args[key], conflict=True, typed=True)
    return names


def _plan_env(p: Planner, a: RecipeAnalysis, desired: dict[str, str]) -> None:
    """SGLang / TensorRT-LLM: the variables in every worker environment block."""
    blocks = p.occurrences(lambda key, loc: isinstance(key, str) and ENV_BLOCK_RE.match(key) is not None)
    env_ids = {id(v) for _, _, v, _ in blocks if isinstance(v, Mapping)}
    seen: set[int] = set()
    names_in_backend: set[str] = set()
    backend_loc = (*a.root, "backend")
    for parent, key, value, loc in blocks:
        in_override = bool(_OVERRIDE_RE.match(str(loc[0])))
        if loc[:-1] == backend_loc:
            names_in_backend.add(str(key))
        if value is None:
            if not in_override:
                p.fill_null(parent, key, list(desired.items()), loc)
            continue
        if not isinstance(value, Mapping):
            raise InputFileError(f"{p.where(loc)} must be a mapping of environment variables",
                                 path=p.path, line=p.key_pos(parent, key)[0] + 1)
        if id(value) in seen:
            continue
        seen.add(id(value))
        to_insert: list[str] = []
        for var, want in desired.items():
            src = _defining(value, var)
            if src is None:
                if not in_override and not _planned_in_sources(p, value, var):
                    to_insert.append(var)
                continue
            if src is not value and id(src) in env_ids:
                continue  # checked where it is defined (another environment block)
            old = dict(iter_own_items(src))[var]
            if old is None or isinstance(old, (Mapping, list)):
                line = p.key_pos(src, var)[0] + 1
                raise InputFileError(f"{var} has no scalar value here; set it or delete the line",
                                     path=p.path, line=line)
            if values_equal(var, old, want):
                continue
            src_loc = loc if src is value else p.owner[id(src)][2]
            p.replace_scalar(src, var, want, src_loc, old, conflict=True)
        if to_insert:
            p.inserts[id(value)] = to_insert
            p.insert_keys(value, [(v, desired[v]) for v in to_insert], loc, after=list(desired))
    # the generating role needs a block of its own
    target = a.target
    assert target is not None
    assert a.engine is not None
    env_name = _ENV_NAME[target.role]
    backend = a.doc
    for part in backend_loc:
        backend = backend[part]
    have = {env_block_role(name) for name in (*names_in_backend, *map(str, backend))}
    if canonical_role(target.role) not in have:
        p.create_block(backend, config_keys()[a.engine], env_name, list(desired.items()), backend_loc)


def json_separators(text: str) -> tuple[str, str]:
    item = ", " if re.search(r',\s+["}\]]', text) or re.search(r',\s+"', text) else ","
    key = ": " if re.search(r'":\s', text) else ":"
    return item, key


def _strip_injected(node: Any, names: set[str]) -> Any:
    """Plain tree without the injected keys (JSON strings of speculative-config parsed)."""
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in names:
                continue
            if k in _config_keys() and isinstance(v, str):
                try:
                    v = json.loads(v)
                except json.JSONDecodeError:
                    pass
            v = _strip_injected(v, names)
            if isinstance(k, str) and ENV_BLOCK_RE.match(k) and not v:
                continue  # an environment block that only holds injected keys (or none)
            out[k] = v
        return out
    if isinstance(node, list):
        return [_strip_injected(v, names) for v in node]
    return node


def _plan(text: str, path: Path, store: GoldenStore, model: str, thinking: str,
          engine: str | None) -> tuple[InjectionResult, set[str], Any]:
    doc = load_recipe(text, path=path)
    a = analyze_recipe(text, path=path, engine=engine, doc=doc)
    if a.engine is None:
        raise UsageError(f"{path}: cannot tell the engine (no backend.type and no single sglang_config/"
                         "vllm_config/trtllm_config)", hint="pass --engine sglang|vllm|trtllm")
    if a.target is None or a.target.draft_len is None:
        raise UsageError(f"{path}: no worker role of {config_keys()[a.engine]} uses speculative decoding; "
                         "nothing to inject")
    rs = a.target.settings
    k = rs.draft.k
    assert k is not None  # the target role's draft length is known (analyze_recipe)
    d = derive(rs, store, what="recipe", identity=Identity(model=model, thinking=thinking,
                                                           thinking_priority=REQUEST + 1))
    point = d.require(str(path))
    golden = d.al_at
    settings = registry.synthetic_settings(a.engine, point.al, k)
    p = Planner(text, path, doc)
    profile = registry.get_profile(a.engine)
    assert profile.recipe is not None  # analyze_recipe found a recipe format of this engine
    problems = review_written(rs, settings, k)  # what check would say of the value once written
    if problems:
        raise UsageError(f"{path}: " + "; ".join(problems))
    if profile.recipe.inject_into == "config":
        assert profile.recipe.config_writer is not None  # conformance: a config-injecting recipe names its writer
        names = set(registry.load_hook(profile.recipe.config_writer)(p, golden))
    elif profile.recipe.inject_into == "args":
        names = _plan_args(p, a, golden)
    else:
        desired = {key: str(v) for key, v in settings.items()}
        _plan_env(p, a, desired)
        names = set(desired)
    new_text = apply_edits(text, p.edits) if p.edits else text
    result = InjectionResult(path, a.engine, k, point, settings, tuple(sorted(p.changes, key=lambda c: c.line)),
                             text, new_text)
    return result, names, doc


def plan_injection(text: str, *, path: str | Path, store: GoldenStore, model: str, thinking: str,
                   engine: str | None = None) -> InjectionResult:
    """What :func:`inject_file` would write (conflicting values replaced as with ``force``).

    Raises:
        UsageError: no engine, no speculative role, an engine without a recipe format
            (ATOM), draft lengths a value cannot serve, or unsupported layout.
        NoGoldenValueError: no committed golden value (lists what exists).
        InputFileError: invalid YAML or JSON (file and line).
    """
    p = Path(path)
    result, names, doc = _plan(text, p, store, model, thinking, engine)
    if result.changed:  # each text is parsed once: the plan's own trees are compared
        try:
            again, _, new_doc = _plan(result.new_text, p, store, model, thinking, engine)
            before = _strip_injected(to_plain(doc), names)
            after = _strip_injected(to_plain(new_doc), names)
        except GoldenALError as exc:  # pragma: no cover - an injector bug, not a user error
            raise GoldenALError(f"{p}: internal error: the rewritten recipe does not parse: {exc}") from None
        if again.changed or before != after:  # pragma: no cover - an injector bug
            raise GoldenALError(f"{p}: internal error: the rewrite changed more than the injected keys "
                                "or is not idempotent; the file was not written")
    return result


def inject_file(path: str | Path, *, store: GoldenStore, model: str, thinking: str, engine: str | None = None,
                force: bool = False, dry_run: bool = False) -> InjectionResult:
    """Rewrite the recipe at ``path`` in place with the golden AL (atomically).

    Raises:
        InjectionConflictError: (exit 1) the recipe pins a different value and not ``force``;
            nothing is written.
        the errors of :func:`plan_injection`.
    """
    from golden_al import safeio

    p = Path(path)
    with locked_recipe(p, purpose="inject", dry_run=dry_run):
        text = safeio.read_text(p, max_bytes=safeio.ROUNDTRIP_MAX_BYTES)  # regular file, byte cap, BOM/UTF-16, no NUL
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
            result = InjectionResult(result.path, result.engine, result.k, result.point, result.settings,
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

    if safeio.read_text(path, max_bytes=safeio.ROUNDTRIP_MAX_BYTES) != read_text:
        raise InjectionConflictError(f"{path} changed while it was being rewritten; nothing was written",
                                     hint="run the command again on the new content")
    atomic_write_text(path, new_text, force=force)  # keeps mode and symlink; read-only needs --force
