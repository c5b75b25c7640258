"""YAML within bounds: nesting limited before anything recurses, alias expansion within a budget,
recursive aliases and unsafe tags refused (PyYAML for reading, ruamel.yaml for rewrites)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from golden_al.errors import UnreadableInputError
from golden_al.safeio.limits import YAML_ALIAS_BUDGET, YAML_MAX_DEPTH

__all__ = ["check_node_graph", "load_yaml_as_roundtrip", "load_yaml_documents", "load_yaml_roundtrip", "may_alias",
           "repeated_keys", "safe_load_yaml", "yaml_depth_bound", "yaml_nodes"]


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
                k = item[0]
                if scalar_keys and isinstance(getattr(k, "value", None), list):
                    raise _yaml_error("a mapping key that is itself a mapping or sequence", path, line_of(k),
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
    handed to the safe constructor itself (so its errors and semantics are PyYAML's); a key
    twice in one mapping keeps the last value, as PyYAML does (:func:`repeated_keys` finds them)."""
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


def yaml_nodes(roots: Iterable[Any], *, scalars: bool = True) -> Iterator[Any]:
    """Every node of composed PyYAML node graphs once (keys and values; an alias, the same node again, is not
    visited twice, nor is a cycle followed); ``scalars=False``: the mappings and sequences only."""
    stack, seen = [r for r in roots if r is not None], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if not isinstance(node.value, list):
            if scalars:
                yield node
            continue
        yield node
        stack.extend(x for item in node.value for x in (item if isinstance(item, tuple) else (item,))
                     if scalars or isinstance(x.value, list))


def repeated_keys(root: Any) -> list[tuple[str, int]]:
    """Every scalar key repeated in one mapping of a composed PyYAML node graph, with the 1-based
    line of the repeat, in line order (``<<`` merge keys and the keys they bring excluded, also after
    PyYAML's construction has flattened them into the mapping: overriding them is their use)."""
    import yaml

    out: list[tuple[str, int]] = []
    scalar = yaml.ScalarNode
    for node in yaml_nodes([root], scalars=False):
        if isinstance(node, yaml.MappingNode):
            names = [k.value for k, _ in node.value if isinstance(k, scalar)]
            if len(set(names)) == len(names):
                continue  # no scalar key twice: no repeat
            keys: set[str] = set()
            lo, hi = node.start_mark.index, node.end_mark.index
            for k, _ in node.value:
                # a key merged in by ``<<`` (PyYAML's construction flattens them into the mapping) sits where
                # its anchor is, outside this mapping's text: overriding it is what a merge is for
                own = lo <= k.start_mark.index <= hi
                if isinstance(k, yaml.ScalarNode) and k.tag != _TAG + "merge" and own:
                    if k.value in keys:
                        out.append((k.value, k.start_mark.line + 1))
                    keys.add(k.value)
    return sorted(out, key=lambda kv: kv[1])


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
    return 2 * max(map(len, _BLOCK_LEAD.findall(text)), default=0) + 2 + _flow_depth(text)


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


#: What YAML 1.2 (ruamel.yaml) may read as a number or a date (a superset): the rest of what starts with a digit, a
#: sign or a dot is a string there. YAML 1.1 (PyYAML) reads these alike in both: a decimal integer or fraction.
_NUMBER_12 = re.compile(r"[-+]?(?:[0-9_.]+(?:[eE][-+]?[0-9]+)?|0[box][0-9a-fA-F_]+|\.(?:inf|Inf|INF|nan|NaN|NAN))"
                        r"|[0-9]{4}-.*", re.S)
_READ_ALIKE = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
#: YAML 1.1's booleans that YAML 1.2 reads as strings.
_BOOL_11 = frozenset({"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"})


def _read_alike(node: Any) -> bool:
    """Whether YAML 1.1 and 1.2 give a plain scalar node the same value (PyYAML resolved its tag by 1.1)."""
    value = node.value
    head = value[:1]
    if head and head in "-+.0123456789":
        if _NUMBER_12.fullmatch(value):
            return _READ_ALIKE.fullmatch(value) is not None
        return bool(node.tag == "tag:yaml.org,2002:str")  # a string in 1.2: in 1.1 too?
    return head not in ("<", "=") and value not in _BOOL_11


def load_yaml_as_roundtrip(text: str, *, path: str | Path | None = None) -> Any:
    """The plain data :func:`load_yaml_roundtrip` would give ``text`` (its one document), read by libyaml instead of
    ruamel.yaml's pure-Python parser (ten times faster), or None where that is not provably the same: more or less
    than one document, a tag, merge or directive (``!``, ``<<``, ``%``), flow nesting the round-trip reader refuses, a key twice in
    one mapping (which it refuses), a plain scalar YAML 1.1 and 1.2 may read differently (:func:`_read_alike`), or
    anything libyaml refuses. The caller reads a None (and any refusal of the data) with the round-trip reader."""
    if "!" in text or "<<" in text or re.search(r"^%", text, re.M) or _flow_depth(text) > ROUNDTRIP_MAX_FLOW_DEPTH:
        return None
    try:
        docs = load_yaml_documents(text, path=path)
    except UnreadableInputError:
        return None
    if len(docs) != 1 or docs[0][1] is None or repeated_keys(docs[0][1]):
        return None
    import yaml

    if any(isinstance(n, yaml.ScalarNode) and not n.style and not _read_alike(n) for n in yaml_nodes([docs[0][1]])):
        return None
    return docs[0][0]


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
