"""InferenceX speedbench cells (``speedbench_<on|off>_mtp<k>``) with the header comments that say
the settings."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from golden_al import plugin

from .imported import import_vllm_bench, log_windows

__all__ = ["import_inferencex"]

_IX_CELL = re.compile(r"^speedbench_(?P<mode>on|off)_mtp(?P<k>\d+)(?:\.json)?$")


_IX_MODE_LINE = re.compile(r"^#\s*thinking_(?P<mode>on|off)\s*:\s*temp\s+(?P<t>\S+)\s+top_p\s+(?P<p>\S+)"
                           r"(?:\s+top_k\s+(?P<k>\S+))?.*?(?:\|\s*chat_template_kwargs:\s*(?P<kw>.*))?$")


_IX_DATASET_LINE = re.compile(r"^#\s*dataset:\s*(?P<cat>\S+)\s*\|\s*output_len:\s*(?P<len>\d+)")


def _inferencex_header(path: Path) -> dict[str, Any]:
    info: dict[str, Any] = {"modes": {}}
    for line in plugin.read_capped(path).decode("utf-8", errors="replace").splitlines()[:40]:
        m = _IX_DATASET_LINE.match(line.strip())
        if m:
            info["category"], info["output_len"] = m.group("cat"), int(m.group("len"))
        m = _IX_MODE_LINE.match(line.strip())
        if m:
            kw_text = (m.group("kw") or "").strip()
            try:
                kw = json.loads(kw_text) if kw_text else {}
            except json.JSONDecodeError:
                kw = {}
            info["modes"][m.group("mode")] = {"temperature": float(m.group("t")), "top_p": float(m.group("p")),
                                              "top_k": int(m.group("k")) if m.group("k") else None, "kwargs": kw}
    return info


def import_inferencex(paths: Sequence[Path], opts: plugin.ImportOptions) -> list[plugin.ImportedRun]:
    """Records from InferenceX speedbench cells (the header comments say the settings)."""
    if len(paths) != 1 or not paths[0].is_dir():
        raise plugin.UsageError("inferencex-speedbench imports one results directory (speedbench_results/)")
    d = paths[0]
    cells = sorted((m.group("mode"), int(m.group("k")), p) for p in d.iterdir() if (m := _IX_CELL.match(p.name)))
    if not cells:
        raise plugin.InputFileError("no speedbench_{on,off}_mtp{K} result file", path=d,
                                    hint="the collector writes them with --result-filename speedbench_${mode}_mtp${mtp}")
    yaml_files = sorted(d.glob("*.yaml"))
    header = _inferencex_header(yaml_files[0]) if yaml_files else {"modes": {}}
    out = []
    for mode, k, bench in cells:
        m = header["modes"].get(mode, {})
        cell_opts = plugin.ImportOptions(
            model=opts.model, draft_method=opts.draft_method or "mtp", draft_len=k, thinking=mode,
            temperature=opts.temperature if opts.temperature is not None else m.get("temperature"),
            top_p=opts.top_p if opts.top_p is not None else m.get("top_p"),
            top_k=opts.top_k if opts.top_k is not None else m.get("top_k"),
            max_tokens=opts.max_tokens or header.get("output_len"),
            dataset=opts.dataset or (f"speed-bench:{header['category']}" if "category" in header else None),
            chat_template_kwargs=opts.chat_template_kwargs or m.get("kwargs") or {})
        log = d / f"server_{mode}_mtp{k}.log"
        use_log = log.exists() and bool(log_windows(log, k))
        out.append(import_vllm_bench([bench], cell_opts, log=log if use_log else None,
                                      what="inferencex-speedbench"))
    return out
