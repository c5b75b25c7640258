"""Which files ``golden-al check`` reads, and how each kind a launcher consumes reaches a reader.

Kinds (:func:`file_kind`):

* ``yaml``, ``json``, ``shell`` (``.sh``/``.bash``/``.slurm``, or a ``sh``/``bash`` shebang), ``dotenv``:
  read as they are;
* ``dockerfile`` (``Dockerfile``, ``Containerfile``, ``*.dockerfile``, ``Dockerfile.*``): read as the shell
  text of :func:`dockerfile_as_shell` (``ENV``/``ARG`` are exports; ``RUN``, ``CMD``, ``ENTRYPOINT`` are
  commands), line for line;
* ``python`` (``*.py``, a ``python`` shebang): every string by Python's own parser
  (:func:`golden_al.knobs.census.census_python`), once
  :func:`~golden_al.knobs.census.python_may_set_knob` shows that its text can set or build a knob (else it
  is not parsed: it holds none); its environment writes (``os.environ[K] = V``,
  ``setdefault``, ``update``, ``putenv``, an environment dict literal) become the exports of
  :func:`python_env_as_shell`, so they are read as pins;
* ``jinja`` (``*.j2``, ``*.jinja``, ``*.jinja2``): the template with its tags blanked
  (:func:`jinja_as_text`), read as the kind its inner name gives (``recipe.yaml.j2`` is YAML); a tag
  whose text names a knob is a census entry of its own;
* ``other``: any other text file. When its text names no knob it holds nothing to check; an
  extension-less file whose text parses as shell is read as shell; anything else that names a knob is
  ``unread`` (a failing verdict, unless ``--exclude``/``exclude`` leaves the file out).

Documentation (``.md``, ``.rst``, ...), which no launcher consumes, and binary files are not read.
Pure: no I/O.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

__all__ = ["DOC_SUFFIXES", "dockerfile_as_shell", "file_kind", "jinja_as_text", "jinja_inner_kind",
           "python_env_as_shell"]

_YAML = (".yaml", ".yml")
_SHELL = (".sh", ".bash", ".slurm")
_JINJA = (".j2", ".jinja", ".jinja2")
#: Text no launcher consumes: documentation and pictures.
DOC_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".adoc", ".html", ".htm", ".svg", ".png", ".jpg", ".jpeg",
                          ".gif", ".pdf", ".ico", ".webp", ".css"})
_SH_SHEBANG = re.compile(rb"#![^\n]*\b(ba|z|k|da)?sh\b")
_PY_SHEBANG = re.compile(rb"#![^\n]*\bpython[0-9.]*\b")


def _is_dockerfile(name: str) -> bool:
    low = name.lower()
    return low in ("dockerfile", "containerfile") or low.startswith(("dockerfile.", "containerfile.")) or \
        low.endswith((".dockerfile", ".containerfile"))


def file_kind(path: Path, head: bytes) -> str | None:
    """The kind of ``path`` from its name and first bytes (module docstring); None: not read."""
    suffix = path.suffix.lower()
    if suffix in _YAML:
        return "yaml"
    if suffix in _SHELL:
        return "shell"
    if suffix == ".env" or path.name == ".env":
        return "dotenv"  # KEY=VALUE lines (compose env_file), read as shell assignments that are all exported
    if suffix == ".json":
        return "json"
    if _is_dockerfile(path.name):
        return "dockerfile"
    if suffix == ".py" or (head.startswith(b"#!") and _PY_SHEBANG.match(head)):
        return "python"
    if suffix in _JINJA:
        return "jinja"
    if head.startswith(b"#!") and _SH_SHEBANG.match(head):
        return "shell"
    if suffix in DOC_SUFFIXES or b"\0" in head:
        return None
    return "other"


def jinja_inner_kind(path: Path) -> str | None:
    """The kind a template renders to, from the name inside its suffix (``launch.sh.j2`` -> shell)."""
    inner = Path(path.stem)
    if not inner.suffix:
        return None
    kind = file_kind(inner, b"")
    return kind if kind in ("yaml", "json", "shell", "dotenv", "dockerfile", "python") else None


# --------------------------------------------------------------------------- Dockerfile

_DIRECTIVE = re.compile(r"#\s*escape\s*=\s*(\S)", re.I)
_COMMANDS = ("RUN", "CMD", "ENTRYPOINT")


def _exec_form(body: str) -> str | None:
    """A JSON exec form (``["python3", "-m", ...]``) as one shell command line, or None."""
    if not body.lstrip().startswith("["):
        return None
    try:
        words = json.loads(body)
    except ValueError:
        return None
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        return None
    return " ".join(shlex.quote(w) for w in words)


def _instruction(keyword: str, rest: list[str], escape: str) -> list[str]:
    """One instruction's lines (the keyword removed from the first) as shell lines."""
    body = "\n".join(rest)
    if keyword in ("ENV", "ARG"):
        head = rest[0].split(None, 1)
        if keyword == "ENV" and head and "=" not in head[0] and len(head) == 2:
            # the legacy form ``ENV NAME value with spaces``: the rest of the instruction is the value
            value = " ".join(part.rstrip(escape).strip() for part in [head[1], *rest[1:]])
            return [f"export {head[0]}={shlex.quote(value)}"] + [""] * (len(rest) - 1)
        # an ARG is in the environment of the build's commands: read as an export (fail closed)
        return ["export " + rest[0], *rest[1:]]
    if keyword in _COMMANDS:
        command = re.sub(r"^(?:\s*--\S+)+", "", rest[0])  # RUN --mount=... --network=...
        exec_form = _exec_form("\n".join([command, *rest[1:]]).replace(escape + "\n", " "))
        if exec_form is not None:
            return [exec_form] + [""] * (len(rest) - 1)
        return [command, *rest[1:]]
    if keyword == "ONBUILD":
        sub = rest[0].split(None, 1)
        if sub:
            return _instruction(sub[0].upper(), [sub[1] if len(sub) > 1 else "", *rest[1:]], escape)
    if keyword == "HEALTHCHECK":
        m = re.match(r"^(?:\s*--\S+)*\s*CMD\b(.*)$", rest[0], re.I)
        if m:
            return _instruction("CMD", [m.group(1), *rest[1:]], escape)
        return [""] * len(rest)
    if keyword == "SHELL" or not body.strip():
        return [""] * len(rest)
    # FROM, COPY, LABEL, WORKDIR, ...: a command of their own whose words the census still reads
    return [f"__dockerfile_{keyword.lower()} " + rest[0], *rest[1:]]


def dockerfile_as_shell(text: str) -> str:
    """A Dockerfile as shell text with the same lines: ``ENV``/``ARG`` as ``export``, ``RUN``, ``CMD`` and
    ``ENTRYPOINT`` (shell or exec form) as commands, comments and parser directives blank. Its
    ``${VAR}``/``$VAR`` substitutions are the shell's. (Dockerfile reference,
    https://docs.docker.com/reference/dockerfile/.)"""
    lines = text.split("\n")
    out = [""] * len(lines)
    escape = "\\"
    i, seen_instruction = 0, False
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            m = _DIRECTIVE.match(stripped)
            if m and not seen_instruction:
                escape = m.group(1)
            i += 1
            continue
        seen_instruction = True
        j = i
        while j + 1 < len(lines) and lines[j].rstrip().endswith(escape):
            j += 1
        chunk = lines[i:j + 1]
        keyword, _, first = chunk[0].strip().partition(" ")
        body = [first] + [("\\" if c.strip().startswith("#") else c) for c in chunk[1:]]  # comments inside
        if escape != "\\":
            body = [b[:-1] + "\\" if b.rstrip().endswith(escape) else b for b in body]
        out[i:j + 1] = _instruction(keyword.upper(), body, "\\")
        i = j + 1
    return "\n".join(out)


# ----------------------------------------------------------------------------- Python

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _is_environ(node: object) -> bool:
    import ast

    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
            and node.value.id == "os") or (isinstance(node, ast.Name) and node.id == "environ")


def _shell_value(node: object) -> str:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)) and not isinstance(
            node.value, bool):
        return shlex.quote(str(node.value))
    return '"$__python_value"'  # computed: a value the file does not fix


def python_env_as_shell(text: str) -> str:
    """A Python launcher's environment writes as shell exports, each on the line of its name:
    ``os.environ[K] = V``, ``os.environ.setdefault(K, V)``, ``os.environ.update({K: V}, K=V)``,
    ``os.putenv(K, V)``, and dict literals whose upper-case keys are set (``env={**os.environ, K: V}``).
    A value the code computes is an unknown. Raises SyntaxError."""
    import ast

    tree = ast.parse(text)
    lines = [""] * (text.count("\n") + 1)
    writes: list[tuple[ast.expr, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and _is_environ(target.value):
                    writes.append((target.slice, node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if _is_environ(f.value) and f.attr in ("setdefault", "__setitem__") and len(node.args) == 2:
                writes.append((node.args[0], node.args[1]))
            elif _is_environ(f.value) and f.attr == "update":
                for arg in node.args:
                    if isinstance(arg, ast.Dict):
                        writes.extend((k, v) for k, v in zip(arg.keys, arg.values, strict=True) if k is not None)
                writes.extend((ast.Constant(kw.arg, lineno=kw.value.lineno), kw.value) for kw in node.keywords
                              if kw.arg is not None)
            elif f.attr == "putenv" and isinstance(f.value, ast.Name) and f.value.id == "os" and len(node.args) == 2:
                writes.append((node.args[0], node.args[1]))
        elif isinstance(node, ast.Dict):
            writes.extend((k, v) for k, v in zip(node.keys, node.values, strict=True)
                          if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isupper())
    done: set[tuple[int, str]] = set()
    for key, value in writes:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and _NAME.match(key.value)):
            continue  # a computed name: the census still lists it (census_python)
        at = key.lineno - 1
        stmt = f"export {key.value}={_shell_value(value)}"
        if (at, stmt) in done or not 0 <= at < len(lines):
            continue
        done.add((at, stmt))
        lines[at] = f"{lines[at]}; {stmt}" if lines[at] else stmt
    return "\n".join(lines)


# ------------------------------------------------------------------------------ Jinja

_TAG = re.compile(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}", re.S)


def jinja_as_text(text: str, inner: str | None) -> tuple[str, list[tuple[int, str]]]:
    """A template with its tags blanked (newlines kept): a ``{{ expression }}`` becomes an unknown value
    (``${__jinja}``, a variable set nowhere; the name ``__jinja__`` in Python), ``{% statements %}`` and ``{# comments #}`` nothing,
    so every branch is read. Also returns each tag's (line, text), for the census of names a tag holds."""
    tags: list[tuple[int, str]] = []

    def blank(m: re.Match[str]) -> str:
        tag = m.group(0)
        line = text.count("\n", 0, m.start()) + 1
        if not tag.startswith("{#"):
            tags.append((line, tag))
        filler = ("__jinja__" if inner == "python" else "${__jinja}") if tag.startswith("{{") else ""
        return filler + "\n" * tag.count("\n")

    return _TAG.sub(blank, text), tags
