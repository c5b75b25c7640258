"""A measurement cell on disk: its plan (what is measured, :class:`CellPlan`), the request body it sends,
its fingerprint (``cell.json``), its rows (``requests.jsonl``, appended, torn tails repaired), its lock,
and what resuming it means (:func:`check_resume`). Running it: :mod:`golden_al.measure.server`."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import (
    SchemaError,
    UsageError,
)
from golden_al.measure.records import read_request_results, repair_jsonl_tail
from golden_al.measure.schema import (
    MEASUREMENT_FILE,
    REQUESTS_FILE,
    DatasetInfo,
    ModelInfo,
    RequestResult,
    SamplingInfo,
)
from golden_al.measure.totals import line_indices
from golden_al.plugin.sources import Source
from golden_al.provenance import atomic_write_text
from golden_al.servers.pipeline import Schedule

__all__ = [
    "CELL_FILE",
    "SESSION_FILE",
    "CellPlan",
    "ChatPrompt",
    "cell_lock",
    "check_resume",
    "request_body",
    "set_aside_session",
    "validate_cell_dir",
]

CELL_FILE = "cell.json"


_CELL_SCHEMA = "golden-al/server-cell/1"


ProgressFn = Callable[..., None]


@dataclass(frozen=True)
class ChatPrompt:
    """One prompt: its position, the chat messages sent, and the hash recorded."""

    index: int
    messages: tuple[Mapping[str, Any], ...]
    prompt_hash: str
    text: str | None = None
    """The rendered prompt, for SGLang ``/generate`` (None when not rendered)."""


@dataclass
class CellPlan:
    """Everything that defines one cell's measurement."""

    engine: str
    draft_len: int
    thinking: str
    sampling: SamplingInfo
    chat_template_kwargs: dict[str, Any]
    prompts: list[ChatPrompt]
    dataset: DatasetInfo
    target: ModelInfo
    draft: ModelInfo
    draft_method: str
    served_model: str
    concurrency: int = 1
    save_text: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict)
    bootstrap_seed: int = 0
    request_rate: float | None = None
    """Poisson arrivals per second (None: as fast as ``concurrency`` allows)."""
    warmup: int = 0
    """Requests sent first and left out of the record."""
    arrival_seed: int = 0
    scrape_interval_s: float = 1.0
    """Counter sources at concurrency > 1: seconds between two scrapes (one window)."""
    num_servers: int = 1
    """Data-parallel replicas the prompts are sharded over (set by :func:`measure_cell`)."""
    waves: bool = False
    """The old schedule (waves of ``concurrency`` that wait for their slowest member); for comparisons."""
    tokenizer: str | None = None
    """The served model's ``tokenizer.json`` (or its folder): each answer's text is re-tokenized and checked
    against its reported token count (:mod:`golden_al.servers.retokenize`); not part of the fingerprint."""
    servers: list[dict[str, Any]] = field(default_factory=list)
    """What each server reports of itself (:func:`golden_al.servers.replicas.identity`): part of the
    fingerprint, so a resumed run against another configuration is refused."""

    @property
    def schedule(self) -> Schedule:
        """How requests are sent (validated)."""
        return Schedule(concurrency=self.concurrency, request_rate=self.request_rate, seed=self.arrival_seed,
                        warmup=self.warmup)

    def windowed(self, source: Source) -> bool:
        """Whether counts come from timed counter windows (a counter source at concurrency > 1)."""
        return not source.per_request and self.concurrency > 1 and not self.waves

    def fingerprint(self, source: Source) -> dict[str, Any]:
        """What must not change between a run and its resumption."""
        return {
            "engine": self.engine,
            "draft_len": self.draft_len,
            "thinking": self.thinking,
            "sampling": self.sampling.model_dump(mode="json"),
            "chat_template_kwargs": self.chat_template_kwargs,
            "dataset_hash": self.dataset.hash,
            "num_prompts": len(self.prompts),
            "served_model": self.served_model,
            "al_source": source.name,
            "unit_size": self.unit_size(source),
            "extra_body": self.extra_body,
            **({"servers": self.num_servers} if self.num_servers > 1 else {}),
            **({"server_identity": self.servers} if self.servers else {}),
        }

    def unit_size(self, source: Source) -> int:
        """Requests per unit: 1, the concurrency for counter waves, 0 for timed counter windows."""
        if source.per_request:
            return 1
        return 0 if self.windowed(source) else max(1, self.concurrency)


def request_body(plan: CellPlan, prompt: ChatPrompt, source: Source) -> dict[str, Any]:
    """The JSON body sent for ``prompt``."""
    s = plan.sampling
    seed = None if s.seed is None else int(s.seed) + prompt.index
    if source.needs_text:
        if prompt.text is None:
            raise UsageError(f"--al-source {source.name} needs rendered prompts (text), but prompt "
                             f"{prompt.index} has only chat messages", hint="pass --tokenizer DIR, or use another "
                             "--al-source")
        body = source.text_body(prompt.text, s, seed)
    else:
        body = {"model": plan.served_model, "messages": [dict(m) for m in prompt.messages],
                "max_tokens": s.max_tokens, "temperature": s.temperature, "top_p": s.top_p, "stream": False}
        if s.top_k is not None:
            body["top_k"] = s.top_k
        if seed is not None:
            body["seed"] = seed
        if plan.chat_template_kwargs:
            body["chat_template_kwargs"] = dict(plan.chat_template_kwargs)
    body.update(source.payload_extra())
    body.update(plan.extra_body)
    return body


# ---------------------------------------------------------------------------- files
@contextlib.contextmanager
def cell_lock(directory: Path) -> Iterator[None]:
    """The cell's lock (:func:`golden_al.locks.directory_lock`): a second process measuring into
    the same folder waits for the first, up to the lock timeout, and is told who holds it."""
    from golden_al.locks import directory_lock

    with directory_lock(directory, purpose="measure"):
        yield


def validate_cell_dir(directory: Path, *, root: Path | None = None) -> None:
    """Read and check a cell's files before anything is sent: ``cell.json`` parses, every line of
    ``requests.jsonl`` is a result (only a torn last line, written without its newline, is
    tolerated), no prompt is counted twice, and no file is a link that leads out of ``root``.

    Raises:
        SchemaError: a file does not parse (file and line).
        UsageError: a file is a symbolic link out of the output directory.
    """
    base = (root or directory).resolve()
    for name in (CELL_FILE, REQUESTS_FILE, MEASUREMENT_FILE):
        f = directory / name
        if f.is_symlink():
            target = f.resolve()
            if not target.is_relative_to(base):
                raise UsageError(f"{f} is a link to {target}, outside {base}: golden-al does not append to "
                                 "files elsewhere", hint="replace the link with the file itself, or use another --out")
    cell_file = directory / CELL_FILE
    if cell_file.exists():
        try:
            json.loads(cell_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SchemaError(f"cannot read the cell plan: {exc}", path=cell_file,
                              hint="the cell was edited or damaged; measure into another --out") from None
    read_request_results(directory / REQUESTS_FILE)  # only a torn last line tolerated; a repeated row refused


def check_resume(directory: Path, plan: CellPlan, source: Source, resume: bool) -> list[RequestResult]:
    """The rows already in a cell (none for a new one), after checking that resuming it measures the same
    thing (its ``cell.json`` fingerprint) and repairing a torn last line.

    Raises:
        UsageError: a cell that holds a measurement without ``resume``, or whose fingerprint differs.
    """
    cell_file = directory / CELL_FILE
    req_file = directory / REQUESTS_FILE
    fingerprint = plan.fingerprint(source)
    if cell_file.exists() or req_file.exists():
        if not resume:
            raise UsageError(f"{directory} already holds a measurement",
                             hint="pass --resume to continue it, or choose another --out")
        validate_cell_dir(directory)
        if cell_file.exists():
            stored = json.loads(cell_file.read_text(encoding="utf-8")).get("fingerprint", {})
            if "server_identity" not in stored:  # a cell started before servers were fingerprinted
                fingerprint = {k: v for k, v in fingerprint.items() if k != "server_identity"}
            diff = sorted(k for k in set(stored) | set(fingerprint) if stored.get(k) != fingerprint.get(k))
            grown = (set(diff) <= {"dataset_hash", "num_prompts"}
                     and int(fingerprint.get("num_prompts") or 0) > int(stored.get("num_prompts") or 0))
            if "server_identity" in diff:
                raise UsageError(f"cannot resume {directory}: the server is not the one measured before ("
                                 + _identity_diff(stored.get("server_identity"), fingerprint.get("server_identity"))
                                 + ")", hint="resume against the same server configuration, or measure the new "
                                             "one into another --out")
            if diff and not grown:  # a grown prompt set continues (the measured prompts are checked below)
                details = "; ".join(f"{k}: was {stored.get(k)!r}, now {fingerprint.get(k)!r}" for k in diff)
                raise UsageError(f"cannot resume {directory}: the settings changed ({details})",
                                 hint="resume with the same options, or measure into another --out")
    if repair_jsonl_tail(req_file):
        pass  # the torn line was never acknowledged; its unit is redone
    results = read_request_results(directory / REQUESTS_FILE)
    by_index = {p.index: p for p in plan.prompts}
    for r in results:
        hashes = r.extra.get("prompt_hashes") if r.extra and "unit" in r.extra else [r.prompt_hash]
        for i, h in zip(line_indices(r), hashes or [], strict=False):
            if i not in by_index or by_index[i].prompt_hash != h:
                raise UsageError(f"cannot resume {directory}: prompt {i} differs from the one measured before",
                                 hint="the prompt set changed; measure into another --out")
        if r.draft_len != plan.draft_len:
            raise UsageError(f"cannot resume {directory}: it holds results for k={r.draft_len}, not {plan.draft_len}")
    atomic_write_text(cell_file, json.dumps({"schema": _CELL_SCHEMA, "fingerprint": fingerprint}, indent=2) + "\n")
    return results


def _identity_diff(before: Any, now: Any) -> str:
    """Which server fields differ, each with both values."""
    before = before or [{}]
    now = now or [{}]
    parts = []
    for i in range(max(len(before), len(now))):
        a = before[i] if i < len(before) else {}
        b = now[i] if i < len(now) else {}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                parts.append(f"{'server ' + str(i) + ' ' if len(now) > 1 else ''}{key}: was {a.get(key)!r}, now "
                             f"{b.get(key)!r}")
    return "; ".join(parts[:6]) or "the number of servers changed"


SESSION_FILE = "windows.session.jsonl"


def set_aside_session(directory: Path, note: Callable[[str], None] | None = None) -> str | None:
    """Move a dead counter session's windows out of the way; returns a warning or None."""
    moved = []
    lines = 0
    for staging in sorted(directory.glob("windows.session*.jsonl")):
        lines += sum(1 for _ in staging.open("rb"))
        dest = directory / f"windows.discarded-{int(time.time())}-{staging.name.removeprefix('windows.')}"
        os.replace(staging, dest)
        moved.append(dest.name)
    if not moved:
        return None
    return (f"an interrupted counter session's {lines} windows were set aside ({', '.join(moved)}) and its prompts "
            "sent again: requests in flight at the interruption make its windows unattributable")
