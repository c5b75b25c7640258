"""Reading files: only regular files, opened without blocking, read within a byte cap, decoded
strictly (byte-order marks, BOM-less UTF-16, no NULs), streamed line by line in constant memory."""

from __future__ import annotations

import codecs
import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golden_al.errors import UnreadableInputError
from golden_al.safeio.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_LOG_BYTES, MAX_LINE_BYTES

__all__ = ["LineStats", "decode_text", "file_kind", "iter_lines", "open_regular", "read_bytes", "read_text",
           "run_budget"]

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


def run_budget(paths: Sequence[str | Path], budget: int, *, what: str = "files", hint: str | None = None) -> int:
    """Refuse a run whose inputs together hold more than ``budget`` bytes (a folder counts every regular file
    under it), before any is parsed, so that many files each under their own cap cannot add up past what one
    run may hold; returns ``budget``.

    Raises:
        UnreadableInputError: ``too-large``, naming each input with its size.
    """
    sizes = []
    for p in map(Path, paths):
        try:
            if p.is_dir():
                sizes.append(sum(f.stat().st_size for f in p.rglob("*") if f.is_file()))
            else:
                sizes.append(p.stat().st_size if p.is_file() else 0)
        except OSError:
            sizes.append(0)  # the read names what is wrong with it
    if sum(sizes) > budget and (len(sizes) > 1 or any(Path(p).is_dir() for p in paths)):
        listed = ", ".join(f"{p} ({n:,} bytes)" for p, n in zip(paths, sizes, strict=True))
        raise UnreadableInputError(f"the run's {len(sizes)} {what} hold {sum(sizes):,} bytes together, over the "
                                   f"{budget:,}-byte budget of one run: {listed}", path=str(paths[0]),
                                   reason="too-large", hint=hint or "pass only the files of this run")
    return budget
