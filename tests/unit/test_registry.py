"""The plugin registry class (simulators/registry.py): order, laziness, validation at load."""

from __future__ import annotations

import sys
import types
from importlib import metadata

import pytest

from simulators.registry import DuplicateEntryError, Registry


def _module(name: str, monkeypatch: pytest.MonkeyPatch, **attrs: object) -> None:
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)


def _ep(name: str, value: str) -> metadata.EntryPoint:
    return metadata.EntryPoint(name, value, "test.group")


def _no_z(name: object, obj: object, accepted: object) -> list[str]:
    return [f"value: {obj!r} starts with z"] if str(obj).startswith("z") else []


def test_builtins_come_first_then_plugins_by_name_and_a_broken_plugin_is_skipped_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _module("reg_ok", monkeypatch, THING="ok-b", OTHER="zed")
    reg: Registry[str, object] = Registry("plugin thing", builtin={"one": 1, "two": 2}, group="test.group",
                                       reserved={"ref": "the embedded one"}, validate=_no_z)
    reg.discover([_ep("b", "reg_ok:THING"), _ep("a", "reg_missing:THING"), _ep("c", "reg_ok:OTHER"),
                  _ep("one", "evil:THING"), _ep("ref", "reg_ok:THING")])
    assert reg.names() == ("one", "two", "b")
    why = {s.name: s for s in reg.skipped()}
    assert set(why) == {"a", "c", "one", "ref"}
    assert why["a"].problems[0].startswith("import: ModuleNotFoundError")
    assert why["c"].problems == ("value: 'zed' starts with z",)
    assert "built-in thing" in why["one"].problems[0]
    assert why["one"].where == "evil:THING"
    assert "reserved (the embedded one)" in why["ref"].problems[0]
    assert reg.get("one") == 1
    assert reg.get("b") == "ok-b"
    with pytest.raises(KeyError, match="plugin thing 'c' at reg_ok:OTHER was not loaded: value: 'zed'"):
        reg.get("c")
    with pytest.raises(KeyError, match="'nothing' is not registered"):
        reg.get("nothing")


def test_entries_load_on_first_use_only(monkeypatch: pytest.MonkeyPatch) -> None:
    reg: Registry[str, object] = Registry("thing", builtin={"lazy": "reg_later:THING"})
    assert reg.names() == ("lazy",)  # listing imports nothing
    _module("reg_later", monkeypatch, THING=42)
    assert reg.get("lazy") == 42


def test_code_registration_refuses_a_taken_or_reserved_name() -> None:
    reg: Registry[tuple[str, str], object] = Registry("sampler", reserved={("x", "y"): "kept"})
    reg.add(("sglang", "m"), len)
    with pytest.raises(DuplicateEntryError, match="sampler sglang/m is already registered"):
        reg.add(("sglang", "m"), len)
    with pytest.raises(DuplicateEntryError, match="reserved"):
        reg.add(("x", "y"), len)
    assert reg.names() == (("sglang", "m"),)


def test_a_plugin_that_asks_for_the_registry_while_loading_sees_the_builtins(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, ...]] = []
    reg: Registry[str, object] = Registry("plugin thing", builtin={"one": 1},
                                       validate=lambda n, o, acc: seen.append(reg.names()) or [])
    reg.add("p", object())
    assert reg.names() == ("one", "p")
    assert seen == [("one",)]
