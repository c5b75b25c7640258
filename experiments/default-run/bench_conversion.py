"""A first run's model preparation: the GGUF parsed once per conversion against once per reader.

``golden-al models fetch`` converts each GGUF of the pair once (configuration, tokenizer and a
tensor index proven bit for bit against gguf-py). Five readers need the parsed GGUF: the file's
metadata, transformers' tokenizer and configuration loaders, the tensor index and the reference
tensors; gguf-py parses a 150k-token vocabulary in Python for 10-20 s on 2 cores each time.
``convert._one_parse`` shares one parse among them. This script converts each cached GGUF of the
pair with the sharing (``after``) and with ``_one_parse`` replaced by a no-op (``before``: every
reader parses for itself, as before the change), alternating, in one process, into scratch
folders, and records each run's seconds and the conversion's own timings. Both must write the same
files (the manifests are compared, timings and dates left out).

    python experiments/default-run/bench_conversion.py            # needs the pair in the cache
    python experiments/default-run/bench_conversion.py --repeats 2 --out experiments/default-run/conversion.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from pathlib import Path

from golden_al.cli._common import cache_dir as default_cache_dir
from golden_al.models import convert
from golden_al.provenance import collect

HERE = Path(__file__).resolve().parent
MODELS = ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct")


def _gguf(cache: Path, model: str) -> Path:
    found = sorted((cache / "models" / model).glob("*.gguf"))
    if not found:
        raise SystemExit(f"no GGUF of {model} under {cache / 'models'}: run golden-al models fetch qwen2.5-coder-pair")
    return found[0]


def _comparable(manifest: dict) -> dict:
    out = {k: v for k, v in manifest.items() if k not in ("timings_s", "created")}
    return json.loads(json.dumps(out))


def _convert(gguf: Path, out: Path, *, shared: bool) -> tuple[float, dict]:
    saved = convert._one_parse
    if not shared:
        convert._one_parse = lambda _path: contextlib.nullcontext()  # type: ignore[assignment]
    convert._gguf_metadata.cache_clear()  # a fresh process would parse the header too
    try:
        t0 = time.perf_counter()
        manifest = convert.convert_gguf(gguf, out, weights="gguf", gguf_sha256="0" * 64)
        return time.perf_counter() - t0, manifest
    finally:
        convert._one_parse = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1, help="before/after pairs per model (alternating)")
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=HERE / "conversion.json")
    args = ap.parse_args()
    cache = args.cache_dir or default_cache_dir()
    runs: list[dict] = []
    summary: dict[str, dict] = {}
    for model in MODELS:
        gguf = _gguf(cache, model)
        seconds: dict[str, list[float]] = {"before": [], "after": []}
        manifests: dict[str, dict] = {}
        for rep in range(args.repeats):
            order = ("before", "after") if rep % 2 == 0 else ("after", "before")
            for variant in order:
                with tempfile.TemporaryDirectory(dir=gguf.parent, prefix=".bench-") as tmp:
                    s, manifest = _convert(gguf, Path(tmp) / "gguf-float32", shared=variant == "after")
                seconds[variant].append(round(s, 2))
                manifests[variant] = _comparable(manifest)
                runs.append({"model": model, "variant": variant, "repeat": rep, "seconds": round(s, 2),
                             "timings_s": manifest["timings_s"]})
                print(f"{model} {variant}: {s:.1f} s {manifest['timings_s']}", flush=True)
        if manifests["before"] != manifests["after"]:
            raise SystemExit(f"{model}: the two conversions wrote different manifests")
        b, a = statistics.median(seconds["before"]), statistics.median(seconds["after"])
        summary[model] = {"before_median_s": b, "after_median_s": a, "ratio": round(b / a, 2),
                          "same_manifest": True}
    doc = {"what": "GGUF conversion (weights='gguf'): every reader parses (before) vs one shared parse (after)",
           "summary": summary, "runs": runs, "provenance": collect(argv=["bench_conversion.py"])}
    args.out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
