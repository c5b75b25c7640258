"""Record (golden_al.plugin.profile): the shared ``__eq__``, ``__hash__`` and ``__repr__`` of the contract's frozen
dataclasses behave as ``@dataclass(frozen=True)``'s generated ones, field options included (issue 52)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from golden_al.plugin.profile import Record

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Plain:
    a: int
    b: Any = None
    hidden: str = field(default="h", repr=False)
    ignored: int = field(default=0, compare=False)
    unhashed: Any = field(default=0, hash=False)


@dataclass(frozen=True, eq=False, repr=False)
class Rec(Record):
    a: int
    b: Any = None
    hidden: str = field(default="h", repr=False)
    ignored: int = field(default=0, compare=False)
    unhashed: Any = field(default=0, hash=False)


@dataclass(frozen=True)
class PlainOne:
    a: Any


@dataclass(frozen=True, eq=False, repr=False)
class RecOne(Record):
    a: Any


@dataclass(frozen=True, eq=False, repr=False)
class RecNone(Record):
    pass


@pytest.mark.parametrize(("x", "y"), [((1, 2), (1, 2)), ((1, 2), (1, 3)), ((1, [2]), (1, [2])), ((1, 2), (2, 2))])
def test_equality_hash_and_repr_are_the_generated_ones(x: tuple[Any, Any], y: tuple[Any, Any]) -> None:
    for kw in ({}, {"ignored": 5}, {"hidden": "other", "unhashed": 9}):
        p, q, r, s = Plain(*x), Plain(*y, **kw), Rec(*x), Rec(*y, **kw)
        assert (p == q) == (r == s)
        assert (p != q) == (r != s)
        assert repr(r) == repr(p).replace("Plain(", "Rec(", 1)
        if isinstance(x[1], list):
            for a, b in ((p, TypeError), (r, TypeError)):
                with pytest.raises(b):
                    hash(a)
        else:
            assert hash(r) == hash(p)  # the same tuple of the same values: the same hash
    assert (RecOne(7) == RecOne(7), hash(RecOne(7)), repr(RecOne("x"))) == (True, hash(PlainOne(7)), "RecOne(a='x')")
    assert hash(RecNone()) == hash(())
    assert RecNone() == RecNone()
    assert repr(RecNone()) == "RecNone()"


def test_an_instance_of_another_class_is_never_equal() -> None:
    assert Rec(1) != Plain(1)
    assert Plain(1) != Rec(1)
    assert Rec(1).__eq__(Plain(1)) is NotImplemented
    assert RecOne(1) != (1,)
    assert RecOne(1) != 1


def test_a_record_that_holds_itself_prints_as_the_generated_repr_does() -> None:
    box: list[Any] = []
    r, p = RecOne(box), PlainOne(box)
    box.append(r)
    assert repr(r) == "RecOne(a=[...])"
    box[0] = p
    assert repr(p) == "PlainOne(a=[...])"


def test_every_record_leaves_eq_and_repr_to_the_base() -> None:
    """A class deriving from Record declares ``eq=False, repr=False``; else dataclasses would generate them again."""
    for path in (REPO / "golden_al").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) == "Record" for b in node.bases):
                words = {k.arg: getattr(k.value, "value", None) for d in node.decorator_list
                         if isinstance(d, ast.Call) for k in d.keywords}
                assert words == {"frozen": True, "eq": False, "repr": False}, f"{path}: {node.name}"
