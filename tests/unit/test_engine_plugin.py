"""Engines are plugins: a sixth engine installed from its own package (``tests/engine_plugin/``)
is found through the ``golden_al.engines`` entry point and covered by ``env``, ``check`` (YAML,
JSON and shell, by its knob's declared unit), ``inject --restore-real``, ``simulate`` (its own
sampler and option), ``check-run`` (its own log reader) and ``measure``/``sweep`` against its own
fake server (its own probe and AL source) without a line of golden-al naming it.

The package is really installed (``pip install --target``, its own ``pyproject.toml``, no
network: setuptools is already in the environment) and the CLI runs in a subprocess with it on
``PYTHONPATH``, as a user's CI would meet it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulators.registry import Registry

PLUGIN = Path(__file__).resolve().parents[1] / "engine_plugin"
MODEL = "qwen2.5-coder-1.5b-instruct"  # the shipped curve: thinking_off k=7 -> 7.24

SHELL = """#!/bin/bash
export THINKING_MODE=thinking_off
export TOYSERVE_FORCE_ACCEPTED={value}
toy-serve --toy-model {model} --toy-draft-len {k}
"""
COMPOSE = """services:
  toy:
    command: ["toy-serve", "--toy-model", "{model}", "--toy-draft-len", "{k}"]
    environment:
      THINKING_MODE: thinking_off
      TOYSERVE_FORCE_ACCEPTED: "{value}"
"""
JSON_CFG = ('{{"command": ["toy-serve", "--toy-model", "{model}", "--toy-draft-len", "{k}"], '
            '"env": {{"THINKING_MODE": "thinking_off", "TOYSERVE_FORCE_ACCEPTED": "{value}"}}}}\n')


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy engine's package, installed into a folder of its own."""
    target = tmp_path_factory.mktemp("plugin-site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), str(PLUGIN)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (next(target.glob("golden_al_toy_engine-*.dist-info")) / "entry_points.txt").is_file()
    return target


def _python(path: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` with ``path`` (the installed plugin, or its source) importable, in a process
    of its own: importing the plugin registers its sampler, which must not leak into this one."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": _path(path)})


def _path(*first: Path) -> str:
    """A PYTHONPATH with ``first`` ahead of this process's own (a worktree's golden_al stays the one imported)."""
    return os.pathsep.join([*map(str, first), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)


def _golden_al(site: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": _path(site)}
    return subprocess.run([sys.executable, "-m", "golden_al", *argv], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_the_plugin_is_registered_beside_the_builtin_engines(site: Path) -> None:
    done = _golden_al(site, "inject", "--help")
    assert done.returncode == 0, done.stderr
    from golden_al.plugin import registry

    choices = "{" + ",".join([*registry._builtin(), "toyserve"]) + "}"  # the engine folders, then the plugin
    assert choices in done.stdout.replace("\n", "").replace(" ", "")


def test_env_gives_the_plugins_own_settings_in_its_unit(site: Path) -> None:
    done = _golden_al(site, "env", "--model", MODEL, "--thinking", "off", "-k", "7", "--engine", "toyserve",
                      "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"TOYSERVE_FORCE_ACCEPTED": "6.24"}  # AL - 1: the knob counts drafts only


@pytest.mark.slow
@pytest.mark.parametrize(("name", "template"), [("run.sh", SHELL), ("compose.yaml", COMPOSE), ("cfg.json", JSON_CFG)])
@pytest.mark.parametrize(("value", "verdict", "rc"), [
    ("6.24", "match", 0),          # AL 7.24, the golden value at k = 7
    ("7.24", "unsafe-value", 1),   # the AL written into a drafts-only knob: AL 8.24 > k + 1
    ("6.00", "mismatch", 1),
])
def test_check_proves_or_refuses_the_plugins_pin_in_every_format(site: Path, tmp_path: Path, name: str,
                                                                 template: str, value: str, verdict: str,
                                                                 rc: int) -> None:
    folder = tmp_path / "agentic"
    folder.mkdir()
    (folder / name).write_text(template.format(value=value, model=MODEL, k=7))
    done = _golden_al(site, "check", str(folder / name), "--format", "json")
    assert done.returncode == rc, done.stdout + done.stderr
    (finding,) = json.loads(done.stdout)
    assert (finding["engine"], finding["verdict"], finding["draft_len"], finding["pinned_value"]) == (
        "toyserve", verdict, 7, value)


def test_a_plugin_pin_with_no_launch_line_is_never_a_match(site: Path, tmp_path: Path) -> None:
    script = tmp_path / "agentic" / "run.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/bash\nexport THINKING_MODE=thinking_off\nexport TOYSERVE_FORCE_ACCEPTED=6.24\n")
    done = _golden_al(site, "check", str(script), "--format", "json")
    assert done.returncode == 1
    (finding,) = json.loads(done.stdout)
    assert finding["verdict"] != "match"
    assert "toyserve launch" in finding["message"]


def test_restore_real_removes_the_plugins_knob(site: Path, tmp_path: Path) -> None:
    recipe = tmp_path / "compose.yaml"
    recipe.write_text(COMPOSE.format(value="6.24", model=MODEL, k=7))
    done = _golden_al(site, "inject", "--restore-real", str(recipe))
    assert done.returncode == 0, done.stderr
    assert "TOYSERVE_FORCE_ACCEPTED" not in recipe.read_text()
    assert "toy-serve" in recipe.read_text()
    after = _golden_al(site, "check", str(recipe), "--format", "json")
    assert json.loads(after.stdout) == [] or all(f["engine"] != "toyserve" for f in json.loads(after.stdout))


def test_inject_refuses_a_plugin_without_a_recipe_format_by_its_profile(site: Path, tmp_path: Path) -> None:
    """``inject`` writes synthetic settings only where the engine's profile declares a recipe format; the toy
    declares none, so inject says so (exit 2) and leaves the file as it was, naming the toy's own knob."""
    recipe = tmp_path / "compose.yaml"
    recipe.write_text(COMPOSE.format(value="6.24", model=MODEL, k=7))
    before = recipe.read_text()
    done = _golden_al(site, "inject", str(recipe), "--engine", "toyserve", "--model", MODEL, "--thinking", "off")
    assert done.returncode == 2, done.stderr
    assert "toyserve has no srt-slurm recipe format to rewrite" in done.stderr
    assert "golden-al env --engine toyserve" in done.stderr
    assert "TOYSERVE_FORCE_ACCEPTED" in done.stderr
    assert recipe.read_text() == before


def test_sweep_launch_refuses_a_plugin_that_declares_no_server_command(site: Path, tmp_path: Path) -> None:
    """``sweep --launch`` launches only an engine whose profile gives its server command; the toy gives
    none (it is measured with --server), and the refusal names what would let it launch."""
    done = _golden_al(site, "sweep", "--engine", "toyserve", "--launch", "--target", "toy-model", "--draft-lens",
                      "3,7", "--thinking", "off", *_prompts(tmp_path, 2), "--out", str(tmp_path / "sweep"))
    assert done.returncode == 2, done.stderr
    assert "toyserve" in done.stderr
    assert "--server" in done.stderr
    assert not (tmp_path / "sweep").exists() or not any((tmp_path / "sweep").rglob("measurement.json"))


def test_simulate_runs_the_plugins_own_sampler(site: Path) -> None:
    done = _golden_al(site, "simulate", "--engine", "toyserve", "--method", "force", "--al", "4.5", "-k", "7",
                      "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    text = json.dumps(doc)
    assert "toyserve" in text
    assert "TOYSERVE_FORCE_ACCEPTED" in text  # the injected settings, from the plugin's profile
    assert "floor(AL) or ceil(AL)" in text


def test_simulate_takes_the_plugins_own_option(site: Path) -> None:
    """--toy-mix comes from the plugin's profile (SimulateOption): simulate's CLI was not touched for it."""
    done = _golden_al(site, "simulate", "--engine", "toyserve", "--method", "force", "--al", "4.5", "-k", "7",
                      "--toy-mix", "floor", "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["toy_mix"] == "floor"  # the plugin's simulate_report
    assert doc["mean"] == 4.0  # floor only: the option reached the plugin's sampler
    other = _golden_al(site, "simulate", "--engine", "vllm", "--method", "synthetic", "--al", "3", "-k", "3",
                       "--toy-mix", "floor")
    assert other.returncode == 2
    assert "--toy-mix applies only to --engine toyserve, not 'vllm'" in other.stderr


def test_check_run_judges_a_plugin_run_by_its_own_sampler(site: Path) -> None:
    """check-run's decision rule takes the plugin engine's registered sampler (its exact law)."""
    code = ("import json, sys\n"
            "from golden_al.checks.run import RunEvidence, check_evidence\n"
            "ev = RunEvidence('toyserve', 'simulated', 4.5, 400, 400, 400, 1)\n"
            "r = check_evidence(ev, expect_al=4.5, draft_len=7)\n"
            "print(json.dumps([r.passed, r.sampler_var, r.method]))\n")
    done = _python(site, code)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, 0.25, "force"]  # floor/ceil at 4.5: variance 1/4


@pytest.mark.parametrize(("accepted", "rc"), [(1400, 0), (1240, 1)])
def test_check_run_reads_the_plugins_own_log(site: Path, tmp_path: Path, accepted: int, rc: int) -> None:
    """check-run on a toyserve log: the reader the plugin's profile names (run_evidence) turns its
    lines into evidence; 1400 accepted over 400 steps is AL 4.5 exactly, 1240 is AL 4.1 (16 standard
    errors of the floor/ceil law below 4.5)."""
    log = tmp_path / "toy.log"
    first = accepted * 150 // 400
    log.write_text(f"toyserve starting\ntoyserve stats: steps=150 accepted={first}\n"
                   f"toyserve stats: steps=250 accepted={accepted - first}\n")
    done = _golden_al(site, "check-run", str(log), "--engine", "toyserve", "--draft-len", "7", "--expect-al", "4.5",
                      "--format", "json")
    assert done.returncode == rc, done.stderr
    doc = json.loads(done.stdout)
    assert doc["source"] == "toyserve stats log"
    assert doc["realized_al"] == pytest.approx(1 + accepted / 400)
    assert doc["method"] == "force"


def test_check_run_refuses_a_plugin_log_that_breaks_k(site: Path, tmp_path: Path) -> None:
    log = tmp_path / "toy.log"
    log.write_text("toyserve stats: steps=10 accepted=71\n")
    done = _golden_al(site, "check-run", str(log), "--engine", "toyserve", "--draft-len", "7", "--expect-al", "4.5")
    assert done.returncode == 2, done.stderr
    assert "accepted=71 > k x steps = 7 x 10" in done.stderr


def test_check_run_names_the_engines_whose_logs_it_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine whose profile names no run_evidence is refused with the alternatives (TensorRT-LLM
    stood here until it gained its reader; a copy of its profile without one stands in)."""
    import dataclasses

    from golden_al.errors import UsageError
    from golden_al.measure.evidence import evidence_from_files
    from golden_al.plugin import registry

    real = registry.get_profile
    monkeypatch.setattr(registry, "get_profile", lambda name: dataclasses.replace(real(name), run_logs=dataclasses.replace(
                        real(name).run_logs, run_evidence=None))
                        if name == "trtllm" else real(name))
    log = tmp_path / "trt.log"
    log.write_text("nothing\n")
    with pytest.raises(UsageError, match="reads no log of TensorRT-LLM") as err:
        evidence_from_files([log], "trtllm", 3)
    assert "SGLang" in str(err.value.hint)


@pytest.fixture
def toy_server(site: Path) -> Iterator[tuple[str, int]]:
    """The plugin's own fake toyserve (k = 7) in a process of its own; yields (URL, k)."""
    code = ("import sys, time\nfrom golden_al_toy_engine.server import FakeToyServer\n"
            "s = FakeToyServer(7)\nprint(s.url, flush=True)\nsys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": _path(site)})
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), url
    yield url, 7
    proc.kill()
    proc.wait(timeout=30)


def _expected(site: Path, max_tokens: int, k: int, requests: int) -> tuple[int, int]:
    """(verify steps, accepted drafts) the fake server's fixed cycle gives, computed by the plugin."""
    import importlib.util

    # the server's own truth, not golden-al's; its file alone (the package would register its
    # sampler in this process)
    spec = importlib.util.spec_from_file_location("toy_server_truth", PLUGIN / "golden_al_toy_engine" / "server.py")
    assert spec is not None
    assert spec.loader is not None
    server = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(server)
    steps = server.steps_for(max_tokens, k, (3, 0, 7, 1, 2))
    return requests * len(steps), requests * sum(steps)


def _prompts(tmp_path: Path, n: int) -> list[str]:
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}]}) + "\n" for i in range(n)))
    return ["--prompts", f"chat-jsonl:{path}", "--num-prompts", str(n), "--max-tokens", "40",
            "--served-model-name", "toy-model"]


def test_measure_reads_a_plugin_server_through_its_own_probe_and_source(site: Path, tmp_path: Path,
                                                                         toy_server: tuple[str, int]) -> None:
    """measure --engine toyserve --server URL: the probe and the AL source the plugin's profile names
    (server_probe, al_sources, source_impls), every count cross-checked, one record."""
    url, k = toy_server
    out = tmp_path / "cell"
    done = _golden_al(site, "measure", "--engine", "toyserve", "--server", url, "--draft-len", str(k),
                      *_prompts(tmp_path, 3), "--out", str(out))
    assert done.returncode == 0, done.stderr
    rec = json.loads((out / "measurement.json").read_text())
    steps, accepted = _expected(site, 40, k, 3)
    assert (rec["engine"], rec["al_source"], rec["engine_version"]) == ("toyserve", "toyserve-per-request", "0.1.0")
    assert (rec["num_verify_steps"], rec["num_accepted_drafts"]) == (steps, accepted)
    assert rec["al"] == pytest.approx(1 + accepted / steps)


def test_measure_refuses_a_plugin_server_drafting_another_length(site: Path, tmp_path: Path,
                                                                  toy_server: tuple[str, int]) -> None:
    url, k = toy_server
    done = _golden_al(site, "measure", "--engine", "toyserve", "--server", url, "--draft-len", str(k - 2),
                      *_prompts(tmp_path, 2), "--out", str(tmp_path / "cell"))
    assert done.returncode == 1
    assert f"the server drafts k={k} (/toy/info draft_len) but k={k - 2} was asked for" in done.stderr
    assert not (tmp_path / "cell" / "measurement.json").exists()


def test_sweep_measures_a_plugin_server(site: Path, tmp_path: Path, toy_server: tuple[str, int]) -> None:
    url, k = toy_server
    out = tmp_path / "sweep"
    done = _golden_al(site, "sweep", "--engine", "toyserve", "--server", url, "--draft-lens", str(k),
                      "--thinking", "off", *_prompts(tmp_path, 2), "--out", str(out))
    assert done.returncode == 0, done.stderr
    rec = json.loads((out / "thinking_off" / f"k{k}" / "measurement.json").read_text())
    steps, accepted = _expected(site, 40, k, 2)
    assert (rec["engine"], rec["num_verify_steps"], rec["num_accepted_drafts"]) == ("toyserve", steps, accepted)


def test_the_launch_guard_refuses_the_plugins_knob(site: Path) -> None:
    """A launch environment that sets the plugin's knob is refused like a built-in engine's (the guard
    reads every registered engine's knobs through check's census); an unrelated variable is not."""
    code = ("from golden_al.servers.synthetic import check_launch_env\n"
            "from golden_al.errors import SyntheticAcceptanceActiveError\n"
            "assert check_launch_env({'PATH': '/bin', 'TOYSERVE_MODE': 'x'}) == []\n"
            "try:\n    check_launch_env({'PATH': '/bin', 'TOYSERVE_FORCE_ACCEPTED': '6.24'})\n"
            "except SyntheticAcceptanceActiveError as exc:\n    print(exc)\n")
    done = _python(site, code)
    assert done.returncode == 0, done.stderr
    assert "TOYSERVE_FORCE_ACCEPTED=6.24, launch environment" in done.stdout


def test_a_plugin_cannot_take_a_builtin_engines_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package registering ``sglang`` is ignored: the gate keeps the built-in profile."""
    from importlib import metadata

    from golden_al.plugin import registry

    fake = [metadata.EntryPoint("sglang", "evil:PROFILE", registry.ENTRY_POINT_GROUP),
            metadata.EntryPoint("vllm", "golden_al.engines.vllm:PROFILE", registry.ENTRY_POINT_GROUP),
            metadata.EntryPoint("zeta", "zeta_engine:PROFILE", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(metadata, "entry_points", lambda group=None: [e for e in fake if e.group == group])
    reg = Registry("plugin engine", builtin=registry._builtin(), group=registry.ENTRY_POINT_GROUP,
                        reserved={registry.REFERENCE_ENGINE: "the embedded engine"})
    found = reg.entries
    assert found["sglang"] == "golden_al.engines.sglang:PROFILE"
    assert list(found) == [*registry._builtin(), "zeta"]
    refused = {r.name: r for r in reg.skipped()}  # and said: a warning names each
    assert refused["sglang"].where == "evil:PROFILE"
    assert "is a built-in engine" in refused["sglang"].problems[0]
    assert refused["zeta"].problems[0].startswith("import: ModuleNotFoundError")  # not installed: named, skipped
    assert "vllm" not in refused  # an entry point naming the built-in itself is the built-in
    registry.ENGINES.discover(fake)  # the live registry: the refused plugin never hides the built-in it named
    try:
        assert registry.engine_names()[:len(found) - 1] == tuple(registry._builtin())
        assert registry.profile_or_usage("sglang").display_name == "SGLang"
        assert "sglang" in {s.name for s in registry.skipped_plugins()}  # and the CLI warns about it
    finally:
        monkeypatch.undo()  # the real entry points again, before re-reading them
        registry.ENGINES.discover()


def test_every_registered_engine_answers_env_for_the_shipped_curve() -> None:
    """Conformance of the registry: each engine's profile loads under its own name and turns the
    golden AL into settings whose keys are its declared knobs."""
    from golden_al.plugin import registry

    for name in registry.engine_names():
        profile = registry.get_profile(name)
        assert profile.name == name
        try:
            settings = profile.check.synthetic_settings(7.24, 7)
        except Exception as exc:  # the message is the assertion
            pytest.fail(f"{name}: {exc}")
        spellings = {s for knob in profile.check.synthetic_knobs for s in knob.spellings()}
        assert set(settings) & spellings, (name, settings)


# ------------------------------------------------------------------ every hook is load-bearing
#: The toy profile's behaviour hooks, each with the probe that fails without it (a probe is the core
#: of a named conformance test above, run against the toy with that one hook removed).
HOOKS: dict[str, str] = {
    "check.synthetic_settings": "env",            # test_env_gives_the_plugins_own_settings_in_its_unit
    "check.synthetic_knobs": "check",             # test_check_proves_or_refuses_the_plugins_pin_in_every_format
    "launch.executable": "check",
    "check.command_line": "check",
    "curve_methods": "check",
    "simulate.simulate_options": "simulate_option",  # test_simulate_takes_the_plugins_own_option
    "simulate.simulate_report": "simulate_option",
    "simulate.default_sampler": "check_run",      # test_check_run_reads_the_plugins_own_log
    "simulate.samplers": "check_run",
    "run_logs.run_evidence": "check_run",
    "server.server_probe": "measure",             # test_measure_reads_a_plugin_server_through_its_own_probe_and_source
    "server.al_sources": "measure",
    "server.source_impls": "measure",
}
#: Fields that describe the engine (shown, cited) but change no command's behaviour by themselves.
DATA = {"name", "display_name", "algorithms", "draft_len_rules", "sources"}

#: Loaded at interpreter start-up (``sitecustomize``): the toy's PROFILE with one hook (``group.field``) removed.
_DROP_HOOK = """\
import dataclasses, os
drop = os.environ.get("GOLDEN_AL_TOY_DROP")
if drop:
    import golden_al_toy_engine as toy
    group, _, name = drop.rpartition(".")
    holder = getattr(toy.PROFILE, group) if group else toy.PROFILE
    f = {f.name: f for f in dataclasses.fields(holder)}[name]
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    elif name == "synthetic_settings":
        value = lambda al, k, **_: {}
    else:
        value = ()
    holder = dataclasses.replace(holder, **{name: value})
    toy.PROFILE = dataclasses.replace(toy.PROFILE, **{group: holder}) if group else holder
"""


def _probe(name: str, site: Path, tmp: Path, url: str, drop: str | None) -> bool:
    """Whether probe ``name`` passes with the toy's hook ``drop`` removed (None: the toy intact)."""
    hooks = tmp / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(_DROP_HOOK)
    env = {**os.environ, "PYTHONPATH": _path(hooks, site), "GOLDEN_AL_TOY_DROP": drop or ""}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "golden_al", *argv], capture_output=True, text=True, env=env,
                              cwd=tmp, timeout=300)

    work = tmp / f"{name}-{drop}"
    work.mkdir()
    if name == "env":
        done = run("env", "--model", MODEL, "--thinking", "off", "-k", "7", "--engine", "toyserve", "--format", "json")
        return done.returncode == 0 and json.loads(done.stdout) == {"TOYSERVE_FORCE_ACCEPTED": "6.24"}
    if name == "check":
        (work / "agentic").mkdir()
        (work / "agentic" / "run.sh").write_text(SHELL.format(value="6.24", model=MODEL, k=7))
        done = run("check", str(work / "agentic" / "run.sh"), "--format", "json")
        found = json.loads(done.stdout) if done.stdout.strip().startswith("[") else None
        return done.returncode == 0 and found is not None and [f["verdict"] for f in found] == ["match"]
    if name == "simulate_option":
        done = run("simulate", "--engine", "toyserve", "--method", "force", "--al", "4.5", "-k", "7", "--toy-mix",
                   "floor", "--format", "json")
        return done.returncode == 0 and json.loads(done.stdout).get("toy_mix") == "floor"
    if name == "check_run":
        (work / "toy.log").write_text("toyserve stats: steps=400 accepted=1400\n")
        done = run("check-run", str(work / "toy.log"), "--engine", "toyserve", "--draft-len", "7", "--expect-al",
                   "4.5", "--format", "json")
        return done.returncode == 0 and json.loads(done.stdout)["method"] == "force"
    assert name == "measure"
    done = run("measure", "--engine", "toyserve", "--server", url, "--draft-len", "7", *_prompts(work, 2),
               "--out", str(work / "cell"))
    return done.returncode == 0 and (work / "cell" / "measurement.json").is_file()


def test_every_field_of_the_toy_profile_is_a_guarded_hook_or_data() -> None:
    """A hook added to the toy without a probe that fails without it fails here."""
    code = ("import dataclasses, json\nimport golden_al_toy_engine as toy\nout = []\n"
            "def walk(obj, prefix):\n"
            "    for f in dataclasses.fields(obj):\n"
            "        d = f.default if f.default is not dataclasses.MISSING else (f.default_factory() "
            "if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)\n"
            "        v = getattr(obj, f.name)\n"
            "        if dataclasses.is_dataclass(v) and f.name in ('check', 'server', 'launch', 'simulate', 'run_logs'):\n"
            "            walk(v, prefix + f.name + '.')\n"
            "        elif v != d:\n            out.append(prefix + f.name)\n"
            "walk(toy.PROFILE, '')\n"
            "print(json.dumps(out))\n")
    done = _python(PLUGIN, code)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == set(HOOKS) | DATA


@pytest.mark.slow
def test_the_probes_pass_on_the_intact_toy(site: Path, tmp_path: Path, toy_server: tuple[str, int]) -> None:
    failing = [p for p in dict.fromkeys(HOOKS.values()) if not _probe(p, site, tmp_path, toy_server[0], None)]
    assert failing == []


@pytest.mark.slow
@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_removing_a_hook_from_the_toy_fails_its_named_probe(site: Path, tmp_path: Path, toy_server: tuple[str, int],
                                                            hook: str) -> None:
    assert not _probe(HOOKS[hook], site, tmp_path, toy_server[0], hook), f"{hook} removed, {HOOKS[hook]} still passes"


ENV_ONLY = '''
"""envonly: an engine whose knob is an environment variable (the AL itself) and whose k is a launch
flag, with no command-line reader: check reads it through its profile's script hooks alone."""
from dataclasses import replace
from golden_al.plugin.profile import CheckSupport, DraftLen, DraftLenRule, EngineProfile, Source, Speculation, SyntheticKnob
from golden_al.plugin.values import int_flag

SRC = Source("example/envonly", "envonly.py", "0.1.0")


def script_speculation(flags):
    k = flags.get("--envonly-k")
    return None if k is None else Speculation("envonly", "draft", {"k": k}, None, None, draft_inputs={"--envonly-k": k})


def settings_draft_len(spec):
    k = int_flag(spec.settings.get("k"), "--envonly-k") if spec is not None else None
    if k is None:
        raise ValueError("no --envonly-k")
    return DraftLen(k, "--envonly-k", described=f"envonly --envonly-k={k}", algorithm="draft")


PROFILE = EngineProfile(
    name="envonly", display_name="envonly", algorithms=("draft",),
    draft_len_rules=(DraftLenRule("draft", "k = --envonly-k", source=SRC),),
    check=CheckSupport(
        synthetic_knobs=(SyntheticKnob("ENVONLY_FORCE_AL", "env", "al", source=SRC),),
        synthetic_settings=lambda al, k, **_: {"ENVONLY_FORCE_AL": f"{al:.2f}"},
        script_speculation=script_speculation, script_flags=("--envonly-k",), script_settings="the envonly flags",
        settings_draft_len=settings_draft_len,
    ),
    curve_methods={"draft": "draft-model"}, sources=(SRC,),
)
'''


@pytest.mark.parametrize(("value", "flag", "verdict"), [("7.24", "--envonly-k 7", "match"),
                                                        ("7.24", "--envonly-k 3", "unsafe-value"),
                                                        ("6.00", "--envonly-k 7", "mismatch"),
                                                        ("7.24", "", "undetermined")])
def test_a_shell_pin_of_an_environment_knob_is_read_through_the_profile_alone(tmp_path: Path, value: str, flag: str,
                                                                               verdict: str) -> None:
    """The headline bug of issue 24: a new engine's knob in a shell script said "no pinned value", exit 0.
    An engine declaring only an environment knob and its script hooks (no command-line reader) is found,
    its k read from its own flag, and its pin proven, refused, or left unresolved (never exit 0)."""
    (tmp_path / "envonly_engine.py").write_text(ENV_ONLY)
    folder = tmp_path / "agentic"
    folder.mkdir()
    script = folder / "run.sh"
    script.write_text(f"#!/bin/bash\nexport THINKING_MODE=thinking_off\nexport MODEL={MODEL}\n"
                      f"export ENVONLY_FORCE_AL={value}\nenvonly-serve --model {MODEL} {flag}\n")
    code = ("import json, sys\nfrom golden_al.plugin import registry\n"
            "registry.REGISTRY['envonly'] = 'envonly_engine:PROFILE'\n"
            "from golden_al.cli.main import main\n"
            f"sys.exit(main(['check', {str(script)!r}, '--format', 'json']))\n")
    done = _python(tmp_path, code)
    findings = [f for f in json.loads(done.stdout) if f["engine"] == "envonly"]
    assert [f["verdict"] for f in findings] == [verdict], done.stdout + done.stderr
    assert done.returncode == (0 if verdict == "match" else 1)
