"""The plugin registry class: names -> objects, built-ins first, plugins from entry points, validated once.

A :class:`Registry` maps names to objects. Its entries come from code (:meth:`Registry.add`), from a table of
built-ins, or from an entry-point group that
installed packages declare; an entry given as ``"module:attribute"`` is imported on first use. Whatever a
plugin brings is validated once, when it loads, against what is already accepted: a plugin that fails (its import
raises, its name is reserved or a built-in's, the validator names problems) is skipped and kept with its problems
(:meth:`Registry.skipped`), so one broken package never takes every command down and never replaces a built-in.

Modelled on SGLang's model registry (``python/sglang/srt/models/registry.py``, sgl-project/sglang 0.5.x): names
resolve lazily, and a broken optional entry is reported, not fatal. Generic (it names no engine);
:mod:`golden_al.plugin.registry` holds the engine registry built on it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from distributions.errors import Error

__all__ = ["DuplicateEntryError", "Registry", "Skipped"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class DuplicateEntryError(Error):
    """Code registered a name that is already taken."""


@dataclass(frozen=True)
class Skipped:
    """An entry that was found but not loaded, and why (each problem names the field at fault)."""

    name: str  #: the name it was registered under
    where: str  #: ``module:attribute``, or what registered it
    package: str | None  #: the distribution that declares it, where known
    problems: tuple[str, ...]
    kind: str = "plugin"  #: what it is, for the sentence (``plugin engine``)

    def sentence(self) -> str:
        """One line for a warning or an error."""
        pkg = f" (package {self.package})" if self.package else ""
        return f"{self.kind} {self.name!r} at {self.where}{pkg} was not loaded: " + "; ".join(self.problems)


#: ``(name, object, accepted so far) -> problems``: what a registry checks a plugin's object against.
Validator = Callable[[Any, Any, Mapping[Any, Any]], list[str]]


class Registry(Generic[K, T]):
    """Names -> objects: built-ins first, in their order, then plugins sorted by name.

    Args:
        kind: what an entry is, for messages (``plugin engine``, ``sampler``).
        builtin: the built-in entries (``name -> object or "module:attribute"``); a plugin cannot replace one.
        reserved: names no plugin may take, with why.
        group: the entry-point group installed packages declare plugins in (None: code registers them).
        validate: checks a plugin's object when it loads (see :data:`Validator`); built-ins are held to the
            same checks by golden-al's own tests.
        explain: ``(exception) -> hint | None``: what to tell the author of a plugin whose import raised it (a
            profile written for an older shape of the object), appended to the problem.
        default_attribute: the attribute a ``"module"`` entry (no ``:attribute``) names.
    """

    def __init__(self, kind: str, *, builtin: Mapping[K, T | str] | None = None,
                 reserved: Mapping[K, str] | None = None, group: str | None = None,
                 validate: Validator | None = None,
                 explain: Callable[[BaseException], str | None] | None = None,
                 default_attribute: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._builtin: dict[K, T | str] = dict(builtin or {})
        self._reserved = dict(reserved or {})
        self._validate = validate
        self._explain = explain
        self._default_attribute = default_attribute
        #: name -> object or ``"module:attribute"``: every entry, accepted or not yet validated (tests add to it).
        self.entries: dict[K, T | str] = dict(self._builtin)
        self._packages: dict[K, str | None] = {}
        self._refused: list[Skipped] = []
        self._loaded: tuple[tuple[K, ...], tuple[Skipped, ...]] | None = None
        self._validating = False
        if group is not None:
            self.discover()

    # ------------------------------------------------------------------ filling
    def discover(self, entry_points: Iterable[Any] | None = None) -> None:
        """(Re)read the plugins of :attr:`group` from installed packages' entry points (or those given).

        A plugin may not take a built-in's name (unless it points at the built-in itself) nor a reserved
        one: it is refused, named, so an installed package can never silently replace a built-in.
        """
        if entry_points is None:
            from importlib import metadata

            entry_points = metadata.entry_points(group=self.group) if self.group else ()
        eps = sorted(entry_points, key=lambda e: e.name)
        self._packages = {ep.name: _package(ep) for ep in eps}
        self.entries.clear()  # in place: callers may hold this dict
        self.entries.update(self._builtin)
        self._refused = []
        for ep in eps:
            name = ep.name
            if name in self._builtin:
                if ep.value != self._builtin[name]:
                    self._refused.append(self._skip(name, ep.value, f"name: {name!r} is a built-in {self._noun()} "
                                                                    "(a plugin cannot replace it)"))
            elif name in self._reserved:
                self._refused.append(self._skip(name, ep.value, f"name: {name!r} is reserved "
                                                                f"({self._reserved[name]})"))
            else:
                self.entries[name] = ep.value
        self.reset()

    def add(self, name: K, value: T | str) -> None:
        """Register ``value`` (or ``"module:attribute"``) under ``name`` from code.

        Raises:
            DuplicateEntryError: ``name`` is taken (by a built-in or an earlier registration).
        """
        if name in self.entries:
            raise DuplicateEntryError(f"{self._noun()} {_show(name)} is already registered")
        if name in self._reserved:
            raise DuplicateEntryError(f"{self._noun()} name {_show(name)} is reserved ({self._reserved[name]})")
        self.entries[name] = value
        self.reset()

    def reset(self) -> None:
        """Forget what was validated, so the next lookup validates the plugins again."""
        self._loaded = None

    # ------------------------------------------------------------------ reading
    def is_builtin(self, name: K) -> bool:
        """Whether ``name`` is one of the built-in entries."""
        return name in self._builtin

    def where(self, name: K) -> str:
        """Where an entry comes from (``module:attribute``, or the object's qualified name)."""
        value = self.entries[name]
        if isinstance(value, str):
            return value
        return f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', type(value).__name__)}"

    def names(self) -> tuple[K, ...]:
        """Every entry that loads and validates, in registration order (built-ins first).

        While a plugin loads, a lookup from inside it sees the built-ins only (no recursion into itself).
        """
        if self._validating or (not any(self._is_plugin(n) for n in self.entries) and not self._refused):
            return tuple(n for n in self.entries if not self._is_plugin(n))
        return self._load()[0]

    def skipped(self) -> tuple[Skipped, ...]:
        """The plugins that were found and not loaded, each with its problems."""
        return self._load()[1]

    def skipped_entry(self, name: K) -> Skipped | None:
        """Why plugin ``name`` was not loaded, or None (loaded, unknown, or a built-in: a plugin refused for taking
        a built-in's name never hides the built-in)."""
        if self.is_builtin(name):
            return None
        return next((s for s in self.skipped() if s.name == str(name)), None)

    def get(self, name: K) -> T:
        """The object registered under ``name`` (a ``"module:attribute"`` entry imported now).

        Raises:
            KeyError: ``name`` is not registered, or is a plugin that was skipped (the message says why).
        """
        skipped = self.skipped_entry(name)
        if skipped is not None:
            raise KeyError(skipped.sentence())
        if name not in self.entries:
            raise KeyError(f"{self._noun()} {_show(name)} is not registered")
        return self._resolve(name)

    # ------------------------------------------------------------------ inside
    def _noun(self) -> str:
        return self.kind.removeprefix("plugin ")

    def _is_plugin(self, name: K) -> bool:
        return name in self.entries and name not in self._builtin

    def _skip(self, name: Any, where: str, *problems: str) -> Skipped:
        return Skipped(str(name), where, self._packages.get(name), tuple(problems), self.kind)

    def _resolve(self, name: K) -> T:
        value = self.entries[name]
        if not isinstance(value, str):
            return value
        module_name, _, attribute = value.partition(":")
        obj: T = getattr(importlib.import_module(module_name), attribute or self._default_attribute or "")
        return obj

    def _load(self) -> tuple[tuple[K, ...], tuple[Skipped, ...]]:
        """Validate the plugins one by one, in order, against the built-ins and the plugins already accepted.

        Importing a plugin may fail any way: that too skips it, named.
        """
        if self._loaded is not None:
            return self._loaded
        skipped: list[Skipped] = list(self._refused)  # named by entry points, never entries
        failed: set[K] = set()
        plugins = [n for n in self.entries if self._is_plugin(n)]
        accepted: dict[K, T] = {n: self._resolve(n) for n in self._builtin} if plugins else {}
        for name in plugins:
            self._validating = True
            try:
                obj = self._resolve(name)
            except Exception as exc:  # a broken package: named and skipped, never a crash of every command
                hint = self._explain(exc) if self._explain is not None else None
                problems = [f"import: {type(exc).__name__}: {exc}" + (f" ({hint})" if hint else "")]
            else:
                problems = self._validate(name, obj, accepted) if self._validate is not None else []
            finally:
                self._validating = False
            if problems:
                skipped.append(self._skip(name, self.where(name), *problems))
                failed.add(name)
            else:
                accepted[name] = obj
        self._loaded = (tuple(n for n in self.entries if n not in failed), tuple(skipped))
        return self._loaded


def _package(ep: Any) -> str | None:
    """The distribution that declares entry point ``ep`` (None where the metadata does not say)."""
    dist = getattr(ep, "dist", None)
    return str(dist.name) if dist is not None else None


def _show(name: Any) -> str:
    return "/".join(map(str, name)) if isinstance(name, tuple) else repr(name)
