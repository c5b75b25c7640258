"""Issue 40: every engine is one folder (``golden_al/engines/<name>/``), and general modules reach an engine
only through its profile and the hooks it names, never by importing a specific engine."""

from __future__ import annotations

import ast
from pathlib import Path

from golden_al.plugin import registry

ROOT = Path(__file__).resolve().parents[2]



def _specific_engines(path: Path, names: set[str]) -> set[str]:
    """The specific engines ``path`` imports (``from golden_al.engines import vllm``, ``golden_al.engines.vllm.x``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
            if node.module == "golden_al.engines":
                out.update(a.name for a in node.names if a.name in names)
        for m in modules:
            parts = m.split(".")
            if parts[:2] == ["golden_al", "engines"] and len(parts) > 2 and parts[2] in names:
                out.add(parts[2])
    return out


def _offenders() -> set[str]:
    names = set(registry.engine_names())
    return {str(p.relative_to(ROOT)) for p in (ROOT / "golden_al").rglob("*.py")
            if "engines" not in p.relative_to(ROOT / "golden_al").parts[:1] and _specific_engines(p, names)}


def test_no_general_module_imports_a_specific_engine() -> None:
    """Outside ``golden_al/engines/`` an engine is reached through ``get_profile`` and the hooks its profile names."""
    assert sorted(_offenders()) == []


def test_the_rule_sees_each_import_form(tmp_path: Path) -> None:
    names = set(registry.engine_names())
    for text, expected in (("from golden_al.engines import vllm, get_profile\n", {"vllm"}),
                           ("import golden_al.engines.sglang.server\n", {"sglang"}),
                           ("def f():\n    from golden_al.engines.trtllm.server import probe\n", {"trtllm"}),
                           ("from golden_al.engines import get_profile\n", set())):
        (tmp_path / "m.py").write_text(text)
        assert _specific_engines(tmp_path / "m.py", names) == expected, text


def test_every_built_in_engine_is_a_folder_with_its_profile() -> None:
    for name in registry.engine_names():
        folder = ROOT / "golden_al" / "engines" / name
        assert (folder / "__init__.py").is_file(), name
        assert not (ROOT / "golden_al" / "engines" / f"{name}.py").exists(), name


def test_each_built_in_engine_has_the_capabilities_its_profile_fills() -> None:
    from golden_al.servers.launch import MEASURABLE_ENGINES, SERVER_ENGINES

    have = {name: registry.get_profile(name).capabilities() for name in registry.engine_names()}
    assert have["trtllm"] == ("check", "server", "recipes", "simulate", "run-logs")  # attach only: no launch
    assert "recipes" in have["atom"]  # its roles recipes: server flags in a role's arguments
    assert "recipes" not in have["llamacpp"]
    assert all("check" in c for c in have.values())  # the one required group: the others are optional, built-in or not
    assert MEASURABLE_ENGINES == tuple(n for n in have if "server" in have[n])  # measurable = the server capability
    assert SERVER_ENGINES == tuple(n for n in have if "launch" in have[n])


def test_half_a_capability_is_refused_and_a_missing_one_names_itself() -> None:
    from dataclasses import replace

    import pytest

    from golden_al.errors import UsageError
    from golden_al.plugin.conformance import profile_problems

    atom = registry.get_profile("atom")
    half = replace(atom, name="toy", server=replace(atom.server, server_probe=None))
    assert any("server: sets al_sources, source_impls but not server_probe (capability 'server'" in p
               for p in profile_problems(half, entry_name="toy", resolve_hooks=False))
    with pytest.raises(UsageError, match="TensorRT-LLM has no 'launch' capability: golden-al cannot start its server"):
        registry.get_profile("trtllm").require("launch", "measure --launch")


def test_the_fields_the_guide_asks_for_are_read(capsys) -> None:
    """Issue 40: ``metrics`` and ``spec_flags`` were filled by every author and read by no code. ``engines show``
    prints them, and the kit holds ``counter_marker`` to the declared metrics."""
    import json
    from dataclasses import replace

    from golden_al.cli.main import main
    from golden_al.plugin.conformance import profile_problems

    assert main(["engines", "show", "sglang", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert "sglang:spec_verify_calls_total" in [m["name"] for m in info["metrics"]]
    assert info["launch_flags_at_k3"][:2] == ["--speculative-algorithm", "EAGLE"]
    vllm = registry.get_profile("vllm")
    bad = replace(vllm, name="toy", server=replace(vllm.server, counter_marker="toy:nothing_total"))
    assert any("server.counter_marker: 'toy:nothing_total' is not one of the profile's metrics" in p
               for p in profile_problems(bad, entry_name="toy", builtin=True, resolve_hooks=False))


def test_the_profile_is_capability_groups_each_optional_as_a_whole() -> None:
    """Issue 40: a profile is its identity plus one group per capability; a group left out is its conservative
    default (nothing declared), and a command that needs it refuses naming the group."""
    import pytest

    from golden_al.errors import UsageError
    from golden_al.plugin.conformance import profile_problems
    from golden_al.plugin.profile import (
        CAPABILITIES,
        CheckSupport,
        DraftLenRule,
        EngineProfile,
        ServerSupport,
        Source,
        SyntheticKnob,
    )

    src = Source("example/minimal", "minimal.py", "0.1.0")
    minimal = EngineProfile(name="minimal", display_name="Minimal", algorithms=("draft",),
                            draft_len_rules=(DraftLenRule("draft", "k = --k", source=src),),
                            check=CheckSupport(synthetic_knobs=(SyntheticKnob("MINIMAL_AL", "env", "al", source=src),),
                                               synthetic_settings=lambda al, k, **_: {"MINIMAL_AL": f"{al:.2f}"}),
                            sources=(src,))
    assert minimal.capabilities() == ("check",)
    assert profile_problems(minimal, entry_name="minimal", resolve_hooks=False) == []
    assert minimal.server == ServerSupport()
    assert minimal.recipe is None
    for cap in CAPABILITIES[1:]:
        with pytest.raises(UsageError, match=f"has no {cap.name!r} capability.*leaves out {cap.group}"):
            minimal.require(cap.name, cap.commands[0])
    # every built-in groups its fields the same way: no field of a group is also a field of the profile
    from dataclasses import fields

    top = {f.name for f in fields(EngineProfile)}
    for cls in (CheckSupport, ServerSupport):
        assert not top & {f.name for f in fields(cls)}
    # a group of the wrong type is named, not read
    from dataclasses import replace

    wrong = replace(minimal, server={"al_sources": ("x",)})  # type: ignore[arg-type]
    assert profile_problems(wrong, entry_name="minimal", resolve_hooks=False) == [
        "server: a dict, not a ServerSupport"]
