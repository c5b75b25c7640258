"""Issue 40: a profile is validated when it loads, by the same conformance kit for built-ins and plugins.

Ten plugin mistakes, each installed as a real package (a folder with its ``*.dist-info/entry_points.txt``
on ``PYTHONPATH``, as pip leaves it): each is skipped with a warning naming the plugin and the field,
every other command works as before (``check`` on a built-in engine's file says exactly what it says
without the plugin), and only a command that names the plugin fails, exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRT_FILE = "tests/fixtures/check/tree/recipes/trtllm/glm-agentic-al-minus-1.yaml"

GOOD = '''
from golden_al.plugin.profile import (CheckSupport, DraftLenRule, EngineProfile, RecipeFormat, RunLogSupport,
                                      ServerSupport, SimulateSupport, Source, SyntheticKnob, lazy)

KNOB = {knob!r}
_SRC = Source("example/bad", "bad/spec.py", "0.1.0")


def synthetic_settings(al, k, **_):
    return {{KNOB: f"{{al - 1:.2f}}"}}


def read(args):
    return None


def reader(files, k, *, decode_log_interval):
    raise NotImplementedError


PROFILE = EngineProfile(
    name={name!r}, display_name="bad", algorithms=("draft",),
    draft_len_rules=(DraftLenRule("draft", "k = --bad-k", source=_SRC),),
    check=CheckSupport(synthetic_knobs=(SyntheticKnob(KNOB, "env", {unit!r}, source=_SRC),),
                       synthetic_settings=synthetic_settings),
    sources=(_SRC,), {extra}
)
'''

#: mistake -> (profile edits, or a whole module; what the warning must name)
MISTAKES: dict[str, tuple[dict[str, str] | str, str]] = {
    "knob-of-a-builtin": ({"knob": "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"}, "synthetic_knobs"),
    "source-without-implementation": ({"extra": 'server=ServerSupport(al_sources=("bad-source",)),'}, "al_sources"),
    "hook-naming-a-missing-function": ({"extra": 'run_logs=RunLogSupport(run_evidence=lazy("badengine:no_such_reader")),'}, "run_evidence"),
    "hook-as-a-string": ({"extra": 'run_logs=RunLogSupport(run_evidence="badengine:reader"),'}, "run_evidence"),
    "wrong-unit": ({"unit": "al-2"}, "unit"),
    "unregistered-default-sampler": ({"extra": 'simulate=SimulateSupport(default_sampler="force"),'}, "default_sampler"),
    "config-injection": ({"extra": 'recipe=RecipeFormat("bad_config", ("bad",), read, inject_into="config"),'},
                         "recipe.inject_into"),
    "import-error": ("raise RuntimeError('the package is broken')\n", "import"),
    "name-mismatch": ({"name": "otherengine"}, "name"),
    "not-a-profile": ("PROFILE = {'name': 'badengine'}\n", "PROFILE"),
    "source-impl-not-offered": ({"extra": 'server=ServerSupport(source_impls={"x": lazy("badengine:reader")}),'}, "source_impls"),
    # a profile written for the flat shape of an older golden-al: the hint names the group the field moved to
    "flat-profile": ("from golden_al.plugin.profile import EngineProfile\nPROFILE = EngineProfile(name='badengine', "
                     "display_name='bad', algorithms=(), draft_len_rules=(), synthetic_knobs=())\n",
                     "synthetic_knobs now sits in its capability group: check=CheckSupport(synthetic_knobs=...)"),
}


def _install(site: Path, module: str, entry: str = "badengine") -> Path:
    """A package ``badengine`` with one ``golden_al.engines`` entry point, laid out as pip installs it."""
    (site / "badengine").mkdir(parents=True)
    (site / "badengine" / "__init__.py").write_text(module)
    info = site / "badengine-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: badengine\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[golden_al.engines]\n{entry} = badengine:PROFILE\n")
    return site


def _module(spec: dict[str, str] | str) -> str:
    if isinstance(spec, str):
        return spec
    fields = {"knob": "BADENGINE_FORCE", "name": "badengine", "unit": "al-1", "extra": "", **spec}
    return GOOD.format(**fields)


def _golden_al(site: Path | None, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, "-m", "golden_al", *argv], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=300)


@pytest.fixture(scope="module")
def baseline() -> subprocess.CompletedProcess[str]:
    return _golden_al(None, "check", TRT_FILE, "--format", "json")


def test_a_well_formed_plugin_loads(tmp_path: Path) -> None:
    site = _install(tmp_path, _module({}))
    done = _golden_al(site, "env", "--help")
    assert done.returncode == 0, done.stderr
    assert "badengine" in done.stdout
    assert "warning" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_plugin_mistake_is_named_at_load_and_breaks_nothing_else(tmp_path: Path, mistake: str,
                                                                     baseline: subprocess.CompletedProcess[str]) -> None:
    spec, field = MISTAKES[mistake]
    site = _install(tmp_path, _module(spec))
    done = _golden_al(site, "check", TRT_FILE, "--format", "json")
    warning = "plugin engine 'badengine' at badengine:PROFILE (package badengine) was not loaded: "
    assert warning in done.stderr, done.stderr
    assert field in done.stderr.split(warning, 1)[1].splitlines()[0]
    # the built-in engine's file: the same findings and exit code as without the plugin
    assert done.returncode == baseline.returncode == 0
    assert json.loads(done.stdout) == json.loads(baseline.stdout)
    # a command that needs the plugin refuses, exit 2, naming it
    needs = _golden_al(site, "env", "--engine", "badengine", "--model", "m", "--thinking", "off", "-k", "3")
    assert needs.returncode == 2, needs.stderr
    assert "badengine" in needs.stderr


def test_a_plugin_reusing_a_builtin_knob_leaves_check_on_the_builtin_file_unchanged(
        tmp_path: Path, baseline: subprocess.CompletedProcess[str]) -> None:
    """The bug of issue 40: later engines silently overwrote a knob spelling (a match became unresolved)."""
    site = _install(tmp_path, _module({"knob": "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"}))
    done = _golden_al(site, "check", TRT_FILE, "--format", "json")
    (finding,) = json.loads(done.stdout)
    assert (finding["engine"], finding["verdict"]) == ("trtllm", "match")
    assert done.returncode == 0


@pytest.mark.slow
def test_a_plugin_cannot_take_a_builtin_or_the_reference_name(tmp_path: Path) -> None:
    for entry in ("sglang", "reference"):
        site = _install(tmp_path / entry, _module({"name": entry}), entry=entry)
        done = _golden_al(site, "env", "--help")
        assert done.returncode == 0
        assert f"plugin engine {entry!r}" in done.stderr
        assert "name:" in done.stderr


def test_every_builtin_engine_passes_the_kit_golden_al_publishes() -> None:
    from golden_al.plugin import registry
    from golden_al.plugin.conformance import profile_problems

    profiles = {n: registry.get_profile(n) for n in registry.engine_names()}
    for name, profile in profiles.items():
        others = {m: p for m, p in profiles.items() if m != name}
        assert profile_problems(profile, entry_name=name, others=others, builtin=True) == [], name


@pytest.mark.slow
def test_the_guides_kit_example_passes_on_the_toy_plugin_and_fails_on_a_broken_one(tmp_path: Path) -> None:
    """The Python block of docs/adding-an-engine.md, run as a plugin's CI would run it."""
    import re

    guide = (REPO / "docs" / "adding-an-engine.md").read_text(encoding="utf-8")
    (code,) = [c for c in re.findall(r"```python\n(.*?)```", guide, re.S) if "profile_problems" in c]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "engine_plugin"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    broken = code.replace('entry_name="toyserve"', 'entry_name="toyserv"')
    done = subprocess.run([sys.executable, "-c", broken], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=120)
    assert done.returncode == 1
    assert "AssertionError" in done.stderr


def test_every_hook_is_a_callable_or_a_lazy_import_never_a_string() -> None:
    """One hook mechanism (issue 40): a profile's hooks are callables; a module imported only on use is written
    ``lazy("module:function")``, which is itself callable. A bare string is refused by the kit and by ``load_hook``."""
    from golden_al.plugin import registry
    from golden_al.plugin.conformance import hook_refs
    from golden_al.plugin.profile import Lazy, lazy
    from golden_al.plugin.registry import load_hook

    for name in registry.engine_names():
        for field, (hook, _) in hook_refs(registry.get_profile(name)).items():
            assert callable(hook), (name, field, hook)
            assert not isinstance(hook, str), (name, field)
    probe = lazy("golden_al.engines.sglang.server:probe")
    assert isinstance(probe, Lazy)
    assert str(probe) == "golden_al.engines.sglang.server:probe"
    assert load_hook(probe) is load_hook(probe)  # the module's own function
    assert load_hook(len) is len
    with pytest.raises(TypeError, match="lazy"):
        load_hook("golden_al.engines.sglang.server:probe")
    for bad in ("no_colon", "mod:", ":name", "a b:c"):
        with pytest.raises(ValueError, match=r"package\.module:name"):
            lazy(bad)


# Every built-in engine's folder is self-contained: its tests read only the folder (its fixtures/ included), golden-al
# through its commands and floors, and no conftest. An engine that could not be made so would be named here with the
# reason (not skipped, not xfailed): none is.
NOT_SELF_CONTAINED: dict[str, str] = {}


def _builtin_engine_folders() -> list[str]:
    return sorted(p.parent.name for p in (REPO / "golden_al" / "engines").glob("*/__init__.py"))


def test_every_builtin_engine_folder_is_moved_out_by_the_test_below() -> None:
    folders = _builtin_engine_folders()
    assert {"atom", "llamacpp", "sglang", "tilert", "trtllm", "vllm"} <= set(folders)  # the glob sees the six
    assert set(NOT_SELF_CONTAINED) <= set(folders)
    assert all((REPO / "golden_al" / "engines" / name / "tests" / "__init__.py").is_file() for name in folders)


@pytest.mark.slow
@pytest.mark.parametrize("engine", [n for n in _builtin_engine_folders() if n not in NOT_SELF_CONTAINED])
def test_a_built_in_engine_folder_in_a_package_of_its_own_passes_its_own_tests(engine: str, tmp_path: Path) -> None:
    """Issue 49: a built-in engine's folder copied into a package of its own (``golden_al_<engine>``, one
    ``golden_al.engines`` entry point), with golden-al's own copy of the folder removed, is that engine, and its tests
    pass there unchanged (every built-in and the toy plugin pass the same kit: the two tests above)."""
    import shutil

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    src, site, pkg = tmp_path / "src", tmp_path / "site", f"golden_al_{engine}"
    for top in ("golden_al", "simulators", "distributions"):
        shutil.copytree(REPO / top, src / top, ignore=ignore)
    shutil.rmtree(src / "golden_al" / "engines" / engine)
    shutil.copytree(REPO / "golden_al" / "engines" / engine, site / pkg, ignore=ignore)
    info = site / f"{pkg}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: golden-al-{engine}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[golden_al.engines]\n{engine} = {pkg}:PROFILE\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(src)])}
    where = subprocess.run([sys.executable, "-c", "from golden_al.plugin import registry\n"
                            f"print(registry.ENGINES.where({engine!r}), registry.ENGINES.is_builtin({engine!r}))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert where.stdout.split() == [f"{pkg}:PROFILE", "False"], where.stderr
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(site),
                           str(site / pkg / "tests")], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    here = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                           str(REPO / "golden_al" / "engines" / engine / "tests")], capture_output=True, text=True,
                          cwd=REPO, timeout=300)
    count = next(line.split()[0] for line in here.stdout.splitlines() if "collected" in line)
    assert f"{count} passed" in done.stdout, (count, done.stdout[-500:])


def test_which_fields_are_hooks_comes_from_their_protocol_types() -> None:
    """Issue 49: no hand-written list: a field typed with a :mod:`golden_al.plugin.hooks` protocol is a hook (in the
    groups and inside them), and only such a field."""
    from golden_al.plugin import hooks
    from golden_al.plugin.conformance import hook_fields

    found = {path: (spec, many) for path, spec, many in hook_fields()}
    assert found["server.server_probe"] == (hooks.ServerProbe, False)
    assert found["run_logs.log_reader.parse"] == (hooks.LineParser, False)
    assert found["launch.build.check"] == (hooks.CheckBinary, False)
    assert found["simulate.samplers"] == (hooks.Sampler, True)
    assert found["curve_method_of"] == (hooks.CurveMethodOf, False)
    assert "check.synthetic_knobs" not in found
    assert "name" not in found
    declared = {obj for obj in vars(hooks).values() if isinstance(obj, type) and hooks.HookSpec in obj.__mro__}
    assert {spec for spec, _ in found.values()} == declared - {hooks.HookSpec}  # every protocol is some field's


@pytest.mark.parametrize(("hook", "problems"), [
    ("def h(files, k, *, interval=0): ...", ["does not accept the keyword 'decode_log_interval'"]),
    ("def h(files, *, decode_log_interval): ...", ["takes 1 positional argument(s), the protocol passes 2 (files, k)"]),
    ("def h(files, k, extra, *, decode_log_interval): ...", ["requires 'extra', which the protocol never passes"]),
    ("def h(files, k, extra=1, **kw): ...", []),
])
def test_a_hook_is_checked_against_its_protocol(hook: str, problems: list[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """As pluggy checks an implementation against its hook spec: what golden-al passes, the hook must take."""
    import dataclasses

    from golden_al.plugin import registry
    from golden_al.plugin.conformance import profile_problems
    from golden_al.plugin.profile import lazy

    namespace: dict[str, object] = {}
    exec(hook, namespace)
    atom = registry.get_profile("atom")
    as_callable = dataclasses.replace(atom, name="toy", run_logs=dataclasses.replace(atom.run_logs,
                                                                                      run_evidence=namespace["h"]))
    (tmp_path / "toyhook.py").write_text(hook + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    as_lazy = dataclasses.replace(as_callable, run_logs=dataclasses.replace(atom.run_logs,
                                                                             run_evidence=lazy("toyhook:h")))
    for profile in (as_callable, as_lazy):  # imported, or read from its source without importing it
        found = [p for p in profile_problems(profile, entry_name="toy", builtin=True) if "run_evidence" in p]
        assert found == [f"run_logs.run_evidence: {p} (RunEvidenceReader: golden_al.plugin.hooks)" for p in problems]
