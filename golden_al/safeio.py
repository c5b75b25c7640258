"""Bounded, safe input and output: every file golden-al reads or writes goes through here.

Reading (fail closed: anything that cannot be read in full, within bounds, raises
:class:`~golden_al.errors.UnreadableInputError`, exit 2, whose ``reason`` names the problem):

* :func:`open_regular` opens only regular files. It ``stat``s first, so a FIFO, a device
  (``/dev/zero``), a socket or a directory is refused **without being opened**; the open
  itself uses ``O_NONBLOCK | O_NOCTTY`` and is re-checked with ``fstat`` (same inode, still
  regular), so a file swapped for a FIFO in between cannot block either.
* :func:`read_bytes` / :func:`read_text` read at most ``max_bytes`` (over it is an error,
  never a truncation or a skip). :func:`decode_text` detects byte-order marks (UTF-8,
  UTF-16, UTF-32) and BOM-less UTF-16, decodes strictly, and refuses NUL characters.
* :func:`iter_lines` streams a log in constant memory: a byte cap on the whole file and
  on each line (longer lines are cut, their rest skipped, and counted).
* :func:`load_yaml_documents` (PyYAML, C parser when present) composes nodes from parser
  events in Python with an explicit stack, so nesting is limited to ``max_depth`` before
  anything recurses (libyaml's own composer overflows the C stack near 100,000 levels);
  :func:`load_yaml_roundtrip` (ruamel.yaml, for rewrites with comments) checks its node
  graph before constructing. Both refuse alias expansion beyond ``alias_budget`` nodes
  ("billion laughs"), recursive aliases and tags outside the safe schema.
  :func:`load_json` bounds depth likewise.

Writing: :func:`atomic_write_bytes` is the one atomic writer (see its docstring for modes,
symlinks, read-only targets and hard links). Locks of folders that several processes write
(the golden store, a measurement cell, a model cache) live in :mod:`golden_al.locks`.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError, ReadOnlyTargetError, UnreadableInputError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LOG_BYTES",
    "DEFAULT_MAX_RECORD_BYTES",
    "JSON_MAX_DEPTH",
    "MAX_LINE_BYTES",
    "ROUNDTRIP_MAX_BYTES",
    "YAML_ALIAS_BUDGET",
    "YAML_MAX_DEPTH",
    "LineStats",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_depth",
    "check_node_graph",
    "compose_yaml",
    "decode_text",
    "file_kind",
    "iter_lines",
    "load_json",
    "load_yaml_documents",
    "load_yaml_roundtrip",
    "open_regular",
    "read_bytes",
    "read_json",
    "read_text",
    "safe_load_yaml",
    "yaml_depth_bound",
]

#: Byte cap of a structured input (recipe, config, script, curve, record, JSON): 5x the
#: largest file of InferenceX (``perf-changelog.yaml``, 0.4 MiB), and small enough that
#: parsing a hostile file under it stays within seconds and a few hundred MB.
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
#: Byte cap of a file that is loaded with ruamel.yaml (recipes for ``inject``, golden curves):
#: ruamel's pure-Python parser is slow (``inject`` parses a recipe several times; a 240 KiB
#: recipe took 78 s on a loaded 2-core machine), and InferenceX's largest recipe is 9 KiB and
#: its largest golden file 2 KiB.
ROUNDTRIP_MAX_BYTES = 64 * 1024
#: Byte cap of a streamed input (server log, ``/metrics`` snapshot).
DEFAULT_MAX_LOG_BYTES = 256 * 1024 * 1024
#: Byte cap of a measurement record (``measurement.json``, ``requests.jsonl``).
DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024
#: Longest line :func:`iter_lines` keeps; the rest of a longer line is skipped.
MAX_LINE_BYTES = 1024 * 1024
#: Deepest YAML nesting accepted (InferenceX's deepest recipe nests 9 levels).
YAML_MAX_DEPTH = 100
#: Nodes that alias expansion may add to a YAML document (a "billion laughs" adds 10^9).
YAML_ALIAS_BUDGET = 100_000
#: Deepest JSON nesting accepted.
JSON_MAX_DEPTH = 100

_KIND_NAMES = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
    stat.S_IFLNK: "a symbolic link",
}


def _reason_of(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission-denied"
    if exc.errno == errno.ENOENT:
        return "not-found"
    if exc.errno == errno.ELOOP:
        return "symlink-loop"
    return "os-error"


def _os_error(path: str | Path, exc: OSError, what: str = "cannot read") -> UnreadableInputError:
    reason = _reason_of(exc)
    hint = {"permission-denied": "make the file readable by the user running golden-al",
            "not-found": "check the path (a dangling symbolic link also ends here)"}.get(reason)
    return UnreadableInputError(f"{what}: {exc.strerror or exc}", path=path, reason=reason, hint=hint)


def file_kind(st: os.stat_result) -> str:
    """What a stat result describes, in words ("a FIFO (named pipe)", "a regular file", ...)."""
    return _KIND_NAMES.get(stat.S_IFMT(st.st_mode), "a regular file" if stat.S_ISREG(st.st_mode) else "a special file")


def _too_large(path: str | Path, size: int, max_bytes: int) -> UnreadableInputError:
    return UnreadableInputError(
        f"file is {size:,} bytes, over the {max_bytes:,}-byte cap", path=path, reason="too-large",
        hint="a larger cap can be chosen (golden-al check --max-file-size), but nothing over it is ever read",
    )


def open_regular(path: str | Path) -> int:
    """A read-only descriptor of the regular file ``path`` (symbolic links followed).

    Raises:
        UnreadableInputError: missing, permission denied, or not a regular file (a FIFO,
            device, socket or directory is refused before any open).
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _os_error(path, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise UnreadableInputError(f"not a regular file: it is {file_kind(st)}", path=path, reason="not-regular",
                                   hint="only regular files are read (nothing is opened on pipes or devices)")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _os_error(path, exc) from None
    fst = os.fstat(fd)
    if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise UnreadableInputError("the file changed while it was opened (no longer the same regular file)",
                                   path=path, reason="not-regular")
    os.set_blocking(fd, True)
    return fd


def read_bytes(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """All bytes of a regular file, at most ``max_bytes`` (more is an error, not a truncation)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise _too_large(path, size, max_bytes)
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise _os_error(path, exc) from None
    if len(data) > max_bytes:
        raise _too_large(path, len(data), max_bytes)
    return data


def _sniff_encoding(data: bytes) -> tuple[str, int]:
    """(codec, BOM length) from byte-order marks, or BOM-less UTF-16 by its NUL pattern."""
    for bom, codec in ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
                       (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                       (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            return codec, len(bom)
    head = data[:4096]
    if len(head) >= 4:
        even, odd = head[0::2], head[1::2]
        if odd.count(0) >= 0.4 * len(odd) and even.count(0) == 0:
            return "utf-16-le", 0
        if even.count(0) >= 0.4 * len(even) and odd.count(0) == 0:
            return "utf-16-be", 0
    return "utf-8", 0


def decode_text(data: bytes, *, path: str | Path | None = None) -> str:
    """Decode file bytes strictly: BOMs and UTF-16/32 detected; NUL characters refused.

    Raises:
        UnreadableInputError: not decodable, or a NUL character (``reason`` ``not-decodable``
            or ``nul-byte``; the line is named).
    """
    codec, skip = _sniff_encoding(data)
    try:
        text = data[skip:].decode(codec)
    except UnicodeDecodeError as exc:
        line = data[: skip + exc.start].count(b"\n") + 1 if codec == "utf-8" else None
        raise UnreadableInputError(f"not decodable as {codec.upper()} (byte {skip + exc.start}: {exc.reason})",
                                   path=path, line=line, reason="not-decodable",
                                   hint="save the file as UTF-8 (or UTF-16 with a byte-order mark)") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise UnreadableInputError("NUL character in a text file", path=path, line=text.count("\n", 0, nul) + 1,
                                   reason="nul-byte", hint="a config or script holds no NUL bytes; remove them")
    return text


def read_text(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """:func:`read_bytes` then :func:`decode_text`."""
    return decode_text(read_bytes(path, max_bytes=max_bytes), path=path)


@dataclass
class LineStats:
    """What :func:`iter_lines` saw: bytes read and lines cut at :data:`MAX_LINE_BYTES`."""

    bytes_read: int = 0
    lines: int = 0
    cut_lines: int = 0


def iter_lines(path: str | Path, *, max_bytes: int = DEFAULT_MAX_LOG_BYTES, max_line_bytes: int = MAX_LINE_BYTES,
               stats: LineStats | None = None, keep: Any = None) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of a log, streamed in constant memory.

    UTF-16/32 files (with a BOM) are decoded as such, others as UTF-8 with replacement
    characters (a log line is matched by pattern, never trusted as config). ``keep``, a
    callable on the raw bytes of a line, skips lines cheaply before decoding.

    Raises:
        UnreadableInputError: not a regular file, unreadable, or over ``max_bytes``.
    """
    st = stats if stats is not None else LineStats()
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise _too_large(path, size, max_bytes)
        head = fh.read(4)
        codec, skip = _sniff_encoding(head + fh.read(4092))
        fh.seek(skip)
        if codec != "utf-8":
            import io

            reader = io.TextIOWrapper(fh, encoding=codec, errors="replace", newline=None)
            number = 0
            while True:
                line = reader.readline(max_line_bytes)
                if not line:
                    break
                st.bytes_read = fh.tell()
                if st.bytes_read > max_bytes:
                    raise _too_large(path, st.bytes_read, max_bytes)
                number += 1
                if not line.endswith("\n"):
                    rest = reader.readline(max_line_bytes)
                    st.cut_lines += int(bool(rest))
                    while rest and not rest.endswith("\n"):
                        rest = reader.readline(max_line_bytes)
                st.lines = number
                yield number, line.rstrip("\r\n").replace("\x00", "")
            return
        number = 0
        while True:
            raw = fh.readline(max_line_bytes)
            if not raw:
                break
            st.bytes_read += len(raw)
            if not raw.endswith(b"\n"):
                cut = False
                while True:  # skip the rest of an over-long line
                    more = fh.readline(max_line_bytes)
                    if not more:
                        break
                    cut = True
                    st.bytes_read += len(more)
                    if st.bytes_read > max_bytes:
                        raise _too_large(path, st.bytes_read, max_bytes)
                    if more.endswith(b"\n"):
                        break
                st.cut_lines += int(cut)
            if st.bytes_read > max_bytes:
                raise _too_large(path, st.bytes_read, max_bytes)
            number += 1
            st.lines = number
            if keep is not None and not keep(raw):
                continue
            yield number, raw.decode("utf-8", errors="replace").rstrip("\r\n").replace("\x00", "")


# ------------------------------------------------------------------------------- YAML


def _yaml_error(message: str, path: str | Path | None, line: int | None, reason: str) -> UnreadableInputError:
    return UnreadableInputError(message, path=path, line=line, reason=reason,
                                hint="golden-al reads plain YAML: no deep nesting, no alias expansion beyond "
                                     f"{YAML_ALIAS_BUDGET:,} nodes, no language-specific tags")


def check_node_graph(root: Any, *, path: str | Path | None = None, max_depth: int = YAML_MAX_DEPTH,
                     alias_budget: int = YAML_ALIAS_BUDGET, scalar_keys: bool = False) -> None:
    """Refuse a composed YAML node graph (PyYAML or ruamel nodes) that is too deep, recursive,
    or whose aliases would expand beyond ``alias_budget`` nodes; with ``scalar_keys``, also a
    mapping key that is itself a collection (ruamel hashes nested complex keys in time
    exponential in their depth). Iterative and linear in the number of distinct nodes.

    Raises:
        UnreadableInputError: ``reason`` ``too-deep``, ``alias-budget``, ``recursive-alias``
            or ``parse-error`` (a complex key).
    """
    if root is None:
        return

    def line_of(node: Any) -> int | None:
        line = getattr(getattr(node, "start_mark", None), "line", None)
        return None if line is None else line + 1

    size: dict[int, int] = {}  # expanded node count of each distinct node's subtree
    height: dict[int, int] = {}
    on_path: set[int] = set()
    distinct = 0
    # (node, None) to visit; (node, children) once its children are pushed (post-order step)
    stack: list[tuple[Any, list[Any] | None]] = [(root, None)]
    pop, push = stack.pop, stack.append
    while stack:
        node, kids = pop()
        key = id(node)
        if kids is not None:
            total, tallest = 1, 0
            for c in kids:
                ck = id(c)
                total += size[ck]
                if height[ck] > tallest:
                    tallest = height[ck]
            size[key] = total
            height[key] = tallest + 1
            on_path.discard(key)
            if tallest + 1 > max_depth:
                raise _yaml_error(f"nested deeper than {max_depth} levels", path, line_of(node), "too-deep")
            if total - distinct > alias_budget:
                raise _yaml_error(f"aliases expand to more than {alias_budget:,} nodes (an alias bomb?)", path,
                                  line_of(node), "alias-budget")
            continue
        if key in size:
            continue
        if key in on_path:
            raise _yaml_error("recursive alias (a node that contains itself)", path, line_of(node), "recursive-alias")
        distinct += 1
        value = getattr(node, "value", None)
        if not isinstance(value, list):  # a scalar: a leaf
            size[key] = height[key] = 1
            continue
        on_path.add(key)
        children: list[Any] = []
        for item in value:
            if isinstance(item, tuple):
                if scalar_keys and isinstance(getattr(item[0], "value", None), list):
                    raise _yaml_error("a mapping key that is itself a mapping or sequence", path, line_of(item[0]),
                                      "parse-error")
                children.extend(item)
            else:
                children.append(item)
        if len(on_path) > max_depth + 1:
            raise _yaml_error(f"nested deeper than {max_depth} levels", path, line_of(node), "too-deep")
        push((node, children))
        for c in children:
            push((c, None))


_LOADER: Any = None


def _pyyaml_loader() -> Any:
    """PyYAML's safe loader (libyaml's C parser and composer when present) whose resolver
    remembers the tag of each plain scalar it has resolved: with no path resolvers (the safe
    schema has none) that tag depends on the text alone, and the same keys and values recur
    in every config."""
    global _LOADER
    if _LOADER is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        memo: dict[str, str] = {}
        scalar = yaml.ScalarNode

        class _Loader(base):  # type: ignore[misc, valid-type]
            def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
                if kind is scalar and implicit[0] and not self.yaml_path_resolvers:
                    tag = memo.get(value)
                    if tag is None:
                        tag = super().resolve(kind, value, implicit)
                        if len(memo) < 65536 and len(value) < 256:
                            memo[value] = tag
                    return tag
                return super().resolve(kind, value, implicit)

        _LOADER = _Loader
    return _LOADER


_TAG = "tag:yaml.org,2002:"


def _construct(loader: Any, root: Any) -> Any:
    """What ``loader.construct_document(root)`` returns (PyYAML safe schema), built without
    its per-node overhead: plain maps, sequences, strings, ints, floats, bools and nulls
    are built here, in one iterative pass over the distinct nodes (an alias is the same
    object, as PyYAML makes it); any other tag, and a mapping with a ``<<`` merge key, is
    handed to the safe constructor itself (so its errors and semantics are PyYAML's)."""
    import yaml
    from yaml.constructor import ConstructorError

    str_tag, int_tag, float_tag = _TAG + "str", _TAG + "int", _TAG + "float"
    bool_tag, null_tag, map_tag, seq_tag, merge_tag = (_TAG + "bool", _TAG + "null", _TAG + "map", _TAG + "seq",
                                                       _TAG + "merge")
    scalar_node, seq_node, map_node = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode
    memo: dict[int, Any] = {}

    def start(node: Any) -> tuple[Any, bool]:
        """(object, complete): a collection comes back empty, to be filled from the stack."""
        cls, tag = type(node), node.tag
        if cls is scalar_node:
            if tag == str_tag:
                return node.value, True
            if tag == int_tag:
                return loader.construct_yaml_int(node), True
            if tag == float_tag:
                return loader.construct_yaml_float(node), True
            if tag == bool_tag:
                return loader.construct_yaml_bool(node), True
            if tag == null_tag:
                return None, True
        key = id(node)
        if key in memo:
            return memo[key], True
        if cls is seq_node and tag == seq_tag:
            memo[key] = []
            return memo[key], False
        if cls is map_node and tag == map_tag and not any(k.tag == merge_tag for k, _ in node.value):
            memo[key] = {}
            return memo[key], False
        memo[key] = loader.construct_object(node, deep=True)
        return memo[key], True

    try:
        obj, complete = start(root)
        stack: list[tuple[Any, Any]] = [] if complete else [(root, obj)]
        while stack:
            node, target = stack.pop()
            if type(target) is list:
                for child in node.value:
                    value, complete = start(child)
                    target.append(value)
                    if not complete:
                        stack.append((child, value))
                continue
            for key_node, value_node in node.value:
                k, complete = start(key_node)
                if not complete:  # a collection as a key: a list or dict, which PyYAML refuses too
                    raise ConstructorError("while constructing a mapping", node.start_mark, "found unhashable key",
                                           key_node.start_mark)
                try:
                    hash(k)
                except TypeError:
                    raise ConstructorError("while constructing a mapping", node.start_mark, "found unhashable key",
                                           key_node.start_mark) from None
                value, complete = start(value_node)
                target[k] = value
                if not complete:
                    stack.append((value_node, value))
        return obj
    finally:
        loader.constructed_objects = {}
        loader.recursive_objects = {}
        loader.state_generators = []


def _compose_events(loader: Any, *, path: str | Path | None, max_depth: int) -> Any:
    """One document's node graph from the loader's events, with an explicit stack."""
    import yaml
    from yaml.composer import ComposerError

    start = loader.get_event()  # DocumentStartEvent
    anchors: dict[str, Any] = {}
    stack: list[list[Any]] = []  # [node, pending mapping key]
    root: Any = None

    def attach(node: Any) -> None:
        nonlocal root
        if not stack:
            root = node
            return
        frame = stack[-1]
        if isinstance(frame[0], yaml.SequenceNode):
            frame[0].value.append(node)
        elif frame[1] is None:
            frame[1] = node
        else:
            frame[0].value.append((frame[1], node))
            frame[1] = None

    while True:
        event = loader.get_event()
        if isinstance(event, yaml.DocumentEndEvent):
            break
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise ComposerError(None, None, f"found undefined alias {event.anchor!r}", event.start_mark)
            attach(anchors[event.anchor])
            continue
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            done = stack.pop()[0]
            done.end_mark = event.end_mark
            attach(done)
            continue
        tag = event.tag
        node: Any
        if isinstance(event, yaml.ScalarEvent):
            if tag is None or tag == "!":
                tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        elif isinstance(event, yaml.SequenceStartEvent):
            if tag is None or tag == "!":
                tag = loader.resolve(yaml.SequenceNode, None, event.implicit)
            node = yaml.SequenceNode(tag, [], event.start_mark, None, flow_style=event.flow_style)
        elif isinstance(event, yaml.MappingStartEvent):
            if tag is None or tag == "!":
                tag = loader.resolve(yaml.MappingNode, None, event.implicit)
            node = yaml.MappingNode(tag, [], event.start_mark, None, flow_style=event.flow_style)
        else:  # pragma: no cover - the parser emits no other event inside a document
            raise ComposerError(None, None, f"unexpected {type(event).__name__}", event.start_mark)
        if event.anchor is not None:
            anchors[event.anchor] = node
        if isinstance(node, yaml.ScalarNode):
            attach(node)
        else:
            stack.append([node, None])
            if len(stack) > max_depth:
                raise _yaml_error(f"nested deeper than {max_depth} levels", path, event.start_mark.line + 1,
                                  "too-deep")
    del start
    return root


_BLOCK_LEAD = re.compile(r"^(?:[ ]*[-?][ ]+)*[ ]*", re.MULTILINE)
_FLOW = re.compile(r"[\[\]{}]")
#: Depth bound under which libyaml's own (recursive, C) composer is safe and used.
_C_COMPOSE_SAFE = 1000


#: An alias token: '*' then an anchor character (YAML 1.2 ns-anchor-char: no space, no flow indicator).
_ALIAS_TOKEN = re.compile(r"\*[^\s\[\]{},]")


def may_alias(text: str) -> bool:
    """False only when ``text`` holds no YAML alias (no anchor, or no ``*name`` token anywhere):
    then nothing can expand or recurse, and the node graph is a tree."""
    return "&" in text and _ALIAS_TOKEN.search(text) is not None


def yaml_depth_bound(text: str) -> int:
    """A cheap upper bound of a YAML text's nesting depth (over-estimates, never under).

    Block nesting needs more indentation or a ``-``/``?`` indicator on the line, and at
    most one sequence per indentation level sits at its parent key's indentation, so it is
    at most twice the longest run of leading spaces and indicators, plus one; flow nesting
    is at most the running count of open brackets (quotes ignored, which only over-counts).
    """
    block = max((len(m.group(0)) for m in _BLOCK_LEAD.finditer(text)), default=0)
    flow = top = 0
    for m in _FLOW.finditer(text):
        flow = flow + 1 if m.group(0) in "[{" else max(flow - 1, 0)
        top = max(top, flow)
    return 2 * block + 2 + top


#: Flow collections ('{...}', '[...]') nested deeper than this are refused before ruamel.yaml
#: reads them: its pure-Python parser takes exponential time on nested flow mappings
#: ('{{{{a: 1}}}}' at depth 18 ran for minutes). Real recipes and curves nest 1-3 deep.
ROUNDTRIP_MAX_FLOW_DEPTH = 8


def _flow_depth(text: str) -> int:
    """An upper bound of the flow-collection nesting (quotes ignored, which only over-counts)."""
    flow = top = 0
    for m in _FLOW.finditer(text):
        flow = flow + 1 if m.group(0) in "[{" else max(flow - 1, 0)
        top = max(top, flow)
    return top


def _marked(exc: Any) -> int | None:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def load_yaml_documents(text: str, *, path: str | Path | None = None, max_depth: int = YAML_MAX_DEPTH,
                        alias_budget: int = YAML_ALIAS_BUDGET, construct: bool = True) -> list[tuple[Any, Any]]:
    """``(data, node)`` of every document of ``text`` (PyYAML safe schema), bounded
    (``construct=False``: nodes only, data None).

    Raises:
        UnreadableInputError: not valid YAML (``reason`` ``parse-error`` with the line), a
            tag outside the safe schema, too deep, an alias bomb, or a recursive alias.
    """
    import yaml

    loader = _pyyaml_loader()(text)
    out: list[tuple[Any, Any]] = []
    bound = yaml_depth_bound(text)
    fast = bound <= _C_COMPOSE_SAFE  # libyaml's composer is safe at this depth; else compose in Python
    graph = may_alias(text) or bound > max_depth  # no alias: nothing expands; shallow: no depth to check
    try:
        if fast:
            while loader.check_node():
                node = loader.get_node()
                if graph:
                    check_node_graph(node, path=path, max_depth=max_depth, alias_budget=alias_budget)
                out.append((None if node is None or not construct else _construct(loader, node), node))
            return out
        loader.get_event()  # StreamStartEvent
        while not loader.check_event(yaml.StreamEndEvent):
            node = _compose_events(loader, path=path, max_depth=max_depth)
            check_node_graph(node, path=path, max_depth=max_depth, alias_budget=alias_budget)
            out.append((None if node is None or not construct else _construct(loader, node), node))
        return out
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UnreadableInputError(f"not valid YAML: {problem}", path=path, line=_marked(exc), reason="parse-error",
                                   hint="fix the YAML at that line (tabs are not allowed in indentation; "
                                        "language tags such as !!python/... are never read)") from None
    except RecursionError:
        raise _yaml_error("nested too deep", path, None, "too-deep") from None
    finally:
        loader.dispose()


def compose_yaml(text: str, *, path: str | Path | None = None) -> Any:
    """The node graph of the first document of ``text`` (None when empty), bounded."""
    import yaml

    loader = _pyyaml_loader()(text)
    try:
        loader.get_event()
        if loader.check_event(yaml.StreamEndEvent):
            return None
        node = _compose_events(loader, path=path, max_depth=YAML_MAX_DEPTH)
        check_node_graph(node, path=path)
        return node
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UnreadableInputError(f"not valid YAML: {problem}", path=path, line=_marked(exc),
                                   reason="parse-error") from None
    finally:
        loader.dispose()


def safe_load_yaml(text: str, *, path: str | Path | None = None) -> Any:
    """The single document of ``text`` (None when empty), as :func:`load_yaml_documents` bounds it."""
    docs = load_yaml_documents(text, path=path)
    if len(docs) > 1:
        raise UnreadableInputError(f"{len(docs)} YAML documents where one was expected", path=path,
                                   reason="parse-error", hint="remove the extra '---' documents")
    return docs[0][0] if docs else None


def _prescan(text: str, *, path: str | Path | None, max_depth: int, alias_budget: int) -> None:
    """Depth and alias bounds from libyaml's fast parser before ruamel's recursive composer
    runs (which takes seconds to reach its recursion limit on a deep input). Syntax errors
    are left for ruamel to report in its own words."""
    import yaml

    if _flow_depth(text) > ROUNDTRIP_MAX_FLOW_DEPTH:
        raise _yaml_error(f"flow collections ({{...}} or [...]) nested more than {ROUNDTRIP_MAX_FLOW_DEPTH} deep",
                          path, None, "too-deep")
    shallow = yaml_depth_bound(text) <= max_depth
    if not may_alias(text) and shallow:
        return
    try:
        load_yaml_documents(text, path=path, max_depth=max_depth, alias_budget=alias_budget, construct=False)
    except UnreadableInputError as exc:
        # A deep text that is not even valid YAML is refused here: ruamel's pure-Python
        # parser takes exponential time on nested flow mappings ('{{{{...') before failing.
        if exc.reason != "parse-error" or not shallow:
            raise
    except yaml.YAMLError as exc:
        if not shallow:
            raise UnreadableInputError(f"invalid YAML: {exc}", path=path, reason="parse-error") from None
        return


def load_yaml_roundtrip(text: str, *, path: str | Path | None = None, allow_duplicate_keys: bool = False,
                        max_depth: int = YAML_MAX_DEPTH, alias_budget: int = YAML_ALIAS_BUDGET) -> Any:
    """ruamel.yaml round-trip load (comments and line numbers kept), bounded like PyYAML.

    Raises:
        UnreadableInputError: not valid YAML (with the line), too deep, an alias bomb.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.constructor import RoundTripConstructor
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    class _Bounded(RoundTripConstructor):  # type: ignore[misc]
        def construct_document(self, node: Any) -> Any:
            check_node_graph(node, path=path, max_depth=max_depth, alias_budget=alias_budget, scalar_keys=True)
            return super().construct_document(node)

    _prescan(text, path=path, max_depth=max_depth, alias_budget=alias_budget)
    yaml = YAML(typ="rt")
    yaml.Constructor = _Bounded
    yaml.allow_duplicate_keys = allow_duplicate_keys
    try:
        return yaml.load(text)
    except MarkedYAMLError as exc:
        problem = (exc.problem or exc.context or "invalid YAML").strip()
        raise UnreadableInputError(f"invalid YAML: {problem}", path=path, line=_marked(exc),
                                   reason="parse-error") from None
    except YAMLError as exc:
        raise UnreadableInputError(f"invalid YAML: {exc}", path=path, reason="parse-error") from None
    except RecursionError:
        raise _yaml_error("nested too deep", path, None, "too-deep") from None


# ------------------------------------------------------------------------------- JSON


def check_depth(obj: Any, *, path: str | Path | None = None, max_depth: int = JSON_MAX_DEPTH) -> None:
    """Refuse plain data (dicts/lists) nested deeper than ``max_depth`` (iterative)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            kids: Any = node.values()
        elif isinstance(node, list):
            kids = node
        else:
            continue
        if depth > max_depth:
            raise UnreadableInputError(f"nested deeper than {max_depth} levels", path=path, reason="too-deep")
        stack.extend((c, depth + 1) for c in kids)


def load_json(text: str, *, path: str | Path | None = None, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """``json.loads`` with a depth limit; errors name the line.

    Raises:
        UnreadableInputError: not JSON (``parse-error``), or too deep.
    """
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableInputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno,
                                   reason="parse-error") from None
    except RecursionError:
        raise UnreadableInputError("not valid JSON: nested too deep", path=path, reason="too-deep") from None
    except (ValueError, OverflowError) as exc:
        raise UnreadableInputError(f"not valid JSON: {exc}", path=path, reason="parse-error") from None
    check_depth(obj, path=path, max_depth=max_depth)
    return obj


def read_json(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """:func:`read_text` then :func:`load_json`."""
    return load_json(read_text(path, max_bytes=max_bytes), path=path, max_depth=max_depth)


# ------------------------------------------------------------------------------ writing


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | Path, data: bytes, *, force: bool = False) -> Path:
    """Write ``data`` to ``path`` so that a crash never leaves a partial file; returns ``path``.

    * **Atomic**: a temporary file in the target's folder, fsynced, renamed over the target.
    * **Mode**: an existing file keeps its permission bits (and, where allowed, its owner);
      a new file gets ``0666 & ~umask`` (0644 under umask 022), never the temp file's 0600.
    * **Symbolic links**: written through. The link's final target is replaced and the
      link itself stays a link.
    * **Read-only targets**: a file its owner cannot write (no ``w`` bit for us) is refused
      with :class:`~golden_al.errors.ReadOnlyTargetError` (exit 2) unless ``force``.
    * **Hard links**: a file with several links is rewritten *in place* (same inode, so
      every link sees the new content); that write is not atomic, so the new content is
      first written and fsynced to a sibling ``.<name>.*.tmp`` kept for recovery if the
      in-place write fails.

    Raises:
        ReadOnlyTargetError: the target is read-only and not ``force``.
        InputFileError: the folder or file cannot be written (names the target, not a temp file).
    """
    link = Path(path)
    target = Path(os.path.realpath(link)) if link.is_symlink() else link
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputFileError(f"cannot write: {exc.strerror or exc}", path=link) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputFileError(f"cannot write: it is {file_kind(st)}, not a regular file", path=link)
    if st is not None and not force and not (os.access(target, os.W_OK) and st.st_mode & 0o222):
        raise ReadOnlyTargetError("refusing to overwrite a read-only file", path=link,
                                  hint="make it writable, or pass --force to replace it anyway")
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputFileError(f"cannot write into {target.parent}: {exc.strerror or exc}", path=link,
                             hint="the folder must be writable by the user running golden-al") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if st is not None and st.st_nlink > 1:
            _write_in_place(target, data, link)
            os.unlink(tmp)
            return link
        if st is not None:
            with contextlib.suppress(OSError):
                os.chown(tmp, st.st_uid, st.st_gid)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            if not (st is not None and st.st_nlink > 1 and Path(tmp).exists() and not isinstance(exc, OSError)):
                os.unlink(tmp)
        if isinstance(exc, OSError):
            raise InputFileError(f"cannot write: {exc.strerror or exc}", path=link) from None
        raise
    return link


def _write_in_place(target: Path, data: bytes, shown: Path) -> None:
    writable_mode = None
    st = os.stat(target)
    if not os.access(target, os.W_OK):  # --force on a read-only hard-linked file
        writable_mode = stat.S_IMODE(st.st_mode)
        os.chmod(target, writable_mode | stat.S_IWUSR)
    try:
        with open(target, "r+b") as fh:
            fh.truncate(0)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        if writable_mode is not None:
            os.chmod(target, writable_mode)
    del shown


def atomic_write_text(path: str | Path, text: str, *, force: bool = False) -> Path:
    """Write UTF-8 ``text`` with :func:`atomic_write_bytes`."""
    return atomic_write_bytes(path, text.encode("utf-8"), force=force)
