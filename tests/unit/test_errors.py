"""Issue 49: one error root for the whole package (message, hint, exit code), caught once by the CLI."""

from __future__ import annotations

import inspect

import pytest

import distributions.errors
import golden_al.errors
import simulators.base
from distributions.errors import DistributionError, Error


def _exceptions(module: object) -> list[type[BaseException]]:
    return [obj for _, obj in inspect.getmembers(module, inspect.isclass)
            if issubclass(obj, BaseException) and obj.__module__ == getattr(module, "__name__", None)]


@pytest.mark.parametrize("module", [distributions.errors, golden_al.errors, simulators.base])
def test_every_error_class_derives_from_the_one_root(module: object) -> None:
    found = _exceptions(module)
    assert found
    assert [cls.__name__ for cls in found if not issubclass(cls, Error)] == []


def test_no_public_error_class_of_the_product_roots_in_a_builtin_exception() -> None:
    """Every public exception class of golden_al, simulators and distributions derives from the one root (a class
    whose every base is a built-in exception does not); private ones (``_Unread``) are control flow inside a module."""
    import ast
    import builtins
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    stray = [f"{path.relative_to(root)}:{node.lineno} {node.name}"
             for pkg in ("golden_al", "simulators", "distributions") for path in sorted((root / pkg).rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ClassDef) and not node.name.startswith("_") and node.bases
             and all(isinstance(b, ast.Name) and isinstance(getattr(builtins, b.id, None), type)
                     and issubclass(getattr(builtins, b.id), BaseException) for b in node.bases)]
    assert stray == ["distributions/errors.py:13 Error"]  # the root itself


def test_the_root_carries_message_hint_and_exit_code() -> None:
    err = DistributionError("k must be >= 1, got 0", hint="pass -k 1 or more")
    assert (err.message, err.hint, err.exit_code) == ("k must be >= 1, got 0", "pass -k 1 or more", 2)
    assert str(err) == "k must be >= 1, got 0 (hint: pass -k 1 or more)"
    assert isinstance(err, ValueError)  # callers that only care about bad input still catch ValueError
    assert golden_al.errors.CheckFailedError("failed").exit_code == 1


def test_the_cli_catches_the_root_once(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A root error that is neither golden-al's nor the math layer's exits with its own code, one line, no
    traceback: the CLI does not list the roots' children."""
    from golden_al.cli import main as cli

    class Odd(Error):
        exit_code = 3

    def boom(*_: object, **__: object) -> int:
        raise Odd("odd input", hint="a hint")

    monkeypatch.setattr("golden_al.cli.engines.run", boom)
    assert cli.main(["engines", "show", "sglang"]) == 3
    err = capsys.readouterr().err
    assert "odd input (hint: a hint)" in err
    assert "Traceback" not in err
